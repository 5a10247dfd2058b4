use evolution_evolve::parse_llm_json;

fn check(text: &str, expect: Option<&str>) {
    let got = parse_llm_json(text).map(|m| serde_json::Value::Object(m).to_string());
    assert_eq!(got.as_deref(), expect, "input: {text:?}");
}

#[test]
fn two_level_parse() {
    check(r#"{"a":1}"#, Some(r#"{"a":1}"#));
    check("  {\"a\":1}\n", Some(r#"{"a":1}"#));
    check(
        "Here:\n```json\n{\"a\": 2}\n```\nthanks",
        Some(r#"{"a":2}"#),
    );
    // Only a ```json fence is looked into, not a bare ``` fence.
    check("Here:\n```\n{\"a\": 2}\n```", None);
    // Text around a bare object is not stripped (no outermost-brace search, no repair).
    check("result: {\"a\": 1}", None);
    check("{\"a\": 1,}", None);
    // Non-objects are failures.
    check("[1, 2]", None);
    check("\"text\"", None);
    check("```json\n[1]\n```", None);
    check("", None);
    check("```json", None);
    check("```json\n{\"a\":1}", None);
    // A broken fence falls back to the whole reply.
    check("```json\n{broken\n```", None);
}

#[test]
fn fences_quoted_inside_strings_do_not_cut_the_reply() {
    // A whole-object reply whose string holds a fenced object is read as the whole.
    let quoted =
        r#"{"edits": [{"op": "append", "content": "Reply as:\n```json\n{\"a\": 1}\n```"}]}"#;
    let map = parse_llm_json(quoted).unwrap();
    assert!(map.contains_key("edits"), "{map:?}");
    // A fenced reply whose string holds a fence: the block ends at the fence that closes it.
    let fenced = format!("Here it is:\n```json\n{quoted}\n```\nDone.");
    let map = parse_llm_json(&fenced).unwrap();
    assert!(map.contains_key("edits"), "{map:?}");
}
