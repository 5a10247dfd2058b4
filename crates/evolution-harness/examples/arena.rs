//! The arena: many simulated proposals gated several ways, side by side.
//!
//! A simulated agent's answer to a question depends on the rules in its
//! skill. Each proposal adds one rule; on 70 % of questions the rule changes
//! nothing (ties), on the rest it fixes the question with probability `p`
//! and breaks it otherwise (`p > 0.5` helpful, `p < 0.5` harmful, `p = 0.5`
//! neutral). Proposals arrive one after another against the current skill
//! and are judged by
//!
//! - each named gate preset (`seed`, `calibrated`, `thrifty`, `thorough`)
//!   as `skill-evolve run` uses it by default: [`Gatekeeper`] with e-LOND over
//!   the run (α = 0.05) and a probation pool held back from the gate
//!   questions, on which every provisional accept is judged at once (a
//!   rollback undoes it);
//! - each preset alone, per proposal, without e-LOND or probation (what a
//!   library caller gets from `Gatekeeper::new` without `with_fdr`);
//! - greedy: accept when the candidate beats the baseline on a 10-question
//!   minibatch.
//!
//! Run: `cargo run --release -p evolution-harness --example arena [replications]`.
#![expect(clippy::print_stdout, reason = "an example that prints its results")]

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};

use evolution_gate::{Gate, GateParams, ProbationVerdict};
use evolution_harness::{
    AgentReply, BaselineCache, Budget, Candidate, ELond, GammaSequence, Gatekeeper,
    InProcessRunner, NoEvents, ValidationConfig, ValidationContext, VersionedStore, Workspace,
    fixed_question_order,
};
use evolution_testkit::{MemoryRunLog, MemoryVersionedStore};
use evolution_types::GeneratedQuestion;

const PROPOSALS: usize = 60;
const TIE_RATE: f64 = 0.7;
/// Questions set aside for judging proposals: the gate's and, when a rule
/// uses probation, the probation pool held back from them.
const GATE_QUESTIONS: usize = 200;
/// The probation pool: the last quarter of the gate questions (as
/// `[gate] probation = 0.25` does in `skill-evolve run`).
const PROBATION_QUESTIONS: usize = 50;
/// The e-LOND level of the run.
const FDR_ALPHA: f64 = 0.05;
const HOLDOUT_QUESTIONS: usize = 2000;
const MINIBATCH: usize = 10;

fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn uniform(a: u64, b: u64, c: u64) -> f64 {
    let x = mix(mix(mix(a) ^ b) ^ c);
    (x >> 11) as f64 / (1_u64 << 53) as f64
}

/// The world of one replication: proposal effect sizes and question outcomes.
struct World {
    seed: u64,
    p: Vec<f64>,
}

impl World {
    fn new(seed: u64) -> Self {
        // A third helpful with various effect sizes, a third harmful, a third neutral.
        let helpful = [0.6, 0.7, 0.8, 0.9];
        let harmful = [0.1, 0.2, 0.3, 0.4];
        let p = (0..PROPOSALS)
            .map(|i| match i % 3 {
                0 => helpful[(i / 3) % helpful.len()],
                1 => harmful[(i / 3) % harmful.len()],
                _ => 0.5,
            })
            .collect();
        World { seed, p }
    }

    /// Effect of rule `rule` on question `q`: -1, 0 or +1.
    fn effect(&self, rule: usize, q: u64) -> i32 {
        let u = uniform(self.seed, rule as u64 + 1, q);
        if u < TIE_RATE {
            0
        } else if (u - TIE_RATE) / (1.0 - TIE_RATE) < self.p[rule] {
            1
        } else {
            -1
        }
    }

    fn correct(&self, rules: &[usize], q: u64) -> bool {
        let base = i32::from(uniform(self.seed, 0, q) < 0.5);
        let latent: i32 = base + rules.iter().map(|&r| self.effect(r, q)).sum::<i32>();
        latent >= 1
    }

    fn accuracy(&self, rules: &[usize], questions: std::ops::Range<u64>) -> f64 {
        let n = questions.end - questions.start;
        questions.filter(|&q| self.correct(rules, q)).count() as f64 / n as f64
    }
}

fn rules_of(ws: &Workspace) -> Vec<usize> {
    ws.skills
        .get("s.md")
        .map(|s| s.split(',').filter_map(|r| r.trim().parse().ok()).collect())
        .unwrap_or_default()
}

