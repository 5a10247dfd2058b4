//! The hosts the project's run configuration uses — Claude Code or Codex as its agent (`[agent]
//! host`) or as the optimizer's model (`[llm] provider`) — checked when the server starts, as
//! `skill-evolve host-agent <host> --check` checks them: whether the program runs and finds a
//! login in the environment the host gave this server. What is missing is said in one line on
//! stderr at once, and again by the `run` tool, which starts no run until it is fixed, instead
//! of a run failing every rollout later with the host's own "Not logged in".

use std::path::{Path, PathBuf};

use evolution_project::host_check::{HostCheck, check_hosts};
use tokio::sync::watch;

/// The check made at start: of which configuration, and its verdicts (or why it could not be
/// made).
#[derive(Debug, Clone)]
struct StartCheck {
    config: PathBuf,
    checks: Result<Vec<HostCheck>, String>,
}

/// Where the check made at start is.
#[derive(Debug, Clone)]
enum State {
    /// Still running.
    Pending,
    /// Done; `None` when the project had no run configuration to check.
    Done(Option<StartCheck>),
}

/// The hosts' check made at start, shared by the tools.
#[derive(Debug, Clone)]
pub(crate) struct Hosts {
    start: watch::Receiver<State>,
}

impl Hosts {
    /// Checks the hosts of `config` (the project's run configuration, when it has one) in the
    /// background, saying the verdict on stderr when it is known. Needs a Tokio runtime.
    pub(crate) fn check_at_start(config: Option<PathBuf>) -> Self {
        let (send, start) = watch::channel(State::Pending);
        let Some(config) = config else {
            let _ = send.send(State::Done(None));
            return Self { start };
        };
        tokio::spawn(async move {
            let checks = check(config.clone()).await;
            if let Some(line) = start_line(&config, &checks) {
                say(&line);
            }
            let _ = send.send(State::Done(Some(StartCheck { config, checks })));
        });
        Self { start }
    }

    /// Whether a run of `config` may start: its hosts (none, or each ready) — the start's
    /// verdict when it was of `config` and every host was ready, else checked again now (a
    /// login fixed since the start counts).
    ///
    /// # Errors
    /// What is missing, in one line, for the client.
    pub(crate) async fn ready_for(&self, config: &Path) -> Result<(), String> {
        let mut start = self.start.clone();
        let done = start
            .wait_for(|state| matches!(state, State::Done(_)))
            .await
            .map(|state| state.clone())
            .unwrap_or(State::Done(None));
        if let State::Done(Some(StartCheck {
            config: checked,
            checks: Ok(checks),
        })) = &done
            && checked == config
            && checks.iter().all(HostCheck::ready)
        {
            return Ok(());
        }
        let checks = check(config.to_path_buf())
            .await
            .map_err(|e| format!("the run was not started: its hosts could not be checked: {e}"))?;
        let missing: Vec<&str> = checks
            .iter()
            .filter(|c| !c.ready())
            .map(HostCheck::line)
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        Err(format!(
            "the run was not started: {}. The server and its runs see only the environment \
             the host started it with (docs/mcp.md lists what it must pass); fix this and \
             call run again",
            missing.join("; ")
        ))
    }
}

/// The hosts of `config`, checked away from the async threads (the hosts' status commands
/// take seconds).
async fn check(config: PathBuf) -> Result<Vec<HostCheck>, String> {
    tokio::task::spawn_blocking(move || check_hosts(&config))
        .await
        .map_err(|e| format!("the check stopped: {e}"))?
        .map_err(|e| format!("{e:#}").replace('\n', " "))
}

/// The line said on stderr at start: every host's verdict, or why none could be made; `None`
/// when the configuration uses no host.
fn start_line(config: &Path, checks: &Result<Vec<HostCheck>, String>) -> Option<String> {
    let shown = config.display();
    match checks {
        Ok(checks) if checks.is_empty() => None,
        Ok(checks) if checks.iter().all(HostCheck::ready) => Some(format!(
            "skill-evolve mcp: the hosts of {shown} are ready: {}",
            lines(checks)
        )),
        Ok(checks) => Some(format!(
            "skill-evolve mcp: a run of {shown} cannot start here: {}",
            lines(checks)
        )),
        Err(e) => Some(format!(
            "skill-evolve mcp: the hosts of {shown} could not be checked: {e}"
        )),
    }
}

/// Every verdict's line, the missing ones first, joined on one line.
fn lines(checks: &[HostCheck]) -> String {
    let mut ordered: Vec<&HostCheck> = checks.iter().collect();
    ordered.sort_by_key(|c| c.ready());
    ordered
        .iter()
        .map(|c| c.line())
        .collect::<Vec<_>>()
        .join("; ")
}

/// Writes `line` on stderr, the one place the server may say something outside the protocol.
#[expect(
    clippy::print_stderr,
    reason = "stdout is the protocol's; stderr is the host's log"
)]
fn say(line: &str) {
    eprintln!("{}", evolution_project::render::terminal_safe(line));
}
