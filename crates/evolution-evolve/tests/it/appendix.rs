//! Lapse notes that would overflow the appendix: consolidated, and never at the cost of the
//! validated body patch.

use evolution_evolve::EvolveOptions;
use evolution_patch::{APPENDIX_MAX_CHARS, extract_appendix_notes};
use evolution_testkit::{MemoryStore, ScriptedLlm};
use evolution_types::{EvolutionRecord, EvolutionStatus, SkillCasePack};
use serde_json::json;

use crate::format::case;
use crate::support::{assert_accepted, evolver};

const FILE: &str = "counting.md";
const SKILL: &str = "---\nname: counting\ndescription: How to count things.\ntask_type: Counting\n---\n# Counting\n\n## Steps\n1. Find the segment.\n2. Count each object once.\n";

/// The skill with an appendix of `n` notes of 150 characters each (152 written, plus a
/// line break between notes).
fn skill_with_notes(n: usize) -> String {
    let notes: String = (0..n)
        .map(|i| format!("- note {i:02} {}\n", "x".repeat(142)))
        .collect();
    format!(
        "{SKILL}\n<!-- APPENDIX_START -->\n## Execution Notes Appendix\n{notes}<!-- APPENDIX_END -->\n"
    )
}

fn pack(failures: usize, lapses: &[String]) -> SkillCasePack {
    SkillCasePack {
        task_type: "Counting".to_owned(),
        target_file: FILE.to_owned(),
        failure_cases: (0..failures).map(|i| case(&format!("q{i}"), 30)).collect(),
        lapse_notes: lapses.to_vec(),
        ..SkillCasePack::default()
    }
}

/// Only the size triggers consolidation in these tests.
fn options() -> EvolveOptions {
    EvolveOptions {
        consolidate_threshold: 1000,
        ..EvolveOptions::default()
    }
}

fn body_patch() -> String {
    json!({"edits": [{"op": "append", "target": "", "content": "3. Recount before answering."}]})
        .to_string()
}

fn long_lapse() -> Vec<String> {
    vec![format!("Check the units {}", "y".repeat(180))]
}

fn appendix_size(doc: &str) -> usize {
    let notes = extract_appendix_notes(doc).unwrap();
    notes.iter().map(|n| n.chars().count() + 2).sum::<usize>() + notes.len().saturating_sub(1)
}

/// The skill with twelve notes, evolved from one failure and a lapse note too long to fit in
/// its appendix: the model patches the body, then answers the consolidation request with
/// `consolidation`. The body patch is always applied. Returns the model, the original and
/// the record.
async fn overflow(consolidation: String) -> (ScriptedLlm, String, EvolutionRecord) {
    let original = skill_with_notes(12);
    assert!(appendix_size(&original) < APPENDIX_MAX_CHARS);
    let store = MemoryStore::new().with(FILE, original.as_str());
    let llm = ScriptedLlm::with_replies([body_patch(), consolidation]);
    let record = evolver(&llm, options())
        .skill(&pack(1, &long_lapse()), &store)
        .await
        .unwrap();
    assert_accepted(&record);
    assert_eq!(record.llm_calls, 2);
    assert!(
        record
            .evolved_content
            .contains("3. Recount before answering.")
    );
    (llm, original, record)
}

#[tokio::test]
async fn overflow_consolidates_and_keeps_the_body_patch() {
    let merged = json!({"notes": ["Notes 00 to 11 merged.", "Check the units."]});
    let (llm, _, record) = overflow(merged.to_string()).await;
    assert_eq!(
        llm.requests()[1].options.tag.as_deref(),
        Some("evolve.consolidate")
    );
    // 12 existing notes and the new one went to the consolidation.
    assert!(
        llm.requests()[1]
            .last_user()
            .contains("13. Check the units")
    );
    assert_eq!(
        extract_appendix_notes(&record.evolved_content).unwrap(),
        ["Notes 00 to 11 merged.", "Check the units."]
    );
    assert!(
        record
            .reason
            .contains("appendix consolidated from 13 to 2 notes"),
        "{}",
        record.reason
    );
}

