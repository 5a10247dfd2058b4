//! Integration tests of the `xtask` binary: check-deps on fixture workspaces and on this
//! workspace, and the argument handling of the other commands.

mod check_deps;
mod commands;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The xtask binary, run with the cargo that runs the tests.
fn xtask() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_xtask"));
    command.env("CARGO", env!("CARGO"));
    command
}

/// Stdout, stderr and exit code of a finished command.
struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl From<Output> for Run {
    fn from(output: Output) -> Self {
        Self {
            code: output.status.code(),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }
}

fn run(command: &mut Command) -> Run {
    command.output().expect("the xtask binary starts").into()
}

/// Copies the fixture workspace `name` to a scratch directory of its own (cargo metadata
/// writes a Cargo.lock beside the manifest, and tests run in parallel) and returns the copy.
fn fixture(name: &str) -> PathBuf {
    static COPIES: AtomicUsize = AtomicUsize::new(0);
    let source = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    let unique = format!(
        "{name}-{}-{}",
        std::process::id(),
        COPIES.fetch_add(1, Ordering::Relaxed)
    );
    let copy = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("check-deps-fixtures")
        .join(unique);
    if copy.exists() {
        std::fs::remove_dir_all(&copy).expect("old fixture copy removed");
    }
    copy_dir(&source, &copy);
    copy
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("fixture copy directory created");
    for entry in std::fs::read_dir(from).expect("fixture directory readable") {
        let entry = entry.expect("fixture entry readable");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("fixture file type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("fixture file copied");
        }
    }
}
