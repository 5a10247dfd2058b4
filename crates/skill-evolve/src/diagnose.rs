//! `skill-evolve diagnose`: a recorded run's diagnosis as a markdown report
//! or JSON. With an LLM it is the full two-stage diagnosis of
//! `evolution_diagnose::Diagnoser` (rule metrics, the five judges,
//! attributions, case packs) with the harness's default prompt templates;
//! with `--no-llm` only the rule metrics, which need no model. While the
//! judges work, a bar on stderr counts the judged questions (only when
//! stderr is a terminal and `--quiet` is not given).

use std::collections::BTreeMap;
use std::io::IsTerminal as _;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use evolution_diagnose::rules::extract_rule_metrics;
use evolution_diagnose::{
    DiagnoseError, DiagnoseOptions, DiagnosePass, DiagnoseProgress, Diagnoser,
};
use evolution_runlog_sqlite::{SqliteRunLog, SqliteRunLogError};
use evolution_types::{
    DiagnosisResult, Prediction, Profile, QuestionMetrics, RunLog, RunLogError, SkillStore,
    StoreError, TraceStep,
};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::{Value, json};

use crate::cli::DiagnoseArgs;
use crate::out::{out, outln};
use crate::render::terminal_safe;
use evolution_project::error::bad_at;
use evolution_project::input::{InputKind, read_input_text, read_prompt_templates};
use evolution_project::llm::{build_llm, read_profile};
use evolution_project::questions::{load_questions, read_tree};

pub(crate) fn run(args: &DiagnoseArgs) -> anyhow::Result<ExitCode> {
    // Opening a missing path would create an empty database: refuse first.
    if !args.runlog.is_file() {
        return Err(bad_at(&args.runlog, None, "no such run log file"));
    }
    let profile = read_profile(args.llm.config.as_deref(), &near(args))?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    if args.no_llm {
        rules_only(args, &runtime, &profile)
    } else {
        with_llm(args, &runtime, &profile)
    }
}

/// Where the configuration file is looked for first: beside the skills, then the run log.
fn near(args: &DiagnoseArgs) -> Vec<&Path> {
    args.skills
        .as_deref()
        .into_iter()
        .chain([args.runlog.as_path()])
        .collect()
}

/// Opens the run log read-only: diagnosing never changes the file it reads, and a database
/// of another program is refused rather than given this tool's tables.
fn open_log(path: &Path) -> anyhow::Result<SqliteRunLog> {
    SqliteRunLog::open_read_only(path).map_err(|e| match e {
        SqliteRunLogError::NotARunLog { reason, .. } => {
            bad_at(path, None, format!("not a run log: {reason}"))
        }
        other => bad_at(path, None, format!("not a run log: {other}")),
    })
}

/// The predictions of `run_id`; an unknown run (its error lists the run
/// log's runs) or an empty one is bad input.
async fn predictions_of(
    log: &SqliteRunLog,
    path: &Path,
    run_id: &str,
) -> anyhow::Result<Vec<Prediction>> {
    match log.get_predictions(run_id, None).await {
        Ok(predictions) if !predictions.is_empty() => Ok(predictions),
        Ok(_) | Err(RunLogError::RunNotFound { .. }) => {
            Err(no_predictions(log, path, run_id).await)
        }
        Err(e) => Err(log_error(path, e)),
    }
}

/// Run ids named in an error before the rest are counted.
const RUN_IDS_SHOWN: usize = 20;

