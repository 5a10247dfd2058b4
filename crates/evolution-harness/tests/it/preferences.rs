//! The project's house rules in the loop: a proposal that breaks a check is dropped before
//! its gate (nothing spent on it, its reasons reported and blacklisted), and the slow
//! update's prompt carries their text.

use std::collections::BTreeMap;

use async_trait::async_trait;
use evolution_evolve::preferences::Preferences;
use evolution_harness::{
    Budget, EventLog, HarnessEvent, InProcessRunner, LoopConfig, LoopContext, LoopState, Proposal,
    Proposals, ProposeError, ProposeRequest, Proposer, SLOW_UPDATE, Workspace, run_evolution,
    slow_update,
};
use evolution_testkit::{MemoryCheckpoint, MemoryRunLog, MemoryVersionedStore, ScriptedLlm};
use evolution_types::{Edit, EvolutionRecord, GeneratedQuestion, TargetType};

use crate::support::{gate, loop_config, resuming, set};
use crate::validate::answer;

/// Proposes two appends to `s.md` in the first epoch: `bad` (with a forbidden word) and
/// `good`.
struct TwoRules;

#[async_trait]
impl Proposer for TwoRules {
    async fn propose(&self, request: ProposeRequest<'_>) -> Result<Proposals, ProposeError> {
        if request.epoch > 0 {
            return Ok(Proposals::default());
        }
        let skill = request
            .workspace
            .skills
            .get("s.md")
            .cloned()
            .unwrap_or_default();
        let proposal = |label: &str, rule: &str| {
            let text = format!("{skill}\n{rule}\n");
            let mut record = EvolutionRecord::new("s.md", TargetType::Skill, skill.clone(), "");
            record.edits = vec![Edit::append(rule)];
            record.evolved_content = text.clone();
            Proposal {
                label: label.into(),
                writes: BTreeMap::from([("s.md".to_owned(), text)]),
                record,
            }
        };
        Ok(vec![proposal("bad", "fix:a, ALWAYS"), proposal("good", "fix:a")].into())
    }
}

#[tokio::test]
async fn a_proposal_that_breaks_a_preference_is_dropped_before_its_gate() {
    let store = MemoryVersionedStore::new(BTreeMap::from([(
        "s.md".to_owned(),
        "# Skill\n".to_owned(),
    )]));
    let log = MemoryRunLog::new();
    let checkpoint = MemoryCheckpoint::new();
    let events = EventLog::new();
    let llm = ScriptedLlm::new();
    let runner = InProcessRunner::new(|ws: &Workspace, q: &GeneratedQuestion| answer(ws, q));
    let budget = Budget::unlimited();
    let ctx = LoopContext {
        validation: resuming(&runner, &log, &budget, &events),
        store: &store,
        proposer: &TwoRules,
        llm: &llm,
        checkpoint: &checkpoint,
        ledger: None,
    };
    let config = LoopConfig {
        preferences: Preferences::parse("```checks\nforbidden = [\"always\"]\n```\n").unwrap(),
        ..loop_config("pr", 1, set("t", 10))
    };
    let report = run_evolution(ctx, &config, gate("pr", 1)).await.unwrap();

    let reason = "breaks preference 'forbidden \"always\"' in s.md: adds 1 occurrence";
    assert_eq!(report.dropped.len(), 1);
    assert_eq!(report.dropped[0].candidate, "pr_e0_bad");
    assert_eq!(report.dropped[0].reasons, [reason]);
    // Only the good proposal was gated: no rollout ran for the dropped one.
    let gated: Vec<&str> = report
        .records
        .iter()
        .map(|r| r.candidate.as_str())
        .collect();
    assert_eq!(gated, ["pr_e0_good"]);
    assert!(
        !log.run_ids().iter().any(|r| r.contains("bad")),
        "{:?}",
        log.run_ids()
    );
    assert!(events.events().contains(&HarnessEvent::CandidateDropped {
        candidate: "pr_e0_bad".into(),
        reasons: vec![reason.into()],
    }));
    // Its edit is blacklisted with the reason, for the next epoch's prompts.
    let state = LoopState::load(&checkpoint).unwrap().unwrap();
    let rejected = state
        .rejected
        .iter()
        .find(|r| r.edit.content == "fix:a, ALWAYS")
        .unwrap();
    assert_eq!(
        rejected.reason,
        format!("dropped before the gate: {reason}")
    );
}

#[tokio::test]
async fn the_slow_update_prompt_carries_the_house_rules() {
    let llm = ScriptedLlm::with_replies(["Keep the rules."]);
    let preferences = Preferences::parse("Keep the tone terse.").unwrap();
    let update = slow_update(
        &llm,
        SLOW_UPDATE.builtin,
        &preferences,
        "# Skill\n",
        "# Skill\nfix:a\n",
        &[],
    )
    .await
    .unwrap();
    assert!(update.updated);
    let prompt = llm.requests()[0].full_text();
    assert!(
        prompt.contains("## House rules of this project"),
        "{prompt}"
    );
    assert!(prompt.contains("Keep the tone terse."), "{prompt}");
    // Before the closing instructions, in place of the blank line the placeholder holds.
    assert!(
        prompt.find("Keep the tone terse.").unwrap()
            < prompt.find("Write the new guidance").unwrap()
    );
}
