use evolution_diagnose::attribution::{
    attribute_error, classify_defect_vs_lapse, classify_reasoning_failure,
};
use evolution_diagnose::judges::JudgeContext;
use evolution_testkit::ScriptedLlm;
use evolution_types::{
    CauseCategory, ErrorAttribution, ErrorType, LlmError, LlmErrorKind, QuestionMetrics,
    SpanMetrics,
};

use crate::common::{prediction, profile, prompts, trace};

fn qm(spans: Vec<SpanMetrics>, missed: &[&str], sufficient: Option<bool>) -> QuestionMetrics {
    QuestionMetrics {
        question_id: "q1".into(),
        task_type: "temporal".into(),
        correct: false,
        span_metrics: spans,
        missed_nodes: missed.iter().map(|s| (*s).to_owned()).collect(),
        evidence_sufficient: sufficient,
        ..QuestionMetrics::default()
    }
}

fn span(c: f64, h: f64) -> SpanMetrics {
    SpanMetrics {
        step: 1,
        tool_name: "view_node".into(),
        extraction_completeness: c,
        hallucination_rate: h,
        ..SpanMetrics::default()
    }
}

#[test]
fn waterfall_order() {
    let check =
        |m: QuestionMetrics, want: ErrorType| assert_eq!(attribute_error(&m).error_type, want);
    check(
        qm(vec![span(0.3, 0.0)], &[], Some(true)),
        ErrorType::ExtractionFailure,
    );
    check(
        qm(vec![span(0.9, 0.6)], &["L2_001"], Some(true)),
        ErrorType::ExtractionFailure,
    );
    check(
        qm(vec![span(0.5, 0.5)], &["L2_001"], Some(false)),
        ErrorType::SearchFailure,
    );
    check(
        qm(vec![], &["L2_001"], Some(false)),
        ErrorType::SearchFailure,
    );
    check(qm(vec![], &[], Some(true)), ErrorType::ReasoningFailure);
    check(qm(vec![], &[], Some(false)), ErrorType::Mixed);
    check(qm(vec![], &[], None), ErrorType::Mixed);
    let a = attribute_error(&qm(vec![span(0.3, 0.0)], &[], None));
    assert_eq!(
        (a.question_id.as_str(), a.task_type.as_str()),
        ("q1", "temporal")
    );
    assert!(a.evidence.contains("completeness 0.30"), "{}", a.evidence);
    assert_eq!(a.cause_category, None);
}

async fn classify(
    replies: Vec<Result<&str, LlmError>>,
) -> (Result<ErrorAttribution, LlmError>, usize) {
    let llm = ScriptedLlm::new();
    for r in replies {
        match r {
            Ok(text) => llm.push_reply(text),
            Err(e) => llm.push_error(e),
        }
    }
    let pred = prediction("r", "q1", "temporal", false);
    let steps = trace("r", "q1");
    let profile = profile();
    let ctx = JudgeContext {
        prediction: &pred,
        question: "Q",
        answer: "A",
        trace: &steps,
        skill: "",
        tree: None,
        profile: &profile,
    };
    let a = attribute_error(&qm(vec![], &[], Some(true)));
    let out = classify_defect_vs_lapse(&llm, &prompts(), &ctx, a).await;
    (out, llm.call_count())
}

#[tokio::test]
async fn defect_vs_lapse() {
    let (a, _) = classify(vec![Ok(
        r#"{"category": "defect", "lapse_note": "ignored"}"#,
    )])
    .await;
    let a = a.unwrap();
    assert_eq!(
        (a.cause_category, a.lapse_note),
        (Some(CauseCategory::Defect), None)
    );
    let (a, _) = classify(vec![Ok(
        r#"{"category": "Lapse", "lapse_note": "  check twice  "}"#,
    )])
    .await;
    let a = a.unwrap();
    assert_eq!(
        (a.cause_category, a.lapse_note.as_deref()),
        (Some(CauseCategory::Lapse), Some("check twice"))
    );
    let (a, _) = classify(vec![Ok(r#"{"category": "lapse", "lapse_note": "   "}"#)]).await;
    assert_eq!(a.unwrap().lapse_note, None);
    // Parse failure → lapse (protective), after three attempts.
    let (a, calls) = classify(vec![Ok("???"), Ok(r#"{"category": "maybe"}"#), Ok("[1]")]).await;
    let a = a.unwrap();
    assert_eq!(
        (a.cause_category, a.lapse_note, calls),
        (Some(CauseCategory::Lapse), None, 3)
    );
    // Provider errors pass through.
    let (a, calls) = classify(vec![Err(LlmError::new(LlmErrorKind::Auth, "401"))]).await;
    assert_eq!((a.unwrap_err().kind(), calls), (LlmErrorKind::Auth, 1));
}

#[tokio::test]
async fn reasoning_sub_classification_failure_is_none() {
    let pred = prediction("r", "q1", "temporal", false);
    let steps = trace("r", "q1");
    let profile = profile();
    let ctx = JudgeContext {
        prediction: &pred,
        question: "Q",
        answer: "A",
        trace: &steps,
        skill: "",
        tree: None,
        profile: &profile,
    };
    let a = attribute_error(&qm(vec![], &[], Some(true)));
    let llm = ScriptedLlm::with_replies([r#"```json\n{"type": "logic_jump"}\n```"#]);
    assert_eq!(
        classify_reasoning_failure(&llm, &prompts(), &ctx, &a)
            .await
            .as_deref(),
        Some("logic_jump")
    );
    let llm = ScriptedLlm::with_replies(["x", "y", "z"]);
    assert_eq!(
        classify_reasoning_failure(&llm, &prompts(), &ctx, &a).await,
        None
    );
    // A blank type (the schema's `minLength` cannot forbid one) is "none of these", read at once.
    let llm = ScriptedLlm::with_replies([r#"{"type": " \t"}"#]);
    assert_eq!(
        classify_reasoning_failure(&llm, &prompts(), &ctx, &a)
            .await
            .as_deref(),
        Some("other")
    );
    assert_eq!(llm.call_count(), 1);
    let llm = ScriptedLlm::new();
    llm.push_error(LlmError::new(LlmErrorKind::Timeout, "slow"));
    assert_eq!(
        classify_reasoning_failure(&llm, &prompts(), &ctx, &a).await,
        None
    );
}
