use std::collections::BTreeMap;

use evolution_types::{
    Profile, SkillStore, StoreError, resolve_skill_file, skill_file_for, skill_file_name,
};

#[test]
fn video_qa_profile_is_the_reference_implementations() {
    insta::assert_json_snapshot!(Profile::video_qa());
}

#[test]
fn the_default_profile_is_neutral_and_names_no_tool() {
    let p = Profile::default();
    assert_eq!(p, Profile::neutral());
    assert!(p.span_eval_tools.is_empty());
    assert!(p.tool_target_files.is_empty());
    assert!(p.problems().is_empty());
    assert_eq!(
        (p.visit_tool, p.search_tool, p.level_pattern),
        (None, None, None)
    );
    assert!(Profile::video_qa().problems().is_empty());
    for name in Profile::PRESET_NAMES {
        assert!(Profile::preset(name).is_some(), "{name}");
    }
    assert_eq!(Profile::preset("video-qa"), Some(Profile::video_qa()));
    assert_eq!(Profile::preset("video"), None);
}

#[test]
fn partial_profile_fills_defaults() {
    let p: Profile = serde_json::from_str(r#"{"min_pattern_count": 5}"#).unwrap();
    assert_eq!(p.min_pattern_count, 5);
    assert_eq!(p.infra_stop_reasons, Profile::default().infra_stop_reasons);
    // The reference implementation's JSON (plain strings) still reads.
    let p: Profile =
        serde_json::from_str(r#"{"visit_tool": "view_node", "level_pattern": "_L(\\d+)_"}"#)
            .unwrap();
    assert_eq!(p.visit_tool.as_deref(), Some("view_node"));
    assert_eq!(p.level_pattern.as_deref(), Some(r"_L(\d+)_"));
}

#[test]
fn problems_name_each_bad_field() {
    let p = Profile {
        high_confidence: 1.2,
        low_confidence: -0.1,
        min_pattern_count: 0,
        default_skill_file: "../x.md".into(),
        ..Profile::neutral()
    };
    let fields: Vec<&str> = p.problems().into_iter().map(|(f, _)| f).collect();
    assert_eq!(
        fields,
        [
            "high_confidence",
            "low_confidence",
            "min_pattern_count",
            "default_skill_file"
        ]
    );
}

struct Files(Vec<&'static str>);

impl SkillStore for Files {
    fn read_skill(&self, filename: &str) -> Result<String, StoreError> {
        Err(StoreError::NotFound {
            name: filename.into(),
        })
    }
    fn list_skill_files(&self) -> Result<Vec<String>, StoreError> {
        Ok(self.0.iter().map(|s| s.to_string()).collect())
    }
}

#[test]
fn resolves_skill_files_like_the_seed() {
    let store = Files(vec!["action-reasoning.md", "default-strategy.md"]);
    assert_eq!(
        resolve_skill_file(&store, "Action Reasoning").unwrap(),
        "action-reasoning.md"
    );
    assert_eq!(
        resolve_skill_file(&store, "Unknown Type").unwrap(),
        "default-strategy.md"
    );
    assert_eq!(skill_file_name("Temporal  Order"), "temporal--order.md");
}

#[test]
fn a_chosen_file_wins_over_the_naming_convention_and_the_default() {
    let files = ["billing.md".to_owned(), "support.md".to_owned()];
    let chosen = BTreeMap::from([("Refunds".to_owned(), "billing.md".to_owned())]);
    assert_eq!(
        skill_file_for(&files, "Refunds", &chosen, "support.md"),
        "billing.md"
    );
    assert_eq!(
        skill_file_for(&files, "Billing", &chosen, "support.md"),
        "billing.md"
    );
    assert_eq!(
        skill_file_for(&files, "Other", &chosen, "support.md"),
        "support.md"
    );
    // A chosen file the store lacks is still returned: reading it fails loudly.
    let missing = BTreeMap::from([("Other".to_owned(), "gone.md".to_owned())]);
    assert_eq!(
        skill_file_for(&files, "Other", &missing, "support.md"),
        "gone.md"
    );
    // Profiles written before the field existed still read.
    let p: Profile = serde_json::from_str("{}").unwrap();
    assert!(p.task_skill_files.is_empty());
}

struct Broken;

impl SkillStore for Broken {
    fn read_skill(&self, _: &str) -> Result<String, StoreError> {
        unreachable_store()
    }
    fn list_skill_files(&self) -> Result<Vec<String>, StoreError> {
        unreachable_store()
    }
}

fn unreachable_store<T>() -> Result<T, StoreError> {
    Err(StoreError::Backend {
        message: "disk gone".into(),
    })
}

#[test]
fn store_errors_propagate() {
    let err = resolve_skill_file(&Broken, "x").unwrap_err();
    assert_eq!(err.to_string(), "store backend failed: disk gone");
}
