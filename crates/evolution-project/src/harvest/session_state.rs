//! SESSION-STATE.md judged by its explicit outcome fields: `hard_success`, an outcome field
//! (`outcome`, `result`, `verdict`, `status`, `结果`, `状态`, `结论`…) whose value starts
//! with a verdict (`failed`, `✅`, `[x]`, `成功`…), and a non-empty `tool_error`/`error`
//! field. Words inside other fields decide nothing: a note "修复错误后测试通过" in a
//! successful session leaves it successful.
//!
//! The sections are parsed by the harness's ingestion (`## Outcomes` bullets) with its word
//! markers switched off; this module then decides each section's verdict and reason.

use evolution_harness::{FailureRules, Ingested, parse_session_state};
use evolution_harvest::outcome::{Outcome, STATE_OUTCOME_FIELDS, classify};
use evolution_harvest::signals::{Reason, Verdict};
use evolution_types::Prediction;
use serde_json::Value;

/// The harness's rules with only its field-based signal (a non-empty `tool_error`/`error`
/// field) left on: its marker words would judge a section by words found anywhere.
fn explicit_rules() -> FailureRules {
    FailureRules {
        correction_markers: Vec::new(),
        rejection_markers: Vec::new(),
        status_markers: Vec::new(),
        ..FailureRules::default()
    }
}

/// Parses SESSION-STATE.md text and judges every `## Outcomes` section by its explicit
/// fields. Each prediction's `correct` is the verdict; its `extra` gets `failure_signals`
/// (the signal names), `verdict_reasons` (the reasons) and, for a failure without one, a
/// `fail_reason` in words.
pub(crate) fn read_session_state(
    run_id: &str,
    source: &str,
    text: &str,
) -> (Ingested, Vec<Verdict>) {
    let mut ingested = parse_session_state(run_id, source, text, &explicit_rules());
    let mut verdicts = Vec::with_capacity(ingested.predictions.len());
    for prediction in &mut ingested.predictions {
        let verdict = judge_section(prediction);
        prediction.correct = verdict.passed;
        let signals: Vec<Value> = verdict
            .reasons
            .iter()
            .filter(|_| !verdict.passed)
            .map(signal_name)
            .map(Value::from)
            .collect();
        prediction
            .extra
            .insert("failure_signals".to_owned(), Value::Array(signals));
        prediction.extra.insert(
            "verdict_reasons".to_owned(),
            serde_json::to_value(&verdict.reasons).unwrap_or(Value::Null),
        );
        let has_reason = prediction
            .extra
            .get("fail_reason")
            .and_then(Value::as_str)
            .is_some_and(|r| !r.trim().is_empty());
        if !verdict.passed && !has_reason {
            prediction
                .extra
                .insert("fail_reason".to_owned(), Value::from(verdict.describe()));
        }
        verdicts.push(verdict);
    }
    (ingested, verdicts)
}

fn signal_name(reason: &Reason) -> &'static str {
    match reason {
        Reason::ToolErrors { .. } => "tool_error",
        Reason::Interrupted { .. } => "interrupted",
        Reason::RejectedToolCalls { .. } => "rejected_tool_call",
        Reason::ExplicitOutcome { .. } => "explicit_outcome",
        Reason::RepeatedRequest { .. } => "repeated_request",
        Reason::CorrectionPhrase { .. } => "correction_phrase",
        Reason::FollowupJudge { .. } => "followup_judge",
        Reason::NoFailureSignal => "none",
    }
}

/// A field's value as text (the harness keeps bullet values as strings).
fn field<'p>(prediction: &'p Prediction, key: &str) -> Option<&'p str> {
    prediction.extra.get(key).and_then(Value::as_str)
}