#[tokio::test]
async fn failed_consolidation_applies_the_body_and_reports_the_appendix_not_applied() {
    let (_, original, record) = overflow("I cannot do that.".to_owned()).await;
    // The appendix is as it was: the old notes, without the one that did not fit.
    assert_eq!(
        extract_appendix_notes(&record.evolved_content).unwrap(),
        extract_appendix_notes(&original).unwrap()
    );
    assert!(
        record.reason.starts_with("patch: 1 edit(s) applied"),
        "{}",
        record.reason
    );
    assert!(
        record
            .reason
            .contains("appendix not applied: the appendix would take")
            && record.reason.contains("over its limit of 2000")
            && record.reason.contains("not a JSON object"),
        "{}",
        record.reason
    );
    assert!(record.validation_errors.is_empty());
}

#[tokio::test]
async fn a_consolidation_that_still_overflows_is_not_applied_but_the_body_is() {
    // Fewer notes, but still far over the limit.
    let huge: Vec<String> = (0..4)
        .map(|i| format!("merged {i} {}", "z".repeat(700)))
        .collect();
    let (_, _, record) = overflow(json!({ "notes": huge }).to_string()).await;
    assert!(!record.evolved_content.contains("merged 0"));
    assert!(
        record.reason.contains("appendix not applied")
            && record.reason.contains("cannot be written"),
        "{}",
        record.reason
    );
}

#[tokio::test]
async fn lapse_only_overflow_without_consolidation_changes_nothing_and_says_why() {
    let original = skill_with_notes(12);
    let store = MemoryStore::new().with(FILE, original.as_str());
    let llm = ScriptedLlm::with_replies([r#"{"notes": []}"#]);
    let record = evolver(&llm, options())
        .skill(&pack(0, &long_lapse()), &store)
        .await
        .unwrap();
    assert_eq!(record.status, EvolutionStatus::Rejected);
    assert_eq!(record.evolved_content, original);
    // No synthesized "applied" report for a note that was not written.
    assert!(record.apply_report.is_empty());
    assert!(
        record.validation_errors[0].starts_with("appendix not applied"),
        "{:?}",
        record.validation_errors
    );
    assert!(
        record.reason.ends_with("nothing changed"),
        "{}",
        record.reason
    );
}

#[tokio::test]
async fn the_size_threshold_triggers_consolidation_below_the_limit() {
    let original = skill_with_notes(2);
    let store = MemoryStore::new().with(FILE, original.as_str());
    let opts = EvolveOptions {
        consolidate_chars: 400,
        ..options()
    };
    // 2 × 152 + 1 + the new note's 18 + 1 = 324 characters: below 400, no call.
    let short = vec!["Check the units.".to_owned()];
    let llm = ScriptedLlm::new();
    let record = evolver(&llm, opts.clone())
        .skill(&pack(0, &short), &store)
        .await
        .unwrap();
    assert_eq!(llm.call_count(), 0);
    assert_eq!(record.status, EvolutionStatus::Accepted);
    assert_eq!(appendix_size(&record.evolved_content), 324);
    // With the long note it would take 2 × 152 + 1 + 198 + 1 = 504 > 400: consolidated.
    // The same number of notes, but fewer characters: kept for a size trigger.
    let llm = ScriptedLlm::with_replies([r#"{"notes": ["old notes", "units", "check units"]}"#]);
    let record = evolver(&llm, opts)
        .skill(&pack(0, &long_lapse()), &store)
        .await
        .unwrap();
    assert_eq!(record.llm_calls, 1);
    assert_accepted(&record);
    assert_eq!(
        extract_appendix_notes(&record.evolved_content).unwrap(),
        ["old notes", "units", "check units"]
    );
    assert!(record.reason.contains("504 to"), "{}", record.reason);
}
