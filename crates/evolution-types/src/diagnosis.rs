//! Types of the two-stage diagnosis.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::{JsonMap, TraceStep};

/// Free-form aggregate statistics (the reference implementation's stats dicts).
pub type Stats = JsonMap;

/// Result of the span judge for one tool call.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SpanMetrics {
    /// Step number of the judged call.
    pub step: u32,
    /// Tool that was called.
    pub tool_name: String,
    /// How much of the available information the agent extracted, in `[0, 1]`.
    pub extraction_completeness: f64,
    /// Share of the extracted claims not supported by the tool output, in `[0, 1]`.
    pub hallucination_rate: f64,
    /// Labels of information the agent missed.
    #[serde(default)]
    pub missed_info_tags: Vec<String>,
    /// Labels of hallucinated claims.
    #[serde(default)]
    pub hallucination_tags: Vec<String>,
}

/// Whether one step of the skill was followed.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct SkillStepAdherence {
    /// The skill step, as the judge quoted it.
    pub step: String,
    /// Whether the trajectory followed it.
    pub followed: bool,
    /// The judge's reason.
    #[serde(default)]
    pub reason: String,
}

/// Confidence calibration of one answer (thresholds of the reference implementation: 0.7 and 0.5).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum ConfidenceCalibration {
    /// Confidence ≥ 0.7 and wrong.
    HighConfWrong,
    /// Confidence < 0.5 and right.
    LowConfRight,
    /// Anything else.
    #[default]
    Calibrated,
}

/// Stage-1 metrics of one question: seven rule metrics and five judges.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct QuestionMetrics {
    /// The question.
    pub question_id: String,
    /// Its task type.
    pub task_type: String,
    /// Its source id.
    #[serde(default)]
    pub video_id: String,
    /// Whether the agent answered correctly.
    pub correct: bool,
    /// Why the agent stopped.
    #[serde(default)]
    pub stop_reason: String,
    /// The confidence used for calibration.
    pub confidence: f64,
    /// Share of steps whose output parsed as the expected format.
    pub format_compliance: f64,
    /// Steps used over the step budget.
    pub budget_usage: f64,
    /// Calibration class of the answer's confidence.
    pub confidence_calibration: ConfidenceCalibration,
    /// Share of node visits that were repeats; `None` (null) when the
    /// profile names no visit tool, so it was not computed.
    #[serde(default)]
    pub repeat_visit_rate: Option<f64>,
    /// Largest character-trigram Jaccard similarity between two search
    /// queries; `None` (null) when the profile names no search tool.
    #[serde(default)]
    pub search_keyword_repetition: Option<f64>,
    /// Sequence of tree levels visited, joined with `→` (empty without a
    /// visit tool or a level pattern).
    #[serde(default)]
    pub level_jump_pattern: String,
    /// Tool name → number of calls.
    pub tool_usage: BTreeMap<String, u32>,
    /// Span judge results (empty when degraded).
    #[serde(default)]
    pub span_metrics: Vec<SpanMetrics>,
    /// Nodes the agent should have visited (empty when degraded).
    #[serde(default)]
    pub missed_nodes: Vec<String>,
    /// Per-step skill adherence (empty when degraded).
    #[serde(default)]
    pub skill_adherence: Vec<SkillStepAdherence>,
    /// Share of skill steps followed, when judged.
    #[serde(default)]
    pub adherence_rate: Option<f64>,
    /// Whether the agent showed confirmation bias, when judged.
    #[serde(default)]
    pub confirmation_bias: Option<bool>,
    /// Whether the evidence gathered sufficed to answer, when judged.
    #[serde(default)]
    pub evidence_sufficient: Option<bool>,
    /// Mean span quality, when any span was judged.
    #[serde(default)]
    pub soft_score: Option<f64>,
    /// True when the judges failed and only rule metrics are present.
    #[serde(default)]
    pub degraded: bool,
}

/// Where a wrong answer went wrong (the D1 attribution waterfall).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorType {
    /// A span was incomplete (`completeness < 0.5`) or hallucinated (`> 0.5`).
    ExtractionFailure,
    /// The agent missed nodes it should have visited.
    SearchFailure,
    /// The evidence sufficed but the conclusion was wrong.
    ReasoningFailure,
    /// None of the above alone.
    Mixed,
}

impl ErrorType {
    /// The reference implementation's string for this error type.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorType::ExtractionFailure => "extraction_failure",
            ErrorType::SearchFailure => "search_failure",
            ErrorType::ReasoningFailure => "reasoning_failure",
            ErrorType::Mixed => "mixed",
        }
    }
}

/// Whether a failure calls for a change to the skill body or only a note.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CauseCategory {
    /// The skill itself is wrong or missing a rule: edit the body.
    Defect,
    /// The skill was right and the agent slipped: add an appendix note.
    Lapse,
}

/// D1 attribution of one wrong answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorAttribution {
    /// The question.
    pub question_id: String,
    /// Its task type.
    #[serde(default)]
    pub task_type: String,
    /// Where it went wrong.
    pub error_type: ErrorType,
    /// Defect or lapse, once classified.
    #[serde(default)]
    pub cause_category: Option<CauseCategory>,
    /// The note to append for a lapse (never blank).
    #[serde(default)]
    pub lapse_note: Option<String>,
    /// Sub-type of a reasoning failure, when classified.
    #[serde(default)]
    pub reasoning_failure_type: Option<String>,
    /// What in the metrics led to the attribution.
    #[serde(default)]
    pub evidence: String,
}

