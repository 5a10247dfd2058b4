use std::sync::Mutex;

use evolution_evolve::reflect::{
    Failure, ReflectError, ReflectOptions, ReflectPrompts, StopReason, reflect_loop,
};
use evolution_evolve::{EditBudgetSchedule, EvolvePrompts};
use evolution_testkit::ScriptedLlm;
use serde_json::{Value, json};

use crate::support::{empty_reply, transient};

const DOC: &str = "---\nname: notes\n---\n\n# Notes\n\n1. Group changes by area.\n";

fn failures(ids: &[&str]) -> Vec<Failure> {
    ids.iter()
        .map(|id| Failure {
            id: (*id).to_owned(),
            question: format!("question {id}"),
            fail_reason: format!("{id} failed"),
            ..Failure::default()
        })
        .collect()
}

fn options(rounds: u32) -> ReflectOptions {
    ReflectOptions {
        rounds,
        batch_size: 4,
        schedule: EditBudgetSchedule::Constant { max_edits: 8 },
        rank_prompts: EvolvePrompts::builtin(),
        checks: Default::default(),
    }
}

fn reflection(edits: Value) -> String {
    json!({"suggestions": [], "edits": edits}).to_string()
}

fn meta(addressed: &[&str], open: &[&str]) -> String {
    let open: Vec<Value> = open
        .iter()
        .map(|id| json!({"id": id, "why": "w"}))
        .collect();
    json!({"addressed": addressed, "unaddressed": open, "summary": "s"}).to_string()
}

async fn run(
    llm: &ScriptedLlm,
    failures: &[Failure],
    rounds: u32,
) -> Result<evolution_evolve::reflect::Reflection, ReflectError> {
    reflect_loop(
        llm,
        &ReflectPrompts::builtin(),
        DOC,
        failures,
        &options(rounds),
        &|_: &str| {},
    )
    .await
}

#[tokio::test]
async fn a_candidate_addressing_every_failure_stops_the_loop() {
    let llm = ScriptedLlm::with_replies([
        reflection(json!([{"op": "append", "target": "", "content": "2. Name breaking changes."}])),
        meta(&["t1", "t2"], &[]),
    ]);
    let steps = Mutex::new(Vec::new());
    let out = reflect_loop(
        &llm,
        &ReflectPrompts::builtin(),
        DOC,
        &failures(&["t1", "t2"]),
        &options(3),
        &|step: &str| steps.lock().unwrap().push(step.to_owned()),
    )
    .await
    .unwrap();
    assert_eq!(out.stop, StopReason::AllAddressed { round: 1 });
    assert!(out.document.contains("2. Name breaking changes."));
    assert!(out.document.starts_with("---\nname: notes\n---"));
    assert_eq!((out.rounds.len(), out.llm_calls), (1, 2));
    assert!(out.rounds[0].accepted);
    assert_eq!(out.rounds[0].meta.addressed, ["t1", "t2"]);
    let steps = steps.into_inner().unwrap();
    assert!(
        steps.iter().any(|s| s.contains("reflecting on batch 1/1")),
        "{steps:?}"
    );
    assert!(
        steps.iter().any(|s| s.contains("meta-reflecting")),
        "{steps:?}"
    );
    // The prompt shows the failures.
    assert!(llm.requests()[0].full_text().contains("t2 failed"));
}

#[tokio::test]
async fn ids_the_model_invents_are_ignored_and_unnamed_ones_stay_open() {
    let llm = ScriptedLlm::with_replies([
        reflection(json!([{"op": "append", "target": "", "content": "2. More."}])),
        meta(&["t1", "ghost"], &[]),
    ]);
    let out = run(&llm, &failures(&["t1", "t2"]), 1).await.unwrap();
    let m = &out.rounds[0].meta;
    assert_eq!(m.addressed, ["t1"]);
    assert_eq!(m.unaddressed, [("t2".to_owned(), "not judged".to_owned())]);
    assert_eq!(out.stop, StopReason::RoundsExhausted { rounds: 1 });
    assert_eq!(out.stop.to_string(), "ran all 1 rounds");
}

#[tokio::test]
async fn a_content_failure_is_no_proposal_and_a_provider_failure_an_error() {
    let llm = ScriptedLlm::new();
    llm.push_error(empty_reply());
    let out = run(&llm, &failures(&["t1"]), 2).await.unwrap();
    assert_eq!(
        out.stop,
        StopReason::UnreadableReply {
            round: 1,
            batches: 1
        }
    );
    assert!(
        out.stop.to_string().contains("could not be read"),
        "{}",
        out.stop
    );
    assert_eq!(out.document, DOC);

    let llm = ScriptedLlm::new();
    llm.push_error(transient());
    let err = run(&llm, &failures(&["t1"]), 2).await.unwrap_err();
    assert!(
        matches!(err, ReflectError::Llm { ref tag, .. } if tag == "skill_evolve.reflect"),
        "{err}"
    );
}

