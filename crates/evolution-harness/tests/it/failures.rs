//! A failure counts against the version that failed: a candidate that makes
//! the agent give up on the questions it would lose is rejected (with the
//! gate alone and under e-LOND); a comparison with too many questions left
//! out (both arms failed, or the agent never started) rejects that candidate
//! as `reject_infra` and the loop goes on with the next one.

use std::collections::{BTreeMap, BTreeSet};

use async_trait::async_trait;
use evolution_gate::{GateDecision, GateParams};
use evolution_harness::{
    AgentReply, AgentRunner, BaselineCache, Budget, Candidate, ELond, EventLog, GammaSequence,
    Gatekeeper, HarnessEvent, InProcessRunner, LoopConfig, LoopContext, Proposal, Proposals,
    ProposeError, ProposeRequest, Proposer, RunnerError, SubprocessConfig, SubprocessRunner,
    ValidationConfig, ValidationContext, ValidationError, Workspace, run_evolution,
    validate_candidate,
};
use evolution_testkit::fixtures::question;
use evolution_testkit::{MemoryCheckpoint, MemoryRunLog, MemoryVersionedStore, ScriptedLlm};
use evolution_types::{
    Edit, EvolutionRecord, GeneratedQuestion, QuestionOutcome, TargetType, VersionedStore,
};

use crate::support::{gate, loop_config, set};
use crate::validate::{answer, baseline, questions};

/// The agent of `validate.rs`, except that a skill saying `giveup:b` makes it
/// report an error on type `b` — the questions `break:b` would make it lose.
fn giving_up(ws: &Workspace, q: &GeneratedQuestion) -> Result<AgentReply, String> {
    let skill = ws.skills.get("s.md").map(String::as_str).unwrap_or("");
    if q.task_type == "b" && skill.contains("giveup:b") {
        return Ok(AgentReply {
            error: Some("unsure, stopped".into()),
            ..AgentReply::default()
        });
    }
    answer(ws, q)
}

/// Fixes type `a` (30 wins) and gives up on type `b` (30 questions the
/// baseline answers right): with failures left out it would pass with
/// W = 30, L = 0, and 30 failed rollouts of 160 stay under the 20% guard.
fn give_up_candidate() -> Candidate {
    Candidate {
        label: "giveup".into(),
        workspace: Workspace::new("giveup").with_skill("s.md", "base fix:a giveup:b"),
        provenance: BTreeSet::new(),
    }
}

/// One block of all 80 questions, the default parameters.
fn one_block() -> ValidationConfig {
    ValidationConfig {
        gate_run_prefix: "fs_gate_".into(),
        ladder: vec![80],
        seed: 5,
        gate_guard_err: 0.2,
        params: GateParams::default(),
        calibration: evolution_harness::Calibration::EProcess,
    }
}

#[tokio::test]
async fn a_candidate_that_gives_up_where_it_would_lose_is_rejected_by_the_gate() {
    let runner = InProcessRunner::new(giving_up);
    let (log, events, budget) = (MemoryRunLog::new(), EventLog::new(), Budget::unlimited());
    let ctx = ValidationContext {
        runner: &runner,
        recorder: &log,
        budget: &budget,
        events: &events,
        resume_from: None,
    };
    let out = validate_candidate(
        ctx,
        &one_block(),
        &baseline(),
        &give_up_candidate(),
        &questions(),
        &mut BaselineCache::new(),
    )
    .await
    .unwrap();
    assert!(!out.decision().is_accept(), "{out:?}");
    assert_eq!((out.w, out.l, out.n_used), (30, 30, 80), "{out:?}");
    assert_eq!(out.candidate_failures, 30);
    assert_eq!((out.baseline_failures, out.excluded), (0, 0));
    assert_eq!(out.infra_errors, 30);
    // The quadrants add up to W and L.
    let broken = out.observed.values().filter(|&&p| p == (true, false));
    assert_eq!(broken.count(), 30);
}

