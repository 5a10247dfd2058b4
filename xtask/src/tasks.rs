//! `ci`, `bench` and `fuzz`: thin drivers around cargo commands run from the project root.

use std::ffi::OsString;
use std::path::Path;
use std::process::{Command, ExitCode, Stdio};
use std::time::Instant;

use anyhow::{Context, Result, bail};

use crate::{cargo, check_deps, exit_code, prereqs, target_dir, tidy};

/// One step of `cargo xtask ci`.
enum Step {
    /// A cargo command: its arguments and extra environment.
    Cargo(
        &'static [&'static str],
        &'static [(&'static str, &'static str)],
    ),
    /// The check-deps rules, run in process.
    CheckDeps,
    /// File sizes and import cycles, run in process.
    Tidy,
    /// `cargo-deny` over `deny.toml`: the sections that work offline.
    Deny,
    /// The wheel built, installed into a fresh virtual environment and tested with pytest.
    Pytest,
}

/// The variable that makes the HTML report's browser test fail, not skip, without Chromium.
const REQUIRE_CHROMIUM: &str = "EVOLUTION_REQUIRE_CHROMIUM";

/// The cargo-deny checks `ci` runs (advisories need the advisory database from GitHub).
const DENY_CHECKS: [&str; 4] = ["check", "bans", "licenses", "sources"];

/// Runs the CI pipeline in order, stopping at the first failing step, and prints the wall time
/// of each step run (also when one fails).
///
/// It installs nothing on the machine: when cmake, libclang, Chromium, cargo-deny, maturin or
/// the local model is missing it stops at once and says to run `cargo xtask install-prereqs`
/// (the Python suite's packages go into a fresh virtual environment under the target folder).
/// The tests run with `EVOLUTION_REQUIRE_CHROMIUM=1` and `EVOLUTION_REQUIRE_HOST_CLIS=1`, so
/// neither the HTML report's browser test nor the host-agent tests can skip.
pub(crate) fn ci(root: &Path) -> Result<ExitCode> {
    prereqs::check_all()?;
    let deny = prereqs::cargo_deny_path()?;
    let tests: &'static [&'static str] = if has_nextest(root) {
        &["nextest", "run", "--workspace"]
    } else {
        eprintln!("xtask ci: cargo-nextest not found, running the tests with `cargo test`");
        &["test", "--workspace"]
    };
    let steps = [
        Step::Cargo(&["fmt", "--all", "--", "--check"], &[]),
        Step::Cargo(
            &[
                "clippy",
                "--workspace",
                "--all-targets",
                "--",
                "-D",
                "warnings",
            ],
            &[],
        ),
        Step::CheckDeps,
        Step::Tidy,
        Step::Deny,
        Step::Cargo(
            &["doc", "--workspace", "--no-deps"],
            &[("RUSTDOCFLAGS", "-Dwarnings")],
        ),
        Step::Cargo(&["test", "--workspace", "--doc"], &[]),
        // The Python suite runs before the Rust one rather than after: both print a result
        // line, and the Rust suite's, the larger, then closes the log (pytest's stays just
        // above the nextest output).
        Step::Pytest,
        // The main test suite runs last so that its summary closes the CI log.
        Step::Cargo(
            tests,
            &[
                (REQUIRE_CHROMIUM, "1"),
                (crate::host_clis::REQUIRE_HOST_CLIS, "1"),
            ],
        ),
    ];
    let total = steps.len();
    let mut times: Vec<(String, f64)> = Vec::new();
    for (index, step) in steps.iter().enumerate() {
        let number = index + 1;
        let shown = step.shown();
        eprintln!("xtask ci [{number}/{total}]: {shown}");
        let started = Instant::now();
        let passed = step.run(root, &deny, &shown);
        times.push((shown.clone(), started.elapsed().as_secs_f64()));
        match passed {
            Ok(true) => {}
            Ok(false) => {
                eprintln!("xtask ci: FAILED at step {number}/{total}: `{shown}`");
                eprintln!("{}", time_table(&times));
                return Ok(ExitCode::FAILURE);
            }
            Err(err) => {
                eprintln!("{}", time_table(&times));
                return Err(err);
            }
        }
    }
    eprintln!("{}", time_table(&times));
    eprintln!("xtask ci: all {total} steps passed");
    Ok(ExitCode::SUCCESS)
}

impl Step {
    /// The step as the log names it.
    fn shown(&self) -> String {
        match self {
            Step::Cargo(args, envs) => show(args, envs),
            Step::CheckDeps => "cargo xtask check-deps".to_owned(),
            Step::Tidy => "cargo xtask tidy".to_owned(),
            Step::Deny => format!("cargo deny {}", DENY_CHECKS.join(" ")),
            Step::Pytest => "cargo xtask pytest".to_owned(),
        }
    }

