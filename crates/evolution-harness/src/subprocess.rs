//! An [`AgentRunner`] over child processes speaking JSON lines.
//!
//! The protocol is documented in the crate root. Each lane (up to
//! `concurrency`) owns at most one child at a time; a question that fails in
//! any way kills that child, becomes an INFRA outcome, and the lane starts a
//! fresh child for its next question. A question whose request never reached
//! the agent (its program could not be started, or the request could not be
//! written to it) is marked "not started"
//! ([`QuestionOutcome::not_started`]); every other failure counts as the
//! agent's, with the documents it was given.
//!
//! Stopping an agent stops what it started too. The agent leads its own process group, which
//! is killed whole. On Linux its environment also carries a token unique to that agent
//! process (in [`AGENT_TREE_VAR`]), which every descendant inherits, and every process of this
//! user whose starting environment (`/proc/<pid>/environ`) holds the token is killed as well:
//! that reaches a descendant that left the group (`setsid`, a double fork, a daemon). Only a
//! descendant that was started with a cleared or rewritten environment escapes it. Elsewhere
//! (macOS) the process group is all there is.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use evolution_types::{GeneratedQuestion, JsonMap, QuestionOutcome};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

pub use crate::agent_tree::AGENT_TREE_VAR;
use crate::agent_tree::{new_tree_token, tree_value};
use crate::package::SkillPackage;
use crate::runner::{
    AgentReply, AgentRunner, OutputLimits, RunnerError, Scoring, Workspace, check_unique,
};
use crate::workspace_dir::materialize;

/// Characters of a child's stderr kept for error messages (the tail).
const STDERR_TAIL_CHARS: usize = 2000;
/// What precedes the tail of the agent's stderr in an error message.
const STDERR_MARK: &str = "; stderr: ";
/// How long a failed question waits for the rest of the agent's stderr once the agent is
/// gone (the pipe closes at once unless a process that escaped its group still holds it).
const STDERR_DRAIN: Duration = Duration::from_millis(500);
/// Characters of an offending stdout line quoted in an error message.
const LINE_PREVIEW_CHARS: usize = 200;
/// Longest protocol line accepted, in bytes; a longer one is garbage output.
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;
/// How long a per-question child may take to exit after answering.
const EXIT_GRACE: Duration = Duration::from_secs(2);

/// Whether a child serves one question or many.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ProcessMode {
    /// A fresh process per question; its stdin is closed after the request.
    #[default]
    PerQuestion,
    /// A long-lived worker per lane, sent one request after another. It is
    /// replaced after any failed question. Workers stay alive across
    /// [`AgentRunner::run`] calls of the same runner (and its clones), at
    /// most `concurrency` of them, and get end-of-file when the runner is
    /// shut down ([`SubprocessRunner::shutdown`]) or killed when it is
    /// dropped. Each request names its workspace directory, which exists
    /// only during its run: a worker must not cache paths across requests.
    Worker,
}

/// Which variables of this program's own environment an agent starts with.
/// [`SubprocessConfig::env`] is set on top either way.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum InheritedEnv {
    /// Every variable except the named ones (say, the variable holding the
    /// optimizer's API key).
    AllExcept(BTreeSet<String>),
    /// Only the named variables that are set: a cleared environment plus an
    /// allowlist.
    Only(BTreeSet<String>),
}

impl Default for InheritedEnv {
    /// Everything is inherited.
    fn default() -> Self {
        InheritedEnv::AllExcept(BTreeSet::new())
    }
}

