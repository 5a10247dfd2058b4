//! The ports compose across crates: a scripted provider, stores and run log
//! driven through trait objects only, as a user's harness would.

use evolution_testkit::{MemoryRunLog, MemoryStore, ScriptedLlm, fixtures};
use evolution_types::{
    ChatMessage, ChatOptions, Edit, LlmProvider, RunLog, SkillStore, resolve_skill_file,
};

#[tokio::test]
async fn a_harness_can_work_through_trait_objects_only() {
    let skills = MemoryStore::new()
        .with(
            "counting.md",
            fixtures::skill_document("counting", "Counting", "Count twice."),
        )
        .with(
            "default-strategy.md",
            fixtures::skill_document("default", "Default", "Be careful."),
        );
    let log = MemoryRunLog::new();
    log.insert_predictions([
        fixtures::prediction("run-1", "q1", "Counting", false),
        fixtures::prediction("run-1", "q2", "Ordering", true),
    ]);
    let llm = ScriptedLlm::with_replies([r#"{"edits":[{"op":"append","content":"Recount."}]}"#]);

    let store: &dyn SkillStore = &skills;
    let run_log: &dyn RunLog = &log;
    let provider: &dyn LlmProvider = &llm;

    let failures: Vec<_> = run_log
        .get_predictions("run-1", None)
        .await
        .unwrap()
        .into_iter()
        .filter(|p| !p.correct)
        .collect();
    assert_eq!(failures.len(), 1);
    let file = resolve_skill_file(store, &failures[0].task_type).unwrap();
    assert_eq!(file, "counting.md");
    let skill = store.read_skill(&file).unwrap();

    let reply = provider
        .chat(
            &[ChatMessage::user(format!("Improve:\n{skill}"))],
            &ChatOptions::json(),
        )
        .await
        .unwrap();
    let parsed: serde_json::Value = serde_json::from_str(&reply.content).unwrap();
    let edits: Vec<Edit> = serde_json::from_value(parsed["edits"].clone()).unwrap();
    assert_eq!(edits, [Edit::append("Recount.")]);
    assert!(llm.requests()[0].last_user().contains("Count twice."));
}
