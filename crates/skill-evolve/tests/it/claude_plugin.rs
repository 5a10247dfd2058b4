//! The Claude Code plugin (`plugins/skill-evolve/`) and its marketplace
//! (`.claude-plugin/marketplace.json`) through the real, pinned `claude` CLI: validated with
//! `claude plugin validate --strict`, and loaded with `--plugin-dir` into a headless session
//! (`claude -p`, its model the scripted one of `host_model.rs` on 127.0.0.1) whose end runs the
//! plugin's `SessionEnd` hook, so that `harvest --recorded` reads the session; and a user's
//! whole journey by the plugin's commands in one session resumed turn by turn (the scripted
//! model's [`Role::PluginUser`]): `/skill-evolve:harvest`, the tasks reviewed,
//! `/skill-evolve:run` (its dry run, the user's yes, the run followed with `run_progress`),
//! `/skill-evolve:adopt` (the diff, the user's yes, the write).
//!
//! The CLI is found as `host_agents.rs` finds it: without it a test says so and passes, unless
//! `EVOLUTION_REQUIRE_HOST_CLIS=1` (set by `cargo xtask ci`) makes it fail. Nothing leaves the
//! machine: the CLI's home is a temporary folder, its model is on 127.0.0.1, and every other
//! address goes to a proxy on a closed local port.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::host_agents::host_cli;
use crate::host_model::Role;
use crate::support::skill_evolve;

/// The plugin's MCP tool the session's command calls.
const STATUS_TOOL: &str = "mcp__plugin_skill-evolve_skill-evolve__status";

/// The repository's root.
fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// The plugin's folder.
fn plugin_dir() -> PathBuf {
    repo().join("plugins/skill-evolve")
}

/// The plugin's command names (`skill-evolve:status`, …), from its `commands/*.md`, sorted.
fn command_names() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(plugin_dir().join("commands"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "md"))
        .map(|path| {
            format!(
                "skill-evolve:{}",
                path.file_stem().unwrap().to_str().unwrap()
            )
        })
        .collect();
    names.sort();
    names
}

/// `cli` with a clean environment: `home` as its home, `path` as `PATH`, and every address
/// but 127.0.0.1 sent to a closed port, so that nothing it does can reach the network.
fn claude(cli: &Path, home: &Path, path: &std::ffi::OsStr) -> Command {
    let mut command = Command::new(cli);
    command
        .env_clear()
        .env("PATH", path)
        .env("HOME", home)
        .env("HTTPS_PROXY", "http://127.0.0.1:9")
        .env("HTTP_PROXY", "http://127.0.0.1:9")
        .env("NO_PROXY", "127.0.0.1,localhost")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_TELEMETRY", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .stdin(std::process::Stdio::null());
    if let Some(tmp) = std::env::var_os("TMPDIR") {
        command.env("TMPDIR", tmp);
    }
    command
}

