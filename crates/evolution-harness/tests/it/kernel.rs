//! End to end through the real kernel and the real adapters: a simulated
//! agent whose answers depend on rules in its skill files, a scripted LLM
//! that judges and proposes helpful, harmful and neutral edits,
//! `KernelProposer` (diagnose → case packs → evolve), the on-disk store,
//! the SQLite run log and the checkpoint file.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use evolution_evolve::EditBudgetSchedule;
use evolution_harness::{
    AgentReply, Budget, EventLog, EvolutionReport, InProcessRunner, LoopConfig, LoopContext,
    LoopError, LoopState, PromptTemplates, StopReason, VersionedStore, Workspace, run_evolution,
};
use evolution_runlog_sqlite::SqliteRunLog;
use evolution_store_fs::FsStore;
use evolution_store_fs::{FileCheckpoint, FsVersionedStore};
use evolution_testkit::ScriptedLlm;
use evolution_testkit::fixtures::skill_document;
use evolution_types::{GeneratedQuestion, RunLog};
use serde_json::json;

use crate::support::{
    Dying, edits, gate, kernel_proposer, loop_config, reply, resuming, set, summary,
};

pub(crate) const HELP_A: &str = "Rule: read the a-clue before answering.";
pub(crate) const HARM_B: &str = "Rule: skip the b-check to save time.";
pub(crate) const HELP_B: &str = "Rule: always run the b-check twice.";
pub(crate) const NEUTRAL_C: &str = "Note: stay calm on c questions.";

/// Type `a` is right only with [`HELP_A`] in `a.md`; type `b` is right on
/// even questions, on all with [`HELP_B`] and on none with [`HARM_B`] in
/// `b.md`; type `c` is always wrong.
pub(crate) fn agent(ws: &Workspace, q: &GeneratedQuestion) -> Result<AgentReply, String> {
    let skill = |name: &str| ws.skills.get(name).map(String::as_str).unwrap_or_default();
    let even = q
        .question_id
        .chars()
        .last()
        .and_then(|c| c.to_digit(10))
        .is_some_and(|d| d % 2 == 0);
    let right = match q.task_type.as_str() {
        "a" => skill("a.md").contains(HELP_A),
        "b" if skill("b.md").contains(HARM_B) => false,
        "b" => skill("b.md").contains(HELP_B) || even,
        _ => false,
    };
    Ok(reply(q, right))
}

/// Answers every judge with one object that satisfies them all (evidence
/// sufficient, a defect), the slow update with guidance, and the evolve
/// prompts per task type: `a` gets the helpful rule; `b` the harmful one
/// until it shows up among the rejected edits, then the helpful one; `c` a
/// neutral note, then nothing.
pub(crate) fn scripted_llm() -> ScriptedLlm {
    ScriptedLlm::from_fn(|request| {
        let text = request.full_text();
        if text.starts_with("You write the long-term guidance") {
            return Ok("Keep the rules that fixed earlier failures.".to_owned());
        }
        if text.starts_with("You improve a skill document") {
            let reply = if text.contains("task type `a`") {
                edits(&[HELP_A])
            } else if text.contains("task type `b`") {
                edits(&[if text.contains(HARM_B) {
                    HELP_B
                } else {
                    HARM_B
                }])
            } else if text.contains(NEUTRAL_C) {
                edits(&[])
            } else {
                edits(&[NEUTRAL_C])
            };
            return Ok(reply);
        }
        Ok(json!({
            "extraction_completeness": 1.0, "hallucination_rate": 0.0,
            "missed_info_tags": [], "hallucination_tags": [], "missed_nodes": [],
            "steps": [{"step": "read", "followed": true, "reason": "ok"}],
            "adherence_rate": 1.0, "confirmation_bias": false, "evidence_sufficient": true,
            "category": "defect", "lapse_note": "", "type": "logic_error"
        })
        .to_string())
    })
}

