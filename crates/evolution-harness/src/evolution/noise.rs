//! Choosing the answers per gate question from the agent's own noise: before the first gate
//! test, a few training questions are answered a second time by the same version, and the
//! share answered differently decides ([`crate::AutoAnswers::choose`]).

use std::collections::BTreeMap;

use super::epoch::TrainingRun;
use super::{LoopConfig, LoopContext, LoopError, LoopState, scoped_questions};
use crate::events::{Arm, HarnessEvent};
use crate::phase::Phase;
use crate::repeat::AgentNoise;
use crate::validate::{is_failure, run_arm};

/// Measures the agent's self-disagreement and settles the answers per question, once per run
/// and only when the gatekeeper is to choose them; saved before any gate test.
pub(super) async fn choose_answers(
    ctx: LoopContext<'_>,
    config: &LoopConfig,
    state: &mut LoopState,
    train: &TrainingRun,
) -> Result<(), LoopError> {
    let Some(auto) = state.gatekeeper.answers_to_choose() else {
        return Ok(());
    };
    let again: Vec<_> = config.train.iter().take(auto.questions).cloned().collect();
    let run_id = format!("{}_again_{}", config.run_name, train.workspace.version);
    super::phases(ctx, state.epoch).start(Phase::Rollout, &run_id);
    let (second, _) = run_arm(
        ctx.validation,
        &run_id,
        &train.workspace,
        &again,
        Arm::Plain,
    )
    .await?;
    let noise = disagreement(&train.answers, &second);
    let answers = auto.choose(noise, smallest_pool(config));
    state.gatekeeper.settle_answers(noise, answers);
    ctx.validation.events.emit(&HarnessEvent::AnswersChosen {
        questions: noise.questions,
        disagreed: noise.disagreed,
        answers_per_question: answers,
    });
    state.checkpoint(ctx)?;
    Ok(())
}

/// The questions answered in both `first` and `second` (no failure in either), and how many
/// were right in one and wrong in the other.
fn disagreement(
    first: &BTreeMap<String, evolution_types::Prediction>,
    second: &BTreeMap<String, evolution_types::Prediction>,
) -> AgentNoise {
    let mut noise = AgentNoise::default();
    for (id, b) in second {
        let Some(a) = first.get(id) else { continue };
        if is_failure(a) || is_failure(b) {
            continue;
        }
        noise.questions = noise.questions.saturating_add(1);
        if a.correct != b.correct {
            noise.disagreed = noise.disagreed.saturating_add(1);
        }
    }
    noise
}

/// The fewest gate questions a candidate can be gated on: those of the task types one
/// document serves, the smallest over the documents with a scope (every gate question when
/// none has one, or a document serves none of them).
fn smallest_pool(config: &LoopConfig) -> usize {
    let pools = config.gate_scope.keys().map(|document| {
        scoped_questions(&config.gate, &config.gate_scope, std::iter::once(document)).len()
    });
    let smallest = pools.filter(|&n| n > 0).min();
    let all = config.gate.len();
    smallest.unwrap_or(all).min(all)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use evolution_types::Prediction;

    fn answers(rows: &[(&str, bool, bool)]) -> BTreeMap<String, Prediction> {
        rows.iter()
            .map(|(id, correct, failed)| {
                let mut p = Prediction {
                    question_id: (*id).to_owned(),
                    correct: *correct,
                    ..Prediction::default()
                };
                if *failed {
                    p.stop_reason = "error".to_owned();
                }
                ((*id).to_owned(), p)
            })
            .collect()
    }

    #[test]
    fn questions_answered_right_once_and_wrong_once_disagree_and_failures_are_left_out() {
        let first = answers(&[
            ("a", true, false),
            ("b", true, false),
            ("c", false, false),
            ("d", true, true),
        ]);
        let second = answers(&[
            ("a", true, false),
            ("b", false, false),
            ("c", false, false),
            ("d", false, false),
            ("e", true, false),
        ]);
        assert_eq!(
            disagreement(&first, &second),
            AgentNoise {
                questions: 3,
                disagreed: 1
            }
        );
    }

    #[test]
    fn the_smallest_pool_is_the_fewest_gate_questions_of_one_documents_task_types() {
        let q = |id: &str, task: &str| evolution_types::GeneratedQuestion {
            question_id: id.to_owned(),
            task_type: task.to_owned(),
            ..Default::default()
        };
        let mut config = LoopConfig {
            run_name: "r".into(),
            max_epochs: 1,
            train: vec![],
            gate: vec![q("1", "x"), q("2", "x"), q("3", "y")],
            gate_scope: BTreeMap::new(),
            holdout: vec![],
            probation: vec![],
            prompt_files: BTreeSet::new(),
            slow_update_template: None,
            preferences: Default::default(),
            estimate: None,
        };
        assert_eq!(smallest_pool(&config), 3);
        config.gate_scope = BTreeMap::from([
            ("x.md".to_owned(), BTreeSet::from(["x".to_owned()])),
            ("y.md".to_owned(), BTreeSet::from(["y".to_owned()])),
            ("z.md".to_owned(), BTreeSet::from(["z".to_owned()])),
        ]);
        assert_eq!(smallest_pool(&config), 1);
    }
}