/// How to start and supervise the agent program.
#[derive(Debug, Clone)]
pub struct SubprocessConfig {
    /// The program to run.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<String>,
    /// Variables set in the agent's environment, whatever `inherit_env` says.
    pub env: BTreeMap<String, String>,
    /// What the agent inherits of this program's environment (by default, all of it).
    pub inherit_env: InheritedEnv,
    /// One process per question, or long-lived workers.
    pub mode: ProcessMode,
    /// Questions run at once (at least 1).
    pub concurrency: usize,
    /// Time limit of one question, from sending the request to the `result` line.
    pub question_timeout: Duration,
    /// How answers are scored.
    pub scoring: Scoring,
    /// Directory under which workspaces are materialized (system temp when `None`).
    pub workspace_root: Option<PathBuf>,
    /// Bounds on what the agent writes per question.
    pub limits: OutputLimits,
    /// The skills' folders written into each workspace's skills folder (none by default).
    pub packages: Vec<SkillPackage>,
    /// The agent's working folder (this program's when `None`).
    pub working_dir: Option<PathBuf>,
}

impl SubprocessConfig {
    /// Runs `program` once per question, one at a time, with a 10-minute limit.
    pub fn new(program: impl Into<PathBuf>) -> Self {
        SubprocessConfig {
            program: program.into(),
            args: Vec::new(),
            env: BTreeMap::new(),
            inherit_env: InheritedEnv::default(),
            mode: ProcessMode::default(),
            concurrency: 1,
            question_timeout: Duration::from_secs(600),
            scoring: Scoring::default(),
            workspace_root: None,
            limits: OutputLimits::default(),
            packages: Vec::new(),
            working_dir: None,
        }
    }
}

/// Runs an agent program as child processes (see the crate docs for the
/// protocol). Must be driven by a Tokio runtime (it uses `tokio::process`).
#[derive(Clone)]
pub struct SubprocessRunner {
    config: Arc<SubprocessConfig>,
    /// Idle workers kept for the next run ([`ProcessMode::Worker`] only).
    idle: Arc<Mutex<Vec<AgentProcess>>>,
}

impl SubprocessRunner {
    /// A runner with `config`.
    ///
    /// # Errors
    /// [`RunnerError::Config`] for a zero concurrency or a zero timeout.
    pub fn new(config: SubprocessConfig) -> Result<Self, RunnerError> {
        if config.concurrency == 0 {
            return Err(RunnerError::Config {
                field: "concurrency",
                reason: "must be at least 1",
            });
        }
        if config.question_timeout.is_zero() {
            return Err(RunnerError::Config {
                field: "question_timeout",
                reason: "must be positive",
            });
        }
        Ok(SubprocessRunner {
            config: Arc::new(config),
            idle: Arc::new(Mutex::new(Vec::new())),
        })
    }

    /// Number of idle workers kept alive for the next run.
    pub fn idle_workers(&self) -> usize {
        self.idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// Asks every idle worker to exit (end-of-file on its stdin) and kills
    /// the ones still running after a grace period of 2 seconds.
    pub async fn shutdown(&self) {
        let idle = std::mem::take(&mut *self.idle.lock().unwrap_or_else(PoisonError::into_inner));
        for process in idle {
            close(process).await;
        }
    }
}

impl std::fmt::Debug for SubprocessRunner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SubprocessRunner")
            .field("config", &self.config)
            .field("idle_workers", &self.idle_workers())
            .finish()
    }
}

/// Closes a worker's stdin (asking it to exit) and kills it if it lingers; either way its
/// process group goes with it.
async fn close(mut process: AgentProcess) {
    process.stdin = None;
    if tokio::time::timeout(EXIT_GRACE, process.child.wait())
        .await
        .is_err()
    {
        process.kill().await;
    }
    process.kill_group();
}

