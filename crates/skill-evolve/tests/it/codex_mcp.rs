//! A Codex user's whole journey by skill-evolve's MCP server and prompts through the real,
//! pinned `codex` CLI: the server registered in a (temporary) `CODEX_HOME/config.toml` with
//! the very block `plugins/codex/README.md` gives users, the prompts of `plugins/codex/prompts/`
//! copied to `CODEX_HOME/prompts/` as it says, and one `codex exec --json` session resumed
//! turn by turn (`codex exec resume`) whose model, the scripted one of `host_model.rs` on
//! 127.0.0.1 ([`Role::CodexPromptUser`]), follows the prompts: harvest, the tasks reviewed,
//! run (its dry run, the user's yes, the run followed with `run_progress`), adopt (the diff,
//! the user's yes, the write).
//!
//! `codex exec` sends a `/prompts:<name>` line to the model as it is (custom prompts are
//! expanded only in the interactive composer), so each turn sends the prompt file's text,
//! `$ARGUMENTS` replaced, as a user of `codex exec` would.
//!
//! The CLI is found as `host_agents.rs` finds it: without it the test says so and passes,
//! unless `EVOLUTION_REQUIRE_HOST_CLIS=1` makes it fail. Nothing leaves the machine: the CLI's
//! home is a temporary folder, its model is on 127.0.0.1 and every other address goes to a
//! proxy on a closed local port.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::host_agents::host_cli;
use crate::host_model::{ASK_START, ASK_WRITE, CODEX_NAMESPACE, Role, SKILL};
use crate::support::skill_evolve;

/// The repository's `plugins/codex` folder.
fn codex_plugin() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../plugins/codex")
}

