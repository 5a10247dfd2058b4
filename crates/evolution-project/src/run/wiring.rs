//! The harness loop of a run, wired to its adapters: the
//! subprocess agent, the on-disk store, the SQLite run log, the file
//! checkpoint, the LLM journal, the kernel's proposer, progress from the
//! harness's events, rubric checks judged by the run's LLM, and a clean stop when asked.
//! Running it again resumes from the checkpoint: recorded rollouts and LLM calls are
//! reused, not rerun.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context as _;
use evolution_diagnose::{DiagnoseOptions, JudgeScope};
use evolution_evolve::EvolveOptions;
use evolution_harness::{
    Budget, ELond, EvolutionReport, GammaSequence, KernelProposer, LoopContext, LoopError,
    LoopState, MeteredLlm, PromptTemplates, SubprocessRunner, ValidationContext, ValidationError,
    run_evolution,
};
use evolution_llm_cassette::LlmJournal;
use evolution_runlog_sqlite::SqliteRunLog;
use evolution_store_fs::{FileCheckpoint, FsVersionedStore};
use evolution_types::LlmProvider;

use super::config::RunConfig;
use super::dir::RunDir;
use super::events::{EventLines, RunObserver};
use super::failures::{RunStopped, failures_by_part};
use super::inputs::RunInputs;
use super::report::{Guarantee, RunNotes, why_no_candidate, write_report};
use super::rubric::RubricRunner;
use super::stage::open_or_import;
use crate::error::bad_option;

/// How a run ended.
pub enum Ended {
    /// The loop finished (by a stop rule or a budget cap): its report and `report.md`.
    Finished(Box<EvolutionReport>, PathBuf),
    /// Stopped from outside (Ctrl-C): the checkpoint holds where it was.
    Interrupted,
    /// Stopped because requests of the model wait for answers (provider `handoff`): the
    /// checkpoint holds where it was, and the same run resumes once they are answered.
    Handoff {
        /// Requests waiting.
        waiting: usize,
        /// The prompts to read and answer.
        prompts: PathBuf,
        /// The file the answers go to.
        answers: PathBuf,
    },
}

/// Most judge calls of a diagnosis in flight at once when the provider is `handoff`: its calls
/// are written to a file and wait for a person, never for a server, so every call of a pass is
/// asked at once and one round gathers them all (under the usual limit, a round would hold
/// only as many as may be in flight).
const HANDOFF_DIAGNOSE_CONCURRENCY: usize = 4096;

/// How many judge calls of a diagnosis may be in flight at once for `config`'s provider.
fn diagnose_concurrency(config: &RunConfig) -> usize {
    let options = crate::llm::LlmOptions::default();
    match config.llm.provider(&options, std::path::Path::new("")) {
        Ok(crate::llm::Provider::Handoff) => HANDOFF_DIAGNOSE_CONCURRENCY,
        _ => DiagnoseOptions::default().concurrency,
    }
}

