//! What looking more often and the tie-aware futility exit cost and save on questions with ties.
//!
//! Simulates paired comparisons in which each question is discordant with probability `d`
//! and a discordant pair is won with probability `p`, asked at the block ends of a ladder
//! until [`Gate::decide`] takes an exit, and reports the accept rate and the mean questions
//! used, for the default ladder (blocks of 10, 20, 40) and blocks of 5, without and with
//! [`GateParams::futility_risk`]. The gate is the `seed` preset with both accept thresholds
//! raised to `E ≥ e` (e-LOND's first level: 120 over six candidates at 0.05).
//!
//! ```text
//! cargo run --release -p evolution-gate --example gate_ties -- [RUNS]
//!     [--questions N] [--e-needed E] [--seed S]
//! ```
//!
//! Defaults: 20 000 runs per cell, 66 questions, `E ≥ 120`, seed 20261206. Also `cargo xtask
//! bench ties`.
#![expect(clippy::print_stdout, clippy::print_stderr)]

use evolution_gate::{Gate, GateParams, Tally};

#[path = "support/rng.rs"]
mod rng;
use rng::Rng;

/// (share of discordant questions, win probability of a discordant pair) of each row.
const CASES: [(f64, f64); 8] = [
    (0.1, 0.5),
    (0.3, 0.5),
    (0.3, 0.3),
    (0.15, 0.8),
    (0.2, 0.9),
    (0.3, 0.7),
    (0.3, 0.8),
    (0.5, 0.8),
];

struct Args {
    runs: u64,
    questions: u64,
    e_needed: f64,
    seed: u64,
}

fn parse() -> Result<Args, String> {
    let mut args = Args {
        runs: 20_000,
        questions: 66,
        e_needed: 120.0,
        seed: 20_261_206,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut value = || it.next().ok_or(format!("{a} needs a value"));
        match a.as_str() {
            "--questions" => args.questions = value()?.parse().map_err(|e| format!("{e}"))?,
            "--e-needed" => args.e_needed = value()?.parse().map_err(|e| format!("{e}"))?,
            "--seed" => args.seed = value()?.parse().map_err(|e| format!("{e}"))?,
            runs => args.runs = runs.parse().map_err(|e| format!("{runs}: {e}"))?,
        }
    }
    if args.runs == 0 || args.questions == 0 {
        return Err("RUNS and --questions must be at least 1".into());
    }
    Ok(args)
}

/// Accept rate and mean questions used over `runs` simulated comparisons.
fn simulate(gate: &Gate, ladder: &[u64], args: &Args, d: f64, p: f64, rng: &mut Rng) -> (f64, f64) {
    let (mut accepted, mut used) = (0_u64, 0_u64);
    for _ in 0..args.runs {
        let (mut w, mut l, mut k) = (0_u64, 0_u64, 0_u64);
        let mut blocks = ladder
            .iter()
            .chain(std::iter::repeat(ladder.last().unwrap_or(&1)));
        loop {
            let size = blocks.next().copied().unwrap_or(1);
            let end = (k + size).min(args.questions);
            while k < end {
                if rng.uniform() < d {
                    if rng.uniform() < p {
                        w += 1;
                    } else {
                        l += 1;
                    }
                }
                k += 1;
            }
            let decision = match gate.decide(&Tally::new(w, l, k, args.questions - k)) {
                Ok(v) => v.decision,
                Err(e) => panic!("valid counts refused: {e}"),
            };
            if decision.is_terminal() {
                accepted += u64::from(decision.is_accept());
                break;
            }
        }
        used += k;
    }
    let n = args.runs as f64;
    (accepted as f64 / n, used as f64 / n)
}

fn main() {
    let args = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("gate_ties: {e}");
            std::process::exit(2);
        }
    };
    let mut rng = Rng::new(args.seed);
    println!(
        "{} runs per cell, {} questions, E ≥ {}, seed {}\n",
        args.runs, args.questions, args.e_needed, args.seed
    );
    println!("| discordant | win rate | ladder | futility_risk | accept rate | questions used |");
    println!("|---|---|---|---|---|---|");
    for (d, p) in CASES {
        for ladder in [&[10_u64, 20, 40][..], &[5]] {
            for risk in [None, Some(0.05), Some(0.2)] {
                let params = GateParams {
                    e_confirm: args.e_needed,
                    e_provisional: args.e_needed,
                    futility_risk: risk,
                    ..GateParams::default()
                };
                let gate = match Gate::new(params) {
                    Ok(g) => g,
                    Err(e) => panic!("--e-needed {}: {e}", args.e_needed),
                };
                let (accept, used) = simulate(&gate, ladder, &args, d, p, &mut rng);
                let risk = risk.map_or("off".to_owned(), |r| r.to_string());
                println!("| {d} | {p} | {ladder:?} | {risk} | {accept:.3} | {used:.1} |");
            }
        }
    }
}
