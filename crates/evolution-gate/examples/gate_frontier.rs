//! The power / cost frontier of the gate presets.
//!
//! For every named preset ([`PRESET_NAMES`]) and for Wald's truncated SPRT
//! (0.7 against 0.5, α = 0.05, β = 0.2) it computes, by the exact dynamic
//! program over discordant pairs ([`operating_characteristics`]; ties left
//! out, the gate asked after every pair), the false-accept rate at `p = 0.5`,
//! the power at `p = 0.55 … 0.8` and the expected number of pairs at
//! `p = 0.5`; cross-checks every cell with a Monte Carlo run of the same
//! rule; sweeps `lambda_dir` for three e-processes to trace the frontier;
//! and writes an SVG plot of power at `p = 0.6` and `p = 0.7` against
//! expected pairs at `p = 0.5`.
//!
//! ```text
//! cargo run --release -p evolution-gate --example gate_frontier -- [RUNS]
//!     [--budget B] [--seed S] [--svg PATH]
//! ```
//!
//! Defaults: 100 000 runs per cell, budget 200 pairs, seed 20261129, the plot
//! written to `docs/gate-frontier.svg` of this repository. Also `cargo xtask
//! bench frontier`.
#![expect(clippy::print_stdout, clippy::print_stderr)]

use std::fmt::Write as _;
use std::time::Instant;

use evolution_gate::{
    EProcess, Gate, GateParams, OperatingCharacteristics, PRESET_NAMES, Tally,
    operating_characteristics, wald_lambda,
};

/// Win probabilities of the table: the null, then the alternatives.
const P_TABLE: [f64; 6] = [0.5, 0.55, 0.6, 0.65, 0.7, 0.8];

#[path = "support/rng.rs"]
mod rng;
use rng::Rng;

// ---------------------------------------------------------------- methods

/// A stopping rule over discordant pairs.
#[derive(Clone, Copy)]
enum Method {
    Gate(Gate),
    /// Wald's SPRT of p = 0.7 against 0.5, α = 0.05, β = 0.2, rejecting at the budget.
    Sprt,
}

/// `Some(accepted)` when the rule stops after `w` wins and `l` losses.
fn stop(method: &Method, w: u64, l: u64, budget: u64) -> Option<bool> {
    let n = w + l;
    match method {
        Method::Gate(gate) => {
            let verdict = match gate.decide(&Tally::new(w, l, n, budget - n)) {
                Ok(v) => v,
                Err(e) => panic!("Gate::decide failed: {e}"),
            };
            verdict
                .decision
                .is_terminal()
                .then(|| verdict.decision.is_accept())
        }
        Method::Sprt => {
            let lambda = wald_lambda(w, l);
            if lambda >= (0.8_f64 / 0.05).ln() {
                Some(true)
            } else if lambda <= (0.2_f64 / 0.95).ln() || n == budget {
                Some(false)
            } else {
                None
            }
        }
    }
}

/// Exact (accept, expected pairs) of the SPRT by the same dynamic program.
fn sprt_exact(budget: u64, p: f64) -> (f64, f64) {
    let (mut accept, mut pairs) = (0.0, 0.0);
    let mut live = vec![1.0_f64];
    for n in 1..=budget {
        let mut next = Vec::with_capacity(live.len() + 1);
        let mut previous = 0.0;
        for &mass in &live {
            next.push(mass * (1.0 - p) + previous * p);
            previous = mass;
        }
        next.push(previous * p);
        for (w, mass) in (0_u64..).zip(next.iter_mut()) {
            if *mass == 0.0 {
                continue;
            }
            if let Some(accepted) = stop(&Method::Sprt, w, n - w, budget) {
                if accepted {
                    accept += *mass;
                }
                pairs += *mass * n as f64;
                *mass = 0.0;
            }
        }
        live = next;
    }
    (accept, pairs)
}

/// Exact (accept, expected pairs) of any method.
fn exact(method: &Method, budget: u64, p: f64) -> (f64, f64) {
    match method {
        Method::Gate(gate) => {
            let oc: OperatingCharacteristics = match operating_characteristics(gate, budget, p) {
                Ok(oc) => oc,
                Err(e) => panic!("operating_characteristics failed: {e}"),
            };
            (oc.accept, oc.expected_pairs)
        }
        Method::Sprt => sprt_exact(budget, p),
    }
}

