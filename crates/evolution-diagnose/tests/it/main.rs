//! Integration tests of evolution-diagnose, through its public API.
mod attribution;
mod common;
mod json;
mod judges;
mod packs;
mod pipeline;
mod rubric;
mod rules;
