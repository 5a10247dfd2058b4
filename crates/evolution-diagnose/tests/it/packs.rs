use evolution_diagnose::packs::{
    DiagnosedQuestion, build_skill_case_packs, build_system_case_pack, build_tool_case_packs,
    merge_system_packs, merge_tool_packs,
};
use evolution_diagnose::stats::{
    adherence_stats, behavior_stats, percentile, task_stats, tool_stats,
};
use evolution_testkit::MemoryStore;
use evolution_types::{
    CauseCategory, ConfidenceCalibration, ErrorAttribution, ErrorType, QuestionMetrics,
    SkillStepAdherence, SpanMetrics, Stats, SystemCasePack, ToolCasePack,
};
use serde_json::{Value, json};

use crate::common::{prediction, profile};

fn qm(id: &str, task: &str, correct: bool) -> QuestionMetrics {
    QuestionMetrics {
        question_id: id.into(),
        task_type: task.into(),
        correct,
        budget_usage: 0.5,
        confidence: 0.6,
        ..QuestionMetrics::default()
    }
}

fn span(step: u32, tool: &str, c: f64, h: f64) -> SpanMetrics {
    SpanMetrics {
        step,
        tool_name: tool.into(),
        extraction_completeness: c,
        hallucination_rate: h,
        ..SpanMetrics::default()
    }
}

fn dq(
    metrics: QuestionMetrics,
    cause: Option<(ErrorType, CauseCategory, Option<&str>)>,
) -> DiagnosedQuestion {
    let attribution = cause.map(|(error_type, category, note)| ErrorAttribution {
        question_id: metrics.question_id.clone(),
        task_type: metrics.task_type.clone(),
        error_type,
        cause_category: Some(category),
        lapse_note: note.map(str::to_owned),
        reasoning_failure_type: None,
        evidence: String::new(),
    });
    DiagnosedQuestion {
        prediction: prediction(
            "r",
            &metrics.question_id,
            &metrics.task_type,
            metrics.correct,
        ),
        question: format!("question {}", metrics.question_id),
        answer: "A".into(),
        trace: crate::common::trace("r", &metrics.question_id),
        metrics,
        attribution,
    }
}

#[test]
fn d2_per_tool() {
    assert_eq!(tool_stats(&[]), Stats::new());
    let mut a = qm("a", "t", false);
    a.span_metrics = vec![
        span(1, "view_node", 0.2, 0.0),
        span(2, "view_node", 1.0, 0.8),
    ];
    a.span_metrics[0].missed_info_tags = vec!["colour".into()];
    let d2 = tool_stats(std::slice::from_ref(&a));
    let v = &d2["view_node"];
    assert_eq!(v["n_spans"], 2);
    assert_eq!(v["avg_completeness"], 0.6);
    assert_eq!(v["low_completeness_count"], 1);
    assert_eq!(v["high_hallucination_count"], 1);
    assert_eq!(
        v["top_missed_info_tags"],
        json!([{"tag": "colour", "count": 1}])
    );
    // Every tool the traces called has an entry, judged or not.
    let mut b = qm("b", "t", true);
    b.tool_usage = [("lookup_order".to_owned(), 3), ("view_node".to_owned(), 2)].into();
    let mut c = qm("c", "t", true);
    c.tool_usage = [("lookup_order".to_owned(), 1)].into();
    let d2 = tool_stats(&[a, b, c]);
    assert_eq!(d2["lookup_order"]["n_calls"], 4);
    assert_eq!(d2["lookup_order"]["n_spans"], 0);
    assert_eq!(d2["lookup_order"]["avg_completeness"], Value::Null);
    assert_eq!(d2["view_node"]["n_calls"], 2);
    assert_eq!(d2["view_node"]["n_spans"], 2);
    assert_eq!(percentile(&[1.0, 2.0, 3.0, 4.0], 25.0), Some(1.75));
    assert_eq!(percentile(&[], 50.0), None);
}

#[test]
fn d3_avg_steps_holds_budget_usage() {
    let mut a = qm("a", "t", true);
    a.budget_usage = 0.2;
    let mut b = qm("b", "t", true);
    b.budget_usage = 0.4;
    let c = qm("c", "t", false);
    let attr = ErrorAttribution {
        question_id: "c".into(),
        task_type: "t".into(),
        error_type: ErrorType::Mixed,
        cause_category: None,
        lapse_note: None,
        reasoning_failure_type: None,
        evidence: String::new(),
    };
    let d3 = task_stats(&[a, b, c], &[attr]);
    let t = &d3["t"];
    assert_eq!(t["n"], 3);
    assert_eq!(t["n_correct"], 2);
    assert!((t["correct"]["avg_steps"].as_f64().unwrap() - 0.3).abs() < 1e-12);
    assert_eq!(t["incorrect"]["avg_steps"], 0.5);
    assert_eq!(t["error_types"], json!({"mixed": 1}));
}

