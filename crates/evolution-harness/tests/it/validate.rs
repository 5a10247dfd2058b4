use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

use evolution_gate::{GateDecision, GateParams};
use evolution_harness::{
    AgentReply, Arm, BaselineCache, Budget, BudgetExceeded, BudgetLimits, Candidate, DataSplit,
    ELond, EventLog, GammaSequence, HarnessEvent, InProcessRunner, ValidationConfig,
    ValidationContext, ValidationError, Workspace, fixed_question_order, params_for_level,
    validate_candidate,
};
use evolution_testkit::MemoryRunLog;
use evolution_testkit::fixtures::question;
use evolution_types::{GeneratedQuestion, RunLog};

use crate::support::reply;

/// A simulated agent: right on type `a` only when its skill says `fix:a`,
/// right on type `b` unless its skill says `break:b`, right on type `c`
/// on every other question. `infra:<version>` in the question text fails it.
pub(crate) fn answer(ws: &Workspace, q: &GeneratedQuestion) -> Result<AgentReply, String> {
    if q.question.contains(&format!("infra:{}", ws.version)) {
        return Err("sandbox died".into());
    }
    let skill = ws
        .skills
        .get("s.md")
        .map(String::as_str)
        .unwrap_or_default();
    let right = match q.task_type.as_str() {
        "a" => skill.contains("fix:a"),
        "b" => !skill.contains("break:b"),
        _ => q.question_id.ends_with(['0', '2', '4', '6', '8']),
    };
    Ok(reply(q, right))
}

pub(crate) fn questions() -> Vec<GeneratedQuestion> {
    let mut qs = Vec::new();
    for (t, n) in [("a", 30), ("b", 30), ("c", 20)] {
        for i in 0..n {
            qs.push(question(&format!("{t}{i:02}"), t, "v"));
        }
    }
    qs
}

pub(crate) fn baseline() -> Workspace {
    Workspace::new("v1").with_skill("s.md", "base")
}

fn candidate(label: &str, text: &str) -> Candidate {
    Candidate {
        label: label.into(),
        workspace: Workspace::new(label).with_skill("s.md", text),
        provenance: BTreeSet::from(["train-1".to_owned()]),
    }
}

struct Harness {
    calls: Mutex<BTreeMap<String, usize>>,
    log: MemoryRunLog,
    events: EventLog,
    budget: Budget,
    resume: bool,
    /// Question ids whose candidate-arm rollouts fail (INFRA) in this process.
    failing: BTreeSet<String>,
}

impl Harness {
    fn new(budget: Budget) -> Self {
        Harness {
            calls: Mutex::new(BTreeMap::new()),
            log: MemoryRunLog::new(),
            events: EventLog::new(),
            budget,
            resume: false,
            failing: BTreeSet::new(),
        }
    }

    /// A fresh process after a crash: same run log, new cache, no budget cap.
    fn resumed(self) -> Self {
        Harness {
            calls: Mutex::new(BTreeMap::new()),
            log: self.log,
            events: EventLog::new(),
            budget: Budget::unlimited(),
            resume: true,
            failing: BTreeSet::new(),
        }
    }

    async fn validate(
        &self,
        config: &ValidationConfig,
        cand: &Candidate,
        qs: &[GeneratedQuestion],
        cache: &mut BaselineCache,
    ) -> Result<evolution_harness::ValidationOutcome, ValidationError> {
        let runner = InProcessRunner::new(|ws: &Workspace, q: &GeneratedQuestion| {
            *self
                .calls
                .lock()
                .unwrap()
                .entry(ws.version.clone())
                .or_default() += 1;
            if ws.version != baseline().version && self.failing.contains(&q.question_id) {
                return Err("sandbox died".into());
            }
            answer(ws, q)
        });
        let ctx = ValidationContext {
            runner: &runner,
            recorder: &self.log,
            budget: &self.budget,
            events: &self.events,
            resume_from: if self.resume { Some(&self.log) } else { None },
        };
        validate_candidate(ctx, config, &baseline(), cand, qs, cache).await
    }

