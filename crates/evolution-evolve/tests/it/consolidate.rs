use evolution_evolve::consolidate::consolidate_appendix;
use evolution_testkit::ScriptedLlm;

use crate::support::{prompts, transient};

fn notes(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

#[tokio::test]
async fn g1_single_note_passes_through_without_a_call() {
    let llm = ScriptedLlm::new();
    let out = consolidate_appendix(&llm, &prompts(), &notes(&["note1"])).await;
    assert_eq!(out.notes, notes(&["note1"]));
    assert_eq!(out.llm_calls, 0);
    assert_eq!(llm.call_count(), 0);
}

#[tokio::test]
async fn consolidates_and_sends_system_plus_user() {
    let llm = ScriptedLlm::with_replies([r#"{"notes": ["merged a+b", "c"]}"#]);
    let out = consolidate_appendix(&llm, &prompts(), &notes(&["a", "b", "c"])).await;
    assert_eq!(out.notes, notes(&["merged a+b", "c"]));
    assert_eq!(out.fallback, None);
    let request = &llm.requests()[0];
    insta::assert_snapshot!("consolidate_prompt", request.full_text());
}

#[tokio::test]
async fn g2_g3_return_the_input() {
    let input = notes(&["a", "b", "c"]);
    for reply in [
        r#"{"notes": []}"#,
        r#"{"notes": ["1", "2", "3", "4"]}"#,
        r#"{"notes": ["ok", "  "]}"#,
        r#"{"notes": ["ok", 3]}"#,
        r#"{"notes": "a"}"#,
        "garbage",
    ] {
        let llm = ScriptedLlm::with_replies([reply]);
        let out = consolidate_appendix(&llm, &prompts(), &input).await;
        assert_eq!(out.notes, input, "reply {reply}");
        assert!(out.fallback.is_some());
        assert_eq!(out.llm_calls, 1);
    }
    // G3: any exception, a provider error included, returns the input.
    let llm = ScriptedLlm::new();
    llm.push_error(transient());
    let out = consolidate_appendix(&llm, &prompts(), &input).await;
    assert_eq!(out.notes, input);
    // Equal length passes here; G4 (the caller) rejects it.
    let llm = ScriptedLlm::with_replies([r#"{"notes": ["x", "y", "z"]}"#]);
    let out = consolidate_appendix(&llm, &prompts(), &input).await;
    assert_eq!(out.notes, notes(&["x", "y", "z"]));
}
