use evolution_diagnose::rules::{
    aggregate_soft, calc_budget_usage, calc_confidence_calibration, calc_format_compliance,
    calc_level_jump_pattern, calc_repeat_visit_rate, calc_search_keyword_repetition,
    calc_tool_usage, extract_last_confidence, extract_rule_metrics, question_soft_score,
};
use evolution_testkit::fixtures;
use evolution_types::{ConfidenceCalibration, Profile, SpanMetrics, TraceStep};
use regex::Regex;
use serde_json::json;

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-12
}

#[test]
fn format_compliance() {
    assert_eq!(calc_format_compliance::<&str>(&[]), 1.0);
    assert_eq!(
        calc_format_compliance(&["{\"a\": 1}", "not json", "{'b': 2,}", "[1]"]),
        0.5
    );
}

#[test]
fn budget_usage_never_nan() {
    assert!(close(calc_budget_usage(5, 15), 1.0 / 3.0));
    assert_eq!(calc_budget_usage(16, 15), 16.0 / 15.0);
    assert_eq!(calc_budget_usage(0, 0), 0.0);
    assert_eq!(calc_budget_usage(3, 0), 1.0);
}

#[test]
fn confidence_calibration_thresholds() {
    let p = Profile::default();
    let check = |c, ok, want| assert_eq!(calc_confidence_calibration(c, ok, &p), want, "{c} {ok}");
    check(0.9, false, ConfidenceCalibration::HighConfWrong);
    check(0.7, false, ConfidenceCalibration::HighConfWrong);
    check(0.69, false, ConfidenceCalibration::Calibrated);
    check(0.3, true, ConfidenceCalibration::LowConfRight);
    check(0.5, true, ConfidenceCalibration::Calibrated);
    check(0.49, true, ConfidenceCalibration::LowConfRight);
    check(0.6, true, ConfidenceCalibration::Calibrated);
    check(0.9, true, ConfidenceCalibration::Calibrated);
    check(0.1, false, ConfidenceCalibration::Calibrated);
    check(f64::NAN, false, ConfidenceCalibration::Calibrated);
}

#[test]
fn repeat_visit_rate() {
    assert_eq!(calc_repeat_visit_rate::<&str>(&[]), 0.0);
    assert_eq!(calc_repeat_visit_rate(&["a", "b", "c"]), 0.0);
    assert!(close(calc_repeat_visit_rate(&["a", "a", "a"]), 2.0 / 3.0));
}

#[test]
fn keyword_repetition_is_char_trigram_max_jaccard() {
    assert_eq!(calc_search_keyword_repetition(&["one"]), 0.0);
    let v = calc_search_keyword_repetition(&["abcdef", "abcxyz"]);
    assert!(v > 0.0 && v < 1.0);
    // abcdef → {abc,bcd,cde,def}; abcxyz → {abc,bcx,cxy,xyz}: 1/7.
    assert!(close(v, 1.0 / 7.0));
    // MAX over pairs, not the mean: one identical pair dominates.
    assert_eq!(
        calc_search_keyword_repetition(&["red car", "zzzzqq", "red car"]),
        1.0
    );
    // Character level: works without spaces, on CJK too.
    assert!(calc_search_keyword_repetition(&["红色汽车停在", "红色汽车开走"]) > 0.0);
    assert_eq!(calc_search_keyword_repetition(&["ab", "ab"]), 0.0);
}

#[test]
fn level_jump_pattern() {
    let re = Regex::new(Profile::video_qa().level_pattern.as_deref().unwrap()).unwrap();
    let p = calc_level_jump_pattern(&["seg_L1_000", "seg_L2_001"], &re);
    assert!(p.contains("L1"));
    assert_eq!(p, "L1→L2");
    assert_eq!(
        calc_level_jump_pattern(&["seg_L1_000", "root", "seg_L3_004", "seg_L3_005"], &re),
        "L1→L3→L3"
    );
}

#[test]
fn tool_usage_counts() {
    let usage = calc_tool_usage(&["view_node", "view_node", "search_similar", ""]);
    assert_eq!(usage.len(), 2);
    assert_eq!(usage["view_node"], 2);
    assert_eq!(usage["search_similar"], 1);
}