    fn calls(&self, version: &str) -> usize {
        self.calls
            .lock()
            .unwrap()
            .get(version)
            .copied()
            .unwrap_or(0)
    }

    fn total_calls(&self) -> usize {
        self.calls.lock().unwrap().values().sum()
    }
}

fn config() -> ValidationConfig {
    ValidationConfig {
        gate_run_prefix: "exp1_gate_".into(),
        ladder: vec![10, 20],
        seed: 7,
        gate_guard_err: 0.2,
        params: GateParams::default(),
        calibration: evolution_harness::Calibration::EProcess,
    }
}

#[tokio::test]
async fn a_helpful_edit_is_accepted_and_both_arms_are_recorded() {
    let h = Harness::new(Budget::unlimited());
    let mut cache = BaselineCache::new();
    let out = h
        .validate(
            &config(),
            &candidate("c1", "base fix:a"),
            &questions(),
            &mut cache,
        )
        .await
        .unwrap();
    assert_eq!(out.decision(), GateDecision::AcceptConfirmed);
    assert_eq!(out.l, 0);
    assert!(out.w >= 5, "{out:?}");
    assert_eq!(out.n_used + out.n_remaining, 80);
    assert_eq!(out.observed.len() as u64, out.n_used);
    assert_eq!(
        out.observed.values().filter(|(b, c)| !b && *c).count() as u64,
        out.w
    );
    assert!(
        out.blocks_used >= 1 && out.n_remaining > 0,
        "stopped early: {out:?}"
    );
    assert_eq!(out.baseline_run_id, "exp1_gate_base_v1");
    assert_eq!(out.candidate_run_id, "exp1_gate_cand_c1");
    let n = out.n_used as usize;
    assert_eq!(
        h.log
            .get_predictions(&out.baseline_run_id, None)
            .await
            .unwrap()
            .len(),
        n
    );
    assert_eq!(
        h.log
            .get_predictions(&out.candidate_run_id, None)
            .await
            .unwrap()
            .len(),
        n
    );
    assert_eq!(out.rollouts, 2 * out.n_used);
    let gated: Vec<_> = h
        .events
        .events()
        .into_iter()
        .filter_map(|e| match e {
            HarnessEvent::BlockGated {
                block, decision, ..
            } => Some((block, decision)),
            _ => None,
        })
        .collect();
    assert_eq!(gated.len(), out.blocks_used);
    assert_eq!(
        gated.last().map(|g| g.1),
        Some(GateDecision::AcceptConfirmed)
    );
    // One point per gated block, counts growing, the last one the verdict's.
    assert_eq!(out.trajectory.len(), out.blocks_used);
    assert!(
        out.trajectory
            .windows(2)
            .all(|p| p[0].n_used < p[1].n_used && p[0].w <= p[1].w && p[0].l <= p[1].l),
        "{:?}",
        out.trajectory
    );
    let last = out.trajectory.last().unwrap();
    assert_eq!(
        (last.w, last.l, last.n_used, last.n_remaining, last.decision),
        (out.w, out.l, out.n_used, out.n_remaining, out.decision())
    );
    assert_eq!(last.ln_e_value, out.verdict.ln_e_value);
    assert!(
        out.trajectory[..out.trajectory.len() - 1]
            .iter()
            .all(|p| p.decision == GateDecision::Continue)
    );
}

#[test]
fn an_outcome_saved_before_the_trajectory_was_kept_still_reads() {
    let outcome = evolution_harness::ValidationOutcome {
        candidate: "c".to_owned(),
        baseline_version: "v1".to_owned(),
        baseline_run_id: "b".to_owned(),
        candidate_run_id: "c".to_owned(),
        w: 1,
        l: 0,
        n_used: 1,
        n_remaining: 0,
        blocks_used: 1,
        verdict: evolution_gate::Gate::calibrated()
            .decide(&evolution_gate::Tally::new(1, 0, 1, 0))
            .unwrap(),
        e_confirm: 20.0,
        observed: Default::default(),
        infra_errors: 0,
        candidate_failures: 0,
        baseline_failures: 0,
        excluded: 0,
        rollouts: 2,
        trajectory: Vec::new(),
        pool: None,
    };
    let mut json = serde_json::to_value(&outcome).unwrap();
    // Written before the trajectory and the failure counts were kept.
    for field in [
        "trajectory",
        "candidate_failures",
        "baseline_failures",
        "excluded",
    ] {
        json.as_object_mut().unwrap().remove(field).unwrap();
    }
    let read: evolution_harness::ValidationOutcome = serde_json::from_value(json).unwrap();
    assert_eq!(read, outcome);
}

