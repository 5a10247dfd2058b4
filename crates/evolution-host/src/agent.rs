//! The protocol agent: answers the agent protocol's requests with Claude Code or Codex.
//!
//! `run` starts `skill-evolve host-agent <host>` when the run configuration says `[agent] host
//! = …`; that command hands its stdin and stdout to [`serve`]. For each question it makes a
//! fresh rollout folder outside every project with the host's own configuration home beside
//! it (the module `isolation`: only the skills under test, no user plugins or MCP servers, no
//! session kept, the process marked as a rollout), installs the version under test there the
//! way the host reads skills (`.claude/skills/<name>/SKILL.md` and `CLAUDE.md` for Claude Code,
//! `.agents/skills/<name>/SKILL.md` and `AGENTS.md` for Codex), runs the host's CLI headless in
//! that folder with the question on its stdin, turns the host's event stream into step lines
//! and one result line, and removes the folder. The host inherits this process's environment,
//! which `run` has already stripped of the optimizer's key (unless `[agent] pass_env` names
//! it), or cut to what the host needs (`[agent.host] env = "minimal"`).

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use crate::error::{HostError, IoContext, Result, invalid};
use crate::events::{self, HostStream};
use crate::{Host, HostSettings, claude_code, codex, install, isolation};

/// Longest request line read (the protocol's own limit).
const MAX_REQUEST_BYTES: usize = 16 * 1024 * 1024;

/// Longest event line of the host kept; a longer one is skipped.
pub(crate) const MAX_EVENT_BYTES: usize = 8 * 1024 * 1024;

/// Longest prompt built from a question.
const MAX_PROMPT_CHARS: usize = 200_000;

/// Answers every request of `input` on `output` until `input` ends: step lines and one
/// result line per question, an error result for a question the host could not answer.
pub fn serve(args: &HostSettings, mut input: impl BufRead, mut output: impl Write) -> Result<()> {
    while let Some(line) =
        read_line(&mut input, MAX_REQUEST_BYTES).io(|| "cannot read a request".to_owned())?
    {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let request: Value = serde_json::from_slice(&line)
            .map_err(|e| HostError::Invalid(format!("a request line is not JSON: {e}")))?;
        let Some(question_id) = request
            .pointer("/question/question_id")
            .and_then(Value::as_str)
            .map(str::to_owned)
        else {
            invalid!("the request has no question.question_id");
        };
        let lines = match answer(args, &request) {
            Ok(outcome) => outcome.lines(&question_id, args.host.name()),
            Err(e) => vec![json!({
                "type": "result", "question_id": question_id, "host": args.host.name(),
                "stop_reason": "error", "error": events::cap(&e.to_string(), 2000),
            })],
        };
        for line in lines {
            writeln!(output, "{line}").io(|| "cannot write an answer".to_owned())?;
        }
        output.flush().io(|| "cannot write an answer".to_owned())?;
    }
    Ok(())
}

/// One question: a fresh folder, the version installed, the host run there.
fn answer(args: &HostSettings, request: &Value) -> Result<events::Outcome> {
    let path = |pointer: &str| {
        request
            .pointer(pointer)
            .and_then(Value::as_str)
            .map(PathBuf::from)
            .ok_or_else(|| HostError::Invalid(format!("the request has no {pointer}")))
    };
    let prompt = prompt(request.get("question").unwrap_or(&Value::Null))?;
    let rollout = isolation::Rollout::in_user_cache(args.host)?;
    let (skills_root, instructions) = match args.host {
        Host::ClaudeCode => (claude_code::SKILLS_ROOT, claude_code::INSTRUCTIONS),
        Host::Codex => (codex::SKILLS_ROOT, codex::INSTRUCTIONS),
    };
    let installed = install::install(
        &path("/workspace/skills_dir")?,
        &path("/workspace/prompts_dir")?,
        &rollout.work(),
        skills_root,
        instructions,
    );
    // Claude Code's bundled skills that outlive its switch are turned off by name, sparing a
    // skill under test of the same name.
    let installed = installed.and_then(|names| match args.host {
        Host::ClaudeCode => isolation::claude::hide_bundled_skills(rollout.host_home(), &names),
        Host::Codex => Ok(()),
    });
    let outcome = installed.and_then(|()| match args.host {
        Host::ClaudeCode => run_host(
            args,
            &claude_code::arguments(args, rollout.args()),
            &rollout,
            &prompt,
            claude_code::ClaudeStream::default(),
        ),
        Host::Codex => run_host(
            args,
            &codex::arguments(args, rollout.args()),
            &rollout,
            &prompt,
            codex::CodexStream::default(),
        ),
    });
    let finished = rollout.finish();
    let outcome = outcome?;
    finished?;
    Ok(outcome)
}

