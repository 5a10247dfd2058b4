//! A month of scheduled runs, simulated: how often some candidate no better than its skill is
//! accepted over all of them, and how often a better one is, with and without the project's
//! ledger.
//!
//! Each night one run tests `candidates` candidates of one skill on its `questions` gate
//! questions, as `run`'s defaults do: e-LOND over the run's candidates at `fdr_alpha` (a
//! horizon of `candidates`), each test's boundary calibrated exactly for its pool
//! ([`pool_boundary`], shaped for the share of discordant pairs the night has measured), the
//! directional exit at `λ ≤ −3`, the tie-aware futility exit at 0.05, a look every 5
//! questions, fresh baseline answers for every test (no carry-over). With the ledger (what
//! `schedule` sets up) every test is also a test of the skill's ledger, `fdr_alpha` over
//! `ledger_horizon` tests, and is held to the stricter of the two levels.
//!
//! The agent is stochastic: a share `discordance` of the questions come out differently for
//! the two versions, the rest tie. Among discordant pairs a candidate that is no better wins
//! half (the worst case the boundary is built for); a better one wins `win_rate`.
//!
//! Scenarios: every candidate of every night no better (the chance of any false accept over
//! the month), and one better candidate each night among the others (its chance of being
//! accepted, and the false accepts beside it).
//!
//! ```text
//! cargo run --release -p evolution-harness --example nights -- [--nights 30] [--candidates 5]
//!     [--questions 40,80,160] [--discordance 0.4] [--win-rate 0.7] [--reps 1000]
//!     [--alpha 0.05] [--ledger-horizon 365]
//! ```
//! Also `cargo xtask bench nights`.
#![expect(clippy::print_stdout, clippy::print_stderr)]

use evolution_gate::{Gate, GateParams, PoolBoundary, Tally};
use evolution_harness::{
    DiscordanceTally, ELond, GammaSequence, LedgerBudget, LedgerSpent, design_discordance,
    pool_boundary,
};

/// The questions of one look (`[gate] ladder = [5]`).
const BLOCK: u64 = 5;
/// The share of discordant pairs a run assumes before it has measured one (`[gate] discordance`).
const ASSUMED_DISCORDANCE: f64 = 0.5;

struct Args {
    nights: u64,
    candidates: u64,
    questions: Vec<u64>,
    discordance: f64,
    win_rate: f64,
    reps: u64,
    alpha: f64,
    ledger_horizon: u64,
}

fn parse() -> Result<Args, String> {
    let mut args = Args {
        nights: 30,
        candidates: 5,
        questions: vec![40, 80, 160],
        discordance: 0.4,
        win_rate: 0.7,
        reps: 1000,
        alpha: 0.05,
        ledger_horizon: 365,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let value = it.next().ok_or(format!("{a} needs a value"))?;
        let float = |v: &str| v.parse::<f64>().map_err(|e| format!("{a} {v}: {e}"));
        let int = |v: &str| v.parse::<u64>().map_err(|e| format!("{a} {v}: {e}"));
        match a.as_str() {
            "--nights" => args.nights = int(&value)?,
            "--candidates" => args.candidates = int(&value)?,
            "--questions" => {
                args.questions = value.split(',').map(int).collect::<Result<_, _>>()?;
            }
            "--discordance" => args.discordance = float(&value)?,
            "--win-rate" => args.win_rate = float(&value)?,
            "--reps" => args.reps = int(&value)?,
            "--alpha" => args.alpha = float(&value)?,
            "--ledger-horizon" => args.ledger_horizon = int(&value)?,
            other => return Err(format!("unknown option {other}")),
        }
    }
    if args.candidates == 0 || args.nights == 0 || args.reps == 0 {
        return Err("--nights, --candidates and --reps must be at least 1".into());
    }
    Ok(args)
}

/// How one test ended: accepted or not, discordant pairs, questions paired.
struct Comparison {
    accepted: bool,
    discordant: u64,
    paired: u64,
}

/// One candidate's comparison on `questions` gate questions against `boundary`.
fn compare(
    gate: &Gate,
    boundary: &PoolBoundary,
    questions: u64,
    discordance: f64,
    win_rate: f64,
    rng: &mut fastrand::Rng,
) -> Result<Comparison, String> {
    let (mut w, mut l, mut n) = (0u64, 0u64, 0u64);
    while n < questions {
        let block = BLOCK.min(questions - n);
        for _ in 0..block {
            if rng.f64() < discordance {
                if rng.f64() < win_rate {
                    w += 1;
                } else {
                    l += 1;
                }
            }
        }
        n += block;
        let tally = Tally {
            w,
            l,
            n_used: n,
            n_remaining: questions - n,
        };
        let verdict = gate
            .decide_in_pool(&tally, boundary)
            .map_err(|e| e.to_string())?;
        if verdict.decision.is_accept() {
            return Ok(Comparison {
                accepted: true,
                discordant: w + l,
                paired: n,
            });
        }
        if verdict.decision.is_terminal() {
            break;
        }
    }
    Ok(Comparison {
        accepted: false,
        discordant: w + l,
        paired: n,
    })
}

