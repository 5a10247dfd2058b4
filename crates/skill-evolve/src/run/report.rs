//! The report of a finished run: `report.md` (what changed, the gate's
//! evidence per candidate, what is staged for adoption, the events) and
//! `report.json`.

use std::path::PathBuf;

use anyhow::Context as _;
use evolution_harness::{EvolutionReport, VersionedStore as _};
use evolution_store_fs::FsVersionedStore;

use super::dir::RunDir;
use super::progress::decision_name;
use super::stage::{report_section, stage};
use crate::render::{documents_diff, write_atomically};

/// The report: what changed, and the gate's evidence for every candidate.
pub(crate) fn write_report(
    dir: &RunDir,
    store: &FsVersionedStore,
    report: &EvolutionReport,
    events: &[String],
    usage: String,
) -> anyhow::Result<PathBuf> {
    let mut md = format!(
        "# Run report\n\nStopped: {:?} after {} epoch(s). Version {} → {}.\n\
         Holdout accuracy: {} → {}.\nUsage: {usage}\n\n## Gate evidence per candidate\n\n\
         | candidate | accepted | W | L | paired | remaining | E | δ̂ | decision | new version |\n\
         |---|---|---|---|---|---|---|---|---|---|\n",
        report.stop_reason,
        report.epochs,
        report.initial_version,
        report.final_version,
        pct(report.holdout_before),
        pct(report.holdout_after),
    );
    for r in &report.records {
        match &r.validation {
            Some(v) => md.push_str(&format!(
                "| {} | {} | {} | {} | {} | {} | {:.2} | {:.3} | {} | {} |\n",
                r.candidate,
                if r.accepted { "yes" } else { "no" },
                v.w,
                v.l,
                v.n_used,
                v.n_remaining,
                v.verdict.e_value,
                v.verdict.delta_hat,
                decision_name(v.verdict.decision),
                r.new_version.as_deref().unwrap_or("—"),
            )),
            None => md.push_str(&format!(
                "| {} | no | — | — | — | — | — | — | not gated (FDR level 0) | — |\n",
                r.candidate
            )),
        }
    }
    md.push_str("\n## Diff, first to final version\n\n");
    let before = store.documents(&report.initial_version).unwrap_or_default();
    let after = store.documents(&report.final_version).unwrap_or_default();
    let diff = documents_diff(&before, &after);
    if diff.is_empty() {
        md.push_str("No change was accepted.\n");
    } else {
        md.push_str(&format!("```diff\n{diff}```\n"));
    }
    let proposal = stage(dir, store, report)?;
    md.push_str(&report_section(dir, &proposal));
    md.push_str("\n## Events\n\n");
    for line in events {
        md.push_str(&format!("- {line}\n"));
    }
    let path = dir.report_md();
    write_atomically(&path, &md).with_context(|| format!("cannot write {}", path.display()))?;
    let json = serde_json::json!({
        "stop_reason": report.stop_reason,
        "epochs": report.epochs,
        "initial_version": report.initial_version,
        "final_version": report.final_version,
        "holdout_before": report.holdout_before,
        "holdout_after": report.holdout_after,
        "records": report.records,
        "staged": proposal.documents,
    });
    write_atomically(&dir.report_json(), &serde_json::to_string_pretty(&json)?)
        .context("cannot write report.json")?;
    Ok(path)
}

/// The budget's usage as one line.
pub(crate) fn usage_line(u: &evolution_harness::Usage) -> String {
    format!(
        "{} LLM calls, {} prompt + {} completion tokens, {} agent rollouts",
        u.llm_calls, u.prompt_tokens, u.completion_tokens, u.rollouts
    )
}

/// A share as a percentage, `n/a` when unknown.
fn pct(v: Option<f64>) -> String {
    v.map_or_else(|| "n/a".to_owned(), |v| format!("{:.1}%", v * 100.0))
}
