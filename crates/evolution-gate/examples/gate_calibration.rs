//! Calibration benchmark of the CE-Gate.
//!
//! Simulates paired evaluation in question time: every question is a tie
//! (both arms right or both wrong) with probability `tie_rate`, otherwise a
//! discordant pair the candidate wins with probability `p`. The gate is asked
//! after every block of questions, which is the most aggressive optional
//! stopping a harness can do. Prints markdown tables of false-accept rate,
//! power and average sample number for the gate and for the classical
//! alternatives, then cross-checks the gate's Monte Carlo figures against an
//! exact dynamic program over `(W, L)`, and measures `Gate::decide`
//! throughput.
//!
//! ```text
//! cargo run --release -p evolution-gate --example gate_calibration -- [SEQUENCES]
//!     [--tie-rate R] [--block B] [--seed S] [--budgets 200,2000] [--search | --throughput]
//! ```
#![expect(clippy::print_stdout, clippy::print_stderr)]

use std::time::Instant;

use evolution_gate::{EProcess, Gate, GateDecision, GateParams, Tally, ln_e_value};

/// Probabilities of a candidate win among discordant pairs that the tables report.
const P_VALUES: [f64; 7] = [0.45, 0.5, 0.55, 0.6, 0.7, 0.8, 0.9];
/// Level of the classical tests (and `1/e_confirm` of the default gate).
const ALPHA: f64 = 0.05;

#[path = "support/rng.rs"]
mod rng;
use rng::Rng;

/// Outcome of one question.
#[derive(Clone, Copy, PartialEq)]
enum Pair {
    Tie,
    Win,
    Loss,
}

fn draw(rng: &mut Rng, tie: f64, p: f64) -> Pair {
    let u = rng.uniform();
    if u < tie {
        Pair::Tie
    } else if u < tie + (1.0 - tie) * p {
        Pair::Win
    } else {
        Pair::Loss
    }
}

// ---------------------------------------------------------------- methods

#[derive(Clone, Copy)]
enum Method {
    Gate(Gate),
    /// Fixed-n exact sign test on the first `n` discordant pairs.
    SignTest {
        n: u64,
    },
    /// Wald's SPRT of p = 0.7 against p = 0.5 with α = 0.05, β = 0.2.
    Sprt,
    /// Accept if the candidate won more of the first `m` questions than it lost.
    Greedy {
        m: u64,
    },
}

#[derive(Default, Clone, Copy)]
struct Outcome {
    accept: bool,
    provisional: bool,
    directional: bool,
    questions: u64,
    discordant: u64,
}

struct Setup {
    tie: f64,
    budget: u64,
    block: u64,
    /// `sign_crit[m]`: smallest k with P(Bin(m, ½) ≥ k) ≤ α.
    sign_crit: Vec<u64>,
}

fn simulate(method: Method, p: f64, s: &Setup, rng: &mut Rng) -> Outcome {
    let (mut w, mut l) = (0_u64, 0_u64);
    match method {
        Method::Gate(gate) => {
            for t in 1..=s.budget {
                match draw(rng, s.tie, p) {
                    Pair::Win => w += 1,
                    Pair::Loss => l += 1,
                    Pair::Tie => {}
                }
                if t % s.block != 0 && t != s.budget {
                    continue;
                }
                let d = match gate.decide(&Tally::new(w, l, t, s.budget - t)) {
                    Ok(v) => v.decision,
                    Err(e) => panic!("Gate::decide failed: {e}"),
                };
                if d.is_terminal() {
                    return Outcome {
                        accept: d.is_accept(),
                        provisional: d == GateDecision::AcceptProvisional,
                        directional: d == GateDecision::RejectDirectional,
                        questions: t,
                        discordant: w + l,
                    };
                }
            }
            unreachable!("the gate always decides at exhaustion")
        }
        Method::SignTest { n } => {
            let mut t = 0;
            while t < s.budget && w + l < n {
                t += 1;
                match draw(rng, s.tie, p) {
                    Pair::Win => w += 1,
                    Pair::Loss => l += 1,
                    Pair::Tie => {}
                }
            }
            let m = (w + l) as usize;
            Outcome {
                accept: m > 0 && w >= s.sign_crit[m],
                questions: t,
                discordant: w + l,
                ..Outcome::default()
            }
        }
        Method::Sprt => {
            let upper = ((1.0 - 0.2) / ALPHA).ln();
            let lower = (0.2 / (1.0 - ALPHA)).ln();
            let mut lambda = 0.0;
            for t in 1..=s.budget {
                match draw(rng, s.tie, p) {
                    Pair::Win => {
                        w += 1;
                        lambda += 1.4_f64.ln();
                    }
                    Pair::Loss => {
                        l += 1;
                        lambda += 0.6_f64.ln();
                    }
                    Pair::Tie => continue,
                }
                if lambda >= upper || lambda <= lower {
                    return Outcome {
                        accept: lambda >= upper,
                        questions: t,
                        discordant: w + l,
                        ..Outcome::default()
                    };
                }
            }
            Outcome {
                questions: s.budget,
                discordant: w + l,
                ..Outcome::default()
            }
        }
        Method::Greedy { m } => {
            let m = m.min(s.budget);
            for _ in 0..m {
                match draw(rng, s.tie, p) {
                    Pair::Win => w += 1,
                    Pair::Loss => l += 1,
                    Pair::Tie => {}
                }
            }
            Outcome {
                accept: w > l,
                questions: m,
                discordant: w + l,
                ..Outcome::default()
            }
        }
    }
}

