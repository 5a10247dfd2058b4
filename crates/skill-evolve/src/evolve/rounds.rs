//! The rounds of `skill-evolve evolve`, no I/O but the LLM and a spinner:
//! reflect on the open failures batch by batch → aggregate → select to the
//! round's budget → update (frontmatter and protected regions untouched) →
//! meta-reflect; then the stop rules.

use std::time::Duration;

use evolution_evolve::EditBudgetSchedule;
use evolution_evolve::aggregate::aggregate_patches;
use evolution_evolve::rank::rank_and_clip;
use evolution_evolve::validate::validate_skill;
use evolution_harness::PromptTemplates;
use evolution_patch::apply_patch_with_report;
use evolution_types::{Edit, EditReport, LlmProvider};
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;
use serde_json::Value;

use super::reflect::{meta_reflect, reflect};
use super::trajectories::Trajectory;
use crate::cli::EvolveArgs;
use crate::error::bad_option;

/// The meta-reflection's judgement of a candidate.
#[derive(Debug, Clone, Default, Serialize)]
pub(super) struct Meta {
    /// Structural validation errors (empty: passed).
    pub(super) validation_errors: Vec<String>,
    /// Ids of the failures the candidate addresses.
    pub(super) addressed: Vec<String>,
    /// Failures still open, with what is missing.
    pub(super) unaddressed: Vec<(String, String)>,
    /// The model's one-sentence summary.
    pub(super) summary: String,
    /// False when the reply could not be read.
    pub(super) judged: bool,
}

/// One round of the loop.
#[derive(Debug, Serialize)]
pub(super) struct Round {
    /// The round, from 1.
    pub(super) round: u32,
    /// Its edit budget (`None`: no limit).
    pub(super) budget: Option<usize>,
    /// Failures it reflected on.
    pub(super) trajectories: usize,
    /// Edits proposed after aggregation.
    pub(super) proposed: usize,
    /// Edits kept by ranking and clipping.
    pub(super) selected: Vec<Edit>,
    /// How they were selected.
    pub(super) clip: serde_json::Map<String, Value>,
    /// What applying each selected edit did.
    pub(super) reports: Vec<EditReport>,
    /// The meta-reflection's judgement.
    pub(super) meta: Meta,
    /// Whether the candidate became the next round's document.
    pub(super) accepted: bool,
}

/// What the rounds did: every round, why they stopped, and the LLM calls made.
#[derive(Debug, Default)]
pub(super) struct Outcome {
    /// The rounds, in order.
    pub(super) rounds: Vec<Round>,
    /// Why the loop stopped.
    pub(super) stop_reason: String,
    /// LLM calls made (retries included).
    pub(super) llm_calls: u32,
}

/// The spinner shown while the rounds run.
fn spinner() -> ProgressBar {
    let bar = ProgressBar::new_spinner().with_message("starting");
    if let Ok(style) = ProgressStyle::with_template("{spinner} {msg} [{elapsed}]") {
        bar.set_style(style);
    }
    bar.enable_steady_tick(Duration::from_millis(120));
    bar
}

