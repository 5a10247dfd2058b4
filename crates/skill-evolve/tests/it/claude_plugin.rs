//! The Claude Code plugin (`plugins/skill-evolve/`) and its marketplace
//! (`.claude-plugin/marketplace.json`) through the real, pinned `claude` CLI: validated with
//! `claude plugin validate --strict`, and loaded with `--plugin-dir` into a headless session
//! (`claude -p`, its model the scripted one of `host_model.rs` on 127.0.0.1) whose end runs the
//! plugin's `SessionEnd` hook, so that `harvest --recorded` reads the session.
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
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().canonicalize().unwrap();
    let project = d.join("project");
    std::fs::create_dir_all(project.join(".skill-evolve")).unwrap();
    let home = d.join("home");
    std::fs::create_dir_all(&home).unwrap();
    // The plugin's hook and MCP server run `skill-evolve` from PATH: the binary under test.
    let bin = d.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let program = Path::new(env!("CARGO_BIN_EXE_skill-evolve"));
    #[cfg(unix)]
    std::os::unix::fs::symlink(program, bin.join("skill-evolve")).unwrap();
    #[cfg(not(unix))]
    std::fs::copy(program, bin.join(program.file_name().unwrap())).unwrap();
    let path = std::env::join_paths(std::iter::once(bin.clone()).chain(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    )))
    .unwrap();

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
