//! The `skill-evolve` command's operations as a Model Context Protocol server on stdio
//! (`skill-evolve mcp`), for an agent host (Claude Code, Codex, any MCP client) to drive.
//!
//! [`serve`] serves one project folder. Its tools are the
//! command's operations: `status`, `dry_run`, `run` (started in the background; `run_progress`
//! reads it and `stop_run` stops it), `adopt` (returns the diff; writes only with
//! `confirm: true`), `harvest`, `schedule` (and `unschedule`, which takes the entry out of the
//! crontab file again), `gate` and `report`; for a run without an API key
//! (provider `handoff`), `handoff_prompts` lists the requests it waits for and `answer` adds a
//! reply, so the host's own model answers them. Inputs are checked as the
//! command checks its flags; every path a tool reads a configuration from or writes to must lie
//! inside the project. Stdout belongs to the protocol: operations that print are run as a
//! child `skill-evolve` (the program [`ServeOptions::program`] names) whose output is returned, and so is `harvest`, which reads stores
//! other programs wrote: whatever they do to a reader ends the child, not the server.
//!
//! - `inputs.rs`: each tool's inputs, with the schema the client sees;
//! - `harvest.rs`: the `harvest` tool's child process;
//! - `paths.rs`: the project and the paths tools may name;
//! - `jobs.rs`: the background runs;
//! - `transport.rs`: the lines on stdin and stdout, each malformed one answered with an error.
//!
//! A tool that fails answers with its error; one that panics answers with an internal error,
//! and the server, its other calls and its background runs go on.

// No panic on any input: bad input is a tool error (tests keep these, see clippy.toml).
#![warn(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod harvest;
mod hosts;
mod inputs;
mod jobs;
mod paths;
mod transport;

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;
use evolution_project::adopt::undo::{UndoCheck, check_undo};
use evolution_project::adopt::{AdoptCheck, check_adopt, find_run};
use evolution_project::llm::handoff::{ANSWERS_FILE, add_answer, waiting_prompts};
use evolution_project::run::config::RunOptions;
use evolution_project::run::dir::{RunDir, runs_of};
use evolution_project::run::{HANDOFF_DIR, find_run_config, prepare, split_listing};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::ToolCallContext;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{Implementation, ServerCapabilities, ServerConfig};
use rmcp::{ServerHandler, ServiceExt as _, tool, tool_handler, tool_router};
use serde_json::json;

use self::hosts::Hosts;
use self::inputs::{
    AdoptInput, AnswerInput, ConfigInput, EveryInput, GateInput, HarvestInput, JobInput,
    PresetInput, PromptsInput, ReportInput, ScheduleInput, StopInput, UnscheduleInput,
};
use self::jobs::Jobs;
use self::paths::Project;

/// Most bytes of a child command's output, or of a report, a tool returns.
const MAX_TEXT_BYTES: usize = 256 * 1024;

/// How long a child `skill-evolve` (schedule, unschedule, gate) may take.
const CHILD_TIMEOUT: Duration = Duration::from_secs(60);

/// How long a child `skill-evolve harvest` may take (a large store takes minutes).
const HARVEST_TIMEOUT: Duration = Duration::from_secs(60 * 60);

/// How the server is started.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// The project folder the tools work in (the folder of its run configuration).
    pub project: PathBuf,
    /// The `skill-evolve` program the tools that print (`schedule`, `unschedule`, `gate`) and
    /// `harvest` run as a child.
    pub program: PathBuf,
}

/// Runs the server on stdin and stdout until the client closes them. The process's current
/// folder becomes the project's, so that paths the library reports relative to it are the
/// project's.
///
/// # Errors
/// The project folder cannot be read or worked in, the runtime cannot start, or the session
/// could not start or ended with an error.
pub fn serve(options: &ServeOptions) -> anyhow::Result<()> {
    let project = Project::at(&options.project)?;
    std::env::set_current_dir(project.root())
        .with_context(|| format!("cannot work in {}", project.root().display()))?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async {
        let lines = transport::LineTransport::new(tokio::io::stdin(), tokio::io::stdout());
        // The hosts of the project's run configuration are checked while the session starts.
        let config = find_run_config(project.root())
            .ok()
            .and_then(|found| project.inside("config", &found.display().to_string()).ok());
        let hosts = Hosts::check_at_start(config);
        let server = Server::new(project, options.program.clone(), hosts)
            .serve(lines)
            .await
            .context("the MCP client did not start a session")?;
        server
            .waiting()
            .await
            .context("the MCP session ended with an error")?;
        Ok::<_, anyhow::Error>(())
    })
}