#[derive(Default, Clone, Copy)]
struct Stats {
    n: f64,
    accept: f64,
    provisional: f64,
    directional: f64,
    questions: f64,
    discordant: f64,
}

impl Stats {
    fn add(&mut self, o: Outcome) {
        self.n += 1.0;
        self.accept += f64::from(u8::from(o.accept));
        self.provisional += f64::from(u8::from(o.provisional));
        self.directional += f64::from(u8::from(o.directional));
        self.questions += o.questions as f64;
        self.discordant += o.discordant as f64;
    }
    fn rate(&self) -> f64 {
        self.accept / self.n
    }
    /// The 95% Wilson interval around `rate`.
    fn interval(&self) -> (f64, f64) {
        wilson(self.accept, self.n)
    }
    fn asn(&self) -> f64 {
        self.discordant / self.n
    }
}

fn wilson(k: f64, n: f64) -> (f64, f64) {
    let z = 1.959_963_984_540_054_f64;
    let ph = k / n;
    let denom = 1.0 + z * z / n;
    let centre = (ph + z * z / (2.0 * n)) / denom;
    let half = z * (ph * (1.0 - ph) / n + z * z / (4.0 * n * n)).sqrt() / denom;
    ((centre - half).max(0.0), (centre + half).min(1.0))
}

fn run_mc(method: Method, p: f64, s: &Setup, sequences: u64, seed: u64) -> Stats {
    let mut rng = Rng::new(seed);
    let mut st = Stats::default();
    for _ in 0..sequences {
        st.add(simulate(method, p, s, &mut rng));
    }
    st
}

// ---------------------------------------------------------------- exact DP

/// Exact operating characteristics of the gate by dynamic programming over
/// `(W, L)` in question time.
#[derive(Default, Clone, Copy)]
struct Exact {
    accept: f64,
    provisional: f64,
    directional: f64,
    questions: f64,
    discordant: f64,
}

fn exact_dp(gate: &Gate, p: f64, s: &Setup) -> Exact {
    // Dense grid over the bounding box of live states, regrown on demand.
    let mut dim = 64_usize;
    let mut cur = vec![0.0_f64; dim * dim];
    cur[0] = 1.0;
    let (mut wmax, mut lmax) = (0_usize, 0_usize);
    let (pt, pw, pl) = (s.tie, (1.0 - s.tie) * p, (1.0 - s.tie) * (1.0 - p));
    let mut out = Exact::default();
    for t in 1..=s.budget {
        if wmax + 2 >= dim || lmax + 2 >= dim {
            let nd = dim * 2;
            let mut grown = vec![0.0; nd * nd];
            for wi in 0..=wmax {
                for li in 0..=lmax {
                    grown[wi * nd + li] = cur[wi * dim + li];
                }
            }
            cur = grown;
            dim = nd;
        }
        let mut next = vec![0.0_f64; dim * dim];
        for wi in 0..=wmax {
            for li in 0..=lmax {
                let q = cur[wi * dim + li];
                if q == 0.0 {
                    continue;
                }
                next[wi * dim + li] += q * pt;
                next[(wi + 1) * dim + li] += q * pw;
                next[wi * dim + li + 1] += q * pl;
            }
        }
        wmax += 1;
        lmax += 1;
        let decide_now = t % s.block == 0 || t == s.budget;
        let (mut nwmax, mut nlmax) = (0, 0);
        for wi in 0..=wmax {
            for li in 0..=lmax {
                let q = next[wi * dim + li];
                if q == 0.0 {
                    continue;
                }
                if decide_now {
                    let tally = Tally::new(wi as u64, li as u64, t, s.budget - t);
                    let d = match gate.decide(&tally) {
                        Ok(v) => v.decision,
                        Err(e) => panic!("Gate::decide failed: {e}"),
                    };
                    if d.is_terminal() {
                        if d.is_accept() {
                            out.accept += q;
                        }
                        if d == GateDecision::AcceptProvisional {
                            out.provisional += q;
                        }
                        if d == GateDecision::RejectDirectional {
                            out.directional += q;
                        }
                        out.questions += q * t as f64;
                        out.discordant += q * (wi + li) as f64;
                        next[wi * dim + li] = 0.0;
                        continue;
                    }
                }
                nwmax = nwmax.max(wi);
                nlmax = nlmax.max(li);
            }
        }
        wmax = nwmax;
        lmax = nlmax;
        cur = next;
    }
    out
}