#[test]
fn d4_adherence() {
    let mut a = qm("a", "t", true);
    a.adherence_rate = Some(1.0);
    let mut b = qm("b", "t", false);
    b.adherence_rate = Some(0.0);
    b.skill_adherence = vec![SkillStepAdherence {
        step: "verify".into(),
        followed: false,
        reason: String::new(),
    }];
    let unjudged = qm("c", "u", false);
    let d4 = adherence_stats(&[a, b, unjudged]);
    assert!(!d4.contains_key("u"));
    assert_eq!(d4["t"]["avg_adherence"], 0.5);
    assert_eq!(d4["t"]["avg_adherence_correct"], 1.0);
    assert_eq!(
        d4["t"]["unfollowed_steps"],
        json!([{"step": "verify", "count": 1}])
    );
}

#[test]
fn d5_behaviour() {
    let empty = behavior_stats(&[]);
    assert_eq!(empty["early_submit_rate"], 0.0);
    assert_eq!(empty["n"], 0);
    let mut early = qm("a", "t", false);
    early.budget_usage = 0.1;
    let mut biased = qm("b", "t", true);
    biased.confirmation_bias = Some(true);
    let d5 = behavior_stats(&[early, biased]);
    assert_eq!(d5["early_submit_count"], 1);
    assert_eq!(d5["early_submit_rate"], 0.5);
    assert_eq!(d5["confirmation_bias_count"], 1);
    // Not computed (no visit or search tool named) is null, not 0.
    assert_eq!(d5["avg_repeat_visit_rate"], Value::Null);
    assert_eq!(d5["avg_search_keyword_repetition"], Value::Null);
    assert_eq!(empty["avg_repeat_visit_rate"], 0.0);
    let mut visited = qm("c", "t", true);
    visited.repeat_visit_rate = Some(0.5);
    let d5 = behavior_stats(&[qm("d", "t", true), visited]);
    assert_eq!(d5["avg_repeat_visit_rate"], 0.5);
}

fn store() -> MemoryStore {
    MemoryStore::new()
        .with("temporal.md", "skill")
        .with("default-strategy.md", "default")
}

#[test]
fn skill_packs_selection_rules() {
    let mut qs = Vec::new();
    // temporal: three extraction defects (top-2 by severity), one search defect, two lapses (one blank).
    for (id, c) in [("e1", 0.4), ("e2", 0.1), ("e3", 0.3)] {
        let mut m = qm(id, "temporal", false);
        m.span_metrics = vec![span(1, "view_node", c, 0.0)];
        qs.push(dq(
            m,
            Some((ErrorType::ExtractionFailure, CauseCategory::Defect, None)),
        ));
    }
    let mut s = qm("s1", "temporal", false);
    s.missed_nodes = vec!["n1".into()];
    qs.push(dq(
        s,
        Some((ErrorType::SearchFailure, CauseCategory::Defect, None)),
    ));
    qs.push(dq(
        qm("l1", "temporal", false),
        Some((
            ErrorType::Mixed,
            CauseCategory::Lapse,
            Some("  look again "),
        )),
    ));
    qs.push(dq(
        qm("l2", "temporal", false),
        Some((ErrorType::Mixed, CauseCategory::Lapse, Some("   "))),
    ));
    qs.push(dq(
        qm("l3", "temporal", false),
        Some((ErrorType::Mixed, CauseCategory::Lapse, Some("look again"))),
    ));
    for (id, rate, budget) in [("ok1", 0.5, 0.2), ("ok2", 1.0, 0.9), ("ok3", 1.0, 0.4)] {
        let mut m = qm(id, "temporal", true);
        m.adherence_rate = Some(rate);
        m.budget_usage = budget;
        qs.push(dq(m, None));
    }
    // counting: a single defect is a failure case the proposer sees, with no note of ours.
    qs.push(dq(
        qm("c1", "counting", false),
        Some((ErrorType::ReasoningFailure, CauseCategory::Defect, None)),
    ));
    for (id, budget) in [("c2", 0.9), ("c3", 0.2), ("c4", 0.5)] {
        let mut m = qm(id, "counting", true);
        m.budget_usage = budget;
        qs.push(dq(m, None));
    }
    // spatial: all correct → no pack.
    qs.push(dq(qm("p1", "spatial", true), None));

    let metrics: Vec<_> = qs.iter().map(|q| q.metrics.clone()).collect();
    let d3 = task_stats(&metrics, &[]);
    let d4 = adherence_stats(&metrics);
    let profile = profile();
    let packs = build_skill_case_packs(&qs, &d3, &d4, &store(), &profile).unwrap();
    assert_eq!(
        packs
            .iter()
            .map(|p| p.task_type.as_str())
            .collect::<Vec<_>>(),
        ["counting", "temporal"]
    );

    let counting = &packs[0];
    assert_eq!(counting.target_file, "default-strategy.md");
    assert_eq!(
        counting
            .failure_cases
            .iter()
            .map(|c| c.question_id.as_str())
            .collect::<Vec<_>>(),
        ["c1"]
    );
    assert!(
        counting.lapse_notes.is_empty(),
        "{:?}",
        counting.lapse_notes
    );
    // accuracy 3/4 > 0.3: by adherence (all none → 0) then budget.
    let ids: Vec<_> = counting
        .success_cases
        .iter()
        .map(|c| c.question_id.as_str())
        .collect();
    assert_eq!(ids, ["c3", "c4"]);

    let temporal = &packs[1];
    assert_eq!(temporal.target_file, "temporal.md");
    let failures: Vec<_> = temporal
        .failure_cases
        .iter()
        .map(|c| (c.question_id.as_str(), c.selection_reason.as_str()))
        .collect();
    assert_eq!(
        failures,
        [
            ("e2", "extraction_failure"),
            ("e3", "extraction_failure"),
            ("s1", "search_failure")
        ]
    );
    assert_eq!(temporal.lapse_notes, ["look again"]);
    // accuracy 3/10 ≤ 0.3: cheapest first; max(2, 3/2) = 2.
    let ids: Vec<_> = temporal
        .success_cases
        .iter()
        .map(|c| c.question_id.as_str())
        .collect();
    assert_eq!(ids, ["ok1", "ok3"]);
    let sample = &temporal.failure_cases[0];
    assert_eq!(
        sample.metrics.error_type,
        Some(ErrorType::ExtractionFailure)
    );
    assert_eq!(sample.trace.len(), 5, "case samples keep the whole trace");
    let keys: Vec<String> = serde_json::to_value(&sample.metrics)
        .unwrap()
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    assert_eq!(
        keys,
        [
            "correct",
            "error_type",
            "budget_usage",
            "confidence_calibration",
            "repeat_visit_rate",
            "tool_usage",
            "missed_nodes",
            "adherence_rate",
            "confirmation_bias",
            "evidence_sufficient"
        ],
        "the reference implementation's fixed metric keys"
    );
    assert!(temporal.stats["task"]["n"] == 10);
}

