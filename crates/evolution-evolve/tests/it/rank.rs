use evolution_evolve::rank::{rank_and_clip, select_top_edits};
use evolution_testkit::ScriptedLlm;
use evolution_types::Edit;
use serde_json::json;

use crate::support::{empty_reply, prompts, transient};

fn edits(n: usize) -> Vec<Edit> {
    (0..n).map(|i| Edit::append(format!("rule {i}"))).collect()
}

fn contents(edits: &[Edit]) -> Vec<&str> {
    edits.iter().map(|e| e.content.as_str()).collect()
}

#[test]
fn select_accepts_only_true_integers_in_range_once() {
    let ranking = [
        json!(true),
        json!(-1),
        json!(99),
        json!(2),
        json!(2),
        json!(1.0),
        json!("0"),
        json!(0),
        json!(3),
    ];
    assert_eq!(select_top_edits(&ranking, 4, 3), vec![2, 0, 3]);
    assert_eq!(select_top_edits(&ranking, 4, 1), vec![2]);
    assert_eq!(
        select_top_edits(&[json!(false), json!(null)], 4, 3),
        Vec::<usize>::new()
    );
    assert_eq!(select_top_edits(&[json!(0)], 0, 3), Vec::<usize>::new());
}

#[tokio::test]
async fn within_budget_passes_through_without_a_call() {
    let llm = ScriptedLlm::new();
    let out = rank_and_clip(&llm, &prompts(), "doc", edits(3), 3)
        .await
        .unwrap();
    assert_eq!(out.edits, edits(3));
    assert_eq!(out.llm_calls, 0);
    assert_eq!(out.info["method"], "passthrough");
    assert_eq!(llm.call_count(), 0);
    let unlimited = rank_and_clip(&llm, &prompts(), "doc", edits(50), usize::MAX)
        .await
        .unwrap();
    assert_eq!(unlimited.edits.len(), 50);
    assert_eq!(unlimited.info["max_edits"], serde_json::Value::Null);
}

#[tokio::test]
async fn zero_budget_keeps_nothing_without_a_call() {
    let llm = ScriptedLlm::new();
    let out = rank_and_clip(&llm, &prompts(), "doc", edits(3), 0)
        .await
        .unwrap();
    assert!(out.edits.is_empty());
    assert_eq!(llm.call_count(), 0);
}

#[tokio::test]
async fn llm_ranking_orders_and_filters() {
    let llm = ScriptedLlm::with_replies([r#"{"ranking": [true, -1, 99, 3, 3, 1, 0]}"#]);
    let out = rank_and_clip(&llm, &prompts(), "THE DOC", edits(5), 2)
        .await
        .unwrap();
    assert_eq!(contents(&out.edits), vec!["rule 3", "rule 1"]);
    assert_eq!(out.llm_calls, 1);
    assert_eq!(out.info["method"], "llm_rank");
    assert_eq!(out.info["selected"], json!([3, 1]));
    let request = &llm.requests()[0];
    assert!(request.options.json_mode);
    insta::assert_snapshot!("rank_prompt", request.last_user());
}

#[tokio::test]
async fn unusable_ranking_falls_back_to_first_n() {
    for reply in [
        r#"{"ranking": [true, -1, 99]}"#,
        "not json",
        r#"{"order": [1]}"#,
        r#"{"ranking": "1,2"}"#,
    ] {
        let llm = ScriptedLlm::with_replies([reply]);
        let out = rank_and_clip(&llm, &prompts(), "doc", edits(5), 2)
            .await
            .unwrap();
        assert_eq!(
            contents(&out.edits),
            vec!["rule 0", "rule 1"],
            "reply {reply}"
        );
        assert_eq!(out.info["method"], "fallback_first_n");
        assert!(out.info.contains_key("fallback_reason"));
    }
    let llm = ScriptedLlm::new();
    llm.push_error(empty_reply());
    let out = rank_and_clip(&llm, &prompts(), "doc", edits(5), 2)
        .await
        .unwrap();
    assert_eq!(contents(&out.edits), vec!["rule 0", "rule 1"]);
}

#[tokio::test]
async fn provider_errors_propagate() {
    let llm = ScriptedLlm::new();
    llm.push_error(transient());
    let err = rank_and_clip(&llm, &prompts(), "doc", edits(5), 2)
        .await
        .unwrap_err();
    assert!(err.is_transient());
}
