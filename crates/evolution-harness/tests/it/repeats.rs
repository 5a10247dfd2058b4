//! Several answers per gate question: each try is its own pair under a copy's id, and with a
//! stochastic agent whose candidate is no better on any question the pool boundary's level
//! still bounds the false accepts.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};

use evolution_gate::GateParams;
use evolution_harness::{
    AgentReply, Budget, Calibration, Candidate, ELond, EventLog, GammaSequence, Gatekeeper,
    InProcessRunner, ValidationConfig, ValidationContext, Workspace,
};
use evolution_testkit::MemoryRunLog;
use evolution_testkit::fixtures::question;
use evolution_types::GeneratedQuestion;

use crate::validate::{answer, baseline, questions};

fn pool_config(seed: u64) -> ValidationConfig {
    ValidationConfig {
        gate_run_prefix: "rep_gate_".into(),
        ladder: vec![5],
        seed,
        gate_guard_err: 0.2,
        params: GateParams {
            lambda_dir: -3.0,
            futility_risk: Some(0.05),
            ..GateParams::default()
        },
        calibration: Calibration::Pool { discordance: 0.5 },
    }
}

fn candidate(label: &str, text: &str) -> Candidate {
    Candidate {
        label: label.into(),
        workspace: Workspace::new(label).with_skill("s.md", text),
        provenance: BTreeSet::from(["train-1".to_owned()]),
    }
}

#[tokio::test]
async fn each_try_is_a_pair_of_its_own_under_a_copys_id() {
    // Four questions `fix:a` turns from wrong to right, three answers each, one look after
    // all of them: W = 12.
    let qs: Vec<GeneratedQuestion> = questions()
        .into_iter()
        .filter(|q| q.task_type == "a")
        .take(4)
        .collect();
    let asked = std::sync::Mutex::new(Vec::new());
    let runner = InProcessRunner::new(|ws: &Workspace, q: &GeneratedQuestion| {
        asked.lock().unwrap().push(q.question_id.clone());
        answer(ws, q)
    });
    let log = MemoryRunLog::new();
    let budget = Budget::unlimited();
    let events = EventLog::new();
    let ctx = ValidationContext {
        runner: &runner,
        recorder: &log,
        budget: &budget,
        events: &events,
        resume_from: None,
    };
    let mut keeper = Gatekeeper::new(ValidationConfig {
        ladder: vec![12],
        ..pool_config(1)
    })
    .with_fdr(ELond::new(0.05, GammaSequence::Horizon { proposals: 1 }).unwrap())
    .with_answers_per_question(3);
    assert_eq!(keeper.answers_per_question(), 3);
    let record = keeper
        .decide(ctx, &baseline(), &candidate("p", "base fix:a"), &qs)
        .await
        .unwrap();
    let v = record.validation.as_ref().unwrap();
    assert_eq!((v.w, v.l, v.n_used), (12, 0, 12));
    assert!(record.accepted);
    assert_eq!(
        v.pool.unwrap().questions,
        12,
        "the boundary counts every pair"
    );
    let asked = asked.into_inner().unwrap();
    for q in &qs {
        for id in [
            q.question_id.clone(),
            format!("{}#2", q.question_id),
            format!("{}#3", q.question_id),
        ] {
            assert_eq!(
                asked.iter().filter(|a| **a == id).count(),
                2,
                "{id}: {asked:?}"
            );
        }
    }
    // One answer per arm and question, and no question the caller did not give.
    assert_eq!(asked.len(), 24);
}

/// An agent whose every answer is a fresh draw: right with the question's own probability,
/// the same for both arms.
struct Coin {
    calls: AtomicU64,
    seed: u64,
}

impl Coin {
    fn answer(&self, q: &GeneratedQuestion) -> AgentReply {
        let call = self.calls.fetch_add(1, Ordering::Relaxed);
        let mut x = (self.seed << 32) ^ call;
        x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        x ^= x >> 31;
        let number: u64 = q.question_id[1..3].parse().unwrap_or(0);
        // Questions right 30 % to 90 % of the time.
        let p = 0.3 + 0.06 * (number % 11) as f64;
        let right = ((x >> 11) as f64 / (1u64 << 53) as f64) < p;
        AgentReply {
            prediction: if right { "v" } else { "x" }.to_owned(),
            ..AgentReply::default()
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_candidate_no_better_on_any_question_is_accepted_at_most_at_the_tests_level() {
    // Ten questions, five answers each: 50 pairs at level 0.05. Both arms answer alike in
    // distribution, so every discordant pair is a fair coin; 400 tests.
    let qs: Vec<GeneratedQuestion> = (0..10)
        .map(|i| question(&format!("q{i:02}"), "t", "v"))
        .collect();
    let trials = 400_u32;
    let mut accepted = 0_u32;
    let mut pairs = 0_u64;
    for trial in 0..trials {
        let coin = Coin {
            calls: AtomicU64::new(0),
            seed: u64::from(trial),
        };
        let runner =
            InProcessRunner::new(|_: &Workspace, q: &GeneratedQuestion| Ok(coin.answer(q)));
        let log = MemoryRunLog::new();
        let budget = Budget::unlimited();
        let events = EventLog::new();
        let ctx = ValidationContext {
            runner: &runner,
            recorder: &log,
            budget: &budget,
            events: &events,
            resume_from: None,
        };
        let mut keeper = Gatekeeper::new(pool_config(u64::from(trial)))
            .with_fdr(ELond::new(0.05, GammaSequence::Horizon { proposals: 1 }).unwrap())
            .with_answers_per_question(5);
        let record = keeper
            .decide(ctx, &baseline(), &candidate("same", "other words"), &qs)
            .await
            .unwrap();
        pairs += record.validation.as_ref().map_or(0, |v| v.n_used);
        accepted += u32::from(record.accepted);
    }
    // The exact bound is 0.05 (20 of 400); three standard errors above it is 34.
    assert!(accepted <= 34, "{accepted} of {trials} accepted");
    assert!(
        pairs > u64::from(trials) * 5,
        "the tests used their pairs: {pairs}"
    );
}
