//! Gating the epoch's candidates one by one, each against the version
//! current when its turn comes.

use std::collections::{BTreeMap, BTreeSet};

use evolution_types::{CheckpointError, EvolutionResult, RejectedEdit};

use super::documents::{document, rebase, with_writes, workspace, workspace_at};
use super::epoch::TrainingRun;
use super::state::PendingGate;
use super::watch::settle_probations;
use super::{DroppedProposal, LoopConfig, LoopContext, LoopError, LoopState, Proposal};
use crate::events::HarnessEvent;
use crate::failpoint::{self, failpoint};
use crate::gatekeeper::{GateRecord, Gatekeeper};
use crate::runner::Workspace;
use crate::validate::{Candidate, ValidationError};

/// Gates the epoch's proposals not judged yet, in order, saving the state
/// after each; every pending probation is settled first and after each
/// accept, so nothing is gated on top of a version still on probation.
pub(super) async fn gate_pending(
    ctx: LoopContext<'_>,
    config: &LoopConfig,
    provenance: &BTreeSet<String>,
    state: &mut LoopState,
    train: &TrainingRun,
) -> Result<(), LoopError> {
    let proposals = state.proposals.clone().unwrap_or_default();
    settle_probations(ctx, config, provenance, state).await?;
    if let Some(best) = state.gatekeeper.best_per_epoch()
        && !state.ranked
    {
        rank_epoch(ctx, config, provenance, state, &proposals, train, best).await?;
    }
    while let Some(proposal) = proposals.get(state.judged) {
        gate_proposal(ctx, config, provenance, state, proposal, train).await?;
        state.judged = state.judged.saturating_add(1);
        state.checkpoint(ctx)?;
        failpoint(failpoint::GATE_CLOSED);
        settle_probations(ctx, config, provenance, state).await?;
    }
    Ok(())
}

/// The label of `proposal`'s candidate in the current epoch.
fn candidate_label(config: &LoopConfig, state: &LoopState, proposal: &Proposal) -> String {
    format!("{}_e{}_{}", config.run_name, state.epoch, proposal.label)
}

/// Under a cap of `best` gated candidates per epoch: screens every proposal of the epoch
/// not judged yet (each against the current version, before any is gated) and keeps the
/// `best` that passed with the most net wins per screened question, `(W − L)/n` (a screen
/// stops once a candidate passes, so the fastest to pass ranks first; the proposer's order
/// breaks ties);
/// the others are dropped, with their reasons, before anything of the run's level is spent
/// on them. Without a screen rule (or training questions) the first `best` are kept. The
/// outcome is saved, so a resumed run does not rank again.
async fn rank_epoch(
    ctx: LoopContext<'_>,
    config: &LoopConfig,
    provenance: &BTreeSet<String>,
    state: &mut LoopState,
    proposals: &[Proposal],
    train: &TrainingRun,
    best: usize,
) -> Result<(), LoopError> {
    let base = workspace(ctx.store, config)?;
    let mut passed: Vec<(f64, String, String)> = Vec::new();
    for proposal in proposals.iter().skip(state.judged) {
        let label = candidate_label(config, state, proposal);
        let Some(GateInput { against, writes }) =
            gate_input(ctx, config, proposal, train, &base, &label)?
        else {
            continue;
        };
        let reasons = breaches(config, &against, &writes);
        if !reasons.is_empty() {
            drop_proposal(ctx, state, proposal, &label, reasons);
            state.ranked_out.insert(label);
            continue;
        }
        if config.train.is_empty() || state.gatekeeper.screen_rule().is_none() {
            passed.push((0.0, String::new(), label));
            continue;
        }
        super::phases(ctx, state.epoch).start(crate::phase::Phase::Gate, &label);
        let candidate = Candidate {
            label: label.clone(),
            workspace: with_writes(&base, &label, &writes, config),
            provenance: provenance.clone(),
        };
        let screen = state
            .gatekeeper
            .screen(ctx.validation, &against, &candidate, &config.train)
            .await?;
        match screen {
            Some(screen) if !screen.passed => {
                let reason = screened_out(state, &screen);
                drop_proposal(ctx, state, proposal, &label, vec![reason]);
                state.ranked_out.insert(label);
            }
            Some(screen) => {
                #[expect(
                    clippy::cast_precision_loss,
                    reason = "counts of training questions, far below 2^53"
                )]
                let rate = (screen.w as f64 - screen.l as f64) / screen.questions.max(1) as f64;
                let shown = format!(
                    "W - L = {} on {} question(s)",
                    i128::from(screen.w) - i128::from(screen.l),
                    screen.questions
                );
                passed.push((rate, shown, label));
            }
            None => passed.push((0.0, String::new(), label)),
        }
    }
    // A stable sort: among equal rates the proposer's order stands.
    passed.sort_by(|a, b| b.0.total_cmp(&a.0));
    for (rank, (_, shown, label)) in passed.into_iter().enumerate() {
        if rank < best {
            state.screened.insert(label);
        } else {
            let reason = if shown.is_empty() {
                format!("past this epoch's {best} candidate(s) to gate")
            } else {
                format!(
                    "not among this epoch's {best} best on training questions ({shown}); only \
                     the best are gated"
                )
            };
            set_aside(ctx, state, &label, vec![reason]);
            state.ranked_out.insert(label);
        }
    }
    state.ranked = true;
    state.checkpoint(ctx)?;
    Ok(())
}

