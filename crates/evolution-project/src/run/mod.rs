//! A run: the harness loop on a folder of skills, from a configuration checked in full
//! before anything runs.
//!
//! - [`config`]: the configuration file, parsed and checked (a leaf);
//! - [`dir`]: [`RunDir`], every path of a run's folder;
//! - `wiring.rs`: the adapters and the harness loop;
//! - [`events`]: what an observer sees of a run, and the event lines of its report;
//! - [`failures`]: the stop of a run whose agent (or rubric judge) failed on most questions
//!   of a phase, and the failed rollouts per phase that `status` and the reports show;
//! - [`inputs`]: what a run was started with, compared before it resumes;
//! - [`report`]: `report.md` and `report.json`;
//! - [`rubric`]: rubric checks scored by the run's LLM;
//! - [`stage`]: where each document came from, and the staged proposal
//!   `adopt` writes back.
//!
//! This file holds the pre-flight estimate and finds the run configuration.

pub mod config;
pub mod dir;
pub mod events;
pub mod failures;
pub mod inputs;
pub(crate) mod private;
pub mod report;
pub mod rubric;
pub mod stage;
mod unreadable;
mod wiring;

use std::path::{Path, PathBuf};

use evolution_harness::{AnswerCheck, Estimate, RunPlan};
use evolution_llm_cassette::MeasuredSpeed;
use evolution_types::{ChatMessage, ChatOptions, GeneratedQuestion};

use std::sync::OnceLock;

use self::config::{RunConfig, RunOptions};
use self::dir::{RunDir, RunLock, StartedOver};
use self::events::RunObserver;
use self::inputs::RunInputs;
pub use self::wiring::Ended;
use self::wiring::run_loop;
use crate::error::{bad_at, bad_option};
use crate::llm::{Llm, LlmOptions, LlmSource, Provider, build_llm_from};
use crate::probe::check_folder_writable;

