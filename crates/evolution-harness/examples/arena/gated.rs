//! The realisable rules: the harness's `Gatekeeper` (with or without
//! e-LOND and a probation pool) and greedy minibatch acceptance, driving a
//! simulated agent through the harness's own runner.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};

use evolution_gate::{Gate, GateParams, ProbationVerdict};
use evolution_harness::{
    AgentReply, AgentRunner, BaselineCache, Budget, Candidate, GateRecord, Gatekeeper,
    InProcessRunner, NoEvents, ScreenRule, ValidationConfig, ValidationContext, VersionedStore,
    Workspace, fixed_question_order,
};
use evolution_testkit::{MemoryRunLog, MemoryVersionedStore};
use evolution_types::GeneratedQuestion;

use crate::Tally;
use crate::bound::Guard;
use crate::oracle::new_run;
use crate::world::World;

/// Questions in each greedy minibatch.
const MINIBATCH: usize = 10;

/// A gate configuration as a run would use it.
#[derive(Clone, Copy)]
pub(crate) struct Gated {
    /// The gate's parameters.
    pub(crate) params: GateParams,
    /// e-LOND over the run, or none (each proposal on its own).
    pub(crate) guard: Option<Guard>,
    /// Questions set aside for judging proposals, probation pool included.
    pub(crate) questions: usize,
    /// The last this many of them are held back for probation.
    pub(crate) probation: usize,
    /// Questions per look of the gate (`0`: the default ladder 10, 20, 40, …).
    pub(crate) look: usize,
    /// The accepted candidate's gate answers become the next baseline's cache.
    pub(crate) carry_over: bool,
    /// Screened on training questions before the gate.
    pub(crate) screen: Option<ScreenRule>,
    /// How the gate's accepts are calibrated.
    pub(crate) calibration: evolution_harness::Calibration,
}

/// Where the training questions a screen draws from start.
const TRAIN_START: u64 = 500_000;
/// Training questions a screen may draw from.
const TRAIN_QUESTIONS: u64 = 2_000;

/// The question with number `q` (its number is what the agent reads).
pub(crate) fn question(q: u64) -> GeneratedQuestion {
    GeneratedQuestion {
        question_id: format!("q{q:05}"),
        answer: "right".into(),
        extra: [("n".to_owned(), q.into())].into_iter().collect(),
        ..GeneratedQuestion::default()
    }
}

pub(crate) fn rules_of(ws: &Workspace) -> Vec<usize> {
    ws.skills
        .get("s.md")
        .map(|s| s.split(',').filter_map(|r| r.trim().parse().ok()).collect())
        .unwrap_or_default()
}

pub(crate) fn text_of(rules: &[usize]) -> String {
    rules
        .iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// The simulated agent: answers from the rules in its skill.
fn agent<'a>(
    world: &'a World,
    rollouts: &'a AtomicU64,
) -> InProcessRunner<
    impl Fn(&Workspace, &GeneratedQuestion) -> Result<AgentReply, String> + Send + Sync + 'a,
> {
    InProcessRunner::new(move |ws: &Workspace, q: &GeneratedQuestion| {
        rollouts.fetch_add(1, Ordering::Relaxed);
        let n = q
            .extra
            .get("n")
            .and_then(serde_json::Value::as_u64)
            .unwrap_or(0);
        let right = world.correct(&rules_of(ws), n);
        Ok(AgentReply {
            prediction: if right { "right" } else { "wrong" }.into(),
            ..AgentReply::default()
        })
    })
}

