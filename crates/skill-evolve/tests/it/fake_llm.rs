//! A tiny OpenAI-compatible chat-completions server for recording cassettes:
//! it answers the reflect, rank and meta-reflect prompts, and the diagnosis
//! judges, with fixed JSON chosen by the prompt's wording.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// The replacement the fake reflection proposes.
pub(crate) const REPLACED: &str = "2. Lead with what a user notices; internal refactors go last.";
/// Its new text.
pub(crate) const REPLACEMENT: &str = "2. Lead with what a user notices, starting with every fix a user reported; internal refactors go last.";
/// The rule the fake reflection appends.
pub(crate) const APPENDED: &str =
    "- Before finishing, check that every merged change appears exactly once.";

fn reflect_reply() -> String {
    serde_json::json!({
        "reasoning": "Fixes users reported were dropped and a change was listed twice.",
        "suggestions": [
            {"type": "modify_step", "title": "Lead with reported fixes",
             "instruction": "Say that user-reported fixes come first.", "priority_hint": "high",
             "support_count": 1},
            {"type": "add_rule", "title": "No duplicates",
             "instruction": "Check each change appears once.", "priority_hint": "medium",
             "support_count": 1}
        ],
        "edits": [
            {"op": "replace", "target": REPLACED, "content": REPLACEMENT,
             "reason": "t1: a reported crash fix was left out", "support_count": 1},
            {"op": "insert_after", "target": "3. Name breaking changes in a section of their own.",
             "content": APPENDED, "reason": "t2: a change was listed twice", "support_count": 1}
        ]
    })
    .to_string()
}

fn meta_reply() -> String {
    serde_json::json!({
        "addressed": ["t1", "t2"],
        "unaddressed": [],
        "summary": "Both failures are now covered by explicit steps."
    })
    .to_string()
}