/// Why a candidate that failed the screen was dropped, in words.
fn screened_out(state: &LoopState, screen: &crate::screen::ScreenOutcome) -> String {
    format!(
        "screened out on training questions: W={}, L={} on {} question(s), \
         W - L short of {}",
        screen.w,
        screen.l,
        screen.questions,
        state.gatekeeper.screen_rule().map_or(0, |r| r.pass)
    )
}

/// Gates one proposal of the epoch against the current version (rebasing
/// it when an earlier accept changed its documents), records its gate
/// record, its blacklist entries and its evolution record, and starts the
/// probation of a provisional accept.
///
/// The decision is saved (with the e-LOND state that tested it) before the
/// store is written; a run killed after that resumes with the saved
/// decision ([`LoopState::pending`]) and carries it out, without gating the
/// proposal again.
async fn gate_proposal(
    ctx: LoopContext<'_>,
    config: &LoopConfig,
    provenance: &BTreeSet<String>,
    state: &mut LoopState,
    proposal: &Proposal,
    train: &TrainingRun,
) -> Result<(), LoopError> {
    let label = candidate_label(config, state, proposal);
    let pending = match state.pending.take() {
        Some(pending) if pending.record.candidate == label => pending,
        Some(other) => {
            return Err(CheckpointError::Corrupt {
                message: format!(
                    "the saved gate decision is for {:?}, but the next proposal is {label:?}",
                    other.record.candidate
                ),
            }
            .into());
        }
        None => match decide(ctx, config, provenance, state, proposal, train, &label).await? {
            Some(pending) => pending,
            None => return Ok(()),
        },
    };
    // Saved until the checkpoint that closes the candidate replaces it.
    state.pending = None;
    let against = workspace_at(ctx.store, config, &pending.against)?;
    let record = Gatekeeper::commit(
        ctx.validation,
        ctx.store,
        &pending.against,
        pending.record,
        &pending.writes,
    )?;
    state.gatekeeper.carry_over(&record);
    state
        .rejected
        .extend(record.rejected_edits(&proposal.record));
    state.probations.extend(record.probation.clone());
    record_evolution(ctx, proposal, &pending.writes, &against, &record, train).await?;
    failpoint(failpoint::EVOLUTION_RECORDED);
    state.records.push(record);
    Ok(())
}

