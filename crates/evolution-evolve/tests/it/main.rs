//! Integration tests of `evolution-evolve` through its public API.

mod aggregate;
mod budget;
mod consolidate;
mod format;
mod json;
mod rank;
mod rewrite;
mod support;
