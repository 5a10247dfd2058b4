use evolution_evolve::{EvolveOptions, Evolver, tool_prompt_files};
use evolution_testkit::{MemoryStore, ScriptedLlm};
use evolution_types::{EditStatus, EvolutionStatus, TargetType, ToolCasePack};
use serde_json::{Value, json};

use crate::format::span;
use crate::support::{evolve_options, prompts};

const EXTRACT: &str =
    "Extract what the node shows.\nList every object.\n\n## 输出格式\n{\"objects\": [...]}\n";
const VERIFY: &str =
    "Verify the extraction.\nFlag anything not visible.\n\n## 输出格式\n{\"ok\": true}\n";

fn store() -> MemoryStore {
    MemoryStore::new()
        .with("view_node_extract.md", EXTRACT)
        .with("view_node_verify.md", VERIFY)
}

fn pack(spans: usize) -> ToolCasePack {
    ToolCasePack {
        tool_name: "view_node".to_owned(),
        target_files: vec![
            "view_node_extract.md".to_owned(),
            "view_node_verify.md".to_owned(),
        ],
        stats: serde_json::from_value(json!({"mean_completeness": 0.4})).unwrap(),
        failure_spans: (0..spans)
            .map(|i| span(&format!("q{i}"), "two birds"))
            .collect(),
        success_spans: Vec::new(),
    }
}

fn contents(record_json: &str) -> (String, String) {
    let value: Value = serde_json::from_str(record_json).unwrap();
    (
        value["extract"].as_str().unwrap().to_owned(),
        value["verify"].as_str().unwrap().to_owned(),
    )
}

#[tokio::test]
async fn evolved_content_is_json_even_when_skipped() {
    let llm = ScriptedLlm::new();
    let record = Evolver::new(&llm)
        .with_prompts(prompts())
        .with_options(evolve_options())
        .tool(&pack(0), &store())
        .await
        .unwrap();
    assert_eq!(record.status, EvolutionStatus::Skipped);
    assert_eq!(record.target_type, TargetType::Tool);
    assert_eq!(
        contents(&record.evolved_content),
        (EXTRACT.to_owned(), VERIFY.to_owned())
    );
    assert_eq!(record.original_content, record.evolved_content);
    let llm =
        ScriptedLlm::with_replies([r#"{"suggestions":[],"extract_edits":[],"verify_edits":[]}"#]);
    let record = Evolver::new(&llm)
        .with_prompts(prompts())
        .with_options(evolve_options())
        .tool(&pack(1), &store())
        .await
        .unwrap();
    assert_eq!(record.status, EvolutionStatus::Skipped);
    assert!(
        serde_json::from_str::<Value>(&record.evolved_content)
            .unwrap()
            .get("extract")
            .is_some()
    );
}

#[tokio::test]
async fn pooled_budget_is_split_back_by_source() {
    let reply = json!({
        "extract_edits": [
            {"op": "insert_after", "target": "List every object.", "content": "Count repeated objects separately."},
            {"op": "append", "content": "Mention colours."},
            {"op": "replace", "target": "{\"objects\": [...]}", "content": "{}"}
        ],
        "verify_edits": [
            {"op": "insert_after", "target": "Flag anything not visible.", "content": "Recount the objects."}
        ]
    });
    // Budget 3 of 4 pooled edits: the ranking keeps verify #3, extract #0 and the frozen-section edit #2.
    let llm =
        ScriptedLlm::with_replies([reply.to_string(), r#"{"ranking": [3, 0, 2]}"#.to_owned()]);
    let options = EvolveOptions {
        edit_budget: 3,
        ..evolve_options()
    };
    let record = Evolver::new(&llm)
        .with_prompts(prompts())
        .with_options(options.clone())
        .tool(&pack(2), &store())
        .await
        .unwrap();
    assert_eq!(
        record.status,
        EvolutionStatus::Accepted,
        "{}",
        record.reason
    );
    assert_eq!(record.llm_calls, 2);
    assert_eq!(record.target_file, "view_node_extract.md");
    let sources: Vec<_> = record
        .edits
        .iter()
        .map(|e| e.extra["_src"].as_str().unwrap())
        .collect();
    assert_eq!(sources, vec!["verify", "extract", "extract"]);
    let statuses: Vec<_> = record
        .apply_report
        .iter()
        .map(|r| (r.index, r.status.clone()))
        .collect();
    assert_eq!(
        statuses,
        vec![
            (1, EditStatus::AppliedInsertAfter),
            (2, EditStatus::AppliedInsertAfter),
            (3, EditStatus::SkippedProtected)
        ]
    );
    let (extract, verify) = contents(&record.evolved_content);
    assert!(
        extract.contains("Count repeated objects separately."),
        "{extract}"
    );
    assert!(!extract.contains("Mention colours."));
    assert!(verify.contains("Recount the objects."), "{verify}");
    let rank_prompt = llm.requests()[1].last_user().to_owned();
    assert!(rank_prompt.contains("\"file\": \"verify\""));
    insta::assert_snapshot!("tool_prompt_sent", llm.requests()[0].last_user());
    insta::assert_snapshot!("tool_rank_prompt", rank_prompt);
    insta::assert_snapshot!("tool_extract_document", extract);
    insta::assert_snapshot!("tool_verify_document", verify);
}

#[tokio::test]
async fn missing_edit_lists_are_a_json_failure() {
    let llm = ScriptedLlm::with_replies([
        r#"{"edits": []}"#,
        r#"{"verify_edits": [{"op": "append", "content": "Be strict."}]}"#,
    ]);
    let record = Evolver::new(&llm)
        .with_prompts(prompts())
        .with_options(evolve_options())
        .tool(&pack(1), &store())
        .await
        .unwrap();
    assert_eq!(record.status, EvolutionStatus::Accepted);
    assert!(
        llm.requests()[1]
            .last_user()
            .contains("neither `extract_edits` nor `verify_edits`")
    );
    let (extract, verify) = contents(&record.evolved_content);
    assert_eq!(extract, EXTRACT);
    assert!(verify.contains("Be strict."));
}

#[test]
fn prompt_files_come_from_the_pack_or_the_tool_name() {
    assert_eq!(
        tool_prompt_files(&pack(0)),
        (
            "view_node_extract.md".to_owned(),
            "view_node_verify.md".to_owned()
        )
    );
    let bare = ToolCasePack {
        tool_name: "observe_frame".to_owned(),
        ..ToolCasePack::default()
    };
    assert_eq!(
        tool_prompt_files(&bare),
        (
            "observe_frame_extract.md".to_owned(),
            "observe_frame_verify.md".to_owned()
        )
    );
}
