//! Project automation, run as `cargo xtask <command>` (the alias lives in `.cargo/config.toml`).
//!
//! One small binary instead of shell scripts, so that the same checks run on every machine
//! that has cargo. It stays lean on purpose (anyhow, serde_json to read `cargo metadata`,
//! proc-macro2 to tokenize kernel sources), always calls the cargo that runs it (`$CARGO`)
//! and works from the project root whatever the current directory.
//!
//! Commands:
//! - `check-deps [--manifest-path <Cargo.toml>]`: the layer rules of docs/ARCHITECTURE.md;
//! - `tidy [--manifest-path <Cargo.toml>]`: no module file over 800 lines of non-test code and
//!   no import cycle between the files of a crate;
//! - `install-prereqs`: what the build and `ci` need beyond cargo (cmake, libclang-dev and
//!   chromium from Debian, cargo-deny and maturin in a cache folder, the local model, Claude
//!   Code and Codex from npm for the host-agent tests), and jq for the harvest benchmark, each
//!   only when missing;
//! - `ci`: format check, clippy, check-deps, tidy, cargo-deny, docs, doctests, the Python
//!   suite (`pytest`), tests (last, so their summary closes the log) — stops at the first
//!   failure, and at once when a prerequisite is missing; prints each step's wall time at the
//!   end;
//! - `bench <name> [args...]`: runs one of the benchmark programs in release mode;
//! - `fuzz <target> [seconds]`: runs a cargo-fuzz target (installing cargo-fuzz if needed);
//! - `demo`: the whole skill-evolve loop offline on the shipped example.
//! - `wheel [--no-local]`: the Python wheel (module and `skill-evolve` command) with maturin;
//! - `pytest [--no-local]`: the wheel installed into a fresh virtual environment, then
//!   `pytest python/tests`;
//! - `fetch-model [--benchmark] [--dir <directory>]`: downloads and verifies the default local
//!   model (or, with `--benchmark`, the larger model of the `gate-real` benchmark).

// A command-line tool talks to its user through stdout and stderr.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod benchmark_model;
mod cache;
mod check_deps;
mod fetch_model;
mod host_clis;
mod module_graph;
mod prereqs;
mod python;
mod source_scan;
mod tasks;
mod tidy;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use anyhow::{Context, Result, bail};

const USAGE: &str = "\
usage: cargo xtask <command>

commands:
  check-deps [--manifest-path <Cargo.toml>]
                           check the layer rules of docs/ARCHITECTURE.md (exit 1 on violations)
  tidy [--manifest-path <Cargo.toml>]
                           check that no module file has over 800 lines of non-test code and no
                           crate has an import cycle between its files (exit 1 on violations)
  install-prereqs          install cmake/libclang-dev/chromium/jq, cargo-deny, maturin, the local
                           model and the Claude Code and Codex CLIs (npm) when missing
  ci                       fmt check, clippy -D warnings, check-deps, tidy, cargo-deny, docs,
                           doctests, pytest, tests; then each step's wall time
  bench <name> [args...]   run a benchmark program in release mode (`bench` alone lists them;
                           `bench python` times the Python API against Rust and SkillOpt;
                           `bench gate-real --benchmark-model` fetches and runs the 0.5B model)
  fuzz <target> [seconds]  run a cargo-fuzz target for `seconds` (default 60)
  demo                     run the whole skill-evolve loop offline on the shipped example
  wheel [--no-local]       build the Python wheel (module and skill-evolve command) with maturin
  pytest [--no-local]      install the wheel into a fresh virtualenv and run pytest python/tests
  fetch-model [--dir <d>]  download the local model (SmolLM2-135M-Instruct GGUF) into the cache;
                           with --benchmark, the gate-real benchmark's Qwen2.5-Coder-0.5B-Instruct
  help                     print this message";

fn main() -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    match run(&args) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("xtask: error: {err:#}");
            ExitCode::from(2)
        }
    }
}

