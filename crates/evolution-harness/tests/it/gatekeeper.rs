use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicUsize, Ordering};

use evolution_gate::{Gate, GateDecision, GateParams, ProbationVerdict};
use evolution_harness::{
    Budget, Candidate, ELond, EventLog, GammaSequence, Gatekeeper, HarnessEvent, InProcessRunner,
    ValidationConfig, ValidationContext, ValidationError, VersionedStore, Workspace,
};
use evolution_testkit::{MemoryRunLog, MemoryVersionedStore};
use evolution_types::{Edit, EvolutionRecord, GeneratedQuestion, TargetType};

use crate::validate::{answer, baseline, questions};

/// Six type-`a` questions (which `fix:a` turns from wrong to right) and a gate that looks
/// once, after all six.
fn six_in_one_block() -> (Vec<GeneratedQuestion>, ValidationConfig) {
    let qs = questions()
        .into_iter()
        .filter(|q| q.task_type == "a")
        .take(6)
        .collect();
    let cfg = ValidationConfig {
        ladder: vec![6],
        ..config()
    };
    (qs, cfg)
}

fn config() -> ValidationConfig {
    ValidationConfig {
        gate_run_prefix: "e2e_gate_".into(),
        ladder: vec![10, 20],
        seed: 3,
        gate_guard_err: 0.2,
        params: GateParams::default(),
        calibration: evolution_harness::Calibration::EProcess,
    }
}

fn proposal(label: &str, text: &str) -> (Candidate, BTreeMap<String, String>) {
    let candidate = Candidate {
        label: label.into(),
        workspace: Workspace::new(label).with_skill("s.md", text),
        provenance: BTreeSet::new(),
    };
    (
        candidate,
        BTreeMap::from([("s.md".to_owned(), text.to_owned())]),
    )
}

struct World {
    store: MemoryVersionedStore,
    log: MemoryRunLog,
    events: EventLog,
    budget: Budget,
    rollouts: AtomicUsize,
}

impl World {
    fn new() -> Self {
        World {
            store: MemoryVersionedStore::new(BTreeMap::from([(
                "s.md".to_owned(),
                "base".to_owned(),
            )])),
            log: MemoryRunLog::new(),
            events: EventLog::new(),
            budget: Budget::unlimited(),
            rollouts: AtomicUsize::new(0),
        }
    }

    fn current(&self) -> Workspace {
        let version = self.store.current_version().unwrap();
        let docs = self.store.documents(&version).unwrap();
        Workspace {
            version,
            skills: docs,
            prompts: BTreeMap::new(),
        }
    }

    async fn judge(
        &self,
        keeper: &mut Gatekeeper,
        base: &Workspace,
        label: &str,
        text: &str,
        qs: &[GeneratedQuestion],
    ) -> Result<evolution_harness::GateRecord, ValidationError> {
        let runner = InProcessRunner::new(|ws: &Workspace, q: &GeneratedQuestion| {
            self.rollouts.fetch_add(1, Ordering::Relaxed);
            answer(ws, q)
        });
        let ctx = ValidationContext {
            runner: &runner,
            recorder: &self.log,
            budget: &self.budget,
            events: &self.events,
            resume_from: None,
        };
        let (candidate, writes) = proposal(label, text);
        keeper
            .judge(ctx, &self.store, base, &candidate, &writes, qs)
            .await
    }
}

