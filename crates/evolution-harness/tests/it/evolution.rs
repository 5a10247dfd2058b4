use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use evolution_gate::GateParams;
use evolution_harness::{
    AgentRunner, Budget, BudgetExceeded, BudgetLimits, EventLog, EvolutionReport, Gatekeeper,
    InProcessRunner, LoopConfig, LoopContext, LoopError, LoopState, PromptTemplates, Proposal,
    Proposals, ProposeError, ProposeRequest, Proposer, StopReason, ValidationConfig,
    ValidationContext, ValidationError, VersionedStore, Workspace, run_evolution,
};
use evolution_testkit::ScriptedLlm;
use evolution_testkit::{MemoryCheckpoint, MemoryRunLog, MemoryVersionedStore};
use evolution_types::{Edit, EvolutionRecord, GeneratedQuestion, TargetType};

use crate::support::{Dying, gate, loop_config, reply, resuming, set, summary};
use crate::validate::answer;

/// The text of `s.md`, the one skill document of these tests (empty when it is missing).
fn skill_of(ws: &Workspace) -> &str {
    ws.skills
        .get("s.md")
        .map(String::as_str)
        .unwrap_or_default()
}

/// The agent of `validate.rs`, with a third rule: type `c` is right only with `fix:c`.
fn agent(ws: &Workspace, q: &GeneratedQuestion) -> Result<evolution_harness::AgentReply, String> {
    let skill = skill_of(ws);
    // A rule that games the gate: right on gate questions, wrong on fresh
    // type-b questions (the probation pool's), no effect elsewhere.
    let gamed = q.question_id.starts_with("g-") || q.question_id.starts_with("p-b");
    if skill.contains("sneaky") && gamed {
        let right = q.question_id.starts_with("g-");
        return Ok(reply(q, right));
    }
    // A rule that memorised its training failures (and was lucky on the
    // gate): right on every training and gate question, no effect elsewhere.
    let seen = q.question_id.starts_with("t-") || q.question_id.starts_with("g-");
    if skill.contains("memo") && seen {
        return Ok(reply(q, true));
    }
    if q.task_type == "c" {
        let right = skill.contains("fix:c");
        return Ok(reply(q, right));
    }
    answer(ws, q)
}

/// Proposes appends to `s.md`, epoch by epoch, from a plan of (label, rule) per epoch.
struct Scripted {
    calls: AtomicUsize,
    plan: Vec<Vec<(&'static str, &'static str)>>,
}

/// The plan of [`World::new`]: harmful first, then helpful, then neutral.
const PLAN: [&[(&str, &str)]; 3] = [
    &[
        ("harm", "break:b"),
        ("help-a", "fix:a"),
        ("noop", "note: be careful"),
    ],
    &[("noop", "note: double-check"), ("help-c", "fix:c")],
    &[],
];

impl Scripted {
    fn new(plan: &[&[(&'static str, &'static str)]]) -> Self {
        Scripted {
            calls: AtomicUsize::new(0),
            plan: plan.iter().map(|epoch| epoch.to_vec()).collect(),
        }
    }
}

#[async_trait]
impl Proposer for Scripted {
    async fn propose(&self, request: ProposeRequest<'_>) -> Result<Proposals, ProposeError> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        let skill = skill_of(request.workspace).to_owned();
        let plan = self
            .plan
            .get(request.epoch as usize)
            .cloned()
            .unwrap_or_default();
        Ok(plan
            .iter()
            .map(|(label, rule)| {
                let text = format!("{skill}\n{rule}\n");
                let mut record = EvolutionRecord::new("s.md", TargetType::Skill, skill.clone(), "");
                record.edits = vec![Edit::append(*rule)];
                record.evolved_content = text.clone();
                Proposal {
                    label: (*label).into(),
                    writes: BTreeMap::from([("s.md".to_owned(), text)]),
                    record,
                }
            })
            .collect::<Vec<_>>()
            .into())
    }
}

/// A checkpoint in memory whose `fail_at`-th save fails, as if the process died there.
type Flaky = Dying<MemoryCheckpoint>;

struct World {
    store: MemoryVersionedStore,
    log: MemoryRunLog,
    checkpoint: Flaky,
    events: EventLog,
    proposer: Scripted,
    llm: ScriptedLlm,
    rollouts: AtomicUsize,
}

impl World {
    fn new() -> Self {
        World::with_guidance("Keep the rules that fixed earlier failures.")
    }

    /// A world whose LLM writes `guidance` in every slow update.
    fn with_guidance(guidance: &'static str) -> Self {
        World {
            store: MemoryVersionedStore::new(BTreeMap::from([(
                "s.md".to_owned(),
                "# Skill\n".to_owned(),
            )])),
            log: MemoryRunLog::new(),
            checkpoint: Flaky::default(),
            events: EventLog::new(),
            proposer: Scripted::new(&PLAN),
            llm: ScriptedLlm::from_fn(move |_| Ok(guidance.to_owned())),
            rollouts: AtomicUsize::new(0),
        }
    }

