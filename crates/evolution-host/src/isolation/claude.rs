//! Claude Code's isolation: an empty configuration home per rollout (`CLAUDE_CONFIG_DIR`), so
//! that none of the user's settings, plugins (and their hooks), MCP servers, skills, memory
//! or `CLAUDE.md` is loaded and nothing is written into the user's `~/.claude`; the login is
//! read where the user keeps it (`CLAUDE_SECURESTORAGE_CONFIG_DIR`: the credentials file of the
//! user's configuration home, or the system keychain's entry for it), and nothing else of that
//! home is read. `--no-session-persistence` keeps the session off disk, `--strict-mcp-config`
//! loads no MCP server, and `CLAUDE_CODE_DISABLE_BUNDLED_SKILLS=1` leaves out the skills
//! Claude Code ships (the few it keeps regardless stay).

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
        ],
        args: FLAGS.map(str::to_owned).to_vec(),
        login: None,
        home: config,
    })
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
        let own = tempfile::tempdir().unwrap();
        let own_vars = |k: &str| (k == CONFIG_DIR).then(|| OsString::from("/home/u/.claude-work"));
        let isolated = isolate(own.path(), &own_vars).unwrap();
        assert!(
            isolated
                .env
                .contains(&(LOGIN_DIR.to_owned(), "/home/u/.claude-work".into()))
        );
    }
}
