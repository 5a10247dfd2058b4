//! `[agent]`: the agent program, how it is started and what it may see of the environment.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use evolution_harness::{InheritedEnv, OutputLimits, ProcessMode, Scoring, SubprocessConfig};
use serde::Deserialize;
use toml::Spanned;

use super::*;

mod host;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct AgentSection {
    #[serde(default)]
    command: Option<Spanned<Vec<String>>>,
    /// Claude Code or Codex through the built-in adapter instead of `command`.
    #[serde(default)]
    host: Option<Spanned<toml::Value>>,
    #[serde(default)]
    mode: Mode,
    #[serde(default = "one")]
    concurrency: Spanned<usize>,
    #[serde(default = "ten_minutes")]
    timeout_secs: Spanned<u64>,
    #[serde(default)]
    scoring: ScoringChoice,
    #[serde(default = "unspanned")]
    env: Spanned<BTreeMap<String, String>>,
    #[serde(default = "unspanned")]
    pass_env: Spanned<Vec<String>>,
    #[serde(default)]
    clear_env: bool,
    #[serde(default)]
    max_steps: Option<Spanned<usize>>,
    #[serde(default)]
    max_output_bytes: Option<Spanned<usize>>,
    #[serde(default)]
    max_field_chars: Option<Spanned<usize>>,
}

pub(super) fn one() -> Spanned<usize> {
    Spanned::new(0..0, 1)
}

pub(super) fn ten_minutes() -> Spanned<u64> {
    Spanned::new(0..0, 600)
}

#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum Mode {
    #[default]
    PerQuestion,
    Worker,
}

#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum ScoringChoice {
    #[default]
    ExactMatch,
    AgentReported,
}