/// What the host is asked: the question's text, then its other text fields (never the
/// reference answer, which `run` does not send) as `name: value` lines.
fn prompt(question: &Value) -> Result<String> {
    let text = question
        .get("question")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .trim();
    if text.is_empty() {
        invalid!("the question has no text to ask the host");
    }
    let mut prompt = text.to_owned();
    if let Some(fields) = question.as_object() {
        for (key, value) in fields {
            // The protocol's own fields; a source id (the field named `video_id`) is context
            // the host may use, so it is kept.
            if matches!(key.as_str(), "question" | "question_id" | "task_type") {
                continue;
            }
            if let Some(value) = value.as_str().filter(|v| !v.trim().is_empty()) {
                prompt.push_str(&format!("\n\n{key}: {value}"));
            }
        }
    }
    Ok(events::cap(&prompt, MAX_PROMPT_CHARS))
}

/// Runs the host in the rollout's folder with `prompt` on its stdin and reads its events.
fn run_host(
    args: &HostSettings,
    host_args: &[String],
    rollout: &isolation::Rollout,
    prompt: &str,
    mut stream: impl HostStream,
) -> Result<events::Outcome> {
    let mut command = Command::new(&args.cli);
    rollout.apply(&mut command);
    let mut child = command
        .args(host_args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .io(|| format!("cannot start {}", args.cli.display()))?;
    let stdin = child.stdin.take();
    let text = prompt.to_owned();
    // The prompt is written beside the reading, so a host that answers before it has read
    // all of a long prompt cannot block on a full pipe.
    let writer = std::thread::spawn(move || {
        if let Some(mut stdin) = stdin {
            let _ = stdin.write_all(text.as_bytes());
        }
    });
    if let Some(stdout) = child.stdout.take() {
        let mut reader = BufReader::new(stdout);
        while let Some(line) = read_line(&mut reader, MAX_EVENT_BYTES)
            .io(|| "cannot read the host's events".to_owned())?
        {
            if let Ok(event) = serde_json::from_slice::<Value>(&line) {
                stream.event(&event);
            }
        }
    }
    let _ = writer.join();
    let status = child.wait().io(|| "waiting for the host".to_owned())?;
    let mut outcome = stream.finish(&status.to_string());
    if let Some(code) = status.code() {
        outcome.extra.insert("host_exit_code".into(), code.into());
    }
    Ok(outcome)
}

/// The next line of `reader` without its newline, cut to `max` bytes (the rest of a longer
/// line is read and dropped); `None` at the end.
pub(crate) fn read_line(reader: &mut impl BufRead, max: usize) -> std::io::Result<Option<Vec<u8>>> {
    let mut line = Vec::new();
    let mut any = false;
    loop {
        let buffer = reader.fill_buf()?;
        if buffer.is_empty() {
            return Ok(any.then_some(line));
        }
        any = true;
        let (chunk, used, ended) = match buffer.iter().position(|b| *b == b'\n') {
            Some(at) => (buffer.get(..at).unwrap_or_default(), at + 1, true),
            None => (buffer, buffer.len(), false),
        };
        let room = max.saturating_sub(line.len());
        line.extend_from_slice(chunk.get(..room.min(chunk.len())).unwrap_or_default());
        reader.consume(used);
        if ended {
            return Ok(Some(line));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_lines_are_cut_and_the_next_one_read_whole() {
        let mut input = std::io::Cursor::new(b"abcdef\nxy\nlast".to_vec());
        assert_eq!(read_line(&mut input, 3).unwrap(), Some(b"abc".to_vec()));
        assert_eq!(read_line(&mut input, 3).unwrap(), Some(b"xy".to_vec()));
        assert_eq!(read_line(&mut input, 3).unwrap(), Some(b"las".to_vec()));
        assert_eq!(read_line(&mut input, 3).unwrap(), None);
    }

    #[test]
    fn the_prompt_is_the_question_and_its_other_text_fields() {
        let question = json!({"question_id": "q", "task_type": "qa", "question": " Is it? ",
                              "context": "region 3", "difficulty": 2});
        assert_eq!(prompt(&question).unwrap(), "Is it?\n\ncontext: region 3");
        assert!(prompt(&json!({"question_id": "q"})).is_err());
    }
}
