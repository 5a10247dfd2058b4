//! Project automation, run as `cargo xtask <command>`.

fn main() {
    eprintln!("usage: cargo xtask <check-deps|ci>");
    std::process::exit(2);
}