// ---------------------------------------------------------------- sign test

/// ln P(Bin(n, q) ≥ k).
fn binom_upper_tail(n: u64, k: u64, q: f64) -> f64 {
    if k == 0 {
        return 1.0;
    }
    if k > n {
        return 0.0;
    }
    // Sum pmf from k to n in log space.
    let mut ln_pmf = ln_choose(n, k) + k as f64 * q.ln() + (n - k) as f64 * (1.0 - q).ln();
    let mut total = 0.0;
    for j in k..=n {
        total += ln_pmf.exp();
        if j < n {
            ln_pmf += ((n - j) as f64 / (j + 1) as f64).ln() + (q / (1.0 - q)).ln();
        }
    }
    total
}

fn ln_choose(n: u64, k: u64) -> f64 {
    (1..=k).map(|i| ((n - k + i) as f64 / i as f64).ln()).sum()
}

fn sign_critical(m: u64) -> u64 {
    (0..=m + 1)
        .find(|&k| binom_upper_tail(m, k, 0.5) <= ALPHA)
        .unwrap_or(m + 1)
}

/// Smallest n whose exact level-α sign test has power ≥ 0.8 at p = 0.7.
fn sign_test_n() -> u64 {
    (1..1000)
        .find(|&n| binom_upper_tail(n, sign_critical(n), 0.7) >= 0.8)
        .unwrap_or(1000)
}

fn kl_half(p: f64) -> f64 {
    p * (2.0 * p).ln() + (1.0 - p) * (2.0 * (1.0 - p)).ln()
}

// ---------------------------------------------------------------- CLI

struct Args {
    sequences: u64,
    tie: f64,
    block: u64,
    seed: u64,
    budgets: Vec<u64>,
    search: bool,
    throughput_only: bool,
}

fn parse_args() -> Args {
    let mut a = Args {
        sequences: 100_000,
        tie: 0.5,
        block: 1,
        seed: 20_261_129,
        budgets: vec![200, 2000],
        search: false,
        throughput_only: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = |name: &str| it.next().unwrap_or_else(|| panic!("{name} needs a value"));
        match arg.as_str() {
            "--tie-rate" => a.tie = value("--tie-rate").parse().expect("tie rate"),
            "--block" => a.block = value("--block").parse().expect("block size"),
            "--seed" => a.seed = value("--seed").parse().expect("seed"),
            "--budgets" => {
                a.budgets = value("--budgets")
                    .split(',')
                    .map(|b| b.trim().parse().expect("budget"))
                    .collect();
            }
            "--search" => a.search = true,
            "--throughput" => a.throughput_only = true,
            other => a.sequences = other.parse().expect("number of sequences"),
        }
    }
    assert!((0.0..1.0).contains(&a.tie), "tie rate must be in [0, 1)");
    assert!(a.block >= 1, "block must be at least 1");
    a
}

fn seed_for(base: u64, parts: &[u64]) -> u64 {
    let mut rng = Rng::new(base);
    for &p in parts {
        rng = Rng::new(rng.next_u64() ^ p.wrapping_mul(0x2545_f491_4f6c_dd1d));
    }
    rng.next_u64()
}