#[test]
fn last_confidence() {
    let with = |raw: &str| extract_last_confidence(&["{}", raw], 0.8);
    assert_eq!(with(r#"{"reflect": {"confidence": 0.9}}"#), 0.9);
    assert_eq!(with(r#"{"reflect": {"confidence": "0.35"}}"#), 0.35);
    // Present but unusable: 0.5 (the reference implementation's "any exception").
    assert_eq!(with(r#"{"reflect": {"confidence": "high"}}"#), 0.5);
    assert_eq!(with(r#"{"reflect": {"confidence": null}}"#), 0.5);
    // Absent: the fallback.
    assert_eq!(with(r#"{"answer": "A"}"#), 0.8);
    assert_eq!(with("no json here"), 0.8);
    assert_eq!(extract_last_confidence::<&str>(&[], 0.8), 0.8);
}

fn step(n: u32, tool: &str, input: serde_json::Value, raw: &str) -> TraceStep {
    TraceStep {
        tool_input: input,
        raw_content: raw.to_owned(),
        ..fixtures::trace_step("r", "q1", n, tool, "out")
    }
}

#[test]
fn rule_metrics_from_prediction_and_trace() {
    let mut pred = fixtures::prediction("r", "q1", "temporal", false);
    pred.answer_confidence = Some(0.4);
    let trace = vec![
        step(
            1,
            "view_node",
            json!({"node_id": "seg_L1_000"}),
            r#"{"action": "view_node"}"#,
        ),
        step(
            2,
            "search_similar",
            json!({"query": "red car"}),
            "thinking...",
        ),
        step(
            3,
            "search_similar",
            json!({"query": "red cars"}),
            r#"{"action": "search"}"#,
        ),
        step(
            4,
            "view_node",
            json!({"node_id": "seg_L2_003"}),
            r#"{"a": 1}"#,
        ),
        step(
            5,
            "view_node",
            json!({"node_id": "seg_L2_003"}),
            r#"{"answer": "B", "reflect": {"confidence": 0.9}}"#,
        ),
    ];
    let m = extract_rule_metrics(&pred, &trace, &Profile::video_qa()).unwrap();
    assert_eq!(m.confidence, 0.9);
    assert_eq!(
        m.confidence_calibration,
        ConfidenceCalibration::HighConfWrong
    );
    assert_eq!(m.format_compliance, 0.8);
    assert!(close(m.budget_usage, 5.0 / 15.0));
    assert!(close(m.repeat_visit_rate.unwrap(), 1.0 / 3.0));
    assert!(m.search_keyword_repetition.unwrap() > 0.5);
    assert_eq!(m.level_jump_pattern, "L1→L2→L2");
    assert_eq!(m.tool_usage["view_node"], 3);
    // The neutral profile names no visit or search tool: those metrics are
    // not computed (None, not 0); the rest are the same.
    let neutral = extract_rule_metrics(&pred, &trace, &Profile::neutral()).unwrap();
    assert_eq!(neutral.repeat_visit_rate, None);
    assert_eq!(neutral.search_keyword_repetition, None);
    assert_eq!(neutral.level_jump_pattern, "");
    assert_eq!(neutral.tool_usage, m.tool_usage);
    assert_eq!(neutral.format_compliance, m.format_compliance);
    // Naming other tools measures those: a visit tool without a level pattern.
    let renamed: Vec<TraceStep> = trace
        .iter()
        .map(|s| TraceStep {
            tool_name: s
                .tool_name
                .replace("view_node", "open_page")
                .replace("search_similar", "search_kb"),
            ..s.clone()
        })
        .collect();
    let profile = Profile {
        visit_tool: Some("open_page".into()),
        search_tool: Some("search_kb".into()),
        ..Profile::neutral()
    };
    let other = extract_rule_metrics(&pred, &renamed, &profile).unwrap();
    assert_eq!(other.repeat_visit_rate, m.repeat_visit_rate);
    assert_eq!(other.search_keyword_repetition, m.search_keyword_repetition);
    assert_eq!(other.level_jump_pattern, "");
    // Without reflect.confidence in the last step: the prediction's confidence.
    let m = extract_rule_metrics(&pred, &trace[..4], &Profile::video_qa()).unwrap();
    assert_eq!(m.confidence, 0.4);
    // Without either: 0.5.
    pred.answer_confidence = None;
    let m = extract_rule_metrics(&pred, &trace[..4], &Profile::video_qa()).unwrap();
    assert_eq!(m.confidence, 0.5);
}

#[test]
fn invalid_level_pattern_is_a_typed_error() {
    let profile = Profile {
        level_pattern: Some("(".to_owned()),
        ..Profile::default()
    };
    let pred = fixtures::prediction("r", "q1", "t", true);
    let err = extract_rule_metrics(&pred, &[], &profile).unwrap_err();
    assert!(err.to_string().contains("level_pattern"), "{err}");
    assert!(
        evolution_diagnose::check_profile(&profile)
            .unwrap_err()
            .to_string()
            .contains("level_pattern")
    );
}

#[test]
fn check_profile_names_the_field_at_fault() {
    assert!(evolution_diagnose::check_profile(&Profile::neutral()).is_ok());
    assert!(evolution_diagnose::check_profile(&Profile::video_qa()).is_ok());
    let cases = [
        (
            Profile {
                high_confidence: 1.5,
                ..Profile::neutral()
            },
            "high_confidence",
        ),
        (
            Profile {
                low_confidence: 0.9,
                ..Profile::neutral()
            },
            "low_confidence",
        ),
        (
            Profile {
                min_pattern_count: 0,
                ..Profile::neutral()
            },
            "min_pattern_count",
        ),
        (
            Profile {
                tool_target_files: [("t".to_owned(), vec!["../t_extract.md".to_owned()])].into(),
                ..Profile::neutral()
            },
            "tool_target_files",
        ),
        (
            Profile {
                span_eval_tools: [" ".to_owned()].into(),
                ..Profile::neutral()
            },
            "span_eval_tools",
        ),
    ];
    for (profile, field) in cases {
        match evolution_diagnose::check_profile(&profile) {
            Err(evolution_diagnose::DiagnoseError::InvalidProfile { field: f, .. }) => {
                assert_eq!(f, field);
            }
            other => panic!("{field}: {other:?}"),
        }
    }
}

fn span(c: f64, h: f64) -> SpanMetrics {
    SpanMetrics {
        extraction_completeness: c,
        hallucination_rate: h,
        ..SpanMetrics::default()
    }
}

#[test]
fn soft_scores() {
    assert_eq!(question_soft_score(&[]), None);
    assert!(close(
        question_soft_score(&[span(1.0, 0.0), span(0.5, 0.5)]).unwrap(),
        0.625
    ));
    assert!(close(
        aggregate_soft(&[Some(0.8), None, Some(0.6)]).unwrap(),
        0.7
    ));
    assert_eq!(aggregate_soft(&[None, None]), None);
}

mod properties {
    use evolution_diagnose::rules::{calc_search_keyword_repetition, extract_rule_metrics};
    use evolution_testkit::fixtures;
    use evolution_types::{Profile, TraceStep};
    use proptest::prelude::*;
    use serde_json::json;

    fn unit(x: f64) -> bool {
        (0.0..=1.0).contains(&x)
    }

    proptest! {
        #[test]
        fn rule_metrics_are_finite_and_in_range(
            steps_used in any::<u32>(),
            max_steps in any::<u32>(),
            confidence in proptest::option::of(any::<f64>()),
            correct in any::<bool>(),
            raw in proptest::collection::vec(".{0,40}", 0..6),
            nodes in proptest::collection::vec("(seg_L[0-9]{1,3}_[0-9]{3}|.{0,8})", 0..6),
        ) {
            let mut pred = fixtures::prediction("r", "q", "t", correct);
            pred.steps_used = steps_used;
            pred.max_steps = max_steps;
            pred.answer_confidence = confidence;
            let trace: Vec<TraceStep> = raw.iter().zip(nodes.iter().cycle()).enumerate().map(|(i, (r, n))| TraceStep {
                tool_input: json!({"node_id": n, "query": n}),
                raw_content: r.clone(),
                ..fixtures::trace_step("r", "q", i as u32 + 1, if i % 2 == 0 { "view_node" } else { "search_similar" }, "o")
            }).collect();
            let m = extract_rule_metrics(&pred, &trace, &Profile::video_qa()).unwrap();
            prop_assert!(m.budget_usage.is_finite() && m.budget_usage >= 0.0);
            prop_assert!(unit(m.format_compliance));
            prop_assert!(m.repeat_visit_rate.is_some_and(unit));
            prop_assert!(m.search_keyword_repetition.is_some_and(unit));
            prop_assert!(!m.confidence.is_nan());
        }

        #[test]
        fn keyword_repetition_is_a_similarity(queries in proptest::collection::vec(".{0,12}", 0..8)) {
            let v = calc_search_keyword_repetition(&queries);
            prop_assert!(unit(v));
        }
    }
}
