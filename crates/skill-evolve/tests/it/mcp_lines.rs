//! `skill-evolve mcp` driven over its own stdin and stdout, as any MCP client program drives
//! it: every line that is no message (not JSON, not UTF-8, nested past the parser's limit,
//! longer than a message may be, JSON that is no request) is answered with a JSON-RPC error
//! and the server goes on serving; a harvest of a hostile store fails alone, and a run the
//! server started goes on to its end.

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::Duration;

use serde_json::{Value, json};

use crate::agent_protocol::demo_with_agent;
use crate::run::rule_agent;

/// How long a reply may take before the test says the server went silent (a guard against
/// hanging, not a measure of speed).
const SILENCE: Duration = Duration::from_secs(300);

/// The server's largest line, as `docs/mcp.md` states it.
const MAX_LINE_BYTES: usize = 8 * 1024 * 1024;

/// A running `skill-evolve mcp` and the lines it writes.
pub(crate) struct Server {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
}

impl Server {
    /// Starts the server for `project` and opens the session.
    pub(crate) fn start(project: &Path) -> Self {
        Self::start_with(project, |_| {})
    }

    /// Starts the server for `project`, its command changed by `configure` first (its
    /// environment, its stderr), and opens the session.
    pub(crate) fn start_with(project: &Path, configure: impl FnOnce(&mut Command)) -> Self {
        let mut command = Command::new(assert_cmd::cargo::cargo_bin!("skill-evolve"));
        command
            .args(["mcp", "--project"])
            .arg(project)
            .env("NO_COLOR", "1")
            .env("SKILL_EVOLVE_TEST_KEY", "k")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        configure(&mut command);
        let mut child = command.spawn().unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let (send, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in stdout.lines() {
                let Ok(line) = line else { return };
                if send.send(line).is_err() {
                    return;
                }
            }
        });
        let mut server = Server {
            child,
            stdin,
            lines,
        };
        server.send(
            json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": { "name": "test", "version": "0" } } })
            .to_string()
            .as_bytes(),
        );
        let init = server.next();
        assert_eq!(init["id"], 0, "{init}");
        assert!(init["result"]["serverInfo"].is_object(), "{init}");
        server.send(br#"{"jsonrpc": "2.0", "method": "notifications/initialized"}"#);
        server
    }

    /// The server's stderr, when `start_with` piped it.
    pub(crate) fn take_stderr(&mut self) -> Option<std::process::ChildStderr> {
        self.child.stderr.take()
    }

    /// Writes `bytes` and a newline.
    fn send(&mut self, bytes: &[u8]) {
        self.stdin.write_all(bytes).unwrap();
        self.stdin.write_all(b"\n").unwrap();
        self.stdin.flush().unwrap();
    }

    /// The next line the server writes, as JSON.
    fn next(&self) -> Value {
        match self.lines.recv_timeout(SILENCE) {
            Ok(line) => serde_json::from_str(&line).unwrap(),
            Err(RecvTimeoutError::Timeout) => panic!("the server went silent"),
            Err(RecvTimeoutError::Disconnected) => panic!("the server closed its output"),
        }
    }

