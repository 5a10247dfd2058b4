//! Yelp's detect-secrets on the same cases, when its `detect-secrets` command is installed
//! (`pip install detect-secrets`): every case is written to a file of its own in a fresh
//! temporary folder, the folder is scanned once with `detect-secrets scan --all-files`, and a
//! secret counts as caught when a finding's line holds a part of it (detect-secrets reports
//! lines, it does not rewrite them); a look-alike counts as altered when its file has any
//! finding.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use serde_json::Value;

/// What the scanner found, by file index, and how long the scan took.
pub(crate) struct Scan {
    /// Line numbers (1-based) with a finding, by the index of the file's text.
    pub(crate) lines: BTreeMap<usize, BTreeSet<usize>>,
    /// Wall-clock seconds of the scan.
    pub(crate) seconds: f64,
    /// The scanner's version.
    pub(crate) version: String,
}

/// The installed version, or `None` when `detect-secrets` cannot be run.
pub(crate) fn version() -> Option<String> {
    let out = Command::new("detect-secrets")
        .arg("--version")
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Scans `texts` (one file each); `Err` names what failed.
pub(crate) fn scan(texts: &[String]) -> Result<Scan, String> {
    let version = version().ok_or("detect-secrets is not installed")?;
    let dir = TempDir(std::env::temp_dir().join(format!(
        "redact-bench-detect-secrets-{}",
        std::process::id()
    )));
    std::fs::create_dir_all(&dir.0)
        .map_err(|e| format!("cannot create {}: {e}", dir.0.display()))?;
    for (i, text) in texts.iter().enumerate() {
        let path = dir.0.join(format!("{i}.txt"));
        std::fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    let started = Instant::now();
    let out = Command::new("detect-secrets")
        .arg("scan")
        .arg("--all-files")
        .arg(".")
        .current_dir(&dir.0)
        .output()
        .map_err(|e| format!("cannot run detect-secrets: {e}"))?;
    let seconds = started.elapsed().as_secs_f64();
    if !out.status.success() {
        return Err(format!(
            "detect-secrets failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let report: Value = serde_json::from_slice(&out.stdout)
        .map_err(|e| format!("detect-secrets printed no JSON report: {e}"))?;
    let mut lines: BTreeMap<usize, BTreeSet<usize>> = BTreeMap::new();
    if let Some(results) = report.get("results").and_then(Value::as_object) {
        for (file, findings) in results {
            let Some(index) = file_index(Path::new(file)) else {
                continue;
            };
            for finding in findings.as_array().into_iter().flatten() {
                if let Some(n) = finding.get("line_number").and_then(Value::as_u64) {
                    lines.entry(index).or_default().insert(n as usize);
                }
            }
        }
    }
    Ok(Scan {
        lines,
        seconds,
        version,
    })
}

fn file_index(path: &Path) -> Option<usize> {
    path.file_stem()?.to_str()?.parse().ok()
}

impl Scan {
    /// True when a finding in file `index` (whose text is `text`) is on a line holding a part
    /// of `secret`.
    pub(crate) fn caught(&self, index: usize, text: &str, secret: &str) -> bool {
        let Some(lines) = self.lines.get(&index) else {
            return false;
        };
        let first = secret.lines().next().unwrap_or(secret);
        text.lines()
            .enumerate()
            .any(|(i, line)| lines.contains(&(i + 1)) && line.contains(first))
    }

    /// True when file `index` has any finding.
    pub(crate) fn flagged(&self, index: usize) -> bool {
        self.lines.get(&index).is_some_and(|l| !l.is_empty())
    }
}