/// One replication of a gated rule over `order`.
pub(crate) async fn gated_run(world: &World, seed: u64, order: &[usize], rule: Gated) -> Tally {
    let rollouts = AtomicU64::new(0);
    let runner = agent(world, &rollouts);
    let all: Vec<GeneratedQuestion> = (0..rule.questions as u64).map(question).collect();
    let (gate, pool) = all.split_at(rule.questions - rule.probation);
    let store = MemoryVersionedStore::new([("s.md".to_owned(), String::new())].into());
    let log = MemoryRunLog::new();
    let budget = Budget::unlimited();
    let ctx = ValidationContext {
        runner: &runner,
        recorder: &log,
        budget: &budget,
        events: &NoEvents,
        resume_from: None,
    };
    let mut config = ValidationConfig {
        gate_run_prefix: format!("arena{seed}_gate_"),
        seed,
        params: rule.params,
        calibration: rule.calibration,
        ..ValidationConfig::default()
    };
    if rule.look > 0 {
        config.ladder = vec![rule.look];
    }
    let train: Vec<GeneratedQuestion> = (TRAIN_START..TRAIN_START + TRAIN_QUESTIONS)
        .map(question)
        .collect();
    let configure = |mut keeper: Gatekeeper| {
        if rule.carry_over {
            keeper = keeper.with_carry_over();
        }
        if let Some(screen) = rule.screen {
            keeper = keeper.with_screen(screen);
        }
        keeper
    };
    let mut keeper = configure(Gatekeeper::new(config));
    let mut accepted: Vec<usize> = Vec::new();
    let mut tally = Tally::default();
    for (step, &rule_id) in order.iter().enumerate() {
        if let Some(guard) = rule.guard.filter(|g| g.starts_run(step)) {
            keeper = keeper.with_fdr(new_run(guard));
        }
        let mut with_rule = accepted.clone();
        with_rule.push(rule_id);
        let label = format!("p{step}");
        let baseline = Workspace::new(store.current_version().unwrap_or_default())
            .with_skill("s.md", text_of(&accepted));
        let candidate = Candidate {
            label: label.clone(),
            workspace: Workspace::new(label).with_skill("s.md", text_of(&with_rule)),
            provenance: BTreeSet::new(),
        };
        let writes = [("s.md".to_owned(), text_of(&with_rule))].into();
        let screened = keeper
            .screen(ctx, &baseline, &candidate, &train)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        if screened.is_some_and(|s| !s.passed) {
            continue;
        }
        let record = keeper
            .judge(ctx, &store, &baseline, &candidate, &writes, gate)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let kept = match record.probation {
            Some(_) if !pool.is_empty() => {
                let verdict =
                    probation(ctx, &keeper, &store, record, &accepted, &with_rule, pool).await;
                if verdict == ProbationVerdict::Rollback {
                    tally.rolled_back += 1.0;
                }
                verdict != ProbationVerdict::Rollback
            }
            _ => record.accepted,
        };
        if kept {
            accepted.push(rule_id);
            tally.count(world.p[rule_id]);
        }
    }
    tally.holdout = crate::holdout(world, &accepted);
    tally.rollouts = rollouts.load(Ordering::Relaxed) as f64;
    tally
}

/// Judges a provisional accept at once on the held-back pool; a rollback
/// restores the version it replaced.
async fn probation(
    ctx: ValidationContext<'_>,
    keeper: &Gatekeeper,
    store: &MemoryVersionedStore,
    record: GateRecord,
    before: &[usize],
    after: &[usize],
    pool: &[GeneratedQuestion],
) -> ProbationVerdict {
    let Some(mut watch) = record.probation else {
        return ProbationVerdict::Unverified;
    };
    let previous =
        Workspace::new(watch.previous_version.clone()).with_skill("s.md", text_of(before));
    let watched = Workspace::new(watch.version.clone()).with_skill("s.md", text_of(after));
    let verdict = watch
        .judge(
            ctx,
            keeper.config(),
            &previous,
            &watched,
            &BTreeSet::new(),
            pool,
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    if verdict == ProbationVerdict::Rollback {
        let gate = Gate::new(*keeper.params()).unwrap_or_else(|e| panic!("{e}"));
        watch.settle(store, &gate).unwrap_or_else(|e| panic!("{e}"));
    }
    verdict
}

/// One replication of greedy acceptance: a candidate that answers more of
/// a fresh random minibatch right than the baseline is accepted.
pub(crate) async fn greedy_run(
    world: &World,
    seed: u64,
    order: &[usize],
    questions: usize,
) -> Tally {
    let rollouts = AtomicU64::new(0);
    let runner = agent(world, &rollouts);
    let gate: Vec<GeneratedQuestion> = (0..questions as u64).map(question).collect();
    let store = MemoryVersionedStore::new([("s.md".to_owned(), String::new())].into());
    let mut cache = BaselineCache::new();
    let mut accepted: Vec<usize> = Vec::new();
    let mut tally = Tally::default();
    for (step, &rule_id) in order.iter().enumerate() {
        let version = store.current_version().unwrap_or_default();
        let baseline = Workspace::new(version.clone()).with_skill("s.md", text_of(&accepted));
        let mut with_rule = accepted.clone();
        with_rule.push(rule_id);
        let candidate = Workspace::new(format!("p{step}")).with_skill("s.md", text_of(&with_rule));
        let batch: Vec<GeneratedQuestion> = fixed_question_order(&gate, seed ^ step as u64)
            .into_iter()
            .take(MINIBATCH)
            .collect();
        let mut base_right = 0;
        let mut missing = Vec::new();
        for q in &batch {
            match cache.get(&version, &q.question_id) {
                Some(p) => base_right += usize::from(p.correct),
                None => missing.push(q.clone()),
            }
        }
        for o in runner
            .run("greedy_base", &baseline, &missing)
            .await
            .unwrap_or_default()
        {
            base_right += usize::from(o.prediction.correct);
            cache.insert(&version, o.prediction);
        }
        let cand_right = runner
            .run("greedy_cand", &candidate, &batch)
            .await
            .unwrap_or_default()
            .iter()
            .filter(|o| o.prediction.correct)
            .count();
        if cand_right > base_right {
            let writes = [("s.md".to_owned(), text_of(&with_rule))].into();
            store
                .advance(&writes, "greedy accept")
                .unwrap_or_else(|e| panic!("{e}"));
            accepted.push(rule_id);
            tally.count(world.p[rule_id]);
        }
    }
    tally.holdout = crate::holdout(world, &accepted);
    tally.rollouts = rollouts.load(Ordering::Relaxed) as f64;
    tally
}
