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
