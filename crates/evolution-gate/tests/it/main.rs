//! Integration tests of `evolution-gate` through its public API.

mod decision;
mod evalue;
mod pool;
mod presets;
mod properties;
mod scoring;
mod standalone;
mod types;
mod validate;
