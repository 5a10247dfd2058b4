//! Every reply schema agrees with its reader: documents generated from the schema a request
//! tag carries (the one a local model is held to by grammar) are read by that tag's reader.
//!
//! The generator covers the JSON Schema subset the local model's grammar converter accepts;
//! a keyword it does not know fails the test rather than being ignored.

use evolution_diagnose::DiagnosePrompts;
use evolution_diagnose::attribution::{classify_defect_vs_lapse, classify_reasoning_failure};
use evolution_diagnose::judges::{
    JudgeContext, evaluate_span, judge_confirmation_bias, judge_evidence_sufficiency,
    judge_missed_nodes, judge_skill_adherence,
};
use evolution_diagnose::rubric::{RubricCase, judge_rubric};
use evolution_evolve::replies::read_reply;
use evolution_harness::kernel_reply_schema;
use evolution_testkit::ScriptedLlm;
use evolution_testkit::fixtures::{prediction, trace_step};
use evolution_types::{ErrorAttribution, ErrorType, Profile};
use proptest::prelude::*;
use proptest::strategy::{BoxedStrategy, Union};
use serde_json::{Map, Value};

/// Keywords the generator understands: everything the schemas may use.
const KEYWORDS: &[&str] = &[
    "type",
    "enum",
    "const",
    "properties",
    "required",
    "items",
    "minItems",
    "maxItems",
    "minLength",
    "maxLength",
    "anyOf",
    "oneOf",
    "title",
    "description",
];

/// Longest string or list generated past its minimum: bounds keep cases small, the
/// schemas' own maxima still apply.
const SPAN: u64 = 12;

/// Pieces of text that have confused JSON readers: fences, braces, quotes, think tags,
/// region markers, full-width punctuation, control characters.
const TRICKY: &[&str] = &[
    "```json\n{\"a\": 1}\n```",
    "```",
    "{",
    "}",
    "\"",
    "\\",
    "<think>",
    "</think>",
    "<!-- APPENDIX_START -->",
    "：，｛｝",
    "\n",
    "\t",
    " ",
    "\u{0}",
    "é",
];

fn text(min: u64, max: u64) -> BoxedStrategy<String> {
    let max = max.min(min.saturating_add(SPAN));
    let piece = prop_oneof![
        4 => any::<char>().prop_map(String::from),
        2 => "[a-z]{1,6}",
        1 => proptest::sample::select(TRICKY).prop_map(str::to_owned),
    ];
    // Pieces may be longer than one character: cut to the bound in characters.
    proptest::collection::vec(piece, 0..=usize::try_from(max).unwrap())
        .prop_map(move |pieces| {
            pieces
                .concat()
                .chars()
                .take(max as usize)
                .collect::<String>()
        })
        .prop_filter("shorter than minLength", move |s| {
            s.chars().count() as u64 >= min
        })
        .boxed()
}

fn any_json() -> BoxedStrategy<Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        text(0, 8).prop_map(Value::String),
    ];
    leaf.prop_recursive(2, 8, 3, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
            proptest::collection::btree_map("[a-z]{1,4}", inner, 0..3)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
    .boxed()
}

fn count(map: &Map<String, Value>, key: &str) -> Option<u64> {
    map.get(key).map(|v| {
        v.as_u64()
            .unwrap_or_else(|| panic!("`{key}` is not a count"))
    })
}

/// Documents valid under `schema`.
fn documents(schema: &Value) -> BoxedStrategy<Value> {
    let map = schema.as_object().expect("a schema is an object");
    for key in map.keys() {
        assert!(
            KEYWORDS.contains(&key.as_str()),
            "the generator does not know the keyword `{key}`"
        );
    }
    if let Some(value) = map.get("const") {
        return Just(value.clone()).boxed();
    }
    if let Some(values) = map.get("enum") {
        let values = values.as_array().expect("`enum` is a list").clone();
        return proptest::sample::select(values).boxed();
    }
    if let Some(options) = map.get("anyOf").or_else(|| map.get("oneOf")) {
        let options = options.as_array().expect("a list of schemas");
        return Union::new(options.iter().map(documents)).boxed();
    }
    match map.get("type") {
        None => any_json(),
        Some(Value::String(kind)) => typed(kind, map),
        Some(Value::Array(kinds)) => Union::new(
            kinds
                .iter()
                .map(|k| typed(k.as_str().expect("a type name"), map)),
        )
        .boxed(),
        Some(other) => panic!("`type` is {other}"),
    }
}

