//! `harvest` on stores built to hurt each reader: the session that nests too deep, holds too
//! much, or is corrupt is skipped with its reason, the others are read, and nothing aborts.

use std::path::Path;

use super::{HarvestNote, HarvestOptions, HarvestSource, HarvestSummary, harvest};

fn options(source: HarvestSource, from: &Path) -> HarvestOptions {
    HarvestOptions {
        source,
        from: Some(from.to_path_buf()),
        project: None,
        since: None,
        skill: None,
        out: None,
        tasks: None,
        min_sessions: 2,
        no_redact: false,
        config: None,
        recorded: false,
        judge_followups: false,
        variants: None,
    }
}

/// Harvests and returns the summary with the skip notes.
fn run(source: HarvestSource, from: &Path) -> (HarvestSummary, Vec<String>) {
    let mut skipped = Vec::new();
    let summary = harvest(&options(source, from), &mut |note| {
        if let HarvestNote::Skipped(text) = note {
            skipped.push(text);
        }
    })
    .unwrap();
    (summary, skipped)
}

fn deep(levels: usize) -> String {
    format!("{}0{}", "[".repeat(levels), "]".repeat(levels))
}

fn wide(n: usize) -> String {
    format!("[{}0]", "0,".repeat(n))
}

const CLAUDE_OK: &str = r#"{"type":"user","sessionId":"ok","message":{"role":"user","content":"Fix the build"}}
{"type":"assistant","sessionId":"ok","message":{"role":"assistant","content":[{"type":"text","text":"Done."}]}}
"#;

fn claude_line(content: &str) -> String {
    format!(r#"{{"type":"user","message":{{"role":"user","content":{content}}}}}"#)
}

#[test]
fn claude_code_and_codex_sessions_over_a_bound_are_skipped_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("projects/p");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("a-ok.jsonl"), CLAUDE_OK).unwrap();
    let deep_session = format!("{CLAUDE_OK}{}\n", claude_line(&deep(10_000)));
    std::fs::write(root.join("b-deep.jsonl"), deep_session).unwrap();
    std::fs::write(root.join("c-huge.jsonl"), claude_line(&wide(1_200_000))).unwrap();
    std::fs::write(
        root.join("d-corrupt.jsonl"),
        b"{\"type\":\"user\"\n\xff\xfe\n",
    )
    .unwrap();
    let (summary, skipped) = run(HarvestSource::ClaudeCode, &dir.path().join("projects"));
    assert_eq!(summary.counts.sessions, 1, "{skipped:?}");
    assert_eq!(summary.counts.skipped_sessions, 3, "{skipped:?}");
    assert!(
        skipped[0].contains("JSON nested deeper than 100 levels"),
        "{skipped:?}"
    );
    assert!(
        skipped[1].contains("more than 250000 JSON values"),
        "{skipped:?}"
    );
    assert!(skipped[2].contains("invalid JSON"), "{skipped:?}");

    let codex = dir.path().join("codex");
    std::fs::create_dir_all(&codex).unwrap();
    let arguments = serde_json::to_string(&deep(5_000)).unwrap();
    let line = format!(
        r#"{{"type":"response_item","payload":{{"type":"function_call","name":"shell","call_id":"c","arguments":{arguments}}}}}"#
    );
    std::fs::write(codex.join("rollout-deep.jsonl"), line).unwrap();
    let (summary, skipped) = run(HarvestSource::Codex, &codex);
    assert_eq!(summary.counts.skipped_sessions, 1);
    assert!(skipped[0].contains("nested deeper"), "{skipped:?}");
}

