//! The harness loop behind `skill-evolve run`: the subprocess agent, the
//! on-disk store, the SQLite run log, the file checkpoint, the kernel's
//! proposer, progress from the harness's events, and a clean stop on Ctrl-C.
//!
//! Everything of a run lives under `<config dir>/.skill-evolve/runs/<name>/`:
//! `store/` (the versions), `runlog.sqlite`, `checkpoint.json`,
//! `llm-journal.jsonl` (every finished LLM call) and, at the end,
//! `report.md` and `report.json`. Running the same command again resumes
//! from the checkpoint: recorded rollouts and LLM calls are reused, not rerun.

use std::collections::BTreeSet;
use std::io::IsTerminal as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context as _;
use evolution_diagnose::DiagnoseOptions;
use evolution_evolve::EvolveOptions;
use evolution_gate::GateDecision;
use evolution_harness::{
    Budget, EventSink, EvolutionReport, Gatekeeper, HarnessEvent, KernelProposer, LoopConfig,
    LoopContext, MeteredLlm, ProcessMode, PromptTemplates, Scoring, SubprocessConfig,
    SubprocessRunner, ValidationConfig, ValidationContext, VersionedStore as _, run_evolution,
};
use evolution_llm_cassette::LlmJournal;
use evolution_runlog_sqlite::SqliteRunLog;
use evolution_store_fs::{FileCheckpoint, FsStore, FsStoreError, FsVersionedStore};
use evolution_types::{LlmProvider, Profile};
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::error::bad_option;
use crate::run::RunConfig;

/// Where a run's files are.
pub(crate) struct RunDir {
    /// `<config dir>/.skill-evolve/runs/<name>`.
    pub(crate) root: PathBuf,
}

impl RunDir {
    pub(crate) fn of(config_path: &Path, name: &str) -> Self {
        let base = config_path
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default();
        RunDir {
            root: base.join(".skill-evolve").join("runs").join(name),
        }
    }
    fn store(&self) -> PathBuf {
        self.root.join("store")
    }
    fn runlog(&self) -> PathBuf {
        self.root.join("runlog.sqlite")
    }
    fn checkpoint(&self) -> PathBuf {
        self.root.join("checkpoint.json")
    }
}

/// Progress bars from the harness's events (drawn only on a terminal), and
/// one line per gate decision.
struct Progress {
    bars: MultiProgress,
    questions: ProgressBar,
    lines: Mutex<Vec<String>>,
    terminal: bool,
}

