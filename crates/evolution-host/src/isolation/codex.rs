//! Codex's isolation: a configuration home per rollout (`CODEX_HOME`) holding a copy of the
//! user's login (`auth.json`) and a `config.toml` with only the user's model settings (the
//! model, its provider and the provider's definition, the reasoning settings, how the login
//! is kept), so that none of the user's MCP servers, plugins, hooks, rules, skills, memories
//! or `AGENTS.md` is loaded and nothing is written into the user's Codex home. The skills
//! Codex ships and the user's own (`~/.agents/skills`) are turned off in that configuration;
//! `--ephemeral` keeps the session off disk.

use std::path::{Path, PathBuf};

use crate::error::{HostError, IoContext, Result, invalid};

use super::credentials::{copy, write_private};
use super::{Isolated, Vars, home};

/// The flags of every rollout.
pub(crate) const FLAGS: [&str; 1] = ["--ephemeral"];

/// The settings of the user's `config.toml` a rollout keeps: which model answers and how
/// the login is kept, nothing that adds tools, instructions or skills.
const KEPT: [&str; 16] = [
    "model",
    "model_provider",
    "model_providers",
    "model_reasoning_effort",
    "model_reasoning_summary",
    "model_verbosity",
    "model_supports_reasoning_summaries",
    "model_context_window",
    "model_auto_compact_token_limit",
    "model_max_output_tokens",
    "preferred_auth_method",
    "forced_login_method",
    "forced_chatgpt_workspace_id",
    "cli_auth_credentials_store",
    "chatgpt_base_url",
    "openai_base_url",
];

/// Largest `config.toml` read.
const MAX_CONFIG_BYTES: u64 = 1024 * 1024;

/// Most skills of the user's own skills folder turned off (more are refused).
const MAX_USER_SKILLS: usize = 1000;

/// The user's Codex home: `CODEX_HOME`, else `~/.codex`.
fn user_home(vars: Vars<'_>) -> Option<PathBuf> {
    vars("CODEX_HOME")
        .map(PathBuf::from)
        .or_else(|| home(vars).map(|h| h.join(".codex")))
}

/// Makes `dir/codex`, the rollout's Codex home, and says how to start the host.
pub(crate) fn isolate(dir: &Path, vars: Vars<'_>) -> Result<Isolated> {
    let codex_home = dir.join("codex");
    std::fs::create_dir(&codex_home).io(|| format!("cannot create {}", codex_home.display()))?;
    let user = user_home(vars);
    let login = match &user {
        Some(user) => copy(&user.join("auth.json"), &codex_home.join("auth.json"))?,
        None => None,
    };
    let mut config = match &user {
        Some(user) => model_settings(&user.join("config.toml"))?,
        None => toml::Table::new(),
    };
    config.insert("skills".to_owned(), skills_off(vars)?.into());
    let text = toml::to_string(&config).map_err(|e| {
        HostError::Invalid(format!("cannot write the rollout's Codex settings: {e}"))
    })?;
    write_private(&codex_home.join("config.toml"), text.as_bytes())?;
    Ok(Isolated {
        env: vec![("CODEX_HOME".to_owned(), codex_home.clone().into_os_string())],
        args: FLAGS.map(str::to_owned).to_vec(),
        login,
        home: codex_home,
    })
}

/// The [`KEPT`] settings of the user's `config.toml` (none when there is no such file).
fn model_settings(path: &Path) -> Result<toml::Table> {
    let Ok(meta) = std::fs::metadata(path) else {
        return Ok(toml::Table::new());
    };
    if meta.len() > MAX_CONFIG_BYTES {
        invalid!(
            "{} is larger than {MAX_CONFIG_BYTES} bytes; not read",
            path.display()
        );
    }
    let text = std::fs::read_to_string(path).io(|| format!("cannot read {}", path.display()))?;
    let table: toml::Table = text
        .parse()
        .map_err(|e| HostError::Invalid(format!("{} is not valid TOML: {e}", path.display())))?;
    Ok(table
        .into_iter()
        .filter(|(key, _)| KEPT.contains(&key.as_str()))
        .collect())
}

