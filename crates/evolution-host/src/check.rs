//! Whether a run of the host could start here — its program runs and it is logged in, as a
//! rollout sees it (the same isolated configuration, the same environment) — said in one
//! line. `run` asks it (`skill-evolve host-agent <host> --check`) before the first rollout, so
//! a run started by cron or by an MCP host with a bare environment stops at once with what is
//! missing instead of failing every question.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::isolation::{self, Rollout};
use crate::{Host, HostSettings, Result};

/// How long the host's status command may take.
const STATUS_TIMEOUT: Duration = Duration::from_secs(60);

/// Largest output of the status command read.
const MAX_STATUS_BYTES: u64 = 64 * 1024;

/// Checks the host of `args` from a rollout folder of the user's cache: `Ok(Ok(how))` with how
/// it logs in (`claude-code: ready (…)`), `Ok(Err(missing))` with what is missing, each one
/// line starting with the host's name; `Err` when no rollout folder can be made.
pub fn check(args: &HostSettings) -> Result<Result<String, String>> {
    let rollout = Rollout::in_user_cache(args.host)?;
    let verdict = login(args, &rollout, &isolation::process_vars);
    rollout.finish()?;
    Ok(match verdict {
        Ok(how) => Ok(format!(
            "{}: ready ({}; {how})",
            args.host.name(),
            args.cli.display()
        )),
        Err(missing) => Err(format!("{}: {missing}", args.host.name())),
    })
}

/// How the host logs in, or what is missing.
fn login(
    args: &HostSettings,
    rollout: &Rollout,
    vars: isolation::Vars<'_>,
) -> Result<String, String> {
    match args.host {
        Host::ClaudeCode => {
            let (ok, text) = status(&args.cli, &["auth", "status"], rollout)?;
            let method = serde_json::from_str::<serde_json::Value>(&text)
                .ok()
                .and_then(|v| {
                    v.get("authMethod")
                        .and_then(|m| m.as_str())
                        .map(str::to_owned)
                });
            match (ok, method) {
                (true, Some(method)) => Ok(format!("logged in: {method}")),
                (true, None) => Ok("logged in".to_owned()),
                (false, _) => Err(format!(
                    "{} is not logged in as a rollout sees it: log in once with `claude` \
                     (the login in ~/.claude, or in CLAUDE_CONFIG_DIR when you set it, is \
                     used), or pass ANTHROPIC_API_KEY to the host (a host that starts this \
                     program with a bare environment must pass it, and HOME)",
                    args.cli.display()
                )),
            }
        }
        Host::Codex => {
            if let Some(variable) = provider_key(rollout) {
                return if vars(&variable).is_some() {
                    Ok(format!("the model provider's key ${variable}"))
                } else {
                    Err(format!(
                        "the model provider of your Codex config.toml reads its key from \
                         ${variable}, which is not set here: pass it to the host ([agent] \
                         pass_env with env = \"minimal\")"
                    ))
                };
            }
            for variable in ["CODEX_API_KEY", "OPENAI_API_KEY"] {
                if vars(variable).is_some() {
                    return Ok(format!("${variable}"));
                }
            }
            let (ok, _) = status(&args.cli, &["login", "status"], rollout)?;
            if ok {
                Ok("logged in".to_owned())
            } else {
                Err(format!(
                    "{} is not logged in as a rollout sees it: log in once with `codex login` \
                     (auth.json in ~/.codex, or in CODEX_HOME when you set it, is used), or \
                     pass OPENAI_API_KEY to the host (a host that starts this program with a \
                     bare environment must pass it, and HOME)",
                    args.cli.display()
                ))
            }
        }
    }
}

/// The key variable (`env_key`) of the model provider the rollout's Codex configuration
/// names, if it names one with a key variable.
fn provider_key(rollout: &Rollout) -> Option<String> {
    let text = std::fs::read_to_string(rollout.host_home().join("config.toml")).ok()?;
    let config: toml::Table = text.parse().ok()?;
    let provider = config.get("model_provider")?.as_str()?;
    config
        .get("model_providers")?
        .get(provider)?
        .get("env_key")?
        .as_str()
        .map(str::to_owned)
}

/// Runs `cli args` as a rollout would (its folder, its environment): whether it exited 0,
/// and what it printed; `Err` when it cannot start or does not end in time.
fn status(cli: &Path, args: &[&str], rollout: &Rollout) -> Result<(bool, String), String> {
    let mut command = Command::new(cli);
    rollout.apply(&mut command);
    let mut child = command
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", cli.display()))?;
    let stdout = child.stdout.take();
    let reader = std::thread::spawn(move || {
        let mut text = Vec::new();
        if let Some(stdout) = stdout {
            let _ = std::io::Read::read_to_end(
                &mut std::io::Read::take(stdout, MAX_STATUS_BYTES),
                &mut text,
            );
        }
        String::from_utf8_lossy(&text).into_owned()
    });
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() < STATUS_TIMEOUT => {
                std::thread::sleep(Duration::from_millis(50));
            }
            Ok(None) | Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "`{} {}` did not answer within {} s",
                    cli.display(),
                    args.join(" "),
                    STATUS_TIMEOUT.as_secs()
                ));
            }
        }
    };
    let text = reader.join().unwrap_or_default();
    Ok((status.success(), text))
}
