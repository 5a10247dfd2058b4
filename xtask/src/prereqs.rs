//! What the build and the checks need beyond cargo: installed by `install-prereqs`, checked
//! (never installed) by `ci`.
//!
//! `evolution-llm-local` compiles llama.cpp from its vendored sources with `cmake`, and
//! `bindgen` generates its bindings with libclang. Both come from Debian packages, so a fresh
//! machine gets them through `apt-get` (with `sudo` when not root). `cargo-deny` checks the
//! dependency graph against `deny.toml`; it is built once with `cargo install` into a cache
//! folder outside the clone, so repeated runs on one machine reuse it. The local model is
//! fetched by `fetch-model`. Debian's `chromium` runs the HTML report's browser test, which
//! `ci` requires (it sets `EVOLUTION_REQUIRE_CHROMIUM=1`, so the test fails rather than skips),
//! and Debian's `jq` is the baseline of `cargo xtask bench harvest` (not needed by `ci`).
//! maturin, which builds the Python wheel, is installed with pip into a virtual environment of
//! its own in the same cache folder (see `python.rs`). The Claude Code and Codex CLIs, which the
//! host-agent tests run, are pinned npm packages installed into the same cache folder (see
//! `host_clis.rs`).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

/// The Debian packages behind the llama.cpp build.
const PACKAGES: [&str; 2] = ["cmake", "libclang-dev"];

/// The Debian package of the browser the HTML report's test renders the page in.
const BROWSER_PACKAGE: &str = "chromium";

/// Where Debian's `chromium` package puts the browser, and where the test looks for it.
pub(crate) const CHROMIUM: &str = "/usr/bin/chromium";

/// The Debian package of `jq`, the baseline `cargo xtask bench harvest` reads the same
/// transcripts with.
const JQ_PACKAGE: &str = "jq";

/// Where Debian's `jq` package puts the program.
const JQ: &str = "/usr/bin/jq";

/// The cargo-deny release `install-prereqs` builds (one known to build with this toolchain).
const CARGO_DENY_VERSION: &str = "0.20.2";

/// `install-prereqs`: what the build needs ([`install_for_build`]), cargo-deny, maturin and Chromium
/// for `ci`, and `jq` for the harvest benchmark, each skipped when already present.
pub(crate) fn install_all() -> Result<()> {
    install_for_build()?;
    ensure_debian_program(
        BROWSER_PACKAGE,
        CHROMIUM,
        "the HTML report's browser test renders in it",
    )?;
    ensure_debian_program(
        JQ_PACKAGE,
        JQ,
        "`cargo xtask bench harvest` compares with it",
    )?;
    crate::python::ensure_maturin()?;
    crate::host_clis::ensure_host_clis()?;
    ensure_cargo_deny()
}

/// What building and running the workspace needs: the Debian packages and the local model
/// (`demo` needs no more; only `ci` needs cargo-deny).
pub(crate) fn install_for_build() -> Result<()> {
    ensure_llama_build_tools()?;
    crate::fetch_model::fetch_model(&[])?;
    Ok(())
}

/// What `ci` needs and `install-prereqs` provides, or the one-line reason it is missing.
pub(crate) fn check_all() -> Result<()> {
    let hint = "run `cargo xtask install-prereqs` first";
    if !has_cmake() || !has_libclang() {
        bail!("cmake or libclang is missing (needed to build llama.cpp); {hint}");
    }
    if !Path::new(CHROMIUM).is_file() {
        bail!("{CHROMIUM} is missing (the HTML report's browser test must run in ci); {hint}");
    }
    if !crate::python::maturin_path()?.is_file() {
        bail!("maturin is not installed in the tools cache; {hint}");
    }
    if !cargo_deny_path()?.is_file() {
        bail!("cargo-deny is not installed in the tools cache; {hint}");
    }
    if !crate::host_clis::all_present()? {
        bail!("the Claude Code or Codex CLI is not installed in the tools cache; {hint}");
    }
    if !crate::fetch_model::model_is_present()? {
        bail!("the local model is missing or damaged; {hint}");
    }
    Ok(())
}

/// The cargo-deny binary `install-prereqs` puts in the tools folder.
pub(crate) fn cargo_deny_path() -> Result<PathBuf> {
    Ok(crate::cache::tools_dir()?.join("bin").join("cargo-deny"))
}

