//! The report of a finished run: `report.md` (what changed, what each
//! phase used, the gate's evidence per candidate with a legend of its columns and decisions — or,
//! when no candidate was gated, why —, the proposals dropped before their gate for breaking
//! the house rules, what is staged for adoption, the events) and `report.json`.

use std::path::PathBuf;

use anyhow::Context as _;
use evolution_harness::{EvolutionReport, StopReason, VersionedStore as _};
use evolution_runlog_sqlite::SqliteRunLog;
use evolution_store_fs::FsVersionedStore;
use evolution_types::RunLog as _;

use super::dir::RunDir;
use super::events::decision_name;
use super::failures::summary;
use super::stage::{report_section, stage};
use crate::render::documents_diff;
use crate::working_copy::write_atomically;

/// The error control a run was under.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Guarantee {
    /// e-LOND over the run's candidates at level `alpha`, its level spent
    /// evenly over `horizon` candidates.
    Fdr {
        /// The false-discovery rate controlled.
        alpha: f64,
        /// The most candidates the run can gate.
        horizon: u64,
    },
    /// `fdr_alpha = "off"`: each candidate's own false-accept bound only.
    PerCandidate {
        /// The e-value a confirmed accept needs.
        e_confirm: f64,
        /// The e-value a provisional accept needs.
        e_provisional: f64,
    },
}

impl Guarantee {
    /// What held for the run, in one paragraph.
    pub fn describe(&self) -> String {
        match *self {
            Guarantee::Fdr { alpha, horizon } => format!(
                "Error control: the expected share of accepted candidates that are not better \
                 than the version they replaced (the false-discovery rate) is at most {alpha} \
                 over this run (e-LOND over at most {horizon} candidate(s); every accept, \
                 provisional ones included, needed its e-LOND threshold, shown per candidate)."
            ),
            Guarantee::PerCandidate {
                e_confirm,
                e_provisional,
            } => format!(
                "Error control: off (`[gate] fdr_alpha = \"off\"`). Each candidate that is not \
                 better is accepted with probability at most 1/{:.0}; nothing bounds the share \
                 of such accepts over the run.",
                e_confirm.min(e_provisional)
            ),
        }
    }
}

