//! `skill-evolve evolve`: the reflect → meta-reflect loop on one skill document.
//!
//! ① load the failure trajectories (a folder, a SESSION-STATE.md, or both) →
//! ② reflect (one LLM call per batch: suggestions and edits) → ③ aggregate
//! (`aggregate_patches`) → ④ select (`rank_and_clip` to the round's budget
//! from the schedule) → ⑤ update (`apply_patch_with_report`, frontmatter
//! and protected regions untouched) → ⑥ meta-reflect (`validate_skill`,
//! then an LLM check of which failures the candidate addresses). Rounds
//! repeat on the failures still open, up to `--rounds`, and stop early when
//! every failure is addressed, when a round proposes the same edits as the
//! one before, or when a round does not improve on the previous one.
//! `--slow-update` then consolidates long-term guidance into the skill's
//! slow-update region.
//!
//! With `--agent-config` the candidate (and the slow update's result, a
//! candidate of its own) is gated: baseline and candidate answer the same
//! gate questions of the configured agent, the e-process decides, and only
//! a candidate that passes is offered (`gating`). Without it the candidate
//! is ungated, and the summary and `report.json` say so in plain words.
//! Then the diff and the table of edits are shown and nothing is written
//! until the user says yes.
//!
//! - the library's `evolve::trajectories`: the inputs, through the harness's ingestion;
//! - [`rounds`]: the kernel's loop with the command's flags;
//! - the library's `evolve::gating`: the gate session in the run folder;
//! - the library's `evolve::slow`: the slow update's comparison, gated or not.

mod model;
mod rounds;
mod session;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context as _;
use evolution_evolve::EditBudgetSchedule;
use evolution_evolve::reflect::Round;
use evolution_harness::{Budget, MeteredLlm, Phase, PromptTemplates, Usage};
use evolution_types::LlmProvider;
use serde::Serialize;
use serde_json::Value;

use self::model::SessionModel;
use self::rounds::{Outcome, evolve_loop};
use self::session::{Dropped, Session};
use crate::cli::EvolveArgs;
use crate::confirm::{Answer, ask_yes_no, stdin_is_terminal};
use crate::doctor::region_problems;
use crate::out::{out, outln};
use crate::render::{colour_diff, table, terminal_safe, unified_diff};
use crate::store::{document_name, skill_dir, store_root, write_new_version};
use evolution_project::error::{bad_at, bad_option};
use evolution_project::evolve::gating::{
    GateTarget, UNGATED_NOTE, Verdict, budget_of, check_disjoint, check_fresh,
};
use evolution_project::evolve::slow::SlowReport;
use evolution_project::evolve::trajectories::{Loaded, load_sources};
use evolution_project::input::read_document;
use evolution_project::input::read_prompt_templates;
use evolution_project::llm::LlmOptions;
use evolution_project::preferences::ProjectPreferences;
use evolution_project::run::HANDOFF_DIR;
use evolution_project::run::config::{GateReach, GatingConfig, load_gating};
use evolution_project::run::dir::RunDir;
use evolution_project::skill_store::{evolve_session_root, handoff_session_root};
use evolution_project::working_copy::writable_target;

/// Where human-readable output goes: stdout, or stderr when stdout carries JSON.
#[derive(Clone, Copy)]
struct Out {
    json: bool,
}

impl Out {
    /// Prints `text` with control characters escaped: much of it (edit
    /// reasons, summaries, file notes) comes from an LLM or from files.
    fn say(self, text: &str) {
        self.say_styled(&terminal_safe(text));
    }

    /// Prints text this program styled itself (a coloured diff, whose lines
    /// `colour_diff` escaped before colouring).
    fn say_styled(self, text: &str) {
        if self.json {
            eprint!("{text}");
        } else {
            out!("{text}");
        }
    }
}

