//! Every reader on sessions built to hurt it: nested deeper than any session, holding more
//! values or longer strings than one may, larger than a session may be, naming one bubble
//! thousands of times, or not JSON at all. Each is read or skipped with its reason; none
//! aborts.

use evolution_harvest::claude_code::ClaudeCodeReader;
use evolution_harvest::codex::CodexReader;
use evolution_harvest::copilot::{
    CopilotCliReader, VsCodeChatLog, read_copilot_history, read_vscode_chat, vscode_chat_from_json,
};
use evolution_harvest::cursor::{CursorComposerRows, read_cursor_chat_panel, read_cursor_composer};
use evolution_harvest::gemini::read_gemini_session;
use evolution_harvest::limits::{
    Budget, DEFAULT_MAX_DEPTH, DEFAULT_MAX_DOCUMENT_VALUES, Exceeded, Limits, SkipReason,
};
use evolution_harvest::opencode::{OpenCodeMessageRows, OpenCodeSessionRow, read_opencode_session};
use evolution_harvest::session::{LineError, TextPolicy};

/// Bounds small enough to cross with a few kilobytes.
fn small() -> Limits {
    Limits {
        max_depth: 20,
        max_document_values: 1_000,
        max_session_values: 3_000,
        max_string_bytes: 10_000,
        max_session_bytes: 100_000,
    }
}

fn policy(limits: Limits) -> TextPolicy {
    TextPolicy {
        budget: Budget::new(limits),
        ..TextPolicy::default()
    }
}

/// `[[[…0…]]]`, `levels` deep.
fn deep(levels: usize) -> String {
    format!("{}0{}", "[".repeat(levels), "]".repeat(levels))
}

/// `[0,0,…]` with `n` items.
fn wide_array(n: usize) -> String {
    let mut s = String::with_capacity(n * 2 + 2);
    s.push('[');
    for i in 0..n {
        if i > 0 {
            s.push(',');
        }
        s.push('0');
    }
    s.push(']');
    s
}

/// `{"k0":0,"k1":0,…}` with `n` keys.
fn wide_object(n: usize) -> String {
    let fields: Vec<String> = (0..n).map(|i| format!("\"k{i}\":0")).collect();
    format!("{{{}}}", fields.join(","))
}

