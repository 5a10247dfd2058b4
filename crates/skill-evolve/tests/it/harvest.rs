//! `skill-evolve harvest` end to end, on hand-written sessions in the formats Claude Code,
//! Codex, Gemini CLI, OpenCode, Cursor and GitHub Copilot write (`fixtures/harvest/`; Cursor's
//! SQLite stores are kept as the SQL that builds them, `state.sql`, turned into `state.vscdb` by
//! the test; where each format was learned is in the module documentation of its reader in
//! `evolution_harvest`): counts, verdicts with reasons, filters, redaction of a dozen kinds of
//! secrets in every written file, bad input, and a harvested folder fed to
//! `evolve --trajectories`.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

use serde_json::Value;

use crate::support::{assert_one_line_error, skill_evolve, snapshot};

/// The secrets planted in the fixtures, by kind: none may appear in anything harvest writes.
const SECRETS: [(&str, &str); 15] = [
    ("openai", "sk-proj-Q2x9LmN4pR7tV1wY3zA5bC8dE0fG6hJ"),
    (
        "anthropic",
        "sk-ant-api03-Zy8Xw7Vu6Ts5Rq4Po3Nm2Lk1Jh0Gf9Ed8Cb7",
    ),
    ("google", "AIzaSyD4fakeHarvestKey0123456789abcdefg"),
    ("aws access key", "AKIAQWERTYUIOPASDFGH"),
    ("aws secret", "wJalrXUtnFEMIK7MDENGbPxRfiCYharvestKEY1"),
    ("github", "ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"),
    (
        "github fine-grained",
        "github_pat_11AAAAAAA0harvestFixture_abcdefghijklmnopqrstuv",
    ),
    ("slack", "xoxb-2048-4096-AbCdEfGhIjKlMnOp"),
    ("bearer", "tok.live.9f8e7d6c5b4a3f2e1d"),
    ("private key", "MIIEowIBAAKCAQEAharvestFixtureKeyBody123"),
    ("url password", "S3cr3tPassw0rdX"),
    ("env password", "hunter2hunter2xyz"),
    ("stripe", "sk_live_51HharvestFixture0123456789"),
    (
        "jwt",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJoYXJ2ZXN0In0.c2lnbmF0dXJlZml4dHVyZQ",
    ),
    ("gitlab", "glpat-harvestFixture12345"),
];

pub(crate) fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/fixtures/harvest")
}

/// A temporary folder holding a copy of the fixtures.
fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_tree(&fixtures(), dir.path());
    dir
}

pub(crate) fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        let target = to.join(path.file_name().unwrap());
        if path.is_dir() {
            copy_tree(&path, &target);
        } else {
            std::fs::copy(&path, &target).unwrap();
        }
    }
}

/// Runs `harvest` in `d`. The fixtures' sessions ran in folders of their own, not in the
/// test's folder, so a source with projects reads them all (`--all-projects`) unless the test
/// names `--project`, `--all-projects` or `--recorded`; the default scope is tested with the
/// binary called directly.
fn harvest(d: &Path, args: &[&str]) -> std::process::Output {
    let projectless = args
        .windows(2)
        .any(|w| w[0] == "--source" && (w[1] == "dir" || w[1] == "session-state"));
    let scoped = args
        .iter()
        .any(|a| matches!(*a, "--project" | "--all-projects" | "--recorded"));
    let mut command = skill_evolve(d);
    command.arg("harvest").args(args);
    if !projectless && !scoped {
        command.arg("--all-projects");
    }
    command.output().unwrap()
}

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8(out.stdout.clone()).unwrap()
}

/// The value of a `name: value` summary line.
fn count(stdout: &str, name: &str) -> String {
    let prefix = format!("{name}: ");
    stdout
        .lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("no {name:?} line in {stdout}"))
        .to_owned()
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn claude_code_sessions_are_counted_judged_and_written_one_file_each() {
    let dir = workspace();
    let d = dir.path();
    let out = harvest(
        d,
        &["--source", "claude-code", "--from", "claude", "--out", "h"],
    );
    assert!(out.status.success(), "{out:?}");
    let text = stdout(&out);
    for (name, value) in [
        ("sessions", "3"),
        ("turns", "11"),
        ("tool calls", "6"),
        ("tool errors", "2"),
        ("interruptions", "1"),
        ("failed", "1"),
        ("passed", "2"),
        ("skipped records", "1"),
        ("skipped sessions", "1"),
        ("filtered out", "0"),
    ] {
        assert_eq!(count(&text, name), value, "{name} in {text}");
    }
    assert!(
        count(&text, "written").starts_with("3 trajectories"),
        "{text}"
    );
    // The malformed line skips its session, named with file and line.
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("44444444-4444-4444-8444-444444444444.jsonl:3: invalid JSON"),
        "{stderr}"
    );
    let failed = read_json(&d.join("h/claude-code-22222222-2222-4222-8222-222222222222.json"));
    assert_eq!(failed["hard"], 0.0);
    assert_eq!(
        failed["fail_reason"],
        "2 tool calls failed and were not retried successfully (Bash); the user interrupted 1 \
         turn; the user corrected the agent in words (1 time, \"stop\"): \"Stop, use the CI \
         pipeline instead.\""
    );
    assert_eq!(failed["correction"], "Stop, use the CI pipeline instead.");
    assert_eq!(failed["harvest"]["verdict"], "failed");
    assert_eq!(failed["harvest"]["reasons"][0]["signal"], "tool_errors");
    assert_eq!(failed["harvest"]["side_files"], 1);
    assert_eq!(failed["feedback"], "Stop, use the CI pipeline instead.");
    let steps = failed["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 3);
    assert_eq!(steps[0]["is_error"], true);
    assert_eq!(steps[2]["subagent"], "agent-perm01");
    // A successful session whose text is full of "error", "failed", "wrong" and 修复错误 passes.
    let words = read_json(&d.join("h/claude-code-33333333-3333-4333-8333-333333333333.json"));
    assert_eq!(words["hard"], 1.0);
    assert_eq!(words["fail_reason"], "");
    assert_eq!(
        words["harvest"]["reasons"][0]["signal"],
        "no_failure_signal"
    );
    let skill = read_json(&d.join("h/claude-code-11111111-1111-4111-8111-111111111111.json"));
    assert_eq!(
        skill["harvest"]["skills"],
        serde_json::json!(["release-notes"])
    );
    // One line per session says its verdict and why.
    assert!(
        text.contains(
            "failed  claude-code-22222222-2222-4222-8222-222222222222  2 tool calls failed and were"
        ),
        "{text}"
    );
}

