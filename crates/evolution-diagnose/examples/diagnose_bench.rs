//! Wall time of `Diagnoser::run` against the ideal `calls × latency / concurrency`.
//!
//! 500 questions (30 % wrong, each a reasoning failure, so every judge,
//! the defect/lapse classifier and the reasoning pass all run), four
//! span-judged tool calls per question, a scripted provider with 20 ms of
//! latency per call, at concurrency 1, 8, 32 and 128. Concurrency 1 runs
//! 25 questions only (the full run would take over a minute and tells
//! nothing more); the row says so.
//!
//! Run with `cargo run --release -p evolution-diagnose --example diagnose_bench`.
#![expect(clippy::print_stdout, reason = "a bench prints its report")]

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use evolution_diagnose::DiagnosePrompts;
use evolution_diagnose::{DiagnoseOptions, Diagnoser};
use evolution_testkit::{MemoryStore, ScriptedLlm, fixtures};
use evolution_types::{
    ChatMessage, ChatOptions, LlmProvider, Prediction, Profile, RunLog, RunLogError, TraceStep,
};
use serde_json::json;

const LATENCY: Duration = Duration::from_millis(20);

fn reply(tag: &str) -> String {
    match tag {
        "judge.span" => r#"{"extraction_completeness": 0.9, "hallucination_rate": 0.0, "missed_info_tags": [], "hallucination_tags": []}"#,
        "judge.missed_nodes" => r#"{"missed_nodes": []}"#,
        "judge.skill_adherence" => r#"{"steps": [{"step": "scan", "followed": true, "reason": ""}]}"#,
        "judge.confirmation_bias" => r#"{"confirmation_bias": false}"#,
        "judge.evidence_sufficiency" => r#"{"evidence_sufficient": true}"#,
        "judge.defect_vs_lapse" => r#"{"category": "defect"}"#,
        _ => r#"{"type": "premise_error"}"#,
    }
    .to_owned()
}

/// A run log indexed by question, so that the benchmark times the pipeline
/// rather than a test double's linear scans.
struct IndexedLog {
    predictions: Vec<Prediction>,
    traces: HashMap<String, Vec<TraceStep>>,
}

#[async_trait]
impl RunLog for IndexedLog {
    async fn get_predictions(
        &self,
        _run_id: &str,
        _question_ids: Option<&[String]>,
    ) -> Result<Vec<Prediction>, RunLogError> {
        Ok(self.predictions.clone())
    }

    async fn get_traces(
        &self,
        _run_id: &str,
        question_ids: Option<&[String]>,
    ) -> Result<Vec<TraceStep>, RunLogError> {
        Ok(question_ids
            .unwrap_or_default()
            .iter()
            .flat_map(|id| self.traces.get(id).cloned().unwrap_or_default())
            .collect())
    }
}

