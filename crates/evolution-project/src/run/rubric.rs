//! Rubric checks scored by the run's LLM.
//!
//! A question whose check is a rubric (`{"kind":"rubric","text":"…"}`, as `harvest --tasks`
//! writes for a request with no short answer, or one inside an `all_of` with checks a program
//! decides) has no answer a program can compare with. The
//! agent answers it like any question (the subprocess protocol never shows it the check); then
//! [`RubricRunner`] asks the kernel's rubric judge, with the run's LLM and its `rubric`
//! template, whether the answer meets the rubric, and the verdict is the question's score.
//!
//! A judge that cannot give a verdict (its replies stay unreadable, or the provider fails)
//! makes the question INFRA, never a wrong answer: a candidate must not lose, or win, a gate
//! pair because the judge failed. The answers of a batch are judged concurrently (the LLM's own
//! concurrency limit applies), so a `handoff` provider asks for all their verdicts in one round. Answers the agent could not give (already INFRA) are not
//! judged. The judge's reason is kept in the prediction as `rubric_reason`; when it gave
//! none, why is kept as `judge_error` ([`JUDGE_ERROR_KEY`]), so that the run's counts and
//! messages put the failure on the judge, not on the agent. An agent that
//! reports its own scores (`scoring = "agent_reported"`) is trusted instead, as for every other
//! check: the runner then only passes its questions on.

use async_trait::async_trait;
use evolution_diagnose::DiagnosePrompts;
use evolution_diagnose::rubric::{RubricCase, judge_rubric};
use evolution_harness::{AgentRunner, AnswerCheck, JUDGE_ERROR_KEY, RunnerError, Workspace};
use evolution_types::{GeneratedQuestion, INFRA_STOP_REASON, LlmProvider, QuestionOutcome};

/// The prediction field that keeps the judge's reason.
pub const RUBRIC_REASON_KEY: &str = "rubric_reason";

/// An agent runner whose rubric questions are scored by an LLM judge after the agent answers.
pub struct RubricRunner<'a, R> {
    inner: R,
    /// The judge's LLM and prompts; `None` when the agent scores its own answers.
    judge: Option<(&'a dyn LlmProvider, DiagnosePrompts)>,
}

impl<'a, R> RubricRunner<'a, R> {
    /// Runs questions with `inner` and judges rubric answers with `llm` and `prompts.rubric`.
    pub fn new(inner: R, llm: &'a dyn LlmProvider, prompts: DiagnosePrompts) -> Self {
        RubricRunner {
            inner,
            judge: Some((llm, prompts)),
        }
    }

    /// Leaves the scoring to the agent when `agent_scores` (nothing is judged then).
    pub fn unless_agent_scores(mut self, agent_scores: bool) -> Self {
        if agent_scores {
            self.judge = None;
        }
        self
    }

    /// The agent's own runner.
    pub fn inner(&self) -> &R {
        &self.inner
    }

    /// Scores one answered rubric question in place with `llm` and `prompts`.
    async fn judge(
        llm: &dyn LlmProvider,
        prompts: &DiagnosePrompts,
        question: &GeneratedQuestion,
        rubric: &str,
        outcome: &mut QuestionOutcome,
    ) {
        let case = RubricCase {
            question_id: &question.question_id,
            question: &question.question,
            rubric,
            prediction: &outcome.prediction.prediction,
        };
        match judge_rubric(llm, prompts, &case).await {
            Ok(verdict) => {
                outcome.prediction.correct = verdict.passed;
                outcome
                    .prediction
                    .extra
                    .insert(RUBRIC_REASON_KEY.to_owned(), verdict.reason.into());
            }
            Err(error) => {
                tracing::warn!(question = %question.question_id, %error, "rubric judge gave no verdict");
                outcome.prediction.correct = false;
                INFRA_STOP_REASON.clone_into(&mut outcome.prediction.stop_reason);
                outcome.prediction.error =
                    Some(format!("the rubric judge gave no verdict: {error}"));
                // Marked as the judge's failure, so that nothing blames the agent for it.
                outcome
                    .prediction
                    .extra
                    .insert(JUDGE_ERROR_KEY.to_owned(), error.to_string().into());
            }
        }
    }
}

impl<R> std::fmt::Debug for RubricRunner<'_, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RubricRunner").finish_non_exhaustive()
    }
}

#[async_trait]
impl<R: AgentRunner> AgentRunner for RubricRunner<'_, R> {
    async fn run(
        &self,
        run_id: &str,
        workspace: &Workspace,
        questions: &[GeneratedQuestion],
    ) -> Result<Vec<QuestionOutcome>, RunnerError> {
        let mut outcomes = self.inner.run(run_id, workspace, questions).await?;
        let Some((llm, prompts)) = &self.judge else {
            return Ok(outcomes);
        };
        // Every answer of the batch is judged at once: the verdicts do not depend on each
        // other, and a provider that hands its requests off (`handoff`) then gathers them all
        // in one round instead of one round each.
        let judged = questions
            .iter()
            .zip(outcomes.iter_mut())
            .filter_map(|(question, outcome)| {
                if outcome.is_infra_error() {
                    return None;
                }
                let Ok(Some(check)) = AnswerCheck::of(question) else {
                    return None;
                };
                // A rubric alone, or one in an `all_of` whose other checks all passed: the
                // judge decides. An `all_of` failed by its other checks needs no judge.
                let rubric = check.rubric()?.to_owned();
                if check
                    .passes(&outcome.prediction.prediction, &outcome.trace)
                    .is_some()
                {
                    return None;
                }
                Some(async move {
                    Self::judge(*llm, prompts, question, &rubric, outcome).await;
                })
            });
        futures_util::future::join_all(judged).await;
        Ok(outcomes)
    }
}