fn text_of(rules: &[usize]) -> String {
    rules
        .iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

fn question(q: u64) -> GeneratedQuestion {
    GeneratedQuestion {
        question_id: format!("q{q:05}"),
        answer: "right".into(),
        extra: [("n".to_owned(), q.into())].into_iter().collect(),
        ..GeneratedQuestion::default()
    }
}

#[derive(Default, Clone, Copy)]
struct Tally {
    holdout: f64,
    helpful: f64,
    harmful: f64,
    neutral: f64,
    rolled_back: f64,
    rollouts: f64,
}

/// How the proposals of a run are judged.
#[derive(Clone, Copy)]
enum Rule {
    /// The gate with these parameters; `guarded` adds e-LOND over the run
    /// and a probation pool held back from the gate questions.
    Gate { params: GateParams, guarded: bool },
    /// Accept when the candidate beats the baseline on a random minibatch.
    Greedy,
}

async fn replicate(seed: u64, rule: Rule) -> Tally {
    let world = World::new(seed);
    let rollouts = AtomicU64::new(0);
    let runner = InProcessRunner::new(|ws: &Workspace, q: &GeneratedQuestion| {
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
    });
    let guarded = matches!(rule, Rule::Gate { guarded: true, .. });
    let pool_size = if guarded { PROBATION_QUESTIONS } else { 0 };
    let all: Vec<GeneratedQuestion> = (0..GATE_QUESTIONS as u64).map(question).collect();
    let (gate, pool) = all.split_at(GATE_QUESTIONS - pool_size);
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
    let config = ValidationConfig {
        gate_run_prefix: format!("arena{seed}_gate_"),
        seed,
        params: match rule {
            Rule::Gate { params, .. } => params,
            Rule::Greedy => GateParams::default(),
        },
        ..ValidationConfig::default()
    };
    let mut keeper = Gatekeeper::new(config.clone());
    if guarded {
        let fdr = ELond::new(
            FDR_ALPHA,
            GammaSequence::Horizon {
                proposals: PROPOSALS as u64,
            },
        )
        .unwrap_or_else(|e| panic!("{e}"));
        keeper = keeper.with_fdr(fdr);
    }
    let mut greedy_cache = BaselineCache::new();
    let order = fixed_question_order(
        &(0..PROPOSALS as u64).map(question).collect::<Vec<_>>(),
        seed ^ 0xA5A5,
    );
    let mut accepted: Vec<usize> = Vec::new();
    let mut tally = Tally::default();
    for (step, proposal) in order.iter().enumerate() {
        let rule_id: usize = proposal.question_id[1..].parse().unwrap_or(0);
        let version = store.current_version().unwrap_or_default();
        let baseline = Workspace::new(version.clone()).with_skill("s.md", text_of(&accepted));
        let mut with_rule = accepted.clone();
        with_rule.push(rule_id);
        let label = format!("p{step}");
        let candidate = Candidate {
            label: label.clone(),
            workspace: Workspace::new(label.clone()).with_skill("s.md", text_of(&with_rule)),
            provenance: BTreeSet::new(),
        };
        let accept = match rule {
            Rule::Gate { .. } => {
                let writes = [("s.md".to_owned(), text_of(&with_rule))].into();
                let record = keeper
                    .judge(ctx, &store, &baseline, &candidate, &writes, gate)
                    .await
                    .unwrap_or_else(|e| panic!("{e}"));
                match (guarded, record.accepted, record.probation) {
                    // A provisional accept is judged at once on the held-back pool.
                    (true, true, Some(mut watch)) => {
                        let previous = Workspace::new(watch.previous_version.clone())
                            .with_skill("s.md", text_of(&accepted));
                        let watched = Workspace::new(watch.version.clone())
                            .with_skill("s.md", text_of(&with_rule));
                        let verdict = watch
                            .judge(
                                ctx,
                                keeper.config(),
                                &previous,
                                &watched,
                                &candidate.provenance,
                                pool,
                            )
                            .await
                            .unwrap_or_else(|e| panic!("{e}"));
                        if verdict == ProbationVerdict::Rollback {
                            let gate =
                                Gate::new(*keeper.params()).unwrap_or_else(|e| panic!("{e}"));
                            watch
                                .settle(&store, &gate)
                                .unwrap_or_else(|e| panic!("{e}"));
                            tally.rolled_back += 1.0;
                            false
                        } else {
                            true
                        }
                    }
                    (_, passed, _) => passed,
                }
            }
            Rule::Greedy => {
                // A fresh random minibatch of gate questions per proposal.
                let batch: Vec<GeneratedQuestion> = fixed_question_order(gate, seed ^ step as u64)
                    .into_iter()
                    .take(MINIBATCH)
                    .collect();
                let mut base_right = 0;
                let mut missing = Vec::new();
                for q in &batch {
                    match greedy_cache.get(&version, &q.question_id) {
                        Some(p) => base_right += usize::from(p.correct),
                        None => missing.push(q.clone()),
                    }
                }
                use evolution_harness::AgentRunner;
                let base_run = runner
                    .run("greedy_base", &baseline, &missing)
                    .await
                    .unwrap_or_default();
                for o in base_run {
                    base_right += usize::from(o.prediction.correct);
                    greedy_cache.insert(&version, o.prediction);
                }
                let cand_run = runner
                    .run("greedy_cand", &candidate.workspace, &batch)
                    .await
                    .unwrap_or_default();
                let cand_right = cand_run.iter().filter(|o| o.prediction.correct).count();
                let accept = cand_right > base_right;
                if accept {
                    let writes = [("s.md".to_owned(), text_of(&with_rule))].into();
                    store
                        .advance(&writes, "greedy accept")
                        .unwrap_or_else(|e| panic!("{e}"));
                }
                accept
            }
        };
        if accept {
            accepted.push(rule_id);
            let p = world.p[rule_id];
            if p > 0.5 {
                tally.helpful += 1.0;
            } else if p < 0.5 {
                tally.harmful += 1.0;
            } else {
                tally.neutral += 1.0;
            }
        }
    }
    let holdout_start = 1_000_000_u64;
    tally.holdout = world.accuracy(
        &accepted,
        holdout_start..holdout_start + HOLDOUT_QUESTIONS as u64,
    );
    tally.rollouts = rollouts.load(Ordering::Relaxed) as f64;
    tally
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let replications: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(20);
    let start_holdout: f64 = (0..replications)
        .map(|s| World::new(s).accuracy(&[], 1_000_000..1_000_000 + HOLDOUT_QUESTIONS as u64))
        .sum::<f64>()
        / replications as f64;
    println!(
        "{PROPOSALS} proposals per run (20 helpful p∈{{0.6..0.9}}, 20 harmful p∈{{0.1..0.4}}, 20 neutral), tie rate {TIE_RATE}, {GATE_QUESTIONS} gate questions ({PROBATION_QUESTIONS} of them held back for probation where e-LOND is on), {replications} replications"
    );
    println!("held-out accuracy before any edit: {start_holdout:.3}\n");
    println!(
        "| rule | held-out accuracy | helpful accepted | harmful accepted | neutral accepted | rolled back | rollouts | rollouts per helpful accept |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    let mut rules: Vec<(String, Rule)> = Vec::new();
    for guarded in [false, true] {
        for name in evolution_gate::PRESET_NAMES {
            let params = GateParams::preset(name).unwrap_or_else(|e| panic!("{e}"));
            let label = if guarded {
                format!("`{name}` + e-LOND + probation")
            } else {
                format!("`{name}`, per proposal")
            };
            rules.push((label, Rule::Gate { params, guarded }));
        }
    }
    rules.push(("greedy minibatch (10)".to_owned(), Rule::Greedy));
    for (name, rule) in rules {
        let mut sum = Tally::default();
        for seed in 0..replications {
            let t = replicate(seed, rule).await;
            sum.holdout += t.holdout;
            sum.helpful += t.helpful;
            sum.harmful += t.harmful;
            sum.neutral += t.neutral;
            sum.rolled_back += t.rolled_back;
            sum.rollouts += t.rollouts;
        }
        let n = replications as f64;
        let per_helpful = if sum.helpful > 0.0 {
            format!("{:.0}", sum.rollouts / sum.helpful)
        } else {
            "—".to_owned()
        };
        println!(
            "| {name} | {:.3} | {:.1} | {:.2} | {:.2} | {:.2} | {:.0} | {per_helpful} |",
            sum.holdout / n,
            sum.helpful / n,
            sum.harmful / n,
            sum.neutral / n,
            sum.rolled_back / n,
            sum.rollouts / n
        );
    }
}