/// The error for a run with no predictions: an unknown run id lists the run
/// log's runs (the first [`RUN_IDS_SHOWN`], and how many more).
async fn no_predictions(log: &SqliteRunLog, path: &Path, run_id: &str) -> anyhow::Error {
    let runs = match log.runs().await {
        Ok(runs) => runs,
        Err(e) => return bad_at(path, None, format!("not a run log: {e}")),
    };
    if runs.iter().any(|r| r.run_id == run_id) {
        return bad_at(path, None, format!("run {run_id:?} has no predictions"));
    }
    if runs.is_empty() {
        return bad_at(
            path,
            None,
            format!("no run with id {run_id:?}; the run log holds no runs"),
        );
    }
    let mut ids: Vec<String> = runs
        .iter()
        .take(RUN_IDS_SHOWN)
        .map(|r| format!("{:?}", r.run_id))
        .collect();
    if runs.len() > RUN_IDS_SHOWN {
        ids.push(format!(
            "and {} more",
            runs.len().saturating_sub(RUN_IDS_SHOWN)
        ));
    }
    bad_at(
        path,
        None,
        format!(
            "no run with id {run_id:?}; the run log holds {} run(s): {}",
            runs.len(),
            ids.join(", ")
        ),
    )
}

fn log_error(path: &Path, e: RunLogError) -> anyhow::Error {
    bad_at(path, None, e.to_string())
}

/// The full diagnosis: every input is read and checked before the first LLM call.
fn with_llm(
    args: &DiagnoseArgs,
    runtime: &tokio::runtime::Runtime,
    profile: &Profile,
) -> anyhow::Result<ExitCode> {
    let questions = match &args.questions {
        Some(path) => load_questions(path)?,
        None => Vec::new(),
    };
    let skills = match &args.skills {
        Some(dir) => DirSkills::read(dir)?,
        None => DirSkills::default(),
    };
    let tree_data = match &args.tree {
        Some(path) => read_tree(path)?,
        None => BTreeMap::new(),
    };
    let templates = read_prompt_templates(args.prompts.as_deref())?;
    let options = DiagnoseOptions {
        concurrency: usize::from(args.concurrency),
        only_incorrect: args.only_incorrect,
        ..DiagnoseOptions::default()
    };
    let result = runtime.block_on(async {
        let log = open_log(&args.runlog)?;
        // An unknown run or an empty one is bad input, found before any LLM call.
        predictions_of(&log, &args.runlog, &args.run_id).await?;
        let llm = build_llm(&args.llm.options(), &near(args)).await?;
        if !args.quiet {
            eprintln!("diagnosing run {:?} with {}", args.run_id, llm.description);
            if let Some(note) = llm.quality_note {
                eprintln!("{note}");
            }
        }
        let bar = JudgedBar::on_terminal(args.quiet);
        let mut diagnoser = Diagnoser::new(llm.provider.as_ref(), &log, &skills)
            .with_prompts(templates.diagnose.clone())
            .with_profile(profile.clone())
            .with_options(options.clone());
        if let Some(bar) = &bar {
            diagnoser = diagnoser.with_progress(bar);
        }
        let result = diagnoser.run(&args.run_id, &questions, &tree_data).await;
        if let Some(bar) = &bar {
            bar.0.finish_and_clear();
        }
        result.map_err(|e| match e {
            DiagnoseError::RunLog(e) => log_error(&args.runlog, e),
            other => anyhow::Error::new(other).context("the diagnosis failed"),
        })
    })?;
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&result)?);
    } else {
        // The judges' verdicts and the agent's answers are quoted as they came.
        out!("{}", terminal_safe(&full_markdown(&result)));
    }
    Ok(ExitCode::SUCCESS)
}

/// The diagnosis's progress on stderr: a bar of the judged questions.
struct JudgedBar(ProgressBar);

impl JudgedBar {
    /// A bar when stderr is a terminal and the user did not ask for quiet;
    /// otherwise none, and nothing is printed.
    fn on_terminal(quiet: bool) -> Option<Self> {
        if quiet || !std::io::stderr().is_terminal() {
            return None;
        }
        let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
        if let Ok(style) =
            ProgressStyle::with_template("{spinner} {msg} {pos}/{len} [{elapsed}] {wide_bar}")
        {
            bar.set_style(style);
        }
        bar.enable_steady_tick(Duration::from_millis(120));
        Some(JudgedBar(bar))
    }
}

impl DiagnoseProgress for JudgedBar {
    fn pass_started(&self, pass: DiagnosePass, total: usize) {
        self.0.set_length(u64::try_from(total).unwrap_or(u64::MAX));
        self.0.set_position(0);
        self.0.set_message(match pass {
            DiagnosePass::Questions => "judging questions",
            _ => pass.as_str(),
        });
    }

