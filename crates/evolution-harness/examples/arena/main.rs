//! The arena: many simulated proposals gated several ways, side by side,
//! and the bound on what any rule guarded by e-LOND could do.
//!
//! A simulated agent's answer to a question depends on the rules in its
//! skill. Each proposal adds one rule; on 70 % of questions the rule changes
//! nothing (ties), on the rest it fixes the question with probability `p`
//! and breaks it otherwise (`p > 0.5` helpful, `p < 0.5` harmful, `p = 0.5`
//! neutral). Proposals arrive one after another against the current skill
//! and are judged by
//!
//! - each named gate preset alone, per proposal (what a library caller gets
//!   from `Gatekeeper::new` without `with_fdr`);
//! - each preset as `skill-evolve run` uses it with a probation pool:
//!   e-LOND over the run (α = 0.05) and a quarter of the gate questions held
//!   back, on which every provisional accept is judged at once;
//! - variants of the guarded gate: every question for the gate, a
//!   likelihood ratio betting on `p = 0.9`, a front-loaded spending
//!   sequence, shorter runs, more gate questions;
//! - the pooled gate: the likelihood ratio of `p = 0.75` with an early
//!   directional exit, a look every 5 questions over a pool of 1000 or 1500
//!   gate questions, with or without carry-over of the accepted candidate's
//!   answers and a screen on training questions (`Gatekeeper::with_pool`,
//!   `with_carry_over`, `with_screen`), and the shipped configuration under
//!   closed e-LOND (`ELond::with_closure`);
//! - the `seed` run configuration looking every 5 questions, with carry-over and with the
//!   gate's tie-aware futility exit (`GateParams::futility_risk`);
//! - the oracle (`oracle.rs`): a likelihood-ratio e-process that knows each
//!   candidate's true visible effect;
//! - greedy: accept when the candidate beats the baseline on a 10-question
//!   minibatch.
//!
//! A second table gives, per guard and question budget, the bound of
//! `bound.rs` on the expected helpful accepts of any guarded rule.
//!
//! A third table (`--adaptive`, `adaptive.rs`) lets each candidate refine an earlier
//! rejected one, ranked by what the proposer is told of the gate.
//!
//! Run: `cargo run --release -p evolution-harness --example arena [replications] [--bounds | --rules | --adaptive] [--only TEXT]`.
#![expect(clippy::print_stdout, reason = "an example that prints its results")]

mod adaptive;
mod bound;
mod gated;
mod oracle;
mod world;

use evolution_gate::{EProcess, GateParams};
use evolution_harness::{Calibration, GammaSequence, ScreenRule, fixed_question_order};

use crate::adaptive::{Refine, Scenario, Told, adaptive_run, run_defaults};
use crate::bound::{Bounds, Guard};
use crate::gated::{Gated, gated_run, greedy_run, question};
use crate::oracle::oracle_run;
use crate::world::{PROPOSALS, World};

/// Questions set aside for judging proposals (the probation pool included
/// where a rule holds one back).
const GATE_QUESTIONS: usize = 200;
/// The probation pool: the last quarter of the gate questions (as
/// `[gate] probation = 0.25` does in `skill-evolve run`).
const PROBATION_QUESTIONS: usize = 50;
/// The e-LOND level of the run.
const FDR_ALPHA: f64 = 0.05;
/// Questions the final skill is scored on, never used for gating.
const HOLDOUT_QUESTIONS: u64 = 2000;
/// Where the held-out questions start.
const HOLDOUT_START: u64 = 1_000_000;
/// Replications when none is given.
const DEFAULT_REPLICATIONS: u64 = 40;

/// What one replication of a rule did.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Tally {
    pub(crate) holdout: f64,
    pub(crate) helpful: f64,
    pub(crate) harmful: f64,
    pub(crate) neutral: f64,
    pub(crate) rolled_back: f64,
    pub(crate) rollouts: f64,
}

