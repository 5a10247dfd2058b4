//! `[agent] host`: the whole loop through the real Claude Code and Codex CLIs, their model
//! calls answered by the scripted model of `host_model.rs` on 127.0.0.1.
//!
//! The CLIs are the pinned npm packages `cargo xtask install-prereqs` installs into the tools
//! cache (`host-clis/node_modules/.bin/`, or under `$EVOLUTION_HOST_CLIS_DIR`). Without them
//! a test says so and passes, unless `EVOLUTION_REQUIRE_HOST_CLIS=1` (set by `cargo xtask
//! ci`), which makes it fail.

use std::path::{Path, PathBuf};

use crate::fake_llm::QA_RULE;
use crate::host_model::{SHELL_MARK, SKILL};
use crate::run::{Finished, live_config, one_epoch};
use crate::support::skill_evolve;

/// The installed CLI `program` (`claude` or `codex`), or `None` (after saying why) when it
/// is missing and the tests may skip.
#[expect(clippy::print_stderr, reason = "a skipped test says why")]
pub(crate) fn host_cli(program: &str) -> Option<PathBuf> {
    let var = |key: &str| std::env::var_os(key).filter(|v| !v.is_empty());
    let dir = var("EVOLUTION_HOST_CLIS_DIR")
        .map(PathBuf::from)
        .or_else(|| {
            let tools = var("EVOLUTION_TOOLS_DIR").map(PathBuf::from).or_else(|| {
                let cache = var("XDG_CACHE_HOME")
                    .map(PathBuf::from)
                    .or_else(|| var("HOME").map(|home| PathBuf::from(home).join(".cache")))?;
                Some(cache.join("evolution-kernel").join("tools"))
            })?;
            Some(tools.join("host-clis"))
        });
    let path = dir.map(|dir| dir.join("node_modules/.bin").join(program));
    if let Some(path) = path.filter(|p| p.exists()) {
        return Some(path);
    }
    assert!(
        std::env::var_os("EVOLUTION_REQUIRE_HOST_CLIS").is_none_or(|v| v != "1"),
        "the {program} CLI is not installed and EVOLUTION_REQUIRE_HOST_CLIS=1 requires it: \
         run `cargo xtask install-prereqs`"
    );
    eprintln!(
        "skipped: the {program} CLI is not installed (run `cargo xtask install-prereqs`, or \
         set EVOLUTION_HOST_CLIS_DIR to the folder holding node_modules/.bin/{program})"
    );
    None
}

/// Writes a Codex home's `config.toml` in `dir` whose model provider is the scripted model at
/// `origin`, its key read from `SCRIPTED_MODEL_KEY`.
pub(crate) fn write_codex_config(dir: &Path, origin: &str) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        dir.join("config.toml"),
        format!(
            "model = \"scripted\"\nmodel_provider = \"scripted\"\n\n\
             [model_providers.scripted]\nname = \"scripted\"\nbase_url = \"{origin}/v1\"\n\
             wire_api = \"responses\"\nenv_key = \"SCRIPTED_MODEL_KEY\"\n"
        ),
    )
    .unwrap();
}

/// A project whose Agent Skills folder holds the skill [`SKILL`] without the rule, 14 qa
/// questions whose answer is `yes` (every other one asking for a shell check), and a run
/// configuration with `agent` as its `[agent]` section.
fn project(base_url: &str, agent: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir_all(d.join("skills").join(SKILL)).unwrap();
    std::fs::write(
        d.join("skills").join(SKILL).join("SKILL.md"),
        format!(
            "---\nname: {SKILL}\ndescription: How to answer questions about the service.\n---\n\
             # Answering\n\nAnswer with one word.\n"
        ),
    )
    .unwrap();
    let questions: String = (0..14)
        .map(|i| {
            let extra = if i % 2 == 0 { SHELL_MARK } else { "" };
            format!(
                "{{\"question_id\": \"q{i}\", \"task_type\": \"qa\", \
                 \"question\": \"Is the service available in region {i}? {extra}\", \
                 \"answer\": \"yes\"}}\n"
            )
        })
        .collect();
    std::fs::write(d.join("questions.jsonl"), questions).unwrap();
    let config = one_epoch(&live_config(base_url));
    let start = config.find("[agent]").unwrap();
    let end = config.find("[questions]").unwrap();
    let config = format!("{}{agent}\n{}", &config[..start], &config[end..]);
    std::fs::write(d.join("evolve.toml"), config).unwrap();
    dir
}

