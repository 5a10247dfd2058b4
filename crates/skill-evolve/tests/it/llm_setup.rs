//! Naming the model: the usual key variable without `api_key_env` (and a
//! refused key names the variable, never the key), the offline choices when
//! nothing is configured, and the configuration file found beside the skill
//! or above it, not only in the current folder.

use crate::evolve::{SKILL, workspace};
use crate::support::{assert_one_line_error, skill_evolve};

/// The key the tests put in `OPENAI_API_KEY`.
const KEY: &str = "sk-test-openai-0123456789";

/// A server that refuses every call, saying which key it saw.
fn refusing(_body: &str, auth: &str) -> (u16, String) {
    let seen = if auth.contains(KEY) {
        "the test key"
    } else if auth.is_empty() {
        "no key"
    } else {
        "another key"
    };
    (
        401,
        serde_json::json!({"error": {"message": format!("Incorrect API key ({seen})")}})
            .to_string(),
    )
}

fn evolve_against(d: &std::path::Path, base_url: &str) -> assert_cmd::Command {
    let mut cmd = skill_evolve(d);
    cmd.args(["evolve", "skill/SKILL.md", "--trajectories", "temp"])
        .args(["--base-url", base_url, "--model", "m"]);
    cmd
}

#[test]
fn openai_api_key_is_used_without_api_key_env_and_a_401_names_the_variable() {
    let dir = workspace(SKILL);
    let d = dir.path();
    let base_url = crate::fake_llm::start_raw(refusing);
    let out = evolve_against(d, &base_url)
        .env("OPENAI_API_KEY", KEY)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("Incorrect API key (the test key)"),
        "{stderr}"
    );
    assert!(
        stderr.contains("read from the environment variable OPENAI_API_KEY"),
        "{stderr}"
    );
    assert!(
        !stderr.contains(KEY),
        "the key itself is never shown: {stderr}"
    );
    assert!(!String::from_utf8_lossy(&out.stdout).contains(KEY));

    // `--api-key-env` still wins, and is the variable named.
    let out = evolve_against(d, &base_url)
        .env("OPENAI_API_KEY", KEY)
        .env("SKILL_EVOLVE_TEST_OTHER_KEY", "sk-test-other-0123456789")
        .args(["--api-key-env", "SKILL_EVOLVE_TEST_OTHER_KEY"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("(another key)"), "{stderr}");
    assert!(
        stderr.contains("environment variable SKILL_EVOLVE_TEST_OTHER_KEY"),
        "{stderr}"
    );
}

#[test]
fn without_any_key_variable_a_401_says_no_key_was_sent() {
    let dir = workspace(SKILL);
    let d = dir.path();
    let base_url = crate::fake_llm::start_raw(refusing);
    let out = evolve_against(d, &base_url).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("Incorrect API key (no key)"), "{stderr}");
    assert!(stderr.contains("no API key was sent"), "{stderr}");
}

#[test]
fn with_no_model_configured_the_error_names_the_offline_choices() {
    let dir = workspace(SKILL);
    let d = dir.path();
    let out = skill_evolve(d)
        .args(["evolve", "skill/SKILL.md", "--trajectories", "temp"])
        .output()
        .unwrap();
    assert_one_line_error(&out, "no LLM is configured");
    assert_one_line_error(&out, "--provider local");
    assert_one_line_error(&out, "--provider replay --cassette FILE");

    // `run` names what to write in its configuration instead of flags.
    let config = crate::run::CONFIG.replace(
        "[llm]\nprovider = \"openai\"\n\n[llm.openai]\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"m\"\napi_key_env = \"SKILL_EVOLVE_TEST_KEY\"\n",
        "",
    );
    assert!(!config.contains("[llm"), "{config}");
    let dir = crate::run::run_workspace(&config);
    let out = skill_evolve(dir.path())
        .args(["run", "--config", "evolve.toml", "--dry-run"])
        .output()
        .unwrap();
    assert_one_line_error(&out, "no LLM is configured");
    assert_one_line_error(&out, "provider = \"local\"");
}

