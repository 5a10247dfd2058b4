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
    check(d, &["history", "SKILL.md"], "SKILL.md: no such file");
    check(d, &["history", "skills/a.md"], "skills/a.md: no such file");
    std::fs::write(d.join("SKILL.md"), "# A skill\n").unwrap();
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
fn diagnose_refuses_another_programs_database_and_leaves_it_alone() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // An SQLite database of another program: one table, `users`.
    std::fs::copy(
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/other-program.sqlite"
        ),
        d.join("app.sqlite"),
    )
    .unwrap();
    for extra in [&[][..], &["--no-llm"][..]] {
        let mut args = vec!["diagnose", "--runlog", "app.sqlite", "--run-id", "r1"];
        args.extend(extra);
        check(
            d,
            &args,
            "app.sqlite: not a run log: it lacks the table(s) runs, predictions, traces",
        );
    }
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

/// The shipped release-notes example, evolved once (`v1` → `v2`) from its cassette.
fn evolved_example() -> tempfile::TempDir {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/release-notes");
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir_all(d.join("temp")).unwrap();
    for name in [
        "SKILL.md",
        "demo.cassette",
        "temp/failed_trajectory_001.json",
        "temp/failed_trajectory_002.json",
    ] {
        std::fs::copy(example.join(name), d.join(name)).unwrap();
    }
    skill_evolve(d)
        .args(["evolve", "SKILL.md", "--trajectories", "temp", "--yes"])
        .args(["--provider", "replay", "--cassette", "demo.cassette"])
        .assert()
        .success();
    dir
}

#[test]
fn store_and_skill_problems_are_one_line() {
    let dir = evolved_example();
    let d = dir.path();
    check(
        d,
        &["diff", "SKILL.md", "v9"],
        "version v000009 is not in this store's history",
    );
    check(
        d,
        &["diff", "SKILL.md", "x1"],
        "\"x1\" is not a version: write v3 or 3",
    );
    check(
        d,
        &["rollback", "SKILL.md", "--to", "9", "--yes"],
        "version v000009 is not in this store's history",
    );
    check(
        d,
        &["rollback", "SKILL.md", "--to", "abc", "--yes"],
        "\"abc\" is not a version",
    );
    check(
        d,
        &["doctor", "SKILL.md", "--fix", "--json"],
        "cannot be used with",
    );
    fn evolve(skill: &str) -> Vec<&str> {
        let mut args = vec!["evolve", skill, "--trajectories", "temp"];
        args.extend(["--provider", "replay", "--cassette", "demo.cassette"]);
        args
    }
    check(
        d,
        &evolve("missing.md"),
        "missing.md: cannot read the skill document: No such file",
    );
    // Reversed markers are refused like duplicated ones: line and a pointer to doctor.
    std::fs::create_dir_all(d.join("rev")).unwrap();
    std::fs::write(
        d.join("rev/SKILL.md"),
        "# Skill\n\n1. Step.\n\n<!-- SLOW_UPDATE_END -->\n- guidance\n<!-- SLOW_UPDATE_START -->\n",
    )
    .unwrap();
    check(d, &evolve("rev/SKILL.md"), "rev/SKILL.md:5: end marker");
    check(
        d,
        &evolve("rev/SKILL.md"),
        "run `skill-evolve doctor --fix rev/SKILL.md`",
    );
    // Interleaved regions are beyond `doctor --fix`: evolve does not send the user there.
    std::fs::create_dir_all(d.join("alt")).unwrap();
    std::fs::write(
        d.join("alt/SKILL.md"),
        "# Skill
<!-- APPENDIX_START -->
a
<!-- APPENDIX_END -->
         <!-- APPENDIX_START -->
b
<!-- APPENDIX_END -->
",
    )
    .unwrap();
    check(d, &evolve("alt/SKILL.md"), "fix the markers by hand");
}

#[test]
fn run_llm_problems_are_one_line() {
    let replay = crate::run::CONFIG.replace(
        "provider = \"openai\"",
        "provider = \"replay\"\ncassette = \"nope.cassette\"",
    );
    let dir = crate::run::run_workspace(&replay);
    let d = dir.path();
    check(
        d,
        &["run", "--config", "evolve.toml", "--dry-run"],
        "nope.cassette: cannot use the cassette",
    );
    std::fs::write(d.join("nope.cassette"), "").unwrap();
    check(
        d,
        &["run", "--config", "evolve.toml", "--record", "new.cassette"],
        "--record needs a live provider",
    );
    let dir = crate::run::run_workspace(crate::run::CONFIG);
    check(
        dir.path(),
        &["run", "--config", "evolve.toml", "--dry-run"],
        "SKILL_EVOLVE_TEST_KEY (api_key_env) is not set",
    );
}