/// The fixed metric keys carried by every case sample.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct CaseMetrics {
    /// Whether the answer was correct.
    pub correct: bool,
    /// Attribution, for failures.
    pub error_type: Option<ErrorType>,
    /// Steps used over budget.
    pub budget_usage: f64,
    /// Calibration class.
    pub confidence_calibration: Option<ConfidenceCalibration>,
    /// Repeat-visit rate, when computed.
    pub repeat_visit_rate: Option<f64>,
    /// Tool name → calls.
    pub tool_usage: BTreeMap<String, u32>,
    /// Missed nodes.
    pub missed_nodes: Vec<String>,
    /// Skill adherence rate.
    pub adherence_rate: Option<f64>,
    /// Confirmation bias.
    pub confirmation_bias: Option<bool>,
    /// Evidence sufficiency.
    pub evidence_sufficient: Option<bool>,
}

/// One question chosen as an example for the evolution prompts.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct CaseSample {
    /// The question id.
    pub question_id: String,
    /// Its task type.
    #[serde(default)]
    pub task_type: String,
    /// The question text.
    #[serde(default)]
    pub question: String,
    /// The reference answer.
    #[serde(default)]
    pub answer: String,
    /// The agent's answer.
    #[serde(default)]
    pub prediction: String,
    /// The trajectory, untruncated (formatting truncates).
    #[serde(default)]
    pub trace: Vec<TraceStep>,
    /// The fixed metric keys.
    pub metrics: CaseMetrics,
    /// Why this case was selected (an error type or a behaviour pattern).
    #[serde(default)]
    pub selection_reason: String,
}

/// One tool call chosen as an example for a tool's prompts.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SpanSample {
    /// The question id.
    pub question_id: String,
    /// Its task type.
    #[serde(default)]
    pub task_type: String,
    /// The tool's arguments.
    #[serde(default)]
    pub tool_input: serde_json::Value,
    /// What the tool returned, untruncated.
    #[serde(default)]
    pub tool_output: String,
    /// The agent's reasoning at that step.
    #[serde(default)]
    pub thought: String,
    /// The span judge's result (carries step and tool name).
    pub metrics: SpanMetrics,
}

/// Evidence for evolving one skill file (per task type).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SkillCasePack {
    /// The task type.
    pub task_type: String,
    /// The skill file to evolve.
    pub target_file: String,
    /// Aggregate statistics of the task type.
    pub stats: Stats,
    /// Defect failures, grouped by error type, top severity first.
    pub failure_cases: Vec<CaseSample>,
    /// Contrasting successes.
    pub success_cases: Vec<CaseSample>,
    /// Notes for lapses, to go to the appendix (never blank).
    pub lapse_notes: Vec<String>,
}

/// Evidence for evolving the system prompt (cross-task behaviour).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SystemCasePack {
    /// Aggregate behaviour statistics.
    pub stats: Stats,
    /// Examples of the behaviour patterns that triggered the pack.
    pub failure_cases: Vec<CaseSample>,
    /// Well-behaved contrasting examples.
    pub success_cases: Vec<CaseSample>,
}

/// Evidence for evolving one tool's prompts.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ToolCasePack {
    /// The tool.
    pub tool_name: String,
    /// The prompt files that steer the tool (extract/verify pairs).
    pub target_files: Vec<String>,
    /// Aggregate span statistics of the tool.
    pub stats: Stats,
    /// Poor spans (low completeness, high hallucination), at most four.
    pub failure_spans: Vec<SpanSample>,
    /// Clean spans (completeness ≥ 0.9, no hallucination).
    pub success_spans: Vec<SpanSample>,
}

/// The final output of a diagnosis (`evolution_diagnose::Diagnoser::run`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct DiagnosisResult {
    /// The diagnosed run.
    pub run_id: String,
    /// Questions in scope (after filters, including INFRA errors).
    pub n_questions: u64,
    /// Questions diagnosed (in scope, without INFRA errors).
    pub n_diagnosed: u64,
    /// Correct answers among the diagnosed.
    pub n_correct: u64,
    /// `n_correct / n_diagnosed`, when anything was diagnosed.
    pub accuracy: Option<f64>,
    /// Mean soft score over questions that have one.
    pub soft_score: Option<f64>,
    /// Questions that stopped for an infrastructure reason.
    pub n_infra_errors: u64,
    /// `n_infra_errors / n_questions`, when there were questions.
    pub infra_error_rate: Option<f64>,
    /// Questions whose judges failed (rule metrics only).
    pub n_degraded: u64,
    /// Stage-1 metrics of every diagnosed question.
    pub question_metrics: Vec<QuestionMetrics>,
    /// D1 attribution of every wrong answer.
    pub attributions: Vec<ErrorAttribution>,
    /// Error type → count over wrong answers.
    pub error_type_counts: BTreeMap<ErrorType, u64>,
    /// D2: per-tool span statistics.
    pub tool_stats: Stats,
    /// D3: per task type × correctness statistics.
    pub task_stats: Stats,
    /// D4: skill adherence statistics.
    pub adherence_stats: Stats,
    /// D5: cross-task behaviour statistics.
    pub behavior_stats: Stats,
    /// One pack per task type with evidence.
    pub skill_packs: Vec<SkillCasePack>,
    /// The system pack, when a behaviour pattern reached the threshold.
    pub system_pack: Option<SystemCasePack>,
    /// One pack per tool with judged spans.
    pub tool_packs: Vec<ToolCasePack>,
}