/// A message line of Claude Code whose content is `content` (raw JSON).
fn claude_line(content: &str) -> String {
    format!(r#"{{"type":"user","message":{{"role":"user","content":{content}}}}}"#)
}

fn limit_of(result: Result<(), LineError>) -> Option<Exceeded> {
    result.expect_err("the line is refused").limit
}

#[test]
fn claude_code_skips_deep_wide_huge_long_and_oversized_sessions_with_their_reason() {
    let cases = [
        (claude_line(&deep(10_000)), Exceeded::Depth { limit: 20 }),
        (
            claude_line(&wide_array(5_000)),
            Exceeded::DocumentValues { limit: 1_000 },
        ),
        (
            claude_line(&wide_object(5_000)),
            Exceeded::DocumentValues { limit: 1_000 },
        ),
        (
            claude_line(&format!("\"{}\"", "x".repeat(20_000))),
            Exceeded::StringBytes { limit: 10_000 },
        ),
    ];
    for (line, why) in cases {
        let mut reader = ClaudeCodeReader::new("s", policy(small()));
        assert_eq!(limit_of(reader.push_line(1, &line)), Some(why));
    }
    // Within every bound per line, but not per session.
    let mut reader = ClaudeCodeReader::new("s", policy(small()));
    let line = claude_line(&wide_array(900));
    reader.push_line(1, &line).unwrap();
    reader.push_line(2, &line).unwrap();
    reader.push_line(3, &line).unwrap();
    assert_eq!(
        limit_of(reader.push_line(4, &line)),
        Some(Exceeded::SessionValues { limit: 3_000 })
    );
    let mut reader = ClaudeCodeReader::new("s", policy(small()));
    let text = claude_line(&format!("\"{}\"", "y".repeat(9_000)));
    let mut result = Ok(());
    for n in 1..=20 {
        result = reader.push_line(n, &text);
        if result.is_err() {
            break;
        }
    }
    assert_eq!(
        limit_of(result),
        Some(Exceeded::SessionBytes { limit: 100_000 })
    );
    // Corrupt: refused as not JSON, with no bound named.
    let mut reader = ClaudeCodeReader::new("s", TextPolicy::default());
    let e = reader
        .push_line(1, r#"{"type":"user","message":{"#)
        .unwrap_err();
    assert_eq!(e.limit, None);
    assert!(e.reason.starts_with("invalid JSON"), "{e}");
}

#[test]
fn the_default_bounds_hold_a_ten_thousand_level_line_and_a_huge_array() {
    let mut reader = ClaudeCodeReader::new("s", TextPolicy::default());
    assert_eq!(
        limit_of(reader.push_line(1, &claude_line(&deep(10_000)))),
        Some(Exceeded::Depth {
            limit: DEFAULT_MAX_DEPTH
        })
    );
    let mut reader = ClaudeCodeReader::new("s", TextPolicy::default());
    assert_eq!(
        limit_of(reader.push_line(1, &claude_line(&wide_array(1_500_000)))),
        Some(Exceeded::DocumentValues {
            limit: DEFAULT_MAX_DOCUMENT_VALUES
        })
    );
}

#[test]
fn codex_skips_a_session_whose_embedded_arguments_nest_too_deep() {
    let arguments = serde_json::to_string(&deep(500)).unwrap();
    let line = format!(
        r#"{{"type":"response_item","payload":{{"type":"function_call","name":"shell","call_id":"c1","arguments":{arguments}}}}}"#
    );
    let mut reader = CodexReader::new("s", policy(small()));
    assert_eq!(
        limit_of(reader.push_line(1, &line)),
        Some(Exceeded::Depth { limit: 20 })
    );
    let mut reader = CodexReader::new("s", policy(small()));
    let line = format!(r#"{{"type":"event_msg","payload":{}}}"#, wide_array(2_000));
    assert_eq!(
        limit_of(reader.push_line(1, &line)),
        Some(Exceeded::DocumentValues { limit: 1_000 })
    );
}

#[test]
fn a_vscode_log_nesting_ten_thousand_levels_is_refused_at_the_bound() {
    // Each change sets a field one level below the last: no line is deep, the session is.
    let mut log = VsCodeChatLog::new();
    log.push_line(1, r#"{"kind":0,"v":{"requests":[],"a":{}}}"#)
        .unwrap();
    let mut refused = None;
    for n in 2..=10_000usize {
        let path = vec!["\"a\""; n].join(",");
        let line = format!(r#"{{"kind":1,"k":[{path}],"v":{{}}}}"#);
        if let Err(e) = log.push_line(n, &line) {
            refused = Some(e);
            break;
        }
    }
    let e = refused.expect("the log is refused");
    assert_eq!(
        e.limit,
        Some(Exceeded::Depth {
            limit: DEFAULT_MAX_DEPTH
        })
    );
    assert!(e.line <= DEFAULT_MAX_DEPTH, "{e}");
    // Appending items nests them two levels below the list's parent.
    let mut log = VsCodeChatLog::with_budget(Budget::new(small()));
    log.push_line(1, r#"{"kind":0,"v":{"requests":[]}}"#)
        .unwrap();
    let line = format!(r#"{{"kind":2,"k":["requests"],"v":[{}]}}"#, deep(18));
    assert_eq!(
        limit_of(log.push_line(2, &line)),
        Some(Exceeded::Depth { limit: 20 })
    );
    let mut log = VsCodeChatLog::with_budget(Budget::new(small()));
    assert_eq!(
        limit_of(log.push_line(1, &format!(r#"{{"kind":0,"v":{}}}"#, wide_array(5_000)))),
        Some(Exceeded::DocumentValues { limit: 1_000 })
    );
}

#[test]
fn flat_vscode_cli_and_history_sessions_are_skipped_at_their_bounds() {
    let mut budget = Budget::new(small());
    let text = format!(r#"{{"requests":{}}}"#, deep(10_000));
    let e = vscode_chat_from_json(&mut budget, &text).unwrap_err();
    assert_eq!(e.limit, Some(Exceeded::Depth { limit: 20 }));
    // A request whose tool input, JSON in a string, holds too many values.
    let input = serde_json::to_string(&wide_array(2_000)).unwrap();
    let text = format!(
        r#"{{"requests":[{{"message":{{"text":"hi"}},"response":[{{"kind":"toolInvocationSerialized","toolId":"t","resultDetails":{{"input":{input}}}}}]}}]}}"#
    );
    let mut budget = Budget::new(small());
    let data = vscode_chat_from_json(&mut budget, &text).unwrap();
    let e = read_vscode_chat(&data, "f", None, policy(small())).unwrap_err();
    assert_eq!(e.limit, Some(Exceeded::DocumentValues { limit: 1_000 }));

    let mut cli = CopilotCliReader::new("s", policy(small()));
    let line = format!(r#"{{"type":"user.message","data":{}}}"#, wide_object(2_000));
    assert_eq!(
        limit_of(cli.push_line(1, &line)),
        Some(Exceeded::DocumentValues { limit: 1_000 })
    );

    let args = serde_json::to_string(&deep(100)).unwrap();
    let text = format!(
        r#"{{"chatMessages":[{{"role":"assistant","content":"","tool_calls":[{{"id":"c","function":{{"name":"bash","arguments":{args}}}}}]}}]}}"#
    );
    let e = read_copilot_history(&text, "f", policy(small())).unwrap_err();
    assert_eq!(e.limit, Some(Exceeded::Depth { limit: 20 }));
    let e = read_copilot_history(&deep(10_000), "f", TextPolicy::default()).unwrap_err();
    assert!(e.limit.is_some(), "{e}");
}

#[test]
fn gemini_chats_are_skipped_at_their_bounds_and_corrupt_ones_said_so() {
    let text = format!(r#"{{"messages":{}}}"#, deep(10_000));
    let e = read_gemini_session(&text, "f", TextPolicy::default()).unwrap_err();
    assert_eq!(
        e.limit,
        Some(Exceeded::Depth {
            limit: DEFAULT_MAX_DEPTH
        })
    );
    let text = format!(r#"{{"messages":{}}}"#, wide_array(5_000));
    let e = read_gemini_session(&text, "f", policy(small())).unwrap_err();
    assert_eq!(e.limit, Some(Exceeded::DocumentValues { limit: 1_000 }));
    let e = read_gemini_session(r#"{"messages":[{"#, "f", TextPolicy::default()).unwrap_err();
    assert_eq!(e.limit, None);
}

#[test]
fn opencode_sessions_are_skipped_at_their_bounds() {
    let row = OpenCodeSessionRow {
        id: "ses".to_owned(),
        directory: "/w".to_owned(),
        ..OpenCodeSessionRow::default()
    };
    let part = |text: &str| format!(r#"{{"type":"text","text":{text}}}"#);
    let message = |parts: Vec<String>| OpenCodeMessageRows {
        time_created: None,
        data: r#"{"role":"user"}"#.to_owned(),
        parts,
    };
    let deep_part = message(vec![part(&deep(10_000))]);
    let e = read_opencode_session(&row, &[deep_part], TextPolicy::default()).unwrap_err();
    assert_eq!(
        e,
        Exceeded::Depth {
            limit: DEFAULT_MAX_DEPTH
        }
    );
    let huge = message(vec![part(&wide_array(5_000))]);
    let e = read_opencode_session(&row, &[huge], policy(small())).unwrap_err();
    assert_eq!(e, Exceeded::DocumentValues { limit: 1_000 });
    let many: Vec<OpenCodeMessageRows> = (0..50)
        .map(|_| message(vec![part(&format!("\"{}\"", "z".repeat(5_000)))]))
        .collect();
    let e = read_opencode_session(&row, &many, policy(small())).unwrap_err();
    assert_eq!(e, Exceeded::SessionBytes { limit: 100_000 });
    // Corrupt rows are skipped and counted; the session stands.
    let corrupt = [message(vec!["{".to_owned(), part("\"ok\"")])];
    let (s, _) = read_opencode_session(&row, &corrupt, TextPolicy::default()).unwrap();
    assert_eq!(s.skipped_records, 1);
    assert_eq!(s.turns.len(), 1);
}

/// A composer of `headers` headers that all name bubble `b`, whose text is `text`.
fn amplified(headers: usize, text: &str) -> CursorComposerRows {
    let header = r#"{"bubbleId":"b","type":1}"#;
    let list = vec![header; headers].join(",");
    CursorComposerRows {
        composer_id: "c".to_owned(),
        composer_data: format!(r#"{{"fullConversationHeadersOnly":[{list}]}}"#),
        bubbles: vec![(
            "b".to_owned(),
            serde_json::json!({"type": 1, "text": text}).to_string(),
        )],
        project: None,
    }
}

#[test]
fn cursor_reads_a_bubble_named_by_four_thousand_headers_once() {
    let text = format!(
        "token ghp_a1B2c3D4e5F6g7H8i9J0kLmNoPqRsTuVwXyZ01 {}",
        "w ".repeat(50_000)
    );
    let (s, policy) =
        read_cursor_composer(&amplified(4_000, &text), TextPolicy::default()).unwrap();
    assert_eq!(s.turns.len(), 1);
    assert_eq!(s.skipped_records, 3_999);
    // Redacted once: one secret, counted once.
    assert_eq!(policy.redactions(), 1);
}

#[test]
fn cursor_composers_and_chat_panels_are_skipped_at_their_bounds() {
    let rows = CursorComposerRows {
        composer_id: "c".to_owned(),
        composer_data: format!(r#"{{"conversation":{}}}"#, deep(10_000)),
        ..CursorComposerRows::default()
    };
    let e = read_cursor_composer(&rows, TextPolicy::default()).unwrap_err();
    assert_eq!(
        e,
        SkipReason::Limit(Exceeded::Depth {
            limit: DEFAULT_MAX_DEPTH
        })
    );
    // Bubbles within bounds one by one, over the session's together.
    let mut rows = amplified(1, "x");
    rows.composer_data = format!(
        r#"{{"fullConversationHeadersOnly":[{}]}}"#,
        (0..40)
            .map(|i| format!(r#"{{"bubbleId":"b{i}"}}"#))
            .collect::<Vec<_>>()
            .join(",")
    );
    rows.bubbles = (0..40)
        .map(|i| {
            (
                format!("b{i}"),
                format!(r#"{{"type":1,"text":"{}"}}"#, "q".repeat(5_000)),
            )
        })
        .collect();
    let e = read_cursor_composer(&rows, policy(small())).unwrap_err();
    assert_eq!(
        e,
        SkipReason::Limit(Exceeded::SessionBytes { limit: 100_000 })
    );
    let panel = format!(r#"{{"tabs":{}}}"#, wide_array(5_000));
    let e = read_cursor_chat_panel(&panel, None, || policy(small())).unwrap_err();
    assert_eq!(
        e,
        SkipReason::Limit(Exceeded::DocumentValues { limit: 1_000 })
    );
    let e = read_cursor_chat_panel("{\"tabs\":[", None, TextPolicy::default).unwrap_err();
    assert!(matches!(e, SkipReason::Malformed(_)), "{e}");
}
