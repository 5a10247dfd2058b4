//! Typed run-log records: what an agent run leaves behind.
//!
//! The kernel reads these through [`crate::RunLog`]. Each keeps every field it
//! does not name in `extra`, so a record read from one log and written to
//! another loses nothing.

use serde::{Deserialize, Serialize};

use crate::JsonMap;

/// One question of an evaluation set.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct GeneratedQuestion {
    /// Unique id of the question.
    pub question_id: String,
    /// The question's task type; selects the skill file (see [`crate::resolve_skill_file`]).
    #[serde(default)]
    pub task_type: String,
    /// Id of the source the question is about (a video in the reference implementation's agent).
    #[serde(default)]
    pub video_id: String,
    /// The question text.
    #[serde(default)]
    pub question: String,
    /// The reference answer.
    #[serde(default)]
    pub answer: String,
    /// Every other field.
    #[serde(flatten)]
    pub extra: JsonMap,
}

/// The final answer of one question in one run.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Prediction {
    /// The run this prediction belongs to.
    #[serde(default)]
    pub run_id: String,
    /// The question answered.
    pub question_id: String,
    /// The question's task type.
    #[serde(default)]
    pub task_type: String,
    /// Id of the source the question is about.
    #[serde(default)]
    pub video_id: String,
    /// The agent's answer.
    #[serde(default)]
    pub prediction: String,
    /// The reference answer, when the log has it.
    #[serde(default)]
    pub answer: String,
    /// Whether the answer was judged correct.
    #[serde(default)]
    pub correct: bool,
    /// Confidence the agent stated, when it stated one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer_confidence: Option<f64>,
    /// Steps the agent took.
    #[serde(default)]
    pub steps_used: u32,
    /// Step budget the agent had.
    #[serde(default)]
    pub max_steps: u32,
    /// Why the agent stopped (`submit`, `max_steps`, `error`, `parse_error`,
    /// `not_started`, ...).
    #[serde(default)]
    pub stop_reason: String,
    /// Infrastructure error message, when the run failed for reasons outside the agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Every other field.
    #[serde(flatten)]
    pub extra: JsonMap,
}

/// One step of an agent's trajectory.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct TraceStep {
    /// The run this step belongs to.
    #[serde(default)]
    pub run_id: String,
    /// The question being answered.
    pub question_id: String,
    /// 1-based step number within the question.
    pub step: u32,
    /// The tool called at this step (empty when the step called none).
    #[serde(default)]
    pub tool_name: String,
    /// The tool's arguments as the agent wrote them.
    #[serde(default)]
    pub tool_input: serde_json::Value,
    /// What the tool returned.
    #[serde(default)]
    pub tool_output: String,
    /// The agent's reasoning before the call.
    #[serde(default)]
    pub thought: String,
    /// The raw model output of the step (may hold a JSON action).
    #[serde(default)]
    pub raw_content: String,
    /// Every other field.
    #[serde(flatten)]
    pub extra: JsonMap,
}

/// Stop reason recorded for a question whose run failed without a usable
/// answer (crash, hang, garbage output, an error the agent reported). The
/// diagnosis treats it as an infrastructure error; the gate scores it
/// against the version that failed.
pub const INFRA_STOP_REASON: &str = "error";

/// Stop reason recorded for a question the agent never started on: its
/// program could not be started, or the question could not be handed to it.
/// Nothing of the version under test ran, so the gate leaves the question
/// out of the comparison instead of scoring it.
pub const NOT_STARTED_STOP_REASON: &str = "not_started";

/// True for the stop reasons that mark an infrastructure failure
/// ([`INFRA_STOP_REASON`], `parse_error` and [`NOT_STARTED_STOP_REASON`]).
pub fn is_infra_stop_reason(stop_reason: &str) -> bool {
    stop_reason == INFRA_STOP_REASON
        || stop_reason == "parse_error"
        || stop_reason == NOT_STARTED_STOP_REASON
}

/// The record of one question of one run: the prediction and its trace.
/// This is what a run recorder ([`crate::RunRecorder`]) writes.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct QuestionOutcome {
    /// The scored prediction (`stop_reason == "error"` for an INFRA failure).
    pub prediction: Prediction,
    /// The agent's steps, numbered from 1.
    pub trace: Vec<TraceStep>,
}

impl QuestionOutcome {
    /// True when the question failed for infrastructure reasons.
    pub fn is_infra_error(&self) -> bool {
        is_infra_stop_reason(&self.prediction.stop_reason) || self.prediction.error.is_some()
    }

    /// True when the agent never started on the question
    /// ([`QuestionOutcome::not_started`]).
    pub fn is_not_started(&self) -> bool {
        self.prediction.stop_reason == NOT_STARTED_STOP_REASON
    }

    /// An outcome for a question the agent never started on, because of
    /// `message` (its program could not be started, or the question could
    /// not be handed to it): an INFRA failure that says nothing about the
    /// documents under test.
    pub fn not_started(
        run_id: &str,
        question: &GeneratedQuestion,
        message: impl Into<String>,
    ) -> Self {
        let mut outcome = QuestionOutcome::infra_error(run_id, question, message);
        NOT_STARTED_STOP_REASON.clone_into(&mut outcome.prediction.stop_reason);
        outcome
    }

    /// An INFRA outcome: the agent could not answer `question` because of `message`.
    pub fn infra_error(
        run_id: &str,
        question: &GeneratedQuestion,
        message: impl Into<String>,
    ) -> Self {
        QuestionOutcome {
            prediction: Prediction {
                run_id: run_id.to_owned(),
                question_id: question.question_id.clone(),
                task_type: question.task_type.clone(),
                video_id: question.video_id.clone(),
                answer: question.answer.clone(),
                correct: false,
                stop_reason: INFRA_STOP_REASON.to_owned(),
                error: Some(message.into()),
                ..Prediction::default()
            },
            trace: Vec::new(),
        }
    }
}
