//! Public-API tests of the test doubles.

mod llm;
mod run_log;
mod store;