/// The verdict of one section: `hard_success: false` and a negative outcome field fail it,
/// so does a tool error field; `hard_success: true` or a positive outcome field passes what
/// is left; a section that states no outcome is not counted as passed.
fn judge_section(prediction: &Prediction) -> Verdict {
    let stated = |key: &str, passed: bool, value: &str| Reason::ExplicitOutcome {
        passed,
        field: key.to_owned(),
        value: value.to_owned(),
    };
    let hard = field(prediction, "hard_success").map(|v| v.trim().to_lowercase());
    let hard = match hard.as_deref() {
        Some("true" | "1" | "yes") => Some(true),
        Some("false" | "0" | "no") => Some(false),
        _ => None,
    };
    let outcome: Option<Outcome> = STATE_OUTCOME_FIELDS.iter().find_map(|key| {
        let value = field(prediction, key)?;
        classify(value).map(|passed| Outcome {
            passed,
            field: (*key).to_owned(),
            value: value.trim().to_owned(),
        })
    });
    let tool_error = prediction
        .extra
        .get("failure_signals")
        .and_then(Value::as_array)
        .is_some_and(|s| s.iter().any(|v| v == "tool_error"));
    let mut failures = Vec::new();
    if hard == Some(false) {
        failures.push(stated("hard_success", false, "false"));
    }
    if let Some(o) = outcome.as_ref().filter(|o| !o.passed) {
        failures.push(stated(&o.field, false, &o.value));
    }
    if tool_error {
        failures.push(Reason::ToolErrors {
            count: 1,
            unrecovered: false,
            tools: Vec::new(),
        });
    }
    if !failures.is_empty() {
        return Verdict {
            passed: false,
            reasons: failures,
        };
    }
    if hard == Some(true) {
        return Verdict {
            passed: true,
            reasons: vec![stated("hard_success", true, "true")],
        };
    }
    if let Some(o) = outcome {
        return Verdict {
            passed: true,
            reasons: vec![stated(&o.field, true, &o.value)],
        };
    }
    Verdict {
        passed: false,
        reasons: vec![Reason::ExplicitOutcome {
            passed: false,
            field: "outcome".to_owned(),
            value: "not stated (no hard_success, outcome or status field with a verdict)"
                .to_owned(),
        }],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verdicts(text: &str) -> Vec<(bool, String)> {
        let (ingested, verdicts) = read_session_state("r", "S.md", text);
        assert!(
            ingested.diagnostics.is_empty(),
            "{:?}",
            ingested.diagnostics
        );
        verdicts
            .iter()
            .zip(&ingested.predictions)
            .map(|(v, p)| {
                assert_eq!(v.passed, p.correct);
                (v.passed, v.describe())
            })
            .collect()
    }

    #[test]
    fn words_in_notes_do_not_fail_a_successful_session() {
        let text = "# S\n## Outcomes\n- hard_success: true\n- fail_reason: \"\"\n\
                    - task_description: 修复错误：芯片型号错了, the old build failed\n\
                    - feedback: 不对的地方已经修复错误\n- status: ✅ 完成\n";
        assert_eq!(
            verdicts(text),
            [(
                true,
                "the session states hard_success: true (passed)".to_owned()
            )]
        );
    }

    #[test]
    fn explicit_fields_decide() {
        let text = "# S\n## Outcomes\n- 结果: 失败，路径不对\n\n## Outcomes\n- outcome: passed\n\n\
                    ## Outcomes\n- status: [ ]\n\n## Outcomes\n- hard_success: true\n- error: timeout\n\n\
                    ## Outcomes\n- note: wrong, failed, 错误\n";
        let got = verdicts(text);
        assert_eq!(got.len(), 5);
        assert_eq!(
            got[0],
            (
                false,
                "the session states 结果: 失败，路径不对 (failed)".to_owned()
            )
        );
        assert!(got[1].0);
        assert!(!got[2].0);
        assert_eq!(got[3], (false, "1 tool call failed".to_owned()));
        assert!(!got[4].0, "no stated outcome is not a pass");
        assert!(got[4].1.contains("not stated"), "{}", got[4].1);
    }
}