#[tokio::test]
async fn helpful_edits_advance_the_store_and_harmful_ones_feed_the_blacklist() {
    let world = World::new();
    let mut keeper = Gatekeeper::new(config());
    assert_eq!(baseline().version, "v1");
    let good = world
        .judge(
            &mut keeper,
            &world.current(),
            "p1",
            "base fix:a",
            &questions(),
        )
        .await
        .unwrap();
    assert!(good.accepted);
    assert_eq!(good.new_version.as_deref(), Some("v2"));
    assert_eq!(world.store.documents("v2").unwrap()["s.md"], "base fix:a");
    let history = world.store.history().unwrap();
    assert!(
        history[1].message.starts_with("p1: accept_confirmed (W="),
        "{}",
        history[1].message
    );

    // The old baseline is stale now.
    let stale = world
        .judge(&mut keeper, &baseline(), "p2", "x", &questions())
        .await
        .unwrap_err();
    assert!(
        matches!(stale, ValidationError::StaleBaseline { ref current, .. } if current == "v2"),
        "{stale}"
    );

    let bad = world
        .judge(
            &mut keeper,
            &world.current(),
            "p3",
            "base fix:a break:b",
            &questions(),
        )
        .await
        .unwrap();
    assert!(!bad.accepted);
    assert_eq!(bad.new_version, None);
    assert_eq!(world.store.current_version().unwrap(), "v2");
    let mut record = EvolutionRecord::new("s.md", TargetType::Skill, "base fix:a", "v2");
    record.edits = vec![Edit::append("break:b")];
    let blacklist = bad.rejected_edits(&record);
    let v = bad.validation.as_ref().unwrap();
    // The gate's figures stay in its record; the blacklist says only that the gate
    // rejected the edit.
    assert!(v.l > 0 && v.w == 0, "{v:?}");
    assert_eq!(blacklist.len(), 1);
    assert_eq!(blacklist[0].reason, evolution_types::GATE_REJECTED_REASON);
    assert!(good.rejected_edits(&record).is_empty());

    let kinds: Vec<_> = world
        .events
        .events()
        .into_iter()
        .filter_map(|e| match e {
            HarnessEvent::CandidateAccepted {
                candidate, version, ..
            } => Some(format!("+{candidate}@{}", version.unwrap_or_default())),
            HarnessEvent::CandidateRejected { candidate, .. } => Some(format!("-{candidate}")),
            _ => None,
        })
        .collect();
    assert_eq!(kinds, ["+p1@v2", "-p3"]);
}

#[tokio::test]
async fn e_lond_raises_the_bar_reports_each_threshold_and_stops_spending_past_its_horizon() {
    let world = World::new();
    let fdr = ELond::new(0.05, GammaSequence::Horizon { proposals: 2 }).unwrap();
    let mut keeper = Gatekeeper::new(config()).with_fdr(fdr);
    // α_1 = 0.05 · 1/2 = 0.025: threshold 40 instead of the reference implementation's 20.
    let first = world
        .judge(
            &mut keeper,
            &world.current(),
            "p1",
            "base fix:a",
            &questions(),
        )
        .await
        .unwrap();
    let level = first.level.unwrap();
    assert_eq!((level.index, level.threshold), (1, 40.0));
    let v = first.validation.as_ref().unwrap();
    assert_eq!(v.e_confirm, 40.0);
    assert_eq!(v.decision(), GateDecision::AcceptConfirmed);
    assert!(v.verdict.e_value >= 40.0);
    assert!(first.fdr.unwrap().discovery);
    // One discovery doubles the next level: threshold 20.
    let second = world
        .judge(
            &mut keeper,
            &world.current(),
            "p2",
            "base fix:a, reworded",
            &questions(),
        )
        .await
        .unwrap();
    assert_eq!(second.level.unwrap().threshold, 20.0);
    assert!(!second.accepted);
    assert_eq!(keeper.fdr().unwrap().history().len(), 2);
    // Past the horizon no proposal can be confirmed: no rollout is spent.
    let before = world.rollouts.load(Ordering::Relaxed);
    let third = world
        .judge(
            &mut keeper,
            &world.current(),
            "p3",
            "base fix:a again",
            &questions(),
        )
        .await
        .unwrap();
    assert!(third.validation.is_none() && !third.accepted);
    assert_eq!(third.level.unwrap().threshold, f64::INFINITY);
    assert_eq!(world.rollouts.load(Ordering::Relaxed), before);
}

#[tokio::test]
async fn under_e_lond_a_provisional_accept_needs_the_level_threshold() {
    // Six questions in one block, all won: E(6, 0) ≈ 18.1 reaches e_provisional 3 at
    // exhaustion, but not the e-LOND threshold 40 of the first of two proposals at α = 0.05.
    let (qs, cfg) = six_in_one_block();
    let world = World::new();
    let fdr = ELond::new(0.05, GammaSequence::Horizon { proposals: 2 }).unwrap();
    let mut keeper = Gatekeeper::new(cfg).with_fdr(fdr);
    let record = world
        .judge(&mut keeper, &world.current(), "p1", "base fix:a", &qs)
        .await
        .unwrap();
    let v = record.validation.as_ref().unwrap();
    assert!(v.verdict.e_value > 3.0 && v.verdict.e_value < 40.0, "{v:?}");
    assert_eq!(v.decision(), GateDecision::RejectInertia, "{v:?}");
    assert!(!record.accepted && record.new_version.is_none() && record.probation.is_none());
    assert!(!record.fdr.unwrap().discovery);
    assert_eq!(world.store.current_version().unwrap(), "v1");
}

