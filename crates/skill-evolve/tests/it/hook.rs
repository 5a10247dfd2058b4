//! `skill-evolve hook session-end` (the plugin's `SessionEnd` hook) records a finished session
//! of a project for `harvest --recorded`, exits 0 whatever it is given, and writes nothing
//! outside a project; `harvest --recorded` reads exactly the recorded sessions.

use std::path::Path;

use crate::harvest::{copy_tree, fixtures};
use crate::support::{skill_evolve, snapshot};

const DEMO_SESSION: &str = "claude/-work-demo-app/11111111-1111-4111-8111-111111111111.jsonl";

/// Runs the hook in `cwd` with `input` on stdin; it must exit 0.
fn hook(cwd: &Path, input: &str) -> std::process::Output {
    let out = skill_evolve(cwd)
        .args(["hook", "session-end"])
        .write_stdin(input)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(out.stdout.is_empty(), "{out:?}");
    out
}

fn end_of(session: &str, transcript: &Path, cwd: &Path) -> String {
    serde_json::json!({
        "session_id": session,
        "transcript_path": transcript,
        "cwd": cwd,
        "hook_event_name": "SessionEnd",
        "reason": "prompt_input_exit",
    })
    .to_string()
}

#[test]
fn a_finished_session_is_recorded_and_harvest_reads_only_the_recorded_ones() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    copy_tree(&fixtures(), d);
    let project = d.join("project");
    std::fs::create_dir_all(project.join("src")).unwrap();
    std::fs::write(project.join("evolve.toml"), "").unwrap();
    let transcript = d.join(DEMO_SESSION);

    // The session ran in a folder of the project: recorded in the project's state folder.
    hook(d, &end_of("s-1", &transcript, &project.join("src")));
    hook(d, &end_of("s-1", &transcript, &project.join("src")));
    let record = project.join(".skill-evolve/sessions.jsonl");
    let text = std::fs::read_to_string(&record).unwrap();
    assert_eq!(text.lines().count(), 2, "{text}");
    let line: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(line["session_id"], "s-1");
    assert_eq!(line["transcript_path"], transcript.display().to_string());
    assert_eq!(line["reason"], "prompt_input_exit");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&record).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "{mode:o}");
    }

    // Every session of the folder is three; the recorded one (twice) is read once.
    let out = skill_evolve(&project)
        .args([
            "harvest",
            "--source",
            "claude-code",
            "--from",
            "../claude",
            "--recorded",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.contains("\nsessions: 1\n"), "{stdout}");
    assert!(
        stdout.contains("11111111-1111-4111-8111-111111111111"),
        "{stdout}"
    );

    // A recorded transcript outside the sessions folder is named and not read.
    let stray = d.join("stray.jsonl");
    std::fs::copy(&transcript, &stray).unwrap();
    hook(d, &end_of("s-2", &stray, &project));
    let out = skill_evolve(&project)
        .args([
            "harvest",
            "--source",
            "claude-code",
            "--from",
            "../claude",
            "--recorded",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stdout.contains("\nsessions: 1\n"), "{stdout}");
    assert!(
        stderr.contains("stray.jsonl") && stderr.contains("recorded, but not a session file under"),
        "{stderr}"
    );
}

#[test]
fn outside_a_project_and_on_bad_input_the_hook_writes_nothing_and_exits_zero() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir_all(d.join("elsewhere")).unwrap();
    let before = snapshot(d);
    hook(d, &end_of("s-1", &d.join("t.jsonl"), &d.join("elsewhere")));
    assert_eq!(snapshot(d), before);
    for input in [
        "not json",
        "{}",
        "{\"transcript_path\": \"\", \"cwd\": \"/\"}",
        &"x".repeat(200_000),
    ] {
        let out = hook(d, input);
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(
            stderr.starts_with("skill-evolve hook session-end: "),
            "{stderr}"
        );
    }
    assert_eq!(snapshot(d), before);
}

#[test]
fn recorded_is_refused_where_there_is_no_project_or_no_transcript_source() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir_all(d.join("claude")).unwrap();
    let out = skill_evolve(d)
        .args([
            "harvest",
            "--source",
            "claude-code",
            "--from",
            "claude",
            "--recorded",
        ])
        .output()
        .unwrap();
    crate::support::assert_one_line_error(&out, "--recorded: no project here");
    let out = skill_evolve(d)
        .args([
            "harvest",
            "--source",
            "dir",
            "--from",
            "claude",
            "--recorded",
        ])
        .output()
        .unwrap();
    crate::support::assert_one_line_error(
        &out,
        "--recorded reads the sessions a host's hook recorded",
    );
}

#[test]
fn a_rollouts_session_is_not_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let project = d.join("project");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(project.join("evolve.toml"), "").unwrap();
    let input = end_of("s-1", &d.join("t.jsonl"), &project);
    let before = snapshot(d);
    let out = skill_evolve(d)
        .args(["hook", "session-end"])
        .env("SKILL_EVOLVE_ROLLOUT", "1")
        .write_stdin(input.clone())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(out.stdout.is_empty() && out.stderr.is_empty(), "{out:?}");
    assert_eq!(snapshot(d), before);
    // The same session outside a rollout is recorded: the mark is what kept it out.
    hook(d, &input);
    assert!(project.join(".skill-evolve/sessions.jsonl").is_file());
}

#[test]
fn harvest_leaves_out_the_sessions_rollouts_ran() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let project = d.join("app");
    std::fs::create_dir_all(&project).unwrap();
    let home = d.join("home");
    let rollout = home.join(".cache/skill-evolve/rollouts/rollout-x/work");
    let old_rollout = project.join(".skill-evolve/runs/demo/workspaces/evolution-ws-1/host-2");
    let store = d.join("claude");
    for (folder, cwd, id) in [
        (
            "-app",
            project.clone(),
            "11111111-1111-4111-8111-111111111111",
        ),
        ("-rollout", rollout, "22222222-2222-4222-8222-222222222222"),
        ("-old", old_rollout, "33333333-3333-4333-8333-333333333333"),
    ] {
        std::fs::create_dir_all(store.join(folder)).unwrap();
        std::fs::write(
            store.join(folder).join(format!("{id}.jsonl")),
            crate::host_journey::session(&cwd.display().to_string(), id, "Is it up?", 1),
        )
        .unwrap();
    }
    let out = skill_evolve(d)
        .env("HOME", &home)
        .env_remove("XDG_CACHE_HOME")
        .env_remove("SKILL_EVOLVE_ROLLOUTS_DIR")
        .args(["harvest", "--source", "claude-code", "--from", "claude"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.contains("\nsessions: 1\n"), "{stdout}");
    assert!(
        stdout.contains("11111111-1111-4111-8111-111111111111"),
        "{stdout}"
    );
}