impl Progress {
    fn new() -> Self {
        let terminal = std::io::stderr().is_terminal();
        let target = if terminal {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        };
        let bars = MultiProgress::with_draw_target(target);
        let questions = bars.add(ProgressBar::new_spinner());
        questions.set_style(
            ProgressStyle::with_template("{spinner} {pos} rollouts  {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        questions.enable_steady_tick(Duration::from_millis(200));
        Progress {
            bars,
            questions,
            lines: Mutex::new(Vec::new()),
            terminal,
        }
    }

    fn say(&self, line: String) {
        if self.terminal {
            let _ = self.bars.println(&line);
        } else {
            eprintln!("{line}");
        }
        if let Ok(mut lines) = self.lines.lock() {
            lines.push(line);
        }
    }
}

fn decision_name(d: GateDecision) -> String {
    serde_json::to_value(d)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_else(|| format!("{d:?}"))
}

impl EventSink for Progress {
    fn emit(&self, event: &HarnessEvent) {
        match event {
            HarnessEvent::RunStarted { run_id, .. } => {
                self.questions.set_message(format!("run {run_id}"));
            }
            HarnessEvent::QuestionDone { run_id, cached, .. } => {
                if !cached {
                    self.questions.inc(1);
                }
                self.questions.set_message(run_id.clone());
            }
            HarnessEvent::BlockGated {
                candidate,
                block,
                w,
                l,
                n_used,
                n_remaining,
                decision,
                e_value,
                e_confirm,
                ..
            } => self.say(format!(
                "gate {candidate} block {block}: W={w} L={l} used={n_used} remaining={n_remaining} \
                 E={e_value:.2} (confirm at {e_confirm}) → {}",
                decision_name(*decision)
            )),
            HarnessEvent::CandidateAccepted {
                candidate,
                decision,
                e_value,
                version,
            } => {
                self.say(format!(
                    "accepted {candidate} ({}, E={e_value:.2}) as {}",
                    decision_name(*decision),
                    version.as_deref().unwrap_or("a new version")
                ));
            }
            HarnessEvent::CandidateRejected {
                candidate,
                decision,
                e_value,
            } => self.say(format!(
                "rejected {candidate} ({}, E={e_value:.2})",
                decision_name(*decision)
            )),
            HarnessEvent::ProbationSettled {
                version,
                verdict,
                w,
                l,
            } => self.say(format!("probation of {version}: {verdict:?} (W={w} L={l})")),
            HarnessEvent::BudgetStop { exceeded, .. } => {
                self.say(format!("budget cap reached: {exceeded:?}"));
            }
            HarnessEvent::InputSkipped { file, reason } => {
                self.say(format!("skipped {file}: {reason}"));
            }
            HarnessEvent::RunFinished { .. } => {}
            _ => {}
        }
    }
}

/// How a run ended.
pub(crate) enum Ended {
    /// The loop finished (by a stop rule or a budget cap).
    Finished(Box<EvolutionReport>, PathBuf),
    /// Ctrl-C: the checkpoint holds where it was.
    Interrupted,
}

/// Runs (or resumes) the loop of `config`.
pub(crate) async fn run_loop(
    config: &RunConfig,
    dir: &RunDir,
    llm: Arc<dyn LlmProvider>,
    estimate: evolution_harness::Estimate,
) -> anyhow::Result<Ended> {
    std::fs::create_dir_all(&dir.root)
        .with_context(|| format!("cannot create {}", dir.root.display()))?;
    let store = open_or_init_store(config, &dir.store())?;
    let store = FsVersionedStore::new(store);
    let log = SqliteRunLog::open(dir.runlog())
        .map_err(|e| anyhow::anyhow!("cannot open {}: {e}", dir.runlog().display()))?;
    let checkpoint = FileCheckpoint::new(dir.checkpoint());
    let budget = Arc::new(
        Budget::new(config.budget.clone()).map_err(|e| bad_option(format!("[budget]: {e}")))?,
    );
    // The journal belongs to this run's directory, so its key names the run, not a model.
    let metered = LlmJournal::open(MeteredLlm::new(llm, Arc::clone(&budget)), &dir.root, "run")
        .await
        .map_err(|e| anyhow::anyhow!("cannot open the LLM journal: {e}"))?;
    let runner = SubprocessRunner::new(SubprocessConfig {
        program: config.program.clone(),
        args: config.args.clone(),
        env: config.env.clone(),
        mode: if config.worker {
            ProcessMode::Worker
        } else {
            ProcessMode::PerQuestion
        },
        concurrency: config.concurrency,
        question_timeout: Duration::from_secs(config.timeout_secs),
        scoring: if config.agent_scores {
            Scoring::AgentReported
        } else {
            Scoring::ExactMatch
        },
        workspace_root: Some(dir.root.join("workspaces")),
    })
    .map_err(|e| bad_option(format!("[agent]: {e}")))?;
    std::fs::create_dir_all(dir.root.join("workspaces"))
        .context("cannot create the workspaces folder")?;
    let templates = PromptTemplates::default();
    let proposer = KernelProposer {
        llm: &metered,
        run_log: &log,
        questions: config.train.clone(),
        tree_data: config.tree_data.clone(),
        templates: templates.clone(),
        profile: Profile::default(),
        diagnose: DiagnoseOptions::default(),
        evolve: EvolveOptions {
            system_prompt_file: config.system_prompt.clone(),
            ..EvolveOptions::default()
        },
        schedule: config.schedule,
    };
    let progress = Progress::new();
    let resume = dir.checkpoint().is_file();
    if resume {
        progress.say(format!("resuming from {}", dir.checkpoint().display()));
    }
    let ctx = LoopContext {
        validation: ValidationContext {
            runner: &runner,
            recorder: &log,
            budget: &budget,
            events: &progress,
            resume_from: Some(&log),
        },
        store: &store,
        proposer: &proposer,
        llm: &metered,
        checkpoint: &checkpoint,
    };
    let loop_config = LoopConfig {
        run_name: config.name.clone(),
        max_epochs: config.max_epochs,
        train: config.train.clone(),
        gate: config.gate.clone(),
        holdout: config.holdout.clone(),
        prompt_files: config.prompt_files.iter().cloned().collect(),
        slow_update_template: Some(templates.slow_update.clone()),
        estimate: Some(estimate),
    };
    let gatekeeper = Gatekeeper::new(ValidationConfig {
        gate_run_prefix: format!("{}_gate_", config.name),
        ladder: config.ladder.clone(),
        seed: config.gate_seed,
        gate_guard_err: config.guard_err,
        params: config.params,
    });
    let outcome = tokio::select! {
        result = run_evolution(ctx, &loop_config, gatekeeper) => Some(result),
        _ = tokio::signal::ctrl_c() => None,
    };
    progress.questions.finish_and_clear();
    // Workers (mode = "worker") get end-of-file and a grace period to exit.
    runner.shutdown().await;
    let Some(result) = outcome else {
        return Ok(Ended::Interrupted);
    };
    let report = result.map_err(|e| anyhow::anyhow!("the run failed: {e}"))?;
    let lines = progress.lines.lock().map(|l| l.clone()).unwrap_or_default();
    let path = write_report(dir, &store, &report, &lines, usage_line(&budget.usage()))?;
    Ok(Ended::Finished(Box::new(report), path))
}

fn open_or_init_store(config: &RunConfig, root: &Path) -> anyhow::Result<FsStore> {
    match FsStore::open(root) {
        Ok(store) => Ok(store),
        Err(FsStoreError::NotAStore { .. }) => {
            let mut files = Vec::new();
            let skills = config.skill_files.iter().map(|n| config.skills.join(n));
            let prompts = config
                .prompts
                .iter()
                .flat_map(|dir| config.prompt_files.iter().map(|n| dir.join(n)));
            for path in skills.chain(prompts) {
                let text = std::fs::read_to_string(&path)
                    .map_err(|e| crate::error::bad_at(&path, None, format!("cannot read: {e}")))?;
                let name = path
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                files.push((name, text));
            }
            FsStore::init(root, files, "the skills the run started from")
                .map_err(|e| anyhow::anyhow!("cannot create the store {}: {e}", root.display()))
        }
        Err(e) => Err(anyhow::anyhow!(
            "cannot open the store {}: {e}",
            root.display()
        )),
    }
}

/// The report: what changed, and the gate's evidence for every candidate.
fn write_report(
    dir: &RunDir,
    store: &FsVersionedStore,
    report: &EvolutionReport,
    events: &[String],
    usage: String,
) -> anyhow::Result<PathBuf> {
    let mut md = format!(
        "# Run report\n\nStopped: {:?} after {} epoch(s). Version {} → {}.\n\
         Holdout accuracy: {} → {}.\nUsage: {usage}\n\n## Gate evidence per candidate\n\n\
         | candidate | accepted | W | L | paired | remaining | E | δ̂ | decision | new version |\n\
         |---|---|---|---|---|---|---|---|---|---|\n",
        report.stop_reason,
        report.epochs,
        report.initial_version,
        report.final_version,
        pct(report.holdout_before),
        pct(report.holdout_after),
    );
    for r in &report.records {
        match &r.validation {
            Some(v) => md.push_str(&format!(
                "| {} | {} | {} | {} | {} | {} | {:.2} | {:.3} | {} | {} |\n",
                r.candidate,
                if r.accepted { "yes" } else { "no" },
                v.w,
                v.l,
                v.n_used,
                v.n_remaining,
                v.verdict.e_value,
                v.verdict.delta_hat,
                decision_name(v.verdict.decision),
                r.new_version.as_deref().unwrap_or("—"),
            )),
            None => md.push_str(&format!(
                "| {} | no | — | — | — | — | — | — | not gated (FDR level 0) | — |\n",
                r.candidate
            )),
        }
    }
    md.push_str("\n## Diff, first to final version\n\n");
    let before = store.documents(&report.initial_version).unwrap_or_default();
    let after = store.documents(&report.final_version).unwrap_or_default();
    let diff = documents_diff(&before, &after);
    if diff.is_empty() {
        md.push_str("No change was accepted.\n");
    } else {
        md.push_str(&format!("```diff\n{diff}```\n"));
    }
    md.push_str("\n## Events\n\n");
    for line in events {
        md.push_str(&format!("- {line}\n"));
    }
    let path = dir.root.join("report.md");
    std::fs::write(&path, md).with_context(|| format!("cannot write {}", path.display()))?;
    let json = serde_json::json!({
        "stop_reason": report.stop_reason,
        "epochs": report.epochs,
        "initial_version": report.initial_version,
        "final_version": report.final_version,
        "holdout_before": report.holdout_before,
        "holdout_after": report.holdout_after,
        "records": report.records,
    });
    std::fs::write(
        dir.root.join("report.json"),
        serde_json::to_string_pretty(&json)?,
    )
    .context("cannot write report.json")?;
    Ok(path)
}

fn usage_line(u: &evolution_harness::Usage) -> String {
    format!(
        "{} LLM calls, {} prompt + {} completion tokens, {} agent rollouts",
        u.llm_calls, u.prompt_tokens, u.completion_tokens, u.rollouts
    )
}

fn pct(v: Option<f64>) -> String {
    v.map_or_else(|| "n/a".to_owned(), |v| format!("{:.1}%", v * 100.0))
}

/// A unified diff of every document that differs.
pub(crate) fn documents_diff(
    before: &std::collections::BTreeMap<String, String>,
    after: &std::collections::BTreeMap<String, String>,
) -> String {
    let names: BTreeSet<&String> = before.keys().chain(after.keys()).collect();
    let mut out = String::new();
    for name in names {
        let a = before.get(name).map_or("", String::as_str);
        let b = after.get(name).map_or("", String::as_str);
        if a == b {
            continue;
        }
        let diff = similar::TextDiff::from_lines(a, b);
        out.push_str(
            &diff
                .unified_diff()
                .header(&format!("a/{name}"), &format!("b/{name}"))
                .to_string(),
        );
    }
    out
}
