//! The project's cache folders outside the clone, kept between runs on one machine: the local
//! model (`models`, see `fetch_model.rs`) and the tools `install-prereqs` builds or installs
//! (`tools`: cargo-deny, maturin).

use std::path::PathBuf;

use anyhow::{Context, Result};

/// A folder of the project's cache: `$override_var` when set, else
/// `$XDG_CACHE_HOME/evolution-kernel/<name>`, else `~/.cache/evolution-kernel/<name>`.
pub(crate) fn cache_dir(override_var: &str, name: &str) -> Result<PathBuf> {
    let var = |key: &str| std::env::var_os(key).filter(|v| !v.is_empty());
    if let Some(dir) = var(override_var) {
        return Ok(PathBuf::from(dir));
    }
    let cache = match var("XDG_CACHE_HOME") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(var("HOME").context("neither XDG_CACHE_HOME nor HOME is set")?)
            .join(".cache"),
    };
    Ok(cache.join("evolution-kernel").join(name))
}

/// The folder `install-prereqs` installs cargo tools into: `$EVOLUTION_TOOLS_DIR`, else
/// `$XDG_CACHE_HOME/evolution-kernel/tools`, else `~/.cache/evolution-kernel/tools`.
pub(crate) fn tools_dir() -> Result<PathBuf> {
    cache_dir("EVOLUTION_TOOLS_DIR", "tools")
}
