//! Integration tests of evolution-diagnose.
mod json;