/// What a month of runs did.
#[derive(Default)]
struct Month {
    false_accepts: u64,
    better_tested: u64,
    better_accepted: u64,
}

/// One month: `better` says whether a night's candidate `c` is better.
fn month(
    args: &Args,
    gate: &Gate,
    questions: u64,
    ledger: Option<LedgerBudget>,
    better: &dyn Fn(u64, u64) -> bool,
    rng: &mut fastrand::Rng,
) -> Result<Month, String> {
    let mut out = Month::default();
    let mut spent = LedgerSpent::default();
    let questions_usize = usize::try_from(questions).map_err(|e| e.to_string())?;
    for night in 0..args.nights {
        let mut fdr = ELond::new(
            args.alpha,
            GammaSequence::Horizon {
                proposals: args.candidates,
            },
        )
        .map_err(|e| e.to_string())?;
        let mut measured = DiscordanceTally::default();
        for c in 0..args.candidates {
            let run_level = fdr.next_level();
            let ledger_level = ledger.map(|b| b.next(&spent));
            let level = ledger_level.map_or(run_level.alpha_t, |l| {
                l.level.alpha_t.min(run_level.alpha_t)
            });
            let is_better = better(night, c);
            let comparison = if level > 0.0 {
                let share = design_discordance(measured.share_or(ASSUMED_DISCORDANCE));
                let boundary = pool_boundary(gate, questions_usize, level, share, &[5])
                    .map_err(|e| e.to_string())?
                    .ok_or("no boundary for the pool")?;
                let win_rate = if is_better { args.win_rate } else { 0.5 };
                compare(gate, &boundary, questions, args.discordance, win_rate, rng)?
            } else {
                Comparison {
                    accepted: false,
                    discordant: 0,
                    paired: 0,
                }
            };
            measured.add(comparison.discordant, comparison.paired);
            let e_value = if comparison.accepted {
                1.0 / level
            } else {
                0.0
            };
            let discovery = fdr
                .record(e_value, comparison.accepted)
                .map_err(|e| e.to_string())?
                .discovery;
            let accepted = comparison.accepted && discovery;
            if let Some(l) = &ledger_level {
                spent = LedgerBudget::after(&spent, l, accepted);
            }
            if is_better {
                out.better_tested += 1;
                out.better_accepted += u64::from(accepted);
            } else {
                out.false_accepts += u64::from(accepted);
            }
        }
    }
    Ok(out)
}

fn main() {
    let args = match parse() {
        Ok(args) => args,
        Err(e) => {
            eprintln!("nights: {e}");
            std::process::exit(2);
        }
    };
    if let Err(e) = run(&args) {
        eprintln!("nights: {e}");
        std::process::exit(1);
    }
}

fn run(args: &Args) -> Result<(), String> {
    let params = GateParams {
        lambda_dir: -3.0,
        futility_risk: Some(0.05),
        ..GateParams::preset("seed").map_err(|e| e.to_string())?
    };
    let gate = Gate::new(params).map_err(|e| e.to_string())?;
    let ledger = LedgerBudget::new(args.alpha, args.ledger_horizon).map_err(|e| e.to_string())?;
    println!(
        "{} nights × {} candidates · fdr_alpha {} · {} of the questions discordant · better \
         candidates win {} of the discordant pairs · {} months each\n",
        args.nights, args.candidates, args.alpha, args.discordance, args.win_rate, args.reps
    );
    println!(
        "| gate questions | ledger | P(any false accept), all no better (± s.e.) | one better \
         a night: its accept rate | P(≥ 1 better accepted in the month) | false accepts a month |"
    );
    println!("|---|---|---|---|---|---|");
    for &questions in &args.questions {
        for with_ledger in [true, false] {
            let budget = with_ledger.then_some(ledger);
            let mut rng = fastrand::Rng::with_seed(0x5EED ^ questions);
            let mut any = 0u64;
            for _ in 0..args.reps {
                let m = month(args, &gate, questions, budget, &|_, _| false, &mut rng)?;
                any += u64::from(m.false_accepts > 0);
            }
            let (mut tested, mut accepted, mut some, mut false_accepts) = (0u64, 0u64, 0u64, 0u64);
            for _ in 0..args.reps {
                // The better candidate comes at a different place each night.
                let m = month(
                    args,
                    &gate,
                    questions,
                    budget,
                    &|night, c| c == night % args.candidates,
                    &mut rng,
                )?;
                tested += m.better_tested;
                accepted += m.better_accepted;
                some += u64::from(m.better_accepted > 0);
                false_accepts += m.false_accepts;
            }
            let reps = args.reps as f64;
            let p = any as f64 / reps;
            println!(
                "| {questions} | {} | {p:.4} ± {:.4} | {:.4} | {:.3} | {:.4} |",
                if with_ledger {
                    format!("{} tests", args.ledger_horizon)
                } else {
                    "none".to_owned()
                },
                (p * (1.0 - p) / reps).sqrt(),
                accepted as f64 / tested.max(1) as f64,
                some as f64 / reps,
                false_accepts as f64 / reps,
            );
        }
    }
    Ok(())
}