#[tokio::test]
async fn a_candidate_that_gives_up_where_it_would_lose_is_rejected_under_e_lond() {
    let runner = InProcessRunner::new(giving_up);
    let (log, events, budget) = (MemoryRunLog::new(), EventLog::new(), Budget::unlimited());
    let ctx = ValidationContext {
        runner: &runner,
        recorder: &log,
        budget: &budget,
        events: &events,
        resume_from: None,
    };
    let fdr = ELond::new(0.05, GammaSequence::Horizon { proposals: 2 }).unwrap();
    let mut keeper = Gatekeeper::new(one_block()).with_fdr(fdr);
    let store = MemoryVersionedStore::new(BTreeMap::from([("s.md".to_owned(), "base".to_owned())]));
    let candidate = give_up_candidate();
    let writes = BTreeMap::from([("s.md".to_owned(), "base fix:a giveup:b".to_owned())]);
    let record = keeper
        .judge(ctx, &store, &baseline(), &candidate, &writes, &questions())
        .await
        .unwrap();
    assert!(!record.accepted, "{record:?}");
    let v = record.validation.as_ref().unwrap();
    assert_eq!((v.w, v.l), (30, 30), "{v:?}");
    let fdr = record.fdr.unwrap();
    assert!(!fdr.discovery, "{fdr:?}");
    assert_eq!(store.current_version().unwrap(), "v1");
}

/// The agent of `validate.rs` behind a sandbox that cannot start while any
/// run id contains `outage`: every question of such a run is "not started".
struct Sandbox;

#[async_trait]
impl AgentRunner for Sandbox {
    async fn run(
        &self,
        run_id: &str,
        workspace: &Workspace,
        questions: &[GeneratedQuestion],
    ) -> Result<Vec<QuestionOutcome>, RunnerError> {
        if run_id.contains("outage") {
            return Ok(questions
                .iter()
                .map(|q| QuestionOutcome::not_started(run_id, q, "the sandbox is down"))
                .collect());
        }
        InProcessRunner::new(answer)
            .run(run_id, workspace, questions)
            .await
    }
}

/// Proposes, in epoch 0 only, a candidate whose gate hits the outage and
/// then the helpful `fix:a`.
struct TwoProposals;

