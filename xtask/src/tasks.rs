//! `ci`, `bench` and `fuzz`: thin drivers around cargo commands run from the project root.

use std::ffi::OsString;
use std::path::Path;
use std::process::{Command, ExitCode, Stdio};

use anyhow::{Context, Result, bail};

use crate::{cargo, check_deps};

/// One step of `cargo xtask ci`.
enum Step {
    /// A cargo command: its arguments and extra environment.
    Cargo(
        &'static [&'static str],
        &'static [(&'static str, &'static str)],
    ),
    /// The check-deps rules, run in process.
    CheckDeps,
}

/// The one member `ci` leaves out of clippy, docs and tests: `evolution-llm-local` compiles
/// llama.cpp from source (about 38 minutes for a clean build on this 2-core machine under load)
/// and its tests need the downloaded model, which would not fit CI's 90-minute budget from a
/// cold cache. Run it by hand: `cargo xtask fetch-model && cargo test -p evolution-llm-local`.
/// `fmt` and `check-deps` still cover it.
const CI_EXCLUDED: &str = "evolution-llm-local";

/// Runs the CI pipeline in order, stopping at the first failing step.
pub(crate) fn ci(root: &Path) -> Result<ExitCode> {
    let tests: &'static [&'static str] = if has_nextest(root) {
        &["nextest", "run", "--workspace", "--exclude", CI_EXCLUDED]
    } else {
        eprintln!("xtask ci: cargo-nextest not found, running the tests with `cargo test`");
        &["test", "--workspace", "--exclude", CI_EXCLUDED]
    };
    let steps = [
        Step::Cargo(&["fmt", "--all", "--", "--check"], &[]),
        Step::Cargo(
            &[
                "clippy",
                "--workspace",
                "--exclude",
                CI_EXCLUDED,
                "--all-targets",
                "--",
                "-D",
                "warnings",
            ],
            &[],
        ),
        Step::CheckDeps,
        Step::Cargo(
            &["doc", "--workspace", "--exclude", CI_EXCLUDED, "--no-deps"],
            &[("RUSTDOCFLAGS", "-Dwarnings")],
        ),
        Step::Cargo(
            &["test", "--workspace", "--exclude", CI_EXCLUDED, "--doc"],
            &[],
        ),
        // The main test suite runs last so that its summary closes the CI log.
        Step::Cargo(tests, &[]),
    ];
    let total = steps.len();
    for (index, step) in steps.iter().enumerate() {
        let number = index + 1;
        match step {
            Step::Cargo(args, envs) => {
                let shown = show(args, envs);
                eprintln!("xtask ci [{number}/{total}]: {shown}");
                let status = cargo()
                    .args(*args)
                    .envs(envs.iter().copied())
                    .current_dir(root)
                    .status()
                    .with_context(|| format!("cannot start `{shown}`"))?;
                if !status.success() {
                    eprintln!("xtask ci: FAILED at step {number}/{total}: `{shown}` ({status})");
                    return Ok(ExitCode::FAILURE);
                }
            }
            Step::CheckDeps => {
                eprintln!("xtask ci [{number}/{total}]: cargo xtask check-deps");
                let report = check_deps::check(&root.join("Cargo.toml"))?;
                for line in &report.violations {
                    println!("{line}");
                }
                println!("{}", report.summary());
                if !report.is_ok() {
                    eprintln!(
                        "xtask ci: FAILED at step {number}/{total}: `cargo xtask check-deps`"
                    );
                    return Ok(ExitCode::FAILURE);
                }
            }
        }
    }
    eprintln!("xtask ci: all {total} steps passed");
    Ok(ExitCode::SUCCESS)
}

fn show(args: &[&str], envs: &[(&str, &str)]) -> String {
    let mut parts: Vec<String> = envs.iter().map(|(k, v)| format!("{k}={v}")).collect();
    parts.push("cargo".to_owned());
    parts.extend(args.iter().map(|a| (*a).to_owned()));
    parts.join(" ")
}

fn has_nextest(root: &Path) -> bool {
    succeeds(cargo().args(["nextest", "--version"]).current_dir(root))
}