/// Gates `proposal` (labelled `label`) and saves the decision as the
/// state's pending one before anything is written to the store; `None`
/// when the proposal is skipped (a stale proposal that cannot be rebased).
async fn decide(
    ctx: LoopContext<'_>,
    config: &LoopConfig,
    provenance: &BTreeSet<String>,
    state: &mut LoopState,
    proposal: &Proposal,
    train: &TrainingRun,
    label: &str,
) -> Result<Option<PendingGate>, LoopError> {
    // Dropped by the epoch's ranking already.
    if state.ranked_out.contains(label) {
        return Ok(None);
    }
    let base = workspace(ctx.store, config)?;
    let Some(GateInput { against, writes }) =
        gate_input(ctx, config, proposal, train, &base, label)?
    else {
        return Ok(None);
    };
    // The epoch's tests used up (a candidate accepted before a kill was counted already).
    if let Some(best) = state.gatekeeper.best_per_epoch()
        && state.gated_in_epoch >= best
        && !state.screened.contains(label)
    {
        let reason = format!("this epoch's {best} gate test(s) are used");
        set_aside(ctx, state, label, vec![reason]);
        return Ok(None);
    }
    // The house rules, before anything is spent on the candidate.
    let reasons = breaches(config, &against, &writes);
    if !reasons.is_empty() {
        drop_proposal(ctx, state, proposal, label, reasons);
        return Ok(None);
    }
    super::phases(ctx, state.epoch).start(crate::phase::Phase::Gate, label);
    let candidate = Candidate {
        label: label.to_owned(),
        workspace: with_writes(&base, label, &writes, config),
        provenance: provenance.clone(),
    };
    // The screen, on training questions, before any of the run's e-LOND level is spent.
    if !config.train.is_empty()
        && !state.screened.contains(label)
        && let Some(screen) = state
            .gatekeeper
            .screen(ctx.validation, &against, &candidate, &config.train)
            .await?
            .filter(|s| !s.passed)
    {
        let reason = screened_out(state, &screen);
        drop_proposal(ctx, state, proposal, label, vec![reason]);
        return Ok(None);
    }
    // A skill's candidate is gated on the questions of the task types that skill serves.
    let questions = config.gate_questions_for(writes.keys());
    let written: Vec<String> = writes.keys().cloned().collect();
    let record = state
        .gatekeeper
        .decide_with(
            ctx.validation,
            ctx.ledger,
            &written,
            &against,
            &candidate,
            &questions,
        )
        .await?;
    state.gated_in_epoch = state.gated_in_epoch.saturating_add(1);
    let pending = PendingGate {
        record,
        writes,
        against: against.version,
    };
    state.pending = Some(pending.clone());
    state.checkpoint(ctx)?;
    failpoint(failpoint::GATE_DECIDED);
    Ok(Some(pending))
}

/// Every check of the project's preferences that `writes` break, each judged against
/// the document of `against` it would replace, in words.
fn breaches(
    config: &LoopConfig,
    against: &Workspace,
    writes: &BTreeMap<String, String>,
) -> Vec<String> {
    if config.preferences.checks.is_empty() {
        return Vec::new();
    }
    writes
        .iter()
        .flat_map(|(name, after)| {
            let before = document(against, name).map_or("", String::as_str);
            config.preferences.breaches(name, before, after)
        })
        .map(|breach| breach.to_string())
        .collect()
}

/// Drops `proposal` (labelled `label`) before its gate (it broke the project's
/// preferences, or failed the screen): it is kept in the state's dropped proposals,
/// announced, and its edits join the blacklist with the reasons, so the next epoch's prompts
/// say why.
fn drop_proposal(
    ctx: LoopContext<'_>,
    state: &mut LoopState,
    proposal: &Proposal,
    label: &str,
    reasons: Vec<String>,
) {
    set_aside(ctx, state, label, reasons.clone());
    let reason = format!("dropped before the gate: {}", reasons.join("; "));
    let record = &proposal.record;
    state
        .rejected
        .extend(record.edits.iter().map(|edit| RejectedEdit {
            target_file: record.target_file.clone(),
            edit: edit.clone(),
            reason: reason.clone(),
            source_version: record.source_version.clone(),
        }));
}