/// The agent of `[agent]`, checked: what both `run` and `evolve`'s gate start it with.
#[derive(Debug)]
pub struct AgentSettings {
    /// The agent program (found).
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<String>,
    /// Variables set for the agent.
    env: BTreeMap<String, String>,
    /// What the agent inherits of this program's environment.
    inherit_env: InheritedEnv,
    /// Long-lived workers instead of a process per question.
    worker: bool,
    /// Questions at once.
    concurrency: usize,
    /// Seconds per question.
    timeout_secs: u64,
    /// Trust the agent's own `correct` field.
    pub agent_scores: bool,
    /// The agent's working folder: the configuration's folder (made absolute), so a command
    /// naming a script relative to it finds it wherever the run was started.
    working_dir: PathBuf,
    /// Bounds on what the agent writes per question.
    limits: OutputLimits,
    /// The settings a resumed run must share with its start (see [`Self::resume_settings`]).
    resume: Vec<(&'static str, String)>,
}

/// The largest file of the project folder named by `[agent] command` whose text is part of
/// a run's inputs; a larger one counts by its size.
const AGENT_FILE_LIMIT: u64 = 4 * 1024 * 1024;

impl AgentSettings {
    /// The agent's settings a resumed run must share with its start, each as its key and a
    /// text of its value: the command as written with the SHA-256 of every file of the
    /// project folder it names (the program or an argument), the mode, the timeout, the
    /// scoring, the environment given (`env`, `pass_env`, `clear_env`) and the output bounds.
    /// The concurrency is left out: it changes how fast the answers come, not what they are.
    pub fn resume_settings(&self) -> &[(&'static str, String)] {
        &self.resume
    }

    /// For an agent host (`[agent] host`), asks the adapter whether a rollout could start
    /// here — the host's program runs and finds a login, in the environment the agent gets —
    /// before the first question; nothing to check for an agent program of the user's.
    ///
    /// # Errors
    /// The adapter's one line saying what is missing (a bad input: nothing was run).
    pub fn check_host(&self) -> anyhow::Result<()> {
        match self.host_verdict()? {
            None | Some(Ok(_)) => Ok(()),
            Some(Err(missing)) => Err(crate::error::bad_option(format!(
                "{missing}; no question was run"
            ))),
        }
    }

    /// For an agent host (`[agent] host`), the adapter's verdict on whether a rollout could
    /// start here, in the environment the agent gets: `Ok(line)` how it logs in, `Err(line)`
    /// what is missing, each one line starting with `[agent] host: ` and escaped for a
    /// terminal; `None` for an agent program of the user's, which has nothing to check.
    ///
    /// # Errors
    /// The adapter cannot be started.
    pub fn host_verdict(&self) -> anyhow::Result<Option<Result<String, String>>> {
        if self.args.first().map(String::as_str) != Some(host::ADAPTER_SUBCOMMAND) {
            return Ok(None);
        }
        let mut command = std::process::Command::new(&self.program);
        command.args(&self.args).arg("--check");
        match &self.inherit_env {
            InheritedEnv::AllExcept(hidden) => {
                for name in hidden {
                    command.env_remove(name);
                }
            }
            InheritedEnv::Only(names) => {
                command.env_clear();
                for name in names {
                    if let Some(value) = std::env::var_os(name) {
                        command.env(name, value);
                    }
                }
            }
            // A mode this code does not know: the check runs with the basics only.
            _ => {
                command.env_clear();
                for name in BASIC_ENV {
                    if let Some(value) = std::env::var_os(name) {
                        command.env(name, value);
                    }
                }
            }
        }
        command.envs(&self.env);
        let out = command
            .stdin(std::process::Stdio::null())
            .output()
            .map_err(|e| {
                crate::error::bad_option(format!("[agent] host: cannot start the adapter: {e}"))
            })?;
        let last_line = |bytes: &[u8], otherwise: &str| {
            let said = String::from_utf8_lossy(bytes);
            let line = said
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or(otherwise)
                .to_owned();
            format!("[agent] host: {}", crate::render::terminal_safe(&line))
        };
        Ok(Some(if out.status.success() {
            Ok(last_line(&out.stdout, "ready"))
        } else {
            Err(last_line(&out.stderr, "the host's check failed"))
        }))
    }

    /// The subprocess runner's configuration, each question's folder made under `workspaces`.
    pub fn subprocess_config(&self, workspaces: PathBuf) -> SubprocessConfig {
        SubprocessConfig {
            program: self.program.clone(),
            args: self.args.clone(),
            env: self.env.clone(),
            inherit_env: self.inherit_env.clone(),
            mode: if self.worker {
                ProcessMode::Worker
            } else {
                ProcessMode::PerQuestion
            },
            concurrency: self.concurrency,
            question_timeout: Duration::from_secs(self.timeout_secs),
            scoring: if self.agent_scores {
                Scoring::AgentReported
            } else {
                Scoring::ExactMatch
            },
            workspace_root: Some(workspaces),
            limits: self.limits,
            packages: Vec::new(),
            working_dir: Some(self.working_dir.clone()),
        }
    }
}

/// The `[agent]` section of the run configuration at `path`, checked as `run` checks it, the
/// rest of the file left to `run` (`None` when it has no `[agent]`): what a caller needs to ask
/// the agent's host whether it can start ([`AgentSettings::host_verdict`]) before a run is
/// prepared.
///
/// # Errors
/// A configuration that cannot be read, or whose `[agent]` (or `[llm]`) is not valid.
pub fn load_agent(path: &Path) -> anyhow::Result<Option<AgentSettings>> {
    /// A run configuration's `[agent]` and `[llm]`, its other sections left to `run`.
    #[derive(Deserialize)]
    struct AgentOnly {
        #[serde(default)]
        agent: Option<AgentSection>,
        #[serde(default)]
        llm: LlmSection,
    }
    let text = read_input_text(path, InputKind::RunConfig)?;
    let file: AgentOnly = parse(path, &text)?;
    let Some(agent) = &file.agent else {
        return Ok(None);
    };
    let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let src = Source { path, text: &text };
    check_agent(&src, agent, &file.llm, &base, None).map(Some)
}

/// `[agent]`: the program (found), its concurrency, its timeout, its output bounds and its
/// environment. `hidden_key` names one more variable the agent does not inherit unless
/// `pass_env` names it (the key of an LLM other than the file's own `[llm]`).
pub(super) fn check_agent(
    src: &Source<'_>,
    agent: &AgentSection,
    llm: &LlmSection,
    base: &Path,
    hidden_key: Option<&str>,
) -> anyhow::Result<AgentSettings> {
    let mut host_minimal = None;
    let (program, args, identity) = match (&agent.command, &agent.host) {
        (Some(command), None) => {
            let Some((program, args)) = command.get_ref().split_first() else {
                return Err(src.at(command.span(), "[agent] command is empty".to_owned()));
            };
            let program = find_program(program, base).ok_or_else(|| {
                src.at(
                    command.span(),
                    format!(
                        "[agent] command: program {program:?} not found (not a file, nor on PATH)"
                    ),
                )
            })?;
            (
                program,
                args.to_vec(),
                command_identity(command.get_ref(), base),
            )
        }
        (None, Some(host)) => {
            let adapter = host::adapter_args(src, host, base)?;
            host_minimal = adapter.minimal;
            let args = adapter.args;
            let program = std::env::current_exe().map_err(|e| {
                src.at(
                    host.span(),
                    format!("[agent] host: cannot find this program to start the adapter: {e}"),
                )
            })?;
            // The adapter's arguments name the host, its program and every setting (the
            // environment's mode is part of `[agent] env` below).
            let identity = command_identity(&args, base);
            (program, args, identity)
        }
        (Some(command), Some(_)) => {
            return Err(src.at(
                command.span(),
                "[agent] has both command and host: name your own agent program or a host \
                 (\"claude-code\", \"codex\"), not both"
                    .to_owned(),
            ));
        }
        (None, None) => {
            return Err(src.at(
                0..0,
                "[agent] needs command (your agent program) or host (\"claude-code\" or \
                 \"codex\")"
                    .to_owned(),
            ));
        }
    };
    let concurrency = *agent.concurrency.get_ref();
    if !(1..=64).contains(&concurrency) {
        return Err(src.at(
            agent.concurrency.span(),
            format!("[agent] concurrency must be 1 to 64, not {concurrency}"),
        ));
    }
    let timeout_secs = *agent.timeout_secs.get_ref();
    if timeout_secs == 0 {
        return Err(src.at(
            agent.timeout_secs.span(),
            "[agent] timeout_secs must be at least 1".to_owned(),
        ));
    }
    let mut limits = OutputLimits::default();
    for (key, value, slot) in [
        ("max_steps", &agent.max_steps, &mut limits.max_steps),
        (
            "max_output_bytes",
            &agent.max_output_bytes,
            &mut limits.max_output_bytes,
        ),
        (
            "max_field_chars",
            &agent.max_field_chars,
            &mut limits.max_field_chars,
        ),
    ] {
        if let Some(value) = value {
            if *value.get_ref() == 0 {
                return Err(src.at(value.span(), format!("[agent] {key} must be at least 1")));
            }
            *slot = *value.get_ref();
        }
    }
    let mut inherit_env = agent_environment(src, agent, llm, hidden_key)?;
    if let Some(prefixes) = host_minimal {
        inherit_env = minimal_host_environment(prefixes, agent, &inherit_env);
    }
    let mut pass_env = agent.pass_env.get_ref().clone();
    pass_env.sort();
    let resume = vec![
        ("[agent] command", identity),
        ("[agent] mode", format!("{:?}", agent.mode)),
        ("[agent] timeout_secs", timeout_secs.to_string()),
        ("[agent] scoring", format!("{:?}", agent.scoring)),
        (
            "[agent] env",
            format!(
                "{:?} {pass_env:?} {}{}",
                agent.env.get_ref(),
                agent.clear_env,
                if host_minimal.is_some() {
                    " host-minimal"
                } else {
                    ""
                }
            ),
        ),
        ("[agent] max_steps", limits.max_steps.to_string()),
        (
            "[agent] max_output_bytes",
            limits.max_output_bytes.to_string(),
        ),
        (
            "[agent] max_field_chars",
            limits.max_field_chars.to_string(),
        ),
    ];
    Ok(AgentSettings {
        program,
        args,
        env: agent.env.get_ref().clone(),
        inherit_env,
        worker: matches!(agent.mode, Mode::Worker),
        concurrency,
        timeout_secs,
        agent_scores: matches!(agent.scoring, ScoringChoice::AgentReported),
        working_dir: std::path::absolute(if base.as_os_str().is_empty() {
            Path::new(".")
        } else {
            base
        })
        .unwrap_or_else(|_| base.to_path_buf()),
        limits,
        resume,
    })
}

/// `command` as written, each element that names a file of the project folder `base`
/// (relative to it, or absolute) followed by the SHA-256 of that file's bytes: editing the
/// agent's script changes it, while a program found on `PATH` counts by its name.
fn command_identity(command: &[String], base: &Path) -> String {
    use sha2::{Digest as _, Sha256};
    let project = if base.as_os_str().is_empty() {
        Path::new(".")
    } else {
        base
    };
    let project = project.canonicalize().ok();
    let mut out = String::new();
    for element in command {
        out.push_str(&format!("{element:?}"));
        let file =
            base.join(element).canonicalize().ok().filter(|file| {
                file.is_file() && project.as_ref().is_some_and(|p| file.starts_with(p))
            });
        if let Some(file) = file {
            let size = std::fs::metadata(&file).map_or(0, |m| m.len());
            let bytes = (size <= AGENT_FILE_LIMIT)
                .then(|| std::fs::read(&file).ok())
                .flatten();
            match bytes {
                Some(bytes) => {
                    let digest = Sha256::digest(&bytes);
                    out.push_str(" sha256:");
                    for byte in digest {
                        out.push_str(&format!("{byte:02x}"));
                    }
                }
                None => out.push_str(&format!(" bytes:{size}")),
            }
        }
        out.push('\n');
    }
    out
}

/// What a cleared agent environment (`clear_env = true`) keeps: where programs are, whose
/// home it is, the language and time zone, the temporary folder.
pub const BASIC_ENV: [&str; 9] = [
    "PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR",
];

/// `[agent] env`, `pass_env` and `clear_env` against the `[llm]` key's variable (and
/// `hidden_key`): the variable holding the optimizer's API key never reaches the agent unless
/// named in `pass_env` (or given a value in `env`).
pub(super) fn agent_environment(
    src: &Source<'_>,
    agent: &AgentSection,
    llm: &LlmSection,
    hidden_key: Option<&str>,
) -> anyhow::Result<InheritedEnv> {
    let valid = |name: &str| !name.is_empty() && !name.contains(['=', '\0']);
    if let Some(name) = agent.pass_env.get_ref().iter().find(|n| !valid(n)) {
        return Err(src.at(
            agent.pass_env.span(),
            format!("[agent] pass_env: {name:?} is not a variable name"),
        ));
    }
    if let Some(name) = agent.env.get_ref().keys().find(|n| !valid(n)) {
        return Err(src.at(
            agent.env.span(),
            format!("[agent] env: {name:?} is not a variable name"),
        ));
    }
    let passed: std::collections::BTreeSet<String> =
        agent.pass_env.get_ref().iter().cloned().collect();
    if agent.clear_env {
        let mut names = passed;
        names.extend(BASIC_ENV.iter().map(|n| (*n).to_owned()));
        return Ok(InheritedEnv::Only(names));
    }
    // The variable named by `api_key_env`, or the usual one the key is read from without it.
    let key = llm.key_variable(None);
    let hidden = key
        .into_iter()
        .chain(hidden_key.map(str::to_owned))
        .filter(|name| !passed.contains(name))
        .collect();
    Ok(InheritedEnv::AllExcept(hidden))
}

/// `[agent.host] env = "minimal"`: only what the host needs (its basics and its own variables,
/// never a variable `inherited` holds back) plus `pass_env`; with `clear_env` the host's own
/// variables are not added.
fn minimal_host_environment(
    prefixes: &[&str],
    agent: &AgentSection,
    inherited: &InheritedEnv,
) -> InheritedEnv {
    let current: Vec<String> = std::env::vars_os()
        .filter_map(|(name, _)| name.into_string().ok())
        .collect();
    let mut names = match inherited {
        InheritedEnv::AllExcept(hidden) => {
            host::minimal_env(prefixes, current.iter().map(String::as_str), hidden)
        }
        InheritedEnv::Only(kept) => kept.clone(),
        // A mode this code does not know: the basics only.
        _ => host::minimal_env(&[], std::iter::empty(), &std::collections::BTreeSet::new()),
    };
    names.extend(agent.pass_env.get_ref().iter().cloned());
    InheritedEnv::Only(names)
}

/// A program named with a path (relative to `base`) or found on `PATH`.
pub(super) fn find_program(name: &str, base: &Path) -> Option<PathBuf> {
    if name.contains('/') || name.contains(std::path::MAIN_SEPARATOR) {
        // Absolute: the agent starts in the configuration's folder, which a path relative
        // to this process's would miss.
        let path = base.join(name);
        return path
            .is_file()
            .then(|| std::path::absolute(&path).unwrap_or(path));
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(name))
            .find(|p| p.is_file())
    })
}