/// `claude plugin validate --strict --json TARGET`: the exit status and the report.
fn validate(cli: &Path, home: &Path, target: &Path) -> (std::process::ExitStatus, Value) {
    let out = claude(cli, home, &std::env::var_os("PATH").unwrap_or_default())
        .args(["plugin", "validate", "--strict", "--json"])
        .arg(target)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let report: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| {
        panic!(
            "not a validation report ({e}): {stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status, report)
}

#[test]
fn the_claude_cli_validates_the_plugin_and_its_marketplace_strictly() {
    let Some(cli) = host_cli("claude") else {
        return;
    };
    let home = tempfile::tempdir().unwrap();

    let (status, report) = validate(&cli, home.path(), &plugin_dir());
    assert!(status.success(), "{report:#}");
    assert_eq!(report["success"], true, "{report:#}");
    assert_eq!(report["strict"], true, "{report:#}");
    let manifest = &report["manifest"];
    assert_eq!(manifest["type"], "plugin", "{report:#}");
    assert_eq!(manifest["errors"], serde_json::json!([]), "{report:#}");
    assert_eq!(manifest["warnings"], serde_json::json!([]), "{report:#}");
    // What the CLI read from hooks/hooks.json, .mcp.json and commands/.
    let provides = &report["provides"];
    assert_eq!(
        provides["hooks"],
        serde_json::json!([{ "event": "SessionEnd", "type": "command",
                             "command": "skill-evolve hook session-end" }]),
        "{report:#}"
    );
    assert_eq!(
        provides["mcpServers"],
        serde_json::json!([{ "name": "skill-evolve", "type": "stdio",
                             "target": "skill-evolve", "args": ["mcp"] }]),
        "{report:#}"
    );
    let mut commands: Vec<String> = serde_json::from_value(provides["commands"].clone()).unwrap();
    commands.sort();
    assert_eq!(commands, command_names(), "{report:#}");
    assert_eq!(commands.len(), 5, "{report:#}");

    // The marketplace at the repository's root, offering this very folder.
    let (status, report) = validate(&cli, home.path(), &repo());
    assert!(status.success(), "{report:#}");
    assert_eq!(report["success"], true, "{report:#}");
    assert_eq!(report["manifest"]["type"], "marketplace", "{report:#}");
    assert_eq!(
        Path::new(report["manifest"]["file"].as_str().unwrap()),
        repo().join(".claude-plugin/marketplace.json"),
        "{report:#}"
    );
    assert_eq!(report["manifest"]["errors"], serde_json::json!([]));
    assert_eq!(report["manifest"]["warnings"], serde_json::json!([]));
    let marketplace: Value = serde_json::from_str(
        &std::fs::read_to_string(repo().join(".claude-plugin/marketplace.json")).unwrap(),
    )
    .unwrap();
    let source = marketplace["plugins"][0]["source"].as_str().unwrap();
    assert_eq!(
        repo().join(source).canonicalize().unwrap(),
        plugin_dir(),
        "the marketplace offers the validated folder"
    );

    // The check has teeth: a field Claude Code does not know fails it under --strict.
    let broken = tempfile::tempdir().unwrap();
    crate::harvest::copy_tree(&plugin_dir(), broken.path());
    let manifest_file = broken.path().join(".claude-plugin/plugin.json");
    let mut manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(&manifest_file).unwrap()).unwrap();
    manifest["no_such_field"] = Value::Bool(true);
    std::fs::write(&manifest_file, manifest.to_string()).unwrap();
    let (status, report) = validate(&cli, home.path(), broken.path());
    assert!(!status.success(), "{report:#}");
    assert_eq!(report["success"], false, "{report:#}");
    assert!(
        report["manifest"]["warnings"]
            .to_string()
            .contains("no_such_field"),
        "{report:#}"
    );
}

/// The stream-json events of a `claude -p` run's stdout.
fn events(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| {
            serde_json::from_str(line).unwrap_or_else(|e| panic!("not an event ({e}): {line}"))
        })
        .collect()
}

