//! Cross-crate end-to-end tests.

mod repo;
mod scripted_pipeline;
mod tidy;
