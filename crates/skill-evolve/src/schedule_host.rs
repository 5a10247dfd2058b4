//! `schedule` for a run whose agent is Claude Code or Codex (`[agent] host`): cron starts the
//! entry with a bare `PATH`, where the host's program (and the Node.js it may need) is not
//! found, so the entry puts the folders of the program found now first on `PATH`; a program
//! not found now is refused, since the scheduled run could not find it either.

use std::path::{Path, PathBuf};

use evolution_project::error::bad_at;

/// The host of a run configuration, and its program found now.
pub(crate) struct ScheduledHost {
    /// `claude-code` or `codex`.
    pub(crate) name: String,
    /// The program, absolute.
    pub(crate) cli: PathBuf,
    /// The folders the entry puts first on `PATH`: the program's, and Node.js's when the
    /// program is a Node.js script.
    pub(crate) path_dirs: Vec<PathBuf>,
}

/// The host `config` names as its agent (`None` when it names none or cannot be read: `run`
/// will say why), its program found on `PATH` or relative to the configuration.
///
/// # Errors
/// The host's program is not found: a bad input naming the configuration.
pub(crate) fn scheduled_host(config: &Path) -> anyhow::Result<Option<ScheduledHost>> {
    let Ok(text) = std::fs::read_to_string(config) else {
        return Ok(None);
    };
    let Ok(table) = text.parse::<toml::Table>() else {
        return Ok(None);
    };
    let Some(host) = table.get("agent").and_then(|agent| agent.get("host")) else {
        return Ok(None);
    };
    let (name, cli) = match host {
        toml::Value::String(name) => (name.clone(), None),
        toml::Value::Table(host) => match host.get("name").and_then(toml::Value::as_str) {
            Some(name) => (
                name.to_owned(),
                host.get("cli")
                    .and_then(toml::Value::as_str)
                    .map(str::to_owned),
            ),
            None => return Ok(None),
        },
        _ => return Ok(None),
    };
    found_host(config, "[agent] host", "[agent.host] cli", name, cli)
}

/// The host `config` names as the optimizer's model (`[llm] provider = "claude-code"` or
/// `"codex"`), its program (`[llm.host] cli`) found on `PATH` or relative to the
/// configuration; `None` for another provider or a configuration that cannot be read.
///
/// # Errors
/// The host's program is not found: a bad input naming the configuration.
pub(crate) fn scheduled_optimizer(config: &Path) -> anyhow::Result<Option<ScheduledHost>> {
    let Ok(text) = std::fs::read_to_string(config) else {
        return Ok(None);
    };
    let Ok(table) = text.parse::<toml::Table>() else {
        return Ok(None);
    };
    let llm = table.get("llm");
    let Some(name) = llm
        .and_then(|llm| llm.get("provider"))
        .and_then(toml::Value::as_str)
    else {
        return Ok(None);
    };
    let cli = llm
        .and_then(|llm| llm.get("host"))
        .and_then(|host| host.get("cli"))
        .and_then(toml::Value::as_str)
        .map(str::to_owned);
    found_host(
        config,
        "[llm] provider",
        "[llm.host] cli",
        name.to_owned(),
        cli,
    )
}

/// The host `name` with its program `cli` (else the host's usual one) found now; `what` and
/// `setting` name where the configuration says so. `None` when `name` is no host.
fn found_host(
    config: &Path,
    what: &str,
    setting: &str,
    name: String,
    cli: Option<String>,
) -> anyhow::Result<Option<ScheduledHost>> {
    let default = match name.as_str() {
        "claude-code" => "claude",
        "codex" => "codex",
        _ => return Ok(None),
    };
    let wanted = cli.unwrap_or_else(|| default.to_owned());
    let base = config.parent().unwrap_or(Path::new("."));
    let Some(found) = find(&wanted, base) else {
        return Err(bad_at(
            config,
            None,
            format!(
                "{what} {name:?}: its program {wanted:?} is not found here (not a file, nor \
                 on PATH), so the scheduled run could not find it either: install it, or set \
                 {setting} to its absolute path"
            ),
        ));
    };
    let cli = std::path::absolute(&found).unwrap_or(found);
    let mut path_dirs = Vec::new();
    if let Some(dir) = cli.parent() {
        path_dirs.push(dir.to_owned());
    }
    if runs_on_node(&cli)
        && let Some(node) = find("node", base)
        && let Some(dir) = node.parent()
        && !path_dirs.iter().any(|d| d == dir)
    {
        path_dirs.push(dir.to_owned());
    }
    Ok(Some(ScheduledHost {
        name,
        cli,
        path_dirs,
    }))
}

/// A program named with a path (relative to `base`) or found on `PATH`.
fn find(name: &str, base: &Path) -> Option<PathBuf> {
    if name.contains('/') {
        let path = base.join(name);
        return path.is_file().then_some(path);
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(name))
            .find(|p| p.is_file())
    })
}

/// Whether `program` is a script started by Node.js (its first line names `node`).
fn runs_on_node(program: &Path) -> bool {
    let Ok(file) = std::fs::File::open(program) else {
        return false;
    };
    let mut head = Vec::new();
    let _ = std::io::Read::read_to_end(&mut std::io::Read::take(file, 256), &mut head);
    head.starts_with(b"#!")
        && head
            .split(|b| *b == b'\n')
            .next()
            .is_some_and(|line| String::from_utf8_lossy(line).contains("node"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hosts_program_is_found_or_refused() {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("evolve.toml");
        std::fs::write(&config, "[agent]\ncommand = [\"x\"]\n").unwrap();
        assert!(scheduled_host(&config).unwrap().is_none());
        std::fs::write(dir.path().join("claude"), "#!/usr/bin/env node\n").unwrap();
        std::fs::write(
            &config,
            "[agent.host]\nname = \"claude-code\"\ncli = \"./claude\"\n",
        )
        .unwrap();
        let host = scheduled_host(&config).unwrap().unwrap();
        assert_eq!(host.name, "claude-code");
        assert!(host.cli.is_absolute() && host.cli.ends_with("claude"));
        assert_eq!(
            host.path_dirs.first(),
            host.cli.parent().map(Path::to_path_buf).as_ref()
        );
        std::fs::write(
            &config,
            "[agent.host]\nname = \"codex\"\ncli = \"./no-such-codex\"\n",
        )
        .unwrap();
        let message = scheduled_host(&config).err().unwrap().to_string();
        assert!(message.contains("is not found here"), "{message}");
    }
}