#[test]
fn the_configuration_is_found_beside_the_skill_and_above_it() {
    let dir = workspace(SKILL);
    let d = dir.path();
    // The file sits above the skill's folder; the command runs elsewhere.
    std::fs::write(
        d.join("skill-evolve.toml"),
        "[llm.openai]\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"m\"\n\
         api_key_env = \"SKILL_EVOLVE_TEST_NO_SUCH_KEY\"\n",
    )
    .unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let skill = d.join("skill/SKILL.md");
    let out = skill_evolve(elsewhere.path())
        .arg("-v")
        .args(["evolve", skill.to_str().unwrap(), "--trajectories"])
        .arg(d.join("temp"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("SKILL_EVOLVE_TEST_NO_SUCH_KEY (api_key_env) is not set"),
        "{stderr}"
    );
    // `-v` says which file was read.
    let read = d.join("skill-evolve.toml");
    assert!(
        stderr.contains(&format!("configuration: {}", read.display())),
        "{stderr}"
    );
}

#[test]
fn run_finds_evolve_toml_in_a_parent_folder() {
    let dir = crate::run::run_workspace(crate::run::CONFIG);
    let d = dir.path();
    std::fs::create_dir_all(d.join("skills/deeper")).unwrap();
    let out = skill_evolve(&d.join("skills/deeper"))
        .env("SKILL_EVOLVE_TEST_KEY", "k")
        .args(["run", "--dry-run"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("run \"demo\""), "{stdout}");

    let nowhere = tempfile::tempdir().unwrap();
    let out = skill_evolve(nowhere.path())
        .args(["run", "--dry-run"])
        .output()
        .unwrap();
    assert_one_line_error(&out, "no evolve.toml in this folder or a folder above it");
}

#[test]
fn run_uses_the_default_key_variable_and_keeps_it_from_its_agent() {
    let fake = crate::fake_llm::start_loop();
    let config = crate::run::CONFIG
        .replace("api_key_env = \"SKILL_EVOLVE_TEST_KEY\"\n", "")
        .replace("http://127.0.0.1:9/v1", &fake.base_url);
    assert!(!config.contains("api_key_env"), "{config}");
    let dir = crate::run::run_workspace(&config);
    let d = dir.path();
    std::fs::write(
        d.join("agent.sh"),
        "read -r line\nenv >> env.txt\nprintf '{\"type\":\"result\",\"prediction\":\"unknown\"}\\n'\n",
    )
    .unwrap();
    let out = skill_evolve(d)
        .env("OPENAI_API_KEY", KEY)
        .env("EVOLVE_TEST_OTHER", "other")
        .args(["run", "--config", "evolve.toml"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("(API key from OPENAI_API_KEY)"), "{stdout}");
    let env = std::fs::read_to_string(d.join("env.txt")).unwrap();
    assert!(
        env.contains("EVOLVE_TEST_OTHER=other"),
        "the agent ran: {env}"
    );
    assert!(!env.contains("OPENAI_API_KEY="), "{env}");
    assert!(!env.contains(KEY), "{env}");
}

/// `--provider local` says in its help what the default embedded model is good for.
#[test]
fn the_help_of_provider_local_says_what_quality_to_expect() {
    let dir = tempfile::tempdir().unwrap();
    let out = skill_evolve(dir.path())
        .args(["evolve", "--help"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let help = String::from_utf8_lossy(&out.stdout);
    let local = help
        .split("- local:")
        .nth(1)
        .unwrap_or_else(|| panic!("no `local` value in {help}"));
    let local = local.split("- replay").next().unwrap_or_default();
    let words: Vec<&str> = local.split_whitespace().collect();
    assert!(
        words
            .join(" ")
            .contains("That default is tiny: it shows the loop working offline, but its edits are mostly generic and seldom pass the gate"),
        "{local}"
    );
}
