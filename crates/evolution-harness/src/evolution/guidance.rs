//! The slow update's phase of an epoch: once the proposer's candidates are
//! judged, long-term guidance written from two epochs' training answers
//! joins the epoch's proposals, to be gated like any other candidate.

use std::collections::BTreeMap;

use evolution_types::{EvolutionRecord, EvolutionStatus, TargetType, VersionedStore};

use super::documents::{workspace, workspace_at};
use super::epoch::{TrainingRun, train_run_id};
use super::{LoopConfig, LoopContext, LoopError, LoopState, Proposal, SLOW_UPDATE_LABEL};
use crate::slow_update::{ComparisonPair, slow_update};
use crate::validate::{ValidationContext, ValidationError};

/// Adds this epoch's slow-update candidates to its proposals (none without
/// a template or before the second epoch) and marks them proposed, so that
/// they are proposed once per epoch, after the proposer's candidates. The
/// previous epoch's training run is `previous` (taken), or read back from
/// the run log after a resume.
pub(super) async fn propose_slow_update(
    ctx: LoopContext<'_>,
    config: &LoopConfig,
    state: &mut LoopState,
    train: &TrainingRun,
    previous: &mut Option<TrainingRun>,
) -> Result<(), LoopError> {
    let previous = match (&config.slow_update_template, state.epoch.checked_sub(1)) {
        (Some(_), Some(prev)) => match previous.take() {
            Some(previous) => Some(previous),
            None => previous_epoch_train(ctx.validation, config, ctx.store, prev).await?,
        },
        _ => None,
    };
    let guidance = match (&config.slow_update_template, &previous) {
        (Some(template), Some(previous)) => {
            slow_update_proposals(ctx, config, state.epoch, template, previous, train).await?
        }
        _ => Vec::new(),
    };
    state
        .proposals
        .get_or_insert_with(Vec::new)
        .extend(guidance);
    state.slow_update_proposed = true;
    state.checkpoint(ctx)?;
    Ok(())
}

/// The slow update's candidates: for every skill document that changed
/// since the previous epoch's training version, the guidance the LLM
/// writes from the comparison of the two epochs' training answers, as a
/// proposal labelled `slow-update-<document>` written against the current
/// version. Documents whose guidance the LLM left unchanged propose nothing.
/// Each document's call is announced as a `slow_update` phase of `epoch`.
async fn slow_update_proposals(
    ctx: LoopContext<'_>,
    config: &LoopConfig,
    epoch: u32,
    template: &str,
    previous: &TrainingRun,
    train: &TrainingRun,
) -> Result<Vec<Proposal>, LoopError> {
    let pairs: Vec<ComparisonPair> = config
        .train
        .iter()
        .filter_map(|q| {
            let before = previous.answers.get(&q.question_id)?;
            let now = train.answers.get(&q.question_id)?;
            Some(ComparisonPair {
                question_id: q.question_id.clone(),
                question: q.question.clone(),
                answer: q.answer.clone(),
                previous_prediction: before.prediction.clone(),
                previous_correct: before.correct,
                current_prediction: now.prediction.clone(),
                current_correct: now.correct,
            })
        })
        .collect();
    let current = workspace(ctx.store, config)?;
    let mut proposals = Vec::new();
    for (name, text) in &current.skills {
        let Some(before) = previous.workspace.skills.get(name).filter(|b| *b != text) else {
            continue;
        };
        super::phases(ctx, epoch).start(crate::phase::Phase::SlowUpdate, name);
        let update =
            slow_update(ctx.llm, template, &config.preferences, before, text, &pairs).await?;
        if !update.updated || update.content == *text {
            continue;
        }
        let mut record = EvolutionRecord::new(
            name.clone(),
            TargetType::Skill,
            text.clone(),
            current.version.clone(),
        );
        record.evolved_content.clone_from(&update.content);
        record.status = EvolutionStatus::Accepted;
        record.reason = "slow update: long-term guidance from two epochs' training answers".into();
        proposals.push(Proposal {
            label: format!("{SLOW_UPDATE_LABEL}-{name}"),
            writes: BTreeMap::from([(name.clone(), update.content)]),
            record,
        });
    }
    Ok(proposals)
}
/// The previous epoch's training answers, read back from the run log after a resume.
async fn previous_epoch_train(
    vctx: ValidationContext<'_>,
    config: &LoopConfig,
    store: &dyn VersionedStore,
    epoch: u32,
) -> Result<Option<TrainingRun>, LoopError> {
    let Some(log) = vctx.resume_from else {
        return Ok(None);
    };
    for info in store
        .history()
        .map_err(ValidationError::from)?
        .into_iter()
        .rev()
    {
        let run_id = train_run_id(config, epoch, &info.version);
        if let Ok(found) = log.get_predictions(&run_id, None).await
            && !found.is_empty()
        {
            let workspace = workspace_at(store, config, &info.version)?;
            let answers = found
                .into_iter()
                .map(|p| (p.question_id.clone(), p))
                .collect();
            return Ok(Some(TrainingRun {
                workspace,
                run_id,
                answers,
            }));
        }
    }
    Ok(None)
}
