use evolution_evolve::aggregate::{Patch, Suggestion, aggregate_patches};
use evolution_types::Edit;

fn suggestion(kind: &str, title: &str, support: Option<u32>) -> Suggestion {
    Suggestion {
        kind: kind.to_owned(),
        title: title.to_owned(),
        instruction: format!("do {title}"),
        support_count: support,
        ..Suggestion::default()
    }
}

#[test]
fn merges_by_type_target_and_content_sums_support_and_sorts() {
    let batch1 = Patch {
        suggestions: vec![
            suggestion("add_rule", "Check units", None),
            suggestion("fix_context", "Scope", Some(2)),
        ],
        edits: vec![
            Edit::replace("step 1", "step one"),
            Edit::append("Always cite."),
            Edit::insert_after("## Steps", "- verify"),
        ],
        reasoning: "batch one".to_owned(),
    };
    let mut supported = Edit::append("always   CITE.");
    supported.support_count = Some(3);
    let batch2 = Patch {
        suggestions: vec![
            suggestion("add_rule", "check  UNITS", Some(4)),
            suggestion("modify_step", "Check units", None),
        ],
        edits: vec![
            Edit::replace("step 1", "Step   ONE"),
            supported,
            Edit::delete("old rule"),
        ],
        reasoning: "  ".to_owned(),
    };
    let merged = aggregate_patches(&[batch1, batch2]);
    let s: Vec<_> = merged
        .suggestions
        .iter()
        .map(|s| (s.kind.as_str(), s.title.as_str(), s.support_count))
        .collect();
    assert_eq!(
        s,
        vec![
            ("add_rule", "Check units", Some(5)),
            ("fix_context", "Scope", Some(2)),
            ("modify_step", "Check units", Some(1)),
        ]
    );
    let e: Vec<_> = merged
        .edits
        .iter()
        .map(|e| {
            (
                e.op.as_str(),
                e.target.as_str(),
                e.content.as_str(),
                e.support_count,
            )
        })
        .collect();
    assert_eq!(
        e,
        vec![
            ("append", "", "Always cite.", Some(4)),
            ("replace", "step 1", "step one", Some(2)),
            ("insert_after", "## Steps", "- verify", Some(1)),
            ("delete", "old rule", "", Some(1)),
        ]
    );
    assert_eq!(merged.reasoning, "batch one");
}

#[test]
fn different_edits_on_one_target_stay_distinct() {
    // Two rules inserted after the same line, proposed by two batches.
    let batch1 = Patch {
        edits: vec![Edit::insert_after("## Rules", "- Cite the source.")],
        ..Patch::default()
    };
    let batch2 = Patch {
        edits: vec![
            Edit::insert_after("## Rules", "- Answer in metres."),
            Edit::replace("step 1", "step one"),
            Edit::replace("step 1", "another wording"),
        ],
        ..Patch::default()
    };
    let merged = aggregate_patches(&[batch1, batch2]);
    let e: Vec<_> = merged
        .edits
        .iter()
        .map(|e| (e.op.as_str(), e.content.as_str(), e.support_count))
        .collect();
    assert_eq!(
        e,
        vec![
            ("insert_after", "- Cite the source.", Some(1)),
            ("insert_after", "- Answer in metres.", Some(1)),
            ("replace", "step one", Some(1)),
            ("replace", "another wording", Some(1)),
        ]
    );
}

#[test]
fn empty_input_gives_an_empty_patch() {
    assert_eq!(aggregate_patches(&[]), Patch::default());
}

#[test]
fn reads_reference_suggestion_json() {
    let patch: Patch = serde_json::from_str(
        r#"{"suggestions":[{"type":"add_rule","title":"t","instruction":"i","priority_hint":"high","support_count":2,"source":"x"}],
            "edits":[{"op":"append","content":"c"}]}"#,
    )
    .unwrap();
    assert_eq!(patch.suggestions[0].kind, "add_rule");
    assert_eq!(patch.suggestions[0].extra["source"], "x");
    let back = serde_json::to_value(&patch.suggestions[0]).unwrap();
    assert_eq!(back["type"], "add_rule");
}

#[test]
fn a_reply_that_follows_the_kernel_schema_is_read_with_its_edits() {
    // `reply_schema("evolve.skill")` asks for suggestions as notes (strings).
    let schema = evolution_evolve::reply_schema("evolve.skill").unwrap();
    assert_eq!(
        schema["properties"]["suggestions"]["items"]["type"],
        "string"
    );
    let reply = r#"{"suggestions": ["Write dates as ISO 8601", "Check the year"],
        "edits": [{"op": "append", "content": "Always answer with ISO 8601 dates."}]}"#;
    let doc = evolution_evolve::parse_llm_json(reply).unwrap();
    let patch: Patch = serde_json::from_value(serde_json::Value::Object(doc)).unwrap();
    assert_eq!(patch.edits.len(), 1);
    assert_eq!(patch.suggestions.len(), 2);
    assert_eq!(patch.suggestions[0].instruction, "Write dates as ISO 8601");
    assert_eq!(patch.suggestions[0].kind, "");
    // The object form still reads every field, unknown ones included.
    let object: Suggestion = serde_json::from_str(
        r#"{"type": "add_rule", "title": "Dates", "instruction": "ISO", "support_count": 3, "why": "x"}"#,
    )
    .unwrap();
    assert_eq!(
        (object.kind.as_str(), object.support_count),
        ("add_rule", Some(3))
    );
    assert_eq!(object.extra["why"], "x");
    // A suggestion of any other shape is an error, not a silent empty one.
    assert!(serde_json::from_str::<Suggestion>("42").is_err());
}