#[tokio::test]
async fn a_provisional_accept_starts_a_probation() {
    // Six questions in one block, all won: E(6, 0) ≈ 18.1 is below e_confirm 20
    // but above e_provisional 3 at exhaustion, so the accept is provisional.
    let (qs, cfg) = six_in_one_block();
    let world = World::new();
    let mut keeper = Gatekeeper::new(cfg);
    let record = world
        .judge(&mut keeper, &world.current(), "p1", "base fix:a", &qs)
        .await
        .unwrap();
    let v = record.validation.as_ref().unwrap();
    assert_eq!(v.decision(), GateDecision::AcceptProvisional, "{v:?}");
    let mut watch = record.probation.clone().unwrap();
    assert_eq!(
        (watch.version.as_str(), watch.previous_version.as_str()),
        ("v2", "v1")
    );
    // Later runs show the new version losing: roll back.
    let losses = (0..6)
        .map(|i| (format!("later{i}"), (true, false)))
        .collect();
    watch.observe(&losses);
    let settled = watch.settle(&world.store, &Gate::default()).unwrap();
    assert_eq!(settled.verdict, ProbationVerdict::Rollback);
    assert_eq!(world.store.current_version().unwrap(), "v1");
}

/// A version written by accepting a candidate before a kill, its record lost, is gated again
/// on resume; when the replay rejects it, the store goes back to the version it replaced, and
/// e-LOND tests the candidate once.
#[tokio::test]
async fn a_rejecting_replay_of_an_accept_lost_in_a_kill_rolls_the_store_back() {
    let world = World::new();
    let writes = BTreeMap::from([("s.md".to_owned(), "base break:b".to_owned())]);
    let written = world
        .store
        .advance(&writes, "p9: accept_confirmed (W=9, L=0, E=20.000)")
        .unwrap();
    assert_eq!(written, "v2");
    let fdr = ELond::new(0.05, GammaSequence::Horizon { proposals: 2 }).unwrap();
    let mut keeper = Gatekeeper::new(config()).with_fdr(fdr);
    let record = world
        .judge(
            &mut keeper,
            &world.current(),
            "p9",
            "base break:b",
            &questions(),
        )
        .await
        .unwrap();
    assert!(!record.accepted, "{record:?}");
    assert_eq!(record.new_version, None);
    assert_eq!(world.store.current_version().unwrap(), "v1");
    assert_eq!(keeper.fdr().unwrap().history().len(), 1);
    let v = record.validation.as_ref().unwrap();
    assert_eq!(
        v.baseline_version, "v1",
        "gated against the replaced version"
    );

    // A replay that accepts keeps the version written before the kill.
    let writes = BTreeMap::from([("s.md".to_owned(), "base fix:a".to_owned())]);
    let written = world
        .store
        .advance(&writes, "p10: accept_confirmed (W=9, L=0, E=20.000)")
        .unwrap();
    let versions = world.store.history().unwrap().len();
    let record = world
        .judge(
            &mut keeper,
            &world.current(),
            "p10",
            "base fix:a",
            &questions(),
        )
        .await
        .unwrap();
    assert!(record.accepted, "{record:?}");
    assert_eq!(record.new_version.as_deref(), Some(written.as_str()));
    assert_eq!(
        world.store.history().unwrap().len(),
        versions,
        "written twice"
    );
    assert_eq!(keeper.fdr().unwrap().history().len(), 2);
}

impl World {
    async fn screen(
        &self,
        keeper: &mut Gatekeeper,
        label: &str,
        text: &str,
        train: &[GeneratedQuestion],
    ) -> Result<Option<evolution_harness::ScreenOutcome>, ValidationError> {
        let runner = InProcessRunner::new(|ws: &Workspace, q: &GeneratedQuestion| {
            self.rollouts.fetch_add(1, Ordering::Relaxed);
            answer(ws, q)
        });
        let ctx = ValidationContext {
            runner: &runner,
            recorder: &self.log,
            budget: &self.budget,
            events: &self.events,
            resume_from: None,
        };
        let (candidate, _) = proposal(label, text);
        keeper.screen(ctx, &self.current(), &candidate, train).await
    }
}

