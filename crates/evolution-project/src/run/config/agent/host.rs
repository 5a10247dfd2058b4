//! `[agent] host`: Claude Code or Codex as the agent, started through the built-in adapter
//! (`skill-evolve host-agent …`) instead of a program of the user's.
//!
//! `host = "claude-code"` (or `"codex"`) takes every default; the table form
//! `[agent.host]` with `name = "claude-code"` sets the host's options:
//!
//! ```toml
//! [agent.host]
//! name = "claude-code"             # or "codex"
//! cli = "claude"                   # the host's program (PATH or relative to this file)
//! model = "claude-sonnet-4-5"      # the host's --model
//! permission_mode = "default"      # claude-code: --permission-mode
//! allowed_tools = ["Bash(echo:*)"] # claude-code: --allowedTools
//! disallowed_tools = ["WebFetch"]  # claude-code: --disallowedTools
//! sandbox = "read-only"            # codex: --sandbox
//! extra_args = ["--max-turns", "8"]
//! env = "minimal"                  # "inherit" (default) or "minimal": see [`minimal_env`]
//! ```

use std::ops::Range;
use std::path::Path;

use toml::Spanned;

use super::{Source, find_program};

/// The hidden subcommand of `skill-evolve` that speaks the agent protocol for a host.
pub(super) const ADAPTER_SUBCOMMAND: &str = "host-agent";

/// Longest string accepted in an `[agent.host]` setting.
const MAX_SETTING_CHARS: usize = 4096;

/// Most arguments in `extra_args`, `allowed_tools` or `disallowed_tools`.
const MAX_LIST: usize = 256;

/// The agent hosts the adapter can drive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Host {
    ClaudeCode,
    Codex,
}

impl Host {
    fn parse(name: &str) -> Option<Self> {
        match name {
            "claude-code" => Some(Self::ClaudeCode),
            "codex" => Some(Self::Codex),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::ClaudeCode => "claude-code",
            Self::Codex => "codex",
        }
    }

    /// The prefixes of the host's own variables (its login, its model's address, its
    /// settings).
    fn own_prefixes(self) -> &'static [&'static str] {
        match self {
            Self::ClaudeCode => &[
                "ANTHROPIC_",
                "CLAUDE_",
                "DISABLE_",
                "AWS_",
                "CLOUD_ML_",
                "VERTEX_",
            ],
            Self::Codex => &["CODEX_", "OPENAI_"],
        }
    }

    fn default_cli(self) -> &'static str {
        match self {
            Self::ClaudeCode => "claude",
            Self::Codex => "codex",
        }
    }
}

/// The variables a host needs to run and reach its model, whatever it is: where programs
/// and the user's folders are, the language, the temporary and cache folders, the proxy and
/// certificate settings, and where the adapter makes its rollouts.
const HOST_BASICS: [&str; 22] = [
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TZ",
    "TMPDIR",
    "XDG_CACHE_HOME",
    "XDG_CONFIG_HOME",
    "XDG_RUNTIME_DIR",
    "HTTPS_PROXY",
    "HTTP_PROXY",
    "NO_PROXY",
    "https_proxy",
    "http_proxy",
    "no_proxy",
    "SSL_CERT_FILE",
    "NODE_EXTRA_CA_CERTS",
    "SKILL_EVOLVE_ROLLOUTS_DIR",
];

/// What the adapter for a host is started with.
pub(super) struct Adapter {
    /// The arguments after the program (this binary).
    pub(super) args: Vec<String>,
    /// With `env = "minimal"`, the host's own variable prefixes.
    pub(super) minimal: Option<&'static [&'static str]>,
}

/// The names of the variables of `current` a host whose own variables start with one of
/// `prefixes` gets with `env = "minimal"`: [`HOST_BASICS`] and its own variables, except the
/// `hidden` ones (the optimizer's key).
pub(super) fn minimal_env<'a>(
    prefixes: &[&str],
    current: impl IntoIterator<Item = &'a str>,
    hidden: &std::collections::BTreeSet<String>,
) -> std::collections::BTreeSet<String> {
    let mut names: std::collections::BTreeSet<String> =
        HOST_BASICS.iter().map(|n| (*n).to_owned()).collect();
    names.extend(
        current
            .into_iter()
            .filter(|name| prefixes.iter().any(|p| name.starts_with(p)))
            .map(str::to_owned),
    );
    names.retain(|name| !hidden.contains(name));
    names
}