fn typed(kind: &str, map: &Map<String, Value>) -> BoxedStrategy<Value> {
    match kind {
        "object" => object(map),
        "array" => {
            let items = map.get("items").map_or_else(any_json, documents);
            let min = count(map, "minItems").unwrap_or(0);
            let max = count(map, "maxItems")
                .unwrap_or(u64::MAX)
                .min(min.saturating_add(4));
            proptest::collection::vec(items, min as usize..=max as usize)
                .prop_map(Value::Array)
                .boxed()
        }
        "string" => text(
            count(map, "minLength").unwrap_or(0),
            count(map, "maxLength").unwrap_or(u64::MAX),
        )
        .prop_map(Value::String)
        .boxed(),
        "integer" => any::<i64>().prop_map(Value::from).boxed(),
        "number" => prop_oneof![
            any::<i64>().prop_map(Value::from),
            (-1.0e6f64..1.0e6).prop_map(Value::from),
        ]
        .boxed(),
        "boolean" => any::<bool>().prop_map(Value::Bool).boxed(),
        "null" => Just(Value::Null).boxed(),
        other => panic!("unknown type `{other}`"),
    }
}

/// Every required property, each optional one or not, and sometimes a property the schema
/// does not name (JSON Schema allows it unless told otherwise).
fn object(map: &Map<String, Value>) -> BoxedStrategy<Value> {
    let empty = Map::new();
    let properties = map.get("properties").map_or(&empty, |p| {
        p.as_object().expect("`properties` is an object")
    });
    let required: Vec<&str> = map
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let members: Vec<BoxedStrategy<Option<(String, Value)>>> = properties
        .iter()
        .map(|(name, schema)| {
            let name = name.clone();
            let value = documents(schema);
            if required.contains(&name.as_str()) {
                value.prop_map(move |v| Some((name.clone(), v))).boxed()
            } else {
                proptest::option::of(value.prop_map(move |v| (name.clone(), v))).boxed()
            }
        })
        .collect();
    let extra = proptest::option::weighted(0.2, any_json());
    (members, extra)
        .prop_map(|(members, extra)| {
            let mut out: Map<String, Value> = members.into_iter().flatten().collect();
            if let Some(value) = extra {
                out.insert("x_unnamed_extra".to_owned(), value);
            }
            Value::Object(out)
        })
        .boxed()
}

/// Every tag that carries a kernel schema.
fn tags() -> Vec<&'static str> {
    evolution_evolve::REPLY_SCHEMA_TAGS
        .iter()
        .chain(evolution_diagnose::REPLY_SCHEMA_TAGS.iter())
        .copied()
        .collect()
}

/// A tag and a reply valid under its schema, written as a model might: compact, pretty, or
/// (for the evolve tags) in a ```json fence after a sentence. The judges' reader drops think
/// blocks before it looks for a fence — a think block may itself quote a fenced object — so a
/// fenced judge reply whose strings quote a think tag is not one it can promise to read; a
/// reply decoded under the schema is the bare document, which it always reads.
fn tagged_replies() -> impl Strategy<Value = (&'static str, String)> {
    proptest::sample::select(tags()).prop_flat_map(|tag| {
        let schema = kernel_reply_schema(tag).expect("every listed tag has a schema");
        let styles = if tag.starts_with("evolve.") {
            0..3u8
        } else {
            0..2u8
        };
        (Just(tag), documents(&schema), styles).prop_map(|(tag, doc, style)| {
            let text = match style {
                0 => doc.to_string(),
                1 => serde_json::to_string_pretty(&doc).unwrap(),
                _ => format!("Here is my answer.\n```json\n{doc}\n```\n"),
            };
            (tag, text)
        })
    })
}