/// Training questions of the three types, ids apart from the gate's.
fn training() -> Vec<GeneratedQuestion> {
    questions()
        .into_iter()
        .map(|mut q| {
            q.question_id = format!("t{}", q.question_id);
            q
        })
        .collect()
}

#[tokio::test]
async fn carry_over_spares_the_next_baseline_the_questions_the_accepted_candidate_answered() {
    let mut records = Vec::new();
    for carry in [false, true] {
        let world = World::new();
        let mut keeper = Gatekeeper::new(config());
        if carry {
            keeper = keeper.with_carry_over();
        }
        assert_eq!(keeper.carries_over(), carry);
        let first = world
            .judge(
                &mut keeper,
                &world.current(),
                "p1",
                "base fix:a",
                &questions(),
            )
            .await
            .unwrap();
        assert!(first.accepted);
        let second = world
            .judge(
                &mut keeper,
                &world.current(),
                "p2",
                "base fix:a break:b",
                &questions(),
            )
            .await
            .unwrap();
        records.push((first, second, keeper.cache().len()));
    }
    let [(first_plain, plain, _), (first_carried, carried, cached)] = &records[..] else {
        panic!("two runs");
    };
    // The agent is deterministic: the same evidence and decisions, fewer rollouts.
    assert_eq!(first_plain.validation, first_carried.validation);
    let (plain, carried) = (
        plain.validation.as_ref().unwrap(),
        carried.validation.as_ref().unwrap(),
    );
    assert_eq!((plain.w, plain.l), (carried.w, carried.l));
    assert_eq!(plain.decision(), carried.decision());
    // The second baseline ran none of the questions the first candidate answered.
    let answered = first_carried.validation.as_ref().unwrap().observed.len() as u64;
    let reached = carried.observed.len() as u64;
    let overlap = answered.min(reached);
    assert_eq!(plain.rollouts - carried.rollouts, overlap);
    assert!(overlap > 0);
    assert!(*cached > 0);
}

#[tokio::test]
async fn a_pool_caps_the_gate_questions_one_candidate_draws() {
    let world = World::new();
    let mut keeper = Gatekeeper::new(config()).with_pool(12);
    assert_eq!(keeper.pool(), Some(12));
    let record = world
        .judge(&mut keeper, &world.current(), "p1", "base", &questions())
        .await
        .unwrap();
    let outcome = record.validation.unwrap();
    assert_eq!(outcome.n_used + outcome.n_remaining + outcome.excluded, 12);
    assert!(outcome.rollouts <= 24);
    // The first 12 of the gate's own order of all its questions.
    let order = evolution_harness::fixed_question_order(&questions(), config().seed);
    let pool: BTreeSet<&str> = order[..12].iter().map(|q| q.question_id.as_str()).collect();
    assert!(outcome.observed.keys().all(|id| pool.contains(id.as_str())));
}

#[tokio::test]
async fn a_screen_drops_a_worse_candidate_before_it_takes_an_e_lond_test() {
    let world = World::new();
    let rule = evolution_harness::ScreenRule {
        questions: 40,
        block: 5,
        ..evolution_harness::ScreenRule::default()
    };
    let mut keeper = Gatekeeper::new(config())
        .with_fdr(ELond::new(0.05, GammaSequence::Horizon { proposals: 2 }).unwrap())
        .with_screen(rule)
        .with_carry_over();
    assert_eq!(keeper.screen_rule(), Some(&rule));
    let worse = world
        .screen(&mut keeper, "p1", "base break:b", &training())
        .await
        .unwrap()
        .unwrap();
    assert!(!worse.passed);
    assert!(worse.l >= 1 && worse.w == 0, "{worse:?}");
    assert!(worse.questions <= 40);
    // The screen's pairs are measured for the shape of later pool boundaries.
    let measured = keeper.discordance();
    assert_eq!(
        (measured.discordant, measured.paired),
        (worse.w + worse.l, worse.questions)
    );
    // Dropped: no e-LOND test was spent on it.
    assert!(keeper.fdr().unwrap().history().is_empty());
    let better = world
        .screen(&mut keeper, "p2", "base fix:a", &training())
        .await
        .unwrap()
        .unwrap();
    assert!(better.passed && better.w >= better.l + 2, "{better:?}");
    let record = world
        .judge(
            &mut keeper,
            &world.current(),
            "p2",
            "base fix:a",
            &questions(),
        )
        .await
        .unwrap();
    assert!(record.accepted);
    assert_eq!(keeper.fdr().unwrap().history().len(), 1);
    // Without a screen rule nothing is screened; a rule that cannot screen is refused.
    let mut plain = Gatekeeper::new(config());
    assert!(
        world
            .screen(&mut plain, "p3", "base", &training())
            .await
            .unwrap()
            .is_none()
    );
    let mut broken =
        Gatekeeper::new(config()).with_screen(evolution_harness::ScreenRule { drop: 0, ..rule });
    let error = world
        .screen(&mut broken, "p4", "base", &training())
        .await
        .unwrap_err();
    assert!(
        matches!(error, ValidationError::InvalidScreen(_)),
        "{error}"
    );
}

