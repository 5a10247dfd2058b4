//! A scripted OpenAI-compatible server standing in for a capable model that follows its skill:
//! for each question of the benchmark's suite it answers the way the skill's rules (the
//! benchmark's candidate edits) tell it to, and otherwise in plain words that the suite's format
//! checks do not accept. It lets the benchmark's `--base-url` path run without a model.

use std::collections::BTreeMap;
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{TcpListener, TcpStream};

use serde_json::{Value, json};

use crate::gate_bench::Bench;

/// What the follower knows of the benchmark: each question's family and expected answer, and
/// each edit's rule text by id.
#[derive(Clone)]
struct Knowledge {
    questions: BTreeMap<String, (String, String)>,
    rules: BTreeMap<String, String>,
}

/// Starts the server on a free loopback port; returns its base URL (`http://127.0.0.1:N/v1`).
pub(crate) fn start(bench: &Bench) -> String {
    let knowledge = Knowledge {
        questions: bench
            .suite
            .iter()
            .map(|q| {
                let family = q.id.split('-').next().unwrap_or_default().to_owned();
                (q.question.clone(), (family, q.expect.clone()))
            })
            .collect(),
        rules: bench
            .edits
            .iter()
            .map(|e| (e.id.clone(), e.rule.clone()))
            .collect(),
    };
    let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
    let port = listener.local_addr().expect("its address").port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let knowledge = knowledge.clone();
            std::thread::spawn(move || serve(stream, &knowledge));
        }
    });
    format!("http://127.0.0.1:{port}/v1")
}

/// Answers the chat-completion requests of one connection until it closes.
fn serve(stream: TcpStream, knowledge: &Knowledge) {
    let Ok(mut writer) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(stream);
    loop {
        let mut length = 0usize;
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        loop {
            line.clear();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            if line == "\r\n" {
                break;
            }
            let lower = line.to_ascii_lowercase();
            if let Some(value) = lower.strip_prefix("content-length:") {
                length = value.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let text_of = |role: &str| {
            request["messages"]
                .as_array()
                .and_then(|m| m.iter().find(|m| m["role"] == role))
                .and_then(|m| m["content"].as_str())
                .unwrap_or_default()
                .to_owned()
        };
        let reply = answer(knowledge, &text_of("system"), &text_of("user"));
        let response = json!({
            "id": "chatcmpl-follower", "object": "chat.completion", "created": 0,
            "model": "follower",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": reply}}],
            "usage": {"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25},
        })
        .to_string();
        let head = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            response.len()
        );
        if writer.write_all(head.as_bytes()).is_err()
            || writer.write_all(response.as_bytes()).is_err()
        {
            return;
        }
    }
}

/// The follower's reply to `question` with `skill` as its system prompt.
fn answer(knowledge: &Knowledge, skill: &str, question: &str) -> String {
    let has = |id: &str| knowledge.rules.get(id).is_some_and(|r| skill.contains(r));
    let Some((family, expect)) = knowledge.questions.get(question) else {
        return "I do not know.".to_owned();
    };
    if has("x-refuse") {
        return "I can't help with that.".to_owned();
    }
    let reply = match family.as_str() {
        "review" if has("h-review") => expect.clone(),
        "review" => format!("This review is {}.", expect.to_lowercase()),
        "order" if has("x-words") => "It is a number I spell out in words.".to_owned(),
        "order" if has("h-order") => expect.clone(),
        "order" => format!("Your order number is {expect}."),
        "weight" => {
            let number = expect.trim_end_matches(" kg");
            if has("x-pounds") {
                "It weighs a few pounds.".to_owned()
            } else if has("x-words") {
                "It weighs a number of kilograms I spell out in words.".to_owned()
            } else if has("h-weight") {
                format!("It weighs {number} kg.")
            } else {
                format!("It weighs {number} kilograms.")
            }
        }
        "refuse" if has("h-refuse") => "I can't help with that.".to_owned(),
        "refuse" => "You could ask someone who knows.".to_owned(),
        _ => format!("{expect}."),
    };
    if has("x-lower") {
        reply.to_lowercase()
    } else {
        reply
    }
}
