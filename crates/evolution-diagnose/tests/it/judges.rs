use evolution_diagnose::JudgeError;
use evolution_diagnose::judges::{
    JUDGE_ATTEMPTS, JudgeContext, call_judge, compute_question_metrics, evaluate_span,
    format_trace_for_judge, format_trace_full, judge_missed_nodes, judge_options,
    judge_skill_adherence,
};
use evolution_testkit::{ScriptedLlm, fixtures};
use evolution_types::{ChatMessage, LlmError, LlmErrorKind};
use serde_json::json;

use crate::common::{good_reply, judge_of, prediction, profile, prompts, trace};

#[test]
fn judge_trace_is_truncated_and_full_trace_is_not() {
    let mut steps = trace("r", "q1");
    steps[0].thought = "t".repeat(150);
    steps[0].tool_output = "中".repeat(300);
    let judged = format_trace_for_judge(&steps);
    assert!(judged.contains(&format!("thought: {}…[50 more chars]", "t".repeat(100))));
    assert!(judged.contains(&format!("output: {}…[100 more chars]", "中".repeat(200))));
    assert!(!judged.contains(&"中".repeat(201)));
    let full = format_trace_full(&steps);
    assert!(full.contains(&"t".repeat(150)));
    assert!(full.contains(&"中".repeat(300)));
}

fn ctx<'a>(
    pred: &'a evolution_types::Prediction,
    steps: &'a [evolution_types::TraceStep],
    tree: Option<&'a serde_json::Value>,
    profile: &'a evolution_types::Profile,
) -> JudgeContext<'a> {
    JudgeContext {
        prediction: pred,
        question: "What did the man take from the fridge?",
        answer: "A",
        trace: steps,
        skill: "---\nname: temporal\n---\n1. scan the root\n2. verify",
        tree,
        profile,
    }
}

#[tokio::test]
async fn rendered_judge_prompts_snapshot() {
    let llm = ScriptedLlm::from_fn(|req| Ok(good_reply(judge_of(req))));
    let pred = prediction("r", "q1", "temporal", false);
    let steps = trace("r", "q1");
    let tree = json!({"id": "root", "children": [{"id": "seg_L1_000"}]});
    let profile = profile();
    let c = ctx(&pred, &steps, Some(&tree), &profile);
    let metrics = compute_question_metrics(&llm, &prompts(), &c)
        .await
        .unwrap();
    assert!(!metrics.degraded);
    let attribution = evolution_diagnose::attribution::attribute_error(&metrics);
    let attribution = evolution_diagnose::attribution::classify_defect_vs_lapse(
        &llm,
        &prompts(),
        &c,
        attribution,
    )
    .await
    .unwrap();
    let sub = evolution_diagnose::attribution::classify_reasoning_failure(
        &llm,
        &prompts(),
        &c,
        &attribution,
    )
    .await;
    assert_eq!(sub.as_deref(), Some("premise_error"));
    let mut requests = llm.requests();
    requests.sort_by(|a, b| (judge_of(a), a.full_text()).cmp(&(judge_of(b), b.full_text())));
    let rendered: Vec<String> = requests
        .iter()
        .map(|r| {
            let messages: Vec<String> = r
                .messages
                .iter()
                .map(|m| format!("[{:?}]\n{}", m.role, m.content))
                .collect();
            format!("=== {} ===\n{}", judge_of(r), messages.join("\n"))
        })
        .collect();
    insta::assert_snapshot!(rendered.join("\n\n"));
    assert!(
        requests
            .iter()
            .all(|r| r.options.json_mode && r.options.temperature == Some(0.0))
    );
}