    /// The loop's context in this world: `runner`, `budget` and `proposer`, the world's run
    /// log (resumed from when `resume`), store, LLM, checkpoint and events.
    fn context<'a>(
        &'a self,
        runner: &'a dyn AgentRunner,
        budget: &'a Budget,
        proposer: &'a dyn Proposer,
        llm: &'a dyn evolution_types::LlmProvider,
        resume: bool,
    ) -> LoopContext<'a> {
        LoopContext {
            validation: ValidationContext {
                runner,
                recorder: &self.log,
                budget,
                events: &self.events,
                resume_from: if resume { Some(&self.log) } else { None },
            },
            store: &self.store,
            proposer,
            llm,
            checkpoint: &self.checkpoint,
            ledger: None,
        }
    }

    /// The agent of this file, counting its rollouts in the world.
    fn runner(&self) -> impl AgentRunner + '_ {
        InProcessRunner::new(|ws: &Workspace, q: &GeneratedQuestion| {
            self.rollouts.fetch_add(1, Ordering::Relaxed);
            agent(ws, q)
        })
    }

    async fn run(&self, budget: &Budget, resume: bool) -> Result<EvolutionReport, LoopError> {
        self.run_with(budget, resume, &self.llm).await
    }

    /// A run whose slow update calls `llm`.
    async fn run_with(
        &self,
        budget: &Budget,
        resume: bool,
        llm: &dyn evolution_types::LlmProvider,
    ) -> Result<EvolutionReport, LoopError> {
        let runner = self.runner();
        let ctx = self.context(&runner, budget, &self.proposer, llm, resume);
        let config = LoopConfig {
            slow_update_template: Some(PromptTemplates::default().slow_update),
            ..loop_config("e2e", 3, set("t", 10))
        };
        run_evolution(ctx, &config, gate("e2e", 11)).await
    }
}

#[tokio::test]
async fn helpful_edits_are_kept_harmful_ones_rejected_and_holdout_improves() {
    let world = World::new();
    let report = world.run(&Budget::unlimited(), false).await.unwrap();
    assert_eq!(report.stop_reason, StopReason::MaxEpochs);
    assert_eq!(report.epochs, 3);
    // Epoch 0: harm rejected, help-a accepted (v2), noop (written against v1)
    // rebased on v2 and rejected. Epoch 1: noop rejected, help-c accepted (v3),
    // then the slow update's guidance (it changes no answer) is gated and
    // rejected; epoch 2 proposes nothing and its slow update is rejected too.
    let rows = summary(&report);
    let accepted: Vec<_> = rows.iter().filter(|r| r.1).map(|r| r.0.as_str()).collect();
    let rejected: Vec<_> = rows.iter().filter(|r| !r.1).map(|r| r.0.as_str()).collect();
    assert_eq!(accepted, ["e2e_e0_help-a", "e2e_e1_help-c"]);
    assert_eq!(
        rejected,
        [
            "e2e_e0_harm",
            "e2e_e0_noop",
            "e2e_e1_noop",
            "e2e_e1_slow-update-s.md",
            "e2e_e2_slow-update-s.md"
        ]
    );
    let history: Vec<_> = world
        .store
        .history()
        .unwrap()
        .into_iter()
        .map(|h| h.version)
        .collect();
    assert_eq!(history, ["v1", "v2", "v3"]);
    assert_eq!(report.final_version, "v3");
    for row in rows.iter().filter(|r| r.1) {
        assert!(
            history.contains(row.2.as_ref().unwrap()),
            "{row:?} not in {history:?}"
        );
    }
    let final_skill = world.store.documents(&report.final_version).unwrap()["s.md"].clone();
    assert!(
        final_skill.contains("fix:a") && final_skill.contains("fix:c"),
        "{final_skill}"
    );
    assert!(!final_skill.contains("break:b"));
    assert!(
        !final_skill.contains("<!-- SLOW_UPDATE_START -->"),
        "{final_skill}"
    );
    let (before, after) = (
        report.holdout_before.unwrap(),
        report.holdout_after.unwrap(),
    );
    assert!(after > before, "holdout {before} -> {after}");
    assert!((before - 1.0 / 3.0).abs() < 1e-9 && (after - 1.0).abs() < 1e-9);
    // The blacklist carries the rejected edits, with no gate evidence.
    let state = LoopState::load(&world.checkpoint).unwrap().unwrap();
    let harm = state
        .rejected
        .iter()
        .find(|r| r.edit.content == "break:b")
        .unwrap();
    assert_eq!(harm.reason, evolution_types::GATE_REJECTED_REASON);
    assert_eq!(world.proposer.calls.load(Ordering::Relaxed), 3);
    // Each gated proposal's record is in the run log under its epoch's
    // training run, with the version its accept wrote.
    let stored = |run_id: &str| -> Vec<(String, String, Option<String>)> {
        world
            .log
            .evolutions(run_id)
            .into_iter()
            .flat_map(|e| {
                let source = e.source_version.clone();
                e.records.into_iter().map(move |r| {
                    let edit = r
                        .edits
                        .first()
                        .map(|e| e.content.clone())
                        .unwrap_or_default();
                    (source.clone(), edit, r.result_version)
                })
            })
            .collect()
    };
    let v = |s: &str| s.to_owned();
    assert_eq!(
        stored("e2e_train_e0_v1"),
        [
            (v("v1"), v("break:b"), None),
            (v("v1"), v("fix:a"), Some(v("v2"))),
            (v("v1"), v("note: be careful"), None)
        ]
    );
    assert_eq!(
        stored("e2e_train_e1_v2"),
        [
            (v("v2"), v("note: double-check"), None),
            (v("v2"), v("fix:c"), Some(v("v3"))),
            // The slow update, written against v3 and rejected.
            (v("v3"), v(""), None)
        ]
    );
    // The scripted proposer does not diagnose.
    assert!(world.log.diagnoses("e2e_train_e0_v1").is_empty());
}