/// Everything a run leaves on disk, under one directory.
pub(crate) fn init_store(dir: &Path) {
    let body = |t: &str| {
        format!(
            "# Answering {t} questions\n\n1. Read the question and the options carefully.\n\
             2. Look for the evidence the question needs before choosing.\n\
             3. Answer with the option the evidence supports.\n"
        )
    };
    let files: Vec<(String, String)> = ["a", "b", "c"]
        .iter()
        .map(|t| (format!("{t}.md"), skill_document(t, t, &body(t))))
        .collect();
    FsStore::init(dir.join("store"), files, "initial skills").unwrap();
}

/// One process's worth of a run: opens the store, log and checkpoint in
/// `dir`, runs until done or killed, and counts rollouts.
async fn run_once(
    dir: &Path,
    kill_at: usize,
    rollouts: &AtomicUsize,
) -> (Result<EvolutionReport, LoopError>, usize) {
    let store = FsVersionedStore::new(FsStore::open(dir.join("store")).unwrap());
    let log = SqliteRunLog::open(dir.join("runs.sqlite")).unwrap();
    let checkpoint = Dying::new(FileCheckpoint::new(dir.join("loop.json")), kill_at);
    let llm = scripted_llm();
    let train = set("t", 10);
    let schedule = EditBudgetSchedule::Linear { start: 3, end: 1 };
    let proposer = kernel_proposer(&llm, &log, train.clone(), schedule);
    let runner = InProcessRunner::new(|ws: &Workspace, q: &GeneratedQuestion| {
        rollouts.fetch_add(1, Ordering::Relaxed);
        agent(ws, q)
    });
    let budget = Budget::unlimited();
    let events = EventLog::new();
    let ctx = LoopContext {
        validation: resuming(&runner, &log, &budget, &events),
        store: &store,
        proposer: &proposer,
        llm: &llm,
        checkpoint: &checkpoint,
        ledger: None,
    };
    let config = LoopConfig {
        slow_update_template: Some(PromptTemplates::default().slow_update),
        ..loop_config("k", 3, train)
    };
    let result = run_evolution(ctx, &config, gate("k", 11)).await;
    (result, checkpoint.saves.load(Ordering::Relaxed))
}

pub(crate) fn final_documents(dir: &Path) -> BTreeMap<String, String> {
    let store = FsVersionedStore::new(FsStore::open(dir.join("store")).unwrap());
    store.documents(&store.current_version().unwrap()).unwrap()
}