/// Every message of a chat-completions request, joined by newlines: what the fake replies
/// are chosen by.
pub(crate) fn prompt_text(request: &serde_json::Value) -> String {
    request["messages"]
        .as_array()
        .map(|messages| {
            messages
                .iter()
                .filter_map(|m| m["content"].as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

pub(crate) fn completion(content: &str) -> String {
    serde_json::json!({
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 0,
        "model": "fake-model",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                     "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 50, "total_tokens": 150}
    })
    .to_string()
}

/// A running fake server; its requests are counted.
pub(crate) struct FakeLlm {
    /// `http://127.0.0.1:PORT/v1`.
    pub(crate) base_url: String,
    /// Requests answered so far.
    pub(crate) calls: Arc<AtomicUsize>,
    /// The text of every request answered ([`prompt_text`]), in order.
    prompts: Arc<Mutex<Vec<String>>>,
}

impl FakeLlm {
    /// The text of every request answered so far (all its messages), in order.
    pub(crate) fn prompts(&self) -> Vec<String> {
        self.prompts.lock().map(|p| p.clone()).unwrap_or_default()
    }

    /// The options that send `skill-evolve`'s LLM calls to this server
    /// (provider `openai`, model `fake-model`).
    pub(crate) fn provider_args(&self) -> [&str; 6] {
        [
            "--provider",
            "openai",
            "--base-url",
            &self.base_url,
            "--model",
            "fake-model",
        ]
    }
}

/// Starts the evolve server on a free port; it lives until the test process ends.
pub(crate) fn start() -> FakeLlm {
    start_with(evolve_reply)
}

/// Starts a server answering the diagnosis judges (default templates).
pub(crate) fn start_judges() -> FakeLlm {
    start_with(judge_reply)
}

/// The evolve prompts' replies.
fn evolve_reply(prompt: &str) -> String {
    if prompt.contains("## Known failures") {
        meta_reply()
    } else if prompt.contains("## Failed trajectories") {
        reflect_reply()
    } else {
        serde_json::json!({"ranking": [0, 1]}).to_string()
    }
}

/// The rule the gated evolve tests' reflection writes: with it the reference
/// agent answers qa questions `yes`.
pub(crate) const QA_RULE: &str = "RULE qa => yes";
/// The rule that replaces [`QA_RULE`] in [`start_evolve_regress`]'s reflection.
pub(crate) const WRONG_RULE: &str = "RULE qa => no";
/// The slow update's guidance of the evolve servers below.
pub(crate) const GUIDANCE: &str = "Keep exactly one RULE line per task type.";

/// Starts an evolve server whose reflection appends [`QA_RULE`], whose
/// meta-reflection says failure `t1` is addressed, and whose slow update
/// answers [`GUIDANCE`].
pub(crate) fn start_evolve_gain() -> FakeLlm {
    start_with(|prompt| {
        evolve_edit_reply(
            prompt,
            serde_json::json!({"op": "append", "target": "", "content": QA_RULE,
                               "reason": "t1: no rule answers qa questions"}),
        )
    })
}

/// The rule [`start_evolve_refund_rule`]'s reflection appends to the skill.
pub(crate) const REFUND_RULE: &str = "RULE refund => yes";

/// Starts an evolve server as [`start_evolve_gain`] whose reflection appends
/// [`REFUND_RULE`] instead.
pub(crate) fn start_evolve_refund_rule() -> FakeLlm {
    start_with(|prompt| {
        evolve_edit_reply(
            prompt,
            serde_json::json!({"op": "append", "target": "", "content": REFUND_RULE,
                               "reason": "t1: no rule answers refund questions"}),
        )
    })
}

/// Starts an evolve server as [`start_evolve_gain`] that also judges rubric checks: an
/// answer passes when it is `yes`.
pub(crate) fn start_evolve_gain_rubric() -> FakeLlm {
    start_with(|prompt| {
        rubric_reply(prompt).unwrap_or_else(|| {
            evolve_edit_reply(
                prompt,
                serde_json::json!({"op": "append", "target": "", "content": QA_RULE,
                                   "reason": "t1: no rule answers qa questions"}),
            )
        })
    })
}

/// The judge's verdict when `prompt` asks for one: the answer passes when it is `yes`.
fn rubric_reply(prompt: &str) -> Option<String> {
    if !prompt.contains("You grade one answer") {
        return None;
    }
    let answer = prompt
        .split_once("<answer>\n")
        .and_then(|(_, rest)| rest.split_once("\n</answer>"))
        .map(|(answer, _)| answer.trim())
        .unwrap_or_default();
    Some(
        serde_json::json!({"passed": answer == "yes", "reason": format!("answered {answer:?}")})
            .to_string(),
    )
}

/// Starts an evolve server whose reflection replaces [`QA_RULE`] by
/// [`WRONG_RULE`] (a regression), otherwise as [`start_evolve_gain`].
pub(crate) fn start_evolve_regress() -> FakeLlm {
    start_with(|prompt| {
        evolve_edit_reply(
            prompt,
            serde_json::json!({"op": "replace", "target": QA_RULE, "content": WRONG_RULE,
                               "reason": "t1: qa answers looked too eager"}),
        )
    })
}

fn evolve_edit_reply(prompt: &str, edit: serde_json::Value) -> String {
    if prompt.contains("## Known failures") {
        serde_json::json!({"addressed": ["t1"], "unaddressed": [], "summary": "t1 is covered."})
            .to_string()
    } else if prompt.contains("## Failed trajectories") {
        serde_json::json!({"reasoning": "r", "suggestions": [], "edits": [edit]}).to_string()
    } else if prompt.contains("long-term guidance") {
        GUIDANCE.to_owned()
    } else {
        serde_json::json!({"ranking": [0]}).to_string()
    }
}

/// Starts a server for the whole loop: the judges, then a skill edit that
/// adds `RULE qa => yes` (what the reference `rule-agent` answers from), and
/// the slow update's guidance.
pub(crate) fn start_loop() -> FakeLlm {
    start_with(loop_reply)
}

/// The reply of the whole loop's scripted optimizer to `prompt` (all its messages' text).
pub(crate) fn loop_reply(prompt: &str) -> String {
    if prompt.contains("You improve a skill document") {
        serde_json::json!({"suggestions": ["no rule answers qa questions"],
            "edits": [{"op": "append", "content": "RULE qa => yes"}]})
        .to_string()
    } else if prompt.contains("long-term guidance") {
        "Keep the qa rule: it fixed every qa failure.".to_owned()
    } else if prompt.contains("for confirmation bias") {
        // No cross-task pattern: the workspace has no system prompt to evolve.
        serde_json::json!({"confirmation_bias": false}).to_string()
    } else if prompt.contains("explored a source") {
        serde_json::json!({"missed_nodes": []}).to_string()
    } else if prompt.contains("Rank them by expected benefit") {
        serde_json::json!({"ranking": [0]}).to_string()
    } else {
        judge_reply(prompt)
    }
}

/// Starts a server for the whole loop that also judges rubric checks: an answer passes
/// when it is `yes`.
pub(crate) fn start_loop_rubric() -> FakeLlm {
    start_with(|prompt| rubric_reply(prompt).unwrap_or_else(|| loop_reply(prompt)))
}

/// Starts a server for the whole loop whose rubric verdicts are never JSON.
pub(crate) fn start_loop_rubric_unreadable() -> FakeLlm {
    start_with(|prompt| {
        if prompt.contains("You grade one answer") {
            "It is hard to say; the answer is short.".to_owned()
        } else {
            loop_reply(prompt)
        }
    })
}

/// The system prompt's added line, proposed by [`start_loop_system`].
pub(crate) const SYSTEM_RULE: &str = "Read every RULE line before you answer.";

/// Starts a server for the whole loop that also sees confirmation bias in
/// every failure (so the system prompt gets a case pack) and answers the
/// system prompt's evolve call with an appended line ([`SYSTEM_RULE`]).
pub(crate) fn start_loop_system() -> FakeLlm {
    start_with(loop_system_reply)
}

fn loop_system_reply(prompt: &str) -> String {
    if prompt.contains("You improve the system prompt") {
        serde_json::json!({"suggestions": ["the agent answers before reading its rules"],
            "edits": [{"op": "append", "content": SYSTEM_RULE}]})
        .to_string()
    } else if prompt.contains("for confirmation bias") {
        serde_json::json!({"confirmation_bias": true}).to_string()
    } else {
        loop_reply(prompt)
    }
}

/// The line the tool-prompt evolution of [`start_tools`] appends to the extract prompt.
pub(crate) const TOOL_RULE: &str = "RULE qa => yes";

/// Starts a server for an agent with its own tools: the span judge scores
/// every call poorly (completeness 0.2, tagged `order status`), the tool
/// prompts' evolution appends [`TOOL_RULE`] to the extract prompt, and the
/// skill's evolution proposes nothing.
pub(crate) fn start_tools() -> FakeLlm {
    start_with(tools_reply)
}

fn tools_reply(prompt: &str) -> String {
    if prompt.contains("strict evaluator of one tool call") {
        serde_json::json!({"extraction_completeness": 0.2, "hallucination_rate": 0.0,
                           "missed_info_tags": ["order status"], "hallucination_tags": []})
        .to_string()
    } else if prompt.contains("You improve the two prompts that steer the tool") {
        serde_json::json!({"suggestions": ["the extract prompt never says what qa answers"],
            "extract_edits": [{"op": "append", "target": "", "content": TOOL_RULE}],
            "verify_edits": []})
        .to_string()
    } else if prompt.contains("You improve a skill document") {
        serde_json::json!({"suggestions": [], "edits": []}).to_string()
    } else {
        loop_reply(prompt)
    }
}

/// The judges' replies, told apart by each default template's opening.
fn judge_reply(prompt: &str) -> String {
    let reply = if prompt.contains("Decide whether the failure comes") {
        serde_json::json!({"category": "defect"})
    } else if prompt.contains("Classify it with one label") {
        serde_json::json!({"type": "wrong_inference"})
    } else if prompt.contains("strict evaluator of one tool call") {
        serde_json::json!({"extraction_completeness": 0.95, "hallucination_rate": 0.0,
                           "missed_info_tags": [], "hallucination_tags": []})
    } else if prompt.contains("explored a source") {
        serde_json::json!({"missed_nodes": ["n2"]})
    } else if prompt.contains("followed the skill it was given") {
        serde_json::json!({"steps": [
            {"step": "List every merged change", "followed": true, "reason": "listed"},
            {"step": "Lead with user-visible fixes", "followed": false, "reason": "buried"}]})
    } else if prompt.contains("confirmation bias") {
        serde_json::json!({"confirmation_bias": "yes"})
    } else if prompt.contains("enough evidence") {
        serde_json::json!({"evidence_sufficient": true})
    } else {
        serde_json::json!({"unexpected_prompt": true})
    };
    format!("```json\n{reply}\n```")
}

/// Starts a server answering the follow-up judge of `harvest --judge-followups`: a
/// correction for the fixtures' wrong file, repeated dark mode toggle and rephrased CI
/// request, and a reply that is no JSON at all (read as `unclear`) for anything else.
pub(crate) fn start_followup_judge() -> FakeLlm {
    start_with(followup_reply)
}

fn followup_reply(prompt: &str) -> String {
    let quote = if prompt.contains("they go in CHANGELOG.md") {
        "No, that's the wrong file"
    } else if prompt.contains("I asked for a dark mode toggle") {
        // A quote the user never wrote (a small model repeating the prompt's example does
        // this): the verdict is set aside.
        "no, you broke the login page"
    } else if prompt.contains("GitHub Actions") {
        "can you get the test suite to pass on GitHub Actions"
    } else {
        return "I cannot tell from these messages.".to_owned();
    };
    serde_json::json!({"verdict": "correction", "evidence": quote}).to_string()
}

/// Starts a server answering `harvest --variants`: three variants of the task it is shown (one
/// past the two asked for), a repeat of the task and an item with a terminal escape.
pub(crate) fn start_variants() -> FakeLlm {
    start_with(variants_reply)
}

fn variants_reply(prompt: &str) -> String {
    let question = prompt
        .split("<question>\n")
        .nth(1)
        .and_then(|rest| rest.split("\n</question>").next())
        .unwrap_or_default();
    serde_json::json!({"variants": [
        question,
        format!("{question} (asked again)"),
        "\u{1b}[2J clear the screen",
        format!("Please answer: {question}"),
        format!("One more: {question}"),
    ]})
    .to_string()
}

/// Starts a server whose reply content is `reply(all message contents)`.
fn start_with(reply: fn(&str) -> String) -> FakeLlm {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&calls);
    let prompts = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&prompts);
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            counter.fetch_add(1, Ordering::SeqCst);
            let _ = answer(stream, reply, &seen);
        }
    });
    FakeLlm {
        base_url: format!("http://127.0.0.1:{port}/v1"),
        calls,
        prompts,
    }
}

