//! `skill-evolve run --config evolve.toml`: the harness loop on a folder of
//! skills, from a configuration checked in full before anything runs.
//!
//! - [`config`]: the configuration file, parsed and checked (a leaf);
//! - [`dir`]: [`RunDir`], every path of a run's folder;
//! - [`wiring`]: the adapters and the harness loop;
//! - [`progress`]: the progress bars and event lines;
//! - [`report`]: `report.md` and `report.json`;
//! - [`rubric`]: rubric checks scored by the run's LLM;
//! - [`stage`]: where each document came from, and the staged proposal
//!   `adopt` writes back.
//!
//! This file is the command: the pre-flight estimate, the check that the run
//! name's store was made for these documents (or `--fresh`), the dry run, and how
//! the run ended.

pub(crate) mod config;
pub(crate) mod dir;
pub(crate) mod progress;
mod report;
pub(crate) mod rubric;
pub(crate) mod stage;
mod wiring;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use evolution_harness::{Estimate, RunPlan};
use evolution_types::GeneratedQuestion;

use self::config::{RunConfig, load};
use self::dir::RunDir;
use self::wiring::{Ended, run_loop};
use crate::cli::{LlmArgs, RunArgs};
use crate::config::{LlmSource, build_llm_from};
use crate::error::{bad_at, bad_option};
use crate::out::{out, outln};
use crate::probe::check_folder_writable;

/// Assumed LLM calls of diagnosis per training question (five judges and
/// the defect-vs-lapse call); spans add more, so the estimate is a floor
/// for span-heavy agents.
const DIAGNOSIS_CALLS_PER_QUESTION: u64 = 6;
/// Assumed LLM calls per candidate: evolve, rank, consolidate.
const CALLS_PER_CANDIDATE: u64 = 3;
/// Assumed average tokens per call.
const PROMPT_TOKENS_PER_CALL: u64 = 3_000;
/// Assumed average completion tokens per call.
const COMPLETION_TOKENS_PER_CALL: u64 = 600;

/// The worst-case plan of a configuration.
pub(crate) fn estimate(config: &RunConfig) -> Estimate {
    let n = |len: usize| u64::try_from(len).unwrap_or(u64::MAX);
    let judged = |set: &[GeneratedQuestion]| {
        if config.agent.agent_scores {
            0
        } else {
            n(rubric::count_rubrics(set))
        }
    };
    let plan = RunPlan {
        epochs: u64::from(config.max_epochs),
        diagnosis_questions: n(config.train.len()),
        // One candidate per skill, at most one per prompt document.
        candidates_per_epoch: n(config
            .skill_files
            .len()
            .saturating_add(config.prompt_files.len())),
        gate_questions: n(config.gate.len()),
        diagnosis_calls_per_epoch: n(config.train.len())
            .saturating_mul(DIAGNOSIS_CALLS_PER_QUESTION),
        calls_per_candidate: CALLS_PER_CANDIDATE,
        slow_update_calls_per_epoch: 1,
        // The slow update's guidance is gated: one candidate per skill.
        slow_update_candidates_per_epoch: n(config.skill_files.len()),
        probation_questions: n(config.probation.len()),
        // Rubric answers cost a judge call each, unless the agent scores them itself.
        judged_diagnosis_questions: judged(&config.train),
        judged_gate_questions: judged(&config.gate).saturating_add(judged(&config.probation)),
        prompt_tokens_per_call: PROMPT_TOKENS_PER_CALL,
        completion_tokens_per_call: COMPLETION_TOKENS_PER_CALL,
        model: config.model.clone(),
    };
    Estimate::of(&plan, &config.budget)
}

/// The plan and estimate, as printed before a run.
pub(crate) fn preflight(config: &RunConfig, estimate: &Estimate, llm: &str) -> String {
    let mut out = format!(
        "run {:?}: {} skill document(s) in {}\n\
         agent: {} {}\n\
         questions: {} train, {} gate, {} holdout\n\
         gate: {} parameters, blocks {:?}, INFRA guard {:.0}%, {}{}\n\
         evolve: {}; edit budget {}\n\
         llm: {llm}\n\
         pre-flight estimate (worst case, {} epoch(s)): {} LLM calls, {} tokens{}, {} agent rollouts\n",
        config.name,
        config.skill_files.len(),
        config.skills.display(),
        config.agent.program.display(),
        config.agent.args.join(" "),
        config.train.len(),
        config.gate.len(),
        config.holdout.len(),
        config.gate_settings.preset,
        config.gate_settings.ladder,
        config.gate_settings.guard_err * 100.0,
        match config.gate_settings.fdr_alpha {
            Some(alpha) => format!("false-discovery rate at most {alpha} over the run (e-LOND)"),
            None => "no run-wide error control (fdr_alpha = \"off\")".to_owned(),
        },
        if config.probation.is_empty() {
            String::new()
        } else {
            format!(
                ", {} gate question(s) held back for probation",
                config.probation.len()
            )
        },
        match &config.prompts {
            Some(dir) if !config.prompt_files.is_empty() => format!(
                "skills and {} prompt document(s) in {} (system prompt {})",
                config.prompt_files.len(),
                dir.display(),
                config.system_prompt
            ),
            _ => "skills only".to_owned(),
        },
        config.schedule_text,
        config.max_epochs,
        estimate.llm_calls,
        estimate.tokens,
        estimate
            .cost
            .map(|c| format!(", cost {c:.2}"))
            .unwrap_or_default(),
        estimate.rollouts,
    );
    if config.unreviewed > 0 {
        out.push_str(&format!(
            "unreviewed: {} question(s) marked \"reviewed\": false run anyway \
             (--allow-unreviewed)\n",
            config.unreviewed
        ));
    }
    let rubrics: usize = [
        &config.train,
        &config.gate,
        &config.probation,
        &config.holdout,
    ]
    .into_iter()
    .map(|set| rubric::count_rubrics(set.as_slice()))
    .sum();
    if rubrics > 0 {
        out.push_str(&format!(
            "rubric checks: {rubrics} question(s), {}\n",
            if config.agent.agent_scores {
                "scored by the agent (scoring = \"agent_reported\")"
            } else {
                "each answer judged by the LLM (one call per answer, counted in the \
                 estimate)"
            }
        ));
    }
    out.push_str(&format!(
        "skills: {}; appendix notes merged at {} notes or past {} characters\n",
        match config.skill_update {
            evolution_evolve::SkillUpdateMode::Patch => "patched with small edits",
            evolution_evolve::SkillUpdateMode::Rewrite => "rewritten whole (never longer)",
        },
        config.consolidate_notes,
        config.consolidate_chars
    ));
    for (task, document) in &config.task_skills.by_task {
        out.push_str(&format!("  task type {task:?} → {document}\n"));
    }
    out.push_str(&format!(
        "profile: {}\n",
        crate::profile::describe(&config.profile)
    ));
    for over in &estimate.over_limits {
        out.push_str(&format!(
            "  note: {over}; the run stops at the cap and the same command continues it after you raise it\n"
        ));
    }
    out
}

