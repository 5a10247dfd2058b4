//! A scripted model for the real Claude Code and Codex CLIs: an HTTP server on 127.0.0.1
//! speaking the Anthropic Messages API (`POST /v1/messages`, streamed as server-sent events)
//! and the OpenAI Responses API (`POST /v1/responses`, streamed).
//!
//! By default ([`start`], [`Role::SkillUser`]) it plays an agent that uses its skill: when the
//! host lists the skill [`SKILL`], it first loads it (Claude Code's `Skill` tool; Codex's
//! `exec_command` reading its `SKILL.md`), runs `echo checked` in the shell when the question
//! asks for [`SHELL_MARK`], then answers `yes` when the skill text it was given holds
//! [`crate::fake_llm::QA_RULE`], else `no`. [`Role::CallsTool`] plays a session that calls one
//! tool the host offers and then says `done`; [`Role::PluginUser`] follows the commands of the
//! skill-evolve plugin turn by turn (harvest, run, adopt), calling the plugin's MCP tools, and
//! [`Role::CodexPromptUser`] follows the Codex prompts of `plugins/codex/prompts/` the same way
//! with the tools of the MCP server registered in Codex's `config.toml`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

/// The skill the scripted model loads.
pub(crate) const SKILL: &str = "answering";

/// A question holding these words gets a shell call before its answer.
pub(crate) const SHELL_MARK: &str = "Check the shell first.";

/// One request the server answered.
#[derive(Debug, Clone)]
pub(crate) struct Seen {
    /// Method and path (`POST /v1/messages?beta=true`).
    pub(crate) line: String,
    /// The `x-api-key` or `authorization` header's value.
    pub(crate) key: String,
    /// The request's body.
    pub(crate) body: String,
}

/// What the scripted model plays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    /// An agent that loads the skill [`SKILL`] and answers with it (the module's description).
    SkillUser,
    /// A session that calls this tool once, without arguments, when the host offers it, and
    /// then says `done`.
    CallsTool(&'static str),
    /// A Claude Code session following the skill-evolve plugin's commands with the plugin's
    /// MCP tools (see [`plugin_move`]).
    PluginUser,
    /// A Codex session following the Codex prompts of skill-evolve with the tools of the MCP
    /// server `skill-evolve` (the same moves as [`Role::PluginUser`]).
    CodexPromptUser,
}

/// The namespace under which Codex offers the tools of the MCP server `skill-evolve`.
pub(crate) const CODEX_NAMESPACE: &str = "mcp__skill_evolve";

/// Who follows the skill-evolve commands: the host's tool prefix, the words that start the
/// harvest command's text and the harvest source it names.
struct Follower {
    prefix: &'static str,
    harvest: &'static str,
    source: &'static str,
}

/// The Claude Code plugin's commands.
const CLAUDE_FOLLOWER: Follower = Follower {
    prefix: PLUGIN_TOOL,
    harvest: "Harvest the user's Claude Code sessions",
    source: "claude-code",
};

/// The Codex prompts; a namespaced tool is named `<namespace>__<tool>` here.
const CODEX_FOLLOWER: Follower = Follower {
    prefix: "mcp__skill_evolve__",
    harvest: "Harvest the user's Codex sessions",
    source: "codex",
};

/// The prefix of the skill-evolve plugin's MCP tools in Claude Code.
pub(crate) const PLUGIN_TOOL: &str = "mcp__plugin_skill-evolve_skill-evolve__";

/// What [`Role::PluginUser`] asks before a run starts (`/skill-evolve:run`).
pub(crate) const ASK_START: &str = "Start the run?";

/// What [`Role::PluginUser`] asks after it showed the diff (`/skill-evolve:adopt`).
pub(crate) const ASK_WRITE: &str = "Write these changes to your skill files?";

/// A running scripted model.
pub(crate) struct HostModel {
    /// `http://127.0.0.1:PORT` (Claude Code appends `/v1/messages`).
    pub(crate) origin: String,
    /// Every request so far.
    pub(crate) seen: Arc<Mutex<Vec<Seen>>>,
}

/// Starts the server on a free port, playing [`Role::SkillUser`]; it lives until the test
/// process ends.
pub(crate) fn start() -> HostModel {
    start_as(Role::SkillUser)
}

