//! Integration tests of `evolution-evolve` through its public API.

mod aggregate;
mod appendix;
mod budget;
mod consolidate;
mod format;
mod json;
mod preferences;
mod props;
mod rank;
mod reflect;
mod replies;
mod rewrite;
mod send;
mod skill;
mod support;
mod system;
mod tool;
mod validate;