/// Twelve questions the fix wins, one the candidate loses and two ties: W = 12, L = 1.
fn twelve_to_one() -> Vec<GeneratedQuestion> {
    let all = questions();
    let mut picked = Vec::new();
    for (task, n) in [("a", 12), ("b", 1), ("c", 2)] {
        picked.extend(all.iter().filter(|q| q.task_type == task).take(n).cloned());
    }
    picked
}

#[tokio::test]
async fn calibrated_for_its_pool_a_test_spends_its_level_and_hands_e_lond_one_over_it() {
    // e-LOND at 0.05 over five candidates: the first is tested at 0.01. On 15 questions
    // W = 12, L = 1 is E ≈ 90 < 100 for the e-process, but a fair coin wins 12 of 13 pairs
    // only 0.0017 of the time: the pool boundary accepts it.
    let pool_config = ValidationConfig {
        ladder: vec![5],
        params: GateParams {
            lambda_dir: -3.0,
            ..GateParams::default()
        },
        calibration: evolution_harness::Calibration::Pool { discordance: 0.5 },
        ..config()
    };
    let e_config = ValidationConfig {
        calibration: evolution_harness::Calibration::EProcess,
        ..pool_config.clone()
    };
    let fdr = || ELond::new(0.05, GammaSequence::Horizon { proposals: 5 }).unwrap();
    let text = "base fix:a break:b";

    let world = World::new();
    let mut e_keeper = Gatekeeper::new(e_config).with_fdr(fdr());
    let e_record = world
        .judge(
            &mut e_keeper,
            &world.current(),
            "p1",
            text,
            &twelve_to_one(),
        )
        .await
        .unwrap();
    let v = e_record.validation.as_ref().unwrap();
    assert_eq!((v.w, v.l), (12, 1));
    assert!(
        !e_record.accepted && v.verdict.e_value < 100.0,
        "{}",
        v.verdict.e_value
    );

    let world = World::new();
    let mut keeper = Gatekeeper::new(pool_config).with_fdr(fdr());
    let record = world
        .judge(&mut keeper, &world.current(), "p1", text, &twelve_to_one())
        .await
        .unwrap();
    let v = record.validation.as_ref().unwrap();
    assert_eq!((v.w, v.l), (12, 1));
    assert!(record.accepted, "{:?}", v.trajectory);
    assert_eq!(v.decision(), GateDecision::AcceptConfirmed);
    let pool = v.pool.unwrap();
    assert_eq!(pool.questions, 15);
    assert!((pool.level - 0.01).abs() < 1e-12);
    assert!(pool.false_accept <= 0.01 && pool.wins_needed.is_some_and(|k| k <= 12));
    // e-LOND tested the e-value 1{accept}/α: exactly its threshold, a discovery.
    let fdr_decision = record.fdr.unwrap();
    assert_eq!(fdr_decision.e_value, fdr_decision.level.threshold);
    assert!((fdr_decision.e_value - 100.0).abs() < 1e-9);
    assert!(fdr_decision.discovery);
    assert_eq!(keeper.discordance().discordant, 13);

    // A rejected candidate hands e-LOND zero.
    let rejected = world
        .judge(
            &mut keeper,
            &world.current(),
            "p2",
            "base fix:a break:b, again",
            &twelve_to_one(),
        )
        .await
        .unwrap();
    assert!(!rejected.accepted);
    assert_eq!(rejected.fdr.unwrap().e_value, 0.0);
}