/// Monte Carlo (accepts, total pairs) over `runs` runs.
fn monte_carlo(method: &Method, budget: u64, p: f64, runs: u64, rng: &mut Rng) -> (u64, u64) {
    let (mut accepts, mut pairs) = (0_u64, 0_u64);
    for _ in 0..runs {
        let (mut w, mut l) = (0_u64, 0_u64);
        loop {
            if rng.win(p) {
                w += 1;
            } else {
                l += 1;
            }
            if let Some(accepted) = stop(method, w, l, budget) {
                accepts += u64::from(accepted);
                pairs += w + l;
                break;
            }
        }
    }
    (accepts, pairs)
}

/// 95% Wilson interval of `k` successes in `n`.
fn wilson(k: f64, n: f64) -> (f64, f64) {
    let z = 1.959_963_985;
    let phat = k / n;
    let denom = 1.0 + z * z / n;
    let centre = (phat + z * z / (2.0 * n)) / denom;
    let half = z * (phat * (1.0 - phat) / n + z * z / (4.0 * n * n)).sqrt() / denom;
    ((centre - half).max(0.0), (centre + half).min(1.0))
}

// ---------------------------------------------------------------- arguments

struct Args {
    runs: u64,
    budget: u64,
    seed: u64,
    svg: String,
}