#[tokio::test]
async fn the_kernel_loop_keeps_helpful_edits_rejects_harmful_ones_and_improves_holdout() {
    let dir = tempfile::tempdir().unwrap();
    init_store(dir.path());
    let rollouts = AtomicUsize::new(0);
    let (report, _) = run_once(dir.path(), 0, &rollouts).await;
    let report = report.unwrap();
    assert_eq!(report.stop_reason, StopReason::MaxEpochs);

    let rows = summary(&report);
    let accepted: Vec<_> = rows.iter().filter(|r| r.1).map(|r| r.0.as_str()).collect();
    let rejected: Vec<_> = rows.iter().filter(|r| !r.1).map(|r| r.0.as_str()).collect();
    assert_eq!(accepted, ["k_e0_0-a.md", "k_e1_0-b.md"], "{rows:?}");
    // The slow update's guidance is gated like any candidate; it changes
    // no answer, so the gate rejects it and it never becomes the baseline.
    assert_eq!(
        rejected,
        [
            "k_e0_1-b.md",
            "k_e0_2-c.md",
            "k_e1_slow-update-a.md",
            "k_e1_slow-update-b.md",
            "k_e2_slow-update-b.md"
        ],
        "{rows:?}"
    );

    let docs = final_documents(dir.path());
    assert!(docs["a.md"].contains(HELP_A), "{}", docs["a.md"]);
    assert!(docs["b.md"].contains(HELP_B) && !docs["b.md"].contains(HARM_B));
    assert!(!docs["c.md"].contains(NEUTRAL_C));
    let (before, after) = (
        report.holdout_before.unwrap(),
        report.holdout_after.unwrap(),
    );
    assert!((before - 5.0 / 30.0).abs() < 1e-9, "{before}");
    assert!((after - 20.0 / 30.0).abs() < 1e-9, "{after}");

    // Every accepted version is in the on-disk history.
    let store = FsVersionedStore::new(FsStore::open(dir.path().join("store")).unwrap());
    let history: Vec<String> = store
        .history()
        .unwrap()
        .into_iter()
        .map(|h| h.version)
        .collect();
    for row in rows.iter().filter(|r| r.1) {
        assert!(
            history.contains(row.2.as_ref().unwrap()),
            "{row:?} {history:?}"
        );
    }
    assert_eq!(report.final_version, *history.last().unwrap());

    // The rollouts are in the SQLite log, both gate arms included.
    let log = SqliteRunLog::open(dir.path().join("runs.sqlite")).unwrap();
    let runs: Vec<String> = log
        .runs()
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.run_id)
        .collect();
    assert!(
        runs.iter().any(|r| r.starts_with("k_train_e0_")),
        "{runs:?}"
    );
    assert!(
        runs.iter().any(|r| r.starts_with("k_gate_cand_")),
        "{runs:?}"
    );
    let train0 = runs.iter().find(|r| r.starts_with("k_train_e0_")).unwrap();
    assert_eq!(log.get_predictions(train0, None).await.unwrap().len(), 30);

    // Each epoch's diagnosis and each gated proposal's record are stored
    // under the epoch's training run, and read back.
    let diagnoses = log.diagnoses(train0).await.unwrap();
    assert_eq!(diagnoses.len(), 1, "{diagnoses:?}");
    assert_eq!(diagnoses[0].run_id, *train0);
    assert_eq!(diagnoses[0].n_questions, 30);
    assert!(!diagnoses[0].attributions.is_empty());
    let evolutions = log.evolutions(train0).await.unwrap();
    let stored: Vec<(&str, Option<&str>)> = evolutions
        .iter()
        .flat_map(|e| &e.records)
        .map(|r| (r.target_file.as_str(), r.result_version.as_deref()))
        .collect();
    let a_version = rows[0].2.as_deref();
    assert_eq!(
        stored,
        [("a.md", a_version), ("b.md", None), ("c.md", None)],
        "{rows:?}"
    );
    for train in runs.iter().filter(|r| r.starts_with("k_train_")) {
        assert_eq!(log.diagnoses(train).await.unwrap().len(), 1, "{train}");
    }

    // The harmful edit is blacklisted as rejected by the gate, with no gate figure.
    let state = LoopState::load(&FileCheckpoint::new(dir.path().join("loop.json")))
        .unwrap()
        .unwrap();
    let harm = state
        .rejected
        .iter()
        .find(|r| r.edit.content == HARM_B)
        .unwrap();
    assert_eq!(
        harm.reason,
        evolution_types::GATE_REJECTED_REASON,
        "{harm:?}"
    );
}