#[async_trait]
impl Proposer for TwoProposals {
    async fn propose(&self, request: ProposeRequest<'_>) -> Result<Proposals, ProposeError> {
        if request.epoch > 0 {
            return Ok(Vec::new().into());
        }
        let skill = request
            .workspace
            .skills
            .get("s.md")
            .cloned()
            .unwrap_or_default();
        Ok([("outage", "note: be careful"), ("help-a", "fix:a")]
            .into_iter()
            .map(|(label, rule)| {
                let text = format!("{skill}\n{rule}\n");
                let mut record = EvolutionRecord::new("s.md", TargetType::Skill, skill.clone(), "");
                record.edits = vec![Edit::append(rule)];
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

#[tokio::test]
async fn a_tripped_infra_guard_rejects_the_candidate_and_the_loop_goes_on() {
    let store = MemoryVersionedStore::new(BTreeMap::from([(
        "s.md".to_owned(),
        "# Skill\n".to_owned(),
    )]));
    let (log, events, checkpoint) = (
        MemoryRunLog::new(),
        EventLog::new(),
        MemoryCheckpoint::default(),
    );
    let budget = Budget::unlimited();
    let llm = ScriptedLlm::from_fn(|_| Ok(String::new()));
    let ctx = LoopContext {
        validation: ValidationContext {
            runner: &Sandbox,
            recorder: &log,
            budget: &budget,
            events: &events,
            resume_from: None,
        },
        store: &store,
        proposer: &TwoProposals,
        llm: &llm,
        checkpoint: &checkpoint,
        ledger: None,
    };
    let config: LoopConfig = loop_config("fs", 1, set("t", 10));
    let report = run_evolution(ctx, &config, gate("fs", 11)).await.unwrap();
    let rows: Vec<_> = report
        .records
        .iter()
        .map(|r| {
            let v = r.validation.as_ref().unwrap();
            (r.candidate.as_str(), v.decision(), r.accepted, v.excluded)
        })
        .collect();
    // The first block of the outage's gate is all left out: 10 of 10 > 20%.
    assert_eq!(
        rows,
        [
            ("fs_e0_outage", GateDecision::RejectInfra, false, 10),
            ("fs_e0_help-a", GateDecision::AcceptConfirmed, true, 0),
        ]
    );
    let outage = report.records[0].validation.as_ref().unwrap();
    assert_eq!((outage.n_used, outage.blocks_used), (0, 1));
    assert!(events.events().iter().any(|e| matches!(
        e,
        HarnessEvent::CandidateRejected { candidate, decision: GateDecision::RejectInfra, .. }
            if candidate == "fs_e0_outage"
    )));
    let skill = &store.documents(&report.final_version).unwrap()["s.md"];
    assert!(
        skill.contains("fix:a") && !skill.contains("be careful"),
        "{skill}"
    );
}

#[tokio::test]
async fn an_agent_that_cannot_start_is_not_started_and_one_that_says_so_is_failed() {
    let qs = vec![question("q1", "a", "v")];
    let runner = SubprocessRunner::new(SubprocessConfig::new("/nonexistent/agent")).unwrap();
    let out = runner.run("r", &Workspace::new("v1"), &qs).await.unwrap();
    assert!(
        out[0].is_not_started() && out[0].is_infra_error(),
        "{out:?}"
    );
    // An agent that answered has started, whatever stop reason it claims.
    let claims = InProcessRunner::new(|_: &Workspace, _: &GeneratedQuestion| {
        Ok(AgentReply {
            stop_reason: "not_started".into(),
            ..AgentReply::default()
        })
    });
    let out = claims.run("r", &Workspace::new("v1"), &qs).await.unwrap();
    assert!(
        !out[0].is_not_started() && out[0].is_infra_error(),
        "{out:?}"
    );
    assert_eq!(out[0].prediction.stop_reason, "error");
}

/// An agent that fails every question while `broken` is set, and answers as
/// [`answer`] does once it is cleared.
struct Repairable {
    broken: std::sync::atomic::AtomicBool,
}

#[async_trait]
impl AgentRunner for Repairable {
    async fn run(
        &self,
        run_id: &str,
        workspace: &Workspace,
        questions: &[GeneratedQuestion],
    ) -> Result<Vec<QuestionOutcome>, RunnerError> {
        if self.broken.load(std::sync::atomic::Ordering::SeqCst) {
            return Ok(questions
                .iter()
                .map(|q| {
                    QuestionOutcome::infra_error(
                        run_id,
                        q,
                        format!(
                            "agent ended before answering {}: ModuleNotFoundError",
                            q.question_id
                        ),
                    )
                })
                .collect());
        }
        InProcessRunner::new(answer)
            .run(run_id, workspace, questions)
            .await
    }
}

#[tokio::test]
async fn a_loop_whose_agent_fails_every_training_question_stops_and_resumes_once_fixed() {
    let store = MemoryVersionedStore::new(BTreeMap::from([(
        "s.md".to_owned(),
        "# Skill\n".to_owned(),
    )]));
    let (log, events, checkpoint) = (
        MemoryRunLog::new(),
        EventLog::new(),
        MemoryCheckpoint::default(),
    );
    let budget = Budget::unlimited();
    let llm = ScriptedLlm::from_fn(|_| Ok(String::new()));
    let agent = Repairable {
        broken: true.into(),
    };
    let ctx = LoopContext {
        validation: crate::support::resuming(&agent, &log, &budget, &events),
        store: &store,
        proposer: &TwoProposals,
        llm: &llm,
        checkpoint: &checkpoint,
        ledger: None,
    };
    let config: LoopConfig = loop_config("fs", 1, set("t", 4));
    let stopped = run_evolution(ctx, &config, gate("fs", 11))
        .await
        .unwrap_err();
    let evolution_harness::LoopError::Validation(ValidationError::TooManyFailures(failures)) =
        stopped
    else {
        panic!("{stopped:?}");
    };
    assert_eq!(failures.phase, evolution_harness::Phase::Rollout);
    assert_eq!(failures.run_id, "fs_train_e0_v1");
    let count = &failures.count;
    assert_eq!(
        (count.rollouts, count.agent_failures, count.judge_failures),
        (12, 12, 0)
    );
    assert!(
        count
            .last_agent_error
            .as_deref()
            .unwrap()
            .ends_with("ModuleNotFoundError"),
        "{count:?}"
    );
    assert_eq!(
        failures.to_string(),
        "the agent failed on 12 of 12 questions of fs_train_e0_v1"
    );
    // Nothing was proposed or gated, and the store did not move.
    assert_eq!(store.current_version().unwrap(), "v1");
    assert!(
        !events
            .events()
            .iter()
            .any(|e| matches!(e, HarnessEvent::BlockGated { .. }))
    );

    // Fixed: the same checkpoint resumes, reruns the failed questions and finishes.
    agent
        .broken
        .store(false, std::sync::atomic::Ordering::SeqCst);
    let report = run_evolution(ctx, &config, gate("fs", 11)).await.unwrap();
    assert_eq!(report.records.len(), 2, "{report:?}");
    assert!(report.records.iter().any(|r| r.accepted), "{report:?}");
}

#[tokio::test]
async fn a_gate_whose_baseline_arm_mostly_fails_stops_instead_of_rejecting() {
    // The version in place fails every type-b question, and the first block
    // of 80 holds 30 of them: more than 5 failures, but not more than half.
    let mut qs = questions();
    for q in qs.iter_mut().filter(|q| q.task_type == "b") {
        q.question = "infra:v1".into();
    }
    let runner = InProcessRunner::new(answer);
    let (log, events, budget) = (MemoryRunLog::new(), EventLog::new(), Budget::unlimited());
    let ctx = ValidationContext {
        runner: &runner,
        recorder: &log,
        budget: &budget,
        events: &events,
        resume_from: None,
    };
    let candidate = give_up_candidate();
    let out = validate_candidate(
        ctx,
        &one_block(),
        &baseline(),
        &candidate,
        &qs,
        &mut BaselineCache::new(),
    )
    .await
    .unwrap();
    assert_eq!(out.baseline_failures + out.excluded, 30, "{out:?}");
    // Now it fails on the type-a questions as well: 60 of 80.
    for q in qs.iter_mut().filter(|q| q.task_type == "a") {
        q.question = "infra:v1".into();
    }
    let (log, events) = (MemoryRunLog::new(), EventLog::new());
    let ctx = ValidationContext {
        recorder: &log,
        events: &events,
        ..ctx
    };
    let error = validate_candidate(
        ctx,
        &one_block(),
        &baseline(),
        &candidate,
        &qs,
        &mut BaselineCache::new(),
    )
    .await
    .unwrap_err();
    let ValidationError::TooManyFailures(failures) = error else {
        panic!("{error:?}");
    };
    assert_eq!(failures.phase, evolution_harness::Phase::Gate);
    assert_eq!(failures.run_id, "fs_gate_base_v1");
    assert_eq!(
        (failures.count.rollouts, failures.count.agent_failures),
        (80, 60)
    );
    // The candidate's arm was never run.
    assert!(!events.events().iter().any(|e| matches!(
        e,
        HarnessEvent::QuestionDone {
            arm: evolution_harness::Arm::Candidate,
            ..
        }
    )));
}
