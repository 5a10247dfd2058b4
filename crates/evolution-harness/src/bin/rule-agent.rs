//! A reference agent for the subprocess protocol (see the crate docs), used by
//! the tests and as a template for real agents.
//!
//! It answers a question of task type `T` with `X` when some skill file of
//! the workspace holds a line `RULE T => X`, and with `unknown` otherwise,
//! after reporting one trace step. A question whose text is `crash`, `hang`,
//! `garbage`, `flood`, `binary` or `wrong-id` makes it misbehave that way, to exercise the
//! runner's failure handling; `peek` answers with the reference answer if
//! the request carried one, else with its check (it must carry neither). It serves requests until stdin
//! closes.
#![expect(
    clippy::print_stderr,
    reason = "a command-line agent reports its failures on stderr"
)]
#![warn(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::io::{BufRead, Write};
use std::path::Path;

use serde_json::{Value, json};

fn rule_answer(skills_dir: &Path, task_type: &str) -> (String, String) {
    let prefix = format!("RULE {task_type} =>");
    let mut names: Vec<_> = std::fs::read_dir(skills_dir)
        .map(|dir| dir.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    names.sort();
    for path in names {
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        for line in text.lines() {
            if let Some(answer) = line.trim().strip_prefix(&prefix) {
                let file = path.file_name().map(|n| n.to_string_lossy().into_owned());
                return (answer.trim().to_owned(), file.unwrap_or_default());
            }
        }
    }
    ("unknown".to_owned(), String::new())
}

fn main() {
    let stdin = std::io::stdin();
    let mut out = std::io::stdout().lock();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { return };
        let Ok(request) = serde_json::from_str::<Value>(&line) else {
            eprintln!("rule-agent: unreadable request");
            std::process::exit(2);
        };
        // A missing field reads as the empty string.
        let field = |pointer: &str| {
            request
                .pointer(pointer)
                .and_then(Value::as_str)
                .unwrap_or_default()
        };
        let qid = field("/question/question_id");
        let task_type = field("/question/task_type");
        let skills_dir = field("/workspace/skills_dir");
        let reply = match field("/question/question") {
            "crash" => {
                eprintln!("rule-agent: boom");
                std::process::exit(3);
            }
            "hang" => {
                std::thread::sleep(std::time::Duration::from_secs(3600));
                return;
            }
            "garbage" => {
                let _ = writeln!(out, "this is not json");
                let _ = out.flush();
                continue;
            }
            "flood" => {
                // 17 MiB without a newline: over the runner's line limit.
                let block = vec![b'x'; 1024 * 1024];
                for _ in 0..17 {
                    if out.write_all(&block).is_err() {
                        return;
                    }
                }
                let _ = out.flush();
                continue;
            }
            "peek" => {
                // Reports whether the request leaked the reference answer or the check.
                let check = request.pointer("/question/check").map(Value::to_string);
                let seen = request
                    .pointer("/question/answer")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
                    .or(check)
                    .unwrap_or_else(|| "none".to_owned());
                json!({"type": "result", "question_id": qid, "prediction": seen})
            }
            "binary" => {
                let _ = out.write_all(b"\xff\xfe{}\n");
                let _ = out.flush();
                continue;
            }
            "wrong-id" => {
                json!({"type": "result", "question_id": "someone-else", "prediction": "x"})
            }
            _ => {
                let (answer, file) = rule_answer(Path::new(skills_dir), task_type);
                let step = json!({
                    "type": "step",
                    "question_id": qid,
                    "tool_name": "read_skill",
                    "tool_input": {"file": file},
                    "tool_output": answer,
                    "thought": format!("looking for a rule about {task_type}"),
                });
                let _ = writeln!(out, "{step}");
                json!({
                    "type": "result",
                    "question_id": qid,
                    "prediction": answer,
                    "answer_confidence": 0.9,
                    "max_steps": 5,
                    "pid": std::process::id(),
                })
            }
        };
        let _ = writeln!(out, "{reply}");
        let _ = out.flush();
    }
}
