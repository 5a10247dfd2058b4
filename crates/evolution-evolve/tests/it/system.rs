use evolution_evolve::EvolveError;
use evolution_evolve::feedback::FEEDBACK_NOT_APPLIED;
use evolution_testkit::{MemoryStore, ScriptedLlm};
use evolution_types::{EditStatus, EvolutionStatus, SystemCasePack, TargetType};
use serde_json::json;

use crate::format::case;
use crate::support::{assert_accepted, evolve_options, evolver, transient};

const SYSTEM: &str = "You are a video QA agent.\n\n## 能力边界\nOnly answer from the video.\n\n## 输出格式\nReply with JSON {\"answer\": ...}.\n\n## 视频树结构\nSegments nest by level.\n\n## 策略\nExplore before answering.\nSubmit when confident.\n";

fn store() -> MemoryStore {
    MemoryStore::new().with("system.md", SYSTEM)
}

fn pack(failures: usize) -> SystemCasePack {
    SystemCasePack {
        stats: serde_json::from_value(json!({"early_submit": 4})).unwrap(),
        failure_cases: (0..failures).map(|i| case(&format!("s{i}"), 12)).collect(),
        success_cases: Vec::new(),
    }
}

#[tokio::test]
async fn no_failures_is_skipped_without_a_call() {
    let llm = ScriptedLlm::new();
    let record = evolver(&llm, evolve_options())
        .system_prompt(&pack(0), &store())
        .await
        .unwrap();
    assert_eq!(record.status, EvolutionStatus::Skipped);
    assert_eq!(record.target_type, TargetType::System);
    assert_eq!(llm.call_count(), 0);
}

#[tokio::test]
async fn edits_outside_frozen_sections_are_accepted() {
    let llm = ScriptedLlm::with_replies([json!({"edits": [
        {"op": "replace", "target": "Submit when confident.", "content": "Submit only after checking two segments."}
    ]})
    .to_string()]);
    let record = evolver(&llm, evolve_options())
        .system_prompt(&pack(1), &store())
        .await
        .unwrap();
    assert_accepted(&record);
    assert_eq!(record.target_file, "system.md");
    insta::assert_snapshot!("system_prompt_sent", llm.requests()[0].last_user());
    insta::assert_snapshot!("system_document", record.evolved_content);
}

#[tokio::test]
async fn frozen_section_edits_are_refused_then_rejected() {
    let frozen = json!({"edits": [{"op": "replace", "target": "Only answer from the video.", "content": "Answer anything."}]}).to_string();
    let llm = ScriptedLlm::with_replies([frozen.clone(), frozen]);
    let record = evolver(&llm, evolve_options())
        .system_prompt(&pack(1), &store())
        .await
        .unwrap();
    assert_eq!(record.status, EvolutionStatus::Rejected);
    assert_eq!(record.evolved_content, SYSTEM);
    assert_eq!(record.apply_report[0].status, EditStatus::SkippedProtected);
    assert_eq!(record.llm_calls, 2);
    assert!(
        llm.requests()[1]
            .last_user()
            .starts_with(FEEDBACK_NOT_APPLIED)
    );
}

#[tokio::test]
async fn errors_propagate() {
    let llm = ScriptedLlm::new();
    llm.push_error(transient());
    let err = evolver(&llm, evolve_options())
        .system_prompt(&pack(1), &store())
        .await
        .unwrap_err();
    assert!(matches!(err, EvolveError::Llm(_)));
    let err = evolver(&llm, evolve_options())
        .system_prompt(&pack(1), &MemoryStore::new())
        .await
        .unwrap_err();
    assert!(matches!(err, EvolveError::Store { .. }));
}