impl Tally {
    /// Counts an accepted rule with win probability `p`.
    pub(crate) fn count(&mut self, p: f64) {
        if p > 0.5 {
            self.helpful += 1.0;
        } else if p < 0.5 {
            self.harmful += 1.0;
        } else {
            self.neutral += 1.0;
        }
    }
}

/// Held-out accuracy of a skill made of `rules`.
pub(crate) fn holdout(world: &World, rules: &[usize]) -> f64 {
    world.accuracy(rules, HOLDOUT_START..HOLDOUT_START + HOLDOUT_QUESTIONS)
}

/// The order the proposals of replication `seed` arrive in.
fn proposal_order(seed: u64) -> Vec<usize> {
    let ids: Vec<_> = (0..PROPOSALS as u64).map(question).collect();
    fixed_question_order(&ids, seed ^ 0xA5A5)
        .iter()
        .map(|q| q.question_id[1..].parse().unwrap_or(0))
        .collect()
}

/// How the proposals of a run are judged.
#[derive(Clone, Copy)]
enum Rule {
    /// Through the harness's `Gatekeeper`.
    Gated(Gated),
    /// The oracle likelihood-ratio e-process on this many gate questions.
    Oracle { questions: u64, guard: Guard },
    /// Greedy minibatch acceptance.
    Greedy,
}

async fn replicate(seed: u64, rule: Rule) -> Tally {
    let world = World::new(seed);
    let order = proposal_order(seed);
    match rule {
        Rule::Gated(gated) => gated_run(&world, seed, &order, gated).await,
        Rule::Oracle { questions, guard } => oracle_run(&world, &order, questions, guard),
        Rule::Greedy => greedy_run(&world, seed, &order, GATE_QUESTIONS).await,
    }
}

/// Mean and standard error of the mean.
fn mean_se(values: &[f64]) -> (f64, f64) {
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    if values.len() < 2 {
        return (mean, f64::NAN);
    }
    let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, (var / n).sqrt())
}

/// e-LOND at the run's level over all proposals.
fn horizon() -> Guard {
    Guard {
        alpha: FDR_ALPHA,
        gamma: GammaSequence::Horizon {
            proposals: PROPOSALS as u64,
        },
        run_length: PROPOSALS,
        screened: false,
        closed: false,
    }
}

/// e-LOND spending `6/(π² t²)`: most of the level on the first proposals.
fn front_loaded() -> Guard {
    Guard {
        gamma: GammaSequence::Quadratic,
        ..horizon()
    }
}

/// e-LOND restarted every `length` proposals (each a run of its own).
fn runs_of(length: usize) -> Guard {
    Guard {
        gamma: GammaSequence::Horizon {
            proposals: length as u64,
        },
        run_length: length,
        ..horizon()
    }
}

/// A likelihood ratio betting on `p = 0.9`, every accept at `E ≥ 20`
/// (raised to the e-LOND threshold), the calibrated directional exit.
fn lr_09() -> GateParams {
    GateParams {
        e_process: EProcess::LikelihoodRatio { alternative: 0.9 },
        ..GateParams::calibrated()
    }
}

/// Questions per look of the pooled rows.
const LOOK: usize = 5;

/// The pooled rows' gate: the likelihood ratio of `p = 0.75`, every accept
/// at `E ≥ 20` (raised to the e-LOND threshold), the directional exit at
/// `λ ≤ −0.3`.
fn pooled_params() -> GateParams {
    GateParams {
        e_process: EProcess::LikelihoodRatio { alternative: 0.75 },
        lambda_dir: -0.3,
        ..GateParams::calibrated()
    }
}

/// e-LOND at the run's level over at most `tests` tested proposals (those a
/// screen passes), one run of all 60 proposals.
fn tests_of(tests: u64) -> Guard {
    Guard {
        gamma: GammaSequence::Horizon { proposals: tests },
        screened: true,
        ..horizon()
    }
}

