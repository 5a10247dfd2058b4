//! The agent boundary: run questions against a materialized workspace.

use std::collections::BTreeMap;

use async_trait::async_trait;
use evolution_types::{
    GeneratedQuestion, INFRA_STOP_REASON, JsonMap, NOT_STARTED_STOP_REASON, Prediction,
    QuestionOutcome, TraceStep, template::truncate_chars,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::check::AnswerCheck;

/// Named versions of the documents an agent runs with: the skills and the
/// prompts (system prompt, tool prompts) of one store version.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Workspace {
    /// The store version these documents come from (for example `v3`).
    pub version: String,
    /// Skill file name → text.
    #[serde(default)]
    pub skills: BTreeMap<String, String>,
    /// Prompt file name → text.
    #[serde(default)]
    pub prompts: BTreeMap<String, String>,
}

impl Workspace {
    /// An empty workspace named `version`.
    pub fn new(version: impl Into<String>) -> Self {
        Workspace {
            version: version.into(),
            ..Workspace::default()
        }
    }

    /// The same workspace with one more skill file.
    pub fn with_skill(mut self, name: impl Into<String>, text: impl Into<String>) -> Self {
        self.skills.insert(name.into(), text.into());
        self
    }

    /// The same workspace with one more prompt file.
    pub fn with_prompt(mut self, name: impl Into<String>, text: impl Into<String>) -> Self {
        self.prompts.insert(name.into(), text.into());
        self
    }

    /// The workspace `version` of `documents` (name → text): the names in `prompt_files`
    /// are prompts, every other one a skill. Both `run` and a gated evolve build the agent's
    /// workspace this way, so an agent sees the same names in both.
    pub fn of_documents<'a>(
        version: impl Into<String>,
        documents: impl IntoIterator<Item = (String, String)>,
        prompt_files: impl IntoIterator<Item = &'a String>,
    ) -> Self {
        let prompts: std::collections::BTreeSet<&String> = prompt_files.into_iter().collect();
        let mut ws = Workspace::new(version);
        for (name, text) in documents {
            if prompts.contains(&name) {
                ws.prompts.insert(name, text);
            } else {
                ws.skills.insert(name, text);
            }
        }
        ws
    }
}

/// What an agent answers for one question, before the harness scores it.
///
/// This is both the return value of an in-process agent and the payload of
/// the subprocess protocol's `result` line. Every field is optional on the
/// wire; unknown fields are kept in `extra` and end up in the prediction.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct AgentReply {
    /// The answer.
    #[serde(default)]
    pub prediction: String,
    /// The agent's own verdict; used only with [`Scoring::AgentReported`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub correct: Option<bool>,
    /// Stated confidence in `[0, 1]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer_confidence: Option<f64>,
    /// Steps taken; defaults to the number of trace steps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steps_used: Option<u32>,
    /// Step budget the agent had.
    #[serde(default)]
    pub max_steps: u32,
    /// Why the agent stopped; empty means `submit`.
    #[serde(default)]
    pub stop_reason: String,
    /// An error the agent itself reports (the question then counts as INFRA, and the gate
    /// scores it against the version that failed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Trace steps given inline (the subprocess protocol may also stream them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<JsonMap>,
    /// Every other field.
    #[serde(flatten)]
    pub extra: JsonMap,
}

/// Bounds on what an agent may write for one question, so that a runaway
/// agent costs neither memory nor run-log space without limit.
///
/// Past `max_steps` trace steps or `max_output_bytes` of output, the question
/// becomes an INFRA error (the subprocess runner stops reading and stops the
/// agent). A step's `raw_content` or `tool_output` longer than
/// `max_field_chars` is stored cut, ending in a marker that says how much was
/// left out (`…[N more chars]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutputLimits {
    /// Most trace steps per question, streamed and inline together (default 1000).
    pub max_steps: usize,
    /// Most bytes an agent writes for one question: every line, the result
    /// included (default 16 MiB).
    pub max_output_bytes: usize,
    /// Longest `raw_content` or `tool_output` stored per step, in characters
    /// (default 65 536).
    pub max_field_chars: usize,
}

