//! Public-API tests of the harness.

mod runner;
mod subprocess;
