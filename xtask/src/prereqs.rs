//! The system tools the build needs beyond cargo, installed when missing.
//!
//! `evolution-llm-local` compiles llama.cpp from its vendored sources with `cmake`, and
//! `bindgen` generates its bindings with libclang. Both come from Debian packages, so a fresh
//! machine gets them through `apt-get` (with `sudo` when not root). Everything else is
//! fetched by cargo.

use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

/// The Debian packages behind the llama.cpp build.
const PACKAGES: [&str; 2] = ["cmake", "libclang-dev"];

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
        .context("cannot start apt-get (install cmake and libclang-dev by hand)")?;
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
