//! Integration tests against the real default model (run `cargo xtask fetch-model` first).

mod cancel;
mod chat;
mod discovery;
mod errors;
mod json;
#[path = "../../examples/support/replies.rs"]
mod replies;
mod support;