/// The whole run, as `--json` prints it and `report.json` keeps it.
#[derive(Debug, Serialize)]
struct Summary {
    skill: String,
    run_dir: String,
    provider: String,
    failures: usize,
    passed_trajectories: usize,
    rounds: Vec<Round>,
    stop_reason: String,
    llm_calls: u32,
    changed: bool,
    written: bool,
    version: Option<String>,
    candidate: Option<String>,
    /// The unified diff of the original to the candidate shown (absent when
    /// nothing changed).
    #[serde(skip_serializing_if = "Option::is_none")]
    diff: Option<String>,
    /// Whether the candidate was tested against an agent, and what the gate said.
    gate: GateSummary,
    /// What `--slow-update` did (absent without it).
    #[serde(skip_serializing_if = "Option::is_none")]
    slow_update: Option<SlowReport>,
    /// The file of the project's house rules, when the session had one.
    #[serde(skip_serializing_if = "Option::is_none")]
    preferences: Option<String>,
    /// The candidates dropped for breaking the house rules, before they were gated or
    /// offered.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    dropped: Vec<Dropped>,
    /// What each phase used: `propose` (the rounds), `gate` (the gated
    /// candidates, their probation included), `rollout` (the training
    /// answers the slow update compares), `slow_update`.
    usage_by_phase: BTreeMap<Phase, Usage>,
}

/// The gate's part of the summary.
#[derive(Debug, Serialize)]
struct GateSummary {
    /// `gated` (tested against the agent) or `ungated` (never tested).
    mode: &'static str,
    /// The same in plain words.
    note: String,
    /// The run configuration that named the agent and the questions.
    #[serde(skip_serializing_if = "Option::is_none")]
    agent_config: Option<String>,
    /// The skill's document name in the agent's workspace (`refunds.md` for
    /// `skills/refunds/SKILL.md`), as `run` names it.
    #[serde(skip_serializing_if = "Option::is_none")]
    document: Option<String>,
    /// The gate questions of the task types the skill serves: its candidates are gated on
    /// these only.
    #[serde(skip_serializing_if = "Option::is_none")]
    gate_questions: Option<usize>,
    /// The gate's parameter preset, and the `[gate]` keys that changed it.
    #[serde(skip_serializing_if = "Option::is_none")]
    preset: Option<String>,
    /// The false-discovery rate controlled over the session's candidates.
    #[serde(skip_serializing_if = "Option::is_none")]
    fdr_alpha: Option<f64>,
    /// The gate's parameters (before any e-LOND level raised them).
    #[serde(skip_serializing_if = "Option::is_none")]
    params: Option<evolution_gate::GateParams>,
    /// One verdict per candidate gated, in order.
    verdicts: Vec<Verdict>,
}

impl GateSummary {
    fn ungated() -> Self {
        GateSummary {
            mode: "ungated",
            note: UNGATED_NOTE.to_owned(),
            agent_config: None,
            document: None,
            gate_questions: None,
            preset: None,
            fdr_alpha: None,
            params: None,
            verdicts: Vec::new(),
        }
    }

    fn gated(config: &GatingConfig, target: &GateTarget, candidates: u64) -> Self {
        let control = match config.gate_settings.fdr_alpha {
            Some(alpha) => format!(
                "false-discovery rate at most {alpha} over this session's {candidates} \
                 candidate(s) (e-LOND)"
            ),
            None => "each candidate's own error bound only (fdr_alpha = \"off\")".to_owned(),
        };
        GateSummary {
            mode: "gated",
            note: format!(
                "gated: baseline and candidate answered the same {} gate question(s) of {} \
                 ({}) with the agent {}; {} parameters, {control}",
                target.gate.len(),
                config.questions_file.display(),
                target.scope_words(),
                config.agent.program.display(),
                config.gate_settings.preset,
            ),
            agent_config: Some(config.path.display().to_string()),
            document: Some(target.document.clone()),
            gate_questions: Some(target.gate.len()),
            preset: Some(config.gate_settings.preset.clone()),
            fdr_alpha: config.gate_settings.fdr_alpha,
            params: Some(config.gate_settings.params),
            verdicts: Vec::new(),
        }
    }

    /// The lines printed with the candidate.
    fn lines(&self) -> Vec<String> {
        if self.mode == "ungated" {
            return vec![self.note.clone()];
        }
        std::iter::once(self.note.clone())
            .chain(self.verdicts.iter().map(Verdict::line))
            .collect()
    }
}

/// The checked inputs, gathered before the first LLM call.
struct Inputs {
    original: String,
    name: String,
    run_dir: RunDir,
    loaded: Loaded,
    schedule: EditBudgetSchedule,
    /// The prompts, with the overrides of `--prompts DIR`.
    templates: PromptTemplates,
    gating: Option<Gating>,
    /// What the gate can accept with its questions (gated sessions only).
    reach: Option<GateReach>,
    /// The LLM's options; with the `handoff` provider, its folder in the session's.
    llm_options: LlmOptions,
    /// Which model the session asks.
    model: SessionModel,
    /// The project's house rules (`--preferences`, else the gate configuration's).
    preferences: ProjectPreferences,
}

