//! The HTML report of a run, `report.html` beside `report.md`: the version
//! lineage, one evidence chart per gated candidate (ln E per block with the
//! gate's boundaries), the quadrants of the paired questions, holdout
//! accuracy with its interval, usage against the budget, and coloured diffs.
//! One self-contained file: inline CSS and SVG, no script, nothing fetched.
//!
//! - `model.rs`: what the page is drawn from, and the facts a run adds to
//!   `report.json` for it;
//! - `page.rs`: the page, a pure function of those inputs, and `candidate.rs` its
//!   candidates' sections, `usage.rs` its usage tables and `cells.rs` the pieces both pages
//!   show alike;
//! - `chart.rs` and `svg.rs`: the line chart and the small SVG writer under it;
//! - `escape.rs`: run text made inert in HTML.
//!
//! - `evolve_page.rs`: the page of an `evolve` session (its rounds, its
//!   candidate with the gate's evidence or an "ungated" banner, its diff).
//!
//! This file gathers the inputs from a run folder (`report.json`, the store,
//! the run log, the staged proposal) and rebuilds the page from them byte for byte; an
//! `evolve` session's folder needs only its `report.json`.

mod candidate;
mod cells;
mod chart;
mod escape;
mod evolve_page;
mod model;
mod page;
mod svg;
mod usage;

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::Context as _;
use evolution_harness::VersionedStore as _;
use evolution_runlog_sqlite::SqliteRunLog;
use evolution_store_fs::{FsStore, FsVersionedStore};
use evolution_types::{EvolutionRecord, RunLog as _, is_infra_stop_reason};

pub use self::model::RunFacts;
use self::model::{EvolveReport, Inputs, RecordView, SavedReport, Score, StagedView};
use crate::error::bad_at;
use crate::render::{documents_diff, unified_diff};
use crate::run::dir::RunDir;
use crate::run::stage::read_proposal;
use crate::working_copy::write_atomically;

/// Largest `report.json` read back (a run's report is far smaller).
const MAX_REPORT_JSON_BYTES: u64 = 256 * 1024 * 1024;

/// Writes `report.html` of the run folder `dir` from what the run saved
/// there, and returns its path.
///
/// # Errors
/// A `report.json` that is missing or not a run's report (bad input), or a
/// file that cannot be written.
pub async fn write(dir: &RunDir) -> anyhow::Result<PathBuf> {
    let text = read_report_text(dir)?;
    if is_evolve_report(&text) {
        return write_evolve_from(dir, &text);
    }
    let inputs = gather(dir, &text).await?;
    let html = page::page(&inputs);
    save(dir, &html)
}

/// Writes `report.html` of an `evolve` session's folder `dir` from its
/// `report.json`, and returns its path.
///
/// # Errors
/// A `report.json` that is missing or not an `evolve` session's report
/// (bad input), or a file that cannot be written.
pub fn write_evolve(dir: &RunDir) -> anyhow::Result<PathBuf> {
    let text = read_report_text(dir)?;
    write_evolve_from(dir, &text)
}

/// The `evolve` page of `text` (the folder's `report.json`), written.
fn write_evolve_from(dir: &RunDir, text: &str) -> anyhow::Result<PathBuf> {
    let path = dir.report_json();
    let report: EvolveReport = serde_json::from_str(text).map_err(|e| {
        bad_at(
            &path,
            Some(e.line()),
            format!("not an evolve session's report: {e}"),
        )
    })?;
    let html = evolve_page::page(&run_name(dir), &report);
    save(dir, &html)
}

/// `html` written atomically as the folder's `report.html`.
fn save(dir: &RunDir, html: &str) -> anyhow::Result<PathBuf> {
    let path = dir.report_html();
    write_atomically(&path, html).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(path)
}

/// Whether `report.json`'s text is an `evolve` session's (it has `rounds`
/// and a `gate` with a `mode`) rather than a run's.
fn is_evolve_report(text: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(text).is_ok_and(|v| {
        v.get("rounds").is_some_and(serde_json::Value::is_array)
            && v.get("gate")
                .and_then(|g| g.get("mode"))
                .is_some_and(serde_json::Value::is_string)
    })
}