/// The server: the project, its background runs and the tool table.
#[derive(Clone)]
struct Server {
    project: Project,
    /// The `skill-evolve` program run as a child.
    program: PathBuf,
    /// The hosts of the project's run configuration, checked at start.
    hosts: Hosts,
    jobs: Jobs,
    tool_router: ToolRouter<Self>,
}

/// A tool's failure, as the client sees it.
type ToolResult = Result<String, String>;

/// Why a child `skill-evolve` failed: its error line, or how it ended when it printed none
/// (killed by a signal: a crash of the child alone).
fn child_error(status: &std::process::ExitStatus, stdout: &str, stderr: &str) -> String {
    let error = stderr.trim().trim_start_matches("error: ");
    if !error.is_empty() {
        return error.to_owned();
    }
    if !stdout.trim().is_empty() {
        return stdout.to_owned();
    }
    format!("skill-evolve stopped abnormally ({status}); the server and its runs go on")
}

/// An error of the library as one line.
fn one_line(e: &anyhow::Error) -> String {
    format!("{e:#}").replace('\n', " ")
}

/// `text` cut at [`MAX_TEXT_BYTES`] (on a character boundary), saying so.
fn capped(text: String) -> String {
    if text.len() <= MAX_TEXT_BYTES {
        return text;
    }
    let mut end = MAX_TEXT_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}\n[cut: {} more bytes]",
        &text[..end],
        text.len().saturating_sub(end)
    )
}

#[tool_router(router = tool_router)]
impl Server {
    fn new(project: Project, program: PathBuf, hosts: Hosts) -> Self {
        Server {
            project,
            program,
            hosts,
            jobs: Jobs::default(),
            tool_router: Self::tool_router(),
        }
    }

    /// The run configuration a tool names, inside the project.
    fn config_path(&self, given: Option<&str>) -> Result<PathBuf, String> {
        match given {
            Some(path) => self.project.inside("config", path),
            None => {
                let found = find_run_config(self.project.root()).map_err(|e| one_line(&e))?;
                self.project.inside("config", &found.display().to_string())
            }
        }
    }

    /// The run options a tool's inputs ask for: the house rules file, inside the project.
    fn run_options(&self, input: &ConfigInput) -> Result<RunOptions, String> {
        let preferences = input
            .preferences
            .as_deref()
            .map(|path| self.project.inside("preferences", path))
            .transpose()?;
        Ok(RunOptions {
            preferences,
            ..RunOptions::default()
        })
    }

    /// The run a tool names: a folder inside the project, or a run name of the project.
    fn run_dir(&self, run: &str) -> Result<RunDir, String> {
        let as_path = self.project.root().join(run);
        if as_path.is_dir() {
            let inside = self.project.inside("run", run)?;
            return Ok(RunDir::at(inside));
        }
        find_run(run, Some(self.project.root()), self.project.root()).map_err(|e| one_line(&e))
    }