#[tokio::test]
async fn the_budget_schedule_and_the_blacklist_reach_the_evolve_prompts() {
    let dir = tempfile::tempdir().unwrap();
    init_store(dir.path());
    let store = FsVersionedStore::new(FsStore::open(dir.path().join("store")).unwrap());
    let log = SqliteRunLog::open(dir.path().join("runs.sqlite")).unwrap();
    let llm = scripted_llm();
    let train = set("t", 10);
    let schedule = EditBudgetSchedule::Linear { start: 3, end: 1 };
    let proposer = kernel_proposer(&llm, &log, train.clone(), schedule);
    // A training run recorded through the harness's recorder.
    let runner = InProcessRunner::new(agent);
    let version = store.current_version().unwrap();
    let mut ws = Workspace::new(&version);
    ws.skills = store.documents(&version).unwrap();
    let outcomes = evolution_harness::AgentRunner::run(&runner, "train", &ws, &train)
        .await
        .unwrap();
    evolution_harness::RunRecorder::record(&log, &outcomes)
        .await
        .unwrap();
    let rejected = vec![evolution_types::RejectedEdit {
        edit: evolution_types::Edit::append(HARM_B),
        target_file: "b.md".into(),
        reason: evolution_types::GATE_REJECTED_REASON.into(),
        source_version: version.clone(),
    }];
    let events = evolution_harness::EventLog::new();
    let budget = evolution_harness::Budget::unlimited();
    let request = |epoch| evolution_harness::ProposeRequest {
        epoch,
        max_epochs: 3,
        train_run_id: "train",
        workspace: &ws,
        rejected: &rejected,
        phases: evolution_harness::Phases::new(&events, &budget, epoch),
    };
    use evolution_harness::{HarnessEvent, Phase, Proposer};
    assert_eq!(proposer.opening_phase(), Phase::Diagnose);
    let first = proposer.propose(request(0)).await.unwrap().proposals;
    // After its diagnosis (the loop announces that), one `propose` phase per
    // document it evolves; the LLM calls of the edits are charged to it.
    let announced: Vec<(u32, Phase, String)> = events
        .events()
        .into_iter()
        .filter_map(|e| match e {
            HarnessEvent::PhaseStarted {
                epoch,
                phase,
                subject,
            } => Some((epoch, phase, subject)),
            _ => None,
        })
        .collect();
    assert_eq!(
        announced,
        ["a.md", "b.md", "c.md"].map(|d| (0, Phase::Propose, d.to_owned()))
    );
    assert_eq!(budget.phase(), Some(Phase::Propose));
    let targets: Vec<_> = first
        .iter()
        .map(|p| p.record.target_file.as_str())
        .collect();
    assert_eq!(targets, ["a.md", "b.md", "c.md"]);
    // With the harmful edit blacklisted, b gets the helpful one.
    assert!(first[1].writes["b.md"].contains(HELP_B));
    let evolve_prompts = |from: usize| -> Vec<String> {
        llm.requests()
            .into_iter()
            .skip(from)
            .map(|r| r.full_text())
            .filter(|t| t.starts_with("You improve a skill document"))
            .collect()
    };
    let prompts = evolve_prompts(0);
    assert_eq!(prompts.len(), 3);
    assert!(prompts.iter().all(|p| p.contains("At most 3 edits")));
    assert!(prompts[1].contains(&format!(
        "{HARM_B:?} — {}",
        evolution_types::GATE_REJECTED_REASON
    )));
    let seen = llm.requests().len();
    proposer.propose(request(2)).await.unwrap();
    let late = evolve_prompts(seen);
    assert_eq!(late.len(), 3);
    // Linear 3 → 1 over 3 epochs: 3 + (1 − 3)·2/3 ≈ 1.67, rounded to 2.
    assert!(late.iter().all(|p| p.contains("At most 2 edits")));
}

#[tokio::test]
async fn a_killed_run_resumes_from_disk_to_the_same_result() {
    let whole = tempfile::tempdir().unwrap();
    init_store(whole.path());
    let total = AtomicUsize::new(0);
    let (expected, saves) = run_once(whole.path(), 0, &total).await;
    let expected = expected.unwrap();
    let total = total.load(Ordering::Relaxed);
    assert!(saves >= 10, "{saves}");
    let expected_docs = final_documents(whole.path());

    // Killed at every checkpoint save, mid-epoch included; each time everything is
    // reopened from disk, as a new process would.
    for kill in 1..=saves {
        let dir = tempfile::tempdir().unwrap();
        init_store(dir.path());
        let rollouts = AtomicUsize::new(0);
        let (killed, _) = run_once(dir.path(), kill, &rollouts).await;
        assert!(
            matches!(killed, Err(LoopError::Checkpoint(_))),
            "kill {kill}: {killed:?}"
        );
        let (resumed, _) = run_once(dir.path(), 0, &rollouts).await;
        let resumed = resumed.unwrap();
        assert_eq!(summary(&resumed), summary(&expected), "kill {kill}");
        assert_eq!(resumed.final_version, expected.final_version, "kill {kill}");
        assert_eq!(
            (resumed.holdout_before, resumed.holdout_after),
            (expected.holdout_before, expected.holdout_after),
            "kill {kill}"
        );
        assert_eq!(final_documents(dir.path()), expected_docs, "kill {kill}");
        assert_eq!(
            rollouts.load(Ordering::Relaxed),
            total,
            "kill {kill}: rollouts repeated"
        );
    }
}
