//! `skill-evolve diagnose --no-llm`: the rule metrics (stage 1 of seed §8,
//! no LLM) of every question of a recorded run, as a markdown report or JSON.
//!
//! The LLM judges and case packs need the full diagnosis wiring (question
//! set, tree data, skill store, prompt templates); until then the command
//! asks for `--no-llm` rather than pretending.

use std::process::ExitCode;

use anyhow::Context as _;
use evolution_diagnose::{RuleMetrics, extract_rule_metrics};
use evolution_runlog_sqlite::SqliteRunLog;
use evolution_types::{Prediction, Profile, RunLog, TraceStep};
use serde_json::{Value, json};

use crate::cli::DiagnoseArgs;
use crate::error::{bad_at, bad_option};

pub(crate) fn run(args: &DiagnoseArgs) -> anyhow::Result<ExitCode> {
    if !args.no_llm {
        return Err(bad_option(
            "the LLM judges of `diagnose` are not wired in this build yet; add --no-llm for \
             the rule metrics",
        ));
    }
    // Opening a missing path would create an empty database: refuse first.
    if !args.runlog.is_file() {
        return Err(bad_at(&args.runlog, None, "no such run log file"));
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let (predictions, traces) = runtime.block_on(async {
        let log = SqliteRunLog::open(&args.runlog)
            .map_err(|e| bad_at(&args.runlog, None, format!("not a run log: {e}")))?;
        let predictions = log
            .get_predictions(&args.run_id, None)
            .await
            .map_err(|e| bad_at(&args.runlog, None, e.to_string()))?;
        let traces = log
            .get_traces(&args.run_id, None)
            .await
            .map_err(|e| bad_at(&args.runlog, None, e.to_string()))?;
        anyhow::Ok((predictions, traces))
    })?;
    if predictions.is_empty() {
        return Err(bad_at(
            &args.runlog,
            None,
            format!("run {:?} has no predictions", args.run_id),
        ));
    }
    let profile = Profile::default();
    let mut rows = Vec::with_capacity(predictions.len());
    for p in &predictions {
        let trace: Vec<TraceStep> = traces
            .iter()
            .filter(|s| s.question_id == p.question_id)
            .cloned()
            .collect();
        let metrics = extract_rule_metrics(p, &trace, &profile)
            .map_err(|e| anyhow::anyhow!("rule metrics of {}: {e}", p.question_id))?;
        rows.push((p, trace.len(), metrics));
    }
    if args.json {
        let questions: Vec<Value> = rows.iter().map(|(p, n, m)| row_json(p, *n, m)).collect();
        let report = json!({
            "run_id": args.run_id,
            "runlog": args.runlog.display().to_string(),
            "n_questions": predictions.len(),
            "accuracy": accuracy(&predictions),
            "questions": questions,
        });
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", markdown(&args.run_id, &predictions, &rows));
    }
    Ok(ExitCode::SUCCESS)
}

fn accuracy(predictions: &[Prediction]) -> f64 {
    let correct = predictions.iter().filter(|p| p.correct).count();
    correct as f64 / predictions.len().max(1) as f64
}

fn row_json(p: &Prediction, steps: usize, m: &RuleMetrics) -> Value {
    json!({
        "question_id": p.question_id,
        "task_type": p.task_type,
        "correct": p.correct,
        "stop_reason": p.stop_reason,
        "trace_steps": steps,
        "confidence": m.confidence,
        "confidence_calibration": m.confidence_calibration,
        "format_compliance": m.format_compliance,
        "budget_usage": m.budget_usage,
        "repeat_visit_rate": m.repeat_visit_rate,
        "search_keyword_repetition": m.search_keyword_repetition,
        "level_jump_pattern": m.level_jump_pattern,
        "tool_usage": m.tool_usage,
    })
}

fn markdown(
    run_id: &str,
    predictions: &[Prediction],
    rows: &[(&Prediction, usize, RuleMetrics)],
) -> String {
    let mut out = format!(
        "# Diagnosis of run `{run_id}` (rule metrics, no LLM)\n\n{} questions, accuracy {:.1}%\n\n",
        predictions.len(),
        accuracy(predictions) * 100.0
    );
    out.push_str(
        "| question | correct | confidence | calibration | format | budget | repeat visits | \
         search repetition | tools |\n|---|---|---|---|---|---|---|---|---|\n",
    );
    for (p, _, m) in rows {
        let tools: Vec<String> = m
            .tool_usage
            .iter()
            .map(|(name, n)| format!("{name}×{n}"))
            .collect();
        let calibration = serde_json::to_value(m.confidence_calibration)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        out.push_str(&format!(
            "| {} | {} | {:.2} | {} | {:.2} | {:.2} | {:.2} | {:.2} | {} |\n",
            p.question_id.replace('|', "\\|"),
            if p.correct { "yes" } else { "no" },
            m.confidence,
            calibration,
            m.format_compliance,
            m.budget_usage,
            m.repeat_visit_rate,
            m.search_keyword_repetition,
            tools.join(", ")
        ));
    }
    out
}