fn parse_args() -> Args {
    let mut a = Args {
        runs: 100_000,
        budget: 200,
        seed: 20_261_129,
        svg: std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .ancestors()
            .nth(2)
            .unwrap_or_else(|| std::path::Path::new("."))
            .join("docs/gate-frontier.svg")
            .display()
            .to_string(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = |name: &str| it.next().unwrap_or_else(|| panic!("{name} needs a value"));
        match arg.as_str() {
            "--budget" => a.budget = value("--budget").parse().expect("budget"),
            "--seed" => a.seed = value("--seed").parse().expect("seed"),
            "--svg" => a.svg = value("--svg"),
            other => a.runs = other.parse().expect("number of runs"),
        }
    }
    assert!(
        a.budget >= 1 && a.runs >= 1,
        "budget and runs must be positive"
    );
    a
}

// ---------------------------------------------------------------- main

/// One point of the plot: expected pairs at p = 0.5, power at 0.6 and 0.7.
#[derive(Clone, Copy)]
struct Point {
    pairs: f64,
    power_06: f64,
    power_07: f64,
}

fn main() {
    let args = parse_args();
    let started = Instant::now();
    let mut methods: Vec<(String, Method)> = PRESET_NAMES
        .iter()
        .map(|&name| match Gate::preset(name) {
            Ok(gate) => (format!("`{name}`"), Method::Gate(gate)),
            Err(e) => panic!("preset {name}: {e}"),
        })
        .collect();
    methods.push((
        "Wald SPRT (0.7 vs 0.5, α 0.05, β 0.2)".to_owned(),
        Method::Sprt,
    ));

    println!("# Gate presets: the exact frontier\n");
    println!(
        "Budget {} discordant pairs (ties left out), the rule asked after every pair. \
         Exact dynamic program; p = P(candidate wins a discordant pair).\n",
        args.budget
    );
    println!(
        "| method | false accept p = 0.5 | power p = 0.55 | 0.6 | 0.65 | 0.7 | 0.8 | expected pairs p = 0.5 | proven false-accept bound |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    let mut exact_table: Vec<Vec<(f64, f64)>> = Vec::new();
    let mut markers: Vec<(String, Point)> = Vec::new();
    for (name, method) in &methods {
        let row: Vec<(f64, f64)> = P_TABLE
            .iter()
            .map(|&p| exact(method, args.budget, p))
            .collect();
        let bound = match method {
            Method::Gate(gate) => {
                let params = gate.params();
                format!(
                    "1/{} = {:.3}, any stopping rule",
                    params.e_confirm.min(params.e_provisional),
                    1.0 / params.e_confirm.min(params.e_provisional)
                )
            }
            // Its statistic is the likelihood ratio, an e-process, but it accepts at 16.
            Method::Sprt => "1/16 = 0.063, any stopping rule (α = 0.05 only approximately, for its own boundaries)".to_owned(),
        };
        println!(
            "| {name} | {:.4} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} | {:.1} | {bound} |",
            row[0].0, row[1].0, row[2].0, row[3].0, row[4].0, row[5].0, row[0].1
        );
        let label = match method {
            Method::Gate(_) => name.trim_matches('`').to_owned(),
            Method::Sprt => "SPRT".to_owned(),
        };
        markers.push((
            label,
            Point {
                pairs: row[0].1,
                power_06: row[2].0,
                power_07: row[4].0,
            },
        ));
        exact_table.push(row);
    }

    // Monte Carlo cross-check.
    println!(
        "\n## Monte Carlo cross-check ({} runs per cell, seed {})\n",
        args.runs, args.seed
    );
    println!("| method | p | MC accept [95%] | exact accept | z | MC pairs | exact pairs |");
    println!("|---|---|---|---|---|---|---|");
    let mut rng = Rng::new(args.seed);
    let (mut inside, mut total, mut worst_z) = (0, 0, 0.0_f64);
    for ((name, method), row) in methods.iter().zip(&exact_table) {
        for (&p, &(accept, pairs)) in P_TABLE.iter().zip(row) {
            let (k, used) = monte_carlo(method, args.budget, p, args.runs, &mut rng);
            let n = args.runs as f64;
            let rate = k as f64 / n;
            let (lo, hi) = wilson(k as f64, n);
            let se = (accept * (1.0 - accept) / n).sqrt();
            let z = if se > 0.0 { (rate - accept) / se } else { 0.0 };
            total += 1;
            if (lo..=hi).contains(&accept) {
                inside += 1;
            }
            worst_z = worst_z.max(z.abs());
            println!(
                "| {name} | {p} | {rate:.4} [{lo:.4}, {hi:.4}] | {accept:.4} | {z:+.2} | {:.2} | {pairs:.2} |",
                used as f64 / n
            );
        }
    }
    println!(
        "\nExact value inside the Monte Carlo 95% interval in {inside}/{total} cells \
         (about 5% fall outside by chance); largest |z| = {worst_z:.2}. {}",
        if worst_z < 4.0 {
            "Agreement: OK."
        } else {
            "DISAGREEMENT: the benchmark or the dynamic program is wrong."
        }
    );

    // The frontier: lambda_dir swept for three e-processes, every accept at E ≥ 20.
    let families: [(&str, EProcess); 3] = [
        ("uniform mixture", EProcess::UniformMixture),
        (
            "likelihood ratio 0.7",
            EProcess::LikelihoodRatio { alternative: 0.7 },
        ),
        (
            "likelihood ratio 0.65",
            EProcess::LikelihoodRatio { alternative: 0.65 },
        ),
    ];
    let sweep: Vec<f64> = (0..=17).map(|i| -1.0 - 0.25 * f64::from(i)).collect();
    println!("\n## Frontier sweep (e_confirm = e_provisional = 20, lambda_dir from −1 to −5.25)\n");
    println!(
        "| e-process | lambda_dir | false accept | expected pairs p = 0.5 | power 0.6 | power 0.7 |"
    );
    println!("|---|---|---|---|---|---|");
    let mut curves: Vec<(String, Vec<Point>)> = Vec::new();
    for (label, e_process) in families {
        let mut points = Vec::new();
        for &lambda_dir in &sweep {
            let params = GateParams {
                lambda_dir,
                e_process,
                ..GateParams::calibrated()
            };
            let gate = match Gate::new(params) {
                Ok(g) => Method::Gate(g),
                Err(e) => panic!("sweep point: {e}"),
            };
            let (fa, pairs) = exact(&gate, args.budget, 0.5);
            let (power_06, _) = exact(&gate, args.budget, 0.6);
            let (power_07, _) = exact(&gate, args.budget, 0.7);
            println!(
                "| {label} | {lambda_dir} | {fa:.4} | {pairs:.1} | {power_06:.3} | {power_07:.3} |"
            );
            points.push(Point {
                pairs,
                power_06,
                power_07,
            });
        }
        curves.push((label.to_owned(), points));
    }

    let svg = render_svg(args.budget, &curves, &markers);
    match std::fs::write(&args.svg, svg) {
        Ok(()) => println!("\nPlot written to {}.", args.svg),
        Err(e) => eprintln!("cannot write {}: {e}", args.svg),
    }
    println!(
        "\nTotal wall time {:.1} s.",
        started.elapsed().as_secs_f64()
    );
}

// ---------------------------------------------------------------- SVG

/// A panel of the plot: title, lowest power shown, the power it plots.
type Panel = (&'static str, f64, fn(&Point) -> f64);

/// Two panels (power at 0.6, power at 0.7) against expected pairs at 0.5.
fn render_svg(budget: u64, curves: &[(String, Vec<Point>)], markers: &[(String, Point)]) -> String {
    const COLOURS: [&str; 3] = ["#1f77b4", "#d62728", "#2ca02c"];
    const MARKER: [&str; 5] = ["#555555", "#9467bd", "#ff7f0e", "#17becf", "#000000"];
    let (panel_w, panel_h, left, top) = (360.0, 260.0, 60.0, 50.0);
    let x_max = 60.0;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="900" height="440" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="900" height="440" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="450" y="22" text-anchor="middle" font-size="15">Gate frontier at a budget of {budget} discordant pairs (exact dynamic program)</text>"#
    );
    let panels: [Panel; 2] = [
        ("power at p = 0.6", 0.0, |p| p.power_06),
        ("power at p = 0.7", 0.4, |p| p.power_07),
    ];
    for (index, (title, y_min, get)) in panels.iter().enumerate() {
        let x0 = left + index as f64 * (panel_w + 90.0);
        let sx = |x: f64| x0 + x.min(x_max) / x_max * panel_w;
        let sy = |y: f64| top + panel_h - (y - y_min) / (1.0 - y_min) * panel_h;
        let _ = writeln!(
            s,
            r#"<rect x="{x0}" y="{top}" width="{panel_w}" height="{panel_h}" fill="none" stroke="black"/>"#
        );
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{}" text-anchor="middle">{title}</text>"#,
            x0 + panel_w / 2.0,
            top - 8.0
        );
        for tick in (0..=6).map(|i| f64::from(i) * 10.0) {
            let _ = writeln!(
                s,
                r##"<line x1="{0}" y1="{1}" x2="{0}" y2="{2}" stroke="#dddddd"/><text x="{0}" y="{3}" text-anchor="middle">{tick}</text>"##,
                sx(tick),
                top,
                top + panel_h,
                top + panel_h + 15.0
            );
        }
        let steps = ((1.0 - y_min) / 0.1).round() as i32;
        for i in 0..=steps {
            let y = y_min + f64::from(i) * 0.1;
            let _ = writeln!(
                s,
                r##"<line x1="{x0}" y1="{0}" x2="{1}" y2="{0}" stroke="#dddddd"/><text x="{2}" y="{3}" text-anchor="end">{y:.1}</text>"##,
                sy(y),
                x0 + panel_w,
                x0 - 5.0,
                sy(y) + 4.0
            );
        }
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{}" text-anchor="middle">expected pairs at p = 0.5 (not-better candidate)</text>"#,
            x0 + panel_w / 2.0,
            top + panel_h + 32.0
        );
        for ((_, points), colour) in curves.iter().zip(COLOURS) {
            let path: Vec<String> = points
                .iter()
                .filter(|p| p.pairs <= x_max)
                .map(|p| format!("{:.1},{:.1}", sx(p.pairs), sy(get(p).max(*y_min))))
                .collect();
            let _ = writeln!(
                s,
                r#"<polyline points="{}" fill="none" stroke="{colour}" stroke-width="1.5"/>"#,
                path.join(" ")
            );
        }
        for ((name, point), colour) in markers.iter().zip(MARKER) {
            let (cx, cy) = (sx(point.pairs), sy(get(point).max(*y_min)));
            // Label placement that keeps the close markers apart.
            let (dx, dy, anchor) = match name.as_str() {
                "SPRT" => (-7.0, -7.0, "end"),
                "thrifty" => (2.0, 19.0, "middle"),
                "calibrated" => (8.0, 12.0, "start"),
                "thorough" => (8.0, 14.0, "start"),
                _ => (7.0, -6.0, "start"),
            };
            let _ = writeln!(
                s,
                r#"<circle cx="{cx:.1}" cy="{cy:.1}" r="4.5" fill="{colour}"/><text x="{:.1}" y="{:.1}" fill="{colour}" text-anchor="{anchor}">{name}</text>"#,
                cx + dx,
                cy + dy
            );
        }
    }
    // Legend of the curves.
    for (i, ((label, _), colour)) in curves.iter().zip(COLOURS).enumerate() {
        let y = 380.0 + i as f64 * 18.0;
        let _ = writeln!(
            s,
            r#"<line x1="80" y1="{y}" x2="110" y2="{y}" stroke="{colour}" stroke-width="2"/><text x="118" y="{}">{label}</text>"#,
            y + 4.0
        );
    }
    let _ = writeln!(
        s,
        r#"<text x="420" y="384">curves: every accept at E ≥ 20, lambda_dir swept from −1 to −5.25</text><text x="420" y="402">dots: the named presets and Wald's SPRT (0.7 vs 0.5, α 0.05, β 0.2)</text>"#
    );
    let _ = writeln!(s, "</svg>");
    s
}
