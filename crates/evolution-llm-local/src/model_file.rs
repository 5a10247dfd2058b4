//! Where the default model lives and how its file is checked before loading.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::LocalLlmError;

/// File name of the default model, SmolLM2-135M-Instruct quantised to Q4_1.
pub const DEFAULT_MODEL_FILE: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";

/// SHA-256 (lower-case hex) of [`DEFAULT_MODEL_FILE`].
pub const DEFAULT_MODEL_SHA256: &str =
    "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53";

/// The command that downloads the default model.
pub const FETCH_COMMAND: &str = "cargo xtask fetch-model";

/// The model cache directory: `$EVOLUTION_MODEL_DIR`, else
/// `$XDG_CACHE_HOME/evolution-kernel/models`, else `~/.cache/evolution-kernel/models`.
/// `None` when neither variable nor a home directory is set.
pub fn model_cache_dir() -> Option<PathBuf> {
    let non_empty = |key: &str| std::env::var_os(key).filter(|v| !v.is_empty());
    if let Some(dir) = non_empty("EVOLUTION_MODEL_DIR") {
        return Some(PathBuf::from(dir));
    }
    let cache = non_empty("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| non_empty("HOME").map(|home| PathBuf::from(home).join(".cache")))?;
    Some(cache.join("evolution-kernel").join("models"))
}

/// The path of the default model in [`model_cache_dir`].
pub fn default_model_path() -> Option<PathBuf> {
    model_cache_dir().map(|dir| dir.join(DEFAULT_MODEL_FILE))
}

const GGUF_MAGIC: &[u8; 4] = b"GGUF";

/// Checks that `path` exists and starts like a GGUF file; with `sha256`, also its digest.
pub(crate) fn check(path: &Path, sha256: Option<&str>) -> Result<(), LocalLlmError> {
    let mut file = File::open(path).map_err(|err| {
        if err.kind() == std::io::ErrorKind::NotFound {
            LocalLlmError::ModelMissing {
                path: path.to_path_buf(),
            }
        } else {
            LocalLlmError::ModelUnreadable {
                path: path.to_path_buf(),
                reason: err.to_string(),
            }
        }
    })?;
    let corrupt = |reason: String| LocalLlmError::ModelCorrupt {
        path: path.to_path_buf(),
        reason,
    };
    let mut magic = [0u8; 4];
    file.read_exact(&mut magic)
        .map_err(|err| corrupt(format!("cannot read the GGUF header: {err}")))?;
    if &magic != GGUF_MAGIC {
        return Err(corrupt("not a GGUF file (bad magic bytes)".to_owned()));
    }
    if let Some(expected) = sha256 {
        let mut hasher = Sha256::new();
        hasher.update(magic);
        let mut buf = vec![0u8; 1 << 20];
        loop {
            let n = file
                .read(&mut buf)
                .map_err(|err| corrupt(format!("read error: {err}")))?;
            let Some(chunk) = buf.get(..n) else { break };
            if n == 0 {
                break;
            }
            hasher.update(chunk);
        }
        let actual = hex(&hasher.finalize());
        if !actual.eq_ignore_ascii_case(expected) {
            return Err(corrupt(format!("SHA-256 is {actual}, expected {expected}")));
        }
    }
    Ok(())
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::with_capacity(64), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}