    /// Runs the step; `Ok(false)` when it ran and failed (its output says why).
    fn run(&self, root: &Path, deny: &Path, shown: &str) -> Result<bool> {
        match self {
            Step::Cargo(args, envs) => {
                let status = cargo()
                    .args(*args)
                    .envs(envs.iter().copied())
                    .current_dir(root)
                    .status()
                    .with_context(|| format!("cannot start `{shown}`"))?;
                Ok(status.success())
            }
            Step::Deny => {
                let status = Command::new(deny)
                    .arg("deny")
                    .args(DENY_CHECKS)
                    .current_dir(root)
                    .status()
                    .with_context(|| format!("cannot start `{shown}`"))?;
                Ok(status.success())
            }
            Step::Pytest => Ok(crate::python::pytest_for_ci(root)? == ExitCode::SUCCESS),
            Step::CheckDeps => {
                let report = check_deps::check(&root.join("Cargo.toml"))?;
                for line in &report.violations {
                    println!("{line}");
                }
                println!("{}", report.summary());
                Ok(report.is_ok())
            }
            Step::Tidy => {
                let report = tidy::check(&root.join("Cargo.toml"))?;
                for line in &report.violations {
                    println!("{line}");
                }
                println!("{}", report.summary());
                Ok(report.is_ok())
            }
        }
    }
}