#[test]
fn builtin_prompts_are_the_default() {
    assert_eq!(ReflectPrompts::default(), ReflectPrompts::builtin());
    assert!(
        ReflectPrompts::builtin()
            .reflect
            .contains("{{trajectories}}")
    );
}

#[tokio::test]
async fn an_unreadable_reply_is_reported_as_unreadable_and_an_empty_one_as_no_edit() {
    // JSON of the wrong shape (edits that are not edits): unreadable, not "no edit".
    let llm = ScriptedLlm::with_replies([r#"{"edits": "append a rule"}"#.to_owned()]);
    let out = run(&llm, &failures(&["t1"]), 2).await.unwrap();
    assert_eq!(
        out.stop,
        StopReason::UnreadableReply {
            round: 1,
            batches: 1
        }
    );
    // A readable reply with no edits: "no edit".
    let llm = ScriptedLlm::with_replies([reflection(json!([]))]);
    let out = run(&llm, &failures(&["t1"]), 2).await.unwrap();
    assert_eq!(out.stop, StopReason::NoEdit { round: 1 });
    assert_eq!(
        out.stop.to_string(),
        "round 1: the reflection proposed no edit"
    );
}

#[tokio::test]
async fn edits_that_repeat_the_prompts_example_text_are_dropped_with_a_reason() {
    // What a small local model replied: the reply format's own example values.
    let llm = ScriptedLlm::with_replies([reflection(json!([{
        "op": "append", "target": "",
        "content": "the new text (empty for )",
        "reason": "which failure this prevents, in one"
    }]))]);
    let out = run(&llm, &failures(&["t1"]), 2).await.unwrap();
    assert_eq!(
        out.stop,
        StopReason::PlaceholderEdits {
            round: 1,
            dropped: 1
        }
    );
    assert_eq!(out.document, DOC);
    assert_eq!(llm.call_count(), 1, "no ranking nor meta-reflection");
    let dropped = &out.rounds[0].dropped;
    assert_eq!(dropped.len(), 1, "{dropped:?}");
    assert!(
        dropped[0].contains("repeats the prompt's example text")
            && dropped[0].contains("the new text (empty for delete)"),
        "{dropped:?}"
    );
    assert!(
        out.stop.to_string().contains("example text"),
        "{}",
        out.stop
    );

    // Only the echo is dropped; a real edit of the same reply is used, even one whose
    // reason shares a few words with the example.
    let llm = ScriptedLlm::with_replies([
        reflection(json!([
            {"op": "append", "target": "", "content": "- Name breaking changes.",
             "reason": "which failure this prevents: t1 listed none"},
            {"op": "append", "target": "", "content": "x", "reason": "Which failure this prevents, in one sentence."}
        ])),
        meta(&["t1"], &[]),
    ]);
    let out = run(&llm, &failures(&["t1"]), 1).await.unwrap();
    assert_eq!(out.stop, StopReason::AllAddressed { round: 1 });
    assert_eq!(out.rounds[0].selected.len(), 1);
    assert_eq!(
        out.rounds[0].dropped.len(),
        1,
        "{:?}",
        out.rounds[0].dropped
    );
    assert!(out.document.contains("- Name breaking changes."));
}

#[tokio::test]
async fn the_example_texts_follow_the_template_in_use() {
    // An override whose format shows other example values: those are what is refused.
    let mut prompts = ReflectPrompts::builtin();
    prompts.reflect = prompts.reflect.replace(
        "the new text (empty for delete)",
        "your rule, in the skill's words",
    );
    let reply = || {
        reflection(
            json!([{"op": "append", "target": "", "content": "your rule, in the skill's words"}]),
        )
    };
    let llm = ScriptedLlm::with_replies([reply()]);
    let out = reflect_loop(
        &llm,
        &prompts,
        DOC,
        &failures(&["t1"]),
        &options(1),
        &|_: &str| {},
    )
    .await
    .unwrap();
    assert!(
        matches!(out.stop, StopReason::PlaceholderEdits { .. }),
        "{}",
        out.stop
    );
    // The built-in template has no such example, so the same reply is an edit there.
    let llm = ScriptedLlm::with_replies([reply(), meta(&["t1"], &[])]);
    let out = run(&llm, &failures(&["t1"]), 1).await.unwrap();
    assert_eq!(out.stop, StopReason::AllAddressed { round: 1 });
}
