//! The Rust side of `cargo xtask bench python`: the same gate decisions and patches the
//! Python benchmark times through the module, called directly on the kernel crates.
//!
//! Usage: `api_bench CASES.json`, where the file (written by `python/bench/bench_api.py
//! cases`) holds `{"gate": [[w, l, n_used, n_remaining], ...], "documents": [{"name",
//! "document", "edits"}, ...]}`. Prints one JSON object: gate decisions per second and, per
//! document, patch edits per second.

#![expect(clippy::print_stdout, clippy::print_stderr)]

use std::process::ExitCode;
use std::time::{Duration, Instant};

use evolution_gate::{Gate, Tally};
use evolution_types::Edit;
use serde::Deserialize;
use serde_json::json;

/// How long each figure is measured for.
const BUDGET: Duration = Duration::from_millis(800);

#[derive(Deserialize)]
struct Cases {
    gate: Vec<[u64; 4]>,
    documents: Vec<Document>,
}

#[derive(Deserialize)]
struct Document {
    name: String,
    document: String,
    edits: Vec<Edit>,
}

/// Runs `once` (which does `per_call` operations) until [`BUDGET`] has passed; operations
/// per second.
fn rate(per_call: usize, mut once: impl FnMut()) -> f64 {
    let started = Instant::now();
    let mut calls = 0_u64;
    while started.elapsed() < BUDGET {
        once();
        calls += 1;
    }
    (calls as f64 * per_call as f64) / started.elapsed().as_secs_f64()
}

fn main() -> ExitCode {
    let Some(path) = std::env::args_os().nth(1) else {
        eprintln!("usage: api_bench CASES.json");
        return ExitCode::from(2);
    };
    let cases: Cases = match std::fs::read_to_string(&path)
        .map_err(|err| err.to_string())
        .and_then(|text| serde_json::from_str(&text).map_err(|err| err.to_string()))
    {
        Ok(cases) => cases,
        Err(err) => {
            eprintln!("api_bench: cannot read {}: {err}", path.to_string_lossy());
            return ExitCode::from(2);
        }
    };
    let gate = Gate::default();
    let tallies: Vec<Tally> = cases
        .gate
        .iter()
        .map(|&[w, l, n_used, n_remaining]| Tally::new(w, l, n_used, n_remaining))
        .collect();
    let decisions = rate(tallies.len(), || {
        for tally in &tallies {
            std::hint::black_box(gate.decide(std::hint::black_box(tally)).ok());
        }
    });
    let mut patches = serde_json::Map::new();
    for doc in &cases.documents {
        let edits_per_s = rate(doc.edits.len(), || {
            std::hint::black_box(evolution_patch::apply_patch_with_report(
                std::hint::black_box(&doc.document),
                &doc.edits,
                &[],
            ));
        });
        patches.insert(doc.name.clone(), json!(edits_per_s));
    }
    println!(
        "{}",
        json!({ "gate_decisions_per_s": decisions, "patch_edits_per_s": patches })
    );
    ExitCode::SUCCESS
}
