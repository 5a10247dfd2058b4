//! The smoke test of the `gate_real` benchmark (`examples/gate_real/`), against the real
//! default model (run `cargo xtask fetch-model` first).

mod follower;
#[path = "../../examples/gate_real/bench.rs"]
#[allow(
    dead_code,
    clippy::print_stderr,
    reason = "the benchmark's engine, shared with its example; progress lines on stderr"
)]
mod gate_bench;
mod gate_real;
mod new_user;