/// Whether the reader of a judge tag takes `reply` at the first attempt (each judge retries
/// an unreadable reply, so one call means it was read). The request must carry the tag.
async fn judge_reads(tag: &str, reply: &str) -> bool {
    let llm = ScriptedLlm::with_replies([reply, reply, reply]);
    let prompts = DiagnosePrompts::builtin();
    let profile = Profile::default();
    let predicted = prediction("r", "q1", "Counting", false);
    let step = trace_step("r", "q1", 1, "view", "two birds");
    let trace = [step.clone()];
    let ctx = JudgeContext {
        prediction: &predicted,
        question: "How many birds?",
        answer: "3",
        trace: &trace,
        skill: "Count each bird once.",
        tree: None,
        profile: &profile,
    };
    let attribution = ErrorAttribution {
        question_id: "q1".to_owned(),
        task_type: "Counting".to_owned(),
        error_type: ErrorType::ReasoningFailure,
        cause_category: None,
        lapse_note: None,
        reasoning_failure_type: None,
        evidence: "wrong count".to_owned(),
    };
    let ok = match tag {
        "judge.span" => evaluate_span(&llm, &prompts, &ctx, &step).await.is_ok(),
        "judge.missed_nodes" => judge_missed_nodes(&llm, &prompts, &ctx).await.is_ok(),
        "judge.skill_adherence" => judge_skill_adherence(&llm, &prompts, &ctx).await.is_ok(),
        "judge.confirmation_bias" => judge_confirmation_bias(&llm, &prompts, &ctx).await.is_ok(),
        "judge.evidence_sufficiency" => judge_evidence_sufficiency(&llm, &prompts, &ctx)
            .await
            .is_ok(),
        "judge.defect_vs_lapse" => classify_defect_vs_lapse(&llm, &prompts, &ctx, attribution)
            .await
            .is_ok_and(|a| a.cause_category.is_some()),
        "judge.reasoning_sub" => classify_reasoning_failure(&llm, &prompts, &ctx, &attribution)
            .await
            .is_some(),
        "judge.rubric" => {
            let case = RubricCase {
                question_id: "q1",
                question: "How many birds?",
                rubric: "States a number of birds.",
                prediction: "3",
            };
            judge_rubric(&llm, &prompts, &case).await.is_ok()
        }
        other => panic!("no reader known for the tag `{other}`"),
    };
    let requests = llm.requests();
    assert_eq!(requests[0].options.tag.as_deref(), Some(tag));
    ok && requests.len() == 1
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn every_reply_valid_under_its_schema_is_read_by_its_reader((tag, reply) in tagged_replies()) {
        if tag.starts_with("evolve.") {
            let read = read_reply(tag, &reply);
            prop_assert!(read.is_ok(), "{tag}: {read:?}\n{reply}");
        } else {
            prop_assert!(runtime().block_on(judge_reads(tag, &reply)), "{tag}: not read\n{reply}");
        }
    }
}

#[test]
fn the_generator_covers_every_tag_and_its_documents_are_schema_shaped() {
    // Each tag's schema builds a generator (no keyword unknown to it), and each judge tag
    // reaches a reader through its request's tag.
    for tag in tags() {
        let _ = documents(&kernel_reply_schema(tag).unwrap());
    }
    // The reader side of the check can fail: a reply outside the schema is refused.
    assert!(read_reply("evolve.consolidate", r#"{"notes": [1]}"#).is_err());
    assert!(!runtime().block_on(judge_reads("judge.confirmation_bias", r#"{"x": true}"#)));
}

#[test]
fn replies_that_once_went_unread_are_read() {
    // Each is valid under its tag's schema; each was refused before its reader was fixed.
    let edit_quoting_a_fence = r#"{"edits": [{"op": "append", "target": "", "content": "Reply as ```json\n{\"a\": 1}\n```"}]}"#;
    assert!(read_reply("evolve.skill", edit_quoting_a_fence).is_ok());
    let fenced = format!("Here:\n```json\n{edit_quoting_a_fence}\n```");
    assert!(read_reply("evolve.skill", &fenced).is_ok());
    let rt = runtime();
    assert!(rt.block_on(judge_reads(
        "judge.span",
        r#"{"extraction_completeness": 0, "hallucination_rate": 0, "hallucination_tags": ["</think>"]}"#
    )));
    assert!(rt.block_on(judge_reads("judge.reasoning_sub", r#"{"type": " "}"#)));
}
