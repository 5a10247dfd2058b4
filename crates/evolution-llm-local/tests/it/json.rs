use evolution_types::{ChatMessage, ChatOptions, LlmProvider};
use serde_json::{Value, json};

use crate::replies::{
    EDIT_PROMPTS, KERNEL_CASES, edits_reply_error, edits_request, kernel_reply_error,
    kernel_request, kernel_schemas,
};
use crate::support::model;

/// A request for edits gets a reply the edits schema admits (`cargo xtask bench local` sends
/// all twenty and counts the valid ones).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn evolve_edits_schema_gives_valid_json() {
    let llm = model(1).await;
    for prompt in &EDIT_PROMPTS[..1] {
        let (messages, options) = edits_request(prompt);
        let reply = llm
            .chat(&messages, &options)
            .await
            .unwrap_or_else(|err| panic!("{prompt}: {err}"));
        if let Some(problem) = edits_reply_error(&reply.content) {
            panic!("{prompt}: {problem}: {}", reply.content);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_mode_without_schema_gives_an_object_and_other_contracts_hold() {
    let llm = model(1).await;
    let reply = llm
        .chat(
            &[ChatMessage::user(
                "Describe a cat as JSON with a name and an age.",
            )],
            &ChatOptions::json().with_max_tokens(200),
        )
        .await
        .expect("json mode");
    let doc: Value = serde_json::from_str(&reply.content).expect("valid JSON");
    assert!(doc.is_object(), "{}", reply.content);

    // Rank indices: an array of distinct-looking integers.
    let rank = json!({"type": "object", "properties": {"ranking": {
        "type": "array", "items": {"type": "integer"}, "minItems": 3, "maxItems": 3}},
        "required": ["ranking"]});
    let reply = llm
        .chat(
            &[ChatMessage::user(
                "Rank the candidates 0, 1 and 2 from best to worst.",
            )],
            &ChatOptions::default()
                .with_json_schema(rank)
                .with_max_tokens(100),
        )
        .await
        .expect("rank");
    let doc: Value = serde_json::from_str(&reply.content).expect("valid JSON");
    let ranking = doc["ranking"].as_array().expect("ranking");
    assert_eq!(ranking.len(), 3);
    assert!(ranking.iter().all(Value::is_i64), "{}", reply.content);

    // Judge reply: a verdict enum, a bounded score, a reason.
    let judge = json!({"type": "object", "properties": {
        "verdict": {"enum": ["pass", "fail"]},
        "score": {"type": "number"},
        "reason": {"type": "string", "maxLength": 120}},
        "required": ["verdict", "score", "reason"]});
    let reply = llm
        .chat(
            &[ChatMessage::user(
                "Judge: the answer '4' to '2+2' — is it correct?",
            )],
            &ChatOptions::default()
                .with_json_schema(judge)
                .with_max_tokens(150),
        )
        .await
        .expect("judge");
    let doc: Value = serde_json::from_str(&reply.content).expect("valid JSON");
    assert!(["pass", "fail"].contains(&doc["verdict"].as_str().expect("verdict")));
    assert!(doc["score"].is_number());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_json_reply_cut_off_by_max_tokens_is_a_content_error() {
    let llm = model(1).await;
    let long = json!({"type": "string", "minLength": 200});
    let err = llm
        .chat(
            &[ChatMessage::user("Say something.")],
            &ChatOptions::default()
                .with_json_schema(long)
                .with_max_tokens(8),
        )
        .await
        .expect_err("cut off");
    assert!(err.is_content(), "{err}");
    assert!(err.message().contains("cut off"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unsupported_schema_is_a_bad_request() {
    let llm = model(1).await;
    let err = llm
        .chat(
            &[ChatMessage::user("hi")],
            &ChatOptions::default().with_json_schema(json!({"type": "string", "pattern": "^a"})),
        )
        .await
        .expect_err("unsupported");
    assert_eq!(err.kind(), evolution_types::LlmErrorKind::BadRequest);
    assert!(err.message().contains("pattern"), "{err}");
}

/// The kernel's reply schemas in groups of two to four, one test each, so that no test runs
/// long: one request per schema.
const SCHEMA_GROUPS: [&[&str]; 5] = [
    &["evolve.skill", "evolve.system", "evolve.tool"],
    &["evolve.rank", "evolve.consolidate", "evolve.rewrite"],
    &["judge.span", "judge.missed_nodes"],
    &["judge.skill_adherence", "judge.confirmation_bias"],
    &[
        "judge.evidence_sufficiency",
        "judge.defect_vs_lapse",
        "judge.reasoning_sub",
        "judge.rubric",
    ],
];

/// One request per kernel JSON contract of `tags`, with the kernel's own schema for its tag:
/// each reply must be one the kernel reads.
async fn kernel_schemas_give_replies_the_kernel_reads(tags: &[&str]) {
    let llm = model(1).await;
    let schemas = kernel_schemas();
    for tag in tags {
        let (_, schema) = schemas
            .iter()
            .find(|(known, _)| known == tag)
            .unwrap_or_else(|| panic!("{tag} is not a kernel schema"));
        let (messages, options) = kernel_request(tag, schema, KERNEL_CASES[0]);
        let reply = llm
            .chat(&messages, &options)
            .await
            .unwrap_or_else(|err| panic!("{tag}: {err}"));
        if let Some(problem) = kernel_reply_error(schema, &reply.content) {
            panic!("{tag}: {problem}: {}", reply.content);
        }
    }
}

/// The schemas of the calls that propose edits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edit_proposing_schemas_give_replies_the_kernel_reads() {
    kernel_schemas_give_replies_the_kernel_reads(SCHEMA_GROUPS[0]).await;
}

/// The schemas of the calls that rank, consolidate and rewrite.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rank_consolidate_rewrite_schemas_give_replies_the_kernel_reads() {
    kernel_schemas_give_replies_the_kernel_reads(SCHEMA_GROUPS[1]).await;
}

/// The schemas of the span and missed-nodes judges (the longest replies).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn span_and_missed_nodes_judge_schemas_give_replies_the_kernel_reads() {
    kernel_schemas_give_replies_the_kernel_reads(SCHEMA_GROUPS[2]).await;
}

/// The schemas of the skill-adherence and confirmation-bias judges.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn adherence_and_bias_judge_schemas_give_replies_the_kernel_reads() {
    kernel_schemas_give_replies_the_kernel_reads(SCHEMA_GROUPS[3]).await;
}

/// The other judges' schemas.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn evidence_and_rubric_judge_schemas_give_replies_the_kernel_reads() {
    kernel_schemas_give_replies_the_kernel_reads(SCHEMA_GROUPS[4]).await;
}

/// Every kernel schema is in exactly one of the groups the tests above send.
#[test]
fn every_kernel_schema_is_in_one_tested_group() {
    let grouped: Vec<&str> = SCHEMA_GROUPS
        .iter()
        .flat_map(|g| g.iter().copied())
        .collect();
    for (tag, _) in kernel_schemas() {
        let times = grouped.iter().filter(|t| **t == tag).count();
        assert_eq!(times, 1, "{tag} is in {times} tested groups");
    }
    let tags =
        evolution_evolve::REPLY_SCHEMA_TAGS.len() + evolution_diagnose::REPLY_SCHEMA_TAGS.len();
    assert_eq!(kernel_schemas().len(), tags, "a kernel tag has no schema");
    assert_eq!(
        grouped.len(),
        tags,
        "a group names a tag the kernel does not have"
    );
}
