//! Every bad input: one line naming the file, the line and the problem;
//! exit code 2; nothing written.

use std::path::Path;

use crate::support::{assert_one_line_error, skill_evolve, snapshot};

fn check(dir: &Path, args: &[&str], needle: &str) {
    let before = snapshot(dir);
    let out = skill_evolve(dir).args(args).output().unwrap();
    assert_one_line_error(&out, needle);
    assert_eq!(snapshot(dir), before, "{args:?} wrote something");
}

#[test]
fn usage_errors_are_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    check(
        d,
        &[
            "gate",
            "--wins",
            "x",
            "--losses",
            "0",
            "--used",
            "1",
            "--remaining",
            "0",
        ],
        "--wins",
    );
    check(d, &["gate", "--wins", "1"], "--losses");
    check(d, &["frobnicate"], "frobnicate");
    check(
        d,
        &[
            "gate",
            "--wins",
            "1",
            "--losses",
            "0",
            "--used",
            "0",
            "--remaining",
            "0",
        ],
        "--used must be at least 1",
    );
    check(
        d,
        &[
            "gate",
            "--wins",
            "3",
            "--losses",
            "3",
            "--used",
            "5",
            "--remaining",
            "0",
        ],
        "exceeds --used 5",
    );
    check(d, &["evolve", "SKILL.md"], "--trajectories");
    check(
        d,
        &["evolve", "SKILL.md", "--trajectories", "t", "--rounds", "6"],
        "--rounds",
    );
    check(d, &["history", "SKILL.md"], "no version history here yet");
}

#[test]
fn unreadable_documents_name_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    check(d, &["doctor", "missing.md"], "missing.md: cannot read");
    std::fs::write(d.join("latin1.md"), b"ok\nbad \xff byte\n").unwrap();
    check(d, &["doctor", "latin1.md"], "latin1.md:2: not valid UTF-8");
}

#[test]
fn commands_not_built_yet_say_so() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    check(
        d,
        &["run", "--config", "evolve.toml"],
        "evolve.toml: cannot read the run configuration",
    );
    check(
        d,
        &["diagnose", "--runlog", "r.sqlite", "--run-id", "r1"],
        "r.sqlite: no such run log file",
    );
    check(
        d,
        &[
            "diagnose", "--runlog", "r.sqlite", "--run-id", "r1", "--no-llm",
        ],
        "r.sqlite: no such run log file",
    );
}

#[test]
fn every_command_has_help() {
    let dir = tempfile::tempdir().unwrap();
    for cmd in [
        "evolve", "run", "gate", "diagnose", "history", "diff", "rollback", "doctor",
    ] {
        let out = skill_evolve(dir.path())
            .args([cmd, "--help"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{cmd} --help failed");
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(text.contains("Usage: skill-evolve"), "{cmd}: {text}");
    }
}