#[test]
fn a_copilot_log_nesting_past_the_bound_is_skipped_and_the_next_session_read() {
    let dir = tempfile::tempdir().unwrap();
    let sessions = dir.path().join("User/workspaceStorage/h/chatSessions");
    std::fs::create_dir_all(&sessions).unwrap();
    let mut log = String::from("{\"kind\":0,\"v\":{\"requests\":[],\"a\":{}}}\n");
    // Each change one level below the last: refused at the bound, read no further.
    for n in 2..=1_000usize {
        let path = vec!["\"a\""; n].join(",");
        log.push_str(&format!("{{\"kind\":1,\"k\":[{path}],\"v\":{{}}}}\n"));
    }
    std::fs::write(sessions.join("a-deep.jsonl"), log).unwrap();
    std::fs::write(
        sessions.join("b-flat.json"),
        format!(r#"{{"requests":{}}}"#, deep(10_000)),
    )
    .unwrap();
    std::fs::write(
        sessions.join("c-ok.json"),
        r#"{"sessionId":"ok","requests":[{"message":{"text":"Hello"},"response":[{"value":"Hi."}]}]}"#,
    )
    .unwrap();
    let (summary, skipped) = run(HarvestSource::Copilot, &dir.path().join("User"));
    assert_eq!(summary.counts.sessions, 1, "{skipped:?}");
    assert_eq!(summary.counts.skipped_sessions, 2, "{skipped:?}");
    assert!(
        skipped.iter().all(|s| s.contains("nested deeper")),
        "{skipped:?}"
    );
}

#[test]
fn a_gemini_chat_over_a_bound_is_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let chats = dir.path().join("tmp/h/chats");
    std::fs::create_dir_all(&chats).unwrap();
    std::fs::write(
        chats.join("session-1.json"),
        format!(r#"{{"sessionId":"g","messages":{}}}"#, wide(1_100_000)),
    )
    .unwrap();
    let (summary, skipped) = run(HarvestSource::Gemini, &dir.path().join("tmp"));
    assert_eq!(summary.counts.skipped_sessions, 1);
    assert!(skipped[0].contains("JSON values"), "{skipped:?}");
}

/// An OpenCode store whose `directory` may be NULL.
fn opencode_store(path: &Path) -> rusqlite::Connection {
    let db = rusqlite::Connection::open(path).unwrap();
    db.execute_batch(
        "CREATE TABLE session (id TEXT, parent_id TEXT, directory TEXT,
             time_created INTEGER, time_updated INTEGER);
         CREATE TABLE message (id TEXT, session_id TEXT, time_created INTEGER, data);
         CREATE TABLE part (id TEXT, message_id TEXT, data);",
    )
    .unwrap();
    db
}

fn opencode_session(db: &rusqlite::Connection, id: &str, dir: Option<&str>, t: i64, text: &str) {
    db.execute(
        "INSERT INTO session VALUES (?1, NULL, ?2, ?3, ?3)",
        rusqlite::params![id, dir, t],
    )
    .unwrap();
    let message = format!("{id}-m");
    db.execute(
        "INSERT INTO message VALUES (?1, ?2, ?3, '{\"role\":\"user\"}')",
        rusqlite::params![message, id, t],
    )
    .unwrap();
    db.execute(
        "INSERT INTO part VALUES (?1, ?2, ?3)",
        rusqlite::params![format!("{id}-p"), message, text],
    )
    .unwrap();
}

#[test]
fn an_opencode_row_with_a_null_directory_skips_its_session_not_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("opencode.db");
    let db = opencode_store(&path);
    let text = r#"{"type":"text","text":"Fix it"}"#;
    opencode_session(&db, "ses_a", Some("/w/a"), 1, text);
    opencode_session(&db, "ses_null", None, 2, text);
    opencode_session(&db, "ses_deep", Some("/w/c"), 3, &deep(10_000));
    opencode_session(&db, "ses_huge", Some("/w/d"), 4, &wide(1_100_000));
    opencode_session(&db, "ses_b", Some("/w/b"), 5, text);
    // A corrupt message (a number for its data) is skipped and counted; its session stands.
    db.execute("INSERT INTO message VALUES ('bad', 'ses_b', 6, 42)", [])
        .unwrap();
    drop(db);
    let (summary, skipped) = run(HarvestSource::OpenCode, &path);
    assert_eq!(summary.counts.sessions, 2, "{skipped:?}");
    assert_eq!(summary.counts.skipped_sessions, 3, "{skipped:?}");
    assert_eq!(summary.counts.skipped_records, 1, "{skipped:?}");
    assert!(skipped[0].contains("directory is NULL"), "{skipped:?}");
    assert!(skipped[1].contains("ses_deep") && skipped[1].contains("nested deeper"));
    assert!(skipped[2].contains("ses_huge") && skipped[2].contains("JSON values"));
}

