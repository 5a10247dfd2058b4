//! `skill-evolve mcp` checks, when it starts, the hosts its project's run configuration uses
//! (Claude Code as the agent, Codex as the optimizer's model here): what is missing is one line
//! on stderr at once, and the `run` tool starts nothing until it is fixed.

#![cfg(unix)]

use std::io::{BufRead as _, BufReader};
use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

use crate::host_agents::LOGGED_OUT_CLAUDE;
use crate::mcp_lines::Server;

/// A stand-in for `claude` whose login is found.
const LOGGED_IN_CLAUDE: &str =
    "#!/bin/sh\nprintf '{\"loggedIn\": true, \"authMethod\": \"claude.ai\"}\\n'\nexit 0\n";

/// A stand-in for `codex` that finds no login (`codex login status` fails).
const LOGGED_OUT_CODEX: &str = "#!/bin/sh\necho 'Not logged in' >&2\nexit 1\n";

/// A stand-in for `codex` whose login is found.
const LOGGED_IN_CODEX: &str = "#!/bin/sh\necho 'Logged in using ChatGPT'\nexit 0\n";

/// Writes the executable script `text` at `path`.
fn script(path: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::write(path, text).unwrap();
    let mut permissions = std::fs::metadata(path).unwrap().permissions();
    permissions.set_mode(0o755);
    std::fs::set_permissions(path, permissions).unwrap();
}

#[test]
fn the_server_says_at_start_which_host_finds_no_login_and_run_waits_until_it_does() {
    let config = crate::run::CONFIG.replace(
        r#"command = ["sh", "agent.sh"]"#,
        r#"host = { name = "claude-code", cli = "bin/claude" }"#,
    );
    let llm = config.find("[llm]").unwrap();
    let config = format!(
        "{}[llm]\nprovider = \"codex\"\n\n[llm.host]\ncli = \"bin/codex\"\n",
        &config[..llm]
    );
    let dir = crate::run::run_workspace(&config);
    let d = dir.path();
    std::fs::create_dir_all(d.join("bin")).unwrap();
    std::fs::create_dir_all(d.join("home")).unwrap();
    script(&d.join("bin/claude"), LOGGED_OUT_CLAUDE);
    script(&d.join("bin/codex"), LOGGED_OUT_CODEX);
    let home = d.join("home");
    let mut server = Server::start_with(d, |command| {
        command
            .env("HOME", &home)
            .stderr(std::process::Stdio::piped());
        for name in [
            "ANTHROPIC_API_KEY",
            "CLAUDE_CONFIG_DIR",
            "CODEX_HOME",
            "CODEX_API_KEY",
            "OPENAI_API_KEY",
            "XDG_CACHE_HOME",
            "SKILL_EVOLVE_ROLLOUTS_DIR",
        ] {
            command.env_remove(name);
        }
    });
    let stderr = BufReader::new(server.take_stderr().unwrap());
    let (send, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in stderr.lines() {
            let Ok(line) = line else { return };
            if send.send(line).is_err() {
                return;
            }
        }
    });
    let said = lines.recv_timeout(Duration::from_secs(300)).unwrap();
    assert!(said.starts_with("skill-evolve mcp: a run of "), "{said}");
    assert!(said.contains("evolve.toml cannot start here: "), "{said}");
    assert!(said.contains("[agent] host: claude-code: "), "{said}");
    assert!(
        said.contains("is not logged in as a rollout sees it"),
        "{said}"
    );
    assert!(said.contains("[llm] provider: codex: "), "{said}");
    assert!(said.contains("log in once with `codex login`"), "{said}");

    let refused = server.call(1, "run", json!({})).unwrap_err();
    assert!(
        refused.starts_with("the run was not started: "),
        "{refused}"
    );
    assert!(refused.contains("[agent] host: claude-code: "), "{refused}");
    assert!(refused.contains("[llm] provider: codex: "), "{refused}");
    assert!(refused.contains("docs/mcp.md"), "{refused}");
    assert!(!d.join(".skill-evolve/runs/demo").exists());

    // Fixed while the server runs: the next run starts.
    script(&d.join("bin/claude"), LOGGED_IN_CLAUDE);
    script(&d.join("bin/codex"), LOGGED_IN_CODEX);
    let started: Value = serde_json::from_str(&server.call(2, "run", json!({})).unwrap()).unwrap();
    assert!(started["job"].is_u64(), "{started}");
}