fn succeeds(command: &mut Command) -> bool {
    command
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The benchmark programs: name, package, example.
const BENCHES: [(&str, &str, &str); 6] = [
    ("gate", "evolution-gate", "gate_calibration"),
    ("patch", "evolution-patch", "patch_bench"),
    ("diagnose", "evolution-diagnose", "diagnose_bench"),
    ("json", "evolution-diagnose", "json_repair_bench"),
    ("runlog", "evolution-runlog-sqlite", "runlog_bench"),
    ("local", "evolution-llm-local", "local_bench"),
];

fn bench_list() -> String {
    BENCHES
        .iter()
        .map(|(name, package, example)| format!("  {name:<9} {package} --example {example}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `bench <name> [args...]`: `cargo run --release -p <package> --example <example> -- args`.
pub(crate) fn bench(root: &Path, args: &[OsString]) -> Result<ExitCode> {
    let Some((name, rest)) = args.split_first() else {
        eprintln!(
            "usage: cargo xtask bench <name> [args...]\n\nbenchmarks:\n{}",
            bench_list()
        );
        return Ok(ExitCode::from(2));
    };
    let name = name.to_string_lossy();
    let Some(&(_, package, example)) = BENCHES.iter().find(|(n, _, _)| *n == name) else {
        eprintln!(
            "xtask bench: unknown benchmark `{name}`; benchmarks:\n{}",
            bench_list()
        );
        return Ok(ExitCode::from(2));
    };
    let status = cargo()
        .args([
            "run",
            "--release",
            "-p",
            package,
            "--example",
            example,
            "--",
        ])
        .args(rest)
        .current_dir(root)
        .status()
        .with_context(|| format!("cannot start the `{name}` benchmark"))?;
    Ok(exit_code(status))
}

/// `fuzz <target> [seconds]`: installs cargo-fuzz when missing, then fuzzes for `seconds`.
pub(crate) fn fuzz(root: &Path, args: &[OsString]) -> Result<ExitCode> {
    let (target, seconds) = match args {
        [target] => (target, 60),
        [target, seconds] => {
            let seconds: u64 = seconds
                .to_string_lossy()
                .parse()
                .with_context(|| format!("seconds must be a whole number, got {seconds:?}"))?;
            (target, seconds)
        }
        _ => bail!("usage: cargo xtask fuzz <target> [seconds=60]"),
    };
    if !succeeds(cargo().args(["fuzz", "--version"]).current_dir(root)) {
        eprintln!("xtask fuzz: installing cargo-fuzz");
        let status = cargo()
            .args(["install", "cargo-fuzz", "--locked"])
            .current_dir(root)
            .status()
            .context("cannot start `cargo install cargo-fuzz`")?;
        if !status.success() {
            bail!("`cargo install cargo-fuzz --locked` failed ({status})");
        }
    }
    // cargo-fuzz passes nightly-only flags; RUSTC_BOOTSTRAP lets the pinned stable accept them.
    let status = cargo()
        .args(["fuzz", "run"])
        .arg(target)
        .arg("--")
        .arg(format!("-max_total_time={seconds}"))
        .env("RUSTC_BOOTSTRAP", "1")
        .current_dir(root)
        .status()
        .context("cannot start `cargo fuzz run`")?;
    Ok(exit_code(status))
}

fn exit_code(status: std::process::ExitStatus) -> ExitCode {
    match status.code() {
        Some(0) => ExitCode::SUCCESS,
        Some(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
        None => ExitCode::FAILURE,
    }
}

/// `demo`: builds `skill-evolve` and the reference agent, copies the shipped
/// example (`crates/skill-evolve/examples/rule-agent-demo`) to a fresh
/// `<target>/demo`, runs the whole loop offline there and prints its report.
pub(crate) fn demo(root: &Path) -> Result<ExitCode> {
    let status = cargo()
        .current_dir(root)
        .args([
            "build",
            "-p",
            "skill-evolve",
            "-p",
            "evolution-harness",
            "--bins",
        ])
        .status()
        .context("cannot run cargo build")?;
    if !status.success() {
        bail!("building skill-evolve and rule-agent failed");
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| root.join("target"), std::path::PathBuf::from);
    let bin = target.join("debug");
    let example = root.join("crates/skill-evolve/examples/rule-agent-demo");
    let demo = target.join("demo");
    if demo.exists() {
        std::fs::remove_dir_all(&demo)
            .with_context(|| format!("cannot clear {}", demo.display()))?;
    }
    std::fs::create_dir_all(demo.join("skills"))?;
    for name in [
        "evolve.toml",
        "questions.jsonl",
        "demo.cassette",
        "skills/default-strategy.md",
    ] {
        std::fs::copy(example.join(name), demo.join(name))
            .with_context(|| format!("cannot copy {name}"))?;
    }
    let path = std::env::join_paths(std::iter::once(bin.clone()).chain(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    )))?;
    println!(
        "\nThe demo: the agent is `rule-agent`, a deterministic program that answers from the \
         `RULE <task> => <answer>` lines of its skill; the LLM's replies (judges, the proposed \
         edit) are a scripted cassette, not a model's judgement. The rollouts, the gate \
         (wins, losses, e-value), the versioned store and the report are real.\n"
    );
    let status = Command::new(bin.join("skill-evolve"))
        .current_dir(&demo)
        .env("PATH", path)
        .args(["run", "--config", "evolve.toml"])
        .status()
        .context("cannot run skill-evolve")?;
    if !status.success() {
        bail!("the demo run failed");
    }
    let report = demo.join(".skill-evolve/runs/demo/report.md");
    let text = std::fs::read_to_string(&report)
        .with_context(|| format!("cannot read {}", report.display()))?;
    println!(
        "\n{text}\nReport: {}\nTo use a real model, set [llm] provider = \"openai\" with a base_url and model in {}.",
        report.display(),
        demo.join("evolve.toml").display()
    );
    Ok(ExitCode::SUCCESS)
}