/// What the columns and decisions of the gate table mean, one line each.
pub const LEGEND: &str = "\
- **W** (wins): gate questions the candidate answered right and the version it challenged \
answered wrong, or on which only the challenged version failed (an error, a crash, a timeout).
- **L** (losses): gate questions the challenged version answered right and the candidate wrong, \
or on which only the candidate failed: a failure counts against the version that failed.
- **paired**: gate questions both answered so far, ties included; **remaining**: gate \
questions not used yet.
- **E**: the e-value, the evidence that the candidate is better (1 is none; it grows with W \
and shrinks with L); **E needed**: what an accept needed.
- **δ̂**: the estimated gain in accuracy, (W − L) / paired.
- `accept_confirmed`: E reached E needed with a large enough δ̂; the candidate became the new \
version.
- `accept_provisional`: the questions ran out with moderate evidence; accepted on probation \
(judged again on the gate questions held back for it, when the run keeps some, and rolled back \
if they go against it).
- `reject_directional`: the candidate was losing more than it won; stopped early.
- `reject_futility`: even winning every remaining question could not reach E needed; stopped \
early.
- `reject_inertia`: the questions ran out without enough evidence either way.
- `reject_infra`: too many gate questions could not be compared (both versions failed on them — \
the agent, or the rubric judge that gave no verdict on an answer —, or the agent never started); \
the run went on with the next candidate.
- `continue`: no decision yet (the run stopped in the middle of the candidate's gate).
";

/// Why a run gated no candidate, from how it stopped and its training
/// rollouts in the run log: the budget ran out, the agent made no mistake to
/// learn from, every failure was an infrastructure error, or the model
/// proposed nothing that applied.
pub async fn why_no_candidate(log: &SqliteRunLog, report: &EvolutionReport) -> String {
    if !report.dropped.is_empty() {
        return format!(
            "every proposal was dropped before its gate ({} dropped, see \"Dropped before the \
             gate\" below for each reason)",
            report.dropped.len()
        );
    }
    if let StopReason::Budget(exceeded) = &report.stop_reason {
        return format!(
            "the budget ran out before a candidate was proposed ({exceeded}); raise [budget] \
             and run the same command to continue"
        );
    }
    let mut failures = 0usize;
    let mut answered = 0usize;
    let mut training_runs = Vec::new();
    let mut infra = evolution_harness::FailureCount::default();
    for run in log.runs().await.unwrap_or_default() {
        if !run.run_id.contains("_train_e") {
            continue;
        }
        let predictions = log
            .get_predictions(&run.run_id, None)
            .await
            .unwrap_or_default();
        for p in &predictions {
            infra.add(p);
            if !evolution_harness::is_failure(p) {
                answered = answered.saturating_add(1);
                if !p.correct {
                    failures = failures.saturating_add(1);
                }
            }
        }
        training_runs.push(run.run_id);
    }
    let runs = training_runs.join(", ");
    let (agent, judge) = (infra.agent_failures, infra.judge_failures);
    let judge_reason = || summary(infra.first_judge_error.as_deref().unwrap_or_default());
    if training_runs.is_empty() {
        "no training rollout was recorded, so nothing was diagnosed".to_owned()
    } else if failures == 0 && agent == 0 && judge == 0 {
        format!(
            "the agent answered all {answered} training question(s) correctly (run(s) {runs}): \
             there was no failure to learn from"
        )
    } else if failures == 0 && agent == 0 {
        format!(
            "the rubric judge gave no verdict on {judge} answer(s): {}; the agent answered, \
             but an answer without a verdict is left out of the diagnosis, so there was nothing \
             to learn from; the judge is the run's LLM ([llm]), `skill-evolve -v run` shows its \
             replies (run(s) {runs})",
            judge_reason()
        )
    } else if failures == 0 {
        let also = if judge > 0 {
            format!(
                "; the rubric judge also gave no verdict on {judge} answer(s): {}",
                judge_reason()
            )
        } else {
            String::new()
        };
        format!(
            "the agent failed on every training question it did not answer right ({agent}: it \
             crashed, timed out or sent no answer; first error: {}), and the diagnosis leaves \
             such failures out; fix the agent and run again (run(s) {runs}){also}",
            summary(infra.first_agent_error.as_deref().unwrap_or_default())
        )
    } else {
        format!(
            "the diagnosis saw {failures} wrong answer(s) in the training run(s) {runs}, but the \
             model proposed no edit that applied to the documents; `skill-evolve -v run` shows \
             its replies, and `skill-evolve diagnose --runlog` the diagnosis"
        )
    }
}

/// What the run's progress left for the report, beside the loop's own result.
#[derive(Debug, Clone, Copy)]
pub struct RunNotes<'a> {
    /// The event lines printed during the run.
    pub events: &'a [String],
    /// Why no candidate was gated, when none was.
    pub no_candidate: Option<&'a str>,
    /// Questions marked `"reviewed": false` that ran under `--allow-unreviewed`.
    pub unreviewed: usize,
}