fn main() {
    let args = parse_args();
    if args.search {
        search(&args);
        return;
    }
    if args.throughput_only {
        throughput();
        return;
    }
    let started = Instant::now();
    let sign_n = sign_test_n();
    println!("# CE-Gate calibration\n");
    println!(
        "{} sequences per cell, tie rate {}, gate asked every {} question(s), seed {}. \
         p = P(candidate wins | discordant pair). Accept rates with 95% Wilson intervals; \
         ASN = average number of discordant pairs used (questions used = ASN / (1 − tie rate) \
         in expectation).\n",
        args.sequences, args.tie, args.block, args.seed
    );
    println!(
        "Fixed-n sign test: exact one-sided, α = {ALPHA}, n = {sign_n} discordant pairs \
         (smallest n with 80% power at p = 0.7; critical value {}); when the budget runs out \
         first it tests the pairs it has at their own exact critical value. \
         SPRT: p = 0.7 vs 0.5, α = 0.05, β = 0.2, rejects at the budget. \
         Oracle: ln(1/α)/KL(p‖½), the least expected sample any level-α test needs.\n",
        sign_critical(sign_n)
    );

    let methods: Vec<(String, Method)> = vec![
        (
            "gate, `GateParams::default()`".into(),
            Method::Gate(Gate::default()),
        ),
        (
            "gate, `GateParams::calibrated()`".into(),
            Method::Gate(Gate::calibrated()),
        ),
        (
            format!("sign test, n = {sign_n}"),
            Method::SignTest { n: sign_n },
        ),
        ("Wald SPRT".into(), Method::Sprt),
        ("greedy, minibatch 3".into(), Method::Greedy { m: 3 }),
        ("greedy, minibatch 5".into(), Method::Greedy { m: 5 }),
        ("greedy, minibatch 10".into(), Method::Greedy { m: 10 }),
    ];

    for &budget in &args.budgets {
        let max_m = budget.max(sign_n) as usize + 1;
        let setup = Setup {
            tie: args.tie,
            budget,
            block: args.block,
            sign_crit: (0..=max_m as u64).map(sign_critical).collect(),
        };
        let mut results = Vec::new();
        for (mi, (_, method)) in methods.iter().enumerate() {
            let row: Vec<Stats> = P_VALUES
                .iter()
                .enumerate()
                .map(|(pi, &p)| {
                    let seed = seed_for(args.seed, &[budget, mi as u64, pi as u64]);
                    run_mc(*method, p, &setup, args.sequences, seed)
                })
                .collect();
            results.push(row);
        }
        print_tables(budget, &methods, &results);
        cross_check(budget, &setup, &methods, &results);
        eprintln!(
            "budget {budget} done after {:.1} s",
            started.elapsed().as_secs_f64()
        );
    }
    throughput();
    println!(
        "\nTotal wall time {:.1} s.",
        started.elapsed().as_secs_f64()
    );
}

fn print_tables(budget: u64, methods: &[(String, Method)], results: &[Vec<Stats>]) {
    println!("## Budget {budget} questions\n");
    println!("### Accept rate (false accepts at p ≤ 0.5, power above)\n");
    print!("| method |");
    for p in P_VALUES {
        print!(" p = {p} |");
    }
    println!();
    println!("|---|{}", "---|".repeat(P_VALUES.len()));
    for ((name, _), row) in methods.iter().zip(results) {
        print!("| {name} |");
        for (p, st) in P_VALUES.iter().zip(row) {
            if *p <= 0.5 {
                let (lo, hi) = st.interval();
                print!(" {:.4} [{:.4}, {:.4}] |", st.rate(), lo, hi);
            } else {
                print!(" {:.3} |", st.rate());
            }
        }
        println!();
    }
    println!("\n### Average sample number (discordant pairs)\n");
    print!("| method |");
    for p in P_VALUES {
        print!(" p = {p} |");
    }
    println!();
    println!("|---|{}", "---|".repeat(P_VALUES.len()));
    for ((name, _), row) in methods.iter().zip(results) {
        print!("| {name} |");
        for st in row {
            print!(" {:.1} |", st.asn());
        }
        println!();
    }
    print!("| oracle ln(1/α)/KL(p‖½) |");
    for p in P_VALUES {
        if p <= 0.5 {
            print!(" — |");
        } else {
            print!(" {:.1} |", (1.0 / ALPHA).ln() / kl_half(p));
        }
    }
    println!();
    println!("\n### What the gate's exits do\n");
    println!("| gate | p | reject_directional | accept_provisional | avg questions |");
    println!("|---|---|---|---|---|");
    for ((name, method), row) in methods.iter().zip(results) {
        if !matches!(method, Method::Gate(_)) {
            continue;
        }
        for (p, st) in P_VALUES.iter().zip(row) {
            println!(
                "| {name} | {p} | {:.4} | {:.4} | {:.1} |",
                st.directional / st.n,
                st.provisional / st.n,
                st.questions / st.n
            );
        }
    }
    println!();
}

