//! Throughput of the SQLite run log: inserts 100 000 trace rows, then reads them back.
//!
//! `cargo run --release -p evolution-runlog-sqlite --example runlog_bench [rows]`
#![expect(clippy::print_stdout, reason = "a bench prints its report")]

use std::time::Instant;

use anyhow::Context;
use evolution_runlog_sqlite::SqliteRunLog;
use evolution_types::{JsonMap, RunLog, TraceStep};
use serde_json::json;

const STEPS_PER_QUESTION: u32 = 20;
const ROWS_PER_TRANSACTION: usize = 10_000;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let rows: usize = match std::env::args().nth(1) {
        Some(arg) => arg.parse().context("rows must be a number")?,
        None => 100_000,
    };
    let dir = tempfile::tempdir()?;
    let log = SqliteRunLog::open(dir.path().join("bench.sqlite"))?;
    log.create_run("bench", json!({"rows": rows})).await?;

    let all: Vec<TraceStep> = (0..rows).map(trace).collect();
    let started = Instant::now();
    for chunk in all.chunks(ROWS_PER_TRANSACTION) {
        log.insert_traces("bench", chunk.to_vec()).await?;
    }
    let insert = started.elapsed();

    let started = Instant::now();
    let back = log.get_traces("bench", None).await?;
    let read_all = started.elapsed();
    anyhow::ensure!(back.len() == rows, "read {} rows, wrote {rows}", back.len());

    let wanted: Vec<String> = (0..rows / STEPS_PER_QUESTION as usize)
        .step_by(10)
        .map(question_id)
        .collect();
    let started = Instant::now();
    let some = log.get_traces("bench", Some(&wanted)).await?;
    let read_filtered = started.elapsed();

    // The JSON share of the work, measured on the same rows: each row is stored as JSON.
    let started = Instant::now();
    let encoded: Vec<String> = all
        .iter()
        .map(serde_json::to_string)
        .collect::<Result<_, _>>()?;
    let encode = started.elapsed();
    let started = Instant::now();
    let decoded: Vec<TraceStep> = encoded
        .iter()
        .map(|s| serde_json::from_str(s))
        .collect::<Result<_, _>>()?;
    let decode = started.elapsed();
    anyhow::ensure!(decoded.len() == rows);

    let per_sec = |n: usize, d: std::time::Duration| n as f64 / d.as_secs_f64();
    println!("rows: {rows} trace steps, {ROWS_PER_TRANSACTION} per insert transaction");
    println!(
        "insert:          {:>10.0} rows/s ({:.3} s)",
        per_sec(rows, insert),
        insert.as_secs_f64()
    );
    println!(
        "read all:        {:>10.0} rows/s ({:.3} s)",
        per_sec(back.len(), read_all),
        read_all.as_secs_f64()
    );
    println!(
        "read 10% by id:  {:>10.0} rows/s ({:.3} s, {} rows)",
        per_sec(some.len(), read_filtered),
        read_filtered.as_secs_f64(),
        some.len()
    );
    println!(
        "JSON encode only: {:>10.0} rows/s; JSON decode only: {:.0} rows/s",
        per_sec(rows, encode),
        per_sec(rows, decode)
    );
    println!(
        "read/insert ratio: {:.1}x",
        per_sec(back.len(), read_all) / per_sec(rows, insert)
    );
    Ok(())
}

fn question_id(q: usize) -> String {
    format!("q{q:06}")
}

/// A trace row of realistic size (about 300 bytes of JSON).
fn trace(i: usize) -> TraceStep {
    let q = i / STEPS_PER_QUESTION as usize;
    let step = u32::try_from(i % STEPS_PER_QUESTION as usize).unwrap_or(0) + 1;
    let mut extra = JsonMap::new();
    extra.insert("latency_ms".into(), json!(i % 997));
    TraceStep {
        run_id: String::new(),
        question_id: question_id(q),
        step,
        tool_name: "view_node".into(),
        tool_input: json!({"node": format!("L2_{}", i % 50)}),
        tool_output: "The clip shows a person opening a door and walking into a room.".into(),
        thought: "I should look at the next node to confirm.".into(),
        raw_content: "{\"action\": \"view_node\", \"node\": \"L2_7\"}".into(),
        extra,
    }
}