/// The report: what changed, and the gate's evidence for every candidate.
/// `notes` holds the events and why the table is empty, when it is; `facts`
/// holds the budget's use and caps and the gate's parameters.
pub fn write_report(
    dir: &RunDir,
    store: &FsVersionedStore,
    report: &EvolutionReport,
    guarantee: &Guarantee,
    notes: RunNotes<'_>,
    facts: &crate::report_html::RunFacts,
) -> anyhow::Result<PathBuf> {
    let RunNotes {
        events,
        no_candidate,
        unreviewed,
    } = notes;
    let usage = usage_line(&facts.usage);
    let mut md = format!(
        "# Run report\n\nStopped: {} after {} epoch(s). Version {} → {}.\n\
         Holdout accuracy: {} → {}.\nUsage: {usage}\n\n{}\n\n## Gate evidence per candidate\n\n\
         | candidate | accepted | W | L | paired | remaining | E | δ̂ | decision | new version | E needed |\n\
         |---|---|---|---|---|---|---|---|---|---|---|\n",
        report.stop_reason,
        report.epochs,
        report.initial_version,
        report.final_version,
        pct(report.holdout_before),
        pct(report.holdout_after),
        guarantee.describe(),
    );
    if !facts.usage_by_phase.is_empty() {
        let at = md.find("## Gate evidence").unwrap_or(md.len());
        md.insert_str(at, &phase_table(&facts.usage, &facts.usage_by_phase));
    }
    let failures = super::failures::markdown_section(&facts.infra_by_phase);
    if facts.infra_by_phase.iter().any(|p| p.describe().is_some()) {
        let at = md.find("## Gate evidence").unwrap_or(md.len());
        md.insert_str(at, &failures);
    }
    if unreviewed > 0 {
        let note = format!(
            "Unreviewed questions: {unreviewed} question(s) marked `\"reviewed\": false` were \
             run (`--allow-unreviewed`); their checks were not read by a person.\n\n"
        );
        let at = md.find("## Gate evidence").unwrap_or(md.len());
        md.insert_str(at, &note);
    }
    for r in &report.records {
        let mut needed = match (&r.level, &r.validation) {
            (Some(level), _) if level.threshold.is_finite() => format!("{:.2}", level.threshold),
            (Some(_), _) => "∞".to_owned(),
            (None, Some(v)) => format!("{:.2}", v.e_confirm),
            (None, None) => "—".to_owned(),
        };
        if let Some(ledger) = &r.ledger {
            let at = if ledger.threshold.is_finite() {
                format!("{:.2}", ledger.threshold)
            } else {
                "∞".to_owned()
            };
            needed = format!("{needed}; ledger test {} of the skill: {at}", ledger.index);
        }
        let probation = match &r.probation {
            Some(p) => match p.verdict {
                Some(verdict) => format!("; probation {} (W={}, L={})", verdict.as_str(), p.w, p.l),
                None => "; probation pending".to_owned(),
            },
            None => String::new(),
        };
        match &r.validation {
            Some(v) => md.push_str(&format!(
                "| {} | {} | {} | {} | {} | {} | {:.2} | {:.3} | {}{probation} | {} | {needed} |\n",
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
                "| {} | no | — | — | — | — | — | — | not gated (past the run's e-LOND horizon) | — | {needed} |\n",
                r.candidate
            )),
        }
    }
    match no_candidate {
        Some(why) if report.records.is_empty() => {
            md.push_str(&format!("\nNo candidate was gated: {why}.\n"));
        }
        _ => md.push_str(&format!("\n{LEGEND}")),
    }
    md.push_str(&dropped_section(report));
    md.push_str("\n## Diff, first to final version\n\n");
    let before = store.documents(&report.initial_version).unwrap_or_default();
    let after = store.documents(&report.final_version).unwrap_or_default();
    let diff = documents_diff(&before, &after);
    if diff.is_empty() {
        md.push_str("No change was accepted.\n");
    } else {
        md.push_str(&format!("```diff\n{diff}```\n"));
    }
    let proposal = stage(dir, store, report)?;
    md.push_str(&report_section(dir, &proposal));
    md.push_str("\n## Events\n\n");
    for line in events {
        md.push_str(&format!("- {line}\n"));
    }
    let path = dir.report_md();
    write_atomically(&path, &crate::render::terminal_safe(&md))
        .with_context(|| format!("cannot write {}", path.display()))?;
    let control = match *guarantee {
        Guarantee::Fdr { alpha, horizon } => serde_json::json!({
            "kind": "e_lond", "fdr_alpha": alpha, "horizon": horizon,
        }),
        Guarantee::PerCandidate {
            e_confirm,
            e_provisional,
        } => serde_json::json!({
            "kind": "off", "e_confirm": e_confirm, "e_provisional": e_provisional,
        }),
    };
    let json = serde_json::json!({
        "error_control": control,
        "stop_reason": report.stop_reason,
        "epochs": report.epochs,
        "initial_version": report.initial_version,
        "final_version": report.final_version,
        "holdout_before": report.holdout_before,
        "holdout_after": report.holdout_after,
        "records": report.records,
        "dropped": report.dropped,
        "staged": proposal.documents,
        "usage": facts.usage,
        "usage_by_phase": facts.usage_by_phase,
        "budget": facts.budget,
        "gate": facts.gate,
        "infra_by_phase": facts.infra_by_phase,
    });
    write_atomically(&dir.report_json(), &serde_json::to_string_pretty(&json)?)
        .context("cannot write report.json")?;
    Ok(path)
}