#[tokio::test]
async fn harmful_and_neutral_edits_are_rejected() {
    let h = Harness::new(Budget::unlimited());
    let mut cache = BaselineCache::new();
    let harmful = h
        .validate(
            &config(),
            &candidate("bad", "base break:b"),
            &questions(),
            &mut cache,
        )
        .await
        .unwrap();
    assert!(!harmful.decision().is_accept(), "{harmful:?}");
    assert_eq!(harmful.w, 0);
    assert!(harmful.l > 0);
    let neutral = h
        .validate(
            &config(),
            &candidate("same", "base, reworded"),
            &questions(),
            &mut cache,
        )
        .await
        .unwrap();
    assert_eq!((neutral.w, neutral.l), (0, 0));
    assert!(
        matches!(
            neutral.decision(),
            GateDecision::RejectFutility | GateDecision::RejectInertia
        ),
        "{neutral:?}"
    );
}

#[tokio::test]
async fn the_baseline_runs_each_question_once_across_candidates() {
    let h = Harness::new(Budget::unlimited());
    let mut cache = BaselineCache::new();
    let qs = questions();
    let mut cfg = config();
    cfg.ladder = vec![80];
    let first = h
        .validate(&cfg, &candidate("n1", "base x"), &qs, &mut cache)
        .await
        .unwrap();
    let second = h
        .validate(&cfg, &candidate("n2", "base y"), &qs, &mut cache)
        .await
        .unwrap();
    assert_eq!(h.calls("v1"), 80);
    assert_eq!((h.calls("n1"), h.calls("n2")), (80, 80));
    assert_eq!(cache.len(), 80);
    assert_eq!(first.rollouts, 160);
    assert_eq!(second.rollouts, 80);
    let cached = h
        .events
        .events()
        .iter()
        .filter(|e| {
            matches!(
                e,
                HarnessEvent::QuestionDone {
                    arm: Arm::Baseline,
                    cached: true,
                    ..
                }
            )
        })
        .count();
    assert_eq!(cached, 80);
}

async fn refused_before_any_rollout(
    cfg: ValidationConfig,
    cand: Candidate,
    qs: Vec<GeneratedQuestion>,
) -> ValidationError {
    let h = Harness::new(Budget::unlimited());
    let err = h
        .validate(&cfg, &cand, &qs, &mut BaselineCache::new())
        .await
        .unwrap_err();
    assert_eq!(h.total_calls(), 0, "rollouts ran before {err}");
    err
}

#[tokio::test]
async fn guards_fail_before_any_rollout() {
    let cand = || candidate("c", "base fix:a");
    let mut cfg = config();
    cfg.gate_run_prefix = "exp1_".into();
    let err = refused_before_any_rollout(cfg, cand(), questions()).await;
    assert!(
        matches!(err, ValidationError::PrefixWithoutMarker(ref p) if p == "exp1_"),
        "{err}"
    );
    let mut cfg = config();
    cfg.ladder.clear();
    assert!(matches!(
        refused_before_any_rollout(cfg, cand(), questions()).await,
        ValidationError::EmptyLadder
    ));
    let mut cfg = config();
    cfg.ladder = vec![5, 0];
    assert!(matches!(
        refused_before_any_rollout(cfg, cand(), questions()).await,
        ValidationError::ZeroBlock
    ));
    let mut cfg = config();
    cfg.gate_guard_err = 1.5;
    assert!(matches!(
        refused_before_any_rollout(cfg, cand(), questions()).await,
        ValidationError::InvalidGuard(_)
    ));
    assert!(matches!(
        refused_before_any_rollout(config(), cand(), vec![]).await,
        ValidationError::NoQuestions
    ));
    let mut cfg = config();
    cfg.params.e_confirm = f64::NAN;
    let err = refused_before_any_rollout(cfg, cand(), questions()).await;
    assert!(matches!(err, ValidationError::Gate(_)), "{err}");
    let mut dup = questions();
    dup.push(question("a00", "a", "v"));
    assert!(matches!(
        refused_before_any_rollout(config(), cand(), dup).await,
        ValidationError::DuplicateQuestion(ref id) if id == "a00"
    ));
    // Split discipline: the candidate was written from a gate question.
    let mut leaky = cand();
    leaky
        .provenance
        .extend(["b03".to_owned(), "a01".to_owned()]);
    let err = refused_before_any_rollout(config(), leaky, questions()).await;
    assert!(
        matches!(err, ValidationError::SplitOverlap(ref ids) if ids == &["a01", "b03"]),
        "{err}"
    );
}

