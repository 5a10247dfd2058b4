//! Claude Code's isolation: an empty configuration home per rollout (`CLAUDE_CONFIG_DIR`), so
//! that none of the user's settings, plugins (and their hooks), MCP servers, skills, memory
//! or `CLAUDE.md` is loaded and nothing is written into the user's `~/.claude`; the login is
//! read where the user keeps it (`CLAUDE_SECURESTORAGE_CONFIG_DIR`: the credentials file of the
//! user's configuration home, or the system keychain's entry for it), and nothing else of that
//! home is read. `--no-session-persistence` keeps the session off disk, `--strict-mcp-config`
//! loads no MCP server, and `CLAUDE_CODE_DISABLE_BUNDLED_SKILLS=1` leaves out the skills
//! Claude Code ships. The few it keeps past that switch are turned off one by one
//! ([`hide_bundled_skills`]): `doctor` by `DISABLE_DOCTOR_COMMAND=1`, the rest by the
//! configuration home's `settings.json` (`skillOverrides` set to `"off"`, and the built-in
//! plugin that brings `plugin-authoring` not enabled), so that the host lists only the skills
//! under test.

use std::ffi::OsString;
use std::path::Path;

use crate::error::{IoContext, Result};

use super::{Isolated, Vars};

/// The variable naming Claude Code's configuration home.
const CONFIG_DIR: &str = "CLAUDE_CONFIG_DIR";

/// The variable naming where Claude Code keeps the login (its credentials file or keychain
/// entry); empty means the default home's, as without `CLAUDE_CONFIG_DIR`.
const LOGIN_DIR: &str = "CLAUDE_SECURESTORAGE_CONFIG_DIR";

/// The flags of every rollout.
pub(crate) const FLAGS: [&str; 2] = ["--no-session-persistence", "--strict-mcp-config"];

/// Makes `dir/claude`, the rollout's configuration home, and says how to start the host.
pub(crate) fn isolate(dir: &Path, vars: Vars<'_>) -> Result<Isolated> {
    let config = dir.join("claude");
    std::fs::create_dir(&config).io(|| format!("cannot create {}", config.display()))?;
    // The user's login stays where it is: the user's own setting of where it is kept, else
    // the configuration home the user runs Claude Code with, else the default one.
    let login: OsString = vars(LOGIN_DIR)
        .or_else(|| vars(CONFIG_DIR))
        .unwrap_or_default();
    Ok(Isolated {
        env: vec![
            (CONFIG_DIR.to_owned(), config.clone().into_os_string()),
            (LOGIN_DIR.to_owned(), login),
            ("CLAUDE_CODE_DISABLE_BUNDLED_SKILLS".to_owned(), "1".into()),
            ("DISABLE_DOCTOR_COMMAND".to_owned(), "1".into()),
        ],
        args: FLAGS.map(str::to_owned).to_vec(),
        login: None,
        home: config,
    })
}

/// The skills the pinned Claude Code (2.1.332) lists although its bundled skills are off: read
/// from the CLI's own code, where each is marked to survive that switch or comes from a
/// built-in plugin. `doctor` is turned off by its variable instead.
const KEPT_BUNDLED_SKILLS: [&str; 2] = ["design", "plugin-authoring"];

/// The built-in plugins of the pinned Claude Code that bring a skill (`plugin-authoring`).
const SKILL_PLUGINS: [&str; 1] = ["cc-plugin-plugin-authoring@builtin"];

/// Writes the rollout's `settings.json` in the configuration home `home`: each skill Claude
/// Code keeps past `CLAUDE_CODE_DISABLE_BUNDLED_SKILLS` turned off, unless a skill under test
/// (`under_test`, their names) has its name, and the built-in plugins that bring skills not
/// enabled.
pub(crate) fn hide_bundled_skills(home: &Path, under_test: &[String]) -> Result<()> {
    let overrides: serde_json::Map<String, serde_json::Value> = KEPT_BUNDLED_SKILLS
        .iter()
        .filter(|name| !under_test.iter().any(|skill| skill == *name))
        .map(|name| ((*name).to_owned(), "off".into()))
        .collect();
    let plugins: serde_json::Map<String, serde_json::Value> = SKILL_PLUGINS
        .iter()
        .map(|plugin| ((*plugin).to_owned(), false.into()))
        .collect();
    let settings = serde_json::json!({"skillOverrides": overrides, "enabledPlugins": plugins});
    let path = home.join("settings.json");
    std::fs::write(&path, format!("{settings:#}\n"))
        .io(|| format!("cannot write {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_login_is_read_from_the_users_home_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let none = |_: &str| None;
        let isolated = isolate(dir.path(), &none).unwrap();
        let value = |key: &str| {
            isolated
                .env
                .iter()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.clone())
        };
        assert_eq!(value(CONFIG_DIR), Some(dir.path().join("claude").into()));
        assert_eq!(value(LOGIN_DIR), Some(OsString::new()));
        assert_eq!(isolated.args, FLAGS);
        assert_eq!(value("DISABLE_DOCTOR_COMMAND"), Some("1".into()));
        let own = tempfile::tempdir().unwrap();
        let own_vars = |k: &str| (k == CONFIG_DIR).then(|| OsString::from("/home/u/.claude-work"));
        let isolated = isolate(own.path(), &own_vars).unwrap();
        assert!(
            isolated
                .env
                .contains(&(LOGIN_DIR.to_owned(), "/home/u/.claude-work".into()))
        );
    }

    #[test]
    fn the_kept_bundled_skills_are_off_but_one_named_like_a_skill_under_test() {
        let dir = tempfile::tempdir().unwrap();
        let read = || -> serde_json::Value {
            serde_json::from_str(
                &std::fs::read_to_string(dir.path().join("settings.json")).unwrap(),
            )
            .unwrap()
        };
        hide_bundled_skills(dir.path(), &["answering".to_owned()]).unwrap();
        assert_eq!(
            read(),
            serde_json::json!({
                "skillOverrides": {"design": "off", "plugin-authoring": "off"},
                "enabledPlugins": {"cc-plugin-plugin-authoring@builtin": false},
            })
        );
        hide_bundled_skills(dir.path(), &["design".to_owned()]).unwrap();
        assert_eq!(
            read()["skillOverrides"],
            serde_json::json!({"plugin-authoring": "off"})
        );
    }
}
