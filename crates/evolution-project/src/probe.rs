//! Checking, before any paid work, that a folder a command will write can be
//! written: the folder itself, or the nearest folder above it that exists,
//! must take a new file. The check leaves nothing behind.

use std::path::{Path, PathBuf};

/// Why a folder cannot be written.
#[derive(Debug)]
pub enum Unwritable {
    /// The nearest existing path is not a folder (a file stands in the way).
    NotAFolder(PathBuf),
    /// The nearest existing folder refused a new file.
    Refused(PathBuf, std::io::Error),
}

impl std::fmt::Display for Unwritable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unwritable::NotAFolder(path) => write!(f, "{} is not a folder", path.display()),
            Unwritable::Refused(path, e) => write!(f, "{} cannot be written ({e})", path.display()),
        }
    }
}

/// Creates and removes an empty hidden file in `dir`, or in the nearest
/// existing folder above it when `dir` does not exist yet.
pub fn check_folder_writable(dir: &Path) -> Result<(), Unwritable> {
    let existing = dir
        .ancestors()
        .find(|p| !p.as_os_str().is_empty() && std::fs::symlink_metadata(p).is_ok())
        .unwrap_or(Path::new("."));
    if !existing.is_dir() {
        return Err(Unwritable::NotAFolder(existing.to_path_buf()));
    }
    let probe = existing.join(format!(".skill-evolve-write-check-{}", std::process::id()));
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
    {
        Ok(file) => {
            drop(file);
            // Best effort: the probe is empty and hidden.
            let _ = std::fs::remove_file(&probe);
            Ok(())
        }
        Err(e) => Err(Unwritable::Refused(existing.to_path_buf(), e)),
    }
}