/// The proposals dropped before their gate (a house rule broken, the screen failed, or the
/// epoch's gated candidates used), as a markdown section (nothing when none was).
fn dropped_section(report: &EvolutionReport) -> String {
    if report.dropped.is_empty() {
        return String::new();
    }
    let mut md = String::from(
        "\n## Dropped before the gate\n\nThese proposals were not gated, so none of the run's \
         level was spent on them; each with its reason:\n\n",
    );
    for d in &report.dropped {
        md.push_str(&format!(
            "- {} (epoch {}): {}\n",
            d.candidate,
            d.epoch,
            d.reasons.join("; ")
        ));
    }
    md
}

/// The budget's usage as one line (with what the hosts said their calls cost, when one
/// said).
pub fn usage_line(u: &evolution_harness::Usage) -> String {
    let reported = if u.host_cost_usd > 0.0 {
        format!(", {} reported by the host", usd(u.host_cost_usd))
    } else {
        String::new()
    };
    format!(
        "{} LLM calls, {} prompt + {} completion tokens{reported}, {} agent rollouts",
        u.llm_calls, u.prompt_tokens, u.completion_tokens, u.rollouts
    )
}

/// An amount of US dollars, to the cent's hundredth.
fn usd(amount: f64) -> String {
    format!("${amount:.4}")
}

/// What each phase used, as a markdown section: one row per phase that used
/// anything, in the order of an epoch, then the whole run.
pub fn phase_table(
    total: &evolution_harness::Usage,
    by_phase: &std::collections::BTreeMap<evolution_harness::Phase, evolution_harness::Usage>,
) -> String {
    // The column of the cost a host reported, only when one did.
    let reported = total.host_cost_usd > 0.0;
    let mut md = String::from(
        "## Usage by phase\n\n\
         | phase | LLM calls | prompt tokens | completion tokens | cost |",
    );
    md.push_str(if reported {
        " host-reported cost (USD) | agent rollouts |\n|---|---|---|---|---|---|---|\n"
    } else {
        " agent rollouts |\n|---|---|---|---|---|---|\n"
    });
    let rows = by_phase
        .iter()
        .map(|(phase, usage)| (phase.label(), usage))
        .chain([("whole run", total)]);
    for (name, u) in rows {
        let host = if reported {
            format!(" {} |", usd(u.host_cost_usd))
        } else {
            String::new()
        };
        md.push_str(&format!(
            "| {name} | {} | {} | {} | {:.4} |{host} {} |\n",
            u.llm_calls, u.prompt_tokens, u.completion_tokens, u.cost, u.rollouts
        ));
    }
    md.push('\n');
    md
}

/// A share as a percentage, `n/a` when unknown.
fn pct(v: Option<f64>) -> String {
    v.map_or_else(|| "n/a".to_owned(), |v| format!("{:.1}%", v * 100.0))
}
