//! Integration tests against the real default model (run `cargo xtask fetch-model` first).

mod cancel;
mod chat;
mod discovery;
mod errors;
#[path = "../../examples/gate_real/bench.rs"]
#[allow(
    dead_code,
    clippy::print_stderr,
    reason = "the benchmark's engine, shared with its example; progress lines on stderr"
)]
mod gate_bench;
mod gate_real;
mod json;
#[path = "../../examples/support/replies.rs"]
mod replies;
mod support;