#[tokio::test]
async fn a_failure_in_the_candidates_arm_alone_is_a_loss() {
    // The candidate's arm dies on every type-b question, which the baseline
    // answers right: each is a loss, not a question left out.
    let mut qs = questions();
    for q in qs.iter_mut().filter(|q| q.task_type == "b") {
        q.question = "infra:c".into();
    }
    let h = Harness::new(Budget::unlimited());
    let out = h
        .validate(
            &config(),
            &candidate("c", "base fix:a"),
            &qs,
            &mut BaselineCache::new(),
        )
        .await
        .unwrap();
    assert!(!out.decision().is_accept(), "{out:?}");
    assert!(out.l > 0 && out.l == out.candidate_failures, "{out:?}");
    assert_eq!((out.baseline_failures, out.excluded), (0, 0));
    assert_eq!(out.infra_errors, out.candidate_failures);
    assert_eq!(out.n_used, 80 - out.n_remaining);
}

#[tokio::test]
async fn the_infra_guard_rejects_a_comparison_with_too_many_questions_left_out() {
    // Both arms die on every type-b question: left out, and in the first
    // block more than 20% of the questions are.
    let mut qs = questions();
    for q in qs.iter_mut().filter(|q| q.task_type == "b") {
        q.question = "infra:v1 infra:c".into();
    }
    let h = Harness::new(Budget::unlimited());
    let out = h
        .validate(
            &config(),
            &candidate("c", "base fix:a"),
            &qs,
            &mut BaselineCache::new(),
        )
        .await
        .unwrap();
    assert_eq!(out.decision(), GateDecision::RejectInfra, "{out:?}");
    assert_eq!(out.blocks_used, 1);
    assert!(out.excluded * 5 > out.n_used + out.excluded, "{out:?}");
    assert_eq!(out.infra_errors, 2 * out.excluded);
    assert_eq!(
        out.trajectory.last().unwrap().decision,
        GateDecision::RejectInfra
    );
    assert!(h.events.events().iter().any(|e| matches!(
        e,
        HarnessEvent::BlockGated {
            decision: GateDecision::RejectInfra,
            ..
        }
    )));
}

#[tokio::test]
async fn below_five_questions_the_guard_waits_and_a_baseline_failure_is_a_win() {
    // 4 questions, all failed in both arms: fewer than 5, so no guard, but
    // nothing pairs and the questions run out: rejected all the same.
    let qs: Vec<_> = (0..4)
        .map(|i| {
            let mut q = question(&format!("a{i}"), "a", "v");
            q.question = "infra:v1 infra:c".into();
            q
        })
        .collect();
    let h = Harness::new(Budget::unlimited());
    let out = h
        .validate(
            &config(),
            &candidate("c", "fix:a"),
            &qs,
            &mut BaselineCache::new(),
        )
        .await
        .unwrap();
    assert_eq!(out.decision(), GateDecision::RejectInfra, "{out:?}");
    assert_eq!((out.n_used, out.excluded, out.n_remaining), (0, 4, 0));
    assert_eq!(out.verdict.e_value, 1.0);
    // One baseline failure among 80 questions: a win for the candidate,
    // whose own answer there is wrong (`base` does not fix type a).
    let mut qs = questions();
    qs[0].question = "infra:v1".into();
    let h = Harness::new(Budget::unlimited());
    let mut cfg = config();
    cfg.ladder = vec![80];
    let out = h
        .validate(
            &cfg,
            &candidate("n", "base"),
            &qs,
            &mut BaselineCache::new(),
        )
        .await
        .unwrap();
    assert_eq!(out.infra_errors, 1);
    assert_eq!((out.n_used, out.w, out.l), (80, 1, 0));
    assert_eq!((out.baseline_failures, out.excluded), (1, 0));
    assert_eq!(out.observed.get("a00"), Some(&(false, true)));
}