#[test]
fn skill_pack_successes_by_adherence_when_accuracy_is_high() {
    let mut qs = vec![
        dq(
            qm("f1", "t", false),
            Some((ErrorType::Mixed, CauseCategory::Defect, None)),
        ),
        dq(
            qm("f2", "t", false),
            Some((ErrorType::Mixed, CauseCategory::Defect, None)),
        ),
    ];
    for (id, rate, budget) in [
        ("a", 0.5, 0.1),
        ("b", 1.0, 0.9),
        ("c", 1.0, 0.4),
        ("d", 0.2, 0.3),
    ] {
        let mut m = qm(id, "t", true);
        m.adherence_rate = Some(rate);
        m.budget_usage = budget;
        qs.push(dq(m, None));
    }
    let packs =
        build_skill_case_packs(&qs, &Stats::new(), &Stats::new(), &store(), &profile()).unwrap();
    let ids: Vec<_> = packs[0]
        .success_cases
        .iter()
        .map(|c| c.question_id.as_str())
        .collect();
    assert_eq!(ids, ["c", "b"]);
}

#[test]
fn system_pack_threshold_and_selection() {
    let profile = profile();
    let hc = |id: &str, conf: f64| {
        let mut m = qm(id, "t", false);
        m.confidence = conf;
        m.confidence_calibration = ConfidenceCalibration::HighConfWrong;
        dq(m, None)
    };
    let mut qs = vec![hc("h1", 0.8), hc("h2", 0.95)];
    assert!(
        build_system_case_pack(&qs, &profile).is_none(),
        "2 < 3 occurrences"
    );
    qs.push(hc("h3", 0.9));
    // Two early submits: below the threshold, not a pattern of the pack.
    for id in ["e1", "e2"] {
        let mut m = qm(id, "t", false);
        m.budget_usage = 0.1;
        qs.push(dq(m, None));
    }
    for (id, budget, bias) in [
        ("s1", 0.45, Some(false)),
        ("s2", 0.8, None),
        ("s3", 0.9, None),
        ("s4", 0.5, Some(true)),
        ("s5", 0.6, Some(false)),
    ] {
        let mut m = qm(id, "t", true);
        m.budget_usage = budget;
        m.confirmation_bias = bias;
        qs.push(dq(m, None));
    }
    let pack = build_system_case_pack(&qs, &profile).unwrap();
    let failures: Vec<_> = pack
        .failure_cases
        .iter()
        .map(|c| (c.question_id.as_str(), c.selection_reason.as_str()))
        .collect();
    assert_eq!(
        failures,
        [("h2", "high_conf_wrong"), ("h3", "high_conf_wrong")]
    );
    let successes: Vec<_> = pack
        .success_cases
        .iter()
        .map(|c| c.question_id.as_str())
        .collect();
    assert_eq!(successes, ["s1", "s5"]);
    assert_eq!(
        pack.stats["pattern_counts"],
        json!({"confirmation_bias": 1, "early_submit": 2, "high_conf_wrong": 3})
    );
}

