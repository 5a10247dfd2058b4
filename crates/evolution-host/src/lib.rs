//! Claude Code and Codex driven headless, each run in a rollout folder of its own.
//!
//! The same host adapter serves the protocol agent (`[agent] host = …`: [`agent`] installs the
//! version under test where the host reads skills and turns the host's event stream into trace
//! steps), the optimizer's model (`[llm] provider = "claude-code"` or `"codex"`: [`HostLlm`]
//! answers each chat request with one headless run) and the login check ([`check`]). Every run
//! is isolated (the private module `isolation`): a fresh folder outside every project, the host's own configuration home beside it with only what it
//! needs to log in, no user plugins, MCP servers or skills, no session kept in the user's
//! history, and the process marked with [`ROLLOUT_MARK`] so that a session-end hook or a
//! harvest that meets it skips it.

use std::path::{Path, PathBuf};

pub mod agent;
pub mod check;
mod claude_code;
mod codex;
mod error;
mod events;
mod install;
mod isolation;
mod provider;

pub use error::{HostError, Result};
pub use isolation::{ROLLOUT_MARK, ROLLOUTS_DIR_VAR, rollouts_root};
pub use provider::HostLlm;

/// The hosts the adapter drives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Host {
    /// Claude Code (`claude`).
    ClaudeCode,
    /// Codex (`codex`).
    Codex,
}

impl Host {
    /// The host's name in configurations and reports (`claude-code`, `codex`).
    pub fn name(self) -> &'static str {
        match self {
            Self::ClaudeCode => "claude-code",
            Self::Codex => "codex",
        }
    }

    /// The credentials a rollout of the host logs in with, in words, the first found winning
    /// as [`check::check`] finds them.
    pub fn credentials(self) -> &'static str {
        match self {
            Self::ClaudeCode => {
                "the login of `claude` in ~/.claude (or in CLAUDE_CONFIG_DIR when set), or \
                 ANTHROPIC_API_KEY"
            }
            Self::Codex => {
                "the key variable (env_key) of the model provider your Codex config.toml \
                 names, else CODEX_API_KEY or OPENAI_API_KEY, else the login of `codex login` \
                 in ~/.codex (or in CODEX_HOME when set)"
            }
        }
    }
}

/// How a host is started: its program and the flags the run configuration chose.
#[derive(Debug, Clone)]
pub struct HostSettings {
    /// The host.
    pub host: Host,
    /// The host's program.
    pub cli: PathBuf,
    /// The host's model.
    pub model: Option<String>,
    /// Claude Code's permission mode.
    pub permission_mode: Option<String>,
    /// Codex's sandbox.
    pub sandbox: Option<String>,
    /// Tools Claude Code may use without asking.
    pub allowed_tools: Vec<String>,
    /// Tools Claude Code may not use.
    pub disallowed_tools: Vec<String>,
    /// More arguments for the host's CLI, in order.
    pub extra_args: Vec<String>,
}

impl HostSettings {
    /// Settings for `host` started as `cli`, with the host's own defaults for the rest.
    pub fn new(host: Host, cli: impl Into<PathBuf>) -> Self {
        Self {
            host,
            cli: cli.into(),
            model: None,
            permission_mode: None,
            sandbox: None,
            allowed_tools: Vec::new(),
            disallowed_tools: Vec::new(),
            extra_args: Vec::new(),
        }
    }
}

/// A program named with a path (relative to `base`) or found on `PATH`: the file, or `None`.
pub fn find_program(name: &str, base: &Path) -> Option<PathBuf> {
    if name.contains('/') || name.contains(std::path::MAIN_SEPARATOR) {
        let path = base.join(name);
        return path.is_file().then_some(path);
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(name))
            .find(|p| p.is_file())
    })
}