impl Default for OutputLimits {
    fn default() -> Self {
        OutputLimits {
            max_steps: 1000,
            max_output_bytes: 16 * 1024 * 1024,
            max_field_chars: 64 * 1024,
        }
    }
}

/// The step fields that are cut to [`OutputLimits::max_field_chars`] when stored.
const CAPPED_FIELDS: [&str; 2] = ["raw_content", "tool_output"];

impl OutputLimits {
    /// `Err` (the INFRA message) when `steps` is over the step limit.
    pub(crate) fn check_steps(&self, steps: usize) -> Result<(), String> {
        if steps > self.max_steps {
            return Err(format!(
                "the agent wrote more than {} trace steps for one question (the limit); it was \
                 stopped",
                self.max_steps
            ));
        }
        Ok(())
    }

    /// The INFRA message for output over the byte limit.
    pub(crate) fn too_many_bytes(&self) -> String {
        format!(
            "the agent wrote more than {} bytes of output for one question (the limit); it was \
             stopped",
            self.max_output_bytes
        )
    }

    /// Cuts the long text fields of one raw step, each with its marker.
    fn cut_fields(&self, step: &mut JsonMap) {
        for key in CAPPED_FIELDS {
            if let Some(Value::String(text)) = step.get_mut(key)
                && text.chars().nth(self.max_field_chars).is_some()
            {
                *text = truncate_chars(text, self.max_field_chars);
            }
        }
    }
}

/// How the harness decides whether an answer is correct.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scoring {
    /// Answer and reference compared after trimming, case-insensitively, or the question's
    /// `check` applied to the answer when it has one (see [`AnswerCheck`]).
    /// The agent's own `correct` field is ignored, so an agent cannot grade itself.
    #[default]
    ExactMatch,
    /// Trust the agent's `correct` field; fall back to [`Scoring::ExactMatch`] when absent.
    AgentReported,
}

impl Scoring {
    /// Whether `reply`, reached by the steps of `trace`, answers `question` rightly.
    fn score(self, question: &GeneratedQuestion, reply: &AgentReply, trace: &[TraceStep]) -> bool {
        let exact = || {
            let reference = question.answer.trim();
            !reference.is_empty()
                && reply.prediction.trim().to_lowercase() == reference.to_lowercase()
        };
        // A question's check, when it has one, replaces the exact match; a check that cannot
        // be read (refused when the set is read) or a rubric (not judged here) passes nothing.
        let reference = || match AnswerCheck::of(question) {
            Ok(Some(check)) => check.passes(&reply.prediction, trace).unwrap_or(false),
            Ok(None) => exact(),
            Err(_) => false,
        };
        match self {
            Scoring::ExactMatch => reference(),
            Scoring::AgentReported => reply.correct.unwrap_or_else(reference),
        }
    }
}

impl AgentReply {
    /// Scores this reply to `question` and builds the run-log records, within
    /// the default [`OutputLimits`].
    ///
    /// Trace steps without a `step` number are numbered by position; steps
    /// whose fields have the wrong types make the whole question an INFRA
    /// error (the agent broke the protocol).
    pub fn into_outcome(
        self,
        run_id: &str,
        question: &GeneratedQuestion,
        streamed_steps: Vec<JsonMap>,
        scoring: Scoring,
    ) -> QuestionOutcome {
        self.into_outcome_within(
            run_id,
            question,
            streamed_steps,
            scoring,
            &OutputLimits::default(),
        )
    }