/// Starts the server on a free port, playing `role`; it lives until the test process ends.
pub(crate) fn start_as(role: Role) -> HostModel {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let log = Arc::clone(&log);
            std::thread::spawn(move || {
                let _ = serve(stream, &log, role);
            });
        }
    });
    HostModel {
        origin: format!("http://127.0.0.1:{port}"),
        seen,
    }
}

fn serve(stream: TcpStream, log: &Mutex<Vec<Seen>>, role: Role) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    let (mut length, mut key) = (0usize, String::new());
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            break;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            let name = name.to_ascii_lowercase();
            if name == "content-length" {
                length = value.trim().parse().unwrap_or(0);
            } else if name == "x-api-key" || name == "authorization" {
                key = value.trim().to_owned();
            }
        }
    }
    let mut body = vec![0u8; length];
    reader.read_exact(&mut body)?;
    let request_line = request_line.trim_end().to_owned();
    log.lock().unwrap().push(Seen {
        line: request_line.clone(),
        key,
        body: String::from_utf8_lossy(&body).into_owned(),
    });
    let request: Value = serde_json::from_slice(&body).unwrap_or_default();
    let path = request_line.split(' ').nth(1).unwrap_or_default();
    let (status, kind, payload) = if request_line.starts_with("POST /v1/messages?")
        || request_line.starts_with("POST /v1/messages ")
    {
        (200, "text/event-stream", messages_reply(&request, role))
    } else if path == "/v1/responses" {
        (200, "text/event-stream", responses_reply(&request, role))
    } else {
        (
            404,
            "application/json",
            r#"{"error":"not here"}"#.to_owned(),
        )
    };
    let mut stream = stream;
    write!(
        stream,
        "HTTP/1.1 {status} X\r\nContent-Type: {kind}\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{payload}",
        payload.len()
    )?;
    stream.flush()
}

/// What the scripted model does next.
enum Move {
    /// Calls a tool: its name and arguments.
    Call(String, Value),
    /// Answers.
    Say(String),
}

/// The move of [`Role::CallsTool`]: call `tool` when the request offers it and no tool
/// result came back yet, else say `done`.
fn call_once(tool: &'static str, request: &Value, results: usize) -> Move {
    let offered = request["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|t| t["name"] == tool);
    if offered && results == 0 {
        Move::Call(tool.to_owned(), json!({}))
    } else {
        Move::Say("done".to_owned())
    }
}

/// The next move of [`Role::SkillUser`], given everything the host sent as one text, how many
/// tool results it holds, whether the shell was called already and the user's question.
fn next_move(
    context: &str,
    results: usize,
    shell_called: bool,
    question: &str,
    load: (&'static str, Value),
    shell: (&'static str, Value),
) -> Move {
    if results == 0 && context.contains(&format!("- {SKILL}:")) {
        Move::Call(load.0.to_owned(), load.1)
    } else if question.contains(SHELL_MARK) && !shell_called {
        Move::Call(shell.0.to_owned(), shell.1)
    } else if context.contains(crate::fake_llm::QA_RULE) {
        Move::Say("yes".to_owned())
    } else {
        Move::Say("no".to_owned())
    }
}

/// The last text the user wrote in the first message (the question).
fn first_user_text(messages: &Value) -> String {
    let content = &messages[0]["content"];
    match content {
        Value::String(text) => text.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b["text"].as_str())
            .next_back()
            .unwrap_or_default()
            .to_owned(),
        _ => String::new(),
    }
}

fn sse(events: &[Value]) -> String {
    events
        .iter()
        .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap_or("")))
        .collect()
}