/// Names planted in the user's own host configuration and project, none of which a rollout
/// may see.
const PLANTED: [&str; 4] = [
    "user-only-skill",
    "project-only-skill",
    "user-only-mcp",
    "user-agents-skill",
];

/// Plants, under the test's `home` and project `d`, a user skill, a project skill, a user MCP
/// server and a user-level Agent Skills skill, for both hosts (`codex_home` is the user's
/// Codex home, whose `config.toml` is already written).
fn plant_user_configuration(d: &Path, home: &Path, codex_home: Option<&Path>) {
    let skill = |dir: PathBuf, name: &str| {
        std::fs::create_dir_all(dir.join(name)).unwrap();
        std::fs::write(
            dir.join(name).join("SKILL.md"),
            format!("---\nname: {name}\ndescription: The user's {name}.\n---\nUse it always.\n"),
        )
        .unwrap();
    };
    skill(home.join(".claude/skills"), PLANTED[0]);
    skill(d.join(".claude/skills"), PLANTED[1]);
    skill(d.join(".agents/skills"), PLANTED[1]);
    skill(home.join(".agents/skills"), PLANTED[3]);
    std::fs::write(
        home.join(".claude.json"),
        format!(
            "{{\"mcpServers\": {{\"{}\": {{\"command\": \"true\"}}}}}}",
            PLANTED[2]
        ),
    )
    .unwrap();
    if let Some(codex_home) = codex_home {
        skill(codex_home.join("skills"), PLANTED[0]);
        let config = codex_home.join("config.toml");
        let mut text = std::fs::read_to_string(&config).unwrap();
        text.push_str(&format!(
            "\n[mcp_servers.{}]\ncommand = \"true\"\n",
            PLANTED[2]
        ));
        std::fs::write(config, text).unwrap();
    }
}

/// Every file under `dir` (relative paths), none when it does not exist.
fn files_under(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(folder) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        for entry in entries.flatten() {
            if entry.file_type().unwrap().is_dir() {
                stack.push(entry.path());
            } else {
                found.push(
                    entry
                        .path()
                        .strip_prefix(dir)
                        .unwrap()
                        .display()
                        .to_string(),
                );
            }
        }
    }
    found.sort();
    found
}

/// What every host test checks after a run: the rollouts left nothing behind (the rollouts
/// folder under the test's `HOME` is empty, no session was recorded for the project) and no
/// request the host sent its model named anything of the user's own configuration.
fn assert_no_trace_and_nothing_of_the_users(d: &Path, seen: &[crate::host_model::Seen]) {
    let rollouts = d.join("home/.cache/skill-evolve/rollouts");
    assert!(rollouts.is_dir(), "the rollouts ran elsewhere");
    assert_eq!(files_under(&rollouts), Vec::<String>::new());
    assert_eq!(std::fs::read_dir(&rollouts).unwrap().count(), 0);
    assert!(!d.join(".skill-evolve/sessions.jsonl").exists());
    for request in seen {
        for planted in PLANTED {
            assert!(
                !request.body.contains(planted),
                "the host saw {planted}: {}",
                request.body
            );
        }
    }
}

/// Runs the project of `d` to its end with `env` set for the run (and so for the host).
fn run_with(d: &Path, env: &[(&str, &str)]) -> Finished {
    let mut command = skill_evolve(d);
    command
        .env("SKILL_EVOLVE_TEST_KEY", "optimizer-secret")
        .env("HOME", d.join("home"))
        .env_remove("XDG_CACHE_HOME")
        .env_remove("SKILL_EVOLVE_ROLLOUTS_DIR")
        .args(["run", "--config", "evolve.toml"]);
    for (key, value) in env {
        command.env(key, value);
    }
    std::fs::create_dir_all(d.join("home")).unwrap();
    let out = command.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let report = std::fs::read_to_string(d.join(".skill-evolve/runs/demo/report.md")).unwrap();
    Finished {
        stdout,
        stderr,
        report,
    }
}

