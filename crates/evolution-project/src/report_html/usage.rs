//! The usage part of the report page: calls, tokens, cost and rollouts per phase and per
//! candidate, against the run's budget.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use evolution_harness::Phase;

use super::escape;
use super::model::{Inputs, SavedReport, UsageView};

/// The header of a usage table.
const USAGE_HEADER: &str = "<table>\n<tr><th>phase</th><th>LLM calls</th><th>prompt tokens</th>\
     <th>completion tokens</th><th>cost</th><th>agent rollouts</th></tr>\n";

/// One row of a usage table; `name` is escaped.
pub(super) fn usage_row(name: &str, u: &UsageView) -> String {
    let cost = u
        .cost
        .map_or_else(|| "n/a".to_owned(), |c| format!("{c:.4}"));
    format!(
        "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
         <td class=\"num\">{}</td><td class=\"num\">{cost}</td><td class=\"num\">{}</td></tr>\n",
        escape::text(name),
        u.llm_calls,
        u.prompt_tokens,
        u.completion_tokens,
        u.rollouts
    )
}

/// What each phase used, as a table: the known phases in the order of an
/// epoch (named in words), any other name after them, then `total` when
/// given.
pub(super) fn phase_table(
    by_phase: &BTreeMap<String, UsageView>,
    total: Option<&UsageView>,
) -> String {
    let mut out = String::from(USAGE_HEADER);
    let known: Vec<&str> = Phase::ALL.iter().map(|p| p.as_str()).collect();
    for phase in Phase::ALL {
        if let Some(u) = by_phase.get(phase.as_str()) {
            out.push_str(&usage_row(phase.label(), u));
        }
    }
    for (name, u) in by_phase
        .iter()
        .filter(|(n, _)| !known.contains(&n.as_str()))
    {
        out.push_str(&usage_row(name, u));
    }
    if let Some(total) = total {
        out.push_str(&usage_row("whole run", total));
    }
    out.push_str("</table>\n");
    out
}

/// What the run used, per phase (or, in reports written before phases were
/// recorded, by what the records tell), and the budget.
pub(super) fn usage(inputs: &Inputs) -> String {
    let report = &inputs.report;
    let mut out = String::from("<h2 id=\"usage\">Usage</h2>\n");
    let Some(total) = report.usage else {
        out.push_str("<p class=\"muted\">This report was written before usage was recorded in report.json.</p>\n");
        return out;
    };
    let cost = total
        .cost
        .map_or_else(|| "n/a".to_owned(), |c| format!("{c:.4}"));
    match &report.usage_by_phase {
        Some(by_phase) if !by_phase.is_empty() => {
            out.push_str(&phase_table(by_phase, Some(&total)));
        }
        _ => out.push_str(&usage_by_records(inputs, &total)),
    }
    out.push_str(&budget_line(report, &total, &cost));
    out
}

/// The usage table of a report without phases: the whole run, then what
/// the gate records and the run log tell (writing and gating the
/// candidates), the rest in one row.
pub(super) fn usage_by_records(inputs: &Inputs, total: &UsageView) -> String {
    let report = &inputs.report;
    let gate_rollouts: u64 = report
        .records
        .iter()
        .filter_map(|r| r.validation.as_ref())
        .map(|v| v.rollouts)
        .fold(0, u64::saturating_add);
    let writing_calls: Option<u64> = (inputs.writing_calls.len() == report.records.len())
        .then(|| inputs.writing_calls.values().map(|c| u64::from(*c)).sum());
    let mut out = String::from(USAGE_HEADER);
    out.push_str(&usage_row("whole run", total));
    let _ = writeln!(
        out,
        "<tr><td>writing the candidates (evolve, rank)</td><td class=\"num\">{}</td>\
         <td>—</td><td>—</td><td>—</td><td class=\"num\">0</td></tr>",
        writing_calls.map_or_else(|| "n/a".to_owned(), |c| c.to_string())
    );
    let _ = writeln!(
        out,
        "<tr><td>gating the candidates (both arms)</td><td class=\"num\">0</td>\
         <td>—</td><td>—</td><td>—</td><td class=\"num\">{gate_rollouts}</td></tr>"
    );
    let _ = writeln!(
        out,
        "<tr><td>everything else (training runs, diagnosis, slow update, probation, holdout)</td>\
         <td class=\"num\">{}</td><td>—</td><td>—</td><td>—</td><td class=\"num\">{}</td></tr>",
        writing_calls.map_or_else(
            || "n/a".to_owned(),
            |c| total.llm_calls.saturating_sub(c).to_string()
        ),
        total.rollouts.saturating_sub(gate_rollouts)
    );
    out.push_str("</table>\n");
    out
}

/// The budget line under the usage table (empty in reports without caps).
pub(super) fn budget_line(report: &SavedReport, total: &UsageView, cost: &str) -> String {
    let mut out = String::new();
    if let Some(budget) = report.budget {
        let of = |used: String, cap: Option<String>| match cap {
            Some(cap) => format!("{used} of {cap}"),
            None => format!("{used} (no cap)"),
        };
        let _ = writeln!(
            out,
            "<p><strong>Budget:</strong> LLM calls {} · tokens {} · cost {} · rollouts {}</p>",
            of(
                total.llm_calls.to_string(),
                budget.max_llm_calls.map(|c| c.to_string())
            ),
            of(
                total
                    .prompt_tokens
                    .saturating_add(total.completion_tokens)
                    .to_string(),
                budget.max_tokens.map(|c| c.to_string())
            ),
            of(cost.to_owned(), budget.max_cost.map(|c| format!("{c:.4}"))),
            of(
                total.rollouts.to_string(),
                budget.max_rollouts.map(|c| c.to_string())
            ),
        );
    }
    out
}
