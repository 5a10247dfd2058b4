//! The power of a pool's exactly calibrated boundary against the most any test of win/loss
//! outcomes can reach, and against the e-process gate at the same level.
//!
//! For each pool size: the fixed-size one-sided sign test at the level (every question won or
//! lost, all questions asked; the most powerful test of the wins), the pool boundary designed
//! for the pool ([`PoolBoundary::design`]) asked at the block ends of the ladder, its exact
//! worst-case false-accept rate against a candidate that chooses its ties adaptively
//! ([`pool_worst_case_false_accept`]), and the e-process gate with both accept thresholds
//! raised to `1/level` (how e-LOND used it before). Then the same at a lower discordance, where
//! the yardstick is the sign test on the discordant pairs alone (it knows their number in
//! advance).
//!
//! ```text
//! cargo run --release -p evolution-gate --example gate_pool -- [--level A] [--win-rate P]
//!     [--discordance Q] [--ladder 5] [--futility-risk R|off] [--lambda-dir X]
//! ```
//!
//! Defaults: level 0.01 (e-LOND's first level over five candidates at 0.05), win rate 0.7,
//! a second table at discordance 0.4, blocks of 5, the `seed` preset with `futility_risk` 0.05
//! (`run`'s gate). Also `cargo xtask bench pool`.
#![expect(clippy::print_stdout, clippy::print_stderr)]

use evolution_gate::{
    Gate, GateParams, PoolBoundary, PoolDesign, ladder_accept_probability, pool_accept_probability,
    pool_worst_case_false_accept,
};

const POOLS: [u64; 6] = [14, 20, 40, 80, 160, 320];

struct Args {
    level: f64,
    win_rate: f64,
    discordance: f64,
    ladder: Vec<usize>,
    futility_risk: Option<f64>,
    lambda_dir: Option<f64>,
}