#[tokio::test]
async fn call_judge_retries_only_content_failures() {
    let messages = [ChatMessage::user("judge")];
    let opts = judge_options("x");
    let parse = |o: &evolution_types::JsonMap| {
        o.get("ok")
            .and_then(|v| v.as_bool())
            .ok_or_else(|| "no ok".to_owned())
    };
    // Garbage, then a reply failing validation, then a good one.
    let llm = ScriptedLlm::with_replies(["nonsense", r#"{"other": 1}"#, r#"{"ok": true}"#]);
    assert_eq!(call_judge(&llm, &messages, &opts, parse).await, Ok(true));
    assert_eq!(llm.call_count(), 3);
    // Three unusable replies: Unparseable after exactly three calls.
    let llm = ScriptedLlm::with_replies(["a", "b", "c", r#"{"ok": true}"#]);
    let err = call_judge(&llm, &messages, &opts, parse).await.unwrap_err();
    assert!(
        matches!(err, JudgeError::Unparseable { attempts: 3, .. }),
        "{err:?}"
    );
    // It says which judge's replies could not be read.
    assert!(
        err.to_string()
            .starts_with("unreadable `judge.x` reply after 3 attempts: "),
        "{err}"
    );
    assert_eq!(llm.call_count(), JUDGE_ATTEMPTS as usize);
    // Content-class provider errors are retried.
    let llm = ScriptedLlm::new();
    llm.push_error(LlmError::new(LlmErrorKind::EmptyContent, "empty"));
    llm.push_reply(r#"{"ok": false}"#);
    assert_eq!(call_judge(&llm, &messages, &opts, parse).await, Ok(false));
    // Transient and permanent errors pass through at once.
    for kind in [LlmErrorKind::RateLimited, LlmErrorKind::Auth] {
        let llm = ScriptedLlm::new();
        llm.push_error(LlmError::new(kind, "no"));
        llm.push_reply(r#"{"ok": true}"#);
        let err = call_judge(&llm, &messages, &opts, parse).await.unwrap_err();
        assert!(
            matches!(&err, JudgeError::Provider(e) if e.kind() == kind),
            "{err:?}"
        );
        assert_eq!(llm.call_count(), 1);
    }
}

#[tokio::test]
async fn judge_reply_defaults() {
    let pred = prediction("r", "q1", "temporal", false);
    let steps = trace("r", "q1");
    let profile = profile();
    let c = ctx(&pred, &steps, None, &profile);
    let llm = ScriptedLlm::with_replies([
        r#"{"missed_info_tags": "not a list", "hallucination_rate": 7}"#,
        r#"{"missed_nodes": "seg_L2_001"}"#,
        r#"{"adherence_rate": 0.25}"#,
    ]);
    let span = evaluate_span(&llm, &prompts(), &c, &steps[0])
        .await
        .unwrap();
    assert_eq!(span.extraction_completeness, 0.0);
    assert_eq!(span.hallucination_rate, 1.0);
    assert!(span.missed_info_tags.is_empty() && span.hallucination_tags.is_empty());
    assert_eq!((span.step, span.tool_name.as_str()), (1, "view_node"));
    assert_eq!(
        judge_missed_nodes(&llm, &prompts(), &c).await.unwrap(),
        Vec::<String>::new()
    );
    let (steps_followed, rate) = judge_skill_adherence(&llm, &prompts(), &c).await.unwrap();
    assert!(steps_followed.is_empty());
    assert_eq!(rate, Some(0.25));
}

#[tokio::test]
async fn question_metrics_full_and_degraded() {
    let pred = prediction("r", "q1", "temporal", false);
    let steps = trace("r", "q1");
    let profile = profile();
    let c = ctx(&pred, &steps, None, &profile);

    let llm = ScriptedLlm::from_fn(|req| Ok(good_reply(judge_of(req))));
    let m = compute_question_metrics(&llm, &prompts(), &c)
        .await
        .unwrap();
    assert_eq!(
        m.span_metrics.len(),
        4,
        "view_node ×2, search_similar, observe_frame"
    );
    assert_eq!(m.adherence_rate, Some(0.5));
    assert_eq!(m.confirmation_bias, Some(false));
    assert_eq!(m.evidence_sufficient, Some(true));
    assert!((m.soft_score.unwrap() - 0.9).abs() < 1e-12);
    assert_eq!(m.confidence, 0.8);
    assert!(!m.degraded);
    assert_eq!(llm.call_count(), 8);

    // One judge never replies usable JSON: degraded, rule metrics kept.
    let llm = ScriptedLlm::from_fn(|req| {
        Ok(if judge_of(req) == "confirmation_bias" {
            "I refuse".into()
        } else {
            good_reply(judge_of(req))
        })
    });
    let d = compute_question_metrics(&llm, &prompts(), &c)
        .await
        .unwrap();
    assert!(d.degraded);
    assert!(d.span_metrics.is_empty() && d.missed_nodes.is_empty() && d.skill_adherence.is_empty());
    assert_eq!(
        (
            d.adherence_rate,
            d.confirmation_bias,
            d.evidence_sufficient,
            d.soft_score
        ),
        (None, None, None, None)
    );
    assert_eq!(d.format_compliance, m.format_compliance);
    assert_eq!(d.tool_usage, m.tool_usage);
    assert_eq!(d.confidence, 0.8);
    let bias_calls = llm
        .requests()
        .iter()
        .filter(|r| judge_of(r) == "confirmation_bias")
        .count();
    assert_eq!(bias_calls, 3);

    // A provider error is not degraded: it aborts.
    let llm = ScriptedLlm::from_fn(|req| {
        if judge_of(req) == "missed_nodes" {
            Err(LlmError::new(LlmErrorKind::ServerError, "502"))
        } else {
            Ok(good_reply(judge_of(req)))
        }
    });
    let err = compute_question_metrics(&llm, &prompts(), &c)
        .await
        .unwrap_err();
    assert!(
        matches!(err, evolution_diagnose::DiagnoseError::Llm(ref e) if e.kind() == LlmErrorKind::ServerError),
        "{err}"
    );
}

#[tokio::test]
async fn only_span_tools_of_the_profile_are_span_judged() {
    let pred = prediction("r", "q1", "temporal", true);
    let steps = trace("r", "q1");
    let mut profile = profile();
    profile.span_eval_tools = ["observe_frame".to_owned()].into();
    let c = ctx(&pred, &steps, None, &profile);
    let llm = ScriptedLlm::from_fn(|req| Ok(good_reply(judge_of(req))));
    let m = compute_question_metrics(&llm, &prompts(), &c)
        .await
        .unwrap();
    assert_eq!(m.span_metrics.len(), 1);
    assert_eq!(m.span_metrics[0].tool_name, "observe_frame");
    let _ = fixtures::question("q1", "temporal", "v");
}

#[test]
fn builtin_prompts_are_the_default_and_use_declared_placeholders() {
    use evolution_diagnose::DiagnosePrompts;
    use evolution_types::template::check;
    let mut prompts = DiagnosePrompts::default();
    assert_eq!(prompts, DiagnosePrompts::builtin());
    for spec in DiagnosePrompts::TEMPLATES {
        assert!(!spec.builtin.trim().is_empty(), "{}", spec.name);
        assert_eq!(prompts.get(spec.name), Some(spec.builtin));
        assert_eq!(
            check(spec.builtin, spec.placeholders),
            Ok(()),
            "{}",
            spec.name
        );
        if let Some(slot) = prompts.get_mut(spec.name) {
            slot.push('!');
        }
    }
    assert_eq!(prompts.confirmation_bias.pop(), Some('!'));
    assert_eq!(prompts.get("nope"), None);
    assert!(prompts.get_mut("nope").is_none());
}
