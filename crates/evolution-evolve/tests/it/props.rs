//! No function panics on generated packs, documents and replies.

use evolution_evolve::aggregate::{Patch, aggregate_patches};
use evolution_evolve::format::format_case_samples;
use evolution_evolve::rank::select_top_edits;
use evolution_evolve::validate::{validate_skill, validate_system, validate_tool};
use evolution_evolve::{EvolveOptions, SkillUpdateMode, parse_llm_json};
use evolution_testkit::{MemoryStore, ScriptedLlm};
use evolution_types::{
    Edit, EvolutionStatus, SkillCasePack, SystemCasePack, ToolCasePack, TraceStep,
};
use proptest::prelude::*;
use serde_json::json;

use crate::format::{case, span};
use crate::support::evolver;

/// Pieces that stress the parsers: markers, frontmatter fences, headings,
/// code fences, CRLF, multi-byte text, braces.
fn piece() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("---\n".to_owned()),
        Just("name: a\n".to_owned()),
        Just("task_type: t\n".to_owned()),
        Just("<!-- APPENDIX_START -->\n".to_owned()),
        Just("<!-- APPENDIX_END -->\n".to_owned()),
        Just("<!-- SLOW_UPDATE_START -->\n".to_owned()),
        Just("<!-- SLOW_UPDATE_END -->\n".to_owned()),
        Just("## 能力边界\n".to_owned()),
        Just("## 输出格式\n".to_owned()),
        Just("```\n".to_owned()),
        Just("\r\n".to_owned()),
        Just("- note\n".to_owned()),
        Just("{{skill_content}}".to_owned()),
        "[a-z 日本é]{0,12}\n?",
    ]
}

fn document() -> impl Strategy<Value = String> {
    prop::collection::vec(piece(), 0..16).prop_map(|p| p.concat())
}

fn edit_json() -> impl Strategy<Value = serde_json::Value> {
    (
        prop_oneof![
            Just("append"),
            Just("insert_after"),
            Just("replace"),
            Just("delete"),
            Just("swap")
        ],
        piece(),
        document(),
    )
        .prop_map(|(op, target, content)| json!({"op": op, "target": target, "content": content}))
}

fn reply() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::collection::vec(edit_json(), 0..6)
            .prop_map(|e| json!({"suggestions": ["s"], "edits": e}).to_string()),
        (
            prop::collection::vec(edit_json(), 0..4),
            prop::collection::vec(edit_json(), 0..4)
        )
            .prop_map(|(a, b)| json!({"extract_edits": a, "verify_edits": b}).to_string()),
        prop::collection::vec(any::<i64>(), 0..6).prop_map(|r| json!({"ranking": r}).to_string()),
        prop::collection::vec(piece(), 0..4).prop_map(|n| json!({"notes": n}).to_string()),
        document().prop_map(|d| json!({"rewritten": d}).to_string()),
        document(),
        Just("```json\n{\"edits\": [{\"op\": 1}]}\n```".to_owned()),
    ]
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn evolve_functions_never_panic(
        skill in document(),
        other in document(),
        replies in prop::collection::vec(reply(), 0..8),
        lapses in prop::collection::vec(piece(), 0..4),
        failures in 0usize..3,
        budget in 0usize..4,
        threshold in 0usize..5,
        rewrite in any::<bool>(),
        output in "[a-z界]{0,600}",
    ) {
        let llm = ScriptedLlm::with_replies(replies);
        let store = MemoryStore::new()
            .with("s.md", skill.as_str())
            .with("system.md", skill.as_str())
            .with("t_extract.md", skill.as_str())
            .with("t_verify.md", other.as_str());
        let mut failure = case("q", 3);
        failure.trace.push(TraceStep { tool_output: output.clone(), ..TraceStep::default() });
        let skill_pack = SkillCasePack {
            task_type: "T".to_owned(),
            target_file: "s.md".to_owned(),
            failure_cases: vec![failure.clone(); failures],
            lapse_notes: lapses,
            ..SkillCasePack::default()
        };
        let options = EvolveOptions {
            edit_budget: budget,
            consolidate_threshold: threshold,
            skill_update_mode: if rewrite { SkillUpdateMode::Rewrite } else { SkillUpdateMode::Patch },
            ..EvolveOptions::default()
        };
        let rt = runtime();
        // Errors are fine (the script may run dry); panics are not.
        let result = rt.block_on(evolver(&llm, options.clone()).skill(&skill_pack, &store));
        if let Ok(record) = result
            && record.status != EvolutionStatus::Accepted
        {
            prop_assert_eq!(&record.evolved_content, &skill);
        }
        let system_pack = SystemCasePack { failure_cases: vec![failure; failures], ..SystemCasePack::default() };
        let _ = rt.block_on(evolver(&llm, options.clone()).system_prompt(&system_pack, &store));
        let mut sp = span("q", &output);
        sp.tool_output = output;
        let tool_pack = ToolCasePack {
            tool_name: "t".to_owned(),
            failure_spans: vec![sp; failures],
            ..ToolCasePack::default()
        };
        if let Ok(records) = rt.block_on(evolver(&llm, options.clone()).tool(&tool_pack, &store)) {
            for record in records {
                prop_assert!(serde_json::from_str::<serde_json::Value>(&record.evolved_content).is_ok());
            }
        }
    }

    #[test]
    fn pure_functions_never_panic(a in document(), b in document(), c in document(), text in reply()) {
        let profile = evolution_types::Profile::video_qa();
        let _ = validate_skill(&a, &b);
        let _ = validate_system(&a, &b, &profile);
        let _ = validate_tool(&a, &b, &b, &c, &profile);
        let _ = parse_llm_json(&text);
        let _ = parse_llm_json(&a);
        let _ = format_case_samples(&[case(&a, 700)]);
        let patch = Patch { edits: vec![Edit::append(a.clone()), Edit::replace(b.clone(), c.clone())], ..Patch::default() };
        let merged = aggregate_patches(&[patch.clone(), patch]);
        prop_assert!(merged.edits.len() <= 2);
        if let Some(map) = parse_llm_json(&text)
            && let Some(serde_json::Value::Array(r)) = map.get("ranking")
        {
            let picked = select_top_edits(r, 3, 2);
            prop_assert!(picked.len() <= 2 && picked.iter().all(|&i| i < 3));
        }
        // Identity always validates.
        prop_assert!(validate_skill(&a, &a).errors.iter().all(|e| !e.starts_with("frontmatter")));
    }
}
