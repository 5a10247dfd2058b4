//! Rollouts that gave no usable answer (INFRA failures): the stop of a run whose agent, or
//! whose rubric judge, failed on most questions of a phase ([`RunStopped`]), and the
//! failures of each part of a run as `status` and the reports show them ([`PartFailures`]).
//!
//! Everything quoted here comes from the agent or the LLM: every line is escaped for a
//! terminal and capped in length, and the number of lines shown is capped too.

use std::path::{Path, PathBuf};

use evolution_harness::{FailureCount, Phase, PhaseFailures};
use evolution_runlog_sqlite::SqliteRunLog;
use evolution_types::RunLog as _;
use evolution_types::template::truncate_chars;
use serde::{Deserialize, Serialize};

use crate::render::terminal_safe;

/// Most lines of the agent's error output shown when a run stops.
pub const MAX_SHOWN_LINES: usize = 20;
/// Most bytes of the agent's error output shown when a run stops.
pub const MAX_SHOWN_BYTES: usize = 2000;
/// Most characters of one line shown.
const MAX_LINE_CHARS: usize = 300;
/// Most characters of an error summed up in one line.
const MAX_SUMMARY_CHARS: usize = 300;

/// A run stopped because most rollouts of one of its phases gave no usable answer. The
/// checkpoint and the run log keep where it was: once the agent (or the judge's model) is
/// fixed, the same command resumes it and reruns the failed questions.
#[derive(Debug, Clone)]
pub struct RunStopped {
    /// What failed, where.
    pub failures: PhaseFailures,
    /// The run log holding every answer and error.
    pub runlog: PathBuf,
}

impl RunStopped {
    /// The stop of a run whose log is `runlog`.
    pub fn new(failures: PhaseFailures, runlog: &Path) -> Self {
        RunStopped {
            failures,
            runlog: runlog.to_path_buf(),
        }
    }

    /// What to print: the headline, the agent's last error output (or the judge's first
    /// reason), then what to do. Every line is escaped and capped.
    pub fn lines(&self) -> Vec<String> {
        let c = &self.failures.count;
        let part = part_of(self.failures.phase, &self.failures.run_id);
        let run_id = terminal_safe(&self.failures.run_id).into_owned();
        let runlog = terminal_safe(&self.runlog.display().to_string()).into_owned();
        let mut lines = Vec::new();
        if self.failures.judge_at_fault() {
            lines.push(judge_headline(
                c.judge_failures,
                c.first_judge_error.as_deref(),
            ));
            lines.push(format!(
                "  {} of the {} answers of the {part} ({run_id}) have no verdict; the agent \
                 answered, the judge did not: it is the run's LLM ([llm] in the run \
                 configuration), and `skill-evolve -v run` shows its replies",
                c.judge_failures, c.rollouts
            ));
            if c.agent_failures > 0 {
                lines.push(format!(
                    "  the agent also failed on {} question(s); first error: {}",
                    c.agent_failures,
                    summary(c.first_agent_error.as_deref().unwrap_or_default())
                ));
            }
            lines.push(format!(
                "fix the judge's model, then run the same command: the run resumes where it \
                 stopped (or add --fresh to start over); every answer is in {runlog}"
            ));
        } else {
            lines.push(format!(
                "the agent failed on {} of {} questions; its last error output:",
                c.agent_failures, c.rollouts
            ));
            lines.extend(
                shown_lines(c.last_agent_error.as_deref().unwrap_or_default())
                    .into_iter()
                    .map(|l| format!("  | {l}")),
            );
            if c.judge_failures > 0 {
                lines.push(format!(
                    "  (and {})",
                    judge_headline(c.judge_failures, c.first_judge_error.as_deref())
                ));
            }
            lines.push(format!(
                "stopped in the {part} ({run_id}), before learning or gating anything from \
                 them; fix the agent (its command, its environment: run it by hand on one \
                 question), then run again: the same command resumes where it stopped when \
                 the agent's command and files are unchanged (a missing package installed), \
                 add --fresh once you changed them; every answer and error is in {runlog}"
            ));
        }
        lines
    }
}

/// Every line of [`RunStopped::lines`], one after the other: the front ends that show an
/// error as its text (the Python module) show the agent's words too.
impl std::fmt::Display for RunStopped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.lines().join("\n"))
    }
}

impl std::error::Error for RunStopped {}

/// "the rubric judge gave no verdict on N answer(s): <first reason>".
fn judge_headline(failures: u64, first: Option<&str>) -> String {
    format!(
        "the rubric judge gave no verdict on {failures} answer(s): {}",
        summary(first.unwrap_or("no reason given"))
    )
}

/// The part of a run a phase's run id belongs to, in words.
fn part_of(phase: Phase, run_id: &str) -> &'static str {
    match phase {
        Phase::Gate => "gate (the answers of the version in place)",
        Phase::Probation => "probation (the answers of the version it replaced)",
        _ if run_id.contains("_holdout_") => "holdout rollouts",
        _ => "training rollouts",
    }
}