/// Every trace step of the run log of `d`: (question id, tool name, tool output).
fn traces(d: &Path) -> Vec<(String, String, String)> {
    let db = rusqlite::Connection::open(d.join(".skill-evolve/runs/demo/runlog.sqlite")).unwrap();
    let mut query = db
        .prepare("SELECT question_id, tool_name, tool_output FROM traces ORDER BY id")
        .unwrap();
    query
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// What every host test checks of a finished run: the rule was proposed, gated through the
/// host and accepted, the improved skill is staged, and the host's own tool calls are the
/// recorded steps.
fn assert_evolved_through_the_host(
    d: &Path,
    finished: &Finished,
    load_tool: &str,
    shell_tool: &str,
) {
    finished.assert_summary("1 candidate(s), 1 accepted");
    assert!(
        finished.report.contains("+RULE qa => yes"),
        "{}",
        finished.report
    );
    assert!(
        finished.report.contains("accept_confirmed"),
        "{}",
        finished.report
    );
    let staged =
        std::fs::read_to_string(d.join(format!(".skill-evolve/runs/demo/staged/files/{SKILL}.md")))
            .unwrap();
    assert!(
        staged.starts_with(&format!("---\nname: {SKILL}\n")),
        "{staged}"
    );
    assert!(staged.contains(QA_RULE), "{staged}");
    let steps = traces(d);
    assert!(
        steps.iter().any(|(_, tool, _)| tool == load_tool),
        "no {load_tool} step in {steps:?}"
    );
    let shell: Vec<_> = steps
        .iter()
        .filter(|(_, tool, output)| tool == shell_tool && output.trim_end().ends_with("checked"))
        .collect();
    assert!(!shell.is_empty(), "no shell step in {steps:?}");
    // Only the questions that asked for it ran the shell (even numbers).
    for (question, _, _) in shell {
        let number: usize = question.trim_start_matches('q').parse().unwrap();
        assert_eq!(number % 2, 0, "{question} ran the shell");
    }
}

#[test]
fn the_loop_evolves_a_skill_through_claude_code() {
    let Some(cli) = host_cli("claude") else {
        return;
    };
    let model = crate::host_model::start();
    let optimizer = crate::fake_llm::start_loop();
    let agent = format!(
        "[agent]\nconcurrency = 2\ntimeout_secs = 120\n\
         env = {{ ANTHROPIC_BASE_URL = {:?}, CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC = \"1\", \
         DISABLE_TELEMETRY = \"1\", DISABLE_AUTOUPDATER = \"1\" }}\n\n\
         [agent.host]\nname = \"claude-code\"\ncli = {:?}\nmodel = \"claude-scripted\"\n\
         allowed_tools = [\"Bash(echo:*)\"]\n",
        model.origin,
        cli.display().to_string()
    );
    let dir = project(&optimizer.base_url, &agent);
    let d = dir.path();
    plant_user_configuration(d, &d.join("home"), None);
    let finished = run_with(d, &[("ANTHROPIC_API_KEY", "host-dummy-key")]);
    assert_evolved_through_the_host(d, &finished, "Skill", "Bash");
    let seen = model.seen.lock().unwrap().clone();
    assert!(!seen.is_empty());
    assert_no_trace_and_nothing_of_the_users(d, &seen);
    // Claude Code's own store under the test's HOME holds no session, no project of them.
    let home = d.join("home");
    assert_eq!(
        files_under(&home.join(".claude/projects")),
        Vec::<String>::new()
    );
    assert_eq!(
        files_under(&home.join(".claude/sessions")),
        Vec::<String>::new()
    );
    assert!(!home.join(".claude/history.jsonl").exists());
    for request in &seen {
        assert!(
            request.line.starts_with("POST /v1/messages"),
            "Claude Code called {}",
            request.line
        );
        assert_eq!(request.key, "host-dummy-key", "{}", request.line);
    }
}

#[test]
fn the_loop_evolves_a_skill_through_codex() {
    let Some(cli) = host_cli("codex") else {
        return;
    };
    let model = crate::host_model::start();
    let optimizer = crate::fake_llm::start_loop();
    let home = tempfile::tempdir().unwrap();
    write_codex_config(home.path(), &model.origin);
    let agent = format!(
        "[agent]\nconcurrency = 2\ntimeout_secs = 120\n\n\
         [agent.host]\nname = \"codex\"\ncli = {:?}\nsandbox = \"read-only\"\n",
        cli.display().to_string()
    );
    let dir = project(&optimizer.base_url, &agent);
    let d = dir.path();
    plant_user_configuration(d, &d.join("home"), Some(home.path()));
    let before = files_under(home.path());
    let codex_home = home.path().display().to_string();
    let finished = run_with(
        d,
        &[
            ("CODEX_HOME", &codex_home),
            ("SCRIPTED_MODEL_KEY", "host-dummy-key"),
        ],
    );
    assert_evolved_through_the_host(d, &finished, "exec_command", "exec_command");
    let seen = model.seen.lock().unwrap().clone();
    assert!(!seen.is_empty());
    assert_no_trace_and_nothing_of_the_users(d, &seen);
    // The user's Codex home is as it was: no session, history, log or state of a rollout.
    assert_eq!(files_under(home.path()), before);
    // Only the skill under test was listed: none of the user's, none Codex ships.
    for request in &seen {
        assert!(!request.body.contains("skill-creator"), "{}", request.body);
    }
    for request in &seen {
        assert_eq!(
            request.line, "POST /v1/responses HTTP/1.1",
            "Codex called {}",
            request.line
        );
        assert_eq!(request.key, "Bearer host-dummy-key");
    }
}

#[test]
fn a_host_is_checked_and_shown_by_the_dry_run() {
    let command = r#"command = ["sh", "agent.sh"]"#;
    crate::run::assert_config_refused(
        &crate::run::CONFIG.replace(command, &format!("{command}\nhost = \"codex\"")),
        "has both command and host",
    );
    crate::run::assert_config_refused(
        &crate::run::CONFIG.replace(
            command,
            r#"host = { name = "claude-code", cli = "no-such-claude" }"#,
        ),
        "cli: program \"no-such-claude\" not found",
    );
    crate::run::assert_config_refused(
        &crate::run::CONFIG.replace(command, ""),
        "needs command (your agent program) or host",
    );
    let dir = crate::run::run_workspace(&crate::run::CONFIG.replace(
        command,
        r#"host = { name = "claude-code", cli = "/bin/sh", model = "m" }"#,
    ));
    let out = crate::support::run_config(dir.path(), &["--dry-run"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("host-agent claude-code --cli /bin/sh --model=m"),
        "{stdout}"
    );
}

/// A Claude login as `claude` writes it on Linux (`~/.claude/.credentials.json`).
const CLAUDE_LOGIN: &str = r#"{"claudeAiOauth":{"accessToken":"sk-ant-oat01-test-login","refreshToken":"sk-ant-ort01-test-login","expiresAt":4102444800000,"scopes":["user:inference","user:profile"],"subscriptionType":"pro"}}"#;

#[test]
fn a_claude_code_rollout_uses_the_users_login_and_loads_only_the_skill_under_test() {
    let Some(cli) = host_cli("claude") else {
        return;
    };
    let model = crate::host_model::start();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let home = d.join("home");
    std::fs::create_dir_all(home.join(".claude")).unwrap();
    std::fs::write(home.join(".claude/.credentials.json"), CLAUDE_LOGIN).unwrap();
    plant_user_configuration(d, &home, None);
    let before = files_under(&home.join(".claude"));
    let workspace = d.join("ws");
    std::fs::create_dir_all(workspace.join("skills")).unwrap();
    std::fs::create_dir_all(workspace.join("prompts")).unwrap();
    std::fs::write(
        workspace.join("skills").join(format!("{SKILL}.md")),
        format!("---\nname: {SKILL}\ndescription: How to answer.\n---\n{QA_RULE}\n"),
    )
    .unwrap();
    let request = serde_json::json!({
        "type": "question", "run_id": "r",
        "workspace": {"version": "v1", "dir": workspace, "skills_dir": workspace.join("skills"),
                      "prompts_dir": workspace.join("prompts")},
        "question": {"question_id": "q1", "task_type": "qa",
                     "question": "Is the service available in region 1?"},
    });
    let out = skill_evolve(d)
        .args([
            "host-agent",
            "claude-code",
            "--model",
            "claude-scripted",
            "--cli",
        ])
        .arg(&cli)
        .env("HOME", &home)
        .env_remove("XDG_CACHE_HOME")
        .env_remove("CLAUDE_CONFIG_DIR")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("ANTHROPIC_AUTH_TOKEN")
        .env_remove("CLAUDE_CODE_OAUTH_TOKEN")
        .env("ANTHROPIC_BASE_URL", &model.origin)
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .write_stdin(format!("{request}\n"))
        .timeout(std::time::Duration::from_secs(120))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{out:?}");
    let result: serde_json::Value = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|v| v["type"] == "result")
        .unwrap();
    assert_eq!(result["prediction"], "yes", "{stdout}");
    // The host's start event: the skill under test and nothing else (none of the user's,
    // none Claude Code ships), no MCP server.
    let skills: Vec<&str> = result["host_skills"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(serde_json::Value::as_str)
        .collect();
    assert_eq!(skills, [SKILL], "{stdout}");
    assert_eq!(
        result["host_mcp_servers"],
        serde_json::json!([]),
        "{stdout}"
    );
    // Every model call carried the user's login, read where the user keeps it.
    let seen = model.seen.lock().unwrap().clone();
    assert!(!seen.is_empty());
    for request in &seen {
        assert_eq!(
            request.key, "Bearer sk-ant-oat01-test-login",
            "{}",
            request.line
        );
        for planted in PLANTED {
            assert!(!request.body.contains(planted), "the host saw {planted}");
        }
    }
    // Nothing was written to the user's Claude Code folder, nor left in the rollouts folder.
    assert_eq!(files_under(&home.join(".claude")), before);
    assert_eq!(
        std::fs::read_to_string(home.join(".claude/.credentials.json")).unwrap(),
        CLAUDE_LOGIN
    );
    assert_eq!(
        files_under(&home.join(".cache/skill-evolve/rollouts")),
        Vec::<String>::new()
    );
}

/// A stand-in for `claude` that records its environment and reports no login.
#[cfg(unix)]
pub(crate) const LOGGED_OUT_CLAUDE: &str = "#!/bin/sh\nenv > \"$(dirname \"$0\")/seen-env.txt\"\n\
    printf '{\"loggedIn\": false, \"authMethod\": \"none\"}\\n'\nexit 1\n";

#[cfg(unix)]
#[test]
fn a_run_whose_host_finds_no_login_stops_in_one_line_and_minimal_passes_only_what_it_needs() {
    let command = r#"command = ["sh", "agent.sh"]"#;
    let dir = crate::run::run_workspace(&crate::run::CONFIG.replace(
        command,
        "pass_env = [\"EXTRA_FOR_HOST\"]\n\
         host = { name = \"claude-code\", cli = \"bin/claude\", env = \"minimal\" }",
    ));
    let d = dir.path();
    std::fs::create_dir_all(d.join("bin")).unwrap();
    std::fs::write(d.join("bin/claude"), LOGGED_OUT_CLAUDE).unwrap();
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mut permissions = std::fs::metadata(d.join("bin/claude"))
            .unwrap()
            .permissions();
        permissions.set_mode(0o755);
        std::fs::set_permissions(d.join("bin/claude"), permissions).unwrap();
    }
    std::fs::create_dir_all(d.join("home")).unwrap();
    let out = skill_evolve(d)
        .env("SKILL_EVOLVE_TEST_KEY", "k")
        .env("HOME", d.join("home"))
        .env("GITHUB_TOKEN", "not-for-the-host")
        .env("EXTRA_FOR_HOST", "passed")
        .env("CLAUDE_CODE_SOMETHING", "the-hosts-own")
        .args(["run", "--config", "evolve.toml"])
        .output()
        .unwrap();
    crate::support::assert_one_line_error(&out, "[agent] host: claude-code: ");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("is not logged in as a rollout sees it"),
        "{stderr}"
    );
    assert!(stderr.contains("no question was run"), "{stderr}");
    let env = std::fs::read_to_string(d.join("bin/seen-env.txt")).unwrap();
    assert!(env.contains("EXTRA_FOR_HOST=passed"), "{env}");
    assert!(env.contains("CLAUDE_CODE_SOMETHING=the-hosts-own"), "{env}");
    assert!(env.contains("SKILL_EVOLVE_ROLLOUT=1"), "{env}");
    assert!(env.lines().any(|l| l.starts_with("PATH=")), "{env}");
    assert!(!env.contains("GITHUB_TOKEN"), "{env}");
    assert!(!env.contains("SKILL_EVOLVE_TEST_KEY"), "{env}");
}

