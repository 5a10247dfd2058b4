use evolution_evolve::feedback::{
    FEEDBACK_INVALID_CANDIDATE, FEEDBACK_INVALID_JSON, FEEDBACK_NOT_APPLIED,
};
use evolution_evolve::{EvolveError, EvolveOptions, SkillUpdateMode};
use evolution_testkit::{MemoryStore, ScriptedLlm};
use evolution_types::{
    ChatRole, Edit, EditStatus, EvolutionRecord, EvolutionStatus, RejectedEdit, SkillCasePack,
    TargetType,
};
use serde_json::json;

use crate::format::case;
use crate::support::{assert_accepted, evolver, transient};

const FILE: &str = "counting.md";
const SKILL: &str = "---\nname: counting\ndescription: How to count things.\ntask_type: Counting\n---\n# Counting\n\n## Steps\n1. Find the segment.\n2. Count each object once.\n3. Answer with a number.\n";

fn store() -> MemoryStore {
    MemoryStore::new()
        .with(FILE, SKILL)
        .with("default-strategy.md", "---\nname: d\n---\nDefault.")
}

fn pack(failures: usize, lapses: &[&str]) -> SkillCasePack {
    SkillCasePack {
        task_type: "Counting".to_owned(),
        target_file: FILE.to_owned(),
        stats: serde_json::from_value(json!({"accuracy": 0.4, "n": 10})).unwrap(),
        failure_cases: (0..failures).map(|i| case(&format!("q{i}"), 30)).collect(),
        success_cases: vec![case("ok1", 10)],
        lapse_notes: lapses.iter().map(|s| (*s).to_owned()).collect(),
    }
}

fn options() -> EvolveOptions {
    EvolveOptions {
        source_version: "v7".to_owned(),
        edit_budget: 3,
        consolidate_threshold: 6,
        ..EvolveOptions::default()
    }
}

fn reply(edits: serde_json::Value) -> String {
    json!({"suggestions": [{"type": "add_rule", "title": "recount"}], "edits": edits}).to_string()
}

/// The skill evolved from one failure with the default options, the model answering with
/// `replies` in order. Returns the model (its requests) and the record.
async fn evolve_one_failure<S: Into<String>>(
    replies: impl IntoIterator<Item = S>,
) -> (ScriptedLlm, EvolutionRecord) {
    let llm = ScriptedLlm::with_replies(replies);
    let record = evolver(&llm, options())
        .skill(&pack(1, &[]), &store())
        .await
        .unwrap();
    (llm, record)
}