#[test]
fn a_headless_claude_code_session_loads_the_plugin_and_its_end_is_recorded_for_harvest() {
    let Some(cli) = host_cli("claude") else {
        return;
    };
    let model = crate::host_model::start_as(Role::CallsTool(STATUS_TOOL));
    // The plugin's hook and MCP server run `skill-evolve` from PATH: the binary under test.
    let PluginProject {
        dir: _dir,
        project,
        home,
        path,
    } = plugin_project();

    // The plugin's own command: its text is the prompt and its `allowed-tools` let the MCP
    // tool run without a prompt for permission.
    let out = claude(&cli, &home, &path)
        .current_dir(&project)
        .env("ANTHROPIC_BASE_URL", &model.origin)
        .env("ANTHROPIC_API_KEY", "host-dummy-key")
        // MCP tools offered directly rather than behind a tool search, the server's start
        // waited for, and the session-end hook given time on a busy machine.
        .env("ENABLE_TOOL_SEARCH", "false")
        .env("CLAUDE_CODE_MCP_STARTUP_WAIT_MS", "120000")
        .env("CLAUDE_CODE_SESSIONEND_HOOKS_TIMEOUT_MS", "60000")
        .args([
            "-p",
            "/skill-evolve:status",
            "--output-format",
            "stream-json",
        ])
        .args(["--verbose", "--model", "claude-scripted", "--plugin-dir"])
        .arg(plugin_dir())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let events = events(&stdout);

    // The session loaded the plugin: its commands, and its MCP server connected.
    let init = events
        .iter()
        .find(|e| e["type"] == "system" && e["subtype"] == "init")
        .unwrap_or_else(|| panic!("no init event: {stdout}"));
    let session = init["session_id"].as_str().unwrap().to_owned();
    assert!(
        init["plugins"].as_array().unwrap().iter().any(|p| {
            p["name"] == "skill-evolve"
                && p["path"].as_str().map(PathBuf::from) == Some(plugin_dir())
        }),
        "{init:#}"
    );
    let slash: Vec<&str> = init["slash_commands"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for command in command_names() {
        assert!(slash.contains(&command.as_str()), "{command}: {init:#}");
    }
    assert!(
        init["mcp_servers"].as_array().unwrap().iter().any(|s| {
            s["name"] == "plugin:skill-evolve:skill-evolve" && s["status"] == "connected"
        }),
        "{init:#}"
    );

    // The command's text reached the model, which called the tool; the server answered for
    // this project.
    let seen = model.seen.lock().unwrap().clone();
    assert!(
        seen.iter().any(|r| r
            .body
            .contains("Show the user where their skill-evolve runs are.")),
        "the command's text was not sent"
    );
    for request in &seen {
        assert!(
            request.line.starts_with("POST /v1/messages"),
            "{}",
            request.line
        );
        assert_eq!(request.key, "host-dummy-key");
    }
    let results: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "user")
        .flat_map(|e| e["message"]["content"].as_array().into_iter().flatten())
        .filter(|block| block["type"] == "tool_result")
        .collect();
    assert_eq!(results.len(), 1, "{stdout}");
    assert_ne!(results[0]["is_error"], true, "{stdout}");
    let text = results[0]["content"][0]["text"].as_str().unwrap();
    let status: Value = serde_json::from_str(text).unwrap();
    assert_eq!(status["project"], project.display().to_string(), "{text}");
    assert_eq!(status["runs"], serde_json::json!([]), "{text}");
    let result = events
        .iter()
        .find(|e| e["type"] == "result")
        .unwrap_or_else(|| panic!("no result event: {stdout}"));
    assert_eq!(result["is_error"], false, "{stdout}");
    assert_eq!(
        result["permission_denials"],
        serde_json::json!([]),
        "{stdout}"
    );

    // Its end ran the hook, which recorded the session in the project.
    let record = std::fs::read_to_string(project.join(".skill-evolve/sessions.jsonl"))
        .unwrap_or_else(|e| panic!("no session recorded ({e}); claude said: {stderr}"));
    let lines: Vec<Value> = record
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 1, "{record}");
    assert_eq!(lines[0]["session_id"], session.as_str(), "{record}");
    assert_eq!(lines[0]["cwd"], project.display().to_string(), "{record}");
    let transcript = PathBuf::from(lines[0]["transcript_path"].as_str().unwrap());
    assert!(
        transcript.starts_with(home.join(".claude/projects")) && transcript.is_file(),
        "{record}"
    );

    // And `harvest --recorded` reads exactly that session.
    let out = skill_evolve(&project)
        .env("HOME", &home)
        .args(["harvest", "--source", "claude-code", "--recorded"])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert!(said.contains("\nsessions: 1\n"), "{said}");
    assert!(said.contains(&session), "{said}");
}

/// An agent of the run protocol: `yes` when its skills hold [`crate::fake_llm::QA_RULE`],
/// else `no`.
pub(crate) const RULE_AGENT: &str = r#"read -r line
dir=$(printf '%s' "$line" | sed -n 's/.*"skills_dir":"\([^"]*\)".*/\1/p')
answer=no
if grep -rqF 'RULE qa => yes' "$dir" 2>/dev/null; then answer=yes; fi
printf '{"type":"result","prediction":"%s"}\n' "$answer"
"#;

/// A project of the plugin journey, its Claude Code home and a `PATH` whose `skill-evolve`
/// is the binary under test.
pub(crate) struct PluginProject {
    pub(crate) dir: tempfile::TempDir,
    pub(crate) project: PathBuf,
    pub(crate) home: PathBuf,
    pub(crate) path: std::ffi::OsString,
}

/// `d/project`, `d/home` and `d/bin` (the binary under test as `skill-evolve`).
pub(crate) fn plugin_project() -> PluginProject {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().canonicalize().unwrap();
    let project = d.join("project");
    std::fs::create_dir_all(project.join(".skill-evolve")).unwrap();
    let home = d.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let bin = d.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let program = Path::new(env!("CARGO_BIN_EXE_skill-evolve"));
    #[cfg(unix)]
    std::os::unix::fs::symlink(program, bin.join("skill-evolve")).unwrap();
    #[cfg(not(unix))]
    std::fs::copy(program, bin.join(program.file_name().unwrap())).unwrap();
    let path = std::env::join_paths(std::iter::once(bin).chain(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    )))
    .unwrap();
    PluginProject {
        dir,
        project,
        home,
        path,
    }
}