/// A gated session's configuration and what it gates the skill with.
struct Gating {
    config: GatingConfig,
    target: GateTarget,
}

/// Every input checked, nothing sent and nothing written.
fn check_inputs(args: &EvolveArgs) -> anyhow::Result<Inputs> {
    let skill = &args.skill;
    // A skill's scripts and assets are never edited; a reference only with a gate.
    evolution_project::skill_package::refuse_member(skill, args.agent_config.is_some())?;
    let original = read_document(skill)?;
    if let Some(p) = region_problems(&original).first() {
        // Point at `doctor --fix` only when its repair leaves the regions sound.
        let repairable = region_problems(&crate::doctor::repair(&original).0).is_empty();
        let remedy = if repairable {
            format!("run `skill-evolve doctor --fix {}`", skill.display())
        } else {
            "fix the markers by hand (`skill-evolve doctor` cannot repair this case)".to_owned()
        };
        return Err(bad_at(
            skill,
            Some(p.line),
            format!(
                "{}; this skill cannot be evolved safely until it is repaired: {remedy}",
                p.problem
            ),
        ));
    }
    let name = document_name(skill)?;
    // A skill that could not be written is refused before the LLM is paid.
    if args.yes || stdin_is_terminal() {
        writable_target(skill)?;
    }
    let mut llm_options = args.llm.options();
    let model = SessionModel::of(args, &llm_options)?;
    // A configuration that cannot be read is reported where the LLM is built, after the
    // other inputs are checked; here it only decides the session folder.
    let handoff = model.is_handoff(&llm_options, skill);
    if handoff && args.agent_config.is_some() && args.slow_update {
        return Err(bad_option(
            "--slow-update with --agent-config asks the model after the gate has run, and a \
             handoff stops there and runs the command again, which would gate the candidate \
             twice: leave out --slow-update, or use a provider that answers at once",
        ));
    }
    let root = match &args.run_dir {
        Some(dir) => dir.clone(),
        // A handoff session is run again with the same command: its folder is the same too.
        None if handoff => handoff_session_root(skill),
        None => evolve_session_root(skill),
    };
    let run_dir = RunDir::evolve_session(
        root,
        &skill_dir(skill),
        &store_root(skill, args.store.as_deref()),
    )?;
    if let Some(record) = &args.llm.record {
        run_dir.refuse_record_inside(record)?;
    }
    if handoff {
        llm_options.handoff_dir = Some(run_dir.root().join(HANDOFF_DIR));
    }
    let loaded = load_sources(
        &run_dir.name(),
        args.trajectories.as_deref(),
        args.session_state.as_deref(),
    )?;
    if loaded.failures.is_empty() {
        let source = args
            .trajectories
            .as_deref()
            .or(args.session_state.as_deref())
            .unwrap_or(Path::new(""));
        return Err(bad_at(
            source,
            None,
            format!(
                "all {} trajectories passed: there is no failure to learn from",
                loaded.passed
            ),
        ));
    }
    let schedule = schedule_of(args);
    let total_steps = u64::from(args.rounds.saturating_sub(1));
    schedule
        .budget_at(0, total_steps)
        .map_err(|e| bad_option(format!("--max-edits/--min-edits: {e}")))?;
    let templates = read_prompt_templates(args.prompts.as_deref())?;
    // The gate's configuration, and its promise that it tests on questions
    // the candidate was not written from, before anything runs.
    let gating = match &args.agent_config {
        Some(path) => {
            let key = model.key_variable(&args.llm.options(), &args.skill)?;
            let config = load_gating(path, key.as_deref(), args.slow_update)?;
            check_disjoint(&config, &loaded.questions)?;
            check_fresh(&run_dir)?;
            // The agent's workspace as `run` builds it, and the skill's own gate questions.
            let target = GateTarget::resolve(&config, skill, &original)?;
            // A gate set too small for any accept would spend every rollout for nothing.
            let reach = target.check_reach(&config, session_candidates(args))?;
            Some((Gating { config, target }, reach))
        }
        None => None,
    };
    let (gating, reach) = match gating {
        Some((config, reach)) => (Some(config), Some(reach)),
        None => (None, None),
    };
    let preferences = match (&args.preferences, &gating) {
        (Some(path), _) => ProjectPreferences::read(path)?,
        (None, Some(g)) => g.config.preferences.clone(),
        (None, None) => ProjectPreferences::default(),
    };
    // Every prompt of the session carries the house rules (none without them).
    let templates = templates.with_preferences(&preferences.preferences);
    Ok(Inputs {
        original,
        name,
        run_dir,
        loaded,
        schedule,
        templates,
        gating,
        reach,
        llm_options,
        model,
        preferences,
    })
}