/// The wall time of each step run so far, and their total, as a table for the end of the log.
fn time_table(times: &[(String, f64)]) -> String {
    let width = times
        .iter()
        .map(|(step, _)| step.chars().count())
        .chain(["total".len()])
        .max()
        .unwrap_or(0);
    let mut table = format!(
        "xtask ci: wall time per step\n  {:<width$}  {:>8}\n",
        "step", "seconds"
    );
    for (step, seconds) in times {
        table.push_str(&format!("  {step:<width$}  {seconds:>8.1}\n"));
    }
    let total = times.iter().fold(0.0, |sum, (_, seconds)| sum + seconds);
    table.push_str(&format!("  {:<width$}  {total:>8.1}", "total"));
    table
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
const BENCHES: [(&str, &str, &str); 16] = [
    ("gate", "evolution-gate", "gate_calibration"),
    ("frontier", "evolution-gate", "gate_frontier"),
    ("ties", "evolution-gate", "gate_ties"),
    ("pool", "evolution-gate", "gate_pool"),
    ("patch", "evolution-patch", "patch_bench"),
    ("diagnose", "evolution-diagnose", "diagnose_bench"),
    ("json", "evolution-diagnose", "json_repair_bench"),
    ("runlog", "evolution-runlog-sqlite", "runlog_bench"),
    ("inputs", "evolution-harness", "inputs_bench"),
    ("nights", "evolution-harness", "nights"),
    ("local", "evolution-llm-local", "local_bench"),
    ("gate-real", "evolution-project", "gate_real"),
    ("harvest", "evolution-harvest", "harvest_bench"),
    ("redact", "evolution-harvest", "redact_bench"),
    ("readers", "evolution-project", "readers_bench"),
    ("followups", "evolution-project", "followup_bench"),
];

/// Benchmarks that need none of their package's default features (the embedded model's
/// llama.cpp build among them).
const WITHOUT_DEFAULT_FEATURES: [&str; 1] = ["readers_bench"];

fn bench_list() -> String {
    BENCHES
        .iter()
        .map(|(name, package, example)| format!("  {name:<9} {package} --example {example}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `bench <name> [args...]`: `cargo run --release -p <package> --example <example> -- args`
/// (the local model's as [`local_bench`] says).
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
    // The benchmarks that load the embedded model run in the dev profile (see `local_bench`).
    if package == "evolution-llm-local" || name == "followups" {
        return local_bench(root, &name, example, rest);
    }
    let rest = with_benchmark_model(&name, rest)?;
    let mut run = cargo();
    run.args(["run", "--release", "-p", package, "--example", example]);
    if WITHOUT_DEFAULT_FEATURES.contains(&example) {
        run.arg("--no-default-features");
    }
    let status = run
        .arg("--")
        .args(&rest)
        .current_dir(root)
        .status()
        .with_context(|| format!("cannot start the `{name}` benchmark"))?;
    Ok(exit_code(status))
}

/// `gate-real --benchmark-model`: the benchmark's larger model, fetched into the model cache
/// (once; its digest checked each time) and passed on as `--model-file <path>`.
fn with_benchmark_model(name: &str, args: &[OsString]) -> Result<Vec<OsString>> {
    if name != "gate-real" || !args.iter().any(|a| a == "--benchmark-model") {
        return Ok(args.to_vec());
    }
    let model = crate::benchmark_model::BenchmarkModel::fetch(&crate::fetch_model::model_dir()?)?;
    let mut out = Vec::with_capacity(args.len() + 1);
    for arg in args {
        if arg == "--benchmark-model" {
            out.push(OsString::from("--model-file"));
            out.push(model.clone().into_os_string());
        } else {
            out.push(arg.clone());
        }
    }
    Ok(out)
}

/// The local model's benchmark. llama.cpp is optimised in every profile (see the root
/// manifest), so it runs in the dev profile, and it is built with the selection `ci` builds
/// (`--workspace`) so that it reuses the llama.cpp `ci` compiled: Cargo unifies features over
/// the packages selected, and with `-p evolution-llm-local` alone the build dependencies of
/// llama.cpp's bindings (`syn` under `bindgen`) get fewer features, which changes the build
/// script's hash and compiles llama.cpp a second time.
fn local_bench(root: &Path, name: &str, example: &str, args: &[OsString]) -> Result<ExitCode> {
    let status = cargo()
        .args(["build", "--workspace", "--example", example])
        .current_dir(root)
        .status()
        .with_context(|| format!("cannot build the `{name}` benchmark"))?;
    if !status.success() {
        return Ok(exit_code(status));
    }
    let program = target_dir(root).join("debug/examples").join(example);
    let status = Command::new(&program)
        .args(args)
        .current_dir(root)
        .status()
        .with_context(|| format!("cannot start {}", program.display()))?;
    Ok(exit_code(status))
}

/// The test fixtures each session reader's fuzz target starts from.
const FUZZ_SEEDS: [(&str, &[&str]); 6] = [
    (
        "harvest_claude_code",
        &[
            "crates/skill-evolve/tests/it/fixtures/harvest/claude",
            "crates/skill-evolve/tests/it/fixtures/harvest/corrections",
        ],
    ),
    (
        "harvest_codex",
        &["crates/skill-evolve/tests/it/fixtures/harvest/codex"],
    ),
    (
        "harvest_copilot",
        &[
            "crates/skill-evolve/tests/it/fixtures/harvest/copilot",
            "crates/skill-evolve/tests/it/fixtures/harvest/copilot-history",
        ],
    ),
    (
        "harvest_gemini",
        &["crates/skill-evolve/tests/it/fixtures/harvest/gemini"],
    ),
    // The stores' fixtures are SQL: their rows, in the targets' input format.
    ("harvest_cursor", &["fuzz/seeds/harvest_cursor"]),
    ("harvest_opencode", &["fuzz/seeds/harvest_opencode"]),
];

/// `fuzz <target> [seconds]`: installs cargo-fuzz when missing, then fuzzes for `seconds`
/// (a session reader's target starting from the test fixtures of its format).
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
    // The target's own corpus first (libFuzzer adds what it finds there), then the folders of
    // test fixtures it starts from, read only.
    let seeds = FUZZ_SEEDS
        .iter()
        .find(|(name, _)| target.to_str() == Some(*name))
        .map_or(&[][..], |(_, dirs)| *dirs);
    let mut corpora: Vec<std::path::PathBuf> = Vec::new();
    if !seeds.is_empty() {
        let own = root.join("fuzz/corpus").join(target);
        std::fs::create_dir_all(&own)
            .with_context(|| format!("cannot create {}", own.display()))?;
        corpora.push(own);
        corpora.extend(seeds.iter().map(|dir| root.join(dir)));
    }
    // cargo-fuzz passes nightly-only flags; RUSTC_BOOTSTRAP lets the pinned stable accept them.
    let status = cargo()
        .args(["fuzz", "run"])
        .arg(target)
        .args(&corpora)
        .arg("--")
        .arg(format!("-max_total_time={seconds}"))
        .env("RUSTC_BOOTSTRAP", "1")
        .current_dir(root)
        .status()
        .context("cannot start `cargo fuzz run`")?;
    Ok(exit_code(status))
}

/// `demo`: installs what the local model needs, fetches it, builds `skill-evolve` and the
/// reference agent, then runs the whole loop offline twice on the shipped example
/// (`crates/skill-evolve/examples/rule-agent-demo`), each in a fresh folder under
/// `<target>/demo`: first with LLM replies recorded in a cassette, then with the embedded
/// 135M-parameter model proposing. Prints both reports and where each part's `report.md`
/// and `report.html` are.
pub(crate) fn demo(root: &Path) -> Result<ExitCode> {
    prereqs::install_for_build()?;
    let status = cargo()
        .current_dir(root)
        // The whole workspace, the selection `ci` builds: Cargo unifies features over the
        // packages selected, so the same selection reuses the llama.cpp build `ci` made.
        .args(["build", "--workspace", "--bins"])
        .status()
        .context("cannot run cargo build")?;
    if !status.success() {
        bail!("building skill-evolve and rule-agent failed");
    }
    let target = target_dir(root);
    let bin = target.join("debug");
    let example = root.join("crates/skill-evolve/examples/rule-agent-demo");
    let demo = target.join("demo");
    if demo.exists() {
        std::fs::remove_dir_all(&demo)
            .with_context(|| format!("cannot clear {}", demo.display()))?;
    }
    let path = std::env::join_paths(std::iter::once(bin.clone()).chain(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    )))?;
    let parts = [
        DemoPart {
            folder: "recorded",
            config: "evolve.toml",
            run: "demo",
            intro: "Part 1 of 2: the agent is `rule-agent`, a deterministic program that answers \
                    from the `RULE <task> => <answer>` lines of its skill; the LLM's replies \
                    (judges, the proposed edit) come from a cassette scripted to show an \
                    accepted edit, not from a model's judgement. The rollouts, the gate (wins, \
                    losses, e-value), the versioned store and the report are real.",
        },
        DemoPart {
            folder: "local",
            config: "evolve-local.toml",
            run: "demo-local",
            intro: "Part 2 of 2: the same loop, with every LLM reply written by the embedded \
                    SmolLM2-135M-Instruct model on this CPU, sampled under the kernel's JSON \
                    schemas so each reply parses. A model this small writes well-formed edits, \
                    but rarely the rule the failures call for: expect the gate to reject what \
                    it proposes and the skill to stay as it was. That is the point of the gate; \
                    a capable model (provider `openai`) is what makes proposals worth accepting.",
        },
    ];
    for part in &parts {
        let dir = demo.join(part.folder);
        std::fs::create_dir_all(dir.join("skills"))?;
        for name in [
            part.config,
            "questions.jsonl",
            "demo.cassette",
            "skills/default-strategy.md",
        ] {
            std::fs::copy(example.join(name), dir.join(name))
                .with_context(|| format!("cannot copy {name}"))?;
        }
        println!("\n{}\n", part.intro);
        let started = std::time::Instant::now();
        let status = Command::new(bin.join("skill-evolve"))
            .current_dir(&dir)
            .env("PATH", &path)
            .args(["run", "--config", part.config])
            .status()
            .context("cannot run skill-evolve")?;
        if !status.success() {
            bail!("the demo run `{}` failed", part.run);
        }
        let run_dir = dir.join(".skill-evolve/runs").join(part.run);
        let report = run_dir.join("report.md");
        let text = std::fs::read_to_string(&report)
            .with_context(|| format!("cannot read {}", report.display()))?;
        println!(
            "\n{text}\n{}",
            report_locations(&run_dir, started.elapsed().as_secs_f64())
        );
    }
    println!(
        "\nTo use a real model, set [llm] provider = \"openai\" with a base_url and model in {}.",
        demo.join("recorded/evolve.toml").display()
    );
    Ok(ExitCode::SUCCESS)
}

/// Where a demo part's reports are, given its run folder, and how long the part took.
fn report_locations(run_dir: &Path, seconds: f64) -> String {
    format!(
        "Report: {} ({seconds:.0} s)\nHTML report: {} (open it in a browser)",
        run_dir.join("report.md").display(),
        run_dir.join("report.html").display()
    )
}

/// One run of the demo: its folder under `<target>/demo`, its configuration and what it shows.
struct DemoPart {
    folder: &'static str,
    config: &'static str,
    run: &'static str,
    intro: &'static str,
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::{report_locations, time_table};

    #[test]
    fn a_demo_part_names_both_of_its_reports() {
        let run = Path::new("/tmp/demo/recorded/.skill-evolve/runs/demo");
        assert_eq!(
            report_locations(run, 41.6),
            "Report: /tmp/demo/recorded/.skill-evolve/runs/demo/report.md (42 s)\n\
             HTML report: /tmp/demo/recorded/.skill-evolve/runs/demo/report.html \
             (open it in a browser)"
        );
    }

    #[test]
    fn the_time_table_lists_each_step_and_the_total() {
        let times = [
            ("cargo fmt --all -- --check".to_owned(), 1.24),
            ("cargo xtask tidy".to_owned(), 0.5),
            ("cargo nextest run --workspace".to_owned(), 612.0),
        ];
        assert_eq!(
            time_table(&times),
            "xtask ci: wall time per step\n\
             \x20 step                            seconds\n\
             \x20 cargo fmt --all -- --check          1.2\n\
             \x20 cargo xtask tidy                    0.5\n\
             \x20 cargo nextest run --workspace     612.0\n\
             \x20 total                             613.7"
        );
        assert_eq!(
            time_table(&[]),
            "xtask ci: wall time per step\n  step    seconds\n  total       0.0"
        );
    }
}