fn run(args: &[OsString]) -> Result<ExitCode> {
    let Some((command, rest)) = args.split_first() else {
        eprintln!("{USAGE}");
        return Ok(ExitCode::from(2));
    };
    let command = command
        .to_str()
        .with_context(|| format!("command {command:?} is not UTF-8"))?;
    match command {
        "tidy" => {
            let manifest = parse_manifest_arg("tidy", rest)?;
            let report = tidy::check(&manifest)?;
            for line in &report.violations {
                println!("{line}");
            }
            println!("{}", report.summary());
            Ok(if report.is_ok() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            })
        }
        "check-deps" => {
            let manifest = parse_manifest_arg("check-deps", rest)?;
            let report = check_deps::check(&manifest)?;
            for line in &report.violations {
                println!("{line}");
            }
            println!("{}", report.summary());
            Ok(if report.is_ok() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            })
        }
        "ci" => {
            if let Some(extra) = rest.first() {
                bail!("`ci` takes no arguments, got {extra:?}");
            }
            tasks::ci(&project_root()?)
        }
        "install-prereqs" => {
            if let Some(extra) = rest.first() {
                bail!("`install-prereqs` takes no arguments, got {extra:?}");
            }
            prereqs::install_all()?;
            Ok(ExitCode::SUCCESS)
        }
        "bench" if rest.first().is_some_and(|name| name == "python") => {
            python::bench(&project_root()?, rest.get(1..).unwrap_or_default())
        }
        "bench" => tasks::bench(&project_root()?, rest),
        "wheel" => python::wheel(&project_root()?, rest),
        "pytest" => python::pytest(&project_root()?, rest),
        "fuzz" => tasks::fuzz(&project_root()?, rest),
        "demo" => tasks::demo(&project_root()?),
        "fetch-model" if rest.iter().any(|a| a == "--benchmark") => {
            benchmark_model::fetch_command(rest)
        }
        "fetch-model" => fetch_model::fetch_model(rest),
        "help" | "--help" | "-h" => {
            println!("{USAGE}");
            Ok(ExitCode::SUCCESS)
        }
        other => {
            eprintln!("xtask: unknown command `{other}`\n\n{USAGE}");
            Ok(ExitCode::from(2))
        }
    }
}

/// Reads `[--manifest-path <path>]` for `command`; without it the project's root manifest is
/// checked.
fn parse_manifest_arg(command: &str, args: &[OsString]) -> Result<PathBuf> {
    let mut manifest = None;
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        let arg_str = arg.to_string_lossy();
        if arg_str == "--manifest-path" {
            let value = iter
                .next()
                .context("`--manifest-path` needs a path to a Cargo.toml")?;
            manifest = Some(PathBuf::from(value));
        } else if let Some(value) = arg_str.strip_prefix("--manifest-path=") {
            manifest = Some(PathBuf::from(value));
        } else {
            bail!("unexpected argument `{arg_str}` for {command}\n\n{USAGE}");
        }
    }
    match manifest {
        Some(path) => Ok(path),
        None => Ok(project_root()?.join("Cargo.toml")),
    }
}

/// The workspace root: the parent of this crate's directory.
fn project_root() -> Result<PathBuf> {
    let xtask_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let root = xtask_dir
        .parent()
        .context("xtask's manifest directory has no parent")?;
    Ok(root.to_path_buf())
}

/// A `Command` for the cargo that runs us (`$CARGO`), falling back to `cargo` on the `PATH`.
fn cargo() -> Command {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| OsString::from("cargo"));
    Command::new(cargo)
}

/// The exit code that passes on a child's: its own code, or failure when a signal ended it.
pub(crate) fn exit_code(status: std::process::ExitStatus) -> ExitCode {
    match status.code() {
        Some(0) => ExitCode::SUCCESS,
        Some(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
        None => ExitCode::FAILURE,
    }
}

/// The cargo target folder: `$CARGO_TARGET_DIR`, else `target` in the project.
pub(crate) fn target_dir(root: &Path) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from)
}
