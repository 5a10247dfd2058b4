//! The harness loop behind `skill-evolve run`, wired to its adapters: the
//! subprocess agent, the on-disk store, the SQLite run log, the file
//! checkpoint, the LLM journal, the kernel's proposer, progress from the
//! harness's events, and a clean stop on Ctrl-C. Running the same command
//! again resumes from the checkpoint: recorded rollouts and LLM calls are
//! reused, not rerun.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use evolution_diagnose::DiagnoseOptions;
use evolution_evolve::EvolveOptions;
use evolution_harness::{
    Budget, EvolutionReport, Gatekeeper, KernelProposer, LoopConfig, LoopContext, MeteredLlm,
    ProcessMode, PromptTemplates, Scoring, SubprocessConfig, SubprocessRunner, ValidationConfig,
    ValidationContext, run_evolution,
};
use evolution_llm_cassette::LlmJournal;
use evolution_runlog_sqlite::SqliteRunLog;
use evolution_store_fs::{FileCheckpoint, FsStore, FsStoreError, FsVersionedStore};
use evolution_types::LlmProvider;

use super::config::RunConfig;
use super::dir::RunDir;
use super::progress::Progress;
use super::report::{usage_line, write_report};
use crate::error::bad_option;

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
    std::fs::create_dir_all(dir.root())
        .with_context(|| format!("cannot create {}", dir.root().display()))?;
    let store = open_or_init_store(config, &dir.store())?;
    let store = FsVersionedStore::new(store);
    let log = SqliteRunLog::open(dir.runlog())
        .map_err(|e| anyhow::anyhow!("cannot open {}: {e}", dir.runlog().display()))?;
    let checkpoint = FileCheckpoint::new(dir.checkpoint());
    let budget = Arc::new(
        Budget::new(config.budget.clone()).map_err(|e| bad_option(format!("[budget]: {e}")))?,
    );
    // The journal belongs to this run's directory, so its key names the run, not a model.
    let metered = LlmJournal::open(MeteredLlm::new(llm, Arc::clone(&budget)), dir.root(), "run")
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
        workspace_root: Some(dir.workspaces()),
    })
    .map_err(|e| bad_option(format!("[agent]: {e}")))?;
    std::fs::create_dir_all(dir.workspaces()).context("cannot create the workspaces folder")?;
    let templates = PromptTemplates::default();
    let proposer = KernelProposer {
        llm: &metered,
        run_log: &log,
        questions: config.train.clone(),
        tree_data: config.tree_data.clone(),
        templates: templates.clone(),
        profile: config.profile.clone(),
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
