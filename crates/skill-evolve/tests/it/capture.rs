//! `skill-evolve capture` end to end: rollouts added one by one to a folder that
//! `evolve --trajectories` then reads, never replacing one, redacted, bad input refused.

use std::sync::atomic::Ordering;

use serde_json::Value;

use crate::support::{assert_one_line_error, skill_evolve, snapshot};

fn capture(d: &std::path::Path, args: &[&str]) -> std::process::Output {
    skill_evolve(d).arg("capture").args(args).output().unwrap()
}

#[test]
fn captured_rollouts_feed_evolve() {
    let dir = crate::evolve::workspace(crate::evolve::SKILL);
    let d = dir.path();
    std::fs::write(
        d.join("steps.json"),
        r#"[{"tool_name": "git_log", "tool_input": {"range": "v1..v2"}, "tool_output": "3 commits"}]"#,
    )
    .unwrap();
    let out = capture(
        d,
        &[
            "--dir",
            "rollouts",
            "--question",
            "Write the notes for v2.",
            "--prediction",
            "Notes without the crash fix; token GITHUB_TOKEN=ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
            "--correct",
            "false",
            "--reference",
            "Notes leading with the crash fix.",
            "--fail-reason",
            "the crash fix users reported is missing",
            "--skill",
            "release-notes",
            "--steps",
            "steps.json",
            "--meta",
            "model=gpt-test",
            "--meta",
            "run=7",
            "--timestamp",
            "2026-03-01T12:00:00Z",
        ],
    );
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        stdout.starts_with("captured rollout-20260301T120000Z-1 (failed)"),
        "{stdout}"
    );
    // A second rollout at the same time gets the next name; nothing is replaced.
    let out = capture(
        d,
        &[
            "--dir",
            "rollouts",
            "--question",
            "Write the notes for v3.",
            "--prediction",
            "Good notes.",
            "--correct",
            "true",
            "--timestamp",
            "2026-03-01T12:00:00Z",
        ],
    );
    assert!(out.status.success(), "{out:?}");
    let first: Value = serde_json::from_str(
        &std::fs::read_to_string(d.join("rollouts/rollout-20260301T120000Z-1.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(first["hard"], 0.0);
    assert_eq!(first["skill_id"], "release-notes");
    assert_eq!(first["timestamp"], "2026-03-01T12:00:00Z");
    assert_eq!(first["metadata"]["run"], "7");
    assert_eq!(first["steps"][0]["step"], 1);
    assert_eq!(
        first["fail_reason"],
        "the crash fix users reported is missing"
    );
    let text = first.to_string();
    assert!(!text.contains("ghp_a1B2"), "{text}");
    assert!(
        text.contains("GITHUB_TOKEN=[REDACTED:github_token]"),
        "{text}"
    );
    assert!(d.join("rollouts/rollout-20260301T120000Z-2.json").is_file());

    let fake = crate::fake_llm::start();
    let out = skill_evolve(d)
        .args(["evolve", "skill/SKILL.md", "--trajectories", "rollouts"])
        .args([
            "--provider",
            "openai",
            "--base-url",
            &fake.base_url,
            "--model",
            "fake-model",
        ])
        .args(["--record", "run.cassette"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(fake.calls.load(Ordering::SeqCst), 2, "{out:?}");
    let cassette = std::fs::read_to_string(d.join("run.cassette")).unwrap();
    assert!(cassette.contains("the crash fix users reported is missing"));
    assert!(!cassette.contains("ghp_a1B2"));
}

#[test]
fn a_given_id_is_never_replaced_and_bad_input_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let base = [
        "--dir",
        "r",
        "--question",
        "q",
        "--prediction",
        "p",
        "--correct",
        "true",
    ];
    let with = |extra: &[&'static str]| {
        let mut all: Vec<&str> = base.to_vec();
        all.extend_from_slice(extra);
        capture(d, &all)
    };
    assert!(with(&["--id", "case-1"]).status.success());
    let before = snapshot(d);
    assert_one_line_error(
        &with(&["--id", "case-1"]),
        "case-1.json: a rollout with this id is already captured",
    );
    assert_one_line_error(
        &with(&["--id", "../escape"]),
        "--id \"../escape\": use letters, digits",
    );
    assert_one_line_error(
        &with(&["--meta", "novalue"]),
        "--meta \"novalue\": expected KEY=VALUE",
    );
    assert_one_line_error(
        &with(&["--timestamp", "yesterday"]),
        "--timestamp \"yesterday\": expected ISO 8601",
    );
    std::fs::write(d.join("steps.json"), "{\"not\": \"an array\"}").unwrap();
    assert_one_line_error(
        &with(&["--steps", "steps.json"]),
        "steps.json: the steps must be a JSON array",
    );
    std::fs::remove_file(d.join("steps.json")).unwrap();
    assert_eq!(snapshot(d), before);
    let out = capture(
        d,
        &[
            "--dir",
            "r",
            "--question",
            "q",
            "--prediction",
            "p",
            "--correct",
            "maybe",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn the_task_type_of_a_captured_rollout_is_the_users_to_set() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let base = [
        "--dir",
        "rollouts",
        "--question",
        "q",
        "--prediction",
        "p",
        "--correct",
        "false",
    ];
    let out = capture(
        d,
        &[&base[..], &["--id", "r1", "--task-type", "release-notes"]].concat(),
    );
    assert!(out.status.success(), "{out:?}");
    let written: Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("rollouts/r1.json")).unwrap())
            .unwrap();
    assert_eq!(written["task_type"], "release-notes");
    let before = snapshot(d);
    let out = capture(
        d,
        &[&base[..], &["--id", "r2", "--task-type", "plugin:notes"]].concat(),
    );
    assert_one_line_error(&out, "--task-type: skill name \"plugin:notes\" must start");
    assert_eq!(snapshot(d), before);
}