/// Builds cargo-deny into the tools folder unless that exact version is already there.
fn ensure_cargo_deny() -> Result<()> {
    let path = cargo_deny_path()?;
    if path.is_file() {
        let version = Command::new(&path)
            .arg("--version")
            .output()
            .map(|out| String::from_utf8_lossy(&out.stdout).into_owned())
            .unwrap_or_default();
        if version
            .split_whitespace()
            .any(|word| word == CARGO_DENY_VERSION)
        {
            return Ok(());
        }
    }
    let root = crate::cache::tools_dir()?;
    eprintln!(
        "xtask: building cargo-deny {CARGO_DENY_VERSION} into {} (once per machine)",
        root.display()
    );
    let mut root_arg = OsString::from("--root=");
    root_arg.push(&root);
    let status = crate::cargo()
        .args(["install", "--locked", "--quiet", "cargo-deny", "--version"])
        .arg(CARGO_DENY_VERSION)
        .arg(root_arg)
        // The tools folder has a target of its own; the project's target stays for the project.
        .env_remove("CARGO_TARGET_DIR")
        .status()
        .context("cannot start `cargo install cargo-deny`")?;
    if !status.success() {
        bail!("`cargo install cargo-deny` failed ({status})");
    }
    Ok(())
}

/// Installs `cmake` and `libclang-dev` unless both are already usable.
pub(crate) fn ensure_llama_build_tools() -> Result<()> {
    if has_cmake() && has_libclang() {
        return Ok(());
    }
    eprintln!(
        "xtask: installing {} (needed to build llama.cpp for evolution-llm-local)",
        PACKAGES.join(" ")
    );
    let root = is_root();
    run_apt(root, &["update", "-qq"])?;
    let mut install = vec!["install", "-y", "-qq", "--no-install-recommends"];
    install.extend(PACKAGES);
    run_apt(root, &install)?;
    if !has_cmake() || !has_libclang() {
        bail!(
            "installed {} but cmake or libclang is still not found",
            PACKAGES.join(" ")
        );
    }
    Ok(())
}

/// Installs the Debian package `package` unless the program `program` is already there;
/// `why` says what needs it.
fn ensure_debian_program(package: &str, program: &str, why: &str) -> Result<()> {
    if Path::new(program).is_file() {
        return Ok(());
    }
    eprintln!("xtask: installing {package} ({why})");
    let root = is_root();
    run_apt(root, &["update", "-qq"])?;
    run_apt(
        root,
        &["install", "-y", "-qq", "--no-install-recommends", package],
    )?;
    if !Path::new(program).is_file() {
        bail!("installed {package} but {program} is still not found");
    }
    Ok(())
}

fn run_apt(root: bool, args: &[&str]) -> Result<()> {
    let mut command = if root {
        Command::new("apt-get")
    } else {
        let mut sudo = Command::new("sudo");
        sudo.arg("apt-get");
        sudo
    };
    let status = command
        .args(args)
        .env("DEBIAN_FRONTEND", "noninteractive")
        .status()
        .with_context(|| {
            format!(
                "cannot start apt-get (run `apt-get {}` by hand)",
                args.join(" ")
            )
        })?;
    if !status.success() {
        bail!("`apt-get {}` failed ({status})", args.join(" "));
    }
    Ok(())
}

fn has_cmake() -> bool {
    Command::new("cmake")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// libclang as bindgen finds it: `$LIBCLANG_PATH`, or a `libclang*.so*` under an LLVM or
/// system library directory.
fn has_libclang() -> bool {
    let mut dirs: Vec<std::path::PathBuf> = Vec::new();
    if let Some(dir) = std::env::var_os("LIBCLANG_PATH") {
        dirs.push(dir.into());
    }
    if let Ok(entries) = std::fs::read_dir("/usr/lib") {
        for entry in entries.flatten() {
            if entry.file_name().to_string_lossy().starts_with("llvm-") {
                dirs.push(entry.path().join("lib"));
            }
        }
    }
    dirs.push("/usr/lib/x86_64-linux-gnu".into());
    dirs.push("/usr/lib/aarch64-linux-gnu".into());
    dirs.iter().any(|dir| contains_libclang(dir))
}

fn contains_libclang(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|entries| {
        entries.flatten().any(|entry| {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            name.starts_with("libclang") && name.contains(".so")
        })
    })
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|out| out.stdout.trim_ascii() == b"0")
}
