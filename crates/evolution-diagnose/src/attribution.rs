//! D1: where a wrong answer went wrong, and whether the skill is to blame.

use evolution_types::{
    CauseCategory, ChatMessage, ErrorAttribution, ErrorType, LlmError, LlmProvider, QuestionMetrics,
};
use serde_json::Value;

use crate::error::JudgeError;
use crate::judges::{JudgeContext, call_judge, judge_options};
use crate::prompts::DiagnosePrompts;

/// Completeness below which a span counts as an extraction failure.
pub const LOW_COMPLETENESS: f64 = 0.5;
/// Hallucination above which a span counts as an extraction failure.
pub const HIGH_HALLUCINATION: f64 = 0.5;

/// The attribution waterfall: extraction → search → reasoning → mixed.
///
/// 1. a span with completeness < 0.5 or hallucination > 0.5 → `extraction_failure`;
/// 2. else any missed node → `search_failure`;
/// 3. else evidence judged sufficient → `reasoning_failure`;
/// 4. else `mixed` (also for degraded metrics, which have no judge fields).
///
/// Pure: it does not look at correctness; callers attribute wrong answers only.
pub fn attribute_error(metrics: &QuestionMetrics) -> ErrorAttribution {
    let bad_spans: Vec<String> = metrics
        .span_metrics
        .iter()
        .filter(|s| {
            s.extraction_completeness < LOW_COMPLETENESS
                || s.hallucination_rate > HIGH_HALLUCINATION
        })
        .map(|s| {
            format!(
                "step {} {}: completeness {:.2}, hallucination {:.2}",
                s.step, s.tool_name, s.extraction_completeness, s.hallucination_rate
            )
        })
        .collect();
    let (error_type, evidence) = if !bad_spans.is_empty() {
        (ErrorType::ExtractionFailure, bad_spans.join("; "))
    } else if !metrics.missed_nodes.is_empty() {
        (
            ErrorType::SearchFailure,
            format!("missed nodes: {}", metrics.missed_nodes.join(", ")),
        )
    } else if metrics.evidence_sufficient == Some(true) {
        (
            ErrorType::ReasoningFailure,
            "evidence sufficient but the answer is wrong".to_owned(),
        )
    } else if metrics.degraded {
        (
            ErrorType::Mixed,
            "judges failed; rule metrics only".to_owned(),
        )
    } else {
        (
            ErrorType::Mixed,
            "no single cause: spans fine, no missed node, evidence insufficient".to_owned(),
        )
    };
    ErrorAttribution {
        question_id: metrics.question_id.clone(),
        task_type: metrics.task_type.clone(),
        error_type,
        cause_category: None,
        lapse_note: None,
        reasoning_failure_type: None,
        evidence,
    }
}

/// The trimmed note, or `None` when it is blank.
/// The reasoning sub-type of a failure none of the named types fits.
pub const REASONING_OTHER: &str = "other";

fn non_blank(note: Option<&Value>) -> Option<String> {
    let note = note?.as_str()?.trim();
    (!note.is_empty()).then(|| note.to_owned())
}

/// Classifies a failure as a skill defect or a one-off lapse.
///
/// Reply contract: `{"category": "defect" | "lapse", "lapse_note": "..."}`
/// (`cause_category` is accepted for `category`). When the replies stay
/// unusable the failure is a lapse without a note — protective: an
/// unclear case never edits the skill body. Provider errors are returned.
pub async fn classify_defect_vs_lapse(
    llm: &dyn LlmProvider,
    prompts: &DiagnosePrompts,
    ctx: &JudgeContext<'_>,
    mut attribution: ErrorAttribution,
) -> Result<ErrorAttribution, LlmError> {
    let prompt = ctx.render_full(
        &prompts.defect_vs_lapse,
        &[
            ("error_type", attribution.error_type.as_str().to_owned()),
            ("evidence", attribution.evidence.clone()),
        ],
    );
    let verdict = call_judge(
        llm,
        &[ChatMessage::user(prompt)],
        &judge_options("defect_vs_lapse"),
        |o| {
            let category = o
                .get("category")
                .or_else(|| o.get("cause_category"))
                .and_then(Value::as_str)
                .map(|s| s.trim().to_lowercase());
            match category.as_deref() {
                Some("defect") => Ok((CauseCategory::Defect, None)),
                Some("lapse") => Ok((CauseCategory::Lapse, non_blank(o.get("lapse_note")))),
                _ => Err("reply lacks `category` = defect | lapse".to_owned()),
            }
        },
    )
    .await;
    let (category, note) = match verdict {
        Ok(v) => v,
        Err(JudgeError::Provider(e)) => return Err(e),
        Err(e) => {
            tracing::warn!(question_id = %attribution.question_id, error = %e, "defect/lapse unparseable; lapse");
            (CauseCategory::Lapse, None)
        }
    };
    attribution.cause_category = Some(category);
    attribution.lapse_note = note;
    Ok(attribution)
}

/// Sub-classifies a reasoning failure: reply `{"type": "..."}`.
///
/// A `type` that is a string of blanks reads as [`REASONING_OTHER`], the prompt's
/// "none of these": the reply schema cannot forbid blanks, and a model decoding under it
/// (deterministically) would give the same reply on every retry. Any failure — unusable replies or a provider error — gives `None` and
/// never interrupts the diagnosis.
pub async fn classify_reasoning_failure(
    llm: &dyn LlmProvider,
    prompts: &DiagnosePrompts,
    ctx: &JudgeContext<'_>,
    attribution: &ErrorAttribution,
) -> Option<String> {
    let prompt = ctx.render_full(
        &prompts.reasoning_sub,
        &[
            ("error_type", attribution.error_type.as_str().to_owned()),
            ("evidence", attribution.evidence.clone()),
        ],
    );
    let verdict = call_judge(
        llm,
        &[ChatMessage::user(prompt)],
        &judge_options("reasoning_sub"),
        |o| match o.get("type") {
            Some(Value::String(kind)) if kind.trim().is_empty() => Ok(REASONING_OTHER.to_owned()),
            kind => non_blank(kind).ok_or_else(|| "reply lacks a `type`".to_owned()),
        },
    )
    .await;
    match verdict {
        Ok(kind) => Some(kind),
        Err(e) => {
            tracing::warn!(question_id = %attribution.question_id, error = %e, "reasoning sub-classification failed");
            None
        }
    }
}
