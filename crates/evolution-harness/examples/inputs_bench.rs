//! Time per megabyte of the inputs that once took quadratic time, at three
//! sizes: a flat row means the time grows linearly with the input.
//!
//! - question set: a pretty-printed JSON array of questions (each problem
//!   names a line, so every element's line is found);
//! - trajectories: one JSON array of trajectories, a few ids repeated
//!   (the duplicate check);
//! - JSON repair: an LLM reply `{k:a,k:a,…}` of unquoted keys and values
//!   (the repair parser's look-ahead for a closing quote).
//!
//! Usage: `cargo run --release -p evolution-harness --example inputs_bench [-- MB...]`
//! (or `cargo xtask bench inputs [MB...]`); the sizes default to 1, 10 and 100.
#![expect(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a bench prints its report and its usage"
)]

use std::fmt::Write as _;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use evolution_diagnose::json::extract_json_from_response;
use evolution_harness::{parse_question_set, parse_trajectories};

const MB: usize = 1_000_000;

/// One kind of input: its name, how to build about `bytes` of it, and what
/// to run on it (returning a count that shows the work was done).
struct Kind {
    name: &'static str,
    build: fn(usize) -> String,
    run: fn(&str) -> usize,
}

fn question_set(bytes: usize) -> String {
    let mut text = String::with_capacity(bytes + 200);
    text.push_str("[\n");
    let mut i = 0usize;
    while text.len() < bytes {
        if i > 0 {
            text.push_str(",\n");
        }
        let _ = write!(
            text,
            "  {{\n    \"question_id\": \"q{i}\",\n    \"task_type\": \"summary\",\n    \
             \"question\": \"What changed in release {i}?\",\n    \"answer\": \"fix {i}\"\n  }}"
        );
        i += 1;
    }
    text.push_str("\n]\n");
    text
}

fn run_question_set(text: &str) -> usize {
    parse_question_set(text).map_or(0, |questions| questions.len())
}

fn trajectories(bytes: usize) -> String {
    let mut text = String::with_capacity(bytes + 300);
    text.push('[');
    let mut i = 0usize;
    while text.len() < bytes {
        if i > 0 {
            text.push(',');
        }
        // Every 1000th trajectory repeats an earlier id.
        let id = if i % 1000 == 999 { i / 2 } else { i };
        let _ = write!(
            text,
            "{{\"id\":\"t{id}\",\"task_description\":\"summarise\",\"question\":\"q{i}\",\
             \"fail_reason\":\"missed a fix\",\"predicted_answer\":\"a\",\"reference_text\":\"b\"}}"
        );
        i += 1;
    }
    text.push(']');
    text
}

fn run_trajectories(text: &str) -> usize {
    let out = parse_trajectories("bench", [("bench.json", text)]);
    out.predictions.len() + out.diagnostics.len()
}

fn unquoted_reply(bytes: usize) -> String {
    let mut text = String::with_capacity(bytes + 8);
    text.push('{');
    while text.len() < bytes {
        text.push_str("k:a,");
    }
    text.push('}');
    text
}

fn run_repair(text: &str) -> usize {
    extract_json_from_response(text).map_or(0, |object| object.len())
}

const KINDS: [Kind; 3] = [
    Kind {
        name: "question set (JSON array)",
        build: question_set,
        run: run_question_set,
    },
    Kind {
        name: "trajectories (duplicate check)",
        build: trajectories,
        run: run_trajectories,
    },
    Kind {
        name: "JSON repair {k:a,k:a,…}",
        build: unquoted_reply,
        run: run_repair,
    },
];

/// Runs `kind` on `mb` megabytes: at least once and for at least half a
/// second; returns seconds per megabyte.
fn measure(kind: &Kind, mb: usize) -> f64 {
    let text = (kind.build)(mb * MB);
    let mut runs = 0u32;
    let mut work = 0usize;
    let start = Instant::now();
    while runs == 0 || start.elapsed() < Duration::from_millis(500) {
        work = work.wrapping_add(std::hint::black_box((kind.run)(&text)));
        runs += 1;
    }
    assert!(work > 0, "{} did no work", kind.name);
    let bytes = text.len() as f64 / MB as f64;
    start.elapsed().as_secs_f64() / f64::from(runs) / bytes
}

fn main() -> ExitCode {
    let sizes: Vec<usize> = match std::env::args()
        .skip(1)
        .map(|a| a.parse::<usize>())
        .collect::<Result<Vec<_>, _>>()
    {
        Ok(sizes) if sizes.is_empty() => vec![1, 10, 100],
        Ok(sizes) if sizes.iter().all(|&s| s > 0) => sizes,
        _ => {
            eprintln!("usage: inputs_bench [MB...]   (whole megabytes, default 1 10 100)");
            return ExitCode::from(2);
        }
    };
    let mut header = format!("{:<32}", "input (ms per MB)");
    for mb in &sizes {
        let _ = write!(header, "{:>10}", format!("{mb} MB"));
    }
    header.push_str(&format!("{:>14}", "largest/1st"));
    println!("{header}");
    for kind in &KINDS {
        let times: Vec<f64> = sizes.iter().map(|&mb| measure(kind, mb)).collect();
        let mut row = format!("{:<32}", kind.name);
        for t in &times {
            let _ = write!(row, "{:>10.2}", t * 1000.0);
        }
        let ratio = match (times.first(), times.last()) {
            (Some(first), Some(last)) if *first > 0.0 => last / first,
            _ => f64::NAN,
        };
        let _ = write!(row, "{ratio:>14.2}");
        println!("{row}");
    }
    println!(
        "\nA ratio near 1 is linear time: each megabyte costs the same however large the \
         input. Quadratic time would multiply the cost per megabyte by the size ratio."
    );
    ExitCode::SUCCESS
}