/// Runs (or resumes) the loop of `config` in `dir` (recording its `inputs` there first),
/// telling `observer` what happens, until it
/// finishes or `stop` completes (the store is then at a consistent version and the
/// checkpoint says where the run was).
pub(super) async fn run_loop(
    config: &RunConfig,
    dir: &RunDir,
    inputs: &RunInputs,
    llm: Arc<dyn LlmProvider>,
    estimate: evolution_harness::Estimate,
    observer: &dyn RunObserver,
    stop: impl std::future::Future<Output = ()>,
) -> anyhow::Result<Ended> {
    super::private::create_private_dir(dir.root())
        .with_context(|| format!("cannot create {}", dir.root().display()))?;
    // Before anything else is written: a later run compares its inputs with these.
    inputs.record(dir)?;
    let store = open_or_import(config, dir)?;
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
    let mut agent_config = config.agent.subprocess_config(dir.workspaces());
    agent_config.packages = crate::skill_package::packages(&crate::agent_workspace::planned(
        &config.skill_docs,
        &config.reference_docs,
        config.prompts.as_deref(),
        &config.prompt_files,
    ))?;
    let agent =
        SubprocessRunner::new(agent_config).map_err(|e| bad_option(format!("[agent]: {e}")))?;
    super::private::create_private_dir(&dir.workspaces())
        .context("cannot create the workspaces folder")?;
    // Every proposal prompt carries the project's house rules (none without them).
    let preferences = &config.preferences.preferences;
    let templates = PromptTemplates::default().with_preferences(preferences);
    // Rubric checks are judged by the run's LLM after the agent answers; an agent that
    // reports its own score is trusted instead, as for every other check.
    let runner = RubricRunner::new(agent, &metered, templates.diagnose.clone())
        .unless_agent_scores(config.agent.agent_scores);
    let proposer = KernelProposer {
        llm: &metered,
        run_log: &log,
        questions: config.train.clone(),
        tree_data: config.tree_data.clone(),
        templates: templates.clone(),
        profile: config.task_skills.apply(config.profile.clone()),
        // Judge only what the proposal is made from (the proposer drops the system-prompt
        // judge on right answers when the workspace has no system prompt).
        diagnose: DiagnoseOptions {
            judges: JudgeScope::ForProposal { system_pack: true },
            concurrency: diagnose_concurrency(config),
            ..DiagnoseOptions::default()
        },
        evolve: EvolveOptions {
            system_prompt_file: config.system_prompt.clone(),
            skill_update_mode: config.skill_update,
            consolidate_threshold: config.consolidate_notes,
            consolidate_chars: config.consolidate_chars,
            ..EvolveOptions::default()
        },
        schedule: config.schedule,
        // A skill's references listed in `[run] evolve_references` are evolved from its case
        // packs too, each its own candidate.
        companions: config.companions(),
    };
    let progress = EventLines::kept_in(observer, &dir.events())
        .with_context(|| format!("cannot open {}", dir.events().display()))?;
    let resume = dir.checkpoint().is_file();
    if resume {
        progress.say(&format!("resuming from {}", dir.checkpoint().display()));
    }
    // The project's ledger of each skill's tests, across runs (`[gate] ledger`).
    let ledger = project_ledger(config, dir)?;
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
        ledger: ledger
            .as_ref()
            .map(|l| l as &dyn evolution_harness::TestLedger),
    };
    let loop_config = config.loop_config(
        Some(templates.slow_update.clone()),
        preferences.clone(),
        Some(estimate),
    );
    let guarantee = guarantee(config);
    let gatekeeper = config
        .gate_settings
        .gatekeeper(format!("{}_gate_", config.name), horizon(config))?;
    let outcome = tokio::select! {
        result = run_evolution(ctx, &loop_config, gatekeeper) => Some(result),
        () = stop => None,
    };
    // Workers (mode = "worker") get end-of-file and a grace period to exit.
    runner.inner().shutdown().await;
    let Some(result) = outcome else {
        return Ok(Ended::Interrupted);
    };
    let report = match result {
        Ok(report) => report,
        // Most rollouts of a phase gave no answer: the run stops with the agent's (or the
        // judge's) own words; the checkpoint and the run log keep where it was.
        Err(LoopError::Validation(ValidationError::TooManyFailures(failures))) => {
            return Err(RunStopped::new(*failures, &dir.runlog()).into());
        }
        Err(e) => return Err(anyhow::anyhow!("the run failed: {e}")),
    };
    // A resumed run keeps the error control it started with (its state is
    // in the checkpoint): the report states that one.
    let (guarantee, gate_params) = match LoopState::load(&checkpoint) {
        Ok(Some(state)) => (
            held(state.gatekeeper.fdr(), state.gatekeeper.params()),
            *state.gatekeeper.params(),
        ),
        _ => (guarantee, config.gate_settings.params),
    };
    let lines = progress.lines();
    let no_candidate = if report.records.is_empty() {
        Some(why_no_candidate(&log, &report).await)
    } else {
        None
    };
    let failures = failures_by_part(&log).await;
    let facts = crate::report_html::RunFacts {
        usage: budget.usage(),
        usage_by_phase: budget.usage_by_phase(),
        budget: config.budget.clone(),
        gate: gate_params,
        infra_by_phase: failures,
    };
    let path = write_report(
        dir,
        &store,
        &report,
        &guarantee,
        RunNotes {
            events: &lines,
            no_candidate: no_candidate.as_deref(),
            unreviewed: config.unreviewed,
        },
        &facts,
    )?;
    crate::report_html::write(dir).await?;
    Ok(Ended::Finished(Box::new(report), path))
}

/// The ledgers the candidates of `config`'s skills are tested by, in the project of `dir`:
/// `None` without `[gate] ledger`, or with `fdr_alpha = "off"` (the ledger stays untouched).
fn project_ledger(
    config: &RunConfig,
    dir: &RunDir,
) -> anyhow::Result<Option<crate::ledger::ProjectLedger>> {
    let Some(budget) = config.gate_settings.ledger_budget() else {
        return Ok(None);
    };
    let project = dir.project();
    Ok(Some(crate::ledger::ProjectLedger {
        files: (config.skill_docs.iter())
            .chain(&config.reference_docs)
            .map(|doc| {
                (
                    doc.document.clone(),
                    crate::ledger::LedgerFile::of(&project, &doc.path),
                )
            })
            .collect(),
        run: dir.ledger_run()?,
        budget,
        reuse_questions: config.gate_settings.reuse_questions,
    }))
}

/// The most candidates the loop of `config` can gate, the horizon over which e-LOND
/// spreads its level evenly (fixed before the run).
///
/// The kernel's proposer makes at most one candidate per task type of the training
/// questions (one case pack each) and one per prompt document, every epoch; from the second
/// epoch on, the slow update adds at most one per skill document. A horizon that is too
/// large only costs power; a candidate past it is not gated at all.
fn horizon(config: &RunConfig) -> u64 {
    config.horizon()
}

/// The error control of a run: e-LOND over every candidate the loop can
/// gate (its [`horizon`]), or (with `fdr_alpha = "off"`) only each
/// candidate's own bound.
fn guarantee(config: &RunConfig) -> Guarantee {
    let params = &config.gate_settings.params;
    match config.gate_settings.fdr_alpha {
        Some(alpha) => Guarantee::Fdr {
            alpha,
            horizon: horizon(config),
        },
        None => Guarantee::PerCandidate {
            e_confirm: params.e_confirm,
            e_provisional: params.e_provisional,
        },
    }
}

/// The error control a gatekeeper applied: its e-LOND controller, or the
/// per-candidate bounds of its parameters.
fn held(fdr: Option<&ELond>, params: &evolution_gate::GateParams) -> Guarantee {
    match fdr {
        Some(fdr) => Guarantee::Fdr {
            alpha: fdr.alpha(),
            horizon: match fdr.gamma() {
                GammaSequence::Horizon { proposals } => proposals,
                // `run` only builds horizons; any other sequence has none.
                GammaSequence::Lord | GammaSequence::Quadratic => u64::MAX,
            },
        },
        None => Guarantee::PerCandidate {
            e_confirm: params.e_confirm,
            e_provisional: params.e_provisional,
        },
    }
}
