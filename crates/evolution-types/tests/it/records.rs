use evolution_types::{ErrorType, Prediction, QuestionMetrics, TraceStep};

#[test]
fn unknown_prediction_fields_survive_a_round_trip() {
    let json = serde_json::json!({
        "run_id": "r1", "question_id": "q1", "correct": true, "steps_used": 3,
        "max_steps": 10, "stop_reason": "submit", "latency_s": 12.5, "nested": {"a": [1, 2]}
    });
    let p: Prediction = serde_json::from_value(json.clone()).unwrap();
    assert!(p.correct);
    assert_eq!(p.extra["latency_s"], 12.5);
    let back = serde_json::to_value(&p).unwrap();
    for (key, value) in json.as_object().unwrap() {
        assert_eq!(&back[key], value, "{key}");
    }
}

#[test]
fn trace_step_defaults_missing_fields() {
    let t: TraceStep = serde_json::from_str(r#"{"question_id":"q","step":2,"custom":1}"#).unwrap();
    assert_eq!(t.step, 2);
    assert_eq!(t.tool_name, "");
    assert_eq!(t.extra["custom"], 1);
}

#[test]
fn enums_use_snake_case() {
    assert_eq!(
        serde_json::to_string(&ErrorType::ExtractionFailure).unwrap(),
        "\"extraction_failure\""
    );
    let qm = QuestionMetrics::default();
    let v = serde_json::to_value(&qm).unwrap();
    assert_eq!(v["confidence_calibration"], "calibrated");
}

#[test]
fn a_saved_rejected_edit_with_gate_counts_loads_without_them() {
    use evolution_types::{GATE_REJECTED_REASON, RejectedEdit};
    let check = |reason: &str, expect: &str| {
        let json = serde_json::json!({
            "target_file": "s.md",
            "edit": {"op": "append", "target": "", "content": "rule"},
            "reason": reason,
            "source_version": "v1",
            "gate_w": 9, "gate_l": 2, "gate_e": 41.5, "gate_delta_hat": 0.0875
        });
        let r: RejectedEdit = serde_json::from_value(json).unwrap();
        assert_eq!(r.reason, expect, "{reason}");
        let back = serde_json::to_string(&r).unwrap();
        assert!(!back.contains("gate_"), "{back}");
        assert!(!back.contains("41.5"), "{back}");
    };
    check(
        "gate: reject_futility (W=9, L=2, E=41.500)",
        GATE_REJECTED_REASON,
    );
    check(
        "gate: reject_inertia (W=3, L=3, E=1.000)",
        GATE_REJECTED_REASON,
    );
    check(
        "gate: not tested (the run's error budget is spent)",
        "gate: not tested (the run's error budget is spent)",
    );
    check(
        "dropped before the gate: breaks preference 'max_lines = 120'",
        "dropped before the gate: breaks preference 'max_lines = 120'",
    );
}