/// `[skills]` turning off the skills Codex ships and each skill of the user's own folder
/// (`~/.agents/skills/<name>/SKILL.md`), by its path.
fn skills_off(vars: Vars<'_>) -> Result<toml::Table> {
    let mut off = Vec::new();
    if let Some(folder) = home(vars).map(|h| h.join(".agents").join("skills"))
        && let Ok(entries) = std::fs::read_dir(&folder)
    {
        for entry in entries.flatten() {
            let skill = entry.path().join("SKILL.md");
            if skill.is_file() {
                if off.len() >= MAX_USER_SKILLS {
                    invalid!(
                        "{} holds more than {MAX_USER_SKILLS} skills; a rollout cannot turn \
                         them all off",
                        folder.display()
                    );
                }
                let mut item = toml::Table::new();
                item.insert(
                    "path".to_owned(),
                    skill.to_string_lossy().into_owned().into(),
                );
                item.insert("enabled".to_owned(), false.into());
                off.push(toml::Value::Table(item));
            }
        }
    }
    let mut bundled = toml::Table::new();
    bundled.insert("enabled".to_owned(), false.into());
    let mut skills = toml::Table::new();
    skills.insert("bundled".to_owned(), bundled.into());
    if !off.is_empty() {
        skills.insert("config".to_owned(), off.into());
    }
    Ok(skills)
}

#[cfg(test)]
mod tests {
    use std::ffi::OsString;

    use super::*;

    #[test]
    fn only_the_login_and_the_model_settings_are_taken() {
        let user = tempfile::tempdir().unwrap();
        let codex = user.path().join(".codex");
        std::fs::create_dir_all(&codex).unwrap();
        std::fs::write(codex.join("auth.json"), r#"{"OPENAI_API_KEY":"k"}"#).unwrap();
        std::fs::write(
            codex.join("config.toml"),
            "model = \"m\"\nmodel_provider = \"p\"\nnotify = [\"x\"]\n\
             [model_providers.p]\nbase_url = \"http://127.0.0.1:1/v1\"\n\
             [mcp_servers.mine]\ncommand = \"mine\"\n",
        )
        .unwrap();
        std::fs::create_dir_all(user.path().join(".agents/skills/mine")).unwrap();
        std::fs::write(user.path().join(".agents/skills/mine/SKILL.md"), "x").unwrap();
        let rollout = tempfile::tempdir().unwrap();
        let home = user.path().as_os_str().to_owned();
        let vars = move |k: &str| (k == "HOME").then(|| home.clone());
        let isolated = isolate(rollout.path(), &vars).unwrap();
        let codex_home = rollout.path().join("codex");
        assert_eq!(
            isolated.env,
            [("CODEX_HOME".to_owned(), OsString::from(&codex_home))]
        );
        assert_eq!(
            std::fs::read_to_string(codex_home.join("auth.json")).unwrap(),
            r#"{"OPENAI_API_KEY":"k"}"#
        );
        let config: toml::Table = std::fs::read_to_string(codex_home.join("config.toml"))
            .unwrap()
            .parse()
            .unwrap();
        let keys: Vec<&str> = config.keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            ["model", "model_provider", "model_providers", "skills"]
        );
        assert_eq!(
            config["skills"]["bundled"]["enabled"].as_bool(),
            Some(false)
        );
        let off = config["skills"]["config"].as_array().unwrap();
        assert_eq!(off.len(), 1);
        assert!(
            off[0]["path"]
                .as_str()
                .unwrap()
                .ends_with(".agents/skills/mine/SKILL.md")
        );
        assert!(isolated.login.is_some());
    }

    #[test]
    fn a_broken_user_configuration_is_named() {
        let user = tempfile::tempdir().unwrap();
        std::fs::write(user.path().join("config.toml"), "model = [").unwrap();
        let rollout = tempfile::tempdir().unwrap();
        let home = user.path().as_os_str().to_owned();
        let vars = move |k: &str| (k == "CODEX_HOME").then(|| home.clone());
        let message = format!("{:#}", isolate(rollout.path(), &vars).err().unwrap());
        assert!(
            message.contains("config.toml is not valid TOML"),
            "{message}"
        );
    }
}