#[test]
fn tool_packs_selection() {
    let mut a = qm("a", "t", false);
    a.span_metrics = vec![
        span(1, "view_node", 0.1, 0.0),
        span(2, "view_node", 0.2, 0.9),
        span(3, "view_node", 0.3, 0.0),
        span(4, "view_node", 0.9, 0.7),
        span(5, "view_node", 0.95, 0.0),
        span(6, "observe_frame", 1.0, 0.0),
        span(7, "other_tool", 0.0, 1.0),
    ];
    let mut b = qm("b", "t", true);
    b.span_metrics = vec![
        span(1, "view_node", 0.9, 0.0),
        span(2, "view_node", 0.99, 0.1),
    ];
    let qs = vec![dq(a, None), dq(b, None)];
    let metrics: Vec<_> = qs.iter().map(|q| q.metrics.clone()).collect();
    let packs = build_tool_case_packs(&qs, &tool_stats(&metrics), &profile());
    assert_eq!(
        packs
            .iter()
            .map(|p| p.tool_name.as_str())
            .collect::<Vec<_>>(),
        ["observe_frame", "view_node"]
    );
    let view = &packs[1];
    assert_eq!(view.target_files.len(), 4);
    let failures: Vec<_> = view
        .failure_spans
        .iter()
        .map(|s| (s.question_id.as_str(), s.metrics.step))
        .collect();
    assert_eq!(
        failures,
        [("a", 1), ("a", 2), ("a", 4)],
        "low-c top 2 + high-h top 2, deduplicated"
    );
    let successes: Vec<_> = view
        .success_spans
        .iter()
        .map(|s| (s.question_id.as_str(), s.metrics.step))
        .collect();
    assert_eq!(successes, [("a", 5), ("b", 1)]);
    assert_eq!(
        view.failure_spans[0].tool_output,
        "root summary: a kitchen scene"
    );
    assert_eq!(view.stats["n_spans"], 7);
}

#[test]
fn merges_wrap_stats_per_step() {
    assert!(merge_system_packs(&[]).is_none());
    let mut stats = Stats::new();
    stats.insert("a".into(), json!(1));
    let pack = SystemCasePack {
        stats: stats.clone(),
        failure_cases: vec![],
        success_cases: vec![],
    };
    let merged = merge_system_packs(&[pack.clone(), pack]).unwrap();
    assert_eq!(merged.stats["per_step"], json!([{"a": 1}, {"a": 1}]));
    assert!(merge_tool_packs(&[]).is_empty());
    let tool = |name: &str, files: &[&str]| ToolCasePack {
        tool_name: name.into(),
        target_files: files.iter().map(|f| (*f).to_owned()).collect(),
        stats: stats.clone(),
        ..ToolCasePack::default()
    };
    let merged = merge_tool_packs(&[
        tool("v", &["x.md"]),
        tool("o", &[]),
        tool("v", &["x.md", "y.md"]),
    ]);
    assert_eq!(merged.len(), 2);
    assert_eq!(merged[0].tool_name, "v");
    assert_eq!(merged[0].target_files, ["x.md", "y.md"]);
    assert_eq!(merged[0].stats["per_step"].as_array().unwrap().len(), 2);
    assert_eq!(merged[1].stats["per_step"].as_array().unwrap().len(), 1);
}

#[test]
fn the_profiles_chosen_skill_file_wins() {
    use evolution_diagnose::packs::resolve_target_file;
    let store = store().with("billing.md", "billing");
    let mut chosen = profile();
    chosen.task_skill_files = [("Refunds".to_owned(), "billing.md".to_owned())].into();
    chosen.default_skill_file = "temporal.md".to_owned();
    assert_eq!(
        resolve_target_file(&store, "Refunds", &chosen).unwrap(),
        "billing.md"
    );
    assert_eq!(
        resolve_target_file(&store, "Temporal", &chosen).unwrap(),
        "temporal.md"
    );
    assert_eq!(
        resolve_target_file(&store, "Other", &chosen).unwrap(),
        "temporal.md"
    );
    assert_eq!(
        resolve_target_file(&store, "Other", &profile()).unwrap(),
        "default-strategy.md"
    );
}
