//! Integration tests of `evolution-patch` through its public API.

mod adversarial;
mod engine;
mod properties;
mod regions;
mod seed_plan;
mod snapshots;