/// The last lines of `text`, each escaped and cut to `MAX_LINE_CHARS` characters, at most
/// [`MAX_SHOWN_LINES`] of them and [`MAX_SHOWN_BYTES`] in all; a first line says how many
/// earlier lines were left out.
pub fn shown_lines(text: &str) -> Vec<String> {
    let all: Vec<&str> = text
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.trim().is_empty())
        .collect();
    let mut kept: Vec<String> = Vec::new();
    let mut bytes = 0_usize;
    for line in all.iter().rev() {
        let shown = truncate_chars(&terminal_safe(line), MAX_LINE_CHARS);
        if kept.len() >= MAX_SHOWN_LINES
            || (!kept.is_empty() && bytes.saturating_add(shown.len()) > MAX_SHOWN_BYTES)
        {
            break;
        }
        bytes = bytes.saturating_add(shown.len());
        kept.push(shown);
    }
    kept.reverse();
    let left_out = all.len().saturating_sub(kept.len());
    if left_out > 0 {
        kept.insert(0, format!("… ({left_out} earlier line(s) left out)"));
    }
    if kept.is_empty() {
        kept.push("(nothing: the agent wrote no error output)".to_owned());
    }
    kept
}

/// `text` in one line: its first and last non-empty lines (`first … last`), escaped and cut
/// to `MAX_SUMMARY_CHARS` characters.
pub fn summary(text: &str) -> String {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let joined = match lines.as_slice() {
        [] => String::new(),
        [one] => (*one).to_owned(),
        [first, .., last] => format!("{first} … {last}"),
    };
    truncate_chars(&terminal_safe(&joined), MAX_SUMMARY_CHARS)
}

/// The failed rollouts of one part of a run (training, gate, probation, holdout), as
/// `status` and the reports show them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartFailures {
    /// `training`, `gate`, `probation` or `holdout`.
    pub phase: String,
    /// Rollouts recorded (the latest answer of each question of each run id).
    pub rollouts: u64,
    /// Rollouts the agent failed (never started, crashed, broke the protocol, timed out,
    /// reported an error).
    pub agent_failures: u64,
    /// Answers the rubric judge gave no verdict on.
    pub judge_failures: u64,
    /// The first agent failure's message, in one escaped line of at most 300 characters.
    #[serde(default)]
    pub first_agent_error: Option<String>,
    /// The rubric judge's first reason for giving no verdict, likewise.
    #[serde(default)]
    pub first_judge_error: Option<String>,
}

impl PartFailures {
    /// The part's failures in one line (`None` when it had none).
    pub fn describe(&self) -> Option<String> {
        let mut parts = Vec::new();
        if self.agent_failures > 0 {
            parts.push(format!(
                "the agent failed on {} of {} question(s) (first error: {})",
                self.agent_failures,
                self.rollouts,
                self.first_agent_error.as_deref().unwrap_or("none recorded")
            ));
        }
        if self.judge_failures > 0 {
            parts.push(format!(
                "the rubric judge gave no verdict on {} of {} answer(s) (first reason: {})",
                self.judge_failures,
                self.rollouts,
                self.first_judge_error.as_deref().unwrap_or("none recorded")
            ));
        }
        (!parts.is_empty()).then(|| format!("{}: {}", self.phase, parts.join("; ")))
    }
}

/// The part of a run a run id belongs to (`None` for ids no loop phase writes).
fn part_of_run_id(run_id: &str) -> Option<&'static str> {
    if run_id.contains("_gate_probation_") {
        Some("probation")
    } else if run_id.contains(evolution_harness::GATE_RUN_MARKER) {
        Some("gate")
    } else if run_id.contains("_train_e") {
        Some("training")
    } else if run_id.contains("_holdout_") {
        Some("holdout")
    } else {
        None
    }
}

/// The failed rollouts of each part of the run whose log is `log`, in the order of a run
/// (training, gate, probation, holdout), parts without rollouts left out. A log that cannot
/// be read gives nothing.
pub async fn failures_by_part(log: &SqliteRunLog) -> Vec<PartFailures> {
    let order = ["training", "gate", "probation", "holdout"];
    let mut counts: Vec<FailureCount> = vec![FailureCount::default(); order.len()];
    for run in log.runs().await.unwrap_or_default() {
        let Some(part) = part_of_run_id(&run.run_id) else {
            continue;
        };
        let Some(count) = order
            .iter()
            .position(|p| *p == part)
            .and_then(|i| counts.get_mut(i))
        else {
            continue;
        };
        for p in log
            .get_predictions(&run.run_id, None)
            .await
            .unwrap_or_default()
        {
            count.add(&p);
        }
    }
    order
        .iter()
        .zip(counts)
        .filter(|(_, c)| c.rollouts > 0)
        .map(|(part, c)| PartFailures {
            phase: (*part).to_owned(),
            rollouts: c.rollouts,
            agent_failures: c.agent_failures,
            judge_failures: c.judge_failures,
            first_agent_error: c.first_agent_error.as_deref().map(summary),
            first_judge_error: c.first_judge_error.as_deref().map(summary),
        })
        .collect()
}