#[test]
fn project_date_and_skill_filters_keep_only_matching_sessions() {
    let dir = workspace();
    let d = dir.path();
    for (args, sessions, filtered) in [
        (vec!["--project", "/work/demo-app"], "2", "1"),
        (vec!["--project", "/work/demo"], "0", "3"),
        (vec!["--since", "2026-01-01"], "2", "1"),
        (vec!["--skill", "release-notes"], "1", "2"),
    ] {
        let mut all = vec!["--source", "claude-code", "--from", "claude"];
        all.extend(args.iter().copied());
        let out = harvest(d, &all);
        assert!(out.status.success(), "{out:?}");
        let text = stdout(&out);
        assert_eq!(count(&text, "sessions"), sessions, "{args:?}: {text}");
        assert_eq!(count(&text, "filtered out"), filtered, "{args:?}: {text}");
    }
    // Without --out nothing is written.
    assert!(!d.join("h").exists());
}

#[test]
fn codex_sessions_read_calls_exit_codes_aborted_turns_and_stated_outcomes() {
    let dir = workspace();
    let d = dir.path();
    let out = harvest(d, &["--source", "codex", "--from", "codex", "--out", "h"]);
    assert!(out.status.success(), "{out:?}");
    let text = stdout(&out);
    for (name, value) in [
        ("sessions", "2"),
        ("turns", "5"),
        ("tool calls", "2"),
        ("tool errors", "1"),
        ("interruptions", "1"),
        ("failed", "1"),
        ("passed", "1"),
        ("skipped records", "1"),
        ("skipped sessions", "0"),
    ] {
        assert_eq!(count(&text, name), value, "{name} in {text}");
    }
    let failed = read_json(&d.join("h/codex-0199aaaa-0000-7000-8000-000000000001.json"));
    assert_eq!(
        failed["fail_reason"],
        "1 tool call failed and was not retried successfully (shell); the user interrupted 1 turn"
    );
    assert_eq!(failed["question"], "Run the test suite and fix what fails.");
    assert_eq!(
        failed["harvest"]["skills"],
        serde_json::json!(["test-runner"])
    );
    assert_eq!(
        failed["harvest"]["projects"],
        serde_json::json!(["/work/demo-app"])
    );
    let passed = read_json(&d.join("h/codex-0199aaaa-0000-7000-8000-000000000002.json"));
    assert_eq!(passed["hard"], 1.0);
    assert_eq!(
        passed["harvest"]["reasons"][0]["signal"],
        "explicit_outcome"
    );
    let out = harvest(
        d,
        &[
            "--source",
            "codex",
            "--from",
            "codex",
            "--skill",
            "test-runner",
        ],
    );
    assert_eq!(count(&stdout(&out), "sessions"), "1");
}

#[test]
fn no_secret_reaches_any_written_file_or_the_terminal() {
    let dir = workspace();
    let d = dir.path();
    let mut printed = String::new();
    for args in [
        vec![
            "--source",
            "claude-code",
            "--from",
            "claude",
            "--out",
            "out/claude",
        ],
        vec!["--source", "codex", "--from", "codex", "--out", "out/codex"],
        vec!["--source", "session-state", "--out", "out/state"],
        vec![
            "--source",
            "dir",
            "--from",
            "out/claude",
            "--out",
            "out/again",
        ],
    ] {
        let out = harvest(d, &args);
        assert!(out.status.success(), "{args:?}: {out:?}");
        printed.push_str(&stdout(&out));
        printed.push_str(&String::from_utf8_lossy(&out.stderr));
    }
    let files = snapshot(&d.join("out"));
    assert_eq!(
        files.len(),
        3 + 2 + 2 + 3,
        "{:?}",
        files.iter().map(|f| &f.0).collect::<Vec<_>>()
    );
    let mut markers = 0;
    for (name, bytes) in &files {
        let text = String::from_utf8_lossy(bytes);
        for (kind, secret) in SECRETS {
            assert!(!text.contains(secret), "the {kind} secret is in {name}");
        }
        markers += text.matches("[REDACTED:").count();
    }
    for (kind, secret) in SECRETS {
        assert!(!printed.contains(secret), "the {kind} secret was printed");
    }
    // Every planted secret was replaced: 14 in the first session (twice: the tool output
    // is copied again by the `dir` pass), one more in the failed session's prompt and its
    // copy, one in Codex, one in the SESSION-STATE.
    assert!(markers >= 2 * 15 + 2, "{markers} markers");
    assert!(printed.contains("redacted secrets: 15 ("), "{printed}");
}

