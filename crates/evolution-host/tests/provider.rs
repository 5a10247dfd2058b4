//! The host as the optimizer's model, through the real Claude Code CLI: its model calls go to
//! a scripted Messages API server on 127.0.0.1, which answers with the structured-output tool
//! Claude Code offers for `--json-schema`, or (as a model that ignores the schema) with text.
//!
//! The CLI is the pinned npm package `cargo xtask install-prereqs` installs into the tools
//! cache (`host-clis/node_modules/.bin/`, or under `$EVOLUTION_HOST_CLIS_DIR`). Without it a
//! test says so and passes, unless `EVOLUTION_REQUIRE_HOST_CLIS=1`, which makes it fail.

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use evolution_host::{Host, HostLlm, HostSettings};
use evolution_types::{ChatMessage, ChatOptions, LlmErrorKind, LlmProvider};
use serde_json::{Value, json};

/// The installed CLI `program`, or `None` (after saying why) when it is missing.
#[expect(clippy::print_stderr, reason = "a skipped test says why")]
fn host_cli(program: &str) -> Option<PathBuf> {
    let var = |key: &str| std::env::var_os(key).filter(|v| !v.is_empty());
    let dir = var("EVOLUTION_HOST_CLIS_DIR")
        .map(PathBuf::from)
        .or_else(|| {
            let tools = var("EVOLUTION_TOOLS_DIR").map(PathBuf::from).or_else(|| {
                let cache = var("XDG_CACHE_HOME")
                    .map(PathBuf::from)
                    .or_else(|| var("HOME").map(|home| PathBuf::from(home).join(".cache")))?;
                Some(cache.join("evolution-kernel").join("tools"))
            })?;
            Some(tools.join("host-clis"))
        });
    let path = dir.map(|dir| dir.join("node_modules/.bin").join(program));
    if let Some(path) = path.filter(|p| p.exists()) {
        return Some(path);
    }
    assert!(
        std::env::var_os("EVOLUTION_REQUIRE_HOST_CLIS").is_none_or(|v| v != "1"),
        "the {program} CLI is not installed and EVOLUTION_REQUIRE_HOST_CLIS=1 requires it"
    );
    eprintln!("skipped: the {program} CLI is not installed (cargo xtask install-prereqs)");
    None
}

/// What the scripted model answers: the structured output it gives when the schema tool is
/// offered, or `None` to answer every request with this text instead.
#[derive(Clone, Copy)]
enum Answer {
    Structured(&'static str),
    Text(&'static str),
}

/// A scripted Messages API server; returns its origin and every request body it got.
fn start(answer: Answer) -> (String, Arc<Mutex<Vec<Value>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let log = Arc::clone(&log);
            std::thread::spawn(move || {
                let _ = serve(stream, &log, answer);
            });
        }
    });
    (origin, seen)
}

fn serve(stream: TcpStream, log: &Mutex<Vec<Value>>, answer: Answer) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 || line.trim_end().is_empty() {
            break;
        }
        if let Some((name, value)) = line.trim_end().split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0u8; length];
    reader.read_exact(&mut body)?;
    let request: Value = serde_json::from_slice(&body).unwrap_or_default();
    log.lock().unwrap().push(request.clone());
    let payload = if request_line.starts_with("POST /v1/messages") {
        messages_reply(&request, answer)
    } else {
        String::new()
    };
    let status = if payload.is_empty() { 404 } else { 200 };
    let mut stream = stream;
    write!(
        stream,
        "HTTP/1.1 {status} X\r\nContent-Type: text/event-stream\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{payload}",
        payload.len()
    )?;
    stream.flush()
}