    fn item_finished(&self, _pass: DiagnosePass, _question_id: &str) {
        self.0.inc(1);
    }
}

/// The skill files of one folder, read once; the judges see them as the
/// current version.
#[derive(Debug, Default)]
struct DirSkills {
    files: BTreeMap<String, String>,
}

impl DirSkills {
    /// The skills of `dir` in any layout the `layout` module reads, keyed
    /// by document name.
    fn read(dir: &Path) -> anyhow::Result<Self> {
        let docs = evolution_project::layout::read_skills(dir)
            .map_err(|problem| bad_at(dir, None, problem))?;
        let mut files = BTreeMap::new();
        for doc in docs {
            let text = read_input_text(&doc.path, InputKind::SkillDocument)?;
            files.insert(doc.document, text);
        }
        Ok(DirSkills { files })
    }
}

impl SkillStore for DirSkills {
    fn read_skill(&self, filename: &str) -> Result<String, StoreError> {
        self.files
            .get(filename)
            .cloned()
            .ok_or_else(|| StoreError::NotFound {
                name: filename.to_owned(),
            })
    }

    fn list_skill_files(&self) -> Result<Vec<String>, StoreError> {
        Ok(self.files.keys().cloned().collect())
    }
}

/// A serde enum's wire name (`"reasoning"`, `"defect"`, …).
fn wire_name<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

fn percent(value: Option<f64>) -> String {
    value.map_or_else(|| "n/a".to_owned(), |v| format!("{:.1}%", v * 100.0))
}

fn opt_bool(value: Option<bool>) -> &'static str {
    match value {
        Some(true) => "yes",
        Some(false) => "no",
        None => "—",
    }
}

/// The report of a full diagnosis.
fn full_markdown(r: &DiagnosisResult) -> String {
    let mut out = format!("# Diagnosis of run `{}`\n\n", cell(&r.run_id));
    out.push_str(&format!(
        "- questions in scope: {}, diagnosed: {}, correct: {} (accuracy {})\n\
         - infrastructure errors: {} ({})\n\
         - degraded (judges unusable, rule metrics only): {}\n",
        r.n_questions,
        r.n_diagnosed,
        r.n_correct,
        percent(r.accuracy),
        r.n_infra_errors,
        percent(r.infra_error_rate),
        r.n_degraded,
    ));
    if !r.error_type_counts.is_empty() {
        out.push_str("\n## Where wrong answers went wrong\n\n| error type | count |\n|---|---|\n");
        for (kind, n) in &r.error_type_counts {
            out.push_str(&format!("| {} | {n} |\n", wire_name(kind)));
        }
    }
    if !r.attributions.is_empty() {
        out.push_str(
            "\n## Attributions\n\n| question | task type | error | cause | reasoning sub-type | evidence |\n\
             |---|---|---|---|---|---|\n",
        );
        for a in &r.attributions {
            out.push_str(&format!(
                "| {} | {} | {} | {} | {} | {} |\n",
                cell(&a.question_id),
                cell(&a.task_type),
                wire_name(&a.error_type),
                a.cause_category.as_ref().map(wire_name).unwrap_or_default(),
                cell(a.reasoning_failure_type.as_deref().unwrap_or("")),
                cell(&a.evidence),
            ));
        }
    }
    if !r.tool_stats.is_empty() {
        out.push_str(
            "\n## Tools\n\n| tool | calls | spans judged | mean completeness | mean hallucination |\n\
             |---|---|---|---|---|\n",
        );
        for (tool, stats) in &r.tool_stats {
            let number = |key: &str| {
                stats
                    .get(key)
                    .and_then(Value::as_f64)
                    .map_or_else(|| "—".to_owned(), |v| format!("{v:.2}"))
            };
            let count = |key: &str| stats.get(key).and_then(Value::as_u64).unwrap_or(0);
            out.push_str(&format!(
                "| {} | {} | {} | {} | {} |\n",
                cell(tool),
                count("n_calls"),
                count("n_spans"),
                number("avg_completeness"),
                number("avg_hallucination"),
            ));
        }
    }
    out.push_str(
        "\n## Questions\n\n| question | correct | calibration | adherence | confirmation bias | \
         evidence sufficient | missed nodes | spans judged | degraded |\n\
         |---|---|---|---|---|---|---|---|---|\n",
    );
    for m in &r.question_metrics {
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
            cell(&m.question_id),
            if m.correct { "yes" } else { "no" },
            wire_name(&m.confidence_calibration),
            m.adherence_rate
                .map_or_else(|| "—".to_owned(), |v| format!("{v:.2}")),
            opt_bool(m.confirmation_bias),
            opt_bool(m.evidence_sufficient),
            m.missed_nodes.len(),
            m.span_metrics.len(),
            if m.degraded { "yes" } else { "no" },
        ));
    }
    out.push_str("\n## Case packs (what evolution would work from)\n\n");
    if r.skill_packs.is_empty() && r.system_pack.is_none() && r.tool_packs.is_empty() {
        out.push_str("None: no defect with enough evidence.\n");
    }
    for pack in &r.skill_packs {
        out.push_str(&format!(
            "- skill `{}` (task type `{}`): {} failure case(s), {} success case(s), {} lapse note(s)\n",
            cell(&pack.target_file),
            cell(&pack.task_type),
            pack.failure_cases.len(),
            pack.success_cases.len(),
            pack.lapse_notes.len(),
        ));
        for note in &pack.lapse_notes {
            out.push_str(&format!("  - lapse: {}\n", note.replace('\n', " ")));
        }
    }
    if r.system_pack.is_some() {
        out.push_str("- system prompt: a cross-task behaviour pattern reached the threshold\n");
    }
    for pack in &r.tool_packs {
        out.push_str(&format!(
            "- tool `{}` ({}): {} poor span(s), {} clean span(s)\n",
            cell(&pack.tool_name),
            pack.target_files.join(", "),
            pack.failure_spans.len(),
            pack.success_spans.len(),
        ));
    }
    out
}

