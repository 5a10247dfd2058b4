//! Whether the hosts a run configuration uses — Claude Code or Codex as its agent (`[agent]
//! host`) or as the optimizer's model (`[llm] provider = "claude-code"` or `"codex"`) — can
//! start here and find a login, each said in one line. A front end that outlives a shell (the
//! MCP server, a scheduled entry) asks it before a run, so that a missing login is said once
//! instead of failing every rollout later.

use std::path::Path;

use evolution_host::Host;

use crate::render::terminal_safe;

/// What a host does for a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum HostRole {
    /// The agent under test (`[agent] host`).
    Agent,
    /// The optimizer's model (`[llm] provider`).
    Optimizer,
}

/// One host's verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostCheck {
    /// What the host does for the run.
    pub role: HostRole,
    /// The host.
    pub host: Host,
    /// `Ok(line)`: how it logs in; `Err(line)`: what is missing. Each one line, starting with
    /// the configuration key (`[agent] host: `, `[llm] provider: `), escaped for a terminal.
    pub verdict: Result<String, String>,
}

impl HostCheck {
    /// Whether the host can start and finds a login.
    pub fn ready(&self) -> bool {
        self.verdict.is_ok()
    }

    /// The verdict's line.
    pub fn line(&self) -> &str {
        match &self.verdict {
            Ok(line) | Err(line) => line,
        }
    }
}

/// Checks every host the run configuration at `path` uses: the agent's as a rollout sees it
/// (`skill-evolve host-agent <host> --check`, in the environment the agent gets), the
/// optimizer's in this process's environment, as its requests will run. Empty when the
/// configuration uses no host. This starts the hosts' status commands: it may take seconds.
///
/// # Errors
/// A configuration that cannot be read, whose `[agent]` or `[llm]` is not valid, a host
/// program that is not found, or a check that cannot be started.
pub fn check_hosts(path: &Path) -> anyhow::Result<Vec<HostCheck>> {
    let mut checks = Vec::new();
    if let Some(agent) = crate::run::config::load_agent(path)?
        && let Some(verdict) = agent.host_verdict()?
    {
        let host = agent_host(&agent.args);
        checks.push(HostCheck {
            role: HostRole::Agent,
            host,
            verdict,
        });
    }
    if let Some(settings) = crate::llm::run_optimizer_host(path)? {
        let verdict = evolution_host::check::check(&settings)?;
        let line = |text: &str| format!("[llm] provider: {}", terminal_safe(text));
        checks.push(HostCheck {
            role: HostRole::Optimizer,
            host: settings.host,
            verdict: verdict
                .map(|ok| line(&ok))
                .map_err(|missing| line(&missing)),
        });
    }
    Ok(checks)
}

/// The host the adapter's arguments (`host-agent <host> …`) name.
fn agent_host(args: &[String]) -> Host {
    match args.get(1).map(String::as_str) {
        Some("codex") => Host::Codex,
        _ => Host::ClaudeCode,
    }
}