/// `run` with Claude Code as both the agent and the optimizer's model (`[llm] provider =
/// "claude-code"`): no API key of the optimizer's, no handoff round, the host's usage in the
/// report.
#[test]
fn claude_code_is_both_the_agent_and_the_optimizer() {
    let Some(cli) = host_cli("claude") else {
        return;
    };
    let model = crate::host_model::start();
    let agent = format!(
        "[agent]\nconcurrency = 2\ntimeout_secs = 120\n\n\
         [agent.host]\nname = \"claude-code\"\ncli = {:?}\nmodel = \"claude-scripted\"\n\
         allowed_tools = [\"Bash(echo:*)\"]\n",
        cli.display().to_string()
    );
    let dir = project("http://127.0.0.1:9/v1", &agent);
    let d = dir.path();
    let config = std::fs::read_to_string(d.join("evolve.toml")).unwrap();
    let start = config.find("[llm]").unwrap();
    let config = format!(
        "{}[llm]\nprovider = \"claude-code\"\n\n[llm.host]\ncli = {:?}\n\
         model = \"claude-scripted-judge\"\nmax_concurrency = 2\n",
        &config[..start],
        cli.display().to_string()
    );
    std::fs::write(d.join("evolve.toml"), config).unwrap();
    let origin = model.origin.clone();
    let finished = run_with(
        d,
        &[
            ("ANTHROPIC_API_KEY", "host-dummy-key"),
            ("ANTHROPIC_BASE_URL", origin.as_str()),
            ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"),
            ("DISABLE_AUTOUPDATER", "1"),
        ],
    );
    assert_evolved_through_the_host(d, &finished, "Skill", "Bash");
    assert!(!d.join(".skill-evolve/runs/demo/handoff").exists());
    let report: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(d.join(".skill-evolve/runs/demo/report.json")).unwrap(),
    )
    .unwrap();
    for field in ["llm_calls", "prompt_tokens", "completion_tokens"] {
        assert!(
            report["usage"][field].as_u64().unwrap() > 0,
            "{field}: {}",
            report["usage"]
        );
    }
    // Claude Code's own cost of each optimizer request (`total_cost_usd`), summed apart from
    // the price table's, in report.json, the usage line and the table.
    let reported = report["usage"]["host_cost_usd"].as_f64().unwrap();
    assert!(reported > 0.0, "{}", report["usage"]);
    assert_eq!(report["usage"]["cost"], 0.0, "{}", report["usage"]);
    let markdown = std::fs::read_to_string(d.join(".skill-evolve/runs/demo/report.md")).unwrap();
    assert!(
        markdown.contains(&format!("${reported:.4} reported by the host")),
        "{markdown}"
    );
    assert!(
        markdown.contains("| cost | host-reported cost (USD) | agent rollouts |"),
        "{markdown}"
    );
    let seen = model.seen.lock().unwrap().clone();
    // The optimizer's requests went through the host with its model, and the host's key.
    assert!(
        seen.iter()
            .any(|r| r.body.contains("\"model\":\"claude-scripted-judge\"")),
        "no optimizer request reached the host's model"
    );
    assert!(seen.iter().all(|r| r.key == "host-dummy-key"));
    assert_no_trace_and_nothing_of_the_users(d, &seen);
}