/// The run configuration `init` writes, looked for when `--config` is not given.
const RUN_CONFIG: &str = "evolve.toml";

/// `evolve.toml` in the current folder or the nearest folder above it.
fn find_run_config() -> anyhow::Result<PathBuf> {
    let cwd = std::env::current_dir().context("cannot read the current folder")?;
    cwd.ancestors()
        .map(|dir| dir.join(RUN_CONFIG))
        .find(|path| path.is_file())
        .ok_or_else(|| {
            bad_option(format!(
                "no {RUN_CONFIG} in this folder or a folder above it: `skill-evolve init` \
                 writes one, or name it with --config FILE"
            ))
        })
}

/// `skill-evolve run`: load and check, print the pre-flight, then run (or resume).
pub(crate) fn run(args: &RunArgs) -> anyhow::Result<ExitCode> {
    let config_path = match &args.config {
        Some(path) => path.clone(),
        None => find_run_config()?,
    };
    tracing::info!(
        "run configuration: {}",
        crate::render::terminal_safe(&config_path.display().to_string())
    );
    let config = load(&config_path, args)?;
    let dir = RunDir::of(&config_path, &config.name);
    // Before the model is built (a recording opens its file) and long before
    // the first rollout or LLM call.
    check_folder_writable(dir.root()).map_err(|e| {
        bad_at(
            dir.root(),
            None,
            format!(
                "cannot be the run folder: {e}; no agent was started and nothing was sent to \
                 the model"
            ),
        )
    })?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let llm_args = LlmArgs {
        config: None,
        provider: None,
        base_url: None,
        model: None,
        api_key_env: None,
        cassette: None,
        record: args.record.clone(),
    };
    let llm = runtime.block_on(build_llm_from(
        &llm_args,
        &config.llm,
        Some(config_path.clone()),
        LlmSource::RunConfig,
    ))?;
    let estimate = estimate(&config);
    if !args.fresh {
        stage::check_same_documents(&config, &dir)?;
    }
    out!("{}", preflight(&config, &estimate, &llm.description));
    if args.dry_run {
        if args.fresh && dir.root().exists() {
            outln!(
                "--fresh: the run would start over ({} would be deleted)",
                dir.root().display()
            );
        }
        outln!("dry run: the configuration is valid; nothing was run or written");
        return Ok(ExitCode::SUCCESS);
    }
    if args.fresh && dir.root().exists() {
        std::fs::remove_dir_all(dir.root())
            .with_context(|| format!("cannot delete {}", dir.root().display()))?;
        outln!(
            "--fresh: deleted the earlier state of run {:?}",
            config.name
        );
    }
    let ended = runtime.block_on(run_loop(&config, &dir, llm.provider, estimate))?;
    match ended {
        Ended::Interrupted => {
            outln!(
                "interrupted: the store is at a consistent version and {} holds where the run \
                 was; run the same command to resume",
                dir.checkpoint().display()
            );
            Ok(ExitCode::from(130))
        }
        Ended::Finished(report, path) => {
            outln!(
                "finished ({:?}) after {} epoch(s): version {} → {}; {} candidate(s), {} accepted",
                report.stop_reason,
                report.epochs,
                report.initial_version,
                report.final_version,
                report.records.len(),
                report.records.iter().filter(|r| r.accepted).count()
            );
            outln!("report: {}", path.display());
            outln!("html report: {}", dir.report_html().display());
            match stage::read_proposal(&dir)? {
                Some(p) if !p.documents.is_empty() => outln!(
                    "staged {} document(s) in {}; your files are unchanged until you run \
                     `skill-evolve adopt {}`",
                    p.documents.len(),
                    dir.staged().display(),
                    config.name
                ),
                _ => outln!("nothing staged: your files stay as they are"),
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}
