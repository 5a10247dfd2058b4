use evolution_evolve::rewrite::rewrite_from_suggestions;
use evolution_testkit::ScriptedLlm;
use serde_json::json;

use crate::support::{empty_reply, prompts, transient};

const DOC: &str = "---\nname: a\n---\nA long body with many words.";

#[tokio::test]
async fn accepts_a_shorter_rewrite() {
    let llm = ScriptedLlm::with_replies([r#"{"rewritten": "---\nname: a\n---\nShort."}"#]);
    let out = rewrite_from_suggestions(&llm, &prompts(), DOC, &[json!({"type": "add_rule"})])
        .await
        .unwrap();
    assert_eq!(out.outcome, Ok("---\nname: a\n---\nShort.".to_owned()));
    insta::assert_snapshot!("rewrite_prompt", llm.requests()[0].last_user());
}

#[tokio::test]
async fn declines_bad_or_longer_rewrites() {
    let longer = json!({"rewritten": format!("{DOC}!")}).to_string();
    for reply in [
        longer.as_str(),
        "nope",
        r#"{"text": "x"}"#,
        r#"{"rewritten": 1}"#,
        r#"{"rewritten": "  "}"#,
    ] {
        let llm = ScriptedLlm::with_replies([reply]);
        let out = rewrite_from_suggestions(&llm, &prompts(), DOC, &[])
            .await
            .unwrap();
        assert!(out.outcome.is_err(), "reply {reply}");
        assert_eq!(out.llm_calls, 1);
    }
    // Same length is allowed: "not longer".
    let same = json!({"rewritten": DOC}).to_string();
    let llm = ScriptedLlm::with_replies([same]);
    assert!(
        rewrite_from_suggestions(&llm, &prompts(), DOC, &[])
            .await
            .unwrap()
            .outcome
            .is_ok()
    );
    let llm = ScriptedLlm::new();
    llm.push_error(empty_reply());
    assert!(
        rewrite_from_suggestions(&llm, &prompts(), DOC, &[])
            .await
            .unwrap()
            .outcome
            .is_err()
    );
}

#[tokio::test]
async fn provider_errors_propagate() {
    let llm = ScriptedLlm::new();
    llm.push_error(transient());
    assert!(
        rewrite_from_suggestions(&llm, &prompts(), DOC, &[])
            .await
            .unwrap_err()
            .is_transient()
    );
}
