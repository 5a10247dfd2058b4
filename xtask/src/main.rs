//! Project automation, run as `cargo xtask <command>`.
#![allow(clippy::print_stderr)]

fn main() {
    eprintln!("usage: cargo xtask <check-deps|ci>");
    std::process::exit(2);
}
