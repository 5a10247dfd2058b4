//! Each reply is read by its tag's reader, and a reply that cannot be read is reported as
//! unreadable with its tag — never as a reply that proposed nothing.

use evolution_evolve::consolidate::consolidate_appendix;
use evolution_evolve::rank::rank_and_clip;
use evolution_evolve::replies::{Reply, UnreadableReply, read_reply};
use evolution_evolve::rewrite::rewrite_from_suggestions;
use evolution_evolve::{EvolveOptions, REPLY_SCHEMA_TAGS, SkillUpdateMode};
use evolution_testkit::{MemoryStore, ScriptedLlm};
use evolution_types::{Edit, EvolutionStatus, SkillCasePack};
use serde_json::json;

use crate::format::case;
use crate::support::{evolver, prompts};

#[test]
fn every_tag_has_a_reader_and_refusals_name_the_tag() {
    let good = [
        (
            "evolve.skill",
            r#"{"edits": [{"op": "append", "target": "", "content": "x", "reason": "r"}]}"#,
        ),
        ("evolve.system", r#"{"suggestions": ["s"], "edits": []}"#),
        ("evolve.tool", r#"{"verify_edits": []}"#),
        ("evolve.rank", r#"{"ranking": [1, 0]}"#),
        ("evolve.consolidate", r#"{"notes": [" a ", "b"]}"#),
        ("evolve.rewrite", r#"{"rewritten": "doc"}"#),
    ];
    for (tag, text) in good {
        assert!(read_reply(tag, text).is_ok(), "{tag}: {text}");
    }
    assert_eq!(
        good.map(|(tag, _)| tag),
        REPLY_SCHEMA_TAGS,
        "one reader per tag with a schema"
    );
    assert_eq!(
        read_reply("evolve.consolidate", r#"{"notes": [" a ", "b"]}"#),
        Ok(Reply::Consolidate(
            evolution_evolve::replies::ConsolidateReply {
                notes: vec!["a".to_owned(), "b".to_owned()]
            }
        ))
    );
    let bad = [
        ("evolve.skill", "no json", "the reply is not a JSON object"),
        (
            "evolve.skill",
            r#"{"suggestions": []}"#,
            "the reply has no `edits` list",
        ),
        (
            "evolve.system",
            r#"{"edits": [{"op": 3}]}"#,
            "`edits` item 1 is not an edit object",
        ),
        (
            "evolve.tool",
            r#"{"edits": []}"#,
            "the reply has neither `extract_edits` nor `verify_edits`",
        ),
        (
            "evolve.tool",
            r#"{"extract_edits": {}}"#,
            "`extract_edits` must be a list",
        ),
        (
            "evolve.rank",
            r#"{"ranking": "0,1"}"#,
            "the reply has no `ranking` list",
        ),
        (
            "evolve.consolidate",
            r#"{"notes": ["a", 2]}"#,
            "`notes` item 2 is not a string",
        ),
        (
            "evolve.rewrite",
            r#"{"rewritten": ["x"]}"#,
            "`rewritten` is not a string",
        ),
        (
            "judge.span",
            "{}",
            "this crate makes no request with that tag",
        ),
    ];
    for (tag, text, why) in bad {
        let error = read_reply(tag, text).unwrap_err();
        assert_eq!(error.tag, tag);
        assert!(error.why.starts_with(why), "{tag}: {error}");
        assert!(
            error
                .to_string()
                .starts_with(&format!("unreadable `{tag}` reply: "))
        );
    }
}

const FILE: &str = "counting.md";
const SKILL: &str = "---\nname: counting\ndescription: How to count things.\ntask_type: Counting\n---\n# Counting\n\n## Steps\n1. Count each object once.\n";

fn pack() -> SkillCasePack {
    SkillCasePack {
        task_type: "Counting".to_owned(),
        target_file: FILE.to_owned(),
        failure_cases: vec![case("q1", 30)],
        ..SkillCasePack::default()
    }
}

#[tokio::test]
async fn an_unreadable_skill_reply_is_never_no_edit() {
    let store = MemoryStore::new().with(FILE, SKILL);
    // Rewrite mode: a malformed edit list used to be read as "no edits" (skipped).
    let llm = ScriptedLlm::with_replies([r#"{"suggestions": ["x"], "edits": [{"op": 7}]}"#]);
    let options = EvolveOptions {
        skill_update_mode: SkillUpdateMode::Rewrite,
        ..EvolveOptions::default()
    };
    let record = evolver(&llm, options).skill(&pack(), &store).await.unwrap();
    assert_eq!(
        record.status,
        EvolutionStatus::Rejected,
        "{}",
        record.reason
    );
    assert!(
        record.reason.starts_with(
            "rewrite: unreadable `evolve.skill` reply: `edits` item 1 is not an edit object"
        ),
        "{}",
        record.reason
    );
    assert!(!record.reason.contains("no edits"), "{}", record.reason);
    assert_eq!(
        llm.call_count(),
        1,
        "no rewrite is asked from an unread reply"
    );
    // Patch mode: both rounds unreadable.
    let llm = ScriptedLlm::with_replies([r#"{"edit": []}"#, "Sorry."]);
    let record = evolver(&llm, EvolveOptions::default())
        .skill(&pack(), &store)
        .await
        .unwrap();
    assert_eq!(record.status, EvolutionStatus::Rejected);
    assert!(
        record
            .reason
            .contains("(round 2: unreadable `evolve.skill` reply: the reply is not a JSON object)"),
        "{}",
        record.reason
    );
    // The model is told why, without the tag.
    assert!(
        llm.requests()[1]
            .last_user()
            .ends_with("- the reply has no `edits` list"),
        "{}",
        llm.requests()[1].last_user()
    );
}

#[tokio::test]
async fn unreadable_rank_consolidate_and_rewrite_replies_name_their_tag() {
    let edits: Vec<Edit> = (0..3).map(|i| Edit::append(format!("rule {i}"))).collect();
    let llm = ScriptedLlm::with_replies([r#"{"order": [2]}"#]);
    let clip = rank_and_clip(&llm, &prompts(), "doc", edits, 2)
        .await
        .unwrap();
    assert_eq!(
        clip.info["fallback_reason"],
        json!(UnreadableReply::new("evolve.rank", "the reply has no `ranking` list").to_string())
    );
    let llm = ScriptedLlm::with_replies([r#"{"notes": [1, 2]}"#]);
    let merged = consolidate_appendix(&llm, &prompts(), &["a".into(), "b".into()]).await;
    assert_eq!(
        merged.fallback.as_deref(),
        Some("unreadable `evolve.consolidate` reply: `notes` item 1 is not a string")
    );
    let llm = ScriptedLlm::with_replies(["not json"]);
    let rewrite = rewrite_from_suggestions(&llm, &prompts(), "doc", &[])
        .await
        .unwrap();
    assert_eq!(
        rewrite.outcome,
        Err("unreadable `evolve.rewrite` reply: the reply is not a JSON object".to_owned())
    );
}