/// `run` with Codex as both the agent and the optimizer's model (`[llm] provider = "codex"`).
#[test]
fn codex_is_both_the_agent_and_the_optimizer() {
    let Some(cli) = host_cli("codex") else {
        return;
    };
    let model = crate::host_model::start();
    let home = tempfile::tempdir().unwrap();
    write_codex_config(home.path(), &model.origin);
    let agent = format!(
        "[agent]\nconcurrency = 2\ntimeout_secs = 120\n\n\
         [agent.host]\nname = \"codex\"\ncli = {:?}\nsandbox = \"read-only\"\n",
        cli.display().to_string()
    );
    let dir = project("http://127.0.0.1:9/v1", &agent);
    let d = dir.path();
    let config = std::fs::read_to_string(d.join("evolve.toml")).unwrap();
    let start = config.find("[llm]").unwrap();
    let config = format!(
        "{}[llm]\nprovider = \"codex\"\n\n[llm.host]\ncli = {:?}\n",
        &config[..start],
        cli.display().to_string()
    );
    std::fs::write(d.join("evolve.toml"), config).unwrap();
    let before = files_under(home.path());
    let codex_home = home.path().display().to_string();
    let finished = run_with(
        d,
        &[
            ("CODEX_HOME", &codex_home),
            ("SCRIPTED_MODEL_KEY", "host-dummy-key"),
        ],
    );
    assert_evolved_through_the_host(d, &finished, "exec_command", "exec_command");
    assert!(!d.join(".skill-evolve/runs/demo/handoff").exists());
    let report: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(d.join(".skill-evolve/runs/demo/report.json")).unwrap(),
    )
    .unwrap();
    for field in ["llm_calls", "prompt_tokens", "completion_tokens"] {
        assert!(
            report["usage"][field].as_u64().unwrap() > 0,
            "{field}: {}",
            report["usage"]
        );
    }
    // Codex reports no cost: none is shown.
    assert!(
        report["usage"].get("host_cost_usd").is_none(),
        "{}",
        report["usage"]
    );
    let seen = model.seen.lock().unwrap().clone();
    assert!(seen.iter().all(|r| r.key == "Bearer host-dummy-key"));
    assert_no_trace_and_nothing_of_the_users(d, &seen);
    assert_eq!(files_under(home.path()), before);
}