/// The folder of a run where a `handoff` provider writes its prompts and reads its answers.
pub const HANDOFF_DIR: &str = "handoff";

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
pub fn estimate(config: &RunConfig) -> Estimate {
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
        // One candidate per skill and per reference evolved with it, at most one per prompt
        // document.
        candidates_per_epoch: n(config
            .skill_files
            .len()
            .saturating_add(config.reference_docs.len())
            .saturating_add(config.prompt_files.len())),
        gate_questions: n(config.gate.len()),
        diagnosis_calls_per_epoch: n(config.train.len())
            .saturating_mul(DIAGNOSIS_CALLS_PER_QUESTION),
        calls_per_candidate: CALLS_PER_CANDIDATE,
        slow_update_calls_per_epoch: 1,
        // The slow update's guidance is gated: one candidate per skill (and reference).
        slow_update_candidates_per_epoch: n(config
            .skill_files
            .len()
            .saturating_add(config.reference_docs.len())),
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

/// What is known of the speed of a run's model before the run, and where it was measured.
#[derive(Debug, Clone)]
pub struct KnownSpeed {
    /// The measured calls.
    pub speed: MeasuredSpeed,
    /// Where they were measured, completing "measured …": `over 12 calls of earlier runs of
    /// this project`, `on one short call just now`, …
    pub source: String,
}

/// Most earlier run folders whose journals [`measured_speed`] reads.
const MAX_JOURNALS: usize = 20;

/// The speed of `llm` as measured before this run (never for a handoff, answered outside): a
/// replay's cassette as it was recorded;
/// for a live model, the calls it answered in the journals of the project's runs (under
/// `runs`); for the embedded model when those hold none, one short call made now (a local
/// call costs nothing). `Err` says why the speed is unknown.
pub async fn measured_speed(llm: &Llm, runs: &Path) -> Result<KnownSpeed, String> {
    if llm.kind == Provider::Handoff {
        return Err("the requests are answered outside this program".to_owned());
    }
    if llm.kind == Provider::Replay {
        return match llm.recorded_speed {
            Some(speed) if speed.calls > 0 => Ok(KnownSpeed {
                speed,
                source: "when the cassette was recorded".to_owned(),
            }),
            _ => Err("the cassette records no call times".to_owned()),
        };
    }
    let mut folders: Vec<PathBuf> = std::fs::read_dir(runs)
        .map(|entries| entries.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    folders.sort();
    let mut speed = MeasuredSpeed::default();
    let mut runs_measured = 0usize;
    for folder in folders.iter().take(MAX_JOURNALS) {
        let journal = folder.join(evolution_llm_cassette::LLM_JOURNAL_FILE);
        if let Some(found) = MeasuredSpeed::of_file(&journal, &llm.model)
            && found.calls > 0
        {
            speed.merge(&found);
            runs_measured = runs_measured.saturating_add(1);
        }
    }
    if speed.calls > 0 {
        return Ok(KnownSpeed {
            speed,
            source: format!(
                "over {} of {} of this project",
                plural(speed.calls, "call", "calls"),
                plural(
                    u64::try_from(runs_measured).unwrap_or(u64::MAX),
                    "earlier run",
                    "earlier runs"
                )
            ),
        });
    }
    if llm.kind != Provider::Local {
        return Err(format!(
            "no earlier run of this project called {}; the first run's journal measures it",
            crate::render::terminal_safe(&llm.model)
        ));
    }
    // Free text: a JSON reply cut short by the token budget would be an error.
    let options = ChatOptions::default()
        .with_max_tokens(SPEED_PROBE_TOKENS)
        .with_temperature(0.0)
        .with_tag("run.speed_probe");
    let reply = llm
        .provider
        .chat(&[ChatMessage::user(SPEED_PROBE_PROMPT)], &options)
        .await
        .map_err(|e| format!("the short call that measures it failed: {}", e.message()))?;
    let mut speed = MeasuredSpeed::default();
    speed.add(&reply);
    if speed.calls == 0 {
        return Err("the short call that measures it reported no time".to_owned());
    }
    Ok(KnownSpeed {
        speed,
        source: "on one short call just now, in free text: replies held to a JSON schema can \
                 take up to twice as long"
            .to_owned(),
    })
}

/// Most tokens the embedded model's speed probe generates.
const SPEED_PROBE_TOKENS: u32 = 32;

/// The request that measures the embedded model's speed: a short task like the run's own.
const SPEED_PROBE_PROMPT: &str = "A skill document tells an agent how to write release notes. \
    One answer left out a crash fix that users had reported, and another listed an internal \
    refactoring as a user-facing change. Write one sentence to add to the skill so that both \
    mistakes are avoided next time.";

/// `n` and the word for it: `1 call`, `2 calls`.
fn plural(n: u64, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

/// A duration for a person: `40 s`, `12 min`, `3 h 20 min`, `2 d 4 h`.
fn readable_duration(seconds: f64) -> String {
    let total = if seconds.is_finite() && seconds > 0.0 {
        // Rounded up to whole seconds; a f64 beyond u64 saturates.
        seconds.ceil() as u64
    } else {
        0
    };
    let (minutes, hours, days) = (total / 60, total / 3600, total / 86_400);
    if total < 60 {
        format!("{total} s")
    } else if hours == 0 {
        format!(
            "{} min",
            minutes.saturating_add(u64::from(total % 60 >= 30))
        )
    } else if days == 0 {
        format!("{hours} h {} min", minutes % 60)
    } else {
        format!("{days} d {} h", hours % 24)
    }
}

/// The pre-flight's wall-time line: how long the estimate's LLM calls take at `speed` (one
/// at a time, the worst case), or why that is unknown; agent rollouts are not timed before
/// they run.
pub fn wall_time_line(
    estimate: &Estimate,
    llm: &Llm,
    speed: &Result<KnownSpeed, String>,
) -> String {
    let prompt = estimate.llm_calls.saturating_mul(PROMPT_TOKENS_PER_CALL);
    let completion = estimate
        .llm_calls
        .saturating_mul(COMPLETION_TOKENS_PER_CALL);
    let rollouts = format!(
        "the {} add their own time, not known before they run",
        plural(estimate.rollouts, "agent rollout", "agent rollouts")
    );
    let rate = |speed: &MeasuredSpeed| match (speed.split_per_second(), speed.tokens_per_second()) {
        (Some((p, c)), _) => format!("{p:.0} prompt and {c:.1} completion tokens/s"),
        (None, Some(t)) => format!("{t:.0} tokens/s"),
        (None, None) => "an unknown speed".to_owned(),
    };
    let model = crate::render::terminal_safe(&llm.model);
    match speed {
        Ok(known) if llm.kind == Provider::Replay => format!(
            "wall time (worst case): the LLM calls are answered from the cassette at once \
             ({model} ran at {} {}{}); {rollouts}\n",
            rate(&known.speed),
            known.source,
            known
                .speed
                .seconds_for(prompt, completion)
                .map(|s| format!(": about {} live", readable_duration(s)))
                .unwrap_or_default(),
        ),
        Ok(known) => match known.speed.seconds_for(prompt, completion) {
            Some(seconds) => format!(
                "wall time (worst case): the LLM calls take about {} one at a time, at {} (the \
                 speed of {model} measured {}); {rollouts}\n",
                readable_duration(seconds),
                rate(&known.speed),
                known.source,
            ),
            None => format!("wall time: unknown (no usable measurement of {model}); {rollouts}\n"),
        },
        Err(_) if llm.kind == Provider::Replay => format!(
            "wall time (worst case): the LLM calls are answered from the cassette at once; \
             {rollouts}\n"
        ),
        Err(why) => format!("wall time: unknown ({why}); {rollouts}\n"),
    }
}

/// The plan and estimate, as printed before a run; `model_lines` (each ending in a newline,
/// such as the [`wall_time_line`]) follow the estimate.
pub fn preflight(config: &RunConfig, estimate: &Estimate, llm: &str, model_lines: &str) -> String {
    let mut out = format!(
        "run {:?}: {} skill document(s) in {}\n\
         agent: {} {}\n\
         questions: {} train, {} gate, {} holdout\n\
         gate: {} parameters, blocks {:?}{}, INFRA guard {:.0}%, {}{}\n\
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
        match config.gate_settings.params.futility_risk {
            Some(risk) =>
                format!(", a candidate that mostly ties stops early (futility_risk {risk})"),
            None => String::new(),
        },
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
    if !config.reference_docs.is_empty() {
        let files: Vec<String> = config
            .reference_docs
            .iter()
            .map(|d| d.path.display().to_string())
            .collect();
        out.push_str(&format!(
            "references evolved as documents of their own ([run] evolve_references): {}\n",
            crate::render::terminal_safe(&files.join(", "))
        ));
    }
    out.push_str(model_lines);
    out.push_str(&config.gate_settings.ledger_line());
    out.push_str(&config.probation_note);
    out.push('\n');
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
    out.push_str(&form_only_line(config));
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
    if let Some(line) = config.preferences.describe() {
        out.push_str(&format!("{line}\n"));
    }
    for over in &estimate.over_limits {
        out.push_str(&format!(
            "  note: {over}; the run stops at the cap and the same command continues it after you raise it\n"
        ));
    }
    out
}

/// How many ids [`form_only_line`] names.
const FORM_ONLY_IDS: usize = 3;

/// One line when questions of the run are scored by their form alone (a check of only
/// `section_present`, `min_chars`, `max_chars`, `no_refusal` or `tool_called`: a skill can
/// teach the agent to pass it without a right answer), naming how many and the first ids;
/// empty when none is.
pub fn form_only_line(config: &RunConfig) -> String {
    let gameable: Vec<&GeneratedQuestion> = [
        &config.train,
        &config.gate,
        &config.probation,
        &config.holdout,
    ]
    .into_iter()
    .flatten()
    .filter(|q| matches!(AnswerCheck::of(q), Ok(Some(check)) if check.is_form_only()))
    .collect();
    if gameable.is_empty() {
        return String::new();
    }
    let mut ids: Vec<String> = gameable
        .iter()
        .take(FORM_ONLY_IDS)
        .map(|q| format!("\"{}\"", crate::render::terminal_safe(&q.question_id)))
        .collect();
    if gameable.len() > FORM_ONLY_IDS {
        ids.push("…".to_owned());
    }
    format!(
        "gameable checks: {} question(s) are scored by their form alone (section_present, \
         min_chars, max_chars, no_refusal or tool_called, with no content check), which a \
         skill can pass without a right answer: {}; add a content check (contains, regex, \
         exact, section_contains, json_field or rubric) in an all_of\n",
        gameable.len(),
        ids.join(", ")
    )
}

/// Which question ids fall in each part of the split (train, gate, probation, holdout), one
/// line each, as `run --dry-run` lists them; ids are escaped for a terminal.
pub fn split_listing(config: &RunConfig) -> String {
    let mut out = String::from("split (question ids, in the order each part is used):\n");
    for (part, set) in [
        ("train", &config.train),
        ("gate", &config.gate),
        ("probation", &config.probation),
        ("holdout", &config.holdout),
    ] {
        let ids: Vec<String> = set
            .iter()
            .map(|q| crate::render::terminal_safe(&q.question_id).into_owned())
            .collect();
        out.push_str(&format!(
            "  {part} ({}): {}\n",
            ids.len(),
            if ids.is_empty() {
                "none".to_owned()
            } else {
                ids.join(", ")
            }
        ));
    }
    out
}

/// The run configuration `init` writes, looked for when `--config` is not given.
pub const RUN_CONFIG: &str = "evolve.toml";

/// `evolve.toml` in `start` or the nearest folder above it.
pub fn find_run_config(start: &Path) -> anyhow::Result<PathBuf> {
    start
        .ancestors()
        .map(|dir| dir.join(RUN_CONFIG))
        .find(|path| path.is_file())
        .ok_or_else(|| {
            bad_option(format!(
                "no {RUN_CONFIG} in this folder or a folder above it: `skill-evolve init` \
                 writes one, or name it with --config FILE"
            ))
        })
}

/// A run ready to start: its configuration checked, its folder writable, its model built.
pub struct PreparedRun {
    /// The checked configuration.
    pub config: RunConfig,
    /// The configuration file it came from.
    pub config_path: PathBuf,
    /// The run's folder.
    pub dir: RunDir,
    /// The LLM the run calls, and its description.
    pub llm: Llm,
    /// The worst-case plan of the configuration.
    pub estimate: Estimate,
    /// What the gate can accept for each skill (on the gate questions of its task types),
    /// and on the whole gate set when prompts are evolved or one skill serves them all.
    pub reaches: Vec<config::GateReach>,
    /// The model's speed as measured before the run, or why it is unknown
    /// ([`measured_speed`]).
    pub speed: Result<KnownSpeed, String>,
    /// The lock of the run's name, once taken.
    lock: OnceLock<RunLock>,
    /// What the run's results depend on, recorded in its folder when it starts.
    pub inputs: RunInputs,
}

/// Loads and checks the run configuration at `config_path` (`options` winning over its
/// keys), checks that its run folder can be written, and builds its LLM (recording every call
/// into `record` when given). Unless `fresh`, an earlier run of the same name must have been
/// started with the same inputs (documents, questions, split and the settings that change
/// results, see [`inputs`]): it resumes, or nothing does. Nothing is run and no agent is
/// started.
///
/// # Errors
/// Every problem with the configuration or the inputs it names is a bad input, found before
/// any call is made.
pub async fn prepare(
    config_path: &Path,
    options: &RunOptions,
    record: Option<PathBuf>,
    fresh: bool,
) -> anyhow::Result<PreparedRun> {
    tracing::info!(
        "run configuration: {}",
        crate::render::terminal_safe(&config_path.display().to_string())
    );
    let config = config::load(config_path, options)?;
    let dir = RunDir::of(config_path, &config.name);
    // A run never writes (nor deletes) through a linked `.skill-evolve`, runs or run folder.
    dir.refuse_links()?;
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
    // Before the model is built too (`--record` replaces its cassette): a gate set too
    // small for any accept would spend every rollout for nothing.
    // Each skill's candidates are gated on the questions of its own task types.
    let reaches = config.check_reaches(config_path)?;
    let llm_options = LlmOptions {
        record,
        handoff_dir: Some(dir.root().join(HANDOFF_DIR)),
        ..LlmOptions::default()
    };
    let llm = build_llm_from(
        &llm_options,
        &config.llm,
        Some(config_path.to_path_buf()),
        LlmSource::RunConfig,
    )
    .await?;
    let estimate = estimate(&config);
    let inputs = RunInputs::of(&config)?;
    if !fresh {
        stage::check_same_documents(&config, &dir)?;
        inputs.check_resumable(&config, &dir)?;
    }
    let runs = dir
        .root()
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let speed = measured_speed(&llm, &runs).await;
    Ok(PreparedRun {
        config,
        config_path: config_path.to_path_buf(),
        dir,
        llm,
        estimate,
        reaches,
        speed,
        lock: OnceLock::new(),
        inputs,
    })
}

impl PreparedRun {
    /// The plan and estimate, as shown before a run.
    pub fn preflight(&self) -> String {
        let mut model = wall_time_line(&self.estimate, &self.llm, &self.speed);
        if let Some(note) = self.llm.quality_note {
            model.push_str(note);
            model.push('\n');
        }
        let mut out = preflight(&self.config, &self.estimate, &self.llm.description, &model);
        for reach in &self.reaches {
            out.push_str(&reach.lines());
        }
        out.push_str(&measured_line(&self.dir));
        out
    }

    /// Takes the lock of the run's name (`.<name>.lock` in the runs folder) for as long as
    /// this prepared run lives, unless it holds it already. [`PreparedRun::start_over`] and
    /// [`PreparedRun::execute`] take it too; a caller takes it first to be refused before it
    /// shows anything.
    ///
    /// # Errors
    /// Another process running this name (bad input naming the lock file and its holder), or
    /// a linked run folder.
    pub fn lock(&self) -> anyhow::Result<()> {
        if self.lock.get().is_none() {
            let lock = self.dir.lock()?;
            let _ = self.lock.set(lock);
        }
        Ok(())
    }

    /// Deletes the earlier state of this run name (what `--fresh` asks for); `false` when
    /// there was none. See [`PreparedRun::start_over_keeping`].
    ///
    /// # Errors
    /// As [`PreparedRun::start_over_keeping`].
    pub fn start_over(&self) -> anyhow::Result<bool> {
        self.start_over_keeping().map(|done| done.deleted)
    }

    /// Deletes what earlier runs of this name wrote in its folder, holding the name's lock;
    /// files the run did not write stay, and are listed, with the number of handoff answers
    /// the new start will reuse for the requests it asks again.
    ///
    /// # Errors
    /// Another process running this name, a linked folder, or an entry that cannot be
    /// deleted.
    pub fn start_over_keeping(&self) -> anyhow::Result<StartedOver> {
        self.lock()?;
        let mut done = self.dir.delete_own()?;
        done.handoff_answers = self.llm.handoff.as_ref().map_or(0, |h| h.answered());
        Ok(done)
    }

    /// Runs (or resumes from its checkpoint) the loop, telling `observer` what happens,
    /// until it finishes or `stop` completes.
    ///
    /// # Errors
    /// A failure of the run (the agent's protocol, the store, the model); the checkpoint
    /// keeps what was done. When most rollouts of a phase gave no answer, the error is a
    /// [`failures::RunStopped`] (its `lines` quote the agent's last error output), and the
    /// same command resumes the run once the agent is fixed.
    pub async fn execute(
        self,
        observer: &dyn RunObserver,
        stop: impl std::future::Future<Output = ()>,
    ) -> anyhow::Result<Ended> {
        self.lock()?;
        // Before anything is written there, and again once the run has written: owner-only,
        // and no link anywhere in it.
        self.dir.make_private()?;
        // A host agent that cannot log in here (a bare environment: cron, an MCP host) would
        // fail every question: said in one line before the first.
        self.config.agent.check_host()?;
        let handoff = self.llm.handoff.clone();
        if let Some(handoff) = &handoff {
            handoff
                .clear_prompts()
                .map_err(|e| anyhow::anyhow!("handoff: {e}"))?;
        }
        let handed_off = async {
            match &handoff {
                Some(handoff) => handoff.waiting().await,
                None => std::future::pending().await,
            }
        };
        let stop = async {
            tokio::select! {
                () = stop => {},
                () = handed_off => {},
            }
        };
        let ended = run_loop(
            &self.config,
            &self.dir,
            &self.inputs,
            self.llm.provider,
            self.estimate,
            observer,
            stop,
        )
        .await;
        let private = self.dir.make_private();
        let ended = ended?;
        private?;
        if handoff.is_some() && matches!(ended, Ended::Finished(..)) {
            unreadable::report_unreadable(&self.dir, &self.dir.root().join(HANDOFF_DIR))?;
        }
        Ok(match (ended, &handoff) {
            (Ended::Interrupted, Some(handoff)) if handoff.waiting_count() > 0 => {
                let files = handoff.files();
                Ended::Handoff {
                    waiting: handoff.waiting_count(),
                    prompts: files.prompts,
                    answers: files.answers,
                }
            }
            (ended, _) => ended,
        })
    }
}

/// What the last run of this name measured of the agent (its checkpoint): how often it
/// answered a training question differently when asked again, and the share of gate pairs
/// that were discordant; empty when nothing was measured yet.
fn measured_line(dir: &RunDir) -> String {
    let checkpoint = evolution_store_fs::FileCheckpoint::new(dir.checkpoint());
    let Ok(Some(state)) = evolution_harness::LoopState::load(&checkpoint) else {
        return String::new();
    };
    let keeper = &state.gatekeeper;
    let mut parts = Vec::new();
    if let Some(noise) = keeper.agent_noise() {
        parts.push(format!(
            "the agent answered {} of {} training question(s) differently when asked again \
         (each gate question asked {} time(s))",
            noise.disagreed,
            noise.questions,
            keeper.answers_per_question()
        ));
    }
    let tally = keeper.discordance();
    if tally.paired > 0 {
        parts.push(format!(
            "{} of {} paired answers were discordant",
            tally.discordant, tally.paired
        ));
    }
    if parts.is_empty() {
        return String::new();
    }
    format!(
        "measured by the last run of this name: {}\n",
        parts.join("; ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_a_person_says_them() {
        let cases = [
            (0.0, "0 s"),
            (f64::NAN, "0 s"),
            (0.2, "1 s"),
            (59.0, "59 s"),
            (89.0, "1 min"),
            (90.0, "2 min"),
            (1740.0, "29 min"),
            (3600.0, "1 h 0 min"),
            (12_000.0, "3 h 20 min"),
            (187_200.0, "2 d 4 h"),
            (f64::INFINITY, "0 s"),
        ];
        for (seconds, shown) in cases {
            assert_eq!(readable_duration(seconds), shown, "{seconds}");
        }
        assert_eq!(plural(1, "call", "calls"), "1 call");
        assert_eq!(plural(0, "call", "calls"), "0 calls");
    }
}