#[tokio::test]
async fn a_rollout_cap_stops_cleanly_with_an_event() {
    let budget = Budget::new(BudgetLimits {
        max_rollouts: Some(25),
        ..BudgetLimits::default()
    })
    .unwrap();
    let h = Harness::new(budget);
    let err = h
        .validate(
            &config(),
            &candidate("n", "base"),
            &questions(),
            &mut BaselineCache::new(),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            ValidationError::Budget(BudgetExceeded::Rollouts {
                used: 20,
                requested: 20,
                limit: 25
            })
        ),
        "{err}"
    );
    assert_eq!(h.total_calls(), 20);
    assert!(
        h.events
            .events()
            .iter()
            .any(|e| matches!(e, HarnessEvent::BudgetStop { .. }))
    );
}

#[test]
fn the_question_order_is_fixed_by_the_seed_alone() {
    let qs = questions();
    let mut reversed = qs.clone();
    reversed.reverse();
    let ids = |v: Vec<GeneratedQuestion>| v.into_iter().map(|q| q.question_id).collect::<Vec<_>>();
    let a = ids(fixed_question_order(&qs, 42));
    assert_eq!(a, ids(fixed_question_order(&reversed, 42)));
    assert_ne!(a, ids(fixed_question_order(&qs, 43)));
    let mut sorted = a.clone();
    sorted.sort();
    assert_eq!(sorted, ids(qs.clone()));
    // Pinned (checked against an independent SplitMix64 + Fisher-Yates): the order
    // must never change between versions, since resumed runs replay it.
    assert_eq!(&a[..5], ["b08", "b09", "b29", "c00", "b15"]);
    assert!(fixed_question_order(&[], 1).is_empty());
}

#[test]
fn data_splits_must_be_disjoint() {
    let split = DataSplit::new(&["t1", "t2"], &["g1"], &["h1"]).unwrap();
    assert!(split.gate().contains("g1") && split.train().len() == 2 && split.holdout().len() == 1);
    let err = DataSplit::new(&["t1", "g1"], &["g1", "h1"], &["h1"]).unwrap_err();
    assert!(
        matches!(err, ValidationError::SplitOverlap(ref ids) if ids == &["g1", "h1"]),
        "{err}"
    );
    assert!(matches!(
        DataSplit::new(&["t"], &[], &[]),
        Err(ValidationError::NoQuestions)
    ));
    assert!(matches!(
        DataSplit::new(&["t", "t"], &["g"], &[]),
        Err(ValidationError::DuplicateQuestion(_))
    ));
}

#[test]
fn e_lond_levels_raise_both_accept_thresholds() {
    let base = GateParams::default();
    let mut fdr = ELond::new(0.1, GammaSequence::Horizon { proposals: 4 }).unwrap();
    let params = params_for_level(&base, &fdr.next_level()).unwrap();
    assert_eq!(params.e_confirm, 40.0);
    // A provisional accept is an accept: it needs the level's threshold too.
    assert_eq!(params.e_provisional, 40.0);
    assert_eq!(params.e_rollback, base.e_rollback);
    fdr.test(100.0).unwrap();
    // One discovery doubles the level: threshold 20 = the reference implementation's e_confirm.
    assert_eq!(
        params_for_level(&base, &fdr.next_level())
            .unwrap()
            .e_confirm,
        20.0
    );
    let mut done = ELond::new(0.1, GammaSequence::Horizon { proposals: 1 }).unwrap();
    done.test(0.0).unwrap();
    assert_eq!(params_for_level(&base, &done.next_level()), None);
}