#[test]
fn no_redact_is_explicit_and_said() {
    let dir = workspace();
    let d = dir.path();
    let out = harvest(
        d,
        &[
            "--source",
            "codex",
            "--from",
            "codex",
            "--out",
            "h",
            "--no-redact",
        ],
    );
    assert!(out.status.success(), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--no-redact: secrets"), "{stderr}");
    assert_eq!(count(&stdout(&out), "redaction"), "off (--no-redact)");
    let text = std::fs::read_to_string(d.join("h/codex-0199aaaa-0000-7000-8000-000000000001.json"))
        .unwrap();
    assert!(text.contains("sk_live_51HharvestFixture0123456789"));
}

#[test]
fn session_state_is_judged_by_its_outcome_fields() {
    let dir = workspace();
    let d = dir.path();
    let out = harvest(d, &["--source", "session-state", "--out", "s"]);
    assert!(out.status.success(), "{out:?}");
    let text = stdout(&out);
    assert_eq!(count(&text, "failed"), "1", "{text}");
    assert_eq!(count(&text, "passed"), "1", "{text}");
    let fixed = read_json(&d.join("s/session-state-fix-parser.json"));
    assert_eq!(fixed["hard"], 1.0);
    let chip = read_json(&d.join("s/session-state-chip-model.json"));
    assert_eq!(
        chip["fail_reason"],
        "the session states 结果: 失败，芯片型号错了 (failed)"
    );
    assert_eq!(chip["reference_text"], "STM32F407");
}

#[test]
fn harvest_rules_come_from_the_configuration() {
    let dir = workspace();
    let d = dir.path();
    std::fs::write(
        d.join("skill-evolve.toml"),
        "[harvest]\nsignals = [\"interrupted\"]\n",
    )
    .unwrap();
    let out = harvest(d, &["--source", "claude-code", "--from", "claude"]);
    assert!(out.status.success(), "{out:?}");
    let text = stdout(&out);
    assert!(
        text.contains("failed  claude-code-22222222-2222-4222-8222-222222222222  the user interrupted 1 turn\n"),
        "{text}"
    );
    std::fs::write(
        d.join("skill-evolve.toml"),
        "[harvest]\nmin_tool_errors = 3\n",
    )
    .unwrap();
    let text = stdout(&harvest(
        d,
        &["--source", "claude-code", "--from", "claude"],
    ));
    assert_eq!(
        count(&text, "failed"),
        "1",
        "interruption still counts: {text}"
    );
    assert!(!text.contains("tool calls failed"), "{text}");
}

#[test]
fn bad_options_and_configuration_stop_before_anything_is_written() {
    let dir = workspace();
    let d = dir.path();
    let before = snapshot(d);
    let cases: [(&[&str], &str); 5] = [
        (
            &[
                "--source",
                "claude-code",
                "--from",
                "claude",
                "--since",
                "2026-13-01",
                "--out",
                "h",
            ],
            "--since \"2026-13-01\": expected a day as YYYY-MM-DD",
        ),
        (
            &["--source", "dir", "--out", "h"],
            "--source dir needs --from DIR",
        ),
        (
            &[
                "--source",
                "codex",
                "--from",
                "codex",
                "--out",
                "SESSION-STATE.md",
            ],
            "SESSION-STATE.md: --out must be a folder",
        ),
        (
            &["--source", "session-state", "--skill", "x", "--out", "h"],
            "a session-state source has no project, date or skill",
        ),
        (
            &["--source", "codex", "--from", "nowhere", "--out", "h"],
            "nowhere: no Codex sessions here",
        ),
    ];
    for (args, needle) in cases {
        assert_one_line_error(&harvest(d, args), needle);
    }
    std::fs::write(
        d.join("bad.toml"),
        "[harvest]\nmin_tool_errors = \"many\"\n",
    )
    .unwrap();
    let out = harvest(
        d,
        &[
            "--source", "codex", "--from", "codex", "--config", "bad.toml", "--out", "h",
        ],
    );
    assert_one_line_error(&out, "bad.toml:2: [harvest]: invalid type");
    std::fs::remove_file(d.join("bad.toml")).unwrap();
    assert_eq!(snapshot(d), before);
}

#[test]
fn a_harvested_folder_feeds_evolve_and_its_prompts_hold_no_secret() {
    let dir = crate::evolve::workspace(crate::evolve::SKILL);
    let d = dir.path();
    copy_tree(&fixtures().join("claude"), &d.join("claude"));
    let out = harvest(
        d,
        &[
            "--source",
            "claude-code",
            "--from",
            "claude",
            "--out",
            "harvested",
        ],
    );
    assert!(out.status.success(), "{out:?}");
    let fake = crate::fake_llm::start();
    let out = skill_evolve(d)
        .args(["evolve", "skill/SKILL.md", "--trajectories", "harvested"])
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
    // One reflection over the one failed session, one meta-reflection.
    assert_eq!(fake.calls.load(Ordering::SeqCst), 2, "{out:?}");
    let cassette = std::fs::read_to_string(d.join("run.cassette")).unwrap();
    assert!(
        cassette.contains("2 tool calls failed and were not retried successfully (Bash)"),
        "the failure reached the prompt"
    );
    assert!(
        cassette.contains("[REDACTED:anthropic_key]"),
        "the redacted question reached it"
    );
    for (kind, secret) in SECRETS {
        assert!(
            !cassette.contains(secret),
            "the {kind} secret reached a prompt"
        );
    }
}

#[test]
fn a_trajectory_folder_keeps_good_files_and_skips_bad_ones_by_name() {
    let dir = workspace();
    let d = dir.path();
    std::fs::create_dir_all(d.join("own")).unwrap();
    std::fs::write(
        d.join("own/a.json"),
        r#"[{"id": "t1", "task_description": "d", "question": "q", "fail_reason": "wrong total",
            "predicted_answer": "p", "reference_text": "r", "notes": "DB_PASSWORD=hunter2hunter2xyz"},
           {"id": "t2"}]"#,
    )
    .unwrap();
    std::fs::write(d.join("own/b.json"), "{ not json").unwrap();
    let out = harvest(d, &["--source", "dir", "--from", "own", "--out", "h"]);
    assert!(out.status.success(), "{out:?}");
    let text = stdout(&out);
    assert_eq!(count(&text, "sessions"), "1", "{text}");
    assert_eq!(count(&text, "skipped sessions"), "2", "{text}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("a.json: item 2: missing required fields"),
        "{stderr}"
    );
    assert!(stderr.contains("b.json: invalid JSON"), "{stderr}");
    let t1 = read_json(&d.join("h/t1.json"));
    assert_eq!(t1["fail_reason"], "wrong total");
    assert_eq!(t1["notes"], "DB_PASSWORD=[REDACTED:env_secret]");
    assert_eq!(t1["harvest"]["reasons"][0]["value"], "wrong total");
}