/// The pooled rows: a large pool of gate questions the gate draws from 5 at
/// a time, with or without carry-over and screening.
fn pooled() -> Vec<(String, usize, bool, Option<ScreenRule>, Guard)> {
    let screen = ScreenRule::default();
    let mut rows = Vec::new();
    for pool in [1000, 1500] {
        for carry in [false, true] {
            let how = if carry { ", carry-over" } else { "" };
            rows.push((
                format!("LR 0.75 + e-LOND, pool {pool}{how}"),
                pool,
                carry,
                None,
                horizon(),
            ));
        }
    }
    rows.push((
        "LR 0.75 + closed e-LOND, pool 1500, carry-over".to_owned(),
        1500,
        true,
        None,
        Guard {
            closed: true,
            ..horizon()
        },
    ));
    for horizon in [120, 365] {
        rows.push((
            format!("LR 0.75 + e-LOND spread over {horizon} (a ledger), pool 1500, carry-over"),
            1500,
            true,
            None,
            tests_of(horizon),
        ));
    }
    for (pool, tests) in [(1000, 20), (1500, 20), (1000, 30)] {
        rows.push((
            format!("LR 0.75 + screen + e-LOND over {tests} tests, pool {pool}, carry-over"),
            pool,
            true,
            Some(screen),
            tests_of(tests),
        ));
    }
    rows.push((
        "LR 0.75 + screen + closed e-LOND over 20 tests, pool 1500, carry-over".to_owned(),
        1500,
        true,
        Some(screen),
        Guard {
            closed: true,
            ..tests_of(20)
        },
    ));
    rows
}

fn preset(name: &str) -> GateParams {
    GateParams::preset(name).unwrap_or_else(|e| panic!("{e}"))
}

/// Every rule of the first table, with its label.
fn rules() -> Vec<(String, Rule)> {
    let mut rules = Vec::new();
    let gated = |params, guard, questions, probation| {
        Rule::Gated(Gated {
            params,
            guard,
            questions,
            probation,
            look: 0,
            carry_over: false,
            screen: None,
            calibration: Calibration::EProcess,
        })
    };
    for name in evolution_gate::PRESET_NAMES {
        rules.push((
            format!("`{name}`, per proposal"),
            gated(preset(name), None, GATE_QUESTIONS, 0),
        ));
    }
    for name in evolution_gate::PRESET_NAMES {
        rules.push((
            format!("`{name}` + e-LOND + probation (150 + 50)"),
            gated(
                preset(name),
                Some(horizon()),
                GATE_QUESTIONS,
                PROBATION_QUESTIONS,
            ),
        ));
    }
    // The `seed` run configuration with the `[gate]` options that spend fewer questions:
    // a look every 5 questions, carry-over, the tie-aware futility exit.
    for (suffix, carry_over, futility) in [
        ("look 5", false, false),
        ("look 5, carry-over", true, false),
        ("look 5, carry-over, futility_risk 0.05", true, true),
    ] {
        rules.push((
            format!("`seed` + e-LOND + probation (150 + 50), {suffix}"),
            Rule::Gated(Gated {
                params: GateParams {
                    futility_risk: futility.then_some(0.05),
                    ..preset("seed")
                },
                guard: Some(horizon()),
                questions: GATE_QUESTIONS,
                probation: PROBATION_QUESTIONS,
                look: LOOK,
                carry_over,
                screen: None,
                calibration: Calibration::EProcess,
            }),
        ));
    }
    // `run`'s defaults now: every question for the gate, each test's boundary exact for them.
    for (suffix, questions) in [("200", GATE_QUESTIONS), ("1500", 1500)] {
        rules.push((
            format!("`seed`, pool-calibrated + e-LOND, look 5, futility_risk 0.05, {suffix} (`run`'s defaults)"),
            Rule::Gated(Gated {
                params: GateParams {
                    futility_risk: Some(0.05),
                    lambda_dir: -3.0,
                    ..preset("seed")
                },
                guard: Some(horizon()),
                questions,
                probation: 0,
                look: LOOK,
                carry_over: false,
                screen: None,
                calibration: Calibration::Pool { discordance: 0.5 },
            }),
        ));
    }
    let guarded: [(&str, GateParams, Guard, usize); 8] = [
        (
            "`seed` + e-LOND, 200 for the gate",
            preset("seed"),
            horizon(),
            GATE_QUESTIONS,
        ),
        ("LR 0.9 + e-LOND, 200", lr_09(), horizon(), GATE_QUESTIONS),
        (
            "`seed` + e-LOND front-loaded, 200",
            preset("seed"),
            front_loaded(),
            GATE_QUESTIONS,
        ),
        (
            "LR 0.9 + e-LOND front-loaded, 200",
            lr_09(),
            front_loaded(),
            GATE_QUESTIONS,
        ),
        (
            "LR 0.9 + e-LOND per 20 proposals, 200",
            lr_09(),
            runs_of(20),
            GATE_QUESTIONS,
        ),
        (
            "LR 0.9 + e-LOND per 10 proposals, 200",
            lr_09(),
            runs_of(10),
            GATE_QUESTIONS,
        ),
        ("LR 0.9 + e-LOND, 400", lr_09(), horizon(), 400),
        ("LR 0.9 + e-LOND, 800", lr_09(), horizon(), 800),
    ];
    for (label, params, guard, questions) in guarded {
        rules.push((label.to_owned(), gated(params, Some(guard), questions, 0)));
    }
    for (label, questions, carry_over, screen, guard) in pooled() {
        rules.push((
            label,
            Rule::Gated(Gated {
                params: pooled_params(),
                guard: Some(guard),
                questions,
                probation: 0,
                look: LOOK,
                carry_over,
                screen,
                calibration: Calibration::EProcess,
            }),
        ));
    }
    for (questions, guard, label) in [
        (150, horizon(), "oracle LR + e-LOND, 150"),
        (200, horizon(), "oracle LR + e-LOND, 200"),
        (200, front_loaded(), "oracle LR + e-LOND front-loaded, 200"),
        (400, horizon(), "oracle LR + e-LOND, 400"),
        (800, horizon(), "oracle LR + e-LOND, 800"),
        (
            800,
            Guard {
                closed: true,
                ..horizon()
            },
            "oracle LR + closed e-LOND, 800",
        ),
    ] {
        rules.push((label.to_owned(), Rule::Oracle { questions, guard }));
    }
    rules.push(("greedy minibatch (10)".to_owned(), Rule::Greedy));
    rules
}