fn parse() -> Result<Args, String> {
    let mut args = Args {
        level: 0.01,
        win_rate: 0.7,
        discordance: 0.4,
        ladder: vec![5],
        futility_risk: Some(0.05),
        lambda_dir: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let value = it.next().ok_or(format!("{a} needs a value"))?;
        let number = |v: &str| v.parse::<f64>().map_err(|e| format!("{a} {v}: {e}"));
        match a.as_str() {
            "--level" => args.level = number(&value)?,
            "--win-rate" => args.win_rate = number(&value)?,
            "--discordance" => args.discordance = number(&value)?,
            "--lambda-dir" => args.lambda_dir = Some(number(&value)?),
            "--futility-risk" if value == "off" => args.futility_risk = None,
            "--futility-risk" => args.futility_risk = Some(number(&value)?),
            "--ladder" => {
                args.ladder = value
                    .split(',')
                    .map(|s| s.parse().map_err(|e| format!("--ladder {s}: {e}")))
                    .collect::<Result<_, _>>()?;
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(args)
}

/// `P(X ≥ k)` for `X ~ Binomial(n, p)`.
fn binomial_tail(n: u64, k: u64, p: f64) -> f64 {
    let mut pmf = vec![0.0_f64; usize::try_from(n).unwrap_or(0) + 1];
    pmf[0] = 1.0;
    for _ in 0..n {
        for i in (0..pmf.len()).rev() {
            let from_below = if i > 0 { pmf[i - 1] } else { 0.0 };
            pmf[i] = pmf[i] * (1.0 - p) + from_below * p;
        }
    }
    pmf.iter()
        .skip(usize::try_from(k).unwrap_or(usize::MAX))
        .sum()
}

/// The one-sided sign test on `n` pairs at `level`: its critical wins and power at `p`.
fn sign_test(n: u64, level: f64, p: f64) -> (u64, f64) {
    let k = (0..=n + 1)
        .find(|&k| binomial_tail(n, k, 0.5) <= level)
        .unwrap_or(n + 1);
    (k, binomial_tail(n, k, p))
}

/// The sign test that knows the number of discordant pairs: its power when each of `n`
/// questions is discordant with probability `q` and won with probability `p`.
fn conditional_sign_test(n: u64, level: f64, p: f64, q: f64) -> f64 {
    (1..=n)
        .map(|d| {
            let exactly_d = binomial_tail(n, d, q) - binomial_tail(n, d + 1, q);
            exactly_d * sign_test(d, level, p).1
        })
        .sum()
}

fn main() {
    let args = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("gate_pool: {e}");
            std::process::exit(2);
        }
    };
    let mut params = GateParams {
        futility_risk: args.futility_risk,
        ..GateParams::default()
    };
    if let Some(x) = args.lambda_dir {
        params.lambda_dir = x;
    }
    let gate = match Gate::new(params) {
        Ok(g) => g,
        Err(e) => {
            eprintln!("gate_pool: {e}");
            std::process::exit(2);
        }
    };
    let threshold = 1.0 / args.level;
    let e_gate = match Gate::new(GateParams {
        e_confirm: params.e_confirm.max(threshold),
        e_provisional: params.e_provisional.max(threshold),
        ..params
    }) {
        Ok(g) => g,
        Err(e) => {
            eprintln!("gate_pool: {e}");
            std::process::exit(2);
        }
    };
    println!(
        "level {} · win rate {} · ladder {:?} · futility_risk {:?} · lambda_dir {}\n",
        args.level, args.win_rate, args.ladder, args.futility_risk, params.lambda_dir
    );
    println!("every question won or lost:");
    println!(
        "{:>9} | {:>9} {:>6} | {:>6} {:>6} {:>9} {:>9} | {:>9}",
        "questions", "sign test", "wins", "pool", "ratio", "size", "adaptive", "E-process"
    );
    for n in POOLS {
        let (k, sign) = sign_test(n, args.level, args.win_rate);
        let design = PoolDesign {
            questions: n,
            level: args.level,
            discordance: 1.0,
            win_rate: args.win_rate,
        };
        let row = PoolBoundary::design(&gate, &design, &args.ladder).and_then(|b| {
            let power = pool_accept_probability(&gate, &b, &args.ladder, args.win_rate, 1.0)?;
            let adaptive = pool_worst_case_false_accept(&gate, &b, &args.ladder)?;
            let old = ladder_accept_probability(&e_gate, n, &args.ladder, args.win_rate)?;
            Ok((b, power, adaptive, old))
        });
        match row {
            Ok((b, power, adaptive, old)) => println!(
                "{n:>9} | {sign:>9.3} {k:>6} | {power:>6.3} {:>6.2} {:>9.5} {adaptive:>9.5} | {old:>9.3}   (ρ = {}, M = {})",
                power / sign,
                b.false_accept(),
                b.shape().exponent,
                b.shape().horizon
            ),
            Err(e) => println!("{n:>9} | {e}"),
        }
    }
    println!(
        "\n{} of the questions discordant (yardstick: the sign test told the discordant count):",
        args.discordance
    );
    println!(
        "{:>9} | {:>9} | {:>6} {:>6} {:>9} | {:>9} {:>9}",
        "questions", "sign test", "pool", "ratio", "adaptive", "E-process", "pool, q=1"
    );
    for n in POOLS {
        let sign = conditional_sign_test(n, args.level, args.win_rate, args.discordance);
        let design = PoolDesign {
            questions: n,
            level: args.level,
            discordance: args.discordance,
            win_rate: args.win_rate,
        };
        let q = args.discordance;
        let row = PoolBoundary::design(&gate, &design, &args.ladder).and_then(|b| {
            let power = pool_accept_probability(&gate, &b, &args.ladder, args.win_rate, q)?;
            let adaptive = pool_worst_case_false_accept(&gate, &b, &args.ladder)?;
            let old = {
                // The e-process gate on the same questions with ties: simulate through the pool
                // machinery's dynamic program by a boundary that is the e-process's own.
                let b1 = PoolBoundary::design(
                    &gate,
                    &PoolDesign {
                        discordance: 1.0,
                        ..design
                    },
                    &args.ladder,
                )?;
                let unaware = pool_accept_probability(&gate, &b1, &args.ladder, args.win_rate, q)?;
                let e = e_process_power(&e_gate, n, &args.ladder, args.win_rate, q);
                (e, unaware)
            };
            Ok((power, adaptive, old))
        });
        match row {
            Ok((power, adaptive, (old, unaware))) => println!(
                "{n:>9} | {sign:>9.3} | {power:>6.3} {:>6.2} {adaptive:>9.5} | {old:>9.3} {unaware:>9.3}",
                power / sign
            ),
            Err(e) => println!("{n:>9} | {e}"),
        }
    }
}

/// The e-process gate's exact accept probability with ties: a dynamic program over (wins,
/// losses) question by question, [`Gate::decide`] at the block ends.
fn e_process_power(gate: &Gate, n: u64, ladder: &[usize], p: f64, q: f64) -> f64 {
    let Ok(ends) = evolution_gate::block_ends(n, ladder) else {
        return f64::NAN;
    };
    let size = usize::try_from(n).unwrap_or(0) + 1;
    let mut mass = vec![vec![0.0_f64; size]; size];
    mass[0][0] = 1.0;
    let mut accept = 0.0;
    let mut asked = 0_u64;
    for end in ends {
        while asked < end {
            asked += 1;
            let a = usize::try_from(asked).unwrap_or(0);
            for d in (0..=a).rev() {
                for w in 0..=d {
                    let l = d - w;
                    let tie = mass[w][l];
                    let win = if w > 0 { mass[w - 1][l] } else { 0.0 };
                    let loss = if l > 0 { mass[w][l - 1] } else { 0.0 };
                    mass[w][l] = tie * (1.0 - q) + win * q * p + loss * q * (1.0 - p);
                }
            }
        }
        for (w, row) in mass.iter_mut().enumerate() {
            for (l, slot) in row.iter_mut().enumerate() {
                if *slot == 0.0 {
                    continue;
                }
                let tally = evolution_gate::Tally::new(w as u64, l as u64, end, n - end);
                match gate.decide(&tally) {
                    Ok(v) if v.decision.is_terminal() => {
                        if v.decision.is_accept() {
                            accept += *slot;
                        }
                        *slot = 0.0;
                    }
                    _ => {}
                }
            }
        }
    }
    accept
}