/// The adapter for `host`: its arguments and what of the environment it passes on.
pub(super) fn adapter_args(
    src: &Source<'_>,
    host: &Spanned<toml::Value>,
    base: &Path,
) -> anyhow::Result<Adapter> {
    let span = host.span();
    let err = |problem: String| src.at(span.clone(), problem);
    let table = match host.get_ref() {
        toml::Value::String(name) => {
            let mut table = toml::map::Map::new();
            table.insert("name".to_owned(), toml::Value::String(name.clone()));
            table
        }
        toml::Value::Table(table) => table.clone(),
        other => {
            return Err(err(format!(
                "[agent] host must be \"claude-code\", \"codex\" or an [agent.host] table, not a {}",
                other.type_str()
            )));
        }
    };
    let name = string(&table, "name", &span, src)?.ok_or_else(|| {
        err("[agent.host] name is missing (\"claude-code\" or \"codex\")".to_owned())
    })?;
    let kind = Host::parse(&name).ok_or_else(|| {
        err(format!(
            "[agent.host] name must be \"claude-code\" or \"codex\", not {name:?}"
        ))
    })?;
    let known: &[&str] = match kind {
        Host::ClaudeCode => &[
            "name",
            "cli",
            "model",
            "permission_mode",
            "allowed_tools",
            "disallowed_tools",
            "extra_args",
            "env",
        ],
        Host::Codex => &["name", "cli", "model", "sandbox", "extra_args", "env"],
    };
    if let Some(key) = table.keys().find(|k| !known.contains(&k.as_str())) {
        return Err(err(format!(
            "[agent.host] {key:?} is not a setting of {} (its settings: {})",
            kind.name(),
            known.join(", ")
        )));
    }
    let cli_name =
        string(&table, "cli", &span, src)?.unwrap_or_else(|| kind.default_cli().to_owned());
    let cli = find_program(&cli_name, base).ok_or_else(|| {
        err(format!(
            "[agent.host] cli: program {cli_name:?} not found (not a file, nor on PATH); \
             install {} or name its program with `cli`",
            match kind {
                Host::ClaudeCode => "Claude Code (npm install -g @anthropic-ai/claude-code)",
                Host::Codex => "Codex (npm install -g @openai/codex)",
            }
        ))
    })?;
    // The host runs in its rollout folder: a program named relative to this file is made
    // absolute here.
    let cli = std::path::absolute(&cli).unwrap_or(cli);
    let mut args = vec![ADAPTER_SUBCOMMAND.to_owned(), kind.name().to_owned()];
    args.push("--cli".to_owned());
    args.push(cli.to_string_lossy().into_owned());
    for (key, flag) in [
        ("model", "--model"),
        ("permission_mode", "--permission-mode"),
        ("sandbox", "--sandbox"),
    ] {
        if let Some(value) = string(&table, key, &span, src)? {
            args.push(format!("{flag}={value}"));
        }
    }
    for (key, flag) in [
        ("allowed_tools", "--allowed-tool"),
        ("disallowed_tools", "--disallowed-tool"),
        ("extra_args", "--extra-arg"),
    ] {
        for value in list(&table, key, &span, src)? {
            args.push(format!("{flag}={value}"));
        }
    }
    let minimal = match string(&table, "env", &span, src)?.as_deref() {
        None | Some("inherit") => None,
        Some("minimal") => Some(kind.own_prefixes()),
        Some(other) => {
            return Err(err(format!(
                "[agent.host] env must be \"inherit\" or \"minimal\", not {other:?}"
            )));
        }
    };
    Ok(Adapter { args, minimal })
}

/// The string at `key`, checked: not empty, no NUL, not too long.
fn string(
    table: &toml::map::Map<String, toml::Value>,
    key: &str,
    span: &Range<usize>,
    src: &Source<'_>,
) -> anyhow::Result<Option<String>> {
    match table.get(key) {
        None => Ok(None),
        Some(toml::Value::String(value)) => check_text(key, value, span, src).map(Some),
        Some(other) => Err(src.at(
            span.clone(),
            format!(
                "[agent.host] {key} must be a string, not a {}",
                other.type_str()
            ),
        )),
    }
}

/// The list of strings at `key` (empty when absent), each checked as [`string`]'s.
fn list(
    table: &toml::map::Map<String, toml::Value>,
    key: &str,
    span: &Range<usize>,
    src: &Source<'_>,
) -> anyhow::Result<Vec<String>> {
    let bad = || {
        src.at(
            span.clone(),
            format!("[agent.host] {key} must be a list of strings"),
        )
    };
    let Some(value) = table.get(key) else {
        return Ok(Vec::new());
    };
    let items = value.as_array().ok_or_else(bad)?;
    if items.len() > MAX_LIST {
        return Err(src.at(
            span.clone(),
            format!(
                "[agent.host] {key} has {} items; at most {MAX_LIST}",
                items.len()
            ),
        ));
    }
    items
        .iter()
        .map(|item| {
            let text = item.as_str().ok_or_else(bad)?;
            check_text(key, text, span, src)
        })
        .collect()
}

