//! Integration tests of `evolution-patch` through its public API.

mod adversarial;
mod engine;
mod properties;
mod reference_cases;
mod regions;
mod snapshots;