/// One turn of a headless session in `p.project` with the plugin loaded: `prompt`, resuming
/// `resume` when given, the tools `allowed` allowed beyond what a command allows; the
/// stream-json events, the session's id and its stderr.
fn turn(
    cli: &Path,
    p: &PluginProject,
    model: &crate::host_model::HostModel,
    prompt: &str,
    resume: Option<&str>,
    allowed: &[&str],
) -> (Vec<Value>, String) {
    let mut command = claude(cli, &p.home, &p.path);
    command
        .current_dir(&p.project)
        .env("ANTHROPIC_BASE_URL", &model.origin)
        .env("ANTHROPIC_API_KEY", "host-dummy-key")
        .env("SKILL_EVOLVE_TEST_KEY", "optimizer-secret")
        .env("ENABLE_TOOL_SEARCH", "false")
        .env("CLAUDE_CODE_MCP_STARTUP_WAIT_MS", "120000")
        .env("CLAUDE_CODE_SESSIONEND_HOOKS_TIMEOUT_MS", "60000")
        .args(["-p", prompt, "--output-format", "stream-json"])
        .args(["--verbose", "--model", "claude-scripted", "--plugin-dir"])
        .arg(plugin_dir());
    if let Some(session) = resume {
        command.args(["--resume", session]);
    }
    if !allowed.is_empty() {
        let tools: Vec<String> = allowed
            .iter()
            .map(|t| format!("{}{t}", crate::host_model::PLUGIN_TOOL))
            .collect();
        command.arg("--allowedTools").arg(tools.join(","));
    }
    let out = command.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{prompt}: {stdout}\n{stderr}");
    let events = events(&stdout);
    let result = events
        .iter()
        .find(|e| e["type"] == "result")
        .unwrap_or_else(|| panic!("{prompt}: no result event: {stdout}"));
    assert_eq!(result["is_error"], false, "{prompt}: {stdout}");
    assert_eq!(
        result["permission_denials"],
        serde_json::json!([]),
        "{prompt}: {stdout}"
    );
    let session = result["session_id"].as_str().unwrap().to_owned();
    (events, session)
}

