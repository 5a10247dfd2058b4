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
