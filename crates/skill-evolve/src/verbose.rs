//! `-v/--verbose`: the `tracing` events of this program and of the
//! workspace's crates, printed to stderr — every LLM call (tag, latency, why
//! a reply was unusable), the configuration file read, retries, replies the
//! judges or the evolver could not use. Without `-v` no subscriber is
//! installed and nothing is printed.

use tracing::Level;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::prelude::*;

/// Prints events to stderr from now on: this program's and the workspace
/// crates' (`evolution_*`, debug and up; the HTTP provider's and cassette's
/// info and up, since every call already has a line of its own), and every
/// other crate's warnings.
pub(crate) fn init() {
    let targets = Targets::new()
        .with_default(Level::WARN)
        .with_target("skill_evolve", Level::DEBUG)
        .with_target("evolution", Level::DEBUG)
        .with_target("evolution_llm_openai", Level::INFO)
        .with_target("evolution_llm_cassette", Level::INFO);
    let lines = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .without_time()
        .with_target(false);
    // Only `main` installs one; a second call would change nothing.
    let _ = tracing_subscriber::registry()
        .with(lines)
        .with(targets)
        .try_init();
}
