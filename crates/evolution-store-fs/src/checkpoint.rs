//! The [`Checkpoint`] port in a JSON file, replaced atomically.

use std::io::Write;
use std::path::{Path, PathBuf};

use atomic_write_file::AtomicWriteFile;

use evolution_types::{Checkpoint, CheckpointError};

/// Keeps a run's resumable state (a JSON value) in one file. Each save writes a temporary
/// file, syncs it and renames it over the old one, so a process killed at
/// any point leaves the previous state or the new one, never a torn file.
/// A missing file means a fresh run.
#[derive(Debug, Clone)]
pub struct FileCheckpoint {
    path: PathBuf,
}

impl FileCheckpoint {
    /// The checkpoint at `path` (its directory must exist).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        FileCheckpoint { path: path.into() }
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Checkpoint for FileCheckpoint {
    fn load(&self) -> Result<Option<serde_json::Value>, CheckpointError> {
        let bytes = match std::fs::read(&self.path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => {
                return Err(CheckpointError::Backend {
                    message: format!("{}: {e}", self.path.display()),
                });
            }
        };
        serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| CheckpointError::Corrupt {
                message: format!("{}: not JSON: {e}", self.path.display()),
            })
    }

    fn save(&self, state: &serde_json::Value) -> Result<(), CheckpointError> {
        let fail = |e: &dyn std::fmt::Display| CheckpointError::Backend {
            message: format!("{}: {e}", self.path.display()),
        };
        let json = serde_json::to_vec_pretty(state).map_err(|e| fail(&e))?;
        let mut file = AtomicWriteFile::open(&self.path).map_err(|e| fail(&e))?;
        crate::private::make_private(file.as_file()).map_err(|e| fail(&e))?;
        file.write_all(&json).map_err(|e| fail(&e))?;
        file.commit().map_err(|e| fail(&e))
    }
}