/// The candidates a session gates (the evolved one, and the slow update's), the horizon
/// e-LOND spreads its level over.
fn session_candidates(args: &EvolveArgs) -> u64 {
    u64::from(args.slow_update).saturating_add(1)
}

/// `skill-evolve evolve`: check every input, run the rounds, gate the
/// candidate when an agent is configured, show it, and write it only once
/// the user agrees.
pub(crate) fn run(args: &EvolveArgs) -> anyhow::Result<ExitCode> {
    let out = Out { json: args.json };
    let skill = &args.skill;
    let Inputs {
        original,
        name,
        run_dir,
        loaded,
        schedule,
        templates,
        gating,
        reach,
        llm_options,
        model,
        preferences,
    } = check_inputs(args)?;
    // Every LLM call and rollout is metered, per phase; only a gated
    // session has caps (its `[budget]`).
    let budget = match &gating {
        Some(g) => budget_of(&g.config)?,
        None => Arc::new(Budget::unlimited()),
    };

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    run_dir.check_writable()?;
    if llm_options.handoff_dir.is_some() {
        // The handoff's files live in the session folder, marked as this program's first.
        run_dir.create_evolve_session()?;
    }
    let llm = runtime.block_on(model.build(&llm_options, &args.skill))?;
    let handoff = llm.handoff.clone();
    if let Some(handoff) = &handoff {
        handoff
            .clear_prompts()
            .map_err(|e| anyhow::anyhow!("handoff: {e}"))?;
    }
    // A gated session's LLM calls count against its `[budget]` too.
    let provider: Arc<dyn LlmProvider> = Arc::new(MeteredLlm::new(
        Arc::clone(&llm.provider),
        Arc::clone(&budget),
    ));
    for note in &loaded.notes {
        out.say(&format!("skipped {note}\n"));
    }
    if let Some(warning) = loaded.unused_skill_warning(&skill_names(skill, &original)) {
        eprintln!("{}", terminal_safe(&warning));
    }
    out.say(&format!(
        "evolving {} from {} failure trajectories (passing ones left out: {}) with {}\n",
        skill.display(),
        loaded.failures.len(),
        loaded.passed,
        llm.description
    ));
    if let Some(note) = llm.quality_note {
        out.say(&format!("{note}\n"));
    }
    if let Some(reach) = &reach {
        out.say(&reach.lines());
    }
    if let Some(line) = preferences.describe() {
        out.say(&format!("{line}\n"));
    }

    budget.enter_phase(Phase::Propose);
    let Some(rounds) = runtime.block_on(or_handoff(
        handoff.as_deref(),
        evolve_loop(
            provider.as_ref(),
            &original,
            &loaded.failures,
            args,
            &schedule,
            &templates,
            &preferences.preferences.checks,
        ),
    )) else {
        return Ok(handed_off(out, handoff.as_deref()));
    };
    let (candidate, outcome) = rounds?;
    let candidates = session_candidates(args);
    let Outcome {
        rounds,
        stop_reason,
        llm_calls,
    } = outcome;
    let mut summary = Summary {
        skill: skill.display().to_string(),
        run_dir: run_dir.root().display().to_string(),
        provider: llm.description.clone(),
        failures: loaded.failures.len(),
        passed_trajectories: loaded.passed,
        rounds,
        stop_reason,
        llm_calls,
        changed: candidate != original,
        written: false,
        version: None,
        candidate: None,
        diff: None,
        gate: match &gating {
            Some(g) => GateSummary::gated(&g.config, &g.target, candidates),
            None => GateSummary::ungated(),
        },
        slow_update: None,
        preferences: preferences.file.as_ref().map(|f| f.display().to_string()),
        dropped: Vec::new(),
        usage_by_phase: BTreeMap::new(),
    };
    summary.dropped = Dropped::of_rounds(&summary.rounds);

    run_dir.create_evolve_session()?;
    for round in &summary.rounds {
        for why in &round.dropped {
            out.say(&format!("round {}: {why}\n", round.round));
        }
    }
    if !summary.changed {
        if args.slow_update {
            summary.slow_update = Some(SlowReport::skipped(
                "the rounds proposed no change: there is nothing to consolidate",
            ));
        }
        Dropped::say(out, &summary.dropped);
        out.say(&format!(
            "no change to propose ({}); {} is unchanged\n",
            summary.stop_reason,
            skill.display()
        ));
        return finish(out, &run_dir, &mut summary, &budget);
    }

    let session = Session {
        original: &original,
        candidate: &candidate,
        loaded: &loaded,
        llm: provider.as_ref(),
        budget: &budget,
        slow_update: args.slow_update,
        slow_update_template: &templates.slow_update,
        judge_prompts: &templates.diagnose,
        preferences: &preferences.preferences,
    };
    let offered = match &gating {
        Some(g) => {
            let gated = runtime.block_on(or_handoff(
                handoff.as_deref(),
                session.gated(g, &run_dir, Arc::clone(&budget), candidates, &mut summary),
            ));
            match gated {
                Some(offered) => offered?,
                // The gate's rubric judge asked the model: its answers cannot come back
                // into this gate without running it a second time.
                None => {
                    return Err(bad_option(format!(
                        "the gate's rubric checks ask the model while the gate runs, which a \
                         handoff cannot answer without gating the candidate twice; use a \
                         provider that answers at once for a gated session with rubric checks \
                         (the requests are in {})",
                        run_dir.root().join(HANDOFF_DIR).display()
                    )));
                }
            }
        }
        None => match runtime.block_on(or_handoff(
            handoff.as_deref(),
            session.ungated(&mut summary),
        )) {
            Some(offered) => Some(offered?),
            None => return Ok(handed_off(out, handoff.as_deref())),
        },
    };
    let candidate_path = run_dir.candidate(&name);
    let shown = offered.as_deref().unwrap_or(&candidate);
    evolution_project::working_copy::write_atomically(&candidate_path, shown)
        .with_context(|| format!("cannot save the candidate to {}", candidate_path.display()))?;
    summary.candidate = Some(candidate_path.display().to_string());
    summary.diff = Some(unified_diff(
        &original,
        shown,
        &name,
        &format!("{name} (candidate)"),
    ));

    let Some(offered) = offered else {
        Dropped::say(out, &summary.dropped);
        for line in summary.gate.lines() {
            out.say(&format!("{line}\n"));
        }
        out.say(&format!(
            "not written: the candidate did not pass the gate; {} is unchanged (the rejected \
             candidate is at {})\n",
            skill.display(),
            candidate_path.display()
        ));
        return finish(out, &run_dir, &mut summary, &budget);
    };

    Dropped::say(out, &summary.dropped);
    show_candidate(out, &name, &original, &offered, &summary);
    let approved = if args.yes {
        true
    } else if stdin_is_terminal() {
        ask_yes_no(&format!("Write this version of {}?", terminal_safe(&name)))? == Answer::Yes
    } else {
        out.say(&format!(
            "not written: no terminal to confirm on and no --yes. The candidate is at {}\n",
            candidate_path.display()
        ));
        return finish(out, &run_dir, &mut summary, &budget);
    };
    if !approved {
        out.say(&format!(
            "discarded: {} is unchanged (the candidate stays at {})\n",
            skill.display(),
            candidate_path.display()
        ));
        return finish(out, &run_dir, &mut summary, &budget);
    }
    // The skill must not have changed while the LLM was thinking.
    let now = read_document(skill)?;
    if now != original {
        anyhow::bail!(
            "{} changed while evolving; nothing written (the candidate is at {})",
            skill.display(),
            candidate_path.display()
        );
    }
    let applied: usize = summary
        .rounds
        .iter()
        .filter(|r| r.accepted)
        .map(|r| r.reports.iter().filter(|x| x.status.is_applied()).count())
        .sum();
    let gate = match summary.gate.verdicts.iter().rev().find(|v| v.passed) {
        Some(v) => format!(
            "gated, {} (W={}, L={}, E={:.2})",
            v.decision, v.w, v.l, v.e_value
        ),
        None => "ungated".to_owned(),
    };
    let message = format!(
        "skill-evolve evolve: {applied} edits from {} failure trajectories, {gate} (run {})",
        summary.failures,
        run_dir.root().display()
    );
    let version = write_new_version(skill, args.store.as_deref(), &original, &offered, &message)?;
    summary.written = true;
    summary.version = Some(version.to_string());
    out.say(&format!("wrote {} as {version}\n", skill.display()));
    finish(out, &run_dir, &mut summary, &budget)
}