fn cross_check(budget: u64, setup: &Setup, methods: &[(String, Method)], results: &[Vec<Stats>]) {
    println!("### Exact dynamic program vs Monte Carlo (budget {budget})\n");
    println!(
        "| gate | p | MC accept [95%] | exact accept | z | MC ASN | exact ASN | exact P(directional) |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    let (mut inside, mut total, mut worst_z) = (0, 0, 0.0_f64);
    for ((name, method), row) in methods.iter().zip(results) {
        let Method::Gate(gate) = method else {
            continue;
        };
        for (p, st) in P_VALUES.iter().zip(row) {
            let ex = exact_dp(gate, *p, setup);
            let (lo, hi) = st.interval();
            let se = (ex.accept * (1.0 - ex.accept) / st.n).sqrt();
            let z = if se > 0.0 {
                (st.rate() - ex.accept) / se
            } else {
                0.0
            };
            total += 1;
            if (lo..=hi).contains(&ex.accept) {
                inside += 1;
            }
            worst_z = worst_z.max(z.abs());
            println!(
                "| {name} | {p} | {:.4} [{:.4}, {:.4}] | {:.4} | {:+.2} | {:.2} | {:.2} | {:.4} |",
                st.rate(),
                lo,
                hi,
                ex.accept,
                z,
                st.asn(),
                ex.discordant,
                ex.directional
            );
        }
    }
    println!(
        "\nExact value inside the Monte Carlo 95% interval in {inside}/{total} cells \
         (about 5% of cells fall outside by chance); largest |z| = {worst_z:.2}. {}\n",
        if worst_z < 4.0 {
            "Agreement: OK."
        } else {
            "DISAGREEMENT: the benchmark is wrong."
        }
    );
}

fn throughput() {
    println!("## `Gate::decide` throughput (one core)\n");
    let gate = Gate::default();
    // A realistic mix: the (W, L) a 200-question validation visits.
    let mut calls = 0_u64;
    let mut sink = 0.0;
    let start = Instant::now();
    while start.elapsed().as_secs_f64() < 2.0 {
        for w in 0..60_u64 {
            for l in 0..60_u64 {
                let n_used = w + l + 20;
                if let Ok(v) = gate.decide(&Tally::new(w, l, n_used, 200 - n_used.min(200))) {
                    sink += v.ln_e_value;
                }
                calls += 1;
            }
        }
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "- W, L < 60, n_remaining ≤ 180: {:.2} million decisions/s ({:.0} ns each)",
        calls as f64 / secs / 1e6,
        secs / calls as f64 * 1e9
    );
    for (w, l) in [
        (1_000_u64, 1_000_u64),
        (10_000_000, 10_000_000),
        (10_000_000, 9_990_000),
    ] {
        let reps = 200;
        let start = Instant::now();
        for i in 0..reps {
            sink += ln_e_value(w + i % 2, l);
        }
        let per = start.elapsed().as_secs_f64() / reps as f64;
        println!("- `ln_e_value({w}, {l})`: {:.1} µs per call", per * 1e6);
    }
    println!("\n(checksum {sink:.3})");
}

// ---------------------------------------------------------------- search

/// Grid search of parameter sets with the exact DP at budget 200.
fn search(args: &Args) {
    let setup = Setup {
        tie: args.tie,
        budget: 200,
        block: args.block,
        sign_crit: Vec::new(),
    };
    println!(
        "| e_confirm | e_prov | w_net | delta_min | lambda_dir | FA(0.5) | FA(0.45) | ASN(0.5) | pow 0.55 | 0.6 | 0.7 | 0.8 | 0.9 |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for e_confirm in [20.0] {
        for e_provisional in [3.0, 5.0, 10.0, 20.0] {
            for delta_min in [0.0, 0.02] {
                for lambda_dir in [-0.642, -1.0, -1.5, -1.75, -2.0, -2.25, -2.5, -3.0] {
                    let params = GateParams {
                        e_confirm,
                        e_provisional,
                        w_net_min: 2,
                        delta_min,
                        lambda_dir,
                        e_rollback: 10.0,
                        e_process: EProcess::UniformMixture,
                        futility_risk: None,
                    };
                    let gate = match Gate::new(params) {
                        Ok(gate) => gate,
                        Err(e) => panic!("search grid point is not a valid gate: {e}"),
                    };
                    let ex: Vec<Exact> = P_VALUES
                        .iter()
                        .map(|&p| exact_dp(&gate, p, &setup))
                        .collect();
                    println!(
                        "| {e_confirm} | {e_provisional} | 2 | {delta_min} | {lambda_dir} | {:.4} | {:.4} | {:.1} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} |",
                        ex[1].accept,
                        ex[0].accept,
                        ex[1].discordant,
                        ex[2].accept,
                        ex[3].accept,
                        ex[4].accept,
                        ex[5].accept,
                        ex[6].accept
                    );
                }
            }
        }
    }
}
