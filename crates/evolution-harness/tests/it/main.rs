//! Public-API tests of the harness.

mod budget;
mod persist;
mod runner;
mod subprocess;
mod validate;