/// One streamed reply: the schema tool's call when it is offered and not yet answered,
/// else text.
fn messages_reply(request: &Value, answer: Answer) -> String {
    let offered = request["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["name"].as_str())
        .find(|name| name.contains("Structured"))
        .map(str::to_owned);
    let answered = request["messages"].to_string().contains("tool_result");
    let (block, delta, stop) = match (answer, offered) {
        (Answer::Structured(json), Some(tool)) if !answered => (
            json!({"type": "tool_use", "id": "toolu_1", "name": tool, "input": {}}),
            json!({"type": "input_json_delta", "partial_json": json}),
            "tool_use",
        ),
        (Answer::Structured(_), _) => (
            json!({"type": "text", "text": ""}),
            json!({"type": "text_delta", "text": "Done."}),
            "end_turn",
        ),
        (Answer::Text(text), _) => (
            json!({"type": "text", "text": ""}),
            json!({"type": "text_delta", "text": text}),
            "end_turn",
        ),
    };
    [
        json!({"type": "message_start", "message": {"id": "msg_1", "type": "message",
               "role": "assistant", "model": request["model"], "content": [],
               "stop_reason": null, "stop_sequence": null,
               "usage": {"input_tokens": 40, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": block}),
        json!({"type": "content_block_delta", "index": 0, "delta": delta}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null},
               "usage": {"output_tokens": 6}}),
        json!({"type": "message_stop"}),
    ]
    .iter()
    .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap_or("")))
    .collect()
}

/// A provider running `cli` against the scripted model at `origin`, its rollouts under `home`.
fn provider(cli: &Path, origin: &str, home: &Path) -> HostLlm {
    let mut settings = HostSettings::new(Host::ClaudeCode, cli);
    settings.model = Some("claude-scripted".to_owned());
    let env = [
        ("HOME", home.as_os_str().to_owned()),
        ("ANTHROPIC_BASE_URL", origin.into()),
        ("ANTHROPIC_API_KEY", "host-dummy-key".into()),
        ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".into()),
        ("DISABLE_AUTOUPDATER", "1".into()),
        ("XDG_CACHE_HOME", OsString::new()),
        ("SKILL_EVOLVE_ROLLOUTS_DIR", OsString::new()),
        ("CLAUDE_CONFIG_DIR", OsString::new()),
    ];
    HostLlm::new(settings, Duration::from_secs(120), 2)
        .with_env(env.map(|(k, v)| (k.to_owned(), v)))
}

fn schema() -> Value {
    json!({"type": "object", "properties": {"ranking": {"type": "array",
           "items": {"type": "integer"}}}, "required": ["ranking"]})
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn claude_code_answers_a_request_with_its_schema_and_reports_usage() {
    let Some(cli) = host_cli("claude") else {
        return;
    };
    let (origin, seen) = start(Answer::Structured(r#"{"ranking": [1, 0]}"#));
    let home = tempfile::tempdir().unwrap();
    let llm = provider(&cli, &origin, home.path());
    let messages = [
        ChatMessage::system("You rank proposals."),
        ChatMessage::user("Rank them by expected benefit."),
    ];
    let options = ChatOptions::default().with_json_schema(schema());
    let reply = runtime().block_on(llm.chat(&messages, &options)).unwrap();
    let content: Value = serde_json::from_str(&reply.content).unwrap();
    assert_eq!(content, json!({"ranking": [1, 0]}));
    assert_eq!(reply.provider, "claude-code");
    assert!(
        reply.prompt_tokens >= 40 && reply.completion_tokens >= 6,
        "{reply:?}"
    );
    let seen = seen.lock().unwrap().clone();
    let first = seen.first().expect("the model was asked");
    // No tool but the schema's; the system message is the system prompt; the request text
    // is the user's message.
    let tools: Vec<_> = first["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(
        tools
            .iter()
            .all(|t| t.contains("Structured") || t.contains("Placeholder")),
        "{tools:?}"
    );
    assert!(first["system"].to_string().contains("You rank proposals."));
    assert!(
        first["messages"]
            .to_string()
            .contains("Rank them by expected benefit.")
    );
    // The rollout left nothing behind, and Claude Code kept no session under HOME.
    let rollouts = home.path().join(".cache/skill-evolve/rollouts");
    assert_eq!(std::fs::read_dir(&rollouts).unwrap().count(), 0);
    assert!(!home.path().join(".claude/projects").exists());
}

#[test]
fn a_reply_that_breaks_the_schema_is_asked_again_then_fails_with_the_hosts_words() {
    let Some(cli) = host_cli("claude") else {
        return;
    };
    let (origin, seen) = start(Answer::Text("I would rather not rank \u{1b}[31mthese"));
    let home = tempfile::tempdir().unwrap();
    let llm = provider(&cli, &origin, home.path());
    let options = ChatOptions::default().with_json_schema(schema());
    let error = runtime()
        .block_on(llm.chat(&[ChatMessage::user("Rank them.")], &options))
        .unwrap_err();
    assert_eq!(error.kind(), LlmErrorKind::InvalidResponse);
    assert_eq!(error.attempts(), 2);
    assert!(
        error
            .message()
            .contains("I would rather not rank \\u{1b}[31mthese"),
        "{error}"
    );
    let seen = seen.lock().unwrap();
    let asked_again = seen.iter().any(|r| {
        r["messages"]
            .to_string()
            .contains("not the JSON object asked for")
    });
    assert!(asked_again, "the retry was not sent");
}