/// The folder's name, which names the run or session.
fn run_name(dir: &RunDir) -> String {
    dir.root()
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Rebuilds `report.html` of the finished run (or `evolve` session) in `dir` from what it
/// saved there, byte for byte, and returns its path.
///
/// # Errors
/// A folder with no `report.json` (bad input), or as [`write()`].
pub async fn rebuild(dir: &RunDir) -> anyhow::Result<PathBuf> {
    if !dir.report_json().is_file() {
        return Err(bad_at(
            dir.root(),
            None,
            "is not a finished run's folder (it has no report.json); pass a folder under \
             .skill-evolve/runs/ whose run has finished",
        ));
    }
    write(dir).await
}

/// The text of `report.json` of `dir`, refused past [`MAX_REPORT_JSON_BYTES`].
fn read_report_text(dir: &RunDir) -> anyhow::Result<String> {
    let path = dir.report_json();
    let size = std::fs::metadata(&path)
        .map_err(|e| bad_at(&path, None, format!("cannot read: {e}")))?
        .len();
    if size > MAX_REPORT_JSON_BYTES {
        return Err(bad_at(
            &path,
            None,
            format!("is {size} bytes, more than a run's report can be ({MAX_REPORT_JSON_BYTES})"),
        ));
    }
    std::fs::read_to_string(&path).map_err(|e| bad_at(&path, None, format!("cannot read: {e}")))
}

/// `text`, the `report.json` of `dir`, read as a run's report.
fn read_report(dir: &RunDir, text: &str) -> anyhow::Result<SavedReport> {
    serde_json::from_str(text).map_err(|e| {
        bad_at(
            &dir.report_json(),
            Some(e.line()),
            format!("not a run's report: {e}"),
        )
    })
}

/// Everything the page needs from the run folder. Only `report.json` must
/// be there; what the store, the run log or the staged proposal cannot give
/// is left out of the page with a note.
async fn gather(dir: &RunDir, text: &str) -> anyhow::Result<Inputs> {
    let report = read_report(dir, text)?;
    let run = run_name(dir);
    let store = FsStore::open(dir.store()).ok().map(FsVersionedStore::new);
    let log = if dir.runlog().is_file() {
        SqliteRunLog::open_read_only(dir.runlog()).ok()
    } else {
        None
    };
    let evolutions = match &log {
        Some(log) => evolution_records(log).await,
        None => None,
    };
    let paired = evolutions.and_then(|e| pair(&report.records, e));

    let mut diffs = BTreeMap::new();
    let mut writing_calls = BTreeMap::new();
    for (i, record) in report.records.iter().enumerate() {
        let from_store = match (&store, &record.validation, &record.new_version) {
            (Some(store), Some(v), Some(new)) if record.accepted => store
                .documents(&v.baseline_version)
                .ok()
                .zip(store.documents(new).ok())
                .map(|(before, after)| documents_diff(&before, &after)),
            _ => None,
        };
        let evolution = paired.as_ref().and_then(|p| p.get(i));
        if let Some(e) = evolution {
            writing_calls.insert(i, e.llm_calls);
        }
        let from_log = evolution.map(|e| {
            unified_diff(
                &e.original_content,
                &e.evolved_content,
                &format!("a/{}", e.target_file),
                &format!("b/{}", e.target_file),
            )
        });
        if let Some(diff) = from_store.or(from_log) {
            diffs.insert(i, diff);
        }
    }
    let final_diff = match &store {
        Some(store) => {
            let before = store.documents(&report.initial_version).unwrap_or_default();
            let after = store.documents(&report.final_version).unwrap_or_default();
            documents_diff(&before, &after)
        }
        None => String::new(),
    };
    let staged = read_proposal(dir)
        .ok()
        .flatten()
        .map(|p| {
            p.documents
                .into_iter()
                .map(|d| StagedView {
                    document: d.source.document,
                    adopted_as: d.adopted_as,
                })
                .collect()
        })
        .unwrap_or_default();
    let holdout = match &log {
        Some(log) => holdout(log, &run, &report).await,
        None => None,
    };
    Ok(Inputs {
        run,
        report,
        diffs,
        writing_calls,
        final_diff,
        staged,
        holdout,
    })
}

/// Every evolution record of the run log: runs oldest first, each run's
/// records in the order they were stored. `None` when the log cannot be read.
async fn evolution_records(log: &SqliteRunLog) -> Option<Vec<EvolutionRecord>> {
    let mut out = Vec::new();
    for run in log.runs().await.ok()? {
        for result in log.evolutions(&run.run_id).await.ok()? {
            out.extend(result.records);
        }
    }
    Some(out)
}

/// The run log's evolution records matched to the report's candidates: the
/// loop stores one per gated candidate, in gating order, with the version
/// its accept wrote. `None` unless the counts and every version agree (a
/// run resumed after a kill may have stored one twice).
fn pair(records: &[RecordView], evolutions: Vec<EvolutionRecord>) -> Option<Vec<EvolutionRecord>> {
    let agree = records.len() == evolutions.len()
        && records
            .iter()
            .zip(&evolutions)
            .all(|(r, e)| r.new_version == e.result_version);
    agree.then_some(evolutions)
}

/// The holdout counts before and after, from the run log, when they agree
/// with the accuracies in `report.json`.
async fn holdout(log: &SqliteRunLog, run: &str, report: &SavedReport) -> Option<(Score, Score)> {
    let before = score(log, &format!("{run}_holdout_{}", report.initial_version)).await?;
    let after = score(log, &format!("{run}_holdout_{}", report.final_version)).await?;
    let agrees = |s: Score, accuracy: Option<f64>| {
        #[expect(
            clippy::cast_precision_loss,
            reason = "question counts stay far below 2^53, where the cast is exact"
        )]
        let measured = s.right as f64 / s.scored as f64;
        s.scored > 0 && accuracy.is_some_and(|a| (a - measured).abs() < 1e-9)
    };
    (agrees(before, report.holdout_before) && agrees(after, report.holdout_after))
        .then_some((before, after))
}

/// Right and scored answers of one run (INFRA failures left out, as the
/// loop scores the holdout).
async fn score(log: &SqliteRunLog, run_id: &str) -> Option<Score> {
    let predictions = log.get_predictions(run_id, None).await.ok()?;
    let usable: Vec<bool> = predictions
        .iter()
        .filter(|p| !is_infra_stop_reason(&p.stop_reason) && p.error.is_none())
        .map(|p| p.correct)
        .collect();
    let count = |n: usize| u64::try_from(n).unwrap_or(u64::MAX);
    Some(Score {
        right: count(usable.iter().filter(|c| **c).count()),
        scored: count(usable.len()),
    })
}