/// The agent's environment: what `inherit_env` lets through of ours, then `env`.
fn set_environment(command: &mut Command, config: &SubprocessConfig) {
    match &config.inherit_env {
        InheritedEnv::AllExcept(names) => {
            for name in names {
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
    }
    command.envs(&config.env);
}

/// A running child with its pipes. Dropping it kills the child's process group and, on Linux,
/// every process carrying its token.
struct AgentProcess {
    child: Child,
    /// The process group the child leads (its pid, kept: the child forgets it once reaped).
    group: Option<i32>,
    /// The token in the [`AGENT_TREE_VAR`] of the child and everything it starts.
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    token: String,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    stderr_tail: Arc<Mutex<String>>,
    /// The task draining stderr into `stderr_tail`; it ends when the pipe closes.
    stderr_reader: Option<tokio::task::JoinHandle<()>>,
}

impl Drop for AgentProcess {
    fn drop(&mut self) {
        self.kill_group();
    }
}

impl AgentProcess {
    fn spawn(config: &SubprocessConfig) -> Result<Self, String> {
        let mut command = Command::new(&config.program);
        if let Some(dir) = &config.working_dir {
            command.current_dir(dir);
        }
        set_environment(&mut command, config);
        let token = new_tree_token();
        command.env(
            AGENT_TREE_VAR,
            tree_value(config.env.get(AGENT_TREE_VAR), &token),
        );
        command
            .args(&config.args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        // Its own process group, so that whatever it starts can be stopped with it.
        #[cfg(unix)]
        command.process_group(0);
        let mut child = command
            .spawn()
            .map_err(|e| format!("could not start {}: {e}", config.program.display()))?;
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err("the child's pipes were not available".to_owned());
        };
        let stderr_tail = Arc::new(Mutex::new(String::new()));
        let tail = Arc::clone(&stderr_tail);
        // Drain stderr so a chatty agent never blocks on a full pipe; keep the tail.
        let stderr_reader = tokio::spawn(async move {
            let mut stderr = stderr;
            let mut buf = vec![0_u8; 4096];
            while let Ok(n) = stderr.read(&mut buf).await {
                let Some(chunk) = buf.get(..n).filter(|c| !c.is_empty()) else {
                    break;
                };
                let mut tail = tail.lock().unwrap_or_else(PoisonError::into_inner);
                tail.push_str(&String::from_utf8_lossy(chunk));
                let excess = tail.chars().count().saturating_sub(STDERR_TAIL_CHARS);
                if excess > 0 {
                    let cut = tail
                        .char_indices()
                        .nth(excess)
                        .map_or(tail.len(), |(i, _)| i);
                    tail.replace_range(..cut, "");
                }
            }
        });
        let group = child.id().and_then(|id| i32::try_from(id).ok());
        Ok(AgentProcess {
            child,
            group,
            token,
            stdin: Some(stdin),
            stdout: BufReader::new(stdout),
            stderr_tail,
            stderr_reader: Some(stderr_reader),
        })
    }

    /// Kills the agent and the rest of its process group.
    async fn kill(&mut self) {
        self.kill_group();
        let _ = self.child.kill().await;
    }

    /// Sends SIGKILL to the agent's process group: the children it started (which would
    /// otherwise outlive it) as well as the agent; on Linux, then to every process that
    /// carries the agent's token, wherever it moved. Nothing to do once they are gone.
    fn kill_group(&self) {
        #[cfg(unix)]
        if let Some(group) = self.group {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(group),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        crate::agent_tree::kill_carriers(&self.token);
    }

    fn stderr_tail(&self) -> String {
        self.stderr_tail
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .trim()
            .to_owned()
    }

    /// Waits, at most [`STDERR_DRAIN`], until everything the agent wrote on stderr has been
    /// read: the pipe closes once the agent and the processes of its group are gone.
    async fn drain_stderr(&mut self) {
        if let Some(mut reader) = self.stderr_reader.take()
            && tokio::time::timeout(STDERR_DRAIN, &mut reader)
                .await
                .is_err()
        {
            self.stderr_reader = Some(reader);
        }
    }

    /// `message` followed by the tail of what the agent wrote on stderr, when it wrote
    /// anything and `message` does not quote it already. The agent is killed first, so that
    /// its last words are all read (the question failed: it is killed afterwards anyway).
    async fn failed(&mut self, message: String) -> String {
        if message.contains(STDERR_MARK) {
            return message;
        }
        self.kill().await;
        self.drain_stderr().await;
        let tail = self.stderr_tail();
        if tail.is_empty() {
            message
        } else {
            format!("{message}{STDERR_MARK}{tail}")
        }
    }

    /// Why the child is gone, for an error message.
    async fn exit_note(&mut self) -> String {
        let status = match tokio::time::timeout(Duration::from_millis(500), self.child.wait()).await
        {
            Ok(Ok(status)) => format!("exited with {status}"),
            Ok(Err(e)) => format!("exit status unavailable: {e}"),
            Err(_) => "closed its stdout but is still running".to_owned(),
        };
        // Let the stderr reader catch the last words.
        if status.starts_with("exited") {
            self.drain_stderr().await;
        }
        let tail = self.stderr_tail();
        if tail.is_empty() {
            status
        } else {
            format!("{status}{STDERR_MARK}{tail}")
        }
    }

    /// Sends one request and reads until its `result` line, at most `limits`'s
    /// steps and bytes (past them the question fails and reading stops).
    async fn ask(
        &mut self,
        request: &str,
        question_id: &str,
        close_stdin: bool,
        limits: &OutputLimits,
    ) -> Result<(AgentReply, Vec<JsonMap>), AskError> {
        self.send(request, close_stdin)
            .await
            .map_err(AskError::NotDelivered)?;
        self.read_reply(question_id, limits)
            .await
            .map_err(AskError::Failed)
    }

    /// Writes one request line (and closes stdin after it when asked to).
    async fn send(&mut self, request: &str, close_stdin: bool) -> Result<(), String> {
        let stdin = self
            .stdin
            .as_mut()
            .ok_or_else(|| "the agent's stdin is closed".to_owned())?;
        let written = async {
            stdin.write_all(request.as_bytes()).await?;
            stdin.write_all(b"\n").await?;
            stdin.flush().await
        }
        .await;
        if let Err(e) = written {
            let note = self.exit_note().await;
            return Err(format!("could not send the request ({e}); agent {note}"));
        }
        if close_stdin {
            self.stdin = None;
        }
        Ok(())
    }

    /// Reads the reply to the request just sent: step lines up to its `result` line.
    async fn read_reply(
        &mut self,
        question_id: &str,
        limits: &OutputLimits,
    ) -> Result<(AgentReply, Vec<JsonMap>), String> {
        let mut steps = Vec::new();
        let mut used = 0usize;
        loop {
            let remaining = limits.max_output_bytes.saturating_sub(used);
            let cap = remaining.min(MAX_LINE_BYTES);
            let line = match read_line(&mut self.stdout, cap).await {
                Ok(Some(line)) => line,
                Ok(None) => {
                    let note = self.exit_note().await;
                    return Err(format!("agent ended before answering: {note}"));
                }
                Err(LineError::TooLong) if cap < MAX_LINE_BYTES => {
                    return Err(limits.too_many_bytes());
                }
                Err(LineError::TooLong) => {
                    return Err(format!(
                        "garbage output: a line longer than {MAX_LINE_BYTES} bytes"
                    ));
                }
                Err(LineError::Other(e)) => return Err(e),
            };
            used = used.saturating_add(line.len()).saturating_add(1);
            if used > limits.max_output_bytes {
                return Err(limits.too_many_bytes());
            }
            if line.trim().is_empty() {
                continue;
            }
            let mut object = match serde_json::from_str::<Value>(&line) {
                Ok(Value::Object(object)) => object,
                _ => return Err(format!("garbage output line: {}", preview(&line))),
            };
            if let Some(id) = object.get("question_id").and_then(Value::as_str)
                && id != question_id
            {
                return Err(format!(
                    "answer for question {id:?} while {question_id:?} was asked"
                ));
            }
            match object.remove("type").as_ref().and_then(Value::as_str) {
                Some("step") => {
                    object.remove("question_id");
                    steps.push(object);
                    limits.check_steps(steps.len())?;
                }
                Some("result") => {
                    object.remove("question_id");
                    let reply = serde_json::from_value::<AgentReply>(Value::Object(object))
                        .map_err(|e| format!("malformed result line: {e}"))?;
                    return Ok((reply, steps));
                }
                _ => return Err(format!("unknown message: {}", preview(&line))),
            }
        }
    }
}

/// Why a question got no reply.
enum AskError {
    /// The request never reached the agent: it saw neither the question nor
    /// the documents under test.
    NotDelivered(String),
    /// The agent had the request and failed to answer it.
    Failed(String),
}

/// Why a line of the agent's output could not be read.
enum LineError {
    /// Longer than the limit it was read with.
    TooLong,
    /// Unreadable or not UTF-8 (the message says which).
    Other(String),
}

/// One line of stdout without its newline; `None` at end of output. Lines
/// over `limit` bytes or not UTF-8 are errors, so a runaway agent cannot
/// exhaust memory.
async fn read_line(
    stdout: &mut BufReader<ChildStdout>,
    limit: usize,
) -> Result<Option<String>, LineError> {
    let mut line = Vec::new();
    loop {
        let chunk = stdout
            .fill_buf()
            .await
            .map_err(|e| LineError::Other(format!("could not read the agent's output: {e}")))?;
        if chunk.is_empty() {
            if line.is_empty() {
                return Ok(None);
            }
            break;
        }
        let (take, done) = match chunk.iter().position(|&b| b == b'\n') {
            Some(at) => (at.saturating_add(1), true),
            None => (chunk.len(), false),
        };
        line.extend_from_slice(chunk.get(..take).unwrap_or_default());
        stdout.consume(take);
        if line.len() > limit.saturating_add(1) {
            return Err(LineError::TooLong);
        }
        if done {
            break;
        }
    }
    if line.last() == Some(&b'\n') {
        line.pop();
    }
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    String::from_utf8(line)
        .map(Some)
        .map_err(|_| LineError::Other("garbage output: a line that is not UTF-8".to_owned()))
}

fn preview(line: &str) -> String {
    let mut out: String = line.chars().take(LINE_PREVIEW_CHARS).collect();
    if line.chars().nth(LINE_PREVIEW_CHARS).is_some() {
        out.push('…');
    }
    out
}

/// An idle worker that is still running, if any; exited ones are dropped.
fn take_idle(idle: &Mutex<Vec<AgentProcess>>) -> Option<AgentProcess> {
    let mut idle = idle.lock().unwrap_or_else(PoisonError::into_inner);
    while let Some(mut process) = idle.pop() {
        if matches!(process.child.try_wait(), Ok(None)) {
            return Some(process);
        }
    }
    None
}

/// The question as the agent receives it: the reference answer and the check stay with the
/// harness, which does the scoring.
fn shown_question(question: &GeneratedQuestion) -> Value {
    let mut shown = serde_json::to_value(question).unwrap_or_default();
    if let Some(object) = shown.as_object_mut() {
        object.remove("answer");
        object.remove(crate::check::CHECK_KEY);
    }
    shown
}

/// One question, sent to `slot`'s process (spawned when absent).
async fn run_question(
    config: &SubprocessConfig,
    slot: &mut Option<AgentProcess>,
    run_id: &str,
    workspace: &Value,
    question: &GeneratedQuestion,
) -> QuestionOutcome {
    let shown = shown_question(question);
    let request = serde_json::json!({
        "type": "question",
        "run_id": run_id,
        "workspace": workspace,
        "question": shown,
    });
    // Until the request reaches the agent, a failure says nothing about the
    // documents under test: the question is "not started".
    let request = match serde_json::to_string(&request) {
        Ok(request) => request,
        Err(e) => {
            return QuestionOutcome::not_started(run_id, question, format!("request: {e}"));
        }
    };
    if slot.is_none() {
        match AgentProcess::spawn(config) {
            Ok(process) => *slot = Some(process),
            Err(message) => return QuestionOutcome::not_started(run_id, question, message),
        }
    }
    let Some(process) = slot.as_mut() else {
        return QuestionOutcome::not_started(run_id, question, "no agent process");
    };
    let per_question = config.mode == ProcessMode::PerQuestion;
    let asked = tokio::time::timeout(
        config.question_timeout,
        process.ask(
            &request,
            &question.question_id,
            per_question,
            &config.limits,
        ),
    )
    .await;
    let outcome = match asked {
        Ok(Ok((reply, steps))) => {
            reply.into_outcome_within(run_id, question, steps, config.scoring, &config.limits)
        }
        Ok(Err(AskError::NotDelivered(message))) => {
            QuestionOutcome::not_started(run_id, question, message)
        }
        Ok(Err(AskError::Failed(message))) => {
            QuestionOutcome::infra_error(run_id, question, process.failed(message).await)
        }
        Err(_) => QuestionOutcome::infra_error(
            run_id,
            question,
            process
                .failed(format!(
                    "no answer within {:.3} s; agent killed",
                    config.question_timeout.as_secs_f64()
                ))
                .await,
        ),
    };
    let keep = !per_question && !outcome.is_infra_error();
    if !keep && let Some(mut process) = slot.take() {
        if per_question && !outcome.is_infra_error() {
            // Answered: let it exit on its own, then make sure it is gone.
            let _ = tokio::time::timeout(EXIT_GRACE, process.child.wait()).await;
        }
        process.kill().await;
    }
    outcome
}

#[async_trait]
impl AgentRunner for SubprocessRunner {
    async fn run(
        &self,
        run_id: &str,
        workspace: &Workspace,
        questions: &[GeneratedQuestion],
    ) -> Result<Vec<QuestionOutcome>, RunnerError> {
        check_unique(questions)?;
        let ws = workspace.clone();
        let config = Arc::clone(&self.config);
        let materialized = tokio::task::spawn_blocking(move || {
            materialize(&ws, config.workspace_root.as_deref(), &config.packages)
        })
        .await
        .map_err(|e| RunnerError::Materialize {
            version: workspace.version.clone(),
            source: std::io::Error::other(e.to_string()),
        })??;
        let description = Arc::new(materialized.description(&workspace.version));
        let queue: Arc<Mutex<VecDeque<(usize, GeneratedQuestion)>>> =
            Arc::new(Mutex::new(questions.iter().cloned().enumerate().collect()));
        let lanes = self.config.concurrency.min(questions.len().max(1));
        let mut tasks = tokio::task::JoinSet::new();
        for _ in 0..lanes {
            let config = Arc::clone(&self.config);
            let queue = Arc::clone(&queue);
            let description = Arc::clone(&description);
            let run_id = run_id.to_owned();
            let idle = Arc::clone(&self.idle);
            tasks.spawn(async move {
                let mut slot = take_idle(&idle);
                let mut done = Vec::new();
                loop {
                    let next = queue
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .pop_front();
                    let Some((index, question)) = next else { break };
                    let outcome =
                        run_question(&config, &mut slot, &run_id, &description, &question).await;
                    done.push((index, outcome));
                }
                if let Some(process) = slot.take() {
                    // A healthy worker waits for the next run.
                    let spare = if config.mode == ProcessMode::Worker {
                        let mut idle = idle.lock().unwrap_or_else(PoisonError::into_inner);
                        if idle.len() < config.concurrency {
                            idle.push(process);
                            None
                        } else {
                            Some(process)
                        }
                    } else {
                        Some(process)
                    };
                    if let Some(process) = spare {
                        close(process).await;
                    }
                }
                done
            });
        }
        let mut slots: Vec<Option<QuestionOutcome>> = vec![None; questions.len()];
        while let Some(joined) = tasks.join_next().await {
            // A lane that panicked loses its answers; they become "not started" below.
            if let Ok(done) = joined {
                for (index, outcome) in done {
                    if let Some(slot) = slots.get_mut(index) {
                        *slot = Some(outcome);
                    }
                }
            }
        }
        drop(materialized);
        Ok(slots
            .into_iter()
            .zip(questions)
            .map(|(outcome, question)| {
                outcome.unwrap_or_else(|| {
                    QuestionOutcome::not_started(run_id, question, "the runner lane failed")
                })
            })
            .collect())
    }
}