    /// Runs this program with `args` in the project folder for at most `timeout`; what it
    /// printed and how it ended.
    async fn child_output(
        &self,
        args: &[String],
        timeout: Duration,
    ) -> Result<std::process::Output, String> {
        let mut command = tokio::process::Command::new(&self.program);
        command
            .args(args)
            .current_dir(self.project.root())
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true);
        tokio::time::timeout(timeout, command.output())
            .await
            .map_err(|_| {
                format!(
                    "skill-evolve {} took longer than {timeout:?}",
                    args.join(" ")
                )
            })?
            .map_err(|e| format!("cannot run skill-evolve: {e}"))
    }

    /// Runs this program with `args` in the project folder; its stdout, or its error line.
    async fn child(&self, args: Vec<String>) -> ToolResult {
        let output = self.child_output(&args, CHILD_TIMEOUT).await?;
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        if output.status.success() {
            Ok(capped(stdout))
        } else {
            let stderr = String::from_utf8_lossy(&output.stderr);
            Err(capped(child_error(&output.status, &stdout, &stderr)))
        }
    }

    /// The runs of the project and what each staged for adoption (JSON: `runs`, each with
    /// its `lines` as `skill-evolve status` prints them).
    #[tool(
        description = "List the project's runs: finished or not, what each staged for \
                          adoption, and the command that adopts it."
    )]
    async fn status(&self) -> ToolResult {
        if !runs_of(self.project.root()).is_dir() {
            return Ok(json!({ "project": self.project.root(), "runs": [],
                              "note": "no run yet: dry_run checks the configuration, run starts one" })
            .to_string());
        }
        let runs = evolution_project::status::status(self.project.root())
            .await
            .map_err(|e| one_line(&e))?;
        let runs: Vec<serde_json::Value> = runs
            .iter()
            .map(|r| json!({ "name": r.name, "dir": r.dir.root(), "lines": r.lines() }))
            .collect();
        Ok(json!({ "project": self.project.root(), "runs": runs }).to_string())
    }

    /// The pre-flight of a run configuration: the plan, the estimate, the gate's reach and the
    /// split. Nothing runs and nothing is written.
    #[tool(
        description = "Check a run configuration without running it: the plan, the \
                          worst-case LLM calls and agent rollouts, how many wins an accept \
                          needs, and which questions train, gate and hold out."
    )]
    async fn dry_run(&self, Parameters(input): Parameters<ConfigInput>) -> ToolResult {
        let config = self.config_path(input.config.as_deref())?;
        let options = self.run_options(&input)?;
        let prepared = prepare(&config, &options, None, input.fresh)
            .await
            .map_err(|e| one_line(&e))?;
        Ok(format!(
            "{}{}dry run: the configuration is valid; nothing was run or written\n",
            prepared.preflight(),
            split_listing(&prepared.config)
        ))
    }

    /// Starts a run in the background and returns its job number at once.
    #[tool(
        description = "Start (or resume) the evolution loop of a run configuration in \
                          the background; returns a job number for run_progress. Results \
                          are staged, never written to the skills: adopt does that."
    )]
    async fn run(&self, Parameters(input): Parameters<ConfigInput>) -> ToolResult {
        let config = self.config_path(input.config.as_deref())?;
        let options = self.run_options(&input)?;
        let prepared = prepare(&config, &options, None, input.fresh)
            .await
            .map_err(|e| one_line(&e))?;
        // A host that cannot log in would fail every rollout or request: said now, once.
        self.hosts.ready_for(&config).await?;
        let preflight = prepared.preflight();
        let name = prepared.config.name.clone();
        let fresh = input.fresh && prepared.start_over().map_err(|e| one_line(&e))?;
        let job = self.jobs.start(prepared)?;
        Ok(json!({
            "job": job,
            "run": name,
            "started_over": fresh,
            "preflight": preflight,
            "next": "call run_progress with this job number; stop_run stops it (the same run resumes)",
        })
        .to_string())
    }

    /// What a background run has done so far.
    #[tool(
        description = "Progress of a run started with the run tool: its state (running, \
                          finished, stopped, failed), rollouts, current phase and its last \
                          decision lines."
    )]
    async fn run_progress(&self, Parameters(input): Parameters<JobInput>) -> ToolResult {
        let view = self.jobs.view(input.job)?;
        serde_json::to_string(&view).map_err(|e| e.to_string())
    }

    /// Stops a background run at its next consistent point.
    #[tool(
        description = "Stop a run started with the run tool at its next consistent \
                          point; running it again resumes it."
    )]
    async fn stop_run(&self, Parameters(input): Parameters<StopInput>) -> ToolResult {
        self.jobs.stop(input.job)?;
        Ok(format!(
            "job {} asked to stop; run_progress shows when it has",
            input.job
        ))
    }

    /// A run's staged documents: the diff, and with `confirm` the write.
    #[tool(
        description = "Adopt a finished run's staged skill documents (with undo: true, take \
                          an adoption of the run back). Without confirm it returns the diff and \
                          writes nothing; show the diff to the user and call again with \
                          confirm: true only after they said yes."
    )]
    async fn adopt(&self, Parameters(input): Parameters<AdoptInput>) -> ToolResult {
        let dir = self.run_dir(&input.run)?;
        if input.undo {
            return self.undo_adoption(&dir, &input);
        }
        let check = check_adopt(&dir, &input.skills).map_err(|e| one_line(&e))?;
        let value = match check {
            AdoptCheck::NothingStaged { run } => json!({
                "run": run, "written": false,
                "nothing": "the run staged nothing: no candidate was accepted",
            }),
            AdoptCheck::NothingLeft { run, notes } => json!({
                "run": run, "written": false, "notes": notes,
                "nothing": "nothing left to adopt",
            }),
            AdoptCheck::Ready(plan) => {
                let reply = PlanReply {
                    run: plan.run(),
                    diff: capped(plan.diff()),
                    notes: plan.notes.clone(),
                    files: plan.ready.iter().map(|r| r.user_file.clone()).collect(),
                };
                self.plan_reply(reply, input.confirm, "adopted", "confirm: true", || {
                    plan.apply(true)
                })?
            }
        };
        Ok(value.to_string())
    }

    /// `adopt` with `undo`: the diff of taking the adoption back, and with `confirm` the write.
    fn undo_adoption(&self, dir: &RunDir, input: &AdoptInput) -> ToolResult {
        let value = match check_undo(dir, &input.skills).map_err(|e| one_line(&e))? {
            UndoCheck::NothingAdopted { run, notes } => json!({
                "run": run, "written": false, "notes": notes,
                "nothing": "nothing of the run is adopted",
            }),
            UndoCheck::Ready(plan) => {
                let reply = PlanReply {
                    run: plan.run(),
                    diff: capped(plan.diff()),
                    notes: plan.notes.clone(),
                    files: plan.ready.iter().map(|r| r.user_file.clone()).collect(),
                };
                self.plan_reply(
                    reply,
                    input.confirm,
                    "restored",
                    "undo: true and confirm: true",
                    || plan.apply(true),
                )?
            }
        };
        Ok(value.to_string())
    }

    /// The reply of `adopt` (or its undoing) on a plan: without `confirm` its diff and files,
    /// nothing written; with it, what `apply` wrote, listed under `key`.
    fn plan_reply(
        &self,
        reply: PlanReply,
        confirm: bool,
        key: &str,
        again: &str,
        apply: impl FnOnce() -> anyhow::Result<Vec<evolution_project::adopt::Adopted>>,
    ) -> Result<serde_json::Value, String> {
        for file in &reply.files {
            self.project.inside("adopt", &file.display().to_string())?;
        }
        let PlanReply {
            run,
            diff,
            notes,
            files,
        } = reply;
        Ok(if confirm {
            let written: Vec<serde_json::Value> = apply()
                .map_err(|e| one_line(&e))?
                .into_iter()
                .map(|a| json!({ "file": a.user_file, "version": a.version }))
                .collect();
            json!({ "run": run, "written": true, "diff": diff, key: written, "notes": notes })
        } else {
            json!({ "run": run, "written": false, "diff": diff, "files": files, "notes": notes,
                    "next": format!("show this diff to the user; call adopt again with {again} to write it") })
        })
    }

    /// Reads agent sessions into trajectories and mined tasks.
    #[tool(
        description = "Read Claude Code, Codex, Gemini CLI, OpenCode, Cursor or GitHub \
                          Copilot sessions (by default those of this project) into trajectories and recurring tasks, secrets redacted, \
                          each session judged failed or passed."
    )]
    async fn harvest(&self, Parameters(input): Parameters<HarvestInput>) -> ToolResult {
        let args = harvest::arguments(&input, &self.project)?;
        let output = self.child_output(&args, HARVEST_TIMEOUT).await?;
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        if output.status.success() {
            return Ok(capped(harvest::reply(&stdout, &stderr)));
        }
        Err(capped(child_error(&output.status, &stdout, &stderr)))
    }

    /// The crontab entry of the nightly (or hourly) harvest and run.
    #[tool(
        description = "The crontab entry that harvests sessions and runs the loop every \
                          night or hour (results staged, never adopted); with install, added \
                          to a crontab file inside the project."
    )]
    async fn schedule(&self, Parameters(input): Parameters<ScheduleInput>) -> ToolResult {
        let config = self
            .project
            .inside("config", input.config.as_deref().unwrap_or("evolve.toml"))?;
        let mut args = vec![
            "schedule".to_owned(),
            "--every".to_owned(),
            match input.every {
                EveryInput::Night => "night",
                EveryInput::Hour => "hour",
            }
            .to_owned(),
            "--config".to_owned(),
            config.display().to_string(),
        ];
        if let Some(file) = input.install.as_deref() {
            args.push("--install".to_owned());
            args.push(self.project.inside("install", file)?.display().to_string());
        }
        self.child(args).await
    }

    /// The project's entry taken out of a crontab file `schedule` installed it into.
    #[tool(
        description = "Take this project's scheduled harvest and run out of a crontab file \
                          inside the project (the file schedule's install wrote to); every \
                          other line stays as it was. Says so when there was no entry."
    )]
    async fn unschedule(&self, Parameters(input): Parameters<UnscheduleInput>) -> ToolResult {
        let file = self.project.inside("file", &input.file)?;
        self.child(vec![
            "schedule".to_owned(),
            "--uninstall".to_owned(),
            file.display().to_string(),
        ])
        .await
    }

    /// The gate's verdict on paired counts.
    #[tool(
        description = "The e-process gate's verdict on paired counts (wins, losses, \
                          questions used and left), optionally at a run's false-discovery \
                          level."
    )]
    async fn gate(&self, Parameters(input): Parameters<GateInput>) -> ToolResult {
        let mut args = vec![
            "gate".to_owned(),
            "--json".to_owned(),
            format!("--wins={}", input.wins),
            format!("--losses={}", input.losses),
            format!("--used={}", input.used),
            format!("--remaining={}", input.remaining),
        ];
        if let Some(preset) = input.preset {
            let name = match preset {
                PresetInput::Seed => "seed",
                PresetInput::Calibrated => "calibrated",
                PresetInput::Thrifty => "thrifty",
                PresetInput::Thorough => "thorough",
            };
            args.push(format!("--preset={name}"));
        }
        if let Some(level) = input.fdr_level {
            args.push(format!("--fdr-level={level}"));
            args.push(format!("--horizon={}", input.horizon.unwrap_or(1)));
        } else if input.horizon.is_some() {
            return Err("horizon needs fdr_level".to_owned());
        }
        if let Some(e) = input.e_needed {
            args.push(format!("--e-needed={e}"));
        }
        self.child(args).await
    }

    /// The requests a run with the `handoff` provider waits for answers to.
    #[tool(
        description = "The requests of the model a run (provider handoff, no API key) \
                          waits for: each with its key, purpose, messages and the JSON schema \
                          its reply must follow. Answer each with the answer tool, then call \
                          run again to resume."
    )]
    async fn handoff_prompts(&self, Parameters(input): Parameters<PromptsInput>) -> ToolResult {
        let dir = self.run_dir(&input.run)?;
        dir.refuse_links().map_err(|e| one_line(&e))?;
        let folder = dir.root().join(HANDOFF_DIR);
        let waiting = waiting_prompts(&folder).map_err(|e| e.to_string())?;
        Ok(capped(
            json!({ "waiting": waiting.len(), "prompts": waiting }).to_string(),
        ))
    }

    /// Adds one answer for a run waiting on the `handoff` provider.
    #[tool(
        description = "Answer one waiting request of a handoff run (its key from \
                          handoff_prompts, the whole reply as the model would write it). When \
                          every request is answered, call run again: it resumes."
    )]
    async fn answer(&self, Parameters(input): Parameters<AnswerInput>) -> ToolResult {
        let dir = self.run_dir(&input.run)?;
        // Nothing is read from or written through a link in the run's folder.
        dir.refuse_links().map_err(|e| one_line(&e))?;
        let folder = dir.root().join(HANDOFF_DIR);
        add_answer(&folder, &input.key, &input.reply).map_err(|e| e.to_string())?;
        let waiting = waiting_prompts(&folder).map_err(|e| e.to_string())?;
        let answered = std::fs::read_to_string(folder.join(ANSWERS_FILE))
            .map(|text| {
                let keys: std::collections::HashSet<String> = text
                    .lines()
                    .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
                    .filter_map(|v| v.get("key").and_then(|k| k.as_str()).map(str::to_owned))
                    .collect();
                waiting
                    .iter()
                    .filter(|w| {
                        w.get("key")
                            .and_then(|k| k.as_str())
                            .is_some_and(|k| keys.contains(k))
                    })
                    .count()
            })
            .unwrap_or(0);
        Ok(json!({ "answered": answered, "waiting": waiting.len(),
                   "next": if answered == waiting.len() { "every request is answered: call run again to resume" } else { "answer the others" } })
        .to_string())
    }

    /// Rebuilds a finished run's HTML report; returns its path and `report.md`.
    #[tool(
        description = "Rebuild a finished run's HTML report and return its path with the \
                          text of its report.md (decisions, evidence, staged diffs)."
    )]
    async fn report(&self, Parameters(input): Parameters<ReportInput>) -> ToolResult {
        let dir = self.run_dir(&input.run)?;
        let html = evolution_project::report_html::rebuild(&dir)
            .await
            .map_err(|e| one_line(&e))?;
        let markdown = std::fs::read_to_string(dir.report_md())
            .map_err(|e| format!("cannot read {}: {e}", dir.report_md().display()))?;
        Ok(json!({ "html": html, "report_md": capped(markdown) }).to_string())
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Server {
    /// Calls a tool; a panic inside it becomes an internal error of this call alone.
    async fn call_tool(
        &self,
        request: rmcp::model::CallToolRequestParams,
        context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Result<rmcp::model::CallToolResponse, rmcp::ErrorData> {
        let name = request.name.to_string();
        let call = ToolCallContext::new(self, request, context);
        contained(&name, self.tool_router.call(call)).await
    }

    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(
                "skill-evolve",
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(
                "skill-evolve improves a project's agent skills from evidence: dry_run checks \
                 the run configuration, run starts the loop (run_progress follows it), status \
                 lists what runs staged, adopt shows the diff and writes only with confirm \
                 after the user said yes.",
            )
    }
}

/// The reply of the call of tool `name`; a panic inside it becomes an internal error of this
/// call alone.
async fn contained<T>(
    name: &str,
    call: impl std::future::Future<Output = Result<T, rmcp::ErrorData>>,
) -> Result<T, rmcp::ErrorData> {
    use futures_util::FutureExt as _;
    std::panic::AssertUnwindSafe(call)
        .catch_unwind()
        .await
        .unwrap_or_else(|panic| {
            Err(rmcp::ErrorData::internal_error(
                format!(
                    "the tool {name:?} stopped on an internal error ({}); the server and its \
                     runs go on",
                    jobs::panic_message(panic.as_ref())
                ),
                None,
            ))
        })
}

/// What `adopt` shows of a plan before anything is written.
struct PlanReply {
    run: String,
    diff: String,
    notes: Vec<String>,
    files: Vec<PathBuf>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tool_that_panics_answers_with_an_internal_error() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let failed = runtime.block_on(contained::<()>("status", async {
            panic!("boom");
        }));
        let error = failed.unwrap_err();
        assert_eq!(error.code, rmcp::model::ErrorCode::INTERNAL_ERROR);
        assert!(
            error
                .message
                .contains("\"status\" stopped on an internal error (boom)")
        );
        let fine = runtime.block_on(contained("status", async { Ok::<_, rmcp::ErrorData>(7) }));
        assert_eq!(fine.unwrap(), 7);
    }
}