/// The plugin tools a turn called, in order, each with its input and its result's text
/// (asserted not an error).
fn tool_calls(events: &[Value]) -> Vec<(String, Value, String)> {
    let contents = |kind: &str| -> Vec<Value> {
        events
            .iter()
            .filter(|e| e["type"] == kind)
            .flat_map(|e| {
                e["message"]["content"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
            })
            .collect()
    };
    let results = contents("user");
    contents("assistant")
        .iter()
        .filter(|b| b["type"] == "tool_use")
        .map(|call| {
            let result = results
                .iter()
                .find(|r| r["type"] == "tool_result" && r["tool_use_id"] == call["id"])
                .unwrap_or_else(|| panic!("no result for {call}"));
            assert_ne!(result["is_error"], true, "{result}");
            let text = match &result["content"] {
                Value::String(text) => text.clone(),
                other => other[0]["text"].as_str().unwrap_or_default().to_owned(),
            };
            let name = call["name"].as_str().unwrap();
            let name = name
                .strip_prefix(crate::host_model::PLUGIN_TOOL)
                .unwrap_or_else(|| panic!("not a plugin tool: {name}"));
            (name.to_owned(), call["input"].clone(), text)
        })
        .collect()
}

/// The last text the assistant wrote in a turn.
fn last_words(events: &[Value]) -> String {
    events
        .iter()
        .find(|e| e["type"] == "result")
        .and_then(|e| e["result"].as_str())
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn a_claude_code_session_harvests_runs_and_adopts_through_the_plugin() {
    use crate::host_model::{ASK_START, ASK_WRITE, Role, SKILL};
    let Some(cli) = host_cli("claude") else {
        return;
    };
    let p = plugin_project();
    let skill = p.project.join("skills").join(SKILL).join("SKILL.md");
    std::fs::create_dir_all(skill.parent().unwrap()).unwrap();
    let original = format!(
        "---\nname: {SKILL}\ndescription: How to answer questions about the service.\n---\n\
         # Answering\n\nAnswer with one word.\n"
    );
    std::fs::write(&skill, &original).unwrap();
    // The user's earlier sessions of this project, where Claude Code keeps them.
    let sessions = p.home.join(".claude/projects/-earlier-sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    let cwd = p.project.display().to_string();
    for (i, region) in crate::host_journey::REGIONS.iter().enumerate() {
        for copy in 0..2 {
            let n = i * 2 + copy;
            let id = format!("{n:08x}-0000-4000-8000-{n:012x}");
            let request = format!("Is the service available in the {region} region?");
            let text = crate::host_journey::session(&cwd, &id, &request, n);
            std::fs::write(sessions.join(format!("{id}.jsonl")), text).unwrap();
        }
    }
    // The run replays the mined tasks through a shell agent; the optimizer is the fake LLM.
    let optimizer = crate::fake_llm::start_loop();
    let config = crate::run::one_epoch(&crate::run::live_config(&optimizer.base_url))
        .replace("file = \"questions.jsonl\"", "file = \"mined-tasks.jsonl\"")
        .replace("concurrency = 1", "concurrency = 2");
    std::fs::write(p.project.join("evolve.toml"), config).unwrap();
    std::fs::write(p.project.join("agent.sh"), RULE_AGENT).unwrap();
    let model = crate::host_model::start_as(Role::PluginUser);

    // 1. `/skill-evolve:harvest --all`: the command's tool writes the tasks to review.
    let (events, session) = turn(&cli, &p, &model, "/skill-evolve:harvest --all", None, &[]);
    let calls = tool_calls(&events);
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(calls[0].0, "harvest");
    let harvested: Value = serde_json::from_str(&calls[0].2).unwrap();
    let tasks_line = format!(
        "tasks: 14 recurring (seen in at least 2 sessions) mined into {}",
        p.project.join("mined-tasks.jsonl").display()
    );
    assert!(
        harvested["lines"]
            .as_array()
            .unwrap()
            .iter()
            .any(|l| l.as_str() == Some(tasks_line.as_str())),
        "{harvested:#}"
    );
    // Claude Code's own transcript of this very session may be read too (whether it is written
    // yet when the tool runs is Claude Code's affair): every record of it is known.
    for line in ["skipped records: 0", "skipped sessions: 0"] {
        assert!(
            harvested["lines"]
                .as_array()
                .unwrap()
                .contains(&Value::from(line)),
            "{line}: {harvested:#}"
        );
    }
    let mined = std::fs::read_to_string(p.project.join("mined-tasks.jsonl")).unwrap();
    assert_eq!(mined.lines().count(), 14, "{mined}");
    assert!(mined.contains("\"reviewed\":false"), "{mined}");
    // The user reviews them, as the command told them to.
    std::fs::write(
        p.project.join("mined-tasks.jsonl"),
        mined.replace("\"reviewed\":false", "\"reviewed\":true"),
    )
    .unwrap();

    // 2. `/skill-evolve:run`: the dry run first, the run only after the user agrees, followed
    // in the background until it ends.
    let (events, same) = turn(&cli, &p, &model, "/skill-evolve:run", Some(&session), &[]);
    assert_eq!(same, session);
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
    assert!(!p.project.join(".skill-evolve/runs/demo").exists());
    let (events, _) = turn(
        &cli,
        &p,
        &model,
        "yes",
        Some(&session),
        &["run", "run_progress"],
    );
    let calls = tool_calls(&events);
    assert_eq!(calls[0].0, "run", "{calls:?}");
    let started: Value = serde_json::from_str(&calls[0].2).unwrap();
    assert_eq!(started["run"], "demo", "{started:#}");
    assert!(calls.len() >= 2, "{calls:?}");
    for (name, input, _) in &calls[1..] {
        assert_eq!(name, "run_progress");
        assert_eq!(input["job"], started["job"]);
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

    // 3. `/skill-evolve:adopt demo`: the diff, nothing written until the user says yes.
    let (events, _) = turn(
        &cli,
        &p,
        &model,
        "/skill-evolve:adopt demo",
        Some(&session),
        &[],
    );
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
    let (events, _) = turn(&cli, &p, &model, "yes", Some(&session), &["adopt"]);
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
    assert_eq!(
        adopted["adopted"][0]["file"],
        format!("skills/{SKILL}/SKILL.md"),
        "{adopted:#}"
    );
    assert!(
        p.project
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

    // The session itself, every turn's end recorded by the plugin's hook, is harvested whole:
    // every record Claude Code wrote in it is known.
    let out = skill_evolve(&p.project)
        .env("HOME", &p.home)
        .args(["harvest", "--source", "claude-code", "--recorded"])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    for line in [
        "\nsessions: 1\n",
        "\nskipped records: 0\n",
        "\nskipped sessions: 0\n",
    ] {
        assert!(said.contains(line), "{line}: {said}");
    }
    assert!(said.contains(&session), "{said}");
}