/// Keeps the candidate `label` from its gate for `reasons` without blacklisting its edits
/// (they passed the screen, another candidate only did better): it is kept in the state's
/// dropped proposals and announced.
fn set_aside(ctx: LoopContext<'_>, state: &mut LoopState, label: &str, reasons: Vec<String>) {
    ctx.validation.events.emit(&HarnessEvent::CandidateDropped {
        candidate: label.to_owned(),
        reasons: reasons.clone(),
    });
    state.dropped.push(DroppedProposal {
        candidate: label.to_owned(),
        epoch: state.epoch,
        reasons,
    });
}

/// What a proposal is gated with: the documents it is gated against and
/// the documents it writes.
struct GateInput {
    /// The version before the proposal's accept: the current one, or the
    /// one its accept replaced when it was accepted before a kill.
    against: Workspace,
    /// Document name → full new text.
    writes: BTreeMap<String, String>,
}

/// The writes to gate for `proposal` on the current documents `base`: its
/// own when nothing it writes changed since it was written; rebased when an
/// earlier accept changed them (`None` when it cannot be: the proposal is
/// skipped); and when its candidate `label` was already accepted before a
/// kill, what the current version holds, gated against the version that
/// accept replaced.
fn gate_input(
    ctx: LoopContext<'_>,
    config: &LoopConfig,
    proposal: &Proposal,
    train: &TrainingRun,
    base: &Workspace,
    label: &str,
) -> Result<Option<GateInput>, LoopError> {
    // The documents the proposal was written against: the epoch's training
    // version for the proposer's, the version current when it was written
    // for the slow update's.
    let written_against = if proposal.record.source_version == train.workspace.version {
        train.workspace.clone()
    } else {
        workspace_at(ctx.store, config, &proposal.record.source_version)?
    };
    let stale = proposal
        .writes
        .keys()
        .any(|name| document(base, name) != document(&written_against, name));
    let parent = crate::gatekeeper::accepted_earlier(ctx.store, &base.version, label)
        .map_err(ValidationError::from)?;
    let against = match &parent {
        Some(parent) => workspace_at(ctx.store, config, parent)?,
        None => base.clone(),
    };
    let writes = if parent.is_some() {
        // Accepted before a kill: the current version holds what
        // was accepted (the proposal's writes, rebased or not).
        Some(
            proposal
                .writes
                .keys()
                .filter_map(|name| Some((name.clone(), document(base, name)?.clone())))
                .collect(),
        )
    } else if stale {
        rebase(proposal, &written_against, base)
    } else {
        Some(proposal.writes.clone())
    };
    Ok(writes.map(|writes| GateInput { against, writes }))
}

/// Records the proposal's evolution record in the run log under the
/// epoch's training run id, with the version its accept wrote; a rebased
/// proposal's record says what was gated, not what was proposed.
async fn record_evolution(
    ctx: LoopContext<'_>,
    proposal: &Proposal,
    writes: &BTreeMap<String, String>,
    against: &Workspace,
    record: &GateRecord,
    train: &TrainingRun,
) -> Result<(), LoopError> {
    let mut evolution = proposal.record.clone();
    if *writes != proposal.writes
        && let Some(text) = writes.get(&evolution.target_file)
    {
        evolution.original_content = document(against, &evolution.target_file)
            .cloned()
            .unwrap_or_default();
        evolution.evolved_content.clone_from(text);
    }
    evolution.result_version.clone_from(&record.new_version);
    ctx.validation
        .recorder
        .record_evolution(&EvolutionResult {
            run_id: train.run_id.clone(),
            source_version: proposal.record.source_version.clone(),
            records: vec![evolution],
        })
        .await
        .map_err(ValidationError::from)?;
    Ok(())
}