#[tokio::test]
async fn a_killed_validation_resumes_from_the_run_log_to_the_same_result() {
    let cand = candidate("c1", "base fix:a");
    let whole = Harness::new(Budget::unlimited());
    let expected = whole
        .validate(&config(), &cand, &questions(), &mut BaselineCache::new())
        .await
        .unwrap();
    assert!(
        expected.blocks_used >= 2,
        "the test needs a validation longer than one block"
    );

    // Stop after the first block: its 20 rollouts fit the cap, the next baseline arm does not.
    let capped = Budget::new(BudgetLimits {
        max_rollouts: Some(25),
        ..BudgetLimits::default()
    })
    .unwrap();
    let first = Harness::new(capped);
    let err = first
        .validate(&config(), &cand, &questions(), &mut BaselineCache::new())
        .await
        .unwrap_err();
    assert!(matches!(err, ValidationError::Budget(_)), "{err}");
    assert_eq!(first.total_calls(), 20);

    let second = first.resumed();
    let resumed = second
        .validate(&config(), &cand, &questions(), &mut BaselineCache::new())
        .await
        .unwrap();
    assert_eq!(
        second.total_calls() + 20,
        whole.total_calls(),
        "finished rollouts were repeated"
    );
    assert_eq!(resumed.rollouts + 20, expected.rollouts);
    let comparable = |o: &evolution_harness::ValidationOutcome| {
        (
            o.w,
            o.l,
            o.n_used,
            o.n_remaining,
            o.blocks_used,
            o.verdict,
            o.observed.clone(),
            o.trajectory.clone(),
        )
    };
    assert_eq!(comparable(&resumed), comparable(&expected));
}

/// A rollout recorded as an INFRA failure before a kill is run again when the validation
/// resumes, not reused: the resumed validation reaches the verdict of one that never failed,
/// and the run log then holds the new answer.
#[tokio::test]
async fn a_resumed_validation_runs_recorded_infra_failures_again() {
    let cand = candidate("c1", "base fix:a");
    let healthy = Harness::new(Budget::unlimited());
    let expected = healthy
        .validate(&config(), &cand, &questions(), &mut BaselineCache::new())
        .await
        .unwrap();
    assert!(expected.blocks_used >= 2, "{expected:?}");

    // The first block's first question fails in the candidate's arm, then the
    // rollout cap stops the validation after that block.
    let order = fixed_question_order(&questions(), config().seed);
    let flaky = order[0].question_id.clone();
    let capped = Budget::new(BudgetLimits {
        max_rollouts: Some(25),
        ..BudgetLimits::default()
    })
    .unwrap();
    let mut first = Harness::new(capped);
    first.failing.insert(flaky.clone());
    let err = first
        .validate(&config(), &cand, &questions(), &mut BaselineCache::new())
        .await
        .unwrap_err();
    assert!(matches!(err, ValidationError::Budget(_)), "{err}");
    let run_id = "exp1_gate_cand_c1";
    let recorded = first
        .log
        .get_predictions(run_id, Some(std::slice::from_ref(&flaky)))
        .await
        .unwrap();
    assert_eq!(recorded.len(), 1);
    assert!(recorded[0].error.is_some(), "{:?}", recorded[0]);

    let second = first.resumed();
    let resumed = second
        .validate(&config(), &cand, &questions(), &mut BaselineCache::new())
        .await
        .unwrap();
    // Rerun: the failed question, and the blocks after the first (9 of the first block's 10
    // candidate answers are reused).
    assert_eq!(
        second.calls("c1"),
        healthy.calls("c1") - 9,
        "the failed rollout was reused, or a finished one repeated"
    );
    assert_eq!(resumed.infra_errors, 0, "{resumed:?}");
    assert_eq!((resumed.w, resumed.l), (expected.w, expected.l));
    assert_eq!(resumed.verdict, expected.verdict);
    let now = second
        .log
        .get_predictions(run_id, Some(std::slice::from_ref(&flaky)))
        .await
        .unwrap();
    assert_eq!(now.len(), 1);
    assert!(now[0].error.is_none(), "{:?}", now[0]);
}