fn run_log(run: &str, n: usize) -> IndexedLog {
    let mut log = IndexedLog {
        predictions: Vec::new(),
        traces: HashMap::new(),
    };
    for i in 0..n {
        let qid = format!("q{i:04}");
        let task = ["temporal", "counting", "spatial"][i % 3];
        log.predictions
            .push(fixtures::prediction(run, &qid, task, i % 10 >= 3));
        let steps = (1..=5)
            .map(|step| {
                let tool = [
                    "view_node",
                    "search_similar",
                    "view_node",
                    "observe_frame",
                    "submit",
                ][step as usize - 1];
                fixtures::trace_step(run, &qid, step, tool, "tool output text")
            })
            .collect();
        log.traces.insert(qid, steps);
    }
    log
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let prompts = DiagnosePrompts {
        defect_vs_lapse: "{{question}} {{trace}}".into(),
        reasoning_sub: "{{question}} {{trace}}".into(),
        span_eval_system: "judge {{tool_name}}".into(),
        span_eval_user: "{{question}} {{tool_output}}".into(),
        missed_nodes: "{{question}} {{visited_nodes}}".into(),
        skill_adherence: "{{skill}} {{trace}}".into(),
        confirmation_bias: "{{question}} {{trace}}".into(),
        evidence_sufficiency: "{{question}} {{tool_outputs}}".into(),
        rubric: "{{question}} {{rubric}} {{prediction}}".into(),
    };
    let profile = Profile::video_qa();
    let store = MemoryStore::new().with("default-strategy.md", "1. scan");
    let tree = BTreeMap::from([("video-1".to_owned(), json!({"id": "root"}))]);
    // What one scripted call really takes on this machine (timer rounding,
    // scheduling under load), measured back to back.
    let probe = ScriptedLlm::from_fn(|_| Ok("{}".to_owned())).with_latency(LATENCY);
    let started = Instant::now();
    for _ in 0..50 {
        probe
            .chat(&[ChatMessage::user("x")], &ChatOptions::default())
            .await?;
    }
    let effective = started.elapsed() / 50;
    // The pipeline's own CPU cost: the full 500 questions with no latency at all.
    let log = run_log("bench", 500);
    let instant = ScriptedLlm::from_fn(|req| Ok(reply(req.options.tag.as_deref().unwrap_or(""))));
    let options = DiagnoseOptions {
        concurrency: 32,
        ..DiagnoseOptions::default()
    };
    let started = Instant::now();
    Diagnoser::new(&instant, &log, &store)
        .with_prompts(prompts.clone())
        .with_profile(profile.clone())
        .with_options(options.clone())
        .run("bench", &[], &tree)
        .await?;
    let cpu = started.elapsed();
    println!(
        "latency {LATENCY:?} per call (measured back to back: {:.2} ms); pipeline with zero latency: {} calls in {:.0} ms ({:.1} µs per call)",
        effective.as_secs_f64() * 1e3,
        instant.call_count(),
        cpu.as_secs_f64() * 1e3,
        cpu.as_secs_f64() * 1e6 / instant.call_count() as f64,
    );
    println!(
        "ideal = calls × latency / concurrency; 'vs measured' uses the measured per-call latency\n"
    );
    println!(
        "{:>11} {:>9} {:>6} {:>10} {:>10} {:>7} {:>12} {:>10}",
        "concurrency", "questions", "calls", "wall", "ideal", "ratio", "vs measured", "in flight"
    );
    for (concurrency, n) in [(1, 25), (8, 500), (32, 500), (128, 500)] {
        let log = run_log("bench", n);
        let llm = ScriptedLlm::from_fn(|req| Ok(reply(req.options.tag.as_deref().unwrap_or(""))))
            .with_latency(LATENCY);
        let options = DiagnoseOptions {
            concurrency,
            ..DiagnoseOptions::default()
        };
        let started = Instant::now();
        let result = Diagnoser::new(&llm, &log, &store)
            .with_prompts(prompts.clone())
            .with_profile(profile.clone())
            .with_options(options.clone())
            .run("bench", &[], &tree)
            .await?;
        let wall = started.elapsed();
        let calls = llm.call_count();
        let ideal = LATENCY.mul_f64(calls as f64 / concurrency as f64);
        assert_eq!(result.n_diagnosed as usize, n);
        let measured = effective.mul_f64(calls as f64 / concurrency as f64);
        println!(
            "{:>11} {:>9} {:>6} {:>9.2}s {:>9.2}s {:>6.3}x {:>11.3}x {:>10}",
            concurrency,
            if n == 500 {
                n.to_string()
            } else {
                format!("{n}*")
            },
            calls,
            wall.as_secs_f64(),
            ideal.as_secs_f64(),
            wall.as_secs_f64() / ideal.as_secs_f64(),
            wall.as_secs_f64() / measured.as_secs_f64(),
            llm.max_in_flight()
        );
    }
    println!("\n* reduced question count at concurrency 1 (the ratio does not depend on it)");
    Ok(())
}