/// The MCP server's block of `plugins/codex/README.md` (its first TOML code block), for the
/// project `project` and, as the README asks, the variable its `evolve.toml` reads the
/// optimizer's key from.
fn readme_server_block(project: &Path) -> String {
    let readme = std::fs::read_to_string(codex_plugin().join("README.md")).unwrap();
    let block = readme
        .split("```toml\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("the README gives the config.toml block");
    let block: String = block.lines().map(|l| format!("{}\n", l.trim())).collect();
    assert!(block.contains("[mcp_servers.skill-evolve]"), "{block}");
    assert!(
        block.contains("env_vars = [\"ANTHROPIC_API_KEY\"]"),
        "{block}"
    );
    block
        .replace("/path/to/your/project", &project.display().to_string())
        .replace("\"ANTHROPIC_API_KEY\"", "\"SKILL_EVOLVE_TEST_KEY\"")
}

/// A Codex user's machine: the project, `HOME`, `CODEX_HOME` (`HOME/.codex`) and a `PATH`
/// whose `skill-evolve` is the binary under test.
struct CodexUser {
    _dir: tempfile::TempDir,
    project: PathBuf,
    home: PathBuf,
    codex_home: PathBuf,
    path: std::ffi::OsString,
}

fn codex_user() -> CodexUser {
    let crate::claude_plugin::PluginProject {
        dir,
        project,
        home,
        path,
    } = crate::claude_plugin::plugin_project();
    let codex_home = home.join(".codex");
    std::fs::create_dir_all(&codex_home).unwrap();
    CodexUser {
        _dir: dir,
        project,
        home,
        codex_home,
        path,
    }
}

/// The text of the copied prompt `name` (`CODEX_HOME/prompts/<name>.md`) as Codex would send
/// it: its front matter left out and `$ARGUMENTS` replaced by `arguments`.
fn prompt(user: &CodexUser, name: &str, arguments: &str) -> String {
    let file = user.codex_home.join("prompts").join(format!("{name}.md"));
    let text = std::fs::read_to_string(&file).unwrap();
    let body = text
        .strip_prefix("---\n")
        .and_then(|rest| rest.split_once("\n---\n"))
        .map_or(text.as_str(), |(_, body)| body);
    body.replace("$ARGUMENTS", arguments)
}

/// One turn of the session in `user.project`: `message`, resuming the thread `resume` when
/// given; the JSONL events and the thread's id.
fn turn(cli: &Path, user: &CodexUser, message: &str, resume: Option<&str>) -> (Vec<Value>, String) {
    let mut command = Command::new(cli);
    command
        .env_clear()
        .env("PATH", &user.path)
        .env("HOME", &user.home)
        .env("CODEX_HOME", &user.codex_home)
        .env("SCRIPTED_MODEL_KEY", "host-dummy-key")
        .env("SKILL_EVOLVE_TEST_KEY", "optimizer-secret")
        .env("HTTPS_PROXY", "http://127.0.0.1:9")
        .env("HTTP_PROXY", "http://127.0.0.1:9")
        .env("NO_PROXY", "127.0.0.1,localhost")
        .current_dir(&user.project)
        .stdin(std::process::Stdio::null())
        .arg("exec");
    if let Some(tmp) = std::env::var_os("TMPDIR") {
        command.env("TMPDIR", tmp);
    }
    if let Some(thread) = resume {
        command.args(["resume", "--json", "--skip-git-repo-check", thread]);
    } else {
        command.args(["--json", "--skip-git-repo-check"]);
    }
    let out = command.arg(message).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let events: Vec<Value> = stdout
        .lines()
        .filter(|line| line.starts_with('{'))
        .map(|line| {
            serde_json::from_str(line).unwrap_or_else(|e| panic!("not an event ({e}): {line}"))
        })
        .collect();
    assert!(
        events.iter().any(|e| e["type"] == "turn.completed"),
        "{stdout}\n{stderr}"
    );
    let thread = match resume {
        Some(thread) => thread.to_owned(),
        None => events
            .iter()
            .find(|e| e["type"] == "thread.started")
            .and_then(|e| e["thread_id"].as_str())
            .unwrap_or_else(|| panic!("no thread: {stdout}"))
            .to_owned(),
    };
    (events, thread)
}

/// The skill-evolve tools a turn called, in order, each with its arguments and its result's
/// text (asserted completed).
fn tool_calls(events: &[Value]) -> Vec<(String, Value, String)> {
    events
        .iter()
        .filter(|e| e["type"] == "item.completed" && e["item"]["type"] == "mcp_tool_call")
        .map(|e| {
            let item = &e["item"];
            assert_eq!(item["server"], "skill-evolve", "{item}");
            assert_eq!(item["status"], "completed", "{item}");
            let text = item["result"]["content"][0]["text"]
                .as_str()
                .unwrap_or_else(|| panic!("no text: {item}"))
                .to_owned();
            (
                item["tool"].as_str().unwrap().to_owned(),
                item["arguments"].clone(),
                text,
            )
        })
        .collect()
}

/// The last thing the agent said in a turn.
fn last_words(events: &[Value]) -> String {
    events
        .iter()
        .rev()
        .find(|e| e["type"] == "item.completed" && e["item"]["type"] == "agent_message")
        .and_then(|e| e["item"]["text"].as_str())
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn a_codex_session_harvests_runs_and_adopts_through_the_mcp_server_and_prompts() {
    let Some(cli) = host_cli("codex") else {
        return;
    };
    let user = codex_user();
    let skill = user.project.join("skills").join(SKILL).join("SKILL.md");
    std::fs::create_dir_all(skill.parent().unwrap()).unwrap();
    let original = format!(
        "---\nname: {SKILL}\ndescription: How to answer questions about the service.\n---\n\
         # Answering\n\nAnswer with one word.\n"
    );
    std::fs::write(&skill, &original).unwrap();
    // The user's earlier Codex sessions of this project, where Codex keeps them.
    let sessions = user.codex_home.join("sessions/2026/11/20");
    std::fs::create_dir_all(&sessions).unwrap();
    let cwd = user.project.display().to_string();
    for (i, region) in crate::host_journey::REGIONS.iter().enumerate() {
        for copy in 0..2 {
            let n = i * 2 + copy;
            let id = format!("{n:08x}-0000-4000-8000-{n:012x}");
            let request = format!("Is the service available in the {region} region?");
            std::fs::write(
                sessions.join(format!("rollout-2026-11-20T10-{n:02}-00-{id}.jsonl")),
                crate::host_journey::codex_session(&cwd, &id, &request, n),
            )
            .unwrap();
        }
    }
    // Codex set up as the README says: its model the scripted one, the server's block, the
    // prompts copied.
    let model = crate::host_model::start_as(Role::CodexPromptUser);
    crate::host_agents::write_codex_config(&user.codex_home, &model.origin);
    let config = user.codex_home.join("config.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push('\n');
    text.push_str(&readme_server_block(&user.project));
    std::fs::write(&config, text).unwrap();
    std::fs::create_dir_all(user.codex_home.join("prompts")).unwrap();
    for entry in std::fs::read_dir(codex_plugin().join("prompts")).unwrap() {
        let from = entry.unwrap().path();
        std::fs::copy(
            &from,
            user.codex_home
                .join("prompts")
                .join(from.file_name().unwrap()),
        )
        .unwrap();
    }
    // The run replays the mined tasks through a shell agent; the optimizer is the fake LLM.
    let optimizer = crate::fake_llm::start_loop();
    let run_config = crate::run::one_epoch(&crate::run::live_config(&optimizer.base_url))
        .replace("file = \"questions.jsonl\"", "file = \"mined-tasks.jsonl\"")
        .replace("concurrency = 1", "concurrency = 2");
    std::fs::write(user.project.join("evolve.toml"), run_config).unwrap();
    std::fs::write(
        user.project.join("agent.sh"),
        crate::claude_plugin::RULE_AGENT,
    )
    .unwrap();

    // 1. The harvest prompt: the tool writes the tasks to review.
    let message = prompt(&user, "skill-evolve-harvest", "");
    let (events, thread) = turn(&cli, &user, &message, None);
    let calls = tool_calls(&events);
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(calls[0].0, "harvest");
    let harvested: Value = serde_json::from_str(&calls[0].2).unwrap();
    let lines = harvested["lines"].as_array().unwrap();
    let tasks_line = format!(
        "tasks: 14 recurring (seen in at least 2 sessions) mined into {}",
        user.project.join("mined-tasks.jsonl").display()
    );
    assert!(
        lines
            .iter()
            .any(|l| l.as_str() == Some(tasks_line.as_str())),
        "{harvested:#}"
    );
    for line in ["skipped records: 0", "skipped sessions: 0"] {
        assert!(lines.contains(&Value::from(line)), "{line}: {harvested:#}");
    }
    let mined = std::fs::read_to_string(user.project.join("mined-tasks.jsonl")).unwrap();
    assert_eq!(mined.lines().count(), 14, "{mined}");
    assert!(mined.contains("\"reviewed\":false"), "{mined}");
    std::fs::write(
        user.project.join("mined-tasks.jsonl"),
        mined.replace("\"reviewed\":false", "\"reviewed\":true"),
    )
    .unwrap();

    // 2. The run prompt: the dry run, then the run only after the user's yes, followed until
    // it ends.
    let message = prompt(&user, "skill-evolve-run", "");
    let (events, _) = turn(&cli, &user, &message, Some(&thread));
    let calls = tool_calls(&events);
    assert_eq!(
        calls.iter().map(|c| c.0.as_str()).collect::<Vec<_>>(),
        ["dry_run"]
    );
    assert!(
        calls[0].2.contains("dry run: the configuration is valid"),
        "{calls:?}"
    );
    assert_eq!(last_words(&events), ASK_START);
    assert!(!user.project.join(".skill-evolve/runs/demo").exists());
    let (events, _) = turn(&cli, &user, "yes", Some(&thread));
    let calls = tool_calls(&events);
    assert_eq!(calls[0].0, "run", "{calls:?}");
    let started: Value = serde_json::from_str(&calls[0].2).unwrap();
    assert_eq!(started["run"], "demo", "{started:#}");
    assert!(calls.len() >= 2, "{calls:?}");
    for (name, arguments, _) in &calls[1..] {
        assert_eq!(name, "run_progress");
        assert_eq!(arguments["job"], started["job"]);
    }
    let progress: Value = serde_json::from_str(&calls.last().unwrap().2).unwrap();
    assert_eq!(progress["state"], "finished", "{progress:#}");
    assert!(
        progress["summary"]
            .as_str()
            .unwrap()
            .contains("1 candidate(s), 1 accepted"),
        "{progress:#}"
    );
    assert_eq!(std::fs::read_to_string(&skill).unwrap(), original);

    // 3. The adopt prompt: the diff, nothing written until the user says yes.
    let message = prompt(&user, "skill-evolve-adopt", "demo");
    let (events, _) = turn(&cli, &user, &message, Some(&thread));
    let calls = tool_calls(&events);
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(calls[0].0, "adopt");
    assert_eq!(calls[0].1, serde_json::json!({"run": "demo"}));
    let diff: Value = serde_json::from_str(&calls[0].2).unwrap();
    assert_eq!(diff["written"], false, "{diff:#}");
    assert!(
        diff["diff"]
            .as_str()
            .unwrap()
            .contains(&format!("+{}", crate::fake_llm::QA_RULE)),
        "{diff:#}"
    );
    assert_eq!(last_words(&events), ASK_WRITE);
    assert_eq!(std::fs::read_to_string(&skill).unwrap(), original);
    let (events, _) = turn(&cli, &user, "yes", Some(&thread));
    let calls = tool_calls(&events);
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(
        calls[0].1,
        serde_json::json!({"run": "demo", "confirm": true})
    );
    let adopted: Value = serde_json::from_str(&calls[0].2).unwrap();
    assert_eq!(adopted["written"], true, "{adopted:#}");

    // The rule is in the user's skill, its history in the project's store.
    let text = std::fs::read_to_string(&skill).unwrap();
    assert!(text.contains(crate::fake_llm::QA_RULE), "{text}");
    assert!(text.starts_with(&format!("---\nname: {SKILL}\n")), "{text}");
    assert!(
        user.project
            .join(".skill-evolve/stores/skills")
            .join(SKILL)
            .join("SKILL.md")
            .is_dir(),
        "the adoption's history is in the project's store"
    );
    assert!(
        !skill.parent().unwrap().join(".skill-evolve").exists(),
        "the skill folder stays the skill's alone"
    );
    // Every model request went to the scripted model with the provider's key.
    for request in model.seen.lock().unwrap().iter() {
        assert_eq!(request.line, "POST /v1/responses HTTP/1.1");
        assert_eq!(request.key, "Bearer host-dummy-key");
    }

    // The session itself, its tool calls and resumed turns, is a Codex session of this project
    // that harvest reads whole: every record Codex wrote in it is known.
    let out = skill_evolve(&user.project)
        .env("HOME", &user.home)
        .env("CODEX_HOME", &user.codex_home)
        .args(["harvest", "--source", "codex", "--out", "harvested"])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert!(said.contains(&thread), "{said}");
    for line in ["\nskipped records: 0\n", "\nskipped sessions: 0\n"] {
        assert!(said.contains(line), "{line}: {said}");
    }
    // The MCP tools the session called keep their server's namespace, as Codex wrote it.
    let mut written = String::new();
    for entry in std::fs::read_dir(user.project.join("harvested")).unwrap() {
        written.push_str(&std::fs::read_to_string(entry.unwrap().path()).unwrap_or_default());
    }
    for tool in ["harvest", "run", "adopt"] {
        let name = format!("\"{CODEX_NAMESPACE}__{tool}\"");
        assert!(written.contains(&name), "{name} in {written}");
    }
}