/// Cursor's `User` folder with a global store holding `rows` of `cursorDiskKV`.
fn cursor_user(rows: &[(String, String)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let global = dir.path().join("globalStorage");
    std::fs::create_dir_all(&global).unwrap();
    let db = rusqlite::Connection::open(global.join("state.vscdb")).unwrap();
    db.execute_batch("CREATE TABLE cursorDiskKV (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)")
        .unwrap();
    for (key, value) in rows {
        db.execute(
            "INSERT INTO cursorDiskKV VALUES (?1, ?2)",
            rusqlite::params![key, value],
        )
        .unwrap();
    }
    dir
}

#[test]
fn cursor_reads_a_bubble_named_by_every_header_once_and_skips_a_deep_composer() {
    let headers = vec![r#"{"bubbleId":"b","type":1}"#; 4_000].join(",");
    let bubble = serde_json::json!({"type": 1, "text": "x ".repeat(50_000)}).to_string();
    let rows = vec![
        (
            "composerData:amp".to_owned(),
            format!(r#"{{"fullConversationHeadersOnly":[{headers}]}}"#),
        ),
        ("bubbleId:amp:b".to_owned(), bubble),
        (
            "composerData:deep".to_owned(),
            format!(r#"{{"conversation":{}}}"#, deep(10_000)),
        ),
        ("composerData:junk".to_owned(), "not json".to_owned()),
    ];
    let user = cursor_user(&rows);
    let (summary, skipped) = run(HarvestSource::Cursor, user.path());
    assert_eq!(summary.counts.sessions, 1, "{skipped:?}");
    assert_eq!(summary.counts.turns, 1);
    assert_eq!(summary.counts.skipped_records, 3_999);
    assert_eq!(summary.counts.skipped_sessions, 2, "{skipped:?}");
    assert!(skipped[0].contains("nested deeper"), "{skipped:?}");
    assert!(skipped[1].contains("not a Cursor composer"), "{skipped:?}");
}

const TRAJECTORY: &str = r#"{"id": "t1", "task_description": "d", "question": "q",
    "fail_reason": "wrong total", "predicted_answer": "p", "reference_text": "r"}"#;

#[test]
fn a_trajectory_folder_skips_a_file_over_a_bound_with_the_bound_and_reads_the_rest() {
    use evolution_harvest::limits::{Exceeded, Limits, SkipReason};

    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a-ok.json"), TRAJECTORY).unwrap();
    std::fs::write(dir.path().join("b-huge.json"), wide(5_000)).unwrap();
    std::fs::write(dir.path().join("c-deep.json"), deep(10_000)).unwrap();
    let limits = Limits {
        max_document_values: 1_000,
        ..super::dir::file_limits()
    };
    let mut read = Vec::new();
    let mut skipped = Vec::new();
    let mut filtered_out = 0usize;
    super::dir::trajectory_dir_within(
        dir.path(),
        limits,
        true,
        &mut evolution_harvest::redact::Redactor::default(),
        None,
        &mut filtered_out,
        &mut |item| {
            match item {
                Ok(h) => read.push(h.id),
                Err((path, reason)) => skipped.push((path, reason)),
            }
            Ok(())
        },
    )
    .unwrap();
    assert_eq!(read, ["t1"]);
    let reasons: Vec<_> = skipped
        .iter()
        .map(|(path, reason)| (path.file_name().unwrap().to_owned(), reason.clone()))
        .collect();
    assert_eq!(
        reasons,
        [
            (
                "b-huge.json".into(),
                SkipReason::Limit(Exceeded::DocumentValues { limit: 1_000 })
            ),
            (
                "c-deep.json".into(),
                SkipReason::Limit(Exceeded::Depth {
                    limit: limits.max_depth
                })
            ),
        ]
    );
}

#[test]
fn harvest_of_a_trajectory_folder_names_the_bound_a_file_crossed() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.json"), TRAJECTORY).unwrap();
    std::fs::write(dir.path().join("b.json"), TRAJECTORY.replace("t1", "t2")).unwrap();
    std::fs::write(dir.path().join("c.json"), wide(300_000)).unwrap();
    let (summary, skipped) = run(HarvestSource::Dir, dir.path());
    assert_eq!(summary.counts.sessions, 2, "{skipped:?}");
    assert_eq!(summary.counts.skipped_sessions, 1);
    assert!(
        skipped[0].contains("c.json: one document holds more than 250000 JSON values"),
        "{skipped:?}"
    );
}