#[tokio::test]
async fn a_run_killed_mid_epoch_resumes_to_the_same_result_without_repeating_work() {
    let whole = World::new();
    let expected = whole.run(&Budget::unlimited(), false).await.unwrap();
    let total = whole.rollouts.load(Ordering::Relaxed);

    let world = World::new();
    let capped = Budget::new(BudgetLimits {
        max_rollouts: Some(150),
        ..BudgetLimits::default()
    })
    .unwrap();
    // The cap is a clean stop with a partial report.
    let stopped = world.run(&capped, true).await.unwrap();
    assert!(
        matches!(
            stopped.stop_reason,
            StopReason::Budget(BudgetExceeded::Rollouts { limit: 150, .. })
        ),
        "{:?}",
        stopped.stop_reason
    );
    assert_eq!(
        (stopped.holdout_before, stopped.holdout_after),
        (None, None)
    );
    assert!(stopped.records.len() < expected.records.len());
    assert!(matches!(
        world.events.events().last(),
        Some(evolution_harness::HarnessEvent::RunFinished { .. })
    ));
    let first = world.rollouts.load(Ordering::Relaxed);
    assert!(first > 0 && first < total);
    let resumed = world.run(&Budget::unlimited(), true).await.unwrap();
    assert_eq!(summary(&resumed), summary(&expected));
    assert_eq!(resumed.final_version, expected.final_version);
    assert_eq!(
        (resumed.holdout_before, resumed.holdout_after),
        (expected.holdout_before, expected.holdout_after)
    );
    assert_eq!(
        world.rollouts.load(Ordering::Relaxed),
        total,
        "rollouts were repeated"
    );
    assert_eq!(
        world.proposer.calls.load(Ordering::Relaxed),
        3,
        "proposer calls were repeated"
    );
}

#[tokio::test]
async fn overlapping_splits_fail_before_any_rollout() {
    let world = World::new();
    let runner = world.runner();
    let budget = Budget::unlimited();
    let ctx = world.context(&runner, &budget, &world.proposer, &world.llm, false);
    let config = LoopConfig {
        gate: set("t", 2),
        holdout: vec![],
        ..loop_config("x", 1, set("t", 3))
    };
    let err = run_evolution(ctx, &config, Gatekeeper::new(ValidationConfig::default()))
        .await
        .unwrap_err();
    assert!(
        matches!(err, LoopError::Validation(ValidationError::SplitOverlap(_))),
        "{err}"
    );
    assert_eq!(world.rollouts.load(Ordering::Relaxed), 0);
}

#[tokio::test]
async fn a_run_killed_at_any_checkpoint_resumes_to_the_same_result() {
    let whole = World::new();
    let expected = whole.run(&Budget::unlimited(), false).await.unwrap();
    let total_rollouts = whole.rollouts.load(Ordering::Relaxed);
    let total_llm = whole.llm.requests().len();
    let saves = whole.checkpoint.saves.load(Ordering::Relaxed);
    assert!(saves >= 10, "{saves}");
    for kill in 1..=saves {
        let world = World::new();
        world.checkpoint.fail_at.store(kill, Ordering::Relaxed);
        let err = world.run(&Budget::unlimited(), true).await.unwrap_err();
        assert!(
            matches!(err, LoopError::Checkpoint(_)),
            "kill {kill}: {err}"
        );
        world.checkpoint.fail_at.store(0, Ordering::Relaxed);
        let resumed = world.run(&Budget::unlimited(), true).await.unwrap();
        assert_eq!(summary(&resumed), summary(&expected), "kill {kill}");
        assert_eq!(resumed.final_version, expected.final_version, "kill {kill}");
        assert_eq!(
            (resumed.holdout_before, resumed.holdout_after),
            (expected.holdout_before, expected.holdout_after),
            "kill {kill}"
        );
        // Rollouts are recorded as they finish, so none is ever repeated; only
        // the one step whose save was lost may be asked of an LLM again.
        assert_eq!(
            world.rollouts.load(Ordering::Relaxed),
            total_rollouts,
            "kill {kill}"
        );
        assert!(
            world.proposer.calls.load(Ordering::Relaxed) <= 4,
            "kill {kill}"
        );
        assert!(world.llm.requests().len() <= total_llm + 1, "kill {kill}");
        for run in ["e2e_train_e0_v1", "e2e_train_e1_v2"] {
            assert_eq!(
                world.log.evolutions(run),
                whole.log.evolutions(run),
                "kill {kill}: evolution results stored twice or lost"
            );
        }
        let history = world.store.history().unwrap().len();
        assert_eq!(
            history,
            whole.store.history().unwrap().len(),
            "kill {kill}: a version was written twice"
        );
    }
}