fn check_text(
    key: &str,
    value: &str,
    span: &Range<usize>,
    src: &Source<'_>,
) -> anyhow::Result<String> {
    let problem = if value.is_empty() {
        Some("is empty")
    } else if value.contains('\0') {
        Some("contains NUL")
    } else if value.chars().count() > MAX_SETTING_CHARS {
        Some("is too long")
    } else {
        None
    };
    match problem {
        Some(problem) => Err(src.at(span.clone(), format!("[agent.host] {key} {problem}"))),
        None => Ok(value.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn args_of(text: &str) -> anyhow::Result<Vec<String>> {
        #[derive(serde::Deserialize)]
        struct Agent {
            host: Spanned<toml::Value>,
        }
        let src = Source {
            path: Path::new("evolve.toml"),
            text,
        };
        let agent: Agent = toml::from_str(text).unwrap();
        adapter_args(&src, &agent.host, Path::new(".")).map(|adapter| adapter.args)
    }

    #[test]
    fn the_table_becomes_the_adapters_arguments() {
        let args = args_of(
            "[host]\nname = \"claude-code\"\ncli = \"/bin/sh\"\nmodel = \"m\"\n\
             allowed_tools = [\"Read\", \"Bash(git log:*)\"]\nextra_args = [\"--max-turns\", \"3\"]\n",
        )
        .unwrap();
        assert_eq!(
            args,
            [
                "host-agent",
                "claude-code",
                "--cli",
                "/bin/sh",
                "--model=m",
                "--allowed-tool=Read",
                "--allowed-tool=Bash(git log:*)",
                "--extra-arg=--max-turns",
                "--extra-arg=3",
            ]
        );
        let codex =
            args_of("[host]\nname = \"codex\"\ncli = \"/bin/sh\"\nsandbox = \"read-only\"\n");
        assert_eq!(codex.unwrap()[4], "--sandbox=read-only");
    }

    #[test]
    fn a_minimal_environment_is_the_basics_and_the_hosts_own_variables() {
        let current = [
            "PATH",
            "ANTHROPIC_API_KEY",
            "CLAUDE_CONFIG_DIR",
            "AWS_PROFILE",
            "GITHUB_TOKEN",
            "OPENAI_API_KEY",
            "EVOLVE_KEY",
        ];
        let hidden = ["ANTHROPIC_API_KEY".to_owned()].into();
        let names = minimal_env(Host::ClaudeCode.own_prefixes(), current, &hidden);
        assert!(names.contains("PATH") && names.contains("HOME"));
        assert!(names.contains("CLAUDE_CONFIG_DIR") && names.contains("AWS_PROFILE"));
        for gone in [
            "ANTHROPIC_API_KEY",
            "GITHUB_TOKEN",
            "OPENAI_API_KEY",
            "EVOLVE_KEY",
        ] {
            assert!(!names.contains(gone), "{gone}");
        }
        let codex = minimal_env(Host::Codex.own_prefixes(), current, &Default::default());
        assert!(codex.contains("OPENAI_API_KEY") && !codex.contains("CLAUDE_CONFIG_DIR"));
    }

    #[test]
    fn wrong_settings_are_refused_with_their_line() {
        let cases = [
            (
                "host = \"cursor\"\n",
                "must be \"claude-code\" or \"codex\"",
            ),
            ("host = 3\n", "not a integer"),
            (
                "[host]\nname = \"codex\"\ncli = \"/bin/sh\"\npermission_mode = \"plan\"\n",
                "\"permission_mode\" is not a setting of codex",
            ),
            (
                "[host]\nname = \"claude-code\"\ncli = \"/no/such/claude\"\n",
                "program \"/no/such/claude\" not found",
            ),
            (
                "[host]\nname = \"claude-code\"\ncli = \"/bin/sh\"\nmodel = \"\"\n",
                "model is empty",
            ),
            (
                "[host]\nname = \"claude-code\"\ncli = \"/bin/sh\"\nallowed_tools = \"Read\"\n",
                "allowed_tools must be a list of strings",
            ),
            (
                "[host]\nname = \"codex\"\ncli = \"/bin/sh\"\nenv = \"none\"\n",
                "env must be \"inherit\" or \"minimal\"",
            ),
        ];
        for (text, needle) in cases {
            let message = args_of(text).unwrap_err().to_string();
            assert!(message.contains(needle), "{text}: {message}");
            assert!(message.contains("evolve.toml"), "{message}");
        }
    }
}