/// The Messages API's reply, streamed.
fn messages_reply(request: &Value, role: Role) -> String {
    if role == Role::SkillUser && !offers(request, "Skill") {
        return optimizer_reply(request);
    }
    let messages = request["messages"].to_string();
    let context = format!("{}\n{messages}", request["system"]);
    let results = messages.matches("\"tool_result\"").count();
    let shell_called = messages.contains("\"name\":\"Bash\"");
    let question = first_user_text(&request["messages"]);
    let next = match role {
        Role::SkillUser => next_move(
            &context,
            results,
            shell_called,
            &question,
            ("Skill", json!({"skill": SKILL})),
            (
                "Bash",
                json!({"command": "echo checked", "description": "Check the shell"}),
            ),
        ),
        Role::CallsTool(tool) => call_once(tool, request, results),
        Role::PluginUser => plugin_move(request, &CLAUDE_FOLLOWER),
        Role::CodexPromptUser => Move::Say("not a Claude Code role".to_owned()),
    };
    let (block, delta, stop) = match next {
        Move::Call(name, input) => (
            json!({"type": "tool_use", "id": format!("toolu_{results}"), "name": name, "input": {}}),
            json!({"type": "input_json_delta", "partial_json": input.to_string()}),
            "tool_use",
        ),
        Move::Say(text) => (
            json!({"type": "text", "text": ""}),
            json!({"type": "text_delta", "text": text}),
            "end_turn",
        ),
    };
    sse(&[
        json!({"type": "message_start", "message": {"id": format!("msg_{results}"),
               "type": "message", "role": "assistant", "model": request["model"],
               "content": [], "stop_reason": null, "stop_sequence": null,
               "usage": {"input_tokens": 50, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": block}),
        json!({"type": "content_block_delta", "index": 0, "delta": delta}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null},
               "usage": {"output_tokens": 5}}),
        json!({"type": "message_stop"}),
    ])
}

/// Whether the request offers the tool `name`.
fn offers(request: &Value, name: &str) -> bool {
    request["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|t| t["name"] == name)
}

/// A request of the optimizer's (the `claude-code` provider offers no tool but the one for
/// its reply schema): the scripted optimizer's reply of `fake_llm`, through the schema tool
/// when it is offered and not yet called, else as text.
fn optimizer_reply(request: &Value) -> String {
    let system = match &request["system"] {
        Value::String(text) => text.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    };
    let messages = request["messages"].as_array().cloned().unwrap_or_default();
    let user = messages
        .iter()
        .filter(|m| m["role"] == "user")
        .map(message_text)
        .collect::<Vec<_>>()
        .join("\n");
    let text = crate::fake_llm::loop_reply(&format!("{system}\n{user}"));
    let answered = request["messages"].to_string().contains("\"tool_result\"");
    let (block, delta, stop) = if offers(request, "StructuredOutput") && !answered {
        (
            json!({"type": "tool_use", "id": "toolu_schema", "name": "StructuredOutput",
                   "input": {}}),
            json!({"type": "input_json_delta", "partial_json": text}),
            "tool_use",
        )
    } else {
        let text = if answered { "Done.".to_owned() } else { text };
        (
            json!({"type": "text", "text": ""}),
            json!({"type": "text_delta", "text": text}),
            "end_turn",
        )
    };
    sse(&[
        json!({"type": "message_start", "message": {"id": "msg_optimizer", "type": "message",
               "role": "assistant", "model": request["model"], "content": [],
               "stop_reason": null, "stop_sequence": null,
               "usage": {"input_tokens": 80, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": block}),
        json!({"type": "content_block_delta", "index": 0, "delta": delta}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null},
               "usage": {"output_tokens": 9}}),
        json!({"type": "message_stop"}),
    ])
}

/// The Responses API's reply, streamed.
fn responses_reply(request: &Value, role: Role) -> String {
    let input = request["input"].to_string();
    let context = format!("{}\n{input}", request["instructions"]);
    // A request of the optimizer's (the `codex` provider installs no skill): the scripted
    // optimizer's reply of `fake_llm`, as the final message.
    if role == Role::SkillUser && !context.contains(&format!("- {SKILL}:")) {
        let user = request["input"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|item| item["role"] == "user")
            .flat_map(|item| item["content"].as_array().cloned().unwrap_or_default())
            .filter_map(|c| c["text"].as_str().map(str::to_owned))
            .collect::<Vec<_>>()
            .join("\n");
        let text = crate::fake_llm::loop_reply(&user);
        let item = json!({"type": "message", "id": "m_optimizer", "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]});
        let usage = json!({"input_tokens": 80, "input_tokens_details": {"cached_tokens": 0},
                           "output_tokens": 9, "output_tokens_details": {"reasoning_tokens": 0},
                           "total_tokens": 89});
        return sse(&[
            json!({"type": "response.created", "response": {"id": "resp_optimizer"}}),
            json!({"type": "response.output_item.done", "output_index": 0, "item": item}),
            json!({"type": "response.completed",
                   "response": {"id": "resp_optimizer", "usage": usage}}),
        ]);
    }
    let results = input.matches("\"function_call_output\"").count();
    let shell_called = input.contains("echo checked");
    let question = request["input"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|item| item["role"] == "user")
        .flat_map(|item| item["content"].as_array().cloned().unwrap_or_default())
        .filter_map(|c| c["text"].as_str().map(str::to_owned))
        .next_back()
        .unwrap_or_default();
    let next = match role {
        Role::SkillUser => next_move(
            &context,
            results,
            shell_called,
            &question,
            (
                "exec_command",
                json!({"cmd": format!("cat .agents/skills/{SKILL}/SKILL.md")}),
            ),
            ("exec_command", json!({"cmd": "echo checked"})),
        ),
        Role::CallsTool(tool) => call_once(tool, request, results),
        Role::PluginUser => Move::Say("not a Codex role".to_owned()),
        Role::CodexPromptUser => plugin_move(&as_messages(request), &CODEX_FOLLOWER),
    };
    let item = match next {
        Move::Call(name, arguments) => {
            let mut call = json!({"type": "function_call", "id": format!("fc_{results}"),
                "call_id": format!("call_{results}"), "name": name,
                "arguments": arguments.to_string(), "status": "completed"});
            if let Some(tool) = name.strip_prefix(CODEX_FOLLOWER.prefix) {
                call["name"] = Value::from(tool);
                call["namespace"] = Value::from(CODEX_NAMESPACE);
            }
            call
        }
        Move::Say(text) => json!({"type": "message", "id": format!("m_{results}"),
            "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}),
    };
    let usage = json!({"input_tokens": 50, "input_tokens_details": {"cached_tokens": 0},
                       "output_tokens": 5, "output_tokens_details": {"reasoning_tokens": 0},
                       "total_tokens": 55});
    sse(&[
        json!({"type": "response.created", "response": {"id": format!("resp_{results}")}}),
        json!({"type": "response.output_item.done", "output_index": 0, "item": item}),
        json!({"type": "response.completed",
               "response": {"id": format!("resp_{results}"), "usage": usage}}),
    ])
}

/// The text blocks of one message, joined (a plain string content as it is).
fn message_text(message: &Value) -> String {
    match &message["content"] {
        Value::String(text) => text.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter(|b| b["type"] == "text")
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// The text of a tool result block.
fn result_text(block: &Value) -> String {
    match &block["content"] {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// The next move of [`Role::PluginUser`] (or, its request read by [`as_messages`],
/// [`Role::CodexPromptUser`]), from the conversation so far, its tools named as `follower`'s.
///
/// A turn that starts with a command's text calls its first tool: the harvest command
/// `harvest` (of `follower`'s source, as the command says, to `.skill-evolve/harvest` and `mined-tasks.jsonl`), the
/// run command `dry_run` and then asks [`ASK_START`], the adopt command `adopt` without
/// `confirm` and then asks [`ASK_WRITE`]. The user's `yes` to those starts the run (`run`,
/// then `run_progress` until its state is no longer `running`) or adopts with `confirm`.
/// Anything else, or a tool error, ends the turn with a line saying what it saw.
fn plugin_move(request: &Value, follower: &Follower) -> Move {
    let prefix = follower.prefix;
    let offered = |tool: &str| {
        request["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|t| t["name"] == format!("{prefix}{tool}"))
    };
    let call = |tool: &str, input: Value| {
        if offered(tool) {
            Move::Call(format!("{prefix}{tool}"), input)
        } else {
            Move::Say(format!("the tool {tool} is not offered"))
        }
    };
    // The conversation's turns (Claude Code also sends `system` messages among them).
    let messages: Vec<Value> = request["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "user" || m["role"] == "assistant")
        .cloned()
        .collect();
    let Some(last) = messages.last() else {
        return Move::Say("done".to_owned());
    };
    let result = last["content"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|b| b["type"] == "tool_result")
        .cloned();
    let Some(result) = result else {
        // A new turn: the user's text (a command's text, or an answer).
        let text = message_text(last);
        let asked = messages
            .iter()
            .rev()
            .filter(|m| m["role"] == "assistant")
            .map(message_text)
            .find(|t| !t.is_empty())
            .unwrap_or_default();
        return if text.contains(follower.harvest) {
            call(
                "harvest",
                json!({"source": follower.source, "out": ".skill-evolve/harvest",
                       "tasks": "mined-tasks.jsonl"}),
            )
        } else if text.contains("Run skill-evolve's loop") {
            call("dry_run", json!({}))
        } else if let Some(run) = text
            .split("Adopt the staged skill documents of the run \"")
            .nth(1)
            .and_then(|rest| rest.split('"').next())
        {
            call("adopt", json!({"run": run}))
        } else if text.trim().ends_with("yes") && asked == ASK_START {
            call("run", json!({}))
        } else if text.trim().ends_with("yes") && asked == ASK_WRITE {
            call("adopt", json!({"run": "demo", "confirm": true}))
        } else {
            Move::Say("done".to_owned())
        };
    };
    // A tool's result: which tool, called with what.
    let id = result["tool_use_id"].as_str().unwrap_or_default();
    let called = messages
        .iter()
        .rev()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .find(|b| b["type"] == "tool_use" && b["id"] == id)
        .unwrap_or_default();
    let tool = called["name"]
        .as_str()
        .unwrap_or_default()
        .trim_start_matches(prefix)
        .to_owned();
    let text = result_text(&result);
    if result["is_error"] == true {
        return Move::Say(format!("{tool} failed: {text}"));
    }
    let value: Value = serde_json::from_str(&text).unwrap_or_default();
    match tool.as_str() {
        "harvest" => Move::Say("harvested: review mined-tasks.jsonl".to_owned()),
        "dry_run" => Move::Say(ASK_START.to_owned()),
        "run" => call("run_progress", json!({"job": value["job"]})),
        "run_progress" if value["state"] == "running" => {
            // Not hammering the server while the run works.
            std::thread::sleep(std::time::Duration::from_millis(300));
            call("run_progress", json!({"job": value["job"]}))
        }
        "run_progress" => Move::Say(format!("the run ended: {}", value["state"])),
        "adopt" if called["input"]["confirm"] == true => Move::Say("adopted".to_owned()),
        "adopt" => Move::Say(ASK_WRITE.to_owned()),
        _ => Move::Say(format!("unexpected result of {tool}")),
    }
}

/// A Responses API request as the Messages API would send it, for [`plugin_move`]: the user's
/// and the assistant's messages as text blocks, each function call a `tool_use` block named
/// `<namespace>__<name>` and each output a `tool_result` block holding the output's last text
/// (Codex puts its wall time first), and the offered tools, namespaces flattened the same way.
fn as_messages(request: &Value) -> Value {
    let text = |content: &Value| -> String {
        match content {
            Value::String(text) => text.clone(),
            Value::Array(parts) => parts
                .iter()
                .filter_map(|p| p["text"].as_str())
                .next_back()
                .unwrap_or_default()
                .to_owned(),
            _ => String::new(),
        }
    };
    let messages: Vec<Value> = request["input"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|item| match item["type"].as_str() {
            Some("message") if item["role"] == "user" || item["role"] == "assistant" => {
                let words = item["content"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|c| c["text"].as_str())
                    .collect::<Vec<_>>()
                    .join("\n");
                Some(json!({"role": item["role"], "content": [{"type": "text", "text": words}]}))
            }
            Some("function_call") => {
                let name = match item["namespace"].as_str() {
                    Some(namespace) => format!("{namespace}__{}", item["name"].as_str()?),
                    None => item["name"].as_str()?.to_owned(),
                };
                let input: Value =
                    serde_json::from_str(item["arguments"].as_str()?).unwrap_or_default();
                Some(json!({"role": "assistant", "content": [{"type": "tool_use",
                    "id": item["call_id"], "name": name, "input": input}]}))
            }
            Some("function_call_output") => Some(json!({"role": "user", "content": [{
                "type": "tool_result", "tool_use_id": item["call_id"],
                "content": text(&item["output"])}]})),
            _ => None,
        })
        .collect();
    let tools: Vec<Value> = request["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|tool| match tool["tools"].as_array() {
            Some(inner) => inner
                .iter()
                .map(|t| {
                    json!({"name": format!("{}__{}", tool["name"].as_str().unwrap_or_default(),
                        t["name"].as_str().unwrap_or_default())})
                })
                .collect(),
            None => vec![json!({"name": tool["name"]})],
        })
        .collect();
    json!({"messages": messages, "tools": tools})
}