/// Proposes one rule, in the first epoch only.
struct OneRule(&'static str);

#[async_trait]
impl Proposer for OneRule {
    async fn propose(&self, request: ProposeRequest<'_>) -> Result<Proposals, ProposeError> {
        if request.epoch > 0 {
            return Ok(Proposals::default());
        }
        let skill = skill_of(request.workspace).to_owned();
        let text = format!("{skill}\n{}\n", self.0);
        let mut record = EvolutionRecord::new("s.md", TargetType::Skill, skill, "");
        record.edits = vec![Edit::append(self.0)];
        Ok(vec![Proposal {
            label: self.0.into(),
            writes: BTreeMap::from([("s.md".to_owned(), text)]),
            record,
        }]
        .into())
    }
}

/// Runs three epochs of `rule` with six gate questions the baseline gets
/// wrong (W = 6, E ≈ 18.1 < 20 at exhaustion, so the gate can only accept
/// provisionally) and `probation` as the probation pool.
async fn provisional(
    world: &World,
    rule: &'static str,
    probation: Vec<GeneratedQuestion>,
) -> EvolutionReport {
    let report = provisional_run(world, rule, probation).await.unwrap();
    let record = &report.records[0];
    assert!(record.accepted);
    assert_eq!(
        record.validation.as_ref().map(|v| v.decision()),
        Some(evolution_gate::GateDecision::AcceptProvisional)
    );
    assert_eq!(record.new_version.as_deref(), Some("v2"));
    report
}

async fn provisional_run(
    world: &World,
    rule: &'static str,
    probation: Vec<GeneratedQuestion>,
) -> Result<EvolutionReport, LoopError> {
    let runner = world.runner();
    let budget = Budget::unlimited();
    let proposer = OneRule(rule);
    let ctx = world.context(&runner, &budget, &proposer, &world.llm, true);
    let config = LoopConfig {
        gate: set("g", 10)
            .into_iter()
            .filter(|q| q.task_type == "a")
            .take(6)
            .collect(),
        holdout: vec![],
        probation,
        ..loop_config("sn", 3, set("t", 10))
    };
    let gate = ValidationConfig {
        gate_run_prefix: "sn_gate_".into(),
        ladder: vec![6],
        seed: 1,
        gate_guard_err: 0.2,
        params: GateParams::default(),
        calibration: evolution_harness::Calibration::EProcess,
    };
    run_evolution(ctx, &config, Gatekeeper::new(gate)).await
}

fn settled(world: &World) -> Vec<(String, evolution_gate::ProbationVerdict, u64, u64)> {
    world
        .events
        .events()
        .into_iter()
        .filter_map(|e| match e {
            evolution_harness::HarnessEvent::ProbationSettled {
                version,
                verdict,
                w,
                l,
            } => Some((version, verdict, w, l)),
            _ => None,
        })
        .collect()
}

/// The rule is right on every training question it was written from and
/// on the gate, and changes nothing on fresh questions. Judged on the
/// training questions (twenty wins) it would be confirmed; on the
/// probation pool it gains nothing and stays unverified.
#[tokio::test]
async fn a_candidate_that_memorised_its_training_failures_is_not_confirmed() {
    let world = World::new();
    let report = provisional(&world, "memo", set("p", 10)).await;
    assert_eq!(
        settled(&world),
        [(
            "v2".to_owned(),
            evolution_gate::ProbationVerdict::Unverified,
            0,
            0
        )]
    );
    let watch = report.records[0].probation.clone().unwrap();
    assert_eq!(
        watch.verdict,
        Some(evolution_gate::ProbationVerdict::Unverified)
    );
    assert_eq!(watch.seen.len(), 30);
    assert!(
        watch.seen.keys().all(|id| id.starts_with("p-")),
        "{watch:?}"
    );
    // Every probation rollout ran under the gate's marker, none under training.
    let runs = world.log.run_ids();
    assert!(runs.iter().any(|r| r == "sn_gate_probation_v2"), "{runs:?}");
    assert!(
        runs.iter().any(|r| r == "sn_gate_probation_v2_base_v1"),
        "{runs:?}"
    );
    assert_eq!(report.final_version, "v2");
}

/// The version in place fails on the probation pool (the agent broke after the accept):
/// the probation stops the run instead of judging the new version on nothing.
#[tokio::test]
async fn a_probation_whose_previous_version_mostly_fails_stops_the_run() {
    let world = World::new();
    let pool: Vec<GeneratedQuestion> = set("p", 10)
        .into_iter()
        .filter(|q| q.task_type != "c")
        .map(|mut q| {
            q.question = "infra:v1".into();
            q
        })
        .collect();
    let error = provisional_run(&world, "memo", pool).await.unwrap_err();
    let LoopError::Validation(ValidationError::TooManyFailures(failures)) = error else {
        panic!("{error:?}");
    };
    assert_eq!(failures.phase, evolution_harness::Phase::Probation);
    assert_eq!(failures.run_id, "sn_gate_probation_v2_base_v1");
    // The first block of six: every answer of the previous version failed.
    assert_eq!(
        (failures.count.rollouts, failures.count.agent_failures),
        (6, 6)
    );
    assert_eq!(
        failures.to_string(),
        "the agent failed on 6 of 6 questions of sn_gate_probation_v2_base_v1"
    );
    // The version on probation was never run.
    let runs = world.log.run_ids();
    assert!(
        !runs.iter().any(|r| r == "sn_gate_probation_v2"),
        "{runs:?}"
    );
}

/// A probation pool that overlaps the questions a candidate was written
/// from is refused before any rollout.
#[tokio::test]
async fn a_probation_pool_with_training_questions_is_refused() {
    let world = World::new();
    let runner = InProcessRunner::new(agent);
    let budget = Budget::unlimited();
    let proposer = OneRule("memo");
    let ctx = world.context(&runner, &budget, &proposer, &world.llm, false);
    let config = LoopConfig {
        gate: set("g", 2),
        holdout: vec![],
        probation: set("t", 1),
        ..loop_config("x", 1, set("t", 3))
    };
    let err = run_evolution(ctx, &config, Gatekeeper::new(ValidationConfig::default()))
        .await
        .unwrap_err();
    assert!(
        matches!(err, LoopError::Validation(ValidationError::SplitOverlap(ref ids)) if ids.len() == 3),
        "{err}"
    );
    assert!(world.log.run_ids().is_empty());
}

#[tokio::test]
async fn a_provisional_accept_that_hurts_fresh_questions_is_rolled_back() {
    let world = World::new();
    let pool: Vec<GeneratedQuestion> = set("p", 10)
        .into_iter()
        .filter(|q| q.task_type == "b")
        .collect();
    let report = provisional(&world, "sneaky", pool).await;
    // Right after the accept, v2 and v1 answer the pool: the first block
    // holds six type-b losses, E(L, W) ≈ 18.1 ≥ 10.
    assert_eq!(
        settled(&world),
        [(
            "v2".to_owned(),
            evolution_gate::ProbationVerdict::Rollback,
            0,
            6
        )]
    );
    assert_eq!(
        report.records[0].probation.as_ref().and_then(|p| p.verdict),
        Some(evolution_gate::ProbationVerdict::Rollback)
    );
    assert_eq!(report.final_version, "v1");
    assert_eq!(world.store.current_version().unwrap(), "v1");
    let state = LoopState::load(&world.checkpoint).unwrap().unwrap();
    assert!(state.probations.is_empty());
    assert_eq!(report.epochs, 3);

    // Killed at any checkpoint save, the run resumes to the same result:
    // no rollout repeated, the rollback done once, no version written twice.
    let rollouts = world.rollouts.load(Ordering::Relaxed);
    let saves = world.checkpoint.saves.load(Ordering::Relaxed);
    let pool = || -> Vec<GeneratedQuestion> {
        set("p", 10)
            .into_iter()
            .filter(|q| q.task_type == "b")
            .collect()
    };
    for kill in 1..=saves {
        let again = World::new();
        again.checkpoint.fail_at.store(kill, Ordering::Relaxed);
        let killed = provisional_run(&again, "sneaky", pool()).await;
        assert!(
            matches!(killed, Err(LoopError::Checkpoint(_))),
            "kill {kill}"
        );
        again.checkpoint.fail_at.store(0, Ordering::Relaxed);
        let resumed = provisional_run(&again, "sneaky", pool()).await.unwrap();
        assert_eq!(summary(&resumed), summary(&report), "kill {kill}");
        assert_eq!(
            resumed.records[0].probation, report.records[0].probation,
            "kill {kill}"
        );
        assert_eq!(resumed.final_version, "v1", "kill {kill}");
        assert_eq!(
            again.store.history().unwrap().len(),
            world.store.history().unwrap().len(),
            "kill {kill}"
        );
        assert_eq!(
            again.rollouts.load(Ordering::Relaxed),
            rollouts,
            "kill {kill}"
        );
    }
}

/// Three edits of `s.md` written against the same text, as the patch
/// engine applies them: `help-a` rewrites the first line, `help-c` appends
/// (still applies after `help-a`), `lost` inserts after the line `help-a`
/// rewrote (no longer applies).
struct SameFile;

#[async_trait]
impl Proposer for SameFile {
    async fn propose(&self, request: ProposeRequest<'_>) -> Result<Proposals, ProposeError> {
        if request.epoch > 0 {
            return Ok(Proposals::default());
        }
        let skill = skill_of(request.workspace).to_owned();
        let plan = [
            (
                "help-a",
                Edit::replace("1. Read the question.", "1. Read the question, fix:a."),
            ),
            ("help-c", Edit::append("fix:c")),
            (
                "lost",
                Edit::insert_after("1. Read the question.", "x: never"),
            ),
        ];
        Ok(plan
            .into_iter()
            .map(|(label, edit)| {
                let edits = vec![edit];
                let (text, _) = evolution_patch::apply_patch_with_report(&skill, &edits, &[]);
                let mut record = EvolutionRecord::new("s.md", TargetType::Skill, skill.clone(), "");
                record.edits = edits;
                record.evolved_content = text.clone();
                Proposal {
                    label: label.into(),
                    writes: BTreeMap::from([("s.md".to_owned(), text)]),
                    record,
                }
            })
            .collect::<Vec<_>>()
            .into())
    }
}

async fn run_same_file(
    store: &MemoryVersionedStore,
    log: &MemoryRunLog,
    checkpoint: &Flaky,
) -> Result<EvolutionReport, LoopError> {
    let runner = InProcessRunner::new(agent);
    let budget = Budget::unlimited();
    let llm = ScriptedLlm::new();
    let events = EventLog::new();
    let ctx = LoopContext {
        validation: resuming(&runner, log, &budget, &events),
        store,
        proposer: &SameFile,
        llm: &llm,
        checkpoint,
        ledger: None,
    };
    run_evolution(ctx, &loop_config("r", 1, set("t", 10)), gate("r", 11)).await
}

fn same_file_store() -> MemoryVersionedStore {
    MemoryVersionedStore::new(BTreeMap::from([(
        "s.md".to_owned(),
        "# Skill\n1. Read the question.\n".to_owned(),
    )]))
}

#[tokio::test]
async fn a_stale_proposal_is_rebased_when_its_edits_still_apply() {
    let store = same_file_store();
    let log = MemoryRunLog::new();
    let checkpoint = Flaky::default();
    let report = run_same_file(&store, &log, &checkpoint).await.unwrap();
    // help-c was written against v1 but gated (and accepted) on v2, with its
    // append re-applied; lost's anchor is gone, so it is skipped.
    assert_eq!(
        summary(&report),
        [
            ("r_e0_help-a".to_owned(), true, Some("v2".to_owned())),
            ("r_e0_help-c".to_owned(), true, Some("v3".to_owned())),
        ]
    );
    let docs = store.documents(&report.final_version).unwrap();
    assert!(docs["s.md"].contains("1. Read the question, fix:a."));
    assert!(docs["s.md"].contains("fix:c"));
    assert!(!docs["s.md"].contains("x: never"));
    assert!((report.holdout_after.unwrap() - 1.0).abs() < 1e-9);
    // The stored record says what was gated: v2's text and the rebased text.
    let stored = log.evolutions("r_train_e0_v1");
    let help_c = &stored[1].records[0];
    assert_eq!(
        help_c.original_content,
        store.documents("v2").unwrap()["s.md"]
    );
    assert_eq!(help_c.evolved_content, docs["s.md"]);
    assert_eq!(help_c.result_version.as_deref(), Some("v3"));

    // Killed at any checkpoint save, it resumes to the same result, with
    // no version written twice and the records stored once.
    let saves = checkpoint.saves.load(Ordering::Relaxed);
    for kill in 1..=saves {
        let (world_store, world_log, world_checkpoint) =
            (same_file_store(), MemoryRunLog::new(), Flaky::default());
        world_checkpoint.fail_at.store(kill, Ordering::Relaxed);
        let killed = run_same_file(&world_store, &world_log, &world_checkpoint).await;
        assert!(
            matches!(killed, Err(LoopError::Checkpoint(_))),
            "kill {kill}"
        );
        world_checkpoint.fail_at.store(0, Ordering::Relaxed);
        let resumed = run_same_file(&world_store, &world_log, &world_checkpoint)
            .await
            .unwrap();
        assert_eq!(summary(&resumed), summary(&report), "kill {kill}");
        assert_eq!(
            world_store.history().unwrap().len(),
            store.history().unwrap().len(),
            "kill {kill}"
        );
        assert_eq!(world_log.evolutions("r_train_e0_v1"), stored, "kill {kill}");
    }
}

/// The slow update's guidance reaches the agent (it is part of the skill),
/// so guidance that breaks answers is a harmful change: the gate rejects it,
/// the report records it, and it never becomes the baseline.
#[tokio::test]
async fn a_harmful_slow_update_is_gated_and_not_adopted() {
    let world = World::with_guidance("Prefer the old habit: break:b");
    let report = world.run(&Budget::unlimited(), false).await.unwrap();
    let slow: Vec<_> = report
        .records
        .iter()
        .filter(|r| r.candidate.contains("_slow-update-"))
        .collect();
    assert_eq!(slow.len(), 2, "{:?}", summary(&report));
    for record in &slow {
        assert!(!record.accepted, "{record:?}");
        assert_eq!(record.new_version, None);
        let v = record.validation.as_ref().unwrap();
        assert!(v.l > 0 && v.w == 0, "{v:?}");
    }
    let history = world.store.history().unwrap();
    assert!(
        history.iter().all(|h| !h.message.contains("slow-update")),
        "{history:?}"
    );
    let final_skill = world.store.documents(&report.final_version).unwrap()["s.md"].clone();
    assert!(!final_skill.contains("break:b"), "{final_skill}");
    assert!((report.holdout_after.unwrap() - 1.0).abs() < 1e-9);
    // The rejections are events of the run, like any candidate's.
    let rejected = world
        .events
        .events()
        .into_iter()
        .filter(|e| {
            matches!(e, evolution_harness::HarnessEvent::CandidateRejected { candidate, .. }
                if candidate.contains("_slow-update-"))
        })
        .count();
    assert_eq!(rejected, 2);
}

/// Every phase the loop enters is announced before its work, in the order
/// of the epochs, and the budget charges each phase what it used: the
/// phases' usage adds up to the run's.
#[tokio::test]
async fn phases_are_announced_in_order_and_their_usage_adds_up_to_the_run() {
    use evolution_harness::{HarnessEvent, MeteredLlm, Phase, Price, Usage};
    let world = World::new();
    let budget = std::sync::Arc::new(
        Budget::new(BudgetLimits {
            prices: BTreeMap::from([(
                "scripted-model".to_owned(),
                Price {
                    prompt_per_million: 1_000_000.0,
                    completion_per_million: 2_000_000.0,
                },
            )]),
            ..BudgetLimits::default()
        })
        .unwrap(),
    );
    let llm = MeteredLlm::new(&world.llm, std::sync::Arc::clone(&budget));
    let report = world.run_with(&budget, false, &llm).await.unwrap();
    assert_eq!(report.epochs, 3);
    let events = world.events.events();
    let phases: Vec<(u32, Phase, String)> = events
        .iter()
        .filter_map(|e| match e {
            HarnessEvent::PhaseStarted {
                epoch,
                phase,
                subject,
            } => Some((*epoch, *phase, subject.clone())),
            _ => None,
        })
        .collect();
    let p = |epoch: u32, phase: Phase, subject: &str| (epoch, phase, subject.to_owned());
    assert_eq!(
        phases,
        [
            p(0, Phase::Rollout, "e2e_train_e0_v1"),
            p(0, Phase::Propose, "e2e_train_e0_v1"),
            p(0, Phase::Gate, "e2e_e0_harm"),
            p(0, Phase::Gate, "e2e_e0_help-a"),
            p(0, Phase::Gate, "e2e_e0_noop"),
            p(1, Phase::Rollout, "e2e_train_e1_v2"),
            p(1, Phase::Propose, "e2e_train_e1_v2"),
            p(1, Phase::Gate, "e2e_e1_noop"),
            p(1, Phase::Gate, "e2e_e1_help-c"),
            p(1, Phase::SlowUpdate, "s.md"),
            p(1, Phase::Gate, "e2e_e1_slow-update-s.md"),
            p(2, Phase::Rollout, "e2e_train_e2_v3"),
            p(2, Phase::Propose, "e2e_train_e2_v3"),
            p(2, Phase::SlowUpdate, "s.md"),
            p(2, Phase::Gate, "e2e_e2_slow-update-s.md"),
            p(3, Phase::Rollout, "e2e_holdout_v1"),
            p(3, Phase::Rollout, "e2e_holdout_v3"),
        ]
    );
    // Each phase is announced before its own events: the first block of a
    // gate comes after the gate's announcement, the run's start before all.
    let position = |wanted: &dyn Fn(&HarnessEvent) -> bool| events.iter().position(wanted).unwrap();
    let gate_started = position(
        &|e| matches!(e, HarnessEvent::PhaseStarted { subject, .. } if subject == "e2e_e0_harm"),
    );
    let first_block = position(&|e| matches!(e, HarnessEvent::BlockGated { .. }));
    let first_phase = position(&|e| matches!(e, HarnessEvent::PhaseStarted { .. }));
    assert!(matches!(events[0], HarnessEvent::RunStarted { .. }));
    assert_eq!(first_phase, 1);
    assert!(gate_started < first_block);
    assert!(matches!(
        events.last(),
        Some(HarnessEvent::RunFinished { .. })
    ));

    let total = budget.usage();
    let by_phase = budget.usage_by_phase();
    let sum = by_phase
        .values()
        .fold(Usage::default(), |acc, u| acc.plus(u));
    assert_eq!(
        (
            sum.llm_calls,
            sum.prompt_tokens,
            sum.completion_tokens,
            sum.rollouts
        ),
        (
            total.llm_calls,
            total.prompt_tokens,
            total.completion_tokens,
            total.rollouts
        )
    );
    assert!((sum.cost - total.cost).abs() < 1e-9, "{sum:?} vs {total:?}");
    // Only the slow update calls the LLM here; the training and holdout
    // rollouts are 3 × 30 + 2 × 30, the gates run both arms.
    let slow = &by_phase[&Phase::SlowUpdate];
    assert_eq!((slow.llm_calls, slow.rollouts), (2, 0));
    assert!(slow.cost > 0.0 && slow.completion_tokens > 0, "{slow:?}");
    assert_eq!(by_phase[&Phase::Rollout].rollouts, 150);
    assert_eq!(by_phase[&Phase::Rollout].llm_calls, 0);
    assert!(by_phase[&Phase::Gate].rollouts > 0);
    assert!(!by_phase.contains_key(&Phase::Diagnose));
}

/// A candidate that changes one skill is gated on the gate questions of the task types that
/// skill serves (`gate_scope`): none of the other task types' questions is asked.
#[tokio::test]
async fn a_skills_candidate_is_gated_only_on_the_task_types_it_serves() {
    let world = World::new();
    let runner = world.runner();
    let budget = Budget::unlimited();
    let proposer = OneRule("memo");
    let ctx = world.context(&runner, &budget, &proposer, &world.llm, false);
    let config = LoopConfig {
        gate: set("g", 10),
        gate_scope: BTreeMap::from([(
            "s.md".to_owned(),
            std::collections::BTreeSet::from(["a".to_owned()]),
        )]),
        holdout: vec![],
        ..loop_config("sc", 1, set("t", 10))
    };
    let gate = ValidationConfig {
        gate_run_prefix: "sc_gate_".into(),
        ladder: vec![5, 10],
        seed: 1,
        gate_guard_err: 0.2,
        params: GateParams::default(),
        calibration: evolution_harness::Calibration::EProcess,
    };
    let report = run_evolution(ctx, &config, Gatekeeper::new(gate))
        .await
        .unwrap();
    let validation = report.records[0].validation.as_ref().unwrap();
    assert_eq!(
        validation.n_used + validation.n_remaining,
        10,
        "{validation:?}"
    );
    assert!(
        validation.observed.keys().all(|id| id.starts_with("g-a")),
        "{validation:?}"
    );
    // Without a scope the same candidate is gated on all thirty gate questions.
    let world = World::new();
    let runner = world.runner();
    let ctx = world.context(&runner, &budget, &proposer, &world.llm, false);
    let whole = LoopConfig {
        gate_scope: BTreeMap::new(),
        ..config
    };
    let gate = ValidationConfig {
        gate_run_prefix: "sc_gate_".into(),
        ladder: vec![5, 10],
        seed: 1,
        gate_guard_err: 0.2,
        params: GateParams::default(),
        calibration: evolution_harness::Calibration::EProcess,
    };
    let report = run_evolution(ctx, &whole, Gatekeeper::new(gate))
        .await
        .unwrap();
    let validation = report.records[0].validation.as_ref().unwrap();
    assert_eq!(
        validation.n_used + validation.n_remaining,
        30,
        "{validation:?}"
    );
}

/// The plan of the capped runs. Epoch 0: fix:c wins the odd c training questions, break:b
/// loses the b ones, fix:a wins the a ones; in the screen's fixed order fix:c passes first.
/// Epoch 1 proposes fix:a again.
fn capped_plan() -> Scripted {
    Scripted::new(&[
        &[
            ("help-c", "fix:c"),
            ("harm", "break:b"),
            ("help-a", "fix:a"),
        ],
        &[("help-a", "fix:a")],
    ])
}

/// Two epochs of `proposer` in `world`, each candidate screened on 30 training questions
/// and one gated per epoch.
async fn capped_run(
    world: &World,
    proposer: &Scripted,
    resume: bool,
) -> Result<EvolutionReport, LoopError> {
    let runner = world.runner();
    let budget = Budget::unlimited();
    let ctx = world.context(&runner, &budget, proposer, &world.llm, resume);
    let config = LoopConfig {
        slow_update_template: Some(PromptTemplates::default().slow_update),
        ..loop_config("e2e", 2, set("t", 10))
    };
    let rule = evolution_harness::ScreenRule {
        questions: 30,
        block: 5,
        ..evolution_harness::ScreenRule::default()
    };
    let keeper = gate("e2e", 11).with_screen(rule).with_best_per_epoch(1);
    assert_eq!(keeper.best_per_epoch(), Some(1));
    run_evolution(ctx, &config, keeper).await
}

#[tokio::test]
async fn under_a_cap_per_epoch_only_the_best_screened_candidates_are_gated() {
    let world = World::new();
    let report = capped_run(&world, &capped_plan(), false).await.unwrap();

    // One gate test per epoch: the best screened candidate's.
    let rows = summary(&report);
    let gated: Vec<_> = rows.iter().map(|r| (r.0.as_str(), r.1)).collect();
    assert_eq!(gated.len(), 2, "{gated:?} {:?}", report.dropped);
    assert_eq!(gated, [("e2e_e0_help-c", true), ("e2e_e1_help-a", true)]);
    let dropped: Vec<_> = report
        .dropped
        .iter()
        .map(|d| (d.candidate.as_str(), d.reasons.join("; ")))
        .collect();
    assert_eq!(dropped.len(), 3, "{dropped:?}");
    assert_eq!(dropped[0].0, "e2e_e0_harm");
    assert!(
        dropped[0]
            .1
            .starts_with("screened out on training questions: W=0")
    );
    assert_eq!(dropped[1].0, "e2e_e0_help-a");
    assert_eq!(
        dropped[1].1,
        "not among this epoch's 1 best on training questions (W - L = 2 on 10 question(s)); \
         only the best are gated",
    );
    // The slow update of epoch 1 comes after the epoch's one test.
    assert_eq!(dropped[2].0, "e2e_e1_slow-update-s.md");
    assert_eq!(dropped[2].1, "this epoch's 1 gate test(s) are used");
    // A candidate only outranked keeps its edits off the blacklist; a screened-out one not.
    let state = LoopState::load(&world.checkpoint).unwrap().unwrap();
    let blacklisted: Vec<String> = state
        .rejected
        .iter()
        .map(|r| format!("{:?}", r.edit))
        .collect();
    assert!(
        blacklisted.iter().any(|e| e.contains("break:b")),
        "{blacklisted:?}"
    );
    assert!(
        !blacklisted.iter().any(|e| e.contains("fix:a")),
        "{blacklisted:?}"
    );
    let final_skill = world.store.documents(&report.final_version).unwrap()["s.md"].clone();
    assert!(final_skill.contains("fix:a") && final_skill.contains("fix:c"));
}

#[tokio::test]
async fn a_capped_run_killed_at_any_checkpoint_ranks_once_and_ends_the_same() {
    let whole = World::new();
    let expected = capped_run(&whole, &capped_plan(), false).await.unwrap();
    let total_rollouts = whole.rollouts.load(Ordering::Relaxed);
    let saves = whole.checkpoint.saves.load(Ordering::Relaxed);
    assert!(saves >= 6, "{saves}");
    for kill in 1..=saves {
        let world = World::new();
        world.checkpoint.fail_at.store(kill, Ordering::Relaxed);
        let err = capped_run(&world, &capped_plan(), true).await.unwrap_err();
        assert!(
            matches!(err, LoopError::Checkpoint(_)),
            "kill {kill}: {err}"
        );
        world.checkpoint.fail_at.store(0, Ordering::Relaxed);
        let resumed = capped_run(&world, &capped_plan(), true).await.unwrap();
        assert_eq!(summary(&resumed), summary(&expected), "kill {kill}");
        assert_eq!(resumed.dropped, expected.dropped, "kill {kill}");
        assert_eq!(resumed.final_version, expected.final_version, "kill {kill}");
        // Screens and gates replay their recorded rollouts: none is run twice.
        assert_eq!(
            world.rollouts.load(Ordering::Relaxed),
            total_rollouts,
            "kill {kill}"
        );
    }
}
