//! The agent hosts the host-agent tests drive for real: Claude Code and Codex, pinned npm
//! packages installed with `npm` into `host-clis` of the tools cache folder (once per machine
//! and version). The tests find them there (or under `$EVOLUTION_HOST_CLIS_DIR`), and `ci`
//! sets `EVOLUTION_REQUIRE_HOST_CLIS=1` so that they fail rather than skip without them.

use std::path::PathBuf;
use std::process::Command;

use anyhow::{Context, Result, bail};

/// The pinned host packages: npm name, version, the program it installs.
pub(crate) const PACKAGES: [(&str, &str, &str); 2] = [
    ("@anthropic-ai/claude-code", "2.1.332", "claude"),
    ("@openai/codex", "0.171.0", "codex"),
];

/// The variable `ci` sets so that the host-agent tests cannot skip.
pub(crate) const REQUIRE_HOST_CLIS: &str = "EVOLUTION_REQUIRE_HOST_CLIS";

/// The folder the host packages are installed in (`node_modules/` beneath it): the tests
/// look in the same place.
pub(crate) fn host_clis_dir() -> Result<PathBuf> {
    if let Some(dir) = std::env::var_os("EVOLUTION_HOST_CLIS_DIR").filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(dir));
    }
    Ok(crate::cache::tools_dir()?.join("host-clis"))
}

/// The installed version of the npm package `name`, if any.
fn installed_version(name: &str) -> Result<Option<String>> {
    let manifest = host_clis_dir()?
        .join("node_modules")
        .join(name)
        .join("package.json");
    let Ok(text) = std::fs::read_to_string(&manifest) else {
        return Ok(None);
    };
    let value: serde_json::Value = serde_json::from_str(&text)
        .with_context(|| format!("{} is not JSON", manifest.display()))?;
    Ok(value["version"].as_str().map(str::to_owned))
}

/// Whether every pinned package is installed at its version with its program in place.
pub(crate) fn all_present() -> Result<bool> {
    let bin = host_clis_dir()?.join("node_modules").join(".bin");
    for (name, version, program) in PACKAGES {
        if installed_version(name)?.as_deref() != Some(version) || !bin.join(program).exists() {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Installs the pinned packages with npm unless they are all there already.
pub(crate) fn ensure_host_clis() -> Result<()> {
    if all_present()? {
        return Ok(());
    }
    let dir = host_clis_dir()?;
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let specs: Vec<String> = PACKAGES
        .iter()
        .map(|(name, version, _)| format!("{name}@{version}"))
        .collect();
    eprintln!(
        "xtask: installing {} into {} (the host-agent tests run them)",
        specs.join(" "),
        dir.display()
    );
    let status = Command::new("npm")
        .args([
            "install",
            "--no-audit",
            "--no-fund",
            "--save-exact",
            "--prefix",
        ])
        .arg(&dir)
        .args(&specs)
        .status()
        .context("cannot start npm (install Node.js 20 or newer with npm)")?;
    if !status.success() {
        bail!("`npm install {}` failed ({status})", specs.join(" "));
    }
    if !all_present()? {
        bail!(
            "npm installed {} but a program is missing under {}",
            specs.join(" "),
            dir.join("node_modules/.bin").display()
        );
    }
    Ok(())
}