/// The rounds; returns the last accepted candidate (the original when none)
/// and what the rounds did.
pub(super) async fn evolve_loop(
    llm: &dyn LlmProvider,
    original: &str,
    failures: &[Trajectory],
    args: &EvolveArgs,
    schedule: &EditBudgetSchedule,
) -> anyhow::Result<(String, Outcome)> {
    let mut summary = Outcome::default();
    // The ranking prompt is the harness's default template; reflect and
    // meta-reflect are this command's own (the reflect and meta-reflect steps).
    let prompts = PromptTemplates::default().evolve;
    let progress = spinner();
    let mut doc = original.to_owned();
    let mut pending: Vec<&Trajectory> = failures.iter().collect();
    let mut previous_edits: Option<Vec<(String, String, String)>> = None;
    let mut previous_open = usize::MAX;
    let total_steps = u64::from(args.rounds.saturating_sub(1));
    let batch = usize::from(args.batch_size).max(1);
    let mut stop = None;
    for round in 0..u32::from(args.rounds) {
        let number = round.saturating_add(1);
        let budget = schedule
            .budget_at(u64::from(round), total_steps)
            .map_err(|e| bad_option(e.to_string()))?;
        // ② Reflect, batch by batch.
        let mut patches = Vec::new();
        let n_batches = pending.len().div_ceil(batch);
        for (i, chunk) in pending.chunks(batch).enumerate() {
            progress.set_message(format!(
                "round {number}: reflecting on batch {}/{n_batches}",
                i.saturating_add(1)
            ));
            if let Some(patch) = reflect(llm, &doc, chunk, &mut summary.llm_calls).await? {
                patches.push(patch);
            }
        }
        // ③ Aggregate.
        let merged = aggregate_patches(&patches);
        let proposed = merged.edits.len();
        if proposed == 0 {
            stop = Some(format!("round {number}: the reflection proposed no edit"));
            break;
        }
        let key: Vec<(String, String, String)> = merged
            .edits
            .iter()
            .map(|e| {
                (
                    e.op.to_string(),
                    e.target.clone(),
                    e.content.trim().to_owned(),
                )
            })
            .collect();
        if previous_edits.as_ref() == Some(&key) {
            stop = Some(format!(
                "round {number} proposed the same edits as round {round}"
            ));
            break;
        }
        // ④ Select.
        progress.set_message(format!("round {number}: selecting edits"));
        let clip = rank_and_clip(
            llm,
            &prompts,
            &doc,
            merged.edits,
            budget.unwrap_or(usize::MAX),
        )
        .await
        .map_err(|e| anyhow::anyhow!("LLM call failed while ranking edits: {e}"))?;
        summary.llm_calls = summary.llm_calls.saturating_add(clip.llm_calls);
        // ⑤ Update, with the frontmatter protected as well as the regions.
        let front = frontmatter_block(&doc);
        let spans: Vec<&str> = front.into_iter().collect();
        let (candidate, reports) = apply_patch_with_report(&doc, &clip.edits, &spans);
        let mut record = Round {
            round: number,
            budget,
            trajectories: pending.len(),
            proposed,
            selected: clip.edits,
            clip: clip.info,
            reports,
            meta: Meta::default(),
            accepted: false,
        };
        if candidate == doc {
            summary.rounds.push(record);
            stop = Some(format!("round {number}: no proposed edit could be applied"));
            break;
        }
        // ⑥ Meta-reflect: structure first, then the LLM's judgement.
        let validation = validate_skill(original, &candidate);
        if !validation.passed() {
            record.meta.validation_errors = validation.errors;
            summary.rounds.push(record);
            stop = Some(format!(
                "round {number}: the candidate failed structural validation and was dropped"
            ));
            break;
        }
        progress.set_message(format!("round {number}: meta-reflecting"));
        record.meta = meta_reflect(llm, &candidate, &pending, &mut summary.llm_calls).await?;
        record.accepted = true;
        doc = candidate;
        let open = record.meta.unaddressed.len();
        let judged = record.meta.judged;
        let open_ids: Vec<String> = record
            .meta
            .unaddressed
            .iter()
            .map(|(id, _)| id.clone())
            .collect();
        summary.rounds.push(record);
        if !judged {
            stop = Some(format!(
                "round {number}: the meta-reflection reply could not be read; stopping with \
                 this candidate"
            ));
            break;
        }
        if open == 0 {
            stop = Some(format!(
                "round {number}: the meta-reflection finds every known failure addressed"
            ));
            break;
        }
        if open >= previous_open {
            stop = Some(format!(
                "round {number} did not reduce the open failures ({open} still open)"
            ));
            break;
        }
        previous_open = open;
        previous_edits = Some(key);
        let still: Vec<&Trajectory> = pending
            .iter()
            .copied()
            .filter(|t| open_ids.contains(&t.id))
            .collect();
        if !still.is_empty() {
            pending = still;
        }
    }
    progress.finish_and_clear();
    summary.stop_reason = stop.unwrap_or_else(|| format!("reached --rounds {}", args.rounds));
    Ok((doc, summary))
}

/// The frontmatter block (`---` … `---`) at the start of `doc`, if any.
pub(super) fn frontmatter_block(doc: &str) -> Option<&str> {
    let first_break = doc.find('\n')?;
    if doc.get(..first_break)?.trim_end_matches('\r') != "---" {
        return None;
    }
    let mut offset = first_break.saturating_add(1);
    for line in doc.get(offset..)?.split_inclusive('\n') {
        let bare = line.trim_end_matches(['\r', '\n']);
        if bare == "---" {
            return doc.get(..offset.saturating_add(bare.len()));
        }
        offset = offset.saturating_add(line.len());
    }
    None
}