/// How many of `questions` have a rubric check (alone or in an `all_of`).
pub fn count_rubrics(questions: &[GeneratedQuestion]) -> usize {
    questions
        .iter()
        .filter(|q| matches!(AnswerCheck::of(q), Ok(Some(check)) if check.rubric().is_some()))
        .count()
}

#[cfg(test)]
mod tests {
    use evolution_harness::{AgentReply, InProcessRunner};
    use evolution_testkit::ScriptedLlm;
    use serde_json::json;

    use super::*;

    fn question(id: &str, check: serde_json::Value) -> GeneratedQuestion {
        let mut q = GeneratedQuestion {
            question_id: id.into(),
            task_type: "qa".into(),
            question: format!("request {id}"),
            ..GeneratedQuestion::default()
        };
        q.extra.insert("check".into(), check);
        q
    }

    fn agent() -> InProcessRunner<
        impl Fn(&Workspace, &GeneratedQuestion) -> Result<AgentReply, String> + Send + Sync,
    > {
        InProcessRunner::new(|_: &Workspace, q: &GeneratedQuestion| {
            if q.question_id == "crash" {
                return Err("the agent crashed".into());
            }
            Ok(AgentReply {
                prediction: format!("answer to {}", q.question_id),
                ..AgentReply::default()
            })
        })
    }

    async fn run(llm: &ScriptedLlm, questions: &[GeneratedQuestion]) -> Vec<QuestionOutcome> {
        let runner = RubricRunner::new(agent(), llm, DiagnosePrompts::builtin());
        runner
            .run("r", &Workspace::new("v1"), questions)
            .await
            .unwrap()
    }

    #[tokio::test]
    async fn the_judge_scores_rubric_answers_and_leaves_other_checks_alone() {
        let llm = ScriptedLlm::with_replies([
            r#"{"passed": true, "reason": "names the key"}"#,
            r#"{"passed": false, "reason": "misses the revocation"}"#,
        ]);
        let questions = [
            question("a", json!({"kind": "rubric", "text": "names the key"})),
            question("b", json!({"kind": "contains", "value": "answer to b"})),
            question(
                "c",
                json!({"kind": "rubric", "text": "revokes the old key"}),
            ),
            question("crash", json!({"kind": "rubric", "text": "anything"})),
        ];
        let outcomes = run(&llm, &questions).await;
        let correct: Vec<bool> = outcomes.iter().map(|o| o.prediction.correct).collect();
        assert_eq!(correct, [true, true, false, false]);
        assert_eq!(
            outcomes[0].prediction.extra[RUBRIC_REASON_KEY],
            "names the key"
        );
        assert!(outcomes[3].is_infra_error());
        // Two judge calls: the crashed question is not judged, the contains check needs none.
        let requests = llm.requests();
        assert_eq!(requests.len(), 2);
        assert!(requests[0].last_user().contains("answer to a"));
        assert!(requests[1].last_user().contains("revokes the old key"));
        assert_eq!(count_rubrics(&questions), 3);
    }

    #[tokio::test]
    async fn a_rubric_in_an_all_of_is_judged_only_when_the_other_checks_pass() {
        let llm = ScriptedLlm::with_replies([r#"{"passed": true, "reason": "explains it"}"#]);
        let with = |id: &str, value: &str| {
            question(
                id,
                json!({"kind": "all_of", "checks": [
                    {"kind": "contains", "value": value},
                    {"kind": "rubric", "text": "explains why"},
                ]}),
            )
        };
        let questions = [with("a", "answer to a"), with("b", "something else")];
        let outcomes = run(&llm, &questions).await;
        let correct: Vec<bool> = outcomes.iter().map(|o| o.prediction.correct).collect();
        assert_eq!(correct, [true, false]);
        // One judge call: b failed its contains check, so no rubric could save it.
        assert_eq!(llm.call_count(), 1);
        assert!(llm.requests()[0].last_user().contains("explains why"));
        assert_eq!(count_rubrics(&questions), 2);
    }

    #[tokio::test]
    async fn an_agent_that_scores_itself_is_not_judged() {
        let llm = ScriptedLlm::with_replies([r#"{"passed": true, "reason": "never asked"}"#]);
        let runner =
            RubricRunner::new(agent(), &llm, DiagnosePrompts::builtin()).unless_agent_scores(true);
        let questions = [question("a", json!({"kind": "rubric", "text": "polite"}))];
        let outcomes = runner
            .run("r", &Workspace::new("v1"), &questions)
            .await
            .unwrap();
        assert_eq!(outcomes[0].prediction.prediction, "answer to a");
        assert!(!outcomes[0].prediction.extra.contains_key(RUBRIC_REASON_KEY));
        assert_eq!(llm.call_count(), 0);
    }

    #[tokio::test]
    async fn an_unreadable_verdict_is_infra_not_a_wrong_answer() {
        let llm = ScriptedLlm::with_replies(["maybe", "{\"passed\": \"sure\"}", "{}"]);
        let questions = [question("a", json!({"kind": "rubric", "text": "polite"}))];
        let outcomes = run(&llm, &questions).await;
        let outcome = &outcomes[0];
        assert!(outcome.is_infra_error(), "{outcome:?}");
        assert_eq!(outcome.prediction.stop_reason, INFRA_STOP_REASON);
        let error = outcome.prediction.error.as_deref().unwrap();
        assert!(
            error.starts_with("the rubric judge gave no verdict"),
            "{error}"
        );
        let reason = evolution_harness::judge_error(&outcome.prediction).unwrap();
        assert!(reason.contains("unreadable"), "{reason}");
        assert_eq!(llm.call_count(), 3);
    }
}