/// Runs `work` to its end, or stops it (`None`) once the `handoff` provider waits for
/// answers to the requests it handed off.
async fn or_handoff<T>(
    handoff: Option<&evolution_project::llm::handoff::Handoff>,
    work: impl std::future::Future<Output = T>,
) -> Option<T> {
    match handoff {
        None => Some(work.await),
        Some(handoff) => tokio::select! {
            out = work => Some(out),
            () = handoff.waiting() => None,
        },
    }
}

/// Says where the handed-off requests are and how to go on; the exit code of a session that
/// waits for answers.
fn handed_off(out: Out, handoff: Option<&evolution_project::llm::handoff::Handoff>) -> ExitCode {
    if let Some(handoff) = handoff {
        let files = handoff.files();
        out.say(&format!(
            "waiting for answers: {} request(s) of the model are in {}; answer them in {} (one \
             {{\"key\", \"reply\"}} line each; your own agent session can write them), then run \
             the same command again to go on; nothing was written to the skill\n",
            handoff.waiting_count(),
            files.prompts.display(),
            files.answers.display()
        ));
    }
    ExitCode::from(crate::run::HANDOFF_EXIT)
}

/// Writes `report.json` (with what each phase of `budget` used) and the
/// page, and prints the summary.
fn finish(
    out: Out,
    run_dir: &RunDir,
    summary: &mut Summary,
    budget: &Budget,
) -> anyhow::Result<ExitCode> {
    summary.usage_by_phase = budget.usage_by_phase();
    // Every metered call of the session: the rounds', the slow update's and the rubric
    // judge's (the rounds count theirs as they go; the meter also saw the others).
    let metered = u32::try_from(budget.usage().llm_calls).unwrap_or(u32::MAX);
    summary.llm_calls = summary.llm_calls.max(metered);
    let report = serde_json::to_string_pretty(summary)?;
    let path = run_dir.report_json();
    run_dir.create_evolve_session()?;
    evolution_project::working_copy::write_atomically(&path, &format!("{report}\n"))
        .with_context(|| format!("cannot write {}", path.display()))?;
    let html = evolution_project::report_html::write_evolve(run_dir)?;
    if out.json {
        outln!("{report}");
    } else {
        out.say(&format!("run report: {}\n", path.display()));
        out.say(&format!("html report: {}\n", html.display()));
    }
    Ok(ExitCode::SUCCESS)
}

