//! Every file a user names is bounded: a named pipe or a device is refused
//! before it is opened, and each kind of file has a size limit. Each refusal
//! is one line naming the file, exit code 2, nothing written.
//!
//! The commands run with a generous time limit so that a regression (a read
//! that blocks on a pipe or never ends on a device) fails instead of hanging
//! the suite; no test asserts anything about speed.

use std::path::Path;
use std::time::Duration;

use crate::support::{assert_one_line_error, run_config, skill_evolve, snapshot};

/// Long enough for a slow machine; only a blocked read reaches it.
const HANG_GUARD: Duration = Duration::from_secs(120);

fn refused(dir: &Path, args: &[&str], needle: &str) {
    let before = snapshot_but_odd(dir);
    let out = skill_evolve(dir)
        .args(args)
        .timeout(HANG_GUARD)
        .output()
        .unwrap();
    assert_one_line_error(&out, needle);
    assert_eq!(snapshot_but_odd(dir), before, "{args:?} wrote something");
}

/// [`snapshot`] of `dir` without its `odd/` folder, whose pipes would block a
/// reader and whose sparse files would fill its memory.
fn snapshot_but_odd(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let odd = dir.join("odd");
    let parked = dir.with_extension("odd");
    if odd.exists() {
        std::fs::rename(&odd, &parked).unwrap();
    }
    let shot = snapshot(dir);
    if parked.exists() {
        std::fs::rename(&parked, &odd).unwrap();
    }
    shot
}

#[test]
fn a_device_given_as_a_skill_document_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    refused(
        dir.path(),
        &["doctor", "/dev/zero"],
        "/dev/zero: cannot read the skill document: a device, not a regular file",
    );
    std::fs::create_dir(dir.path().join("folder.md")).unwrap();
    refused(
        dir.path(),
        &["doctor", "folder.md"],
        "folder.md: holds no skill document",
    );
}

#[cfg(unix)]
fn mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap();
    assert!(status.success(), "mkfifo {}", path.display());
}

#[cfg(unix)]
#[test]
fn a_named_pipe_trajectory_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir_all(d.join("skill")).unwrap();
    std::fs::write(d.join("skill/SKILL.md"), "# Skill\n\n1. Step.\n").unwrap();
    // The trajectories folder holds one pipe named like a trajectory file.
    std::fs::create_dir_all(d.join("odd")).unwrap();
    mkfifo(&d.join("odd/failed_trajectory_001.json"));
    mkfifo(&d.join("odd/SESSION-STATE.md"));
    refused(
        d,
        &["evolve", "skill/SKILL.md", "--trajectories", "odd"],
        "odd/failed_trajectory_001.json: unreadable: not a regular file",
    );
    refused(
        d,
        &[
            "evolve",
            "skill/SKILL.md",
            "--session-state",
            "odd/SESSION-STATE.md",
        ],
        "odd/SESSION-STATE.md: cannot read the session state: a named pipe (FIFO), not a \
         regular file",
    );
}

#[test]
fn an_oversized_question_set_is_refused_before_it_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // A sparse file: its size is over the limit, but it takes no disk space.
    let limit: u64 = 256 * 1024 * 1024;
    std::fs::write(d.join("run.sqlite"), "").unwrap();
    std::fs::create_dir(d.join("odd")).unwrap();
    let file = std::fs::File::create(d.join("odd/big.jsonl")).unwrap();
    file.set_len(limit + 1).unwrap();
    drop(file);
    refused(
        d,
        &[
            "diagnose",
            "--runlog",
            "run.sqlite",
            "--run-id",
            "r1",
            "--questions",
            "odd/big.jsonl",
        ],
        &format!(
            "odd/big.jsonl: the question set is {} bytes, over the limit of {limit} bytes (256 MiB)",
            limit + 1
        ),
    );
}

/// The agent's output limits are `[agent]` keys of the run configuration,
/// checked like every other key.
#[test]
fn agent_output_limits_are_run_configuration_keys() {
    use crate::run::{CONFIG, run_workspace};
    let limits =
        "timeout_secs = 30\nmax_steps = 50\nmax_output_bytes = 65536\nmax_field_chars = 100";
    let dir = run_workspace(&CONFIG.replace("timeout_secs = 30", limits));
    let out = run_config(dir.path(), &["--dry-run"]);
    assert!(out.status.success(), "{out:?}");
    for (key, line) in [
        ("max_steps", 10),
        ("max_output_bytes", 11),
        ("max_field_chars", 12),
    ] {
        let zero = limits.replace(&format!("{key} = "), &format!("{key} = 0 #"));
        let dir = run_workspace(&CONFIG.replace("timeout_secs = 30", &zero));
        refused(
            dir.path(),
            &["run", "--config", "evolve.toml", "--dry-run"],
            &format!("evolve.toml:{line}: [agent] {key} must be at least 1"),
        );
    }
}