fn answer(
    stream: TcpStream,
    reply: fn(&str) -> String,
    seen: &Mutex<Vec<String>>,
) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            return Ok(());
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0u8; length];
    reader.read_exact(&mut body)?;
    let request: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
    let text = prompt_text(&request);
    let content = reply(&text);
    if let Ok(mut seen) = seen.lock() {
        seen.push(text);
    }
    let payload = completion(&content);
    let mut stream = stream;
    write!(
        stream,
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{}",
        payload.len(),
        payload
    )?;
    stream.flush()
}

/// Starts a server answering each request with `reply(request body, its
/// Authorization header line)`: a status and a body. Returns its base URL.
pub(crate) fn start_raw(reply: fn(&str, &str) -> (u16, String)) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let (mut length, mut auth) = (0usize, String::new());
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 {
                    break;
                }
                let line = line.trim_end();
                if line.is_empty() {
                    break;
                }
                if let Some((name, value)) = line.split_once(':') {
                    if name.eq_ignore_ascii_case("content-length") {
                        length = value.trim().parse().unwrap_or(0);
                    } else if name.eq_ignore_ascii_case("authorization") {
                        auth = line.to_owned();
                    }
                }
            }
            let mut body = vec![0u8; length];
            let _ = reader.read_exact(&mut body);
            let (status, payload) = reply(&String::from_utf8_lossy(&body), &auth);
            let mut stream = stream;
            let _ = write!(
                stream,
                "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
                 Connection: close\r\n\r\n{payload}",
                payload.len()
            );
        }
    });
    format!("http://127.0.0.1:{port}/v1")
}
