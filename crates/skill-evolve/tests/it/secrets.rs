//! Secrets stay with the optimizer: the agent of `run` does not get the
//! variable holding the LLM's API key unless the configuration passes it,
//! and a server that echoes the key gets it replaced by `<redacted>` in
//! everything printed or written.

use std::path::Path;

use crate::evolve::evolve_cmd;
use crate::run::{CONFIG, run_workspace};
use crate::support::skill_evolve;

/// The key the tests put in the environment of `skill-evolve`.
const KEY: &str = "sk-test-0123456789abcdef";

/// An agent that appends its environment to `env.txt` and answers `unknown`.
const ENV_AGENT: &str = "read -r line\nenv >> env.txt\n\
                         printf '{\"type\":\"result\",\"prediction\":\"unknown\"}\\n'\n";

/// Runs the loop once with `agent_keys` added to `[agent]`, and returns the
/// variables the agent saw (`NAME=value` lines).
fn agent_environment(agent_keys: &str) -> Vec<String> {
    let fake = crate::fake_llm::start_loop();
    let config = CONFIG
        .replace(
            "timeout_secs = 30\n",
            &format!("timeout_secs = 30\n{agent_keys}\n"),
        )
        .replace("http://127.0.0.1:9/v1", &fake.base_url);
    let dir = run_workspace(&config);
    let d = dir.path();
    std::fs::write(d.join("agent.sh"), ENV_AGENT).unwrap();
    let out = skill_evolve(d)
        .env("SKILL_EVOLVE_TEST_KEY", KEY)
        .env("EVOLVE_TEST_OTHER", "other")
        .args(["run", "--config", "evolve.toml"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    read_env(d)
}

fn read_env(d: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(d.join("env.txt")).unwrap();
    assert!(!text.is_empty(), "the agent never ran");
    text.lines().map(str::to_owned).collect()
}

fn has(env: &[String], line: &str) -> bool {
    env.iter().any(|l| l == line)
}

fn has_name(env: &[String], name: &str) -> bool {
    env.iter().any(|l| l.starts_with(&format!("{name}=")))
}

#[test]
fn the_agent_does_not_get_the_api_key_variable_by_default() {
    let env = agent_environment("");
    assert!(!has_name(&env, "SKILL_EVOLVE_TEST_KEY"), "{env:?}");
    assert!(!env.iter().any(|l| l.contains(KEY)), "{env:?}");
    // Everything else is still inherited.
    assert!(has(&env, "EVOLVE_TEST_OTHER=other"), "{env:?}");
}

#[test]
fn pass_env_hands_the_key_variable_to_the_agent() {
    let env = agent_environment(r#"pass_env = ["SKILL_EVOLVE_TEST_KEY"]"#);
    assert!(
        has(&env, &format!("SKILL_EVOLVE_TEST_KEY={KEY}")),
        "{env:?}"
    );
}

#[test]
fn clear_env_keeps_the_basics_pass_env_and_env_only() {
    let env = agent_environment(
        "clear_env = true\npass_env = [\"EVOLVE_TEST_OTHER\"]\nenv = { AGENT_MODE = \"eval\" }",
    );
    assert!(!has_name(&env, "SKILL_EVOLVE_TEST_KEY"), "{env:?}");
    assert!(!has_name(&env, "NO_COLOR"), "not a basic variable: {env:?}");
    assert!(has(&env, "EVOLVE_TEST_OTHER=other"), "{env:?}");
    assert!(has(&env, "AGENT_MODE=eval"), "{env:?}");
    assert!(has_name(&env, "HOME"), "{env:?}");
    assert!(has_name(&env, "PATH"), "{env:?}");
}

#[test]
fn a_bad_variable_name_in_agent_keys_is_one_line_exit_2() {
    for (keys, needle) in [
        (
            r#"pass_env = ["A=B"]"#,
            r#"evolve.toml:10: [agent] pass_env: "A=B" is not a variable name"#,
        ),
        (
            r#"env = { "" = "x" }"#,
            r#"evolve.toml:10: [agent] env: "" is not a variable name"#,
        ),
    ] {
        let config = CONFIG.replace(
            "timeout_secs = 30\n",
            &format!("timeout_secs = 30\n{keys}\n"),
        );
        let dir = run_workspace(&config);
        let out = skill_evolve(dir.path())
            .env("SKILL_EVOLVE_TEST_KEY", KEY)
            .args(["run", "--config", "evolve.toml", "--dry-run"])
            .output()
            .unwrap();
        crate::support::assert_one_line_error(&out, needle);
    }
}

/// `evolve` against `base_url` with the key in `SKILL_EVOLVE_TEST_KEY`,
/// recording a cassette; asserts that the key is nowhere in its output or
/// files, and returns the output.
fn evolve_against(base_url: &str) -> (tempfile::TempDir, String) {
    let dir = crate::evolve::workspace(crate::evolve::SKILL);
    let d = dir.path();
    let out = skill_evolve(d)
        .env("SKILL_EVOLVE_TEST_KEY", KEY)
        .args(["evolve", "skill/SKILL.md", "--trajectories", "temp"])
        .args([
            "--provider",
            "openai",
            "--base-url",
            base_url,
            "--model",
            "m",
        ])
        .args([
            "--api-key-env",
            "SKILL_EVOLVE_TEST_KEY",
            "--record",
            "run.cassette",
        ])
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!text.contains(KEY), "{text}");
    for (path, bytes) in crate::support::snapshot(d) {
        assert!(
            !String::from_utf8_lossy(&bytes).contains(KEY),
            "the key is in {path}"
        );
    }
    (dir, text)
}

#[test]
fn a_server_error_echoing_the_key_prints_it_redacted() {
    let url = crate::fake_llm::start_raw(|_, auth| {
        let message = format!("malformed header {auth:?}");
        (
            401,
            serde_json::json!({"error": {"message": message}}).to_string(),
        )
    });
    let (_dir, text) = evolve_against(&url);
    // reqwest sends the header name in lower case.
    let lower = text.to_lowercase();
    assert!(
        lower.contains("malformed header \"authorization: bearer <redacted>\""),
        "{text}"
    );
}

#[test]
fn a_reply_echoing_the_key_is_shown_and_kept_redacted() {
    let url = crate::fake_llm::start_raw(|prompt, auth| {
        let content = if prompt.contains("## Known failures") {
            serde_json::json!({"addressed": ["t1", "t2"], "unaddressed": [],
                               "summary": format!("echo {auth}")})
        } else {
            serde_json::json!({"suggestions": [], "reasoning": auth,
                "edits": [{"op": "append", "target": "", "content": "- Check twice.",
                           "reason": "short"}]})
        };
        let body = serde_json::json!({
            "id": "c", "object": "chat.completion", "model": "m",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": content.to_string()}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1}
        });
        (200, body.to_string())
    });
    let (dir, text) = evolve_against(&url);
    let lower = text.to_lowercase();
    assert!(
        lower.contains("echo authorization: bearer <redacted>"),
        "{text}"
    );
    let cassette = std::fs::read_to_string(dir.path().join("run.cassette")).unwrap();
    assert!(cassette.contains("<redacted>"), "{cassette}");
}

#[test]
fn a_key_given_where_its_variable_name_belongs_is_not_echoed() {
    let dir = crate::evolve::workspace(crate::evolve::SKILL);
    let d = dir.path();
    let before = crate::support::snapshot(d);
    let out = evolve_cmd(d)
        .args(["--base-url", "http://127.0.0.1:9/v1", "--model", "m"])
        .args(["--api-key-env", KEY])
        .output()
        .unwrap();
    crate::support::assert_one_line_error(&out, "api_key_env must be the name of");
    assert!(!String::from_utf8_lossy(&out.stderr).contains(KEY));
    assert_eq!(crate::support::snapshot(d), before);
}