    /// Calls `tool` with `arguments` as request `id`; its text (`Ok`) or tool error (`Err`).
    pub(crate) fn call(&mut self, id: u64, tool: &str, arguments: Value) -> Result<String, String> {
        self.send(
            json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call",
                    "params": { "name": tool, "arguments": arguments } })
            .to_string()
            .as_bytes(),
        );
        let reply = self.next();
        assert_eq!(reply["id"], id, "{reply}");
        let result = &reply["result"];
        let text = result["content"][0]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("no text: {reply}"))
            .to_owned();
        if result["isError"] == true {
            Err(text)
        } else {
            Ok(text)
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Asserts `reply` is the JSON-RPC error `code` with `id`, its message containing `needle`.
fn assert_error(reply: &Value, code: i64, id: &Value, needle: &str) {
    assert_eq!(reply["jsonrpc"], "2.0", "{reply}");
    assert_eq!(&reply["id"], id, "{reply}");
    assert_eq!(reply["error"]["code"], code, "{reply}");
    let message = reply["error"]["message"].as_str().unwrap();
    assert!(message.contains(needle), "{needle:?} not in {reply}");
}

#[test]
fn every_malformed_line_is_answered_and_the_server_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::start(dir.path());
    let cases: Vec<(Vec<u8>, i64, Value, &str)> = vec![
        (b"this is not JSON".to_vec(), -32700, Value::Null, "Parse error"),
        (b"{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \"ping\"".to_vec(), -32700, Value::Null, "Parse error"),
        (b"{\"jsonrpc\": \"2.0\", \"id\": \"\xff\xfe\"}".to_vec(), -32700, Value::Null, "not UTF-8"),
        (
            format!("{}{}", "[".repeat(100_000), "]".repeat(100_000)).into_bytes(),
            -32700,
            Value::Null,
            "recursion limit",
        ),
        (
            format!(
                r#"{{"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {{"name": "gate", "arguments": {}1{}}}}}"#,
                "[".repeat(5_000),
                "]".repeat(5_000)
            )
            .into_bytes(),
            -32700,
            Value::Null,
            "recursion limit",
        ),
        (br#"{"jsonrpc": "2.0", "id": 5, "params": {}}"#.to_vec(), -32600, json!(5), "Invalid Request"),
        (br#"{"jsonrpc": "2.0", "id": "six", "method": 6}"#.to_vec(), -32600, json!("six"), "Invalid Request"),
        (b"[1, 2, 3]".to_vec(), -32600, Value::Null, "Invalid Request"),
        (b"42".to_vec(), -32600, Value::Null, "Invalid Request"),
    ];
    for (line, code, id, needle) in &cases {
        server.send(line);
        assert_error(&server.next(), *code, id, needle);
    }
    // A line longer than a message may be is refused while it is read: its bytes are skipped.
    let mut huge = br#"{"jsonrpc": "2.0", "id": 7, "method": "ping", "params": {"x": ""#.to_vec();
    huge.resize(MAX_LINE_BYTES + 1024, b'x');
    server.send(&huge);
    assert_error(&server.next(), -32600, &Value::Null, "longer than");
    // Blank lines are no messages and get no answer; the next request is served.
    server.send(b"");
    server.send(b"   ");
    let status = server.call(8, "status", json!({})).unwrap();
    let status: Value = serde_json::from_str(&status).unwrap();
    assert_eq!(status["runs"], json!([]), "{status}");
    server.send(br#"{"jsonrpc": "2.0", "id": 9, "method": "ping"}"#);
    let pong = server.next();
    assert_eq!(pong["id"], 9, "{pong}");
    assert!(pong["result"].is_object(), "{pong}");
}

#[test]
fn a_hostile_store_fails_its_harvest_alone_and_a_running_job_goes_on() {
    let dir = demo_with_agent(&[rule_agent().display().to_string()]);
    let d = dir.path();
    // A Copilot chat log whose patches nest one value 20 000 levels deep, 100 levels a line
    // (each line within the JSON parser's limit): deeper than a 2 MiB stack can walk
    // recursively.
    let nested = |depth: usize| format!("{}{{}}{}", "{\"x\": ".repeat(depth), "}".repeat(depth));
    let base = r#""requests", 0, "response""#;
    let mut log = String::from(
        "{\"kind\": 0, \"v\": {\"version\": 3, \"requests\": [{\"message\": {\"text\": \"hi\"}, \"response\": {}}]}}\n",
    );
    for line in 0..200 {
        let path: String = std::iter::repeat_n(r#", "x""#, 100 * line).collect();
        log.push_str(&format!(
            "{{\"kind\": 1, \"k\": [{base}{path}], \"v\": {}}}\n",
            nested(100)
        ));
    }
    std::fs::create_dir_all(d.join("store/chatSessions")).unwrap();
    std::fs::write(d.join("store/chatSessions/deep.jsonl"), log).unwrap();
    let mut server = Server::start(d);
    let started: Value = serde_json::from_str(&server.call(1, "run", json!({})).unwrap()).unwrap();
    let job = started["job"].as_u64().unwrap();
    // Read or refused: either way the call is answered and the server lives on.
    let harvested = server.call(
        2,
        "harvest",
        json!({ "source": "copilot", "from": "store/chatSessions/deep.jsonl", "all_projects": true }),
    );
    if let Err(error) = &harvested {
        assert!(!error.is_empty());
    }
    let progress = loop {
        let view: Value = serde_json::from_str(
            &server
                .call(3, "run_progress", json!({ "job": job }))
                .unwrap(),
        )
        .unwrap();
        if view["state"] != "running" {
            break view;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(progress["state"], "finished", "{progress}");
    assert!(
        progress["summary"]
            .as_str()
            .unwrap()
            .contains("1 candidate(s), 1 accepted"),
        "{progress}"
    );
}