    /// [`AgentReply::into_outcome`] within `limits`: more steps than allowed
    /// make the question an INFRA error, and long step fields are stored cut.
    pub fn into_outcome_within(
        self,
        run_id: &str,
        question: &GeneratedQuestion,
        streamed_steps: Vec<JsonMap>,
        scoring: Scoring,
        limits: &OutputLimits,
    ) -> QuestionOutcome {
        let mut reply = self;
        let mut raw_steps = streamed_steps;
        raw_steps.append(&mut reply.steps);
        if let Err(message) = limits.check_steps(raw_steps.len()) {
            return QuestionOutcome::infra_error(run_id, question, message);
        }
        let mut trace = Vec::with_capacity(raw_steps.len());
        for (index, mut raw) in raw_steps.into_iter().enumerate() {
            limits.cut_fields(&mut raw);
            let position = u32::try_from(index).unwrap_or(u32::MAX).saturating_add(1);
            raw.insert("run_id".to_owned(), run_id.into());
            raw.insert(
                "question_id".to_owned(),
                question.question_id.clone().into(),
            );
            raw.entry("step").or_insert_with(|| position.into());
            match serde_json::from_value::<TraceStep>(serde_json::Value::Object(raw)) {
                Ok(step) => trace.push(step),
                Err(error) => {
                    return QuestionOutcome::infra_error(
                        run_id,
                        question,
                        format!("trace step {position} is malformed: {error}"),
                    );
                }
            }
        }
        let correct = reply.error.is_none() && scoring.score(question, &reply, &trace);
        let steps_used = reply
            .steps_used
            .unwrap_or_else(|| u32::try_from(trace.len()).unwrap_or(u32::MAX));
        // An agent that replied has started: it cannot call its failure "not started" (which
        // would leave the question out of the gate's comparison instead of scoring it).
        let stop_reason = if (reply.error.is_some() && !is_infra_stop(&reply.stop_reason))
            || reply.stop_reason == NOT_STARTED_STOP_REASON
        {
            INFRA_STOP_REASON.to_owned()
        } else if reply.stop_reason.is_empty() {
            "submit".to_owned()
        } else {
            reply.stop_reason
        };
        QuestionOutcome {
            prediction: Prediction {
                run_id: run_id.to_owned(),
                question_id: question.question_id.clone(),
                task_type: question.task_type.clone(),
                video_id: question.video_id.clone(),
                prediction: reply.prediction,
                answer: reference_answer(question),
                correct,
                answer_confidence: reply.answer_confidence,
                steps_used,
                max_steps: reply.max_steps,
                stop_reason,
                error: reply.error,
                extra: reply.extra,
            },
            trace,
        }
    }
}

/// The key of a question that holds a user's correction of an earlier answer to it (an object
/// whose `said` is the user's words, as `harvest --tasks` writes it).
pub(crate) const CORRECTION_KEY: &str = "correction";

/// Most characters of a user's correction carried into a reference answer.
const MAX_CORRECTION_CHARS: usize = 2_000;

/// The reference answer a prediction records: the question's `answer`, or, when it has none,
/// its check in words, so that diagnosis knows what a right answer looks like; and, when the
/// question carries a user's correction of an earlier answer, their words verbatim, so that
/// diagnosis and the proposer read why that answer was wrong.
fn reference_answer(question: &GeneratedQuestion) -> String {
    let base = if question.answer.trim().is_empty()
        && let Ok(Some(check)) = AnswerCheck::of(question)
    {
        check.describe()
    } else {
        question.answer.clone()
    };
    let said = question
        .extra
        .get(CORRECTION_KEY)
        .and_then(|c| c.get("said"))
        .and_then(serde_json::Value::as_str)
        .map(str::trim)
        .filter(|said| !said.is_empty());
    match said {
        Some(said) => {
            let said = evolution_types::template::truncate_chars(said, MAX_CORRECTION_CHARS);
            if base.trim().is_empty() {
                format!("an answer that heeds a user's correction of an earlier one: \"{said}\"")
            } else {
                format!("{base} (a user corrected an earlier answer to this question: \"{said}\")")
            }
        }
        None => base,
    }
}

pub(crate) use evolution_types::is_infra_stop_reason as is_infra_stop;

