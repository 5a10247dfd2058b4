use evolution_evolve::{EvolveOptions, ToolPromptPair, tool_prompt_pairs};
use evolution_testkit::{MemoryStore, ScriptedLlm};
use evolution_types::{EditStatus, EvolutionRecord, EvolutionStatus, TargetType, ToolCasePack};
use serde_json::{Value, json};

use crate::format::span;
use crate::support::{assert_accepted, evolve_options, evolver};

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

/// The one record of a tool with one pair of prompts.
fn single(records: Vec<EvolutionRecord>) -> EvolutionRecord {
    assert_eq!(records.len(), 1, "{records:?}");
    records.into_iter().next().unwrap()
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
    let record = evolver(&llm, evolve_options())
        .tool(&pack(0), &store())
        .await
        .map(single)
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
    let record = evolver(&llm, evolve_options())
        .tool(&pack(1), &store())
        .await
        .map(single)
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
    let record = evolver(&llm, options.clone())
        .tool(&pack(2), &store())
        .await
        .map(single)
        .unwrap();
    assert_accepted(&record);
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
    let record = evolver(&llm, evolve_options())
        .tool(&pack(1), &store())
        .await
        .map(single)
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

fn pair(extract: &str, verify: &str) -> ToolPromptPair {
    ToolPromptPair {
        extract: extract.to_owned(),
        verify: verify.to_owned(),
    }
}

fn pairs_of(tool: &str, files: &[&str]) -> Vec<ToolPromptPair> {
    tool_prompt_pairs(&ToolCasePack {
        tool_name: tool.to_owned(),
        target_files: files.iter().map(|f| (*f).to_owned()).collect(),
        ..ToolCasePack::default()
    })
}

#[test]
fn prompt_pairs_come_from_the_pack_or_the_tool_name() {
    assert_eq!(
        tool_prompt_pairs(&pack(0)),
        [pair("view_node_extract.md", "view_node_verify.md")]
    );
    assert_eq!(
        pairs_of("observe_frame", &[]),
        [pair("observe_frame_extract.md", "observe_frame_verify.md")]
    );
    // Same stems pair whatever the order; the rest pair in order; a lone file pairs with
    // its own stem's partner; other files are not tool prompts.
    assert_eq!(
        pairs_of(
            "t",
            &[
                "b_verify.md",
                "a_extract.md",
                "notes.txt",
                "b_extract.md",
                "a_verify.md"
            ]
        ),
        [
            pair("a_extract.md", "a_verify.md"),
            pair("b_extract.md", "b_verify.md")
        ]
    );
    assert_eq!(
        pairs_of(
            "t",
            &[
                "x_extract.md",
                "y_verify.md",
                "z_extract.md",
                "x_extract.md"
            ]
        ),
        [
            pair("x_extract.md", "y_verify.md"),
            pair("z_extract.md", "z_verify.md")
        ]
    );
    assert_eq!(
        pairs_of("t", &["only_verify.md"]),
        [pair("only_extract.md", "only_verify.md")]
    );
}

#[tokio::test]
async fn every_pair_of_a_tool_is_evolved() {
    let store = store()
        .with(
            "rerank_extract.md",
            "Rank the nodes.\n\n## 输出格式\n[1, 2]\n",
        )
        .with(
            "rerank_verify.md",
            "Check the ranking.\n\n## 输出格式\n{\"ok\": true}\n",
        );
    let mut two = pack(1);
    two.target_files.push("rerank_extract.md".to_owned());
    two.target_files.push("rerank_verify.md".to_owned());
    let llm = ScriptedLlm::with_replies([
        json!({"extract_edits": [{"op": "append", "content": "List colours too."}], "verify_edits": []}).to_string(),
        json!({"extract_edits": [], "verify_edits": [{"op": "insert_after", "target": "Check the ranking.", "content": "Reject ties."}]}).to_string(),
    ]);
    let records = evolver(&llm, evolve_options())
        .tool(&two, &store)
        .await
        .unwrap();
    let files: Vec<&str> = records.iter().map(|r| r.target_file.as_str()).collect();
    assert_eq!(files, ["view_node_extract.md", "rerank_extract.md"]);
    assert!(
        records
            .iter()
            .all(|r| r.status == EvolutionStatus::Accepted),
        "{records:?}"
    );
    // Each call showed its own pair.
    let asked = llm.requests();
    assert!(
        asked[0]
            .last_user()
            .contains("--- view_node_verify.md ---\nVerify the extraction.")
    );
    assert!(
        asked[1]
            .last_user()
            .contains("--- rerank_extract.md ---\nRank the nodes.")
    );
    assert!(
        asked[1]
            .last_user()
            .contains("--- rerank_verify.md ---\nCheck the ranking.")
    );
    assert!(
        contents(&records[0].evolved_content)
            .0
            .contains("List colours too.")
    );
    let (extract, verify) = contents(&records[1].evolved_content);
    assert_eq!(extract, "Rank the nodes.\n\n## 输出格式\n[1, 2]\n");
    assert!(
        verify.starts_with("Check the ranking.") && verify.contains("Reject ties."),
        "{verify}"
    );
    // One pair alone, through `tool_pair`.
    let llm = ScriptedLlm::with_replies([r#"{"extract_edits": [], "verify_edits": []}"#]);
    let record = evolver(&llm, evolve_options())
        .tool_pair(&two, &pair("rerank_extract.md", "rerank_verify.md"), &store)
        .await
        .unwrap();
    assert_eq!(record.target_file, "rerank_extract.md");
    assert_eq!(record.status, EvolutionStatus::Skipped);
    assert_eq!(llm.call_count(), 1);
}