/// `--only TEXT`: the rows whose label holds `TEXT` (bounds: `label, questions`).
fn only() -> Option<String> {
    std::env::args().skip_while(|a| a != "--only").nth(1)
}

async fn print_rules(replications: u64) {
    println!(
        "| rule | held-out accuracy | helpful accepted (± s.e.) | harmful accepted | neutral accepted | rolled back | rollouts | rollouts per helpful accept |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    let only = only();
    for (name, rule) in rules()
        .into_iter()
        .filter(|(name, _)| only.as_ref().is_none_or(|o| name.contains(o.as_str())))
    {
        let mut tallies = Vec::new();
        for seed in 0..replications {
            tallies.push(replicate(seed, rule).await);
        }
        let field = |f: fn(&Tally) -> f64| mean_se(&tallies.iter().map(f).collect::<Vec<_>>());
        let (helpful, helpful_se) = field(|t| t.helpful);
        let (rollouts, _) = field(|t| t.rollouts);
        let per_helpful = if helpful > 0.0 {
            format!("{:.0}", rollouts / helpful)
        } else {
            "—".to_owned()
        };
        println!(
            "| {name} | {:.3} | {helpful:.2} ± {helpful_se:.2} | {:.2} | {:.2} | {:.2} | {rollouts:.0} | {per_helpful} |",
            field(|t| t.holdout).0,
            field(|t| t.harmful).0,
            field(|t| t.neutral).0,
            field(|t| t.rolled_back).0,
        );
    }
}

fn print_bounds(replications: u64) {
    println!(
        "| guard | questions per proposal | bound: best guarded rule (± s.e.) | most powerful test, every proposal | of which from states bounded crudely |"
    );
    println!("|---|---|---|---|---|");
    let cases = [
        ("e-LOND over 60", horizon(), 150),
        ("e-LOND over 60", horizon(), 200),
        ("e-LOND front-loaded", front_loaded(), 200),
        ("e-LOND per 20 proposals", runs_of(20), 200),
        ("e-LOND per 10 proposals", runs_of(10), 200),
        ("each proposal alone at E ≥ 20", runs_of(1), 200),
        ("e-LOND over 60", horizon(), 400),
        ("e-LOND over 60", horizon(), 800),
        ("e-LOND over 60", horizon(), 1000),
        ("e-LOND over 60", horizon(), 1500),
        ("screen, e-LOND over 20 tests", tests_of(20), 1000),
        ("screen, e-LOND over 20 tests", tests_of(20), 1500),
    ];
    // Envelopes depend on the question budget only: shared by its rows
    // (which are adjacent), dropped after them.
    let mut envelopes = Bounds::new(0);
    let only = only();
    for (label, guard, questions) in cases.into_iter().filter(|(label, _, questions)| {
        only.as_ref()
            .is_none_or(|o| format!("{label}, {questions}").contains(o.as_str()))
    }) {
        if envelopes.questions() != questions {
            envelopes = Bounds::new(questions);
        }
        let bounds: Vec<_> = (0..replications)
            .map(|seed| {
                let world = World::new(seed);
                let ps: Vec<f64> = proposal_order(seed).iter().map(|&r| world.p[r]).collect();
                envelopes.run(&ps, guard)
            })
            .collect();
        let (best, best_se) = mean_se(&bounds.iter().map(|b| b.best).collect::<Vec<_>>());
        let (greedy, _) = mean_se(&bounds.iter().map(|b| b.greedy).collect::<Vec<_>>());
        let (crude, _) = mean_se(&bounds.iter().map(|b| b.crude).collect::<Vec<_>>());
        println!("| {label} | {questions} | {best:.2} ± {best_se:.2} | {greedy:.2} | {crude:.3} |");
    }
}

/// What the proposer is told, in the tables' words. With `--adaptive`, `--only TEXT` picks
/// the rows whose label, prefixed `neutral ` in the first table and `arena ` in the second,
/// holds `TEXT`.
fn told_name(told: Told) -> &'static str {
    match told {
        Told::Nothing => "fresh ideas only",
        Told::GateCounts => "refines the closest, told W, L, E",
        Told::Blind => "refines, told only \"rejected by the gate\"",
    }
}