#[test]
fn gemini_cli_chats_are_read_filtered_by_project_and_redacted() {
    let dir = workspace();
    let d = dir.path();
    let out = harvest(d, &["--source", "gemini", "--from", "gemini", "--out", "h"]);
    assert!(out.status.success(), "{out:?}");
    let text = stdout(&out);
    for (name, value) in [
        ("sessions", "2"),
        ("turns", "5"),
        ("tool calls", "2"),
        ("tool errors", "1"),
        ("failed", "1"),
        ("passed", "1"),
    ] {
        assert_eq!(count(&text, name), value, "{name} in {text}");
    }
    let written: Vec<PathBuf> = std::fs::read_dir(d.join("h"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(written.len(), 2, "{written:?}");
    for path in &written {
        let body = std::fs::read_to_string(path).unwrap();
        assert!(!body.contains("ghp_a1B2c3D4e5F6"), "{body}");
    }
    let failed = read_json(&d.join("h/gemini-5e0c1a2b-0000-4000-8000-000000000001.json"));
    assert_eq!(failed["steps"][1]["tool_name"], "run_shell_command");
    assert_eq!(failed["harvest"]["skills"], serde_json::json!(["build"]));

    // Gemini CLI names a project by the SHA-256 of its path: the filter matches it.
    let out = harvest(
        d,
        &[
            "--source",
            "gemini",
            "--from",
            "gemini",
            "--project",
            "/work/demo-app",
        ],
    );
    assert!(out.status.success(), "{out:?}");
    let text = stdout(&out);
    assert_eq!(count(&text, "sessions"), "1", "{text}");
    assert_eq!(count(&text, "filtered out"), "1", "{text}");
}

/// An OpenCode store with the tables and columns OpenCode writes: two sessions of
/// `/work/demo-app` (one failed, one a subagent's) and one of `/work/other-lib`.
fn opencode_store(path: &Path) {
    let db = rusqlite::Connection::open(path).unwrap();
    db.execute_batch(
        "CREATE TABLE session (id TEXT PRIMARY KEY, project_id TEXT NOT NULL, parent_id TEXT,
             slug TEXT NOT NULL, directory TEXT NOT NULL, title TEXT NOT NULL,
             version TEXT NOT NULL, time_created INTEGER, time_updated INTEGER);
         CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT NOT NULL,
             time_created INTEGER, time_updated INTEGER, data TEXT NOT NULL);
         CREATE TABLE part (id TEXT PRIMARY KEY, message_id TEXT NOT NULL,
             session_id TEXT NOT NULL, time_created INTEGER, time_updated INTEGER,
             data TEXT NOT NULL);",
    )
    .unwrap();
    let session = |id: &str, parent: Option<&str>, dir: &str, t: i64| {
        db.execute(
            "INSERT INTO session VALUES (?1, 'p', ?2, 's', ?3, 't', '1.2.0', ?4, ?5)",
            rusqlite::params![id, parent, dir, t, t + 60_000],
        )
        .unwrap();
    };
    session("ses_a", None, "/work/demo-app", 1_762_074_000_000);
    session(
        "ses_child",
        Some("ses_a"),
        "/work/demo-app",
        1_762_074_010_000,
    );
    session("ses_b", None, "/work/other-lib", 1_762_160_400_000);
    let message = |id: &str, session: &str, t: i64, data: &str, parts: &[&str]| {
        db.execute(
            "INSERT INTO message VALUES (?1, ?2, ?3, ?3, ?4)",
            rusqlite::params![id, session, t, data],
        )
        .unwrap();
        for (n, part) in parts.iter().enumerate() {
            db.execute(
                "INSERT INTO part VALUES (?1, ?2, ?3, ?4, ?4, ?5)",
                rusqlite::params![format!("{id}_p{n}"), id, session, t, part],
            )
            .unwrap();
        }
    };
    message(
        "msg_a1",
        "ses_a",
        1_762_074_001_000,
        r#"{"role":"user"}"#,
        &[
            r#"{"type":"text","text":"Ship the release; token ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"}"#,
        ],
    );
    message(
        "msg_a2",
        "ses_a",
        1_762_074_002_000,
        r#"{"role":"assistant"}"#,
        &[
            r#"{"type":"text","text":"Reading the release skill."}"#,
            r#"{"type":"tool","tool":"read","callID":"c1","state":{"status":"completed","input":{"filePath":"/work/demo-app/skills/release/SKILL.md"},"output":"Tag, then publish."}}"#,
            r#"{"type":"tool","tool":"bash","callID":"c2","state":{"status":"error","input":{"command":"npm publish"},"error":"403 Forbidden"}}"#,
        ],
    );
    message(
        "msg_b1",
        "ses_b",
        1_762_160_401_000,
        r#"{"role":"user"}"#,
        &[r#"{"type":"text","text":"What does the lib export?"}"#],
    );
    message(
        "msg_b2",
        "ses_b",
        1_762_160_402_000,
        r#"{"role":"assistant"}"#,
        &[r#"{"type":"text","text":"parse and format."}"#],
    );
}

#[test]
fn opencode_sessions_are_read_from_its_store() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    opencode_store(&d.join("opencode.db"));
    let out = harvest(
        d,
        &[
            "--source",
            "opencode",
            "--from",
            "opencode.db",
            "--out",
            "h",
        ],
    );
    assert!(out.status.success(), "{out:?}");
    let text = stdout(&out);
    for (name, value) in [
        ("sessions", "2"),
        ("turns", "4"),
        ("tool calls", "2"),
        ("tool errors", "1"),
        ("failed", "1"),
        ("passed", "1"),
    ] {
        assert_eq!(count(&text, name), value, "{name} in {text}");
    }
    let failed = read_json(&d.join("h/opencode-ses_a.json"));
    assert_eq!(failed["steps"][1]["tool_name"], "bash");
    assert_eq!(failed["harvest"]["skills"], serde_json::json!(["release"]));
    assert!(!failed.to_string().contains("ghp_a1B2c3D4e5F6"), "{failed}");
    let out = harvest(
        d,
        &[
            "--source",
            "opencode",
            "--from",
            "opencode.db",
            "--project",
            "/work/other-lib",
        ],
    );
    assert_eq!(count(&stdout(&out), "sessions"), "1");
    // A file that is not a store is refused on one line, and nothing is written.
    std::fs::write(d.join("not.db"), "plain text").unwrap();
    let out = harvest(d, &["--source", "opencode", "--from", "not.db"]);
    assert_one_line_error(&out, "not.db");
}

#[test]
fn a_trajectory_folder_is_filtered_by_the_skill_its_trajectories_name() {
    let dir = workspace();
    let d = dir.path();
    std::fs::create_dir_all(d.join("own")).unwrap();
    let trajectory = |id: &str, extra: &str| {
        format!(
            r#"{{"id": "{id}", "task_description": "d", "question": "q", "fail_reason": "f",
                "predicted_answer": "p", "reference_text": "r"{extra}}}"#
        )
    };
    for (id, extra) in [
        ("session", r#", "harvest": {"skills": ["elixir:hex-docs"]}"#),
        ("rollout", r#", "skill_id": "hex-docs""#),
        ("typed", r#", "task_type": "hex-docs""#),
        ("other", r#", "skill_id": "pdf-tools""#),
        ("unnamed", ""),
    ] {
        std::fs::write(d.join(format!("own/{id}.json")), trajectory(id, extra)).unwrap();
    }
    let out = harvest(
        d,
        &[
            "--source", "dir", "--from", "own", "--skill", "hex-docs", "--out", "h",
        ],
    );
    assert!(out.status.success(), "{out:?}");
    let text = stdout(&out);
    assert_eq!(count(&text, "sessions"), "3", "{text}");
    assert_eq!(count(&text, "filtered out"), "2", "{text}");
    for kept in ["session", "rollout", "typed"] {
        assert!(d.join(format!("h/{kept}.json")).is_file(), "{kept}");
    }
    assert!(!d.join("h/other.json").exists());
    // --project and --since still have nothing to filter on in a folder.
    assert_one_line_error(
        &harvest(
            d,
            &["--source", "dir", "--from", "own", "--since", "2026-01-01"],
        ),
        "a dir source has no project or date",
    );
}
/// Turns every `state.sql` under `dir` into the `state.vscdb` beside it: Cursor's SQLite
/// stores, kept in the fixtures as the SQL that builds them.
fn build_cursor_stores(dir: &Path) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            build_cursor_stores(&path);
        } else if path.file_name().is_some_and(|n| n == "state.sql") {
            let db = rusqlite::Connection::open(path.with_extension("vscdb")).unwrap();
            db.execute_batch(&std::fs::read_to_string(&path).unwrap())
                .unwrap();
        }
    }
}

