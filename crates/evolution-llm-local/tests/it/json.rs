use evolution_types::{ChatMessage, ChatOptions, LlmProvider};
use serde_json::{Value, json};

use crate::support::model;

/// The evolve-edits contract: a list of edits to a skill file.
fn evolve_edits_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "edits": {
                "type": "array",
                "minItems": 1,
                "maxItems": 2,
                "items": {
                    "type": "object",
                    "properties": {
                        "op": {"enum": ["append", "insert_after", "replace", "delete"]},
                        "target": {"type": "string", "maxLength": 60},
                        "content": {"type": "string", "maxLength": 160}
                    },
                    "required": ["op", "target", "content"]
                }
            }
        },
        "required": ["edits"]
    })
}

const PROMPTS: [&str; 20] = [
    "The skill forgets to mention that dates must be ISO 8601. Propose edits.",
    "Add a rule: always answer in English.",
    "Remove the outdated section about Python 2.",
    "Replace the sentence 'Be verbose.' with 'Be concise.'",
    "The agent keeps calling the search tool twice. Fix the instructions.",
    "Insert a step after '## Steps' telling the agent to read the README first.",
    "The output format section lacks an example. Add one.",
    "Delete the duplicated warning about secrets.",
    "Users complain the summaries are too long. Propose a fix.",
    "Append a checklist for code review at the end of the skill.",
    "The skill should ask for clarification when the request is ambiguous.",
    "Rename the heading 'Misc' to 'Notes'.",
    "Add a note that tests must pass before committing.",
    "The agent ignores timezones. Add guidance.",
    "Make the tone friendlier in the greeting line.",
    "The skill lists a deprecated API endpoint /v1/old. Update it to /v2/new.",
    "Add an instruction to cite sources with links.",
    "Remove the line that says 'never use tables'.",
    "Errors from the build are not reported. Add a reporting step.",
    "Propose one small improvement to a skill that writes commit messages.",
];

fn assert_edits_shape(reply: &str) {
    let doc: Value = serde_json::from_str(reply).unwrap_or_else(|e| panic!("{e}: {reply}"));
    let obj = doc.as_object().expect("object");
    assert_eq!(obj.len(), 1, "{reply}");
    let edits = obj["edits"].as_array().expect("edits array");
    assert!((1..=2).contains(&edits.len()), "{reply}");
    for edit in edits {
        let edit = edit.as_object().expect("edit object");
        assert_eq!(edit.len(), 3, "{reply}");
        let op = edit["op"].as_str().expect("op");
        assert!(
            ["append", "insert_after", "replace", "delete"].contains(&op),
            "{reply}"
        );
        assert!(
            edit["target"]
                .as_str()
                .is_some_and(|t| t.chars().count() <= 60),
            "{reply}"
        );
        assert!(
            edit["content"]
                .as_str()
                .is_some_and(|c| c.chars().count() <= 160),
            "{reply}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn evolve_edits_schema_gives_valid_json_for_20_prompts() {
    let llm = model(1).await;
    let options = ChatOptions::default()
        .with_json_schema(evolve_edits_schema())
        .with_max_tokens(900);
    for prompt in PROMPTS {
        let messages = [
            ChatMessage::system(
                "You improve agent skill files. Reply with JSON: {\"edits\":[{\"op\":...,\"target\":...,\"content\":...}]}.",
            ),
            ChatMessage::user(prompt),
        ];
        let reply = llm
            .chat(&messages, &options)
            .await
            .unwrap_or_else(|err| panic!("{prompt}: {err}"));
        assert_edits_shape(&reply.content);
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

/// One request per kernel JSON contract, with the kernel's own schema for its tag: the reply
/// must be one the kernel reads (parsed by its JSON reader, required fields present).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_kernel_reply_schema_gives_a_reply_the_kernel_reads() {
    let llm = model(1).await;
    let tags = evolution_evolve::REPLY_SCHEMA_TAGS
        .iter()
        .chain(evolution_diagnose::REPLY_SCHEMA_TAGS.iter());
    for tag in tags {
        let schema = evolution_evolve::reply_schema(tag)
            .or_else(|| evolution_diagnose::reply_schema(tag))
            .unwrap_or_else(|| panic!("{tag} has no schema"));
        let prompt = format!(
            "Task `{tag}`. The skill says: '# Dates\\nAlways answer with ISO 8601 dates.' \
             The agent answered '03/04/2024' where '2024-04-03' was expected. \
             Reply with one short JSON object for this task."
        );
        let options = ChatOptions::default()
            .with_json_schema(schema.clone())
            .with_tag(*tag)
            .with_max_tokens(1024);
        let reply = llm
            .chat(&[ChatMessage::user(prompt)], &options)
            .await
            .unwrap_or_else(|err| panic!("{tag}: {err}"));
        let doc = evolution_evolve::parse_llm_json(&reply.content)
            .unwrap_or_else(|| panic!("{tag}: the kernel cannot read {:?}", reply.content));
        for name in schema["required"].as_array().into_iter().flatten() {
            let name = name.as_str().unwrap_or_default();
            assert!(
                doc.contains_key(name),
                "{tag}: `{name}` missing in {}",
                reply.content
            );
        }
        for key in ["edits", "extract_edits", "verify_edits"] {
            if let Some(edits) = doc.get(key) {
                let edits: Vec<evolution_types::Edit> = serde_json::from_value(edits.clone())
                    .unwrap_or_else(|e| panic!("{tag}: {e}: {}", reply.content));
                assert!(
                    edits
                        .iter()
                        .all(|e| !matches!(e.op, evolution_types::EditOp::Other(_))),
                    "{}",
                    reply.content
                );
            }
        }
    }
}