/// Why a whole run could not start. Failures of single questions are not
/// errors: they come back as INFRA outcomes.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunnerError {
    /// A document name cannot be written as a plain file name.
    #[error("invalid document name {name:?} in workspace {version:?}: {reason}")]
    InvalidDocumentName {
        /// The workspace version.
        version: String,
        /// The offending name.
        name: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The workspace could not be written to disk.
    #[error("could not materialize workspace {version:?}: {source}")]
    Materialize {
        /// The workspace version.
        version: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The runner's configuration is unusable.
    #[error("invalid runner configuration: {field} {reason}")]
    Config {
        /// The setting.
        field: &'static str,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// Two questions of one request share an id.
    #[error("question {0:?} appears twice in one run")]
    DuplicateQuestion(String),
}

/// Runs a set of questions against a workspace and returns one outcome per
/// question, in the order of `questions`.
///
/// A question that crashes, hangs or produces garbage comes back as an INFRA
/// outcome (see [`QuestionOutcome::is_infra_error`]); only a failure that
/// prevents the whole run (a bad workspace, a bad configuration) is an `Err`.
#[async_trait]
pub trait AgentRunner: Send + Sync {
    /// Runs `questions` as run `run_id` with the documents of `workspace`.
    async fn run(
        &self,
        run_id: &str,
        workspace: &Workspace,
        questions: &[GeneratedQuestion],
    ) -> Result<Vec<QuestionOutcome>, RunnerError>;
}

#[async_trait]
impl<T: AgentRunner + ?Sized> AgentRunner for std::sync::Arc<T> {
    async fn run(
        &self,
        run_id: &str,
        workspace: &Workspace,
        questions: &[GeneratedQuestion],
    ) -> Result<Vec<QuestionOutcome>, RunnerError> {
        (**self).run(run_id, workspace, questions).await
    }
}

pub(crate) fn check_unique(questions: &[GeneratedQuestion]) -> Result<(), RunnerError> {
    let mut seen = std::collections::BTreeSet::new();
    for question in questions {
        if !seen.insert(question.question_id.as_str()) {
            return Err(RunnerError::DuplicateQuestion(question.question_id.clone()));
        }
    }
    Ok(())
}

/// An agent that runs in this process: a function from workspace and
/// question to a reply (`Err` = an INFRA failure with that message).
///
/// Meant for tests and simulations, where the "agent" is a rule over the
/// workspace text. The function sees the whole question, reference answer
/// included; the subprocess protocol withholds it.
pub struct InProcessRunner<F> {
    agent: F,
    scoring: Scoring,
    limits: OutputLimits,
}

impl<F> InProcessRunner<F>
where
    F: Fn(&Workspace, &GeneratedQuestion) -> Result<AgentReply, String> + Send + Sync,
{
    /// A runner calling `agent` for every question, scored by exact match.
    pub fn new(agent: F) -> Self {
        InProcessRunner {
            agent,
            scoring: Scoring::default(),
            limits: OutputLimits::default(),
        }
    }

    /// The same runner with other bounds on each reply's trace.
    pub fn with_limits(mut self, limits: OutputLimits) -> Self {
        self.limits = limits;
        self
    }

    /// The same runner with another scoring rule.
    pub fn with_scoring(mut self, scoring: Scoring) -> Self {
        self.scoring = scoring;
        self
    }
}

impl<F> std::fmt::Debug for InProcessRunner<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InProcessRunner")
            .field("scoring", &self.scoring)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl<F> AgentRunner for InProcessRunner<F>
where
    F: Fn(&Workspace, &GeneratedQuestion) -> Result<AgentReply, String> + Send + Sync,
{
    async fn run(
        &self,
        run_id: &str,
        workspace: &Workspace,
        questions: &[GeneratedQuestion],
    ) -> Result<Vec<QuestionOutcome>, RunnerError> {
        check_unique(questions)?;
        Ok(questions
            .iter()
            .map(|question| match (self.agent)(workspace, question) {
                Ok(reply) => reply.into_outcome_within(
                    run_id,
                    question,
                    Vec::new(),
                    self.scoring,
                    &self.limits,
                ),
                Err(message) => QuestionOutcome::infra_error(run_id, question, message),
            })
            .collect())
    }
}