#[tokio::test]
async fn empty_pack_is_skipped_without_a_call() {
    let llm = ScriptedLlm::new();
    let record = evolver(&llm, options())
        .skill(&pack(0, &[]), &store())
        .await
        .unwrap();
    assert_eq!(record.status, EvolutionStatus::Skipped);
    assert_eq!(record.llm_calls, 0);
    assert_eq!(record.evolved_content, SKILL);
    assert_eq!(record.target_type, TargetType::Skill);
    assert_eq!(record.source_version, "v7");
    // The plan's case: an empty edit list is rejected or skipped, never accepted.
    let (_, record) = evolve_one_failure([r#"{"suggestions":[],"edits":[]}"#]).await;
    assert_eq!(record.status, EvolutionStatus::Skipped);
    assert_eq!(record.llm_calls, 1);
}

#[tokio::test]
async fn branch_c_patch_best_case_one_call() {
    let llm = ScriptedLlm::with_replies([reply(json!([
        {"op": "insert_after", "target": "2. Count each object once.", "content": "   - Recount before answering.", "reason": "q0"}
    ]))]);
    let record = evolver(&llm, options())
        .skill(&pack(2, &[]), &store())
        .await
        .unwrap();
    assert_accepted(&record);
    assert_eq!(record.llm_calls, 1);
    assert_eq!(
        record.apply_report[0].status,
        EditStatus::AppliedInsertAfter
    );
    assert_eq!(record.edits[0].extra["reason"], "q0");
    assert_eq!(
        record.suggestions,
        vec![json!({"type": "add_rule", "title": "recount"})]
    );
    assert_eq!(record.clip_info["method"], "passthrough");
    let request = &llm.requests()[0];
    assert_eq!(request.options.tag.as_deref(), Some("evolve.skill"));
    assert!(request.options.json_mode);
    insta::assert_snapshot!("skill_c_prompt", request.last_user());
    insta::assert_snapshot!("skill_c_document", record.evolved_content);
}

#[tokio::test]
async fn broken_json_then_good_reply() {
    let (llm, record) = evolve_one_failure([
        "Sure! Here are my edits: {op: append".to_owned(),
        reply(json!([{"op": "append", "content": "Double-check the count."}])),
    ])
    .await;
    assert_eq!(record.status, EvolutionStatus::Accepted);
    assert_eq!(record.llm_calls, 2);
    let second = &llm.requests()[1];
    let roles: Vec<_> = second.messages.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        vec![ChatRole::User, ChatRole::Assistant, ChatRole::User]
    );
    assert_eq!(
        second.messages[1].content,
        "Sure! Here are my edits: {op: append"
    );
    assert!(second.last_user().starts_with(FEEDBACK_INVALID_JSON));
    insta::assert_snapshot!("feedback_invalid_json", second.last_user());
}

#[tokio::test]
async fn missing_target_is_fed_back_and_retried() {
    let (llm, record) = evolve_one_failure([
        reply(json!([{"op": "replace", "target": "4. Does not exist.", "content": "x"}])),
        reply(
            json!([{"op": "replace", "target": "3. Answer with a number.", "content": "3. Answer with a single number."}]),
        ),
    ]).await;
    assert_eq!(record.status, EvolutionStatus::Accepted);
    assert!(
        record
            .evolved_content
            .contains("3. Answer with a single number.")
    );
    let feedback = llm.requests()[1].last_user().to_owned();
    assert!(feedback.starts_with(FEEDBACK_NOT_APPLIED));
    assert!(
        feedback.contains("skipped_replace_target_not_found"),
        "{feedback}"
    );
    insta::assert_snapshot!("feedback_missing_target", feedback);
}

#[tokio::test]
async fn frontmatter_edit_is_refused_and_retried_with_that_feedback() {
    let (llm, record) = evolve_one_failure([
        reply(
            json!([{"op": "replace", "target": "task_type: Counting", "content": "task_type: Anything"}]),
        ),
        reply(json!([{"op": "append", "content": "Count twice."}])),
    ]).await;
    assert_eq!(record.status, EvolutionStatus::Accepted);
    assert!(record.evolved_content.starts_with(
        "---\nname: counting\ndescription: How to count things.\ntask_type: Counting\n---\n"
    ));
    let feedback = llm.requests()[1].last_user().to_owned();
    assert!(feedback.contains("skipped_protected"), "{feedback}");
    assert!(feedback.contains("frontmatter"), "{feedback}");
}

#[tokio::test]
async fn invalid_candidate_is_fed_back_and_rejected_after_two_rounds() {
    // Tripling the document breaks the length ratio; an unclosed fence breaks the fences.
    let gut = json!([{"op": "append", "content": "Long rule. ".repeat(40)}]);
    let fence = json!([{"op": "append", "content": "```\nunclosed example"}]);
    let (llm, record) = evolve_one_failure([reply(gut), reply(fence)]).await;
    assert_eq!(record.status, EvolutionStatus::Rejected);
    assert_eq!(record.evolved_content, SKILL);
    assert_eq!(record.llm_calls, 2);
    assert!(
        record.validation_errors[0].starts_with("code fences"),
        "{:?}",
        record.validation_errors
    );
    let feedback = llm.requests()[1].last_user().to_owned();
    assert!(feedback.starts_with(FEEDBACK_INVALID_CANDIDATE));
    assert!(feedback.contains("length:"), "{feedback}");
    insta::assert_snapshot!("feedback_invalid_candidate", feedback);
}

#[tokio::test]
async fn worst_case_patch_branch_makes_four_calls_plus_consolidation() {
    let many = |word: &str| {
        reply(json!((0..5).map(|i| json!({"op": "replace", "target": format!("no such {word} {i}"), "content": "x"})).collect::<Vec<_>>()))
    };
    let llm = ScriptedLlm::with_replies([
        many("a"),
        r#"{"ranking": [4, 3, 2]}"#.to_owned(),
        many("b"),
        r#"{"ranking": [0]}"#.to_owned(),
        r#"{"notes": ["merged"]}"#.to_owned(),
    ]);
    let notes = ["n1", "n2", "n3", "n4", "n5", "n6"];
    let record = evolver(&llm, options())
        .skill(&pack(1, &notes), &store())
        .await
        .unwrap();
    assert_eq!(record.llm_calls, 5);
    assert_eq!(llm.call_count(), 5);
    // The patch failed, so branch A took over and the appendix was consolidated.
    assert_eq!(record.status, EvolutionStatus::Accepted);
    assert!(record.reason.starts_with("lapse-only"), "{}", record.reason);
    assert!(record.evolved_content.contains("- merged\n"));
    assert!(!record.evolved_content.contains("- n1"));
}

#[tokio::test]
async fn branch_a_lapse_only_synthesizes_applied_append_reports() {
    let llm = ScriptedLlm::new();
    let record = evolver(&llm, options())
        .skill(
            &pack(0, &["  Re-read the question. ", "", "Check units."]),
            &store(),
        )
        .await
        .unwrap();
    assert_eq!(record.status, EvolutionStatus::Accepted);
    assert_eq!(record.llm_calls, 0);
    let statuses: Vec<_> = record
        .apply_report
        .iter()
        .map(|r| r.status.clone())
        .collect();
    assert_eq!(
        statuses,
        vec![EditStatus::AppliedAppend, EditStatus::AppliedAppend]
    );
    assert_eq!(
        record.edits,
        vec![
            Edit::append("Re-read the question."),
            Edit::append("Check units.")
        ]
    );
    insta::assert_snapshot!("skill_a_document", record.evolved_content);
    // No defect edits from the LLM, but lapse notes: also branch A.
    let llm = ScriptedLlm::with_replies([r#"{"edits": []}"#]);
    let record = evolver(&llm, options())
        .skill(&pack(1, &["Check units."]), &store())
        .await
        .unwrap();
    assert_eq!(record.status, EvolutionStatus::Accepted);
    assert_eq!(record.apply_report.len(), 1);
    assert_eq!(record.llm_calls, 1);
}

#[tokio::test]
async fn patch_then_appendix_in_one_record() {
    let llm = ScriptedLlm::with_replies([reply(json!([{"op": "append", "content": "Recount."}]))]);
    let record = evolver(&llm, options())
        .skill(&pack(1, &["Check units."]), &store())
        .await
        .unwrap();
    assert_eq!(record.status, EvolutionStatus::Accepted);
    assert_eq!(record.apply_report.len(), 1);
    assert_eq!(record.apply_report[0].status, EditStatus::AppliedAppend);
    insta::assert_snapshot!("skill_c_with_lapse_document", record.evolved_content);
}

#[tokio::test]
async fn consolidation_at_threshold_and_g4() {
    let existing = format!(
        "{SKILL}\n<!-- APPENDIX_START -->\n## Execution Notes Appendix\n- old one\n- old two\n<!-- APPENDIX_END -->\n"
    );
    let store = MemoryStore::new().with(FILE, existing.as_str());
    let opts = EvolveOptions {
        consolidate_threshold: 3,
        ..options()
    };
    // 2 existing + 1 new = 3 ≥ 3: consolidation runs and is kept (2 < 3).
    let llm = ScriptedLlm::with_replies([r#"{"notes": ["old one and two", "new"]}"#]);
    let record = evolver(&llm, opts.clone())
        .skill(&pack(0, &["new"]), &store)
        .await
        .unwrap();
    assert_eq!(record.llm_calls, 1);
    assert!(
        record
            .evolved_content
            .contains("- old one and two\n- new\n"),
        "{}",
        record.evolved_content
    );
    insta::assert_snapshot!("consolidate_in_skill_prompt", llm.requests()[0].full_text());
    // G4: the same number of notes is refused; the new note is appended instead.
    let llm = ScriptedLlm::with_replies([r#"{"notes": ["a", "b", "c"]}"#]);
    let record = evolver(&llm, opts.clone())
        .skill(&pack(0, &["new"]), &store)
        .await
        .unwrap();
    assert!(
        record
            .evolved_content
            .contains("- old one\n- old two\n- new\n"),
        "{}",
        record.evolved_content
    );
    assert!(
        record.reason.contains("consolidation refused"),
        "{}",
        record.reason
    );
    // Below the threshold: no call.
    let llm = ScriptedLlm::new();
    let opts = EvolveOptions {
        consolidate_threshold: 4,
        ..options()
    };
    let record = evolver(&llm, opts.clone())
        .skill(&pack(0, &["new"]), &store)
        .await
        .unwrap();
    assert_eq!(llm.call_count(), 0);
    assert_eq!(record.status, EvolutionStatus::Accepted);
}

/// Rewrite mode on a pack with `lapses`: the model proposes one appended rule, then answers
/// the rewrite request with `rewritten`.
async fn rewrite_to(rewritten: &str, lapses: &[&str]) -> (ScriptedLlm, EvolutionRecord) {
    let llm = ScriptedLlm::with_replies([
        reply(json!([{"op": "append", "content": "Recount."}])),
        json!({ "rewritten": rewritten }).to_string(),
    ]);
    let opts = EvolveOptions {
        skill_update_mode: SkillUpdateMode::Rewrite,
        ..options()
    };
    let record = evolver(&llm, opts)
        .skill(&pack(1, lapses), &store())
        .await
        .unwrap();
    (llm, record)
}

#[tokio::test]
async fn branch_b_rewrite() {
    let shorter = SKILL.replace("2. Count each object once.", "2. Count once, recount.");
    let (llm, record) = rewrite_to(&shorter, &[]).await;
    assert_accepted(&record);
    assert_eq!(record.llm_calls, 2);
    assert_eq!(record.evolved_content, shorter);
    insta::assert_snapshot!("skill_b_document", record.evolved_content);
    insta::assert_snapshot!("skill_b_rewrite_prompt", llm.requests()[1].last_user());
}

#[tokio::test]
async fn branch_b_rewrite_touching_frontmatter_degrades() {
    let bad = SKILL
        .replace("name: counting", "name: other")
        .replace("# Counting\n\n", "");
    // With lapse notes: falls back to branch A.
    let (_, record) = rewrite_to(&bad, &["Check units."]).await;
    assert_eq!(record.status, EvolutionStatus::Accepted);
    assert!(record.reason.starts_with("lapse-only"), "{}", record.reason);
    assert!(record.evolved_content.starts_with(SKILL));
    assert!(record.validation_errors[0].contains("`name`"));
    // Without: rejected, nothing applied.
    let (_, record) = rewrite_to(&bad, &[]).await;
    assert_eq!(record.status, EvolutionStatus::Rejected);
    assert_eq!(record.evolved_content, SKILL);
    // A longer rewrite is declined.
    let (_, record) = rewrite_to(&format!("{SKILL}\nMore."), &[]).await;
    assert_eq!(record.status, EvolutionStatus::Rejected);
    assert!(
        record.reason.contains("more than the original"),
        "{}",
        record.reason
    );
}

#[tokio::test]
async fn transient_error_propagates_with_nothing_applied() {
    // On the first call.
    let llm = ScriptedLlm::new();
    llm.push_error(transient());
    let err = evolver(&llm, options())
        .skill(&pack(1, &["note"]), &store())
        .await
        .unwrap_err();
    assert!(
        matches!(&err, EvolveError::Llm(e) if e.is_transient()),
        "{err}"
    );
    // On the retry, after a first round that had applied edits.
    let llm = ScriptedLlm::with_replies([reply(json!([{"op": "append", "content": "```"}]))]);
    llm.push_error(transient());
    let store = store();
    let err = evolver(&llm, options())
        .skill(&pack(1, &[]), &store)
        .await
        .unwrap_err();
    assert!(matches!(err, EvolveError::Llm(_)));
    // In the ranking call.
    let five = json!(
        (0..5)
            .map(|i| json!({"op": "append", "content": format!("rule {i}")}))
            .collect::<Vec<_>>()
    );
    let llm = ScriptedLlm::with_replies([reply(five)]);
    llm.push_error(transient());
    let err = evolver(&llm, options())
        .skill(&pack(1, &[]), &store)
        .await
        .unwrap_err();
    assert!(matches!(err, EvolveError::Llm(_)));
    // The store is read-only to the kernel: nothing changed.
    assert_eq!(store.snapshot()[FILE], SKILL);
}

#[tokio::test]
async fn budget_clips_through_the_ranking() {
    let five = json!(
        (0..5)
            .map(|i| json!({"op": "append", "content": format!("rule {i}")}))
            .collect::<Vec<_>>()
    );
    let (_, record) = evolve_one_failure([
        reply(five),
        r#"{"ranking": [true, -1, 99, 4, 4, 1]}"#.to_owned(),
    ])
    .await;
    assert_eq!(record.llm_calls, 2);
    let kept: Vec<_> = record.edits.iter().map(|e| e.content.as_str()).collect();
    assert_eq!(kept, vec!["rule 4", "rule 1"]);
    assert_eq!(record.clip_info["method"], "llm_rank");
}

#[tokio::test]
async fn rejected_edits_for_this_file_are_shown() {
    let mut opts = options();
    for file in [FILE, "other.md"] {
        opts.rejected.push(RejectedEdit {
            target_file: file.to_owned(),
            edit: Edit::append(format!("rule for {file}")),
            reason: evolution_types::GATE_REJECTED_REASON.to_owned(),
            source_version: "v6".to_owned(),
        });
    }
    let llm = ScriptedLlm::with_replies([r#"{"edits": []}"#]);
    evolver(&llm, opts.clone())
        .skill(&pack(1, &[]), &store())
        .await
        .unwrap();
    let prompt = llm.requests()[0].last_user().to_owned();
    assert!(prompt.contains("rule for counting.md"));
    assert!(prompt.contains("\"rule for counting.md\" — rejected by the gate"));
    assert!(!prompt.contains("rule for other.md"));
}

#[tokio::test]
async fn target_file_resolves_from_task_type_and_store_errors_propagate() {
    let llm = ScriptedLlm::new();
    let mut p = pack(0, &["note"]);
    p.target_file = String::new();
    p.task_type = "Unknown Type".to_owned();
    let record = evolver(&llm, options()).skill(&p, &store()).await.unwrap();
    assert_eq!(record.target_file, "default-strategy.md");
    let mut p = pack(1, &[]);
    p.target_file = "missing.md".to_owned();
    let err = evolver(&llm, options())
        .skill(&p, &store())
        .await
        .unwrap_err();
    assert!(matches!(err, EvolveError::Store { .. }));
}

#[tokio::test]
async fn malformed_appendix_rejects_without_applying() {
    let broken = format!("{SKILL}<!-- APPENDIX_START -->\n- half\n");
    let store = MemoryStore::new().with(FILE, broken.as_str());
    let llm = ScriptedLlm::new();
    let record = evolver(&llm, options())
        .skill(&pack(0, &["note"]), &store)
        .await
        .unwrap();
    assert_eq!(record.status, EvolutionStatus::Rejected);
    assert_eq!(record.evolved_content, broken);
    assert!(
        record.reason.contains("appendix not applied:"),
        "{}",
        record.reason
    );
}

#[tokio::test]
async fn edits_repeating_the_reply_formats_example_are_fed_back_and_rejected() {
    // The built-in `evolve_skill` template's format shows `"content": "new rule"`; the
    // test templates show no format, so there the same edit is an edit.
    let run = |replies: Vec<String>, prompts: evolution_evolve::EvolvePrompts| async move {
        let llm = ScriptedLlm::with_replies(replies);
        let record = evolution_evolve::Evolver::new(&llm)
            .with_prompts(prompts)
            .with_options(options())
            .skill(&pack(1, &[]), &store())
            .await
            .unwrap();
        (llm, record)
    };
    let echo = || reply(json!([{"op": "append", "content": "new rule"}]));
    let builtin = evolution_evolve::EvolvePrompts::builtin;
    let (llm, record) = run(vec![echo(), echo()], builtin()).await;
    assert_eq!(record.status, EvolutionStatus::Rejected);
    assert_eq!(record.evolved_content, SKILL);
    assert_eq!(record.llm_calls, 2, "no ranking of an echo");
    assert!(
        record.validation_errors[0].contains("repeats the prompt's example text \"new rule\""),
        "{:?}",
        record.validation_errors
    );
    assert!(record.reason.contains("example text"), "{}", record.reason);
    let feedback = llm.requests()[1].last_user().to_owned();
    assert!(
        feedback.starts_with(FEEDBACK_INVALID_CANDIDATE),
        "{feedback}"
    );
    // A real edit after the feedback is accepted.
    let good = reply(json!([{"op": "append", "content": "Recount before answering."}]));
    let (_, record) = run(vec![echo(), good], builtin()).await;
    assert_eq!(record.status, EvolutionStatus::Accepted);
    let (_, record) = run(vec![echo()], crate::support::prompts()).await;
    assert_eq!(record.status, EvolutionStatus::Accepted);
}
