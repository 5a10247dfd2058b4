use evolution_diagnose::json::{
    JsonError, extract_json_from_response, parse_json_object, repair_json_object,
    strip_think_blocks,
};
use proptest::prelude::*;
use serde_json::{Value, json};

fn cases(text: &str) -> Vec<(String, String, Value)> {
    let cases: Vec<Value> = serde_json::from_str(text).unwrap();
    cases
        .into_iter()
        .enumerate()
        .map(|(i, c)| {
            let name = c["name"].as_str().map_or(i.to_string(), str::to_owned);
            (
                name,
                c["input"].as_str().unwrap().to_owned(),
                c["expect"].clone(),
            )
        })
        .collect()
}

fn failures(cases: &[(String, String, Value)]) -> Vec<String> {
    cases
        .iter()
        .filter_map(|(name, input, expect)| {
            let got = extract_json_from_response(input).map(Value::Object);
            (got.as_ref().ok() != Some(expect)).then(|| format!("{name}: {input:?} => {got:?}"))
        })
        .collect()
}

/// The project's own corpus of broken replies: truncation, trailing commas,
/// comments, other quotes, unquoted keys and values, missing or mismatched
/// punctuation, odd numbers and literals, code fences, prose and think blocks
/// around the object, nesting, unicode and escapes. Every case reads as its
/// expected object.
#[test]
fn malformed_llm_output_corpus_all_pass() {
    let corpus = cases(include_str!("../data/malformed_llm_outputs.json"));
    assert!(corpus.len() >= 115, "corpus has {} cases", corpus.len());
    let failed = failures(&corpus);
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

#[test]
fn seed_cases() {
    let raw = "```json\n{\"key\": \"val\"}\n```";
    assert_eq!(
        extract_json_from_response(raw).unwrap(),
        json!({"key": "val"}).as_object().unwrap().clone()
    );
    let raw = "prefix {\"key\": 1} suffix";
    assert_eq!(
        Value::Object(extract_json_from_response(raw).unwrap()),
        json!({"key": 1})
    );
}

#[test]
fn non_objects_are_failures() {
    assert_eq!(
        extract_json_from_response("[1,2,3]"),
        Err(JsonError::NotAnObject { found: "array" })
    );
    assert_eq!(
        extract_json_from_response("\"just a string\""),
        Err(JsonError::NotAnObject { found: "string" })
    );
    assert_eq!(
        extract_json_from_response("42"),
        Err(JsonError::NotAnObject { found: "number" })
    );
    assert_eq!(
        extract_json_from_response("not json at all"),
        Err(JsonError::NoObject)
    );
    assert_eq!(extract_json_from_response("   "), Err(JsonError::Empty));
    assert_eq!(
        extract_json_from_response("<think>only thoughts</think>"),
        Err(JsonError::Empty)
    );
    // An object repaired to nothing is noise, not an empty verdict.
    assert_eq!(
        extract_json_from_response("{ garbage words"),
        Err(JsonError::NoObject)
    );
    assert_eq!(repair_json_object("{ garbage words"), None);
    // A strictly valid empty object is an object.
    assert_eq!(extract_json_from_response("{}").unwrap().len(), 0);
}

#[test]
fn think_blocks_are_stripped() {
    assert_eq!(
        strip_think_blocks("a<think>x</think>b<think>y</think>c"),
        "abc"
    );
    assert_eq!(strip_think_blocks("a<think>cut off"), "a");
    assert_eq!(strip_think_blocks("reasoning</think>answer"), "answer");
    assert_eq!(strip_think_blocks("plain"), "plain");
}

#[test]
fn a_whole_object_reply_keeps_the_think_tags_and_fences_its_strings_quote() {
    let reply = r#"{"missed_info_tags": ["</think>", "<think>"], "note": "```json\n{}\n```"}"#;
    let object = extract_json_from_response(reply).unwrap();
    assert_eq!(
        object["missed_info_tags"],
        serde_json::json!(["</think>", "<think>"])
    );
    assert_eq!(object["note"], "```json\n{}\n```");
    // Around a reply that is not one object as a whole, think blocks are still dropped.
    let object = extract_json_from_response("<think>{\"a\": 1}</think>{\"b\": 2}").unwrap();
    assert!(
        object.contains_key("b") && !object.contains_key("a"),
        "{object:?}"
    );
}

#[test]
fn parse_json_object_is_strict_then_repair_and_objects_only() {
    assert_eq!(
        Value::Object(parse_json_object("{\"a\": 1}").unwrap()),
        json!({"a": 1})
    );
    assert_eq!(
        Value::Object(parse_json_object("{'a': 1,}").unwrap()),
        json!({"a": 1})
    );
    assert_eq!(parse_json_object("[1, 2]"), None);
    assert_eq!(parse_json_object("\"text\""), None);
    assert_eq!(parse_json_object("plain prose"), None);
}

#[test]
fn deep_nesting_is_refused_not_overflowed() {
    let deep = "{\"a\":".repeat(100_000);
    assert!(extract_json_from_response(&deep).is_err());
    let deep_arrays = format!("{{\"a\": {}", "[".repeat(100_000));
    let _ = extract_json_from_response(&deep_arrays);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn never_panics_on_any_text(text in any::<String>()) {
        let _ = extract_json_from_response(&text);
        let _ = parse_json_object(&text);
    }

    #[test]
    fn never_panics_on_json_like_text(text in r#"[{}\[\]()"'“”‘’：，｛｝:,\\a-z0-9 \n.\-_#/*<>`éü中文]{0,80}"#) {
        let _ = extract_json_from_response(&text);
        let _ = parse_json_object(&text);
    }

    #[test]
    fn valid_objects_round_trip(map in proptest::collection::btree_map("[a-z中]{1,6}", any::<i32>(), 0..6)) {
        let value = serde_json::to_value(&map).unwrap();
        let text = format!("Here you go: {value} — thanks");
        let got = extract_json_from_response(&text);
        if map.is_empty() {
            prop_assert!(got.map(|m| m.is_empty()).unwrap_or(true));
        } else {
            prop_assert_eq!(Value::Object(got.unwrap()), value);
        }
    }
}