/// The names a trajectory may know the skill by: its frontmatter `name:`, its folder (for a
/// `SKILL.md`) and its file name without `.md`.
fn skill_names(skill: &Path, text: &str) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    let folder = skill
        .canonicalize()
        .ok()
        .and_then(|p| {
            p.parent()
                .and_then(Path::file_name)
                .map(|n| n.to_string_lossy().into_owned())
        })
        .filter(|_| skill.file_name().is_some_and(|n| n == "SKILL.md"));
    let stem = skill
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .filter(|s| s != "SKILL");
    let front = evolution_project::layout::frontmatter_name(text)
        .ok()
        .flatten();
    for name in [front, folder, stem].into_iter().flatten() {
        if !name.is_empty() && !names.contains(&name) {
            names.push(name);
        }
    }
    names
}

fn schedule_of(args: &EvolveArgs) -> EditBudgetSchedule {
    args.schedule.schedule(args.max_edits, args.min_edits)
}

/// The coloured diff, the table of edits and the meta-reflection's verdict.
fn show_candidate(out: Out, name: &str, original: &str, candidate: &str, summary: &Summary) {
    let diff = unified_diff(original, candidate, name, &format!("{name} (candidate)"));
    out.say_styled(&colour_diff(&diff));
    let mut rows = Vec::new();
    for round in summary.rounds.iter().filter(|r| r.accepted) {
        for (edit, report) in round.selected.iter().zip(&round.reports) {
            let why = ["reason", "why"]
                .iter()
                .find_map(|k| edit.extra.get(*k).and_then(Value::as_str))
                .unwrap_or("");
            let target = if edit.target.is_empty() {
                "(end of document)".to_owned()
            } else {
                edit.target.clone()
            };
            rows.push(vec![
                round.round.to_string(),
                edit.op.to_string(),
                target,
                why.to_owned(),
                edit.support_count.unwrap_or(1).to_string(),
                report.status.to_string(),
            ]);
        }
    }
    out.say("\n");
    out.say(&table(
        &["round", "op", "target", "why", "support", "status"],
        &rows,
        36,
    ));
    for round in summary.rounds.iter().filter(|r| r.accepted) {
        let m = &round.meta;
        out.say(&format!(
            "round {}: structural validation passed; {} of {} failures addressed{}\n",
            round.round,
            m.addressed.len(),
            round.trajectories,
            if m.summary.is_empty() {
                String::new()
            } else {
                format!(" — {}", m.summary)
            }
        ));
        for (id, why) in &m.unaddressed {
            out.say(&format!("  still open: {id}: {why}\n"));
        }
    }
    out.say(&format!("stopped: {}\n", summary.stop_reason));
    if let Some(slow) = &summary.slow_update {
        let what = if slow.updated {
            "new long-term guidance in the slow-update region"
        } else {
            "the previous guidance kept"
        };
        let why = slow
            .note
            .as_deref()
            .map(|n| format!(" ({n})"))
            .unwrap_or_default();
        out.say(&format!(
            "slow update: {what}{why}; compared on {}\n",
            slow.compared_on
        ));
    }
    for line in summary.gate.lines() {
        out.say(&format!("{line}\n"));
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser as _;
    use evolution_testkit::ScriptedLlm;
    use serde_json::json;

    use super::*;
    use crate::cli::{Cli, Command};
    use evolution_evolve::feedback::FEEDBACK_INVALID_JSON;
    use evolution_project::evolve::trajectories::Trajectory;

    const DOC: &str = "---\nname: notes\ndescription: Release notes.\n---\n\n# Notes\n\n\
                       1. Group changes by area.\n2. Lead with what users notice.\n\
                       3. Name breaking changes.\n\n<!-- SLOW_UPDATE_START -->\nkeep\n\
                       <!-- SLOW_UPDATE_END -->\n";

    fn args(extra: &[&str]) -> EvolveArgs {
        let mut argv = vec!["skill-evolve", "evolve", "SKILL.md", "--trajectories", "t"];
        argv.extend_from_slice(extra);
        match Cli::try_parse_from(argv).unwrap().command {
            Command::Evolve(a) => a,
            _ => unreachable!(),
        }
    }

    fn failures() -> Vec<Trajectory> {
        ["t1", "t2"]
            .iter()
            .map(|id| Trajectory {
                id: (*id).to_owned(),
                task_description: String::new(),
                question: format!("question {id}"),
                fail_reason: format!("{id} failed"),
                predicted_answer: String::new(),
                reference_text: String::new(),
                feedback: String::new(),
            })
            .collect()
    }

    fn reflect_with(edits: Value) -> String {
        json!({"suggestions": [], "edits": edits, "reasoning": "r"}).to_string()
    }

    fn meta(addressed: &[&str], open: &[&str]) -> String {
        let open: Vec<Value> = open
            .iter()
            .map(|id| json!({"id": id, "why": "w"}))
            .collect();
        json!({"addressed": addressed, "unaddressed": open, "summary": "s"}).to_string()
    }

    fn run_loop(llm: &ScriptedLlm, extra: &[&str]) -> (String, Outcome) {
        let a = args(extra);
        let failures = failures();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let templates = evolution_harness::PromptTemplates::default();
        rt.block_on(evolve_loop(
            llm,
            DOC,
            &failures,
            &a,
            &schedule_of(&a),
            &templates,
            &Default::default(),
        ))
        .unwrap()
    }

    #[test]
    fn a_round_that_does_not_reduce_the_open_failures_stops_the_loop() {
        let llm = ScriptedLlm::with_replies([
            reflect_with(
                json!([{"op": "replace", "target": "2. Lead with what users notice.",
                                 "content": "2. Lead with user-reported fixes."}]),
            ),
            meta(&["t1"], &["t2"]),
            reflect_with(
                json!([{"op": "insert_after", "target": "3. Name breaking changes.",
                                 "content": "4. List each change once."}]),
            ),
            meta(&[], &["t2"]),
        ]);
        let (doc, s) = run_loop(&llm, &["--rounds", "5"]);
        assert_eq!(s.rounds.len(), 2);
        assert!(
            s.stop_reason.contains("round 2 did not reduce"),
            "{}",
            s.stop_reason
        );
        assert!(doc.contains("2. Lead with user-reported fixes.") && doc.contains("4. List each"));
        assert_eq!(llm.call_count(), 4);
        assert_eq!(s.llm_calls, 4);
        // Round 2 reflects on the open failure only, against the round-1 candidate.
        let second = llm.requests()[2].full_text();
        assert!(
            second.contains("`t2`") && !second.contains("`t1`"),
            "{second}"
        );
        assert!(second.contains("user-reported fixes"));
    }

    #[test]
    fn two_rounds_with_the_same_edits_stop_the_loop() {
        let edits = json!([{"op": "append", "target": "", "content": "- Check twice."}]);
        let llm = ScriptedLlm::with_replies([
            reflect_with(edits.clone()),
            meta(&["t1"], &["t2"]),
            reflect_with(edits),
        ]);
        let (doc, s) = run_loop(&llm, &["--rounds", "3"]);
        assert_eq!(s.rounds.len(), 1);
        assert!(
            s.stop_reason.contains("same edits as round 1"),
            "{}",
            s.stop_reason
        );
        assert_eq!(doc.matches("- Check twice.").count(), 1);
        // Appended before the protected region, which is untouched.
        assert!(doc.find("- Check twice.").unwrap() < doc.find("<!-- SLOW_UPDATE_START").unwrap());
    }

    #[test]
    fn a_candidate_failing_validation_is_dropped() {
        let llm = ScriptedLlm::with_replies([reflect_with(json!([
            {"op": "replace", "target": "3. Name breaking changes.",
             "content": "3. Name breaking changes:\n```text\n## Breaking"}
        ]))]);
        let (doc, s) = run_loop(&llm, &[]);
        assert_eq!(doc, DOC);
        assert!(
            s.stop_reason.contains("failed structural validation"),
            "{}",
            s.stop_reason
        );
        assert!(!s.rounds[0].meta.validation_errors.is_empty());
        assert_eq!(
            llm.call_count(),
            1,
            "no meta-reflection for a dropped candidate"
        );
    }

    #[test]
    fn over_budget_edits_are_ranked_and_clipped() {
        let llm = ScriptedLlm::with_replies([
            reflect_with(json!([
                {"op": "append", "target": "", "content": "- First."},
                {"op": "append", "target": "", "content": "- Second."}
            ])),
            json!({"ranking": [1]}).to_string(),
            meta(&["t1", "t2"], &[]),
        ]);
        let (doc, s) = run_loop(&llm, &["--max-edits", "1"]);
        assert!(doc.contains("- Second.") && !doc.contains("- First."));
        assert_eq!(s.rounds[0].budget, Some(1));
        assert_eq!(s.rounds[0].clip["method"], "llm_rank");
        assert_eq!(s.llm_calls, 3);
        assert!(s.stop_reason.contains("every known failure addressed"));
    }

    #[test]
    fn unreadable_reflections_are_retried_once_then_give_up() {
        let llm = ScriptedLlm::with_replies(["not json", "still not json"]);
        let (doc, s) = run_loop(&llm, &[]);
        assert_eq!(doc, DOC);
        assert!(
            s.stop_reason
                .contains("the reflection's reply could not be read"),
            "{}",
            s.stop_reason
        );
        assert_eq!(llm.call_count(), 2);
        assert!(
            llm.requests()[1]
                .full_text()
                .contains(FEEDBACK_INVALID_JSON)
        );
    }

    #[test]
    fn decaying_schedules_shrink_the_budget_per_round() {
        let a = args(&[
            "--schedule",
            "linear",
            "--max-edits",
            "8",
            "--min-edits",
            "2",
            "--rounds",
            "4",
        ]);
        let s = schedule_of(&a);
        let budgets: Vec<Option<usize>> = (0..4).map(|r| s.budget_at(r, 3).unwrap()).collect();
        assert_eq!(budgets, [Some(8), Some(6), Some(4), Some(2)]);
        let a = args(&["--schedule", "autonomous"]);
        assert_eq!(schedule_of(&a).budget_at(0, 0).unwrap(), None);
    }
}