/// The adaptive proposer's tables: every idea neutral under `run`'s default gate, then the
/// arena's ideas under the shipped pooled gate.
async fn print_adaptive(replications: u64) {
    println!(
        "| every idea neutral: candidates, gate questions | proposer | refinement keeps | runs with a false accept (± s.e.) | false accepts per run | highest E per run | rollouts |"
    );
    println!("|---|---|---|---|---|---|---|");
    let only = only();
    let mut rows = Vec::new();
    for (candidates, questions) in [(20, 40), (60, 80)] {
        for told in [Told::Nothing, Told::GateCounts, Told::Blind] {
            let keeps: &[f64] = match told {
                Told::Nothing => &[0.0],
                Told::GateCounts => &[0.5, 0.8, 0.9],
                Told::Blind => &[0.8, 0.9],
            };
            for &keep in keeps {
                rows.push((candidates, questions, told, keep, false));
            }
        }
    }
    // `run`'s defaults now: the pool calibration, no carry-over.
    for told in [Told::Nothing, Told::GateCounts, Told::Blind] {
        let keep = if told == Told::Nothing { 0.0 } else { 0.8 };
        rows.push((60, 80, told, keep, true));
    }
    for (candidates, questions, told, keep, pooled) in rows {
        let label = format!(
            "{candidates}, {questions}{} | {} | {keep}",
            if pooled { ", pool-calibrated" } else { "" },
            told_name(told)
        );
        if only
            .as_ref()
            .is_some_and(|o| !format!("neutral {label}").contains(o.as_str()))
        {
            continue;
        }
        let scenario = Scenario {
            candidates,
            questions,
            params: if pooled {
                adaptive::pool_defaults()
            } else {
                run_defaults()
            },
            told,
            refine: Refine { keep },
            arena_ideas: false,
            calibration: if pooled {
                adaptive::POOL
            } else {
                Calibration::EProcess
            },
        };
        let mut outs = Vec::new();
        for seed in 0..replications {
            outs.push(adaptive_run(seed, &[], scenario).await.0);
        }
        let any: Vec<f64> = outs
            .iter()
            .map(|o| f64::from(u8::from(o.false_accepts > 0.0)))
            .collect();
        let (rate, rate_se) = mean_se(&any);
        let field =
            |f: fn(&adaptive::Outcome) -> f64| mean_se(&outs.iter().map(f).collect::<Vec<_>>()).0;
        println!(
            "| {label} | {rate:.4} ± {rate_se:.4} | {:.4} | {:.1} | {:.0} |",
            field(|o| o.false_accepts),
            field(|o| o.max_e),
            field(|o| o.rollouts),
        );
    }
    println!();
    println!(
        "| arena's ideas, pool 1500, carry-over: proposer | refinement keeps | helpful accepted (± s.e.) | false accepts per run | false-discovery proportion (mean) | held-out accuracy | rollouts |"
    );
    println!("|---|---|---|---|---|---|---|");
    for (told, keep, pooled) in [
        (Told::Nothing, 0.0, false),
        (Told::GateCounts, 0.8, false),
        (Told::Blind, 0.8, false),
        (Told::Nothing, 0.0, true),
        (Told::Blind, 0.8, true),
    ] {
        let label = format!(
            "{}{} | {keep}",
            told_name(told),
            if pooled {
                ", `run`'s defaults (pool-calibrated `seed`, no carry-over)"
            } else {
                ""
            }
        );
        if only
            .as_ref()
            .is_some_and(|o| !format!("arena {label}").contains(o.as_str()))
        {
            continue;
        }
        let scenario = Scenario {
            candidates: PROPOSALS,
            questions: 1500,
            params: if pooled {
                adaptive::pool_defaults()
            } else {
                pooled_params()
            },
            told,
            refine: Refine { keep },
            arena_ideas: true,
            calibration: if pooled {
                adaptive::POOL
            } else {
                Calibration::EProcess
            },
        };
        let mut outs = Vec::new();
        for seed in 0..replications {
            outs.push(adaptive_run(seed, &proposal_order(seed), scenario).await.0);
        }
        let field =
            |f: fn(&adaptive::Outcome) -> f64| mean_se(&outs.iter().map(f).collect::<Vec<_>>());
        let (helpful, helpful_se) = field(|o| o.helpful);
        let fdp = field(|o| o.false_accepts / (o.false_accepts + o.helpful).max(1.0)).0;
        println!(
            "| {label} | {helpful:.2} ± {helpful_se:.2} | {:.3} | {fdp:.4} | {:.3} | {:.0} |",
            field(|o| o.false_accepts).0,
            field(|o| o.holdout).0,
            field(|o| o.rollouts).0,
        );
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let replications: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(DEFAULT_REPLICATIONS)
        .max(2);
    if std::env::args().any(|a| a == "--adaptive") {
        println!("adaptive proposers, {replications} replications\n");
        print_adaptive(replications).await;
        return;
    }
    let only_bounds = std::env::args().any(|a| a == "--bounds");
    let start: Vec<f64> = (0..replications)
        .map(|s| holdout(&World::new(s), &[]))
        .collect();
    println!(
        "{PROPOSALS} proposals per run (20 helpful p∈{{0.6..0.9}}, 20 harmful p∈{{0.1..0.4}}, 20 neutral), tie rate {}, {replications} replications",
        world::TIE_RATE
    );
    println!(
        "held-out accuracy before any edit: {:.3}\n",
        mean_se(&start).0
    );
    if !std::env::args().any(|a| a == "--rules") {
        print_bounds(replications);
        println!();
    }
    if !only_bounds {
        print_rules(replications).await;
    }
}