/// Rule metrics only: no model, no prompts.
fn rules_only(
    args: &DiagnoseArgs,
    runtime: &tokio::runtime::Runtime,
    profile: &Profile,
) -> anyhow::Result<ExitCode> {
    let (predictions, traces) = runtime.block_on(async {
        let log = open_log(&args.runlog)?;
        let predictions = predictions_of(&log, &args.runlog, &args.run_id).await?;
        let traces = log
            .get_traces(&args.run_id, None)
            .await
            .map_err(|e| log_error(&args.runlog, e))?;
        anyhow::Ok((predictions, traces))
    })?;
    let mut rows = Vec::with_capacity(predictions.len());
    for p in &predictions {
        let trace: Vec<TraceStep> = traces
            .iter()
            .filter(|s| s.question_id == p.question_id)
            .cloned()
            .collect();
        let metrics = extract_rule_metrics(p, &trace, profile)
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
        outln!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        out!(
            "{}",
            terminal_safe(&markdown(&args.run_id, &predictions, &rows))
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn accuracy(predictions: &[Prediction]) -> f64 {
    let correct = predictions.iter().filter(|p| p.correct).count();
    correct as f64 / predictions.len().max(1) as f64
}

fn row_json(p: &Prediction, steps: usize, m: &QuestionMetrics) -> Value {
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
    rows: &[(&Prediction, usize, QuestionMetrics)],
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
        let rate = |v: Option<f64>| v.map_or_else(|| "n/a".to_owned(), |v| format!("{v:.2}"));
        out.push_str(&format!(
            "| {} | {} | {:.2} | {} | {:.2} | {:.2} | {} | {} | {} |\n",
            p.question_id.replace('|', "\\|"),
            if p.correct { "yes" } else { "no" },
            m.confidence,
            calibration,
            m.format_compliance,
            m.budget_usage,
            rate(m.repeat_visit_rate),
            rate(m.search_keyword_repetition),
            tools.join(", ")
        ));
    }
    out
}