/// Every file harvest wrote to `dir`, as text.
fn written_texts(dir: &Path) -> String {
    snapshot(dir)
        .into_iter()
        .map(|(_, bytes)| String::from_utf8(bytes).unwrap())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn cursor_chats_are_read_from_its_stores_with_their_projects() {
    let dir = workspace();
    let d = dir.path();
    build_cursor_stores(&d.join("cursor"));
    let out = harvest(
        d,
        &["--source", "cursor", "--from", "cursor/User", "--out", "h"],
    );
    assert!(out.status.success(), "{out:?}");
    let text = stdout(&out);
    // The empty composer (a chat view opened and closed) is no session.
    for (name, value) in [
        ("sessions", "2"),
        ("turns", "6"),
        ("tool calls", "4"),
        ("tool errors", "1"),
        ("interruptions", "1"),
        ("failed", "1"),
        ("passed", "1"),
    ] {
        assert_eq!(count(&text, name), value, "{name} in {text}");
    }
    let failed = read_json(&d.join("h/cursor-aaaaaaaa-1111-4111-8111-000000000001.json"));
    assert_eq!(failed["steps"][1]["tool_name"], "run_terminal_cmd");
    assert_eq!(failed["steps"][1]["tool_input"]["command"], "npm publish");
    assert_eq!(failed["steps"][2]["rejected"], true);
    assert_eq!(failed["harvest"]["skills"], serde_json::json!(["release"]));
    assert_eq!(
        failed["harvest"]["projects"],
        serde_json::json!(["/work/demo-app"])
    );
    let passed = read_json(&d.join("h/cursor-bbbbbbbb-2222-4222-8222-000000000002.json"));
    assert_eq!(passed["predicted_answer"], "`parse` and `format`.");
    assert_eq!(
        passed["harvest"]["projects"],
        serde_json::json!(["/work/other-lib"])
    );
    let all = written_texts(&d.join("h"));
    assert!(!all.contains("ghp_a1B2c3D4e5F6"), "{all}");
    assert!(all.contains("[REDACTED:"), "{all}");

    for (filter, kept) in [
        (["--project", "/work/other-lib"], "1"),
        (["--since", "2026-03-11"], "1"),
        (["--skill", "release"], "1"),
    ] {
        let mut args = vec!["--source", "cursor", "--from", "cursor/User"];
        args.extend(filter);
        let out = harvest(d, &args);
        assert!(out.status.success(), "{args:?}: {out:?}");
        assert_eq!(count(&stdout(&out), "sessions"), kept, "{args:?}");
    }
    // The global store alone: the workspaces beside it still name the projects.
    let out = harvest(
        d,
        &[
            "--source",
            "cursor",
            "--from",
            "cursor/User/globalStorage/state.vscdb",
            "--project",
            "/work/demo-app",
        ],
    );
    assert!(out.status.success(), "{out:?}");
    assert_eq!(count(&stdout(&out), "sessions"), "1");
    // A file that is not a store is refused on one line.
    std::fs::write(d.join("not.vscdb"), "plain text").unwrap();
    let out = harvest(d, &["--source", "cursor", "--from", "not.vscdb"]);
    assert_one_line_error(&out, "not.vscdb");
}

#[test]
fn cursor_chat_panel_chats_from_before_composers_are_read_with_their_workspace() {
    let dir = workspace();
    let d = dir.path();
    build_cursor_stores(&d.join("cursor-panel"));
    let out = harvest(
        d,
        &[
            "--source",
            "cursor",
            "--from",
            "cursor-panel/User",
            "--out",
            "h",
        ],
    );
    assert!(out.status.success(), "{out:?}");
    let text = stdout(&out);
    // A global store without composers, two chats of one workspace's panel (an empty tab is no
    // session) and a panel value that is not JSON, skipped with a note.
    for (name, value) in [
        ("sessions", "2"),
        ("turns", "5"),
        ("tool calls", "0"),
        ("failed", "1"),
        ("passed", "1"),
        ("skipped sessions", "1"),
    ] {
        assert_eq!(count(&text, name), value, "{name} in {text}");
    }
    let said = format!("{text}{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        said.contains("workbench.panel.aichat.view.aichat.chatdata: not Cursor's chat panel"),
        "{said}"
    );
    let failed = read_json(&d.join("h/cursor-9a1c2e3f-0000-4000-8000-00000000000a.json"));
    assert_eq!(failed["question"], "Publish the package to the registry");
    assert_eq!(failed["harvest"]["verdict"], "failed");
    assert_eq!(
        failed["harvest"]["projects"],
        serde_json::json!(["/work/legacy-app"])
    );
    assert_eq!(
        failed["harvest"]["first_timestamp"],
        "2024-03-01T08:00:00.000Z"
    );
    let passed = read_json(&d.join("h/cursor-9a1c2e3f-0000-4000-8000-00000000000b.json"));
    assert_eq!(
        passed["predicted_answer"],
        "A `Result` with the parsed value."
    );
    let all = written_texts(&d.join("h"));
    assert!(!all.contains("ghp_a1B2c3D4e5F6"), "{all}");
    assert!(all.contains("[REDACTED:"), "{all}");
    let out = harvest(
        d,
        &[
            "--source",
            "cursor",
            "--from",
            "cursor-panel/User",
            "--project",
            "/work/legacy-app",
        ],
    );
    assert!(out.status.success(), "{out:?}");
    assert_eq!(count(&stdout(&out), "sessions"), "2");
}

#[test]
fn copilot_cli_sessions_of_earlier_versions_are_read_and_redacted() {
    let dir = workspace();
    let d = dir.path();
    let out = harvest(
        d,
        &[
            "--source",
            "copilot",
            "--from",
            "copilot-history",
            "--out",
            "h",
        ],
    );
    assert!(out.status.success(), "{out:?}");
    let text = stdout(&out);
    for (name, value) in [
        ("sessions", "1"),
        ("turns", "3"),
        ("tool calls", "3"),
        ("tool errors", "1"),
        ("failed", "1"),
        ("skipped sessions", "1"),
    ] {
        assert_eq!(count(&text, name), value, "{name} in {text}");
    }
    let said = format!("{text}{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        said.contains("session_broken_1759219300000.json:1: not a copilot CLI session"),
        "{said}"
    );
    let cli = read_json(&d.join("h/copilot-66666666-ffff-4fff-8fff-000000000006.json"));
    assert_eq!(cli["question"], "Run the test suite and fix what fails");
    assert_eq!(cli["steps"][1]["tool_input"]["command"], "cargo test");
    assert_eq!(cli["steps"][1]["is_error"], true);
    assert_eq!(cli["steps"][2]["rejected"], true);
    assert_eq!(cli["harvest"]["skills"], serde_json::json!(["test-runner"]));
    assert_eq!(cli["harvest"]["rejected_tool_calls"], 1);
    assert_eq!(cli["harvest"]["last_timestamp"], "2025-09-30T08:02:00.000Z");
    assert_eq!(cli["harvest"]["projects"], serde_json::json!([]));
    let all = written_texts(&d.join("h"));
    assert!(!all.contains("sk-ant-api03-Zy8Xw7"), "{all}");
    assert!(all.contains("[REDACTED:"), "{all}");

    // Where the CLI kept them: `$COPILOT_HOME/history-session-state`, read by default.
    let home = d.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let out = skill_evolve(d)
        .env("HOME", &home)
        .env_remove("XDG_CONFIG_HOME")
        .env("COPILOT_HOME", d.join("copilot-history"))
        .args(["harvest", "--source", "copilot", "--all-projects"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let text = stdout(&out);
    assert_eq!(count(&text, "sessions"), "1", "{text}");
    assert!(
        count(&text, "source").contains("history-session-state"),
        "{text}"
    );
}

#[test]
fn copilot_vscode_chats_and_cli_sessions_are_read_filtered_and_redacted() {
    let dir = workspace();
    let d = dir.path();
    let out = harvest(
        d,
        &["--source", "copilot", "--from", "copilot", "--out", "h"],
    );
    assert!(out.status.success(), "{out:?}");
    let text = stdout(&out);
    // Two VS Code sessions (a change log, a flat file; an empty one is no session) and two of
    // the CLI (the current folder layout, and the single file of earlier versions).
    for (name, value) in [
        ("sessions", "4"),
        ("turns", "10"),
        ("tool calls", "6"),
        ("tool errors", "2"),
        ("interruptions", "1"),
        ("failed", "2"),
        ("passed", "2"),
    ] {
        assert_eq!(count(&text, name), value, "{name} in {text}");
    }
    let chat = read_json(&d.join("h/copilot-11111111-aaaa-4aaa-8aaa-000000000001.json"));
    assert_eq!(chat["steps"][1]["tool_name"], "run_in_terminal");
    assert_eq!(chat["steps"][1]["tool_input"]["command"], "npm publish");
    assert_eq!(chat["steps"][2]["rejected"], true);
    assert_eq!(chat["harvest"]["skills"], serde_json::json!(["release"]));
    assert_eq!(
        chat["harvest"]["projects"],
        serde_json::json!(["/work/demo-app"])
    );
    assert_eq!(
        chat["predicted_answer"],
        "Reading the release skill first.\n\nPublishing failed: the registry refused the token."
    );
    let cli = read_json(&d.join("h/copilot-44444444-dddd-4ddd-8ddd-000000000004.json"));
    assert_eq!(cli["steps"][0]["tool_input"]["command"], "cargo test");
    assert_eq!(cli["harvest"]["skills"], serde_json::json!(["test-runner"]));
    assert_eq!(cli["harvest"]["rejected_tool_calls"], 1);
    let passed = read_json(&d.join("h/copilot-55555555-eeee-4eee-8eee-000000000005.json"));
    assert_eq!(passed["harvest"]["verdict"], "passed");
    assert_eq!(
        passed["harvest"]["projects"],
        serde_json::json!(["/work/other-lib"])
    );
    let all = written_texts(&d.join("h"));
    for secret in [
        "ghp_a1B2c3D4e5F6",
        "sk-ant-api03-Zy8Xw7",
        // The flat file a log replaced is not read.
        "An older draft",
    ] {
        assert!(!all.contains(secret), "{secret} in {all}");
    }

    for (filter, kept) in [
        (["--project", "/work/other-lib"], "2"),
        (["--since", "2026-03-11"], "2"),
        (["--skill", "test-runner"], "1"),
    ] {
        let mut args = vec!["--source", "copilot", "--from", "copilot"];
        args.extend(filter);
        let out = harvest(d, &args);
        assert!(out.status.success(), "{args:?}: {out:?}");
        assert_eq!(count(&stdout(&out), "sessions"), kept, "{args:?}");
    }
    // A log line that is not a change skips its session with a note naming the line.
    let log = d.join(
        "copilot/vscode/User/workspaceStorage/6b2a4f0c8d1e3a5b7c9d0e1f2a3b4c5d/chatSessions/\
         11111111-aaaa-4aaa-8aaa-000000000001.jsonl",
    );
    let mut body = std::fs::read_to_string(&log).unwrap();
    body.push_str("{\"kind\":1,\"k\":[\"requests\",9,\"x\"],\"v\":1}\n");
    std::fs::write(&log, body).unwrap();
    let out = harvest(d, &["--source", "copilot", "--from", "copilot"]);
    assert!(out.status.success(), "{out:?}");
    let text = stdout(&out);
    assert_eq!(count(&text, "skipped sessions"), "1", "{text}");
    let said = format!("{text}{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        said.contains("11111111-aaaa-4aaa-8aaa-000000000001.jsonl:11:"),
        "{said}"
    );
}

#[test]
fn cursor_and_copilot_are_read_from_their_default_places() {
    let dir = workspace();
    let d = dir.path();
    let home = d.join("home");
    let config = if cfg!(target_os = "macos") {
        home.join("Library/Application Support")
    } else {
        home.join(".config")
    };
    let run = |source: &str| {
        skill_evolve(d)
            .env("HOME", &home)
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("COPILOT_HOME")
            .args(["harvest", "--source", source, "--all-projects"])
            .output()
            .unwrap()
    };
    std::fs::create_dir_all(&home).unwrap();
    // Nothing there yet: one line naming every place looked at.
    let out = run("copilot");
    assert_one_line_error(&out, ".copilot/session-state");
    assert_one_line_error(&out, "Code/User/workspaceStorage");

    copy_tree(&d.join("copilot/vscode/User"), &config.join("Code/User"));
    copy_tree(&d.join("copilot/cli"), &home.join(".copilot"));
    copy_tree(&d.join("cursor/User"), &config.join("Cursor/User"));
    build_cursor_stores(&config.join("Cursor/User"));
    let out = run("copilot");
    assert!(out.status.success(), "{out:?}");
    let text = stdout(&out);
    assert_eq!(count(&text, "sessions"), "4", "{text}");
    let source = count(&text, "source");
    assert!(
        source.starts_with("copilot (") && source.contains(".copilot/session-state"),
        "{source}"
    );
    let out = run("cursor");
    assert!(out.status.success(), "{out:?}");
    assert_eq!(count(&stdout(&out), "sessions"), "2");
}

/// The line `harvest` prints for the fixture session `n` of `corrections/` (`5555…` for 5).
fn verdict_line(text: &str, n: char) -> &str {
    let id = format!(
        "claude-code-{}-{}-4{}-8{}-{}",
        n.to_string().repeat(8),
        n.to_string().repeat(4),
        n.to_string().repeat(3),
        n.to_string().repeat(3),
        n.to_string().repeat(12)
    );
    text.lines()
        .find(|l| l.contains(&id))
        .unwrap_or_else(|| panic!("no line for {id} in {text}"))
}

#[test]
fn a_user_correction_without_any_tool_error_fails_the_session_with_its_reason() {
    let dir = workspace();
    let d = dir.path();
    let out = harvest(
        d,
        &[
            "--source",
            "claude-code",
            "--from",
            "corrections",
            "--out",
            "h",
        ],
    );
    assert!(out.status.success(), "{out:?}");
    let text = stdout(&out);
    assert_eq!(count(&text, "tool errors"), "0", "{text}");
    assert_eq!(count(&text, "failed"), "2", "{text}");
    assert_eq!(
        verdict_line(&text, '5'),
        "failed  claude-code-55555555-5555-4555-8555-555555555555  the user corrected the \
         agent in words (1 time, \"no,\"): \"No, that's the wrong file: they go in \
         CHANGELOG.md, and sign the upload with [REDACTED:anthropic_key]\""
    );
    assert_eq!(
        verdict_line(&text, '6'),
        "failed  claude-code-66666666-6666-4666-8666-666666666666  the user repeated a request \
         after the agent's answer (1 time): \"I asked for a dark mode toggle on the settings \
         page\" (earlier: \"Add a dark mode toggle to the settings page\"); the user corrected \
         the agent in words (1 time, \"i asked for\"): \"I asked for a dark mode toggle on \
         the settings page\""
    );
    assert!(verdict_line(&text, '7').starts_with("passed"), "{text}");
    assert!(verdict_line(&text, '8').starts_with("passed"), "{text}");
    assert!(!text.contains("follow-up judge"), "off by default: {text}");
    let written = read_json(&d.join("h/claude-code-55555555-5555-4555-8555-555555555555.json"));
    assert_eq!(written["hard"], 0.0);
    let reason = &written["harvest"]["reasons"][0];
    assert_eq!(reason["signal"], "correction_phrase");
    assert_eq!(reason["phrase"], "no,");
    assert!(
        reason["evidence"]
            .as_str()
            .unwrap()
            .ends_with("[REDACTED:anthropic_key]"),
        "{reason}"
    );
    let written = read_json(&d.join("h/claude-code-66666666-6666-4666-8666-666666666666.json"));
    assert_eq!(
        written["harvest"]["reasons"][0]["signal"],
        "repeated_request"
    );
    for (_, secret) in SECRETS {
        assert!(!text.contains(secret), "{secret} printed");
        for (path, bytes) in snapshot(&d.join("h")) {
            assert!(
                !String::from_utf8_lossy(&bytes).contains(secret),
                "{secret} in {path}"
            );
        }
    }

    // Both signals are off-able in [harvest]: the sessions pass again.
    std::fs::write(
        d.join("skill-evolve.toml"),
        "[harvest]\nsignals = [\"tool_error\", \"interrupted\", \"rejected_tool_call\", \
         \"explicit_outcome\"]\n",
    )
    .unwrap();
    let text = stdout(&harvest(
        d,
        &["--source", "claude-code", "--from", "corrections"],
    ));
    assert_eq!(count(&text, "failed"), "0", "{text}");
    assert_eq!(count(&text, "passed"), "4", "{text}");
    // A stricter similarity does not count the rephrased request as a repeat; its words ("I
    // asked for") and the other session's correction still fail them.
    std::fs::write(
        d.join("skill-evolve.toml"),
        "[harvest]\nretry_similarity = 0.9\n",
    )
    .unwrap();
    let text = stdout(&harvest(
        d,
        &["--source", "claude-code", "--from", "corrections"],
    ));
    let six = verdict_line(&text, '6');
    assert!(six.starts_with("failed"), "{text}");
    assert!(!six.contains("repeated a request"), "{text}");
    assert!(verdict_line(&text, '5').starts_with("failed"), "{text}");
    std::fs::write(
        d.join("skill-evolve.toml"),
        "[harvest]\nretry_similarity = 1.5\n",
    )
    .unwrap();
    assert_one_line_error(
        &harvest(d, &["--source", "claude-code", "--from", "corrections"]),
        "skill-evolve.toml:2: [harvest]: retry_similarity must be between 0 and 1, not 1.5",
    );
}

#[test]
fn the_followup_judge_reads_what_no_word_list_catches_and_is_not_paid_twice() {
    let dir = workspace();
    let d = dir.path();
    // Outside a project, asked without a provider, or for a source without follow-ups: bad
    // input before anything is written.
    let before = snapshot(d);
    assert_one_line_error(
        &harvest(
            d,
            &[
                "--source",
                "claude-code",
                "--from",
                "corrections",
                "--judge-followups",
                "--out",
                "h",
            ],
        ),
        "no LLM is configured: add [llm.openai]",
    );
    assert_one_line_error(
        &harvest(
            d,
            &["--source", "dir", "--from", "claude", "--judge-followups"],
        ),
        "--judge-followups reads the user's follow-up messages of agent transcripts",
    );
    assert_eq!(snapshot(d), before);

    let fake = crate::fake_llm::start_followup_judge();
    std::fs::create_dir(d.join(".skill-evolve")).unwrap();
    std::fs::write(
        d.join("skill-evolve.toml"),
        format!(
            "[llm]\nprovider = \"openai\"\n\n[llm.openai]\nbase_url = \"{}\"\nmodel = \
             \"fake-model\"\n",
            fake.base_url
        ),
    )
    .unwrap();
    let args = [
        "--source",
        "claude-code",
        "--from",
        "corrections",
        "--out",
        "h",
        "--judge-followups",
    ];
    let out = harvest(d, &args);
    assert!(out.status.success(), "{out:?}");
    let text = stdout(&out);
    assert_eq!(fake.calls.load(Ordering::SeqCst), 4, "one call a session");
    assert_eq!(
        verdict_line(&text, '8'),
        "failed  claude-code-88888888-8888-4888-8888-888888888888  the follow-up judge read a \
         correction: \"can you get the test suite to pass on GitHub Actions\""
    );
    // An unreadable reply is `unclear`: the satisfied session still passes.
    assert!(verdict_line(&text, '7').starts_with("passed"), "{text}");
    let cache = d.join(".skill-evolve/followup-judge.jsonl");
    let judge_line = text
        .lines()
        .find(|l| l.starts_with("follow-up judge"))
        .unwrap_or_else(|| panic!("no follow-up judge line in {text}"));
    assert!(
        judge_line.starts_with(
            "follow-up judge (fake-model): 4 judged (4 called, 0 from the cache), 2 corrections, \
             1 verdict(s) set aside as unclear (their quote is not in the user's follow-ups); \
             cache "
        ) && judge_line.ends_with(".skill-evolve/followup-judge.jsonl"),
        "{judge_line}"
    );
    let written = read_json(&d.join("h/claude-code-66666666-6666-4666-8666-666666666666.json"));
    assert_eq!(written["harvest"]["followup_judge"]["verdict"], "unclear");
    assert!(
        !verdict_line(&text, '6').contains("broke the login page"),
        "{text}"
    );
    let written = read_json(&d.join("h/claude-code-77777777-7777-4777-8777-777777777777.json"));
    assert_eq!(written["harvest"]["followup_judge"]["verdict"], "unclear");
    let written = read_json(&d.join("h/claude-code-88888888-8888-4888-8888-888888888888.json"));
    assert_eq!(
        written["harvest"]["followup_judge"]["verdict"],
        "correction"
    );
    assert_eq!(written["harvest"]["reasons"][0]["signal"], "followup_judge");
    let cached = std::fs::read_to_string(&cache).unwrap();
    assert_eq!(cached.lines().count(), 4, "{cached}");
    for (_, secret) in SECRETS {
        assert!(!cached.contains(secret), "{secret} cached");
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&cache).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    // The nightly harvest again, the judge switched on by the configuration: no new call.
    let mut config = std::fs::read_to_string(d.join("skill-evolve.toml")).unwrap();
    config.push_str("\n[harvest]\nfollowup_judge = true\n");
    std::fs::write(d.join("skill-evolve.toml"), config).unwrap();
    let out = harvest(d, &args[..6]);
    assert!(out.status.success(), "{out:?}");
    let again = stdout(&out);
    assert_eq!(
        fake.calls.load(Ordering::SeqCst),
        4,
        "no second call: {again}"
    );
    assert!(
        again.contains("4 judged (0 called, 4 from the cache), 2 corrections"),
        "{again}"
    );
    assert_eq!(
        verdict_line(&again, '8'),
        verdict_line(&text, '8'),
        "the cached verdict decides as the first did"
    );
}
