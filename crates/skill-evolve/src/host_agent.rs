//! `skill-evolve host-agent <host>`: Claude Code or Codex as a protocol agent.
//!
//! `run` starts this hidden subcommand when the run configuration says `[agent] host = …`; it
//! hands stdin and stdout to the host adapter ([`evolution_host::agent::serve`]), or with
//! `--check` says in one line whether a rollout of the host could start here.

use std::io::BufReader;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, ValueEnum};
use evolution_host::{Host, HostSettings};

/// The hosts the adapter drives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum HostName {
    /// Claude Code (`claude`).
    ClaudeCode,
    /// Codex (`codex`).
    Codex,
}

/// The adapter's settings, written by `run` from `[agent.host]`.
#[derive(Debug, Args)]
pub(crate) struct HostAgentArgs {
    /// The host to run.
    #[arg(value_enum)]
    host: HostName,
    /// The host's program.
    #[arg(long)]
    cli: PathBuf,
    /// The host's model.
    #[arg(long)]
    model: Option<String>,
    /// Claude Code's permission mode.
    #[arg(long)]
    permission_mode: Option<String>,
    /// Codex's sandbox.
    #[arg(long)]
    sandbox: Option<String>,
    /// A tool Claude Code may use without asking (repeatable).
    #[arg(long = "allowed-tool", allow_hyphen_values = true)]
    allowed_tools: Vec<String>,
    /// A tool Claude Code may not use (repeatable).
    #[arg(long = "disallowed-tool", allow_hyphen_values = true)]
    disallowed_tools: Vec<String>,
    /// One more argument for the host's CLI (repeatable, in order).
    #[arg(long = "extra-arg", allow_hyphen_values = true)]
    extra_args: Vec<String>,
    /// Only check that a rollout could start (the program runs, the login is found) and say
    /// so in one line; exit 1 when not.
    #[arg(long)]
    check: bool,
}

impl HostAgentArgs {
    /// The adapter's settings.
    fn settings(&self) -> HostSettings {
        let host = match self.host {
            HostName::ClaudeCode => Host::ClaudeCode,
            HostName::Codex => Host::Codex,
        };
        let mut settings = HostSettings::new(host, &self.cli);
        settings.model.clone_from(&self.model);
        settings.permission_mode.clone_from(&self.permission_mode);
        settings.sandbox.clone_from(&self.sandbox);
        settings.allowed_tools.clone_from(&self.allowed_tools);
        settings.disallowed_tools.clone_from(&self.disallowed_tools);
        settings.extra_args.clone_from(&self.extra_args);
        settings
    }
}

/// Answers every request on stdin until it ends (or, with `--check`, checks the host).
pub(crate) fn run(args: &HostAgentArgs) -> anyhow::Result<ExitCode> {
    let settings = args.settings();
    if args.check {
        return Ok(match evolution_host::check::check(&settings)? {
            Ok(ready) => {
                println!("{ready}");
                ExitCode::SUCCESS
            }
            Err(missing) => {
                eprintln!("{missing}");
                ExitCode::FAILURE
            }
        });
    }
    let input = BufReader::new(std::io::stdin().lock());
    evolution_host::agent::serve(&settings, input, std::io::stdout().lock())?;
    Ok(ExitCode::SUCCESS)
}
