use evolution_evolve::format::{format_case_samples, format_rejected_edits, format_spans};
use evolution_types::{
    CaseMetrics, CaseSample, Edit, ErrorType, RejectedEdit, SpanMetrics, SpanSample, TraceStep,
};
use serde_json::json;

pub(crate) fn case(id: &str, output_len: usize) -> CaseSample {
    CaseSample {
        question_id: id.to_owned(),
        task_type: "Counting".to_owned(),
        question: "How many birds?".to_owned(),
        answer: "3".to_owned(),
        prediction: "2".to_owned(),
        trace: vec![TraceStep {
            step: 1,
            tool_name: "view_node".to_owned(),
            tool_input: json!({"node_id": "seg_L1_000"}),
            tool_output: "o".repeat(output_len),
            thought: "look at the first segment".to_owned(),
            ..TraceStep::default()
        }],
        metrics: CaseMetrics {
            correct: false,
            error_type: Some(ErrorType::SearchFailure),
            budget_usage: 0.4,
            repeat_visit_rate: Some(0.0),
            ..CaseMetrics::default()
        },
        selection_reason: "search_failure".to_owned(),
    }
}

pub(crate) fn span(id: &str, output: &str) -> SpanSample {
    SpanSample {
        question_id: id.to_owned(),
        task_type: "Counting".to_owned(),
        tool_input: json!({"node_id": "seg_L2_003"}),
        tool_output: output.to_owned(),
        thought: "check the birds".to_owned(),
        metrics: SpanMetrics {
            step: 4,
            tool_name: "view_node".to_owned(),
            extraction_completeness: 0.25,
            hallucination_rate: 0.5,
            missed_info_tags: vec!["bird count".to_owned()],
            hallucination_tags: vec!["a fourth bird".to_owned()],
        },
    }
}

#[test]
fn case_samples_cut_tool_output_at_500_chars() {
    let text = format_case_samples(&[case("q1", 500), case("q2", 501)]);
    assert!(text.contains(&format!("output: {}\n", "o".repeat(500))));
    assert!(text.contains(&format!("output: {}…[1 more chars]", "o".repeat(500))));
    insta::assert_snapshot!("case_samples", format_case_samples(&[case("q1", 20)]));
    assert_eq!(format_case_samples(&[]), "(none)");
}

#[test]
fn spans_cut_tool_output_at_500_chars() {
    let long = "界".repeat(600);
    let text = format_spans(&[span("q1", &long)]);
    assert!(text.contains(&format!("Output: {}…[100 more chars]", "界".repeat(500))));
    insta::assert_snapshot!("spans", format_spans(&[span("q1", "three birds")]));
    assert_eq!(format_spans(&[]), "(none)");
}

#[test]
fn rejected_edits_tell_no_gate_outcome() {
    // A record saved when the blacklist still held the gate's counts.
    let saved = serde_json::json!({
        "target_file": "counting.md",
        "edit": {"op": "replace", "target": "Count once.", "content": "Count twice."},
        "reason": "gate: reject_futility (W=3, L=5, E=0.417)",
        "source_version": "v3",
        "gate_w": 3, "gate_l": 5, "gate_e": 0.4167, "gate_delta_hat": -0.125
    });
    let gate: RejectedEdit = serde_json::from_value(saved).unwrap();
    let plain = RejectedEdit {
        target_file: "counting.md".to_owned(),
        edit: Edit::append("Be careful."),
        reason: "validation failed".to_owned(),
        source_version: "v3".to_owned(),
    };
    let text = format_rejected_edits(&[gate, plain]);
    for told in ["W=", "L=", "E=", "δ̂", "0.4", "futility"] {
        assert!(!text.contains(told), "{told} in {text}");
    }
    assert!(text.contains("— rejected by the gate\n"), "{text}");
    insta::assert_snapshot!("rejected_edits", text);
    assert_eq!(format_rejected_edits(&[]), "(none)");
}