/// The failures as a markdown section (a table, one row per part), empty when no rollout
/// was recorded.
pub fn markdown_section(parts: &[PartFailures]) -> String {
    if parts.is_empty() {
        return String::new();
    }
    let cell = |text: &str| text.replace('|', "\\|");
    let mut md = String::from(
        "## Failed rollouts (INFRA) by phase\n\n\
         | phase | rollouts | agent failed | judge gave no verdict | first error |\n\
         |---|---|---|---|---|\n",
    );
    for p in parts {
        let first = match (&p.first_agent_error, &p.first_judge_error) {
            (Some(agent), Some(judge)) => format!("agent: {agent}; judge: {judge}"),
            (Some(agent), None) => agent.clone(),
            (None, Some(judge)) => format!("judge: {judge}"),
            (None, None) => "—".to_owned(),
        };
        md.push_str(&format!(
            "| {} | {} | {} | {} | {} |\n",
            cell(&p.phase),
            p.rollouts,
            p.agent_failures,
            p.judge_failures,
            cell(&first)
        ));
    }
    md.push('\n');
    md
}

#[cfg(test)]
mod tests {
    use evolution_harness::FailureCount;

    use super::*;

    const TRACEBACK: &str = "agent ended before answering: exited with exit status: 1; \
         stderr: Traceback (most recent call last):\n  File \"agent.py\", line 1, in <module>\n\
         \x20   import helpers\nModuleNotFoundError: No module named 'helpers'";

    fn stopped(count: FailureCount) -> RunStopped {
        RunStopped::new(
            PhaseFailures {
                phase: Phase::Rollout,
                run_id: "demo_train_e0_v1".into(),
                count,
            },
            Path::new("/runs/demo/runlog.sqlite"),
        )
    }

    #[test]
    fn an_agent_stop_shows_the_headline_then_the_last_error_lines() {
        let lines = stopped(FailureCount {
            rollouts: 40,
            agent_failures: 40,
            last_agent_error: Some(TRACEBACK.into()),
            ..FailureCount::default()
        })
        .lines();
        assert_eq!(
            lines[0],
            "the agent failed on 40 of 40 questions; its last error output:"
        );
        assert_eq!(
            lines[4],
            "  | ModuleNotFoundError: No module named 'helpers'"
        );
        assert!(lines[5].starts_with("stopped in the training rollouts (demo_train_e0_v1)"));
        assert!(
            lines[5].contains("the same command resumes where it stopped"),
            "{}",
            lines[5]
        );
    }

    #[test]
    fn a_judge_stop_blames_the_judge_not_the_agent() {
        let stop = stopped(FailureCount {
            rollouts: 6,
            judge_failures: 6,
            first_judge_error: Some("unreadable `judge.rubric` reply after 3 attempts".into()),
            ..FailureCount::default()
        });
        let lines = stop.lines();
        assert_eq!(
            lines[0],
            "the rubric judge gave no verdict on 6 answer(s): unreadable `judge.rubric` reply \
             after 3 attempts"
        );
        assert_eq!(stop.to_string(), lines.join("\n"));
        assert!(
            lines.iter().all(|l| !l.contains("fix the agent")),
            "{lines:?}"
        );
    }

    #[test]
    fn shown_lines_are_escaped_and_capped() {
        let many: String = (0..100).map(|i| format!("line {i}\x1b[2J\n")).collect();
        let lines = shown_lines(&many);
        assert_eq!(lines.len(), MAX_SHOWN_LINES + 1);
        assert_eq!(lines[0], "… (80 earlier line(s) left out)");
        assert_eq!(lines[MAX_SHOWN_LINES], "line 99\\x1b[2J");
        let long = "x".repeat(10_000);
        let lines = shown_lines(&format!("{long}\n{long}\n{long}\n"));
        assert!(lines.iter().map(String::len).sum::<usize>() <= MAX_SHOWN_BYTES + 100);
        assert!(
            lines
                .iter()
                .all(|l| l.chars().count() < MAX_LINE_CHARS + 40)
        );
    }

    #[test]
    fn a_summary_is_one_escaped_line_with_the_first_and_last_lines() {
        assert_eq!(
            summary(TRACEBACK),
            "agent ended before answering: exited with exit status: 1; stderr: Traceback \
             (most recent call last): … ModuleNotFoundError: No module named 'helpers'"
        );
        assert_eq!(summary("a\u{202e}b"), "a\\u{202e}b");
        assert!(summary(&"y".repeat(5000)).chars().count() < MAX_SUMMARY_CHARS + 40);
    }

    #[test]
    fn run_ids_fall_in_their_parts() {
        assert_eq!(part_of_run_id("demo_train_e0_v1"), Some("training"));
        assert_eq!(part_of_run_id("demo_gate_base_v1"), Some("gate"));
        assert_eq!(part_of_run_id("demo_gate_probation_v2"), Some("probation"));
        assert_eq!(part_of_run_id("demo_holdout_v1"), Some("holdout"));
        assert_eq!(part_of_run_id("other"), None);
    }
}
