//! What a caller sees of a run while it runs: every harness event, and a line for each
//! decision (a gate block, an accept, a rejection, a candidate dropped for breaking the
//! house rules, a probation verdict, a budget stop, a skipped input). The lines are kept for the report, whoever observes the run.

use std::sync::Mutex;

use evolution_gate::GateDecision;
use evolution_harness::EventSink;
pub use evolution_harness::HarnessEvent;

use crate::render::terminal_safe;

/// An observer of a running run. Both methods have empty defaults, so an observer
/// implements only what it shows.
pub trait RunObserver: Send + Sync {
    /// Every event of the harness, as it happens (rollouts, phases, gate blocks, …).
    fn event(&self, _event: &HarnessEvent) {}
    /// A line for the user about a decision or a note of the run (escaped: it may quote
    /// agents, files and the LLM, and nothing in it can steer a terminal).
    fn line(&self, _line: &str) {}
}

/// An observer that shows nothing.
#[derive(Debug, Default, Clone, Copy)]
pub struct Silent;

impl RunObserver for Silent {}

/// The gate decision as its serialised name (`accept_confirmed`, `reject_futility`, …).
pub fn decision_name(d: GateDecision) -> String {
    serde_json::to_value(d)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_else(|| format!("{d:?}"))
}

/// The line a decision event says, `None` for events that are not decisions.
pub fn event_line(event: &HarnessEvent) -> Option<String> {
    match event {
        HarnessEvent::BlockGated {
            candidate,
            block,
            w,
            l,
            n_used,
            n_remaining,
            decision,
            e_value,
            e_confirm,
            wins_needed,
            ..
        } => Some(match wins_needed {
            Some(needed) => format!(
                "gate {candidate} block {block}: W={w} L={l} used={n_used} \
                 remaining={n_remaining} (accept at W ≥ {needed} with {} won or lost) → {}",
                w.saturating_add(*l),
                decision_name(*decision)
            ),
            None => format!(
                "gate {candidate} block {block}: W={w} L={l} used={n_used} \
                 remaining={n_remaining} E={e_value:.2} (confirm at {e_confirm}) → {}",
                decision_name(*decision)
            ),
        }),
        HarnessEvent::CandidateAccepted {
            candidate,
            decision,
            e_value,
            version,
        } => Some(format!(
            "accepted {candidate} ({}, E={e_value:.2}) as {}",
            decision_name(*decision),
            version.as_deref().unwrap_or("a new version")
        )),
        HarnessEvent::CandidateRejected {
            candidate,
            decision,
            e_value,
        } => Some(format!(
            "rejected {candidate} ({}, E={e_value:.2})",
            decision_name(*decision)
        )),
        HarnessEvent::CandidateDropped { candidate, reasons } => Some(format!(
            "dropped {candidate} before its gate: {}",
            reasons.join("; ")
        )),
        HarnessEvent::ProbationSettled {
            version,
            verdict,
            w,
            l,
        } => Some(format!("probation of {version}: {verdict:?} (W={w} L={l})")),
        HarnessEvent::BudgetStop { exceeded, .. } => {
            Some(format!("budget cap reached: {exceeded}"))
        }
        HarnessEvent::InputSkipped { file, reason } => Some(format!("skipped {file}: {reason}")),
        HarnessEvent::AnswersChosen {
            questions,
            disagreed,
            answers_per_question,
        } => Some(if *answers_per_question > 1 {
            format!(
                "the agent answered {disagreed} of {questions} training question(s) differently \
                 when asked again: each arm answers each gate question {answers_per_question} \
                 times"
            )
        } else {
            format!(
                "the agent answered {disagreed} of {questions} training question(s) differently \
                 when asked again: each arm answers each gate question once"
            )
        }),
        _ => None,
    }
}

/// The harness's event sink for a run: forwards every event to the observer, turns the
/// decisions into lines, and keeps the lines for the report.
pub(crate) struct EventLines<'a> {
    observer: &'a dyn RunObserver,
    lines: Mutex<Vec<String>>,
    /// The file every line is also appended to, so a resumed run reports every leg's.
    file: Option<Mutex<std::fs::File>>,
}

impl<'a> EventLines<'a> {
    /// Lines for `observer`, none kept yet.
    pub(crate) fn new(observer: &'a dyn RunObserver) -> Self {
        EventLines {
            observer,
            lines: Mutex::new(Vec::new()),
            file: None,
        }
    }

    /// Lines for `observer` that are also appended to `path` (created owner-only), starting
    /// with the lines earlier legs of the run left there (not said again).
    ///
    /// # Errors
    /// The file cannot be read or opened.
    pub(crate) fn kept_in(
        observer: &'a dyn RunObserver,
        path: &std::path::Path,
    ) -> std::io::Result<Self> {
        use std::io::{Read as _, Seek as _};
        let mut file = super::private::open_private(path)?;
        let mut earlier = String::new();
        file.read_to_string(&mut earlier)?;
        file.seek(std::io::SeekFrom::End(0))?;
        // Each line was escaped when it was said; a line cut by a crash is dropped.
        let complete = earlier.rfind('\n').map_or("", |end| &earlier[..end]);
        Ok(EventLines {
            observer,
            lines: Mutex::new(complete.lines().map(str::to_owned).collect()),
            file: Some(Mutex::new(file)),
        })
    }

    /// Says `line` (escaped) to the observer and keeps it for the report.
    pub(crate) fn say(&self, line: &str) {
        let line = terminal_safe(line).into_owned();
        self.observer.line(&line);
        if let Some(file) = &self.file
            && let Ok(mut file) = file.lock()
        {
            use std::io::Write as _;
            // The report of this leg keeps the line either way; only a later leg's misses it.
            let _ = file.write_all(format!("{line}\n").as_bytes());
        }
        if let Ok(mut lines) = self.lines.lock() {
            lines.push(line);
        }
    }

    /// Every line said, in order.
    pub(crate) fn lines(&self) -> Vec<String> {
        self.lines.lock().map(|l| l.clone()).unwrap_or_default()
    }
}

impl EventSink for EventLines<'_> {
    fn emit(&self, event: &HarnessEvent) {
        self.observer.event(event);
        if let Some(line) = event_line(event) {
            self.say(&line);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Seen {
        events: Mutex<usize>,
        lines: Mutex<Vec<String>>,
    }

    impl RunObserver for Seen {
        fn event(&self, _event: &HarnessEvent) {
            *self.events.lock().unwrap() += 1;
        }
        fn line(&self, line: &str) {
            self.lines.lock().unwrap().push(line.to_owned());
        }
    }

    #[test]
    fn decisions_become_escaped_lines_and_every_event_reaches_the_observer() {
        let seen = Seen::default();
        let sink = EventLines::new(&seen);
        sink.emit(&HarnessEvent::QuestionDone {
            run_id: "r".into(),
            question_id: "q1".into(),
            arm: evolution_harness::Arm::Plain,
            correct: true,
            infra_error: false,
            cached: false,
        });
        sink.emit(&HarnessEvent::InputSkipped {
            file: "a\u{1b}[2Jb.md".into(),
            reason: "too long".into(),
        });
        assert_eq!(*seen.events.lock().unwrap(), 2);
        let expected = vec!["skipped a\\x1b[2Jb.md: too long".to_owned()];
        assert_eq!(*seen.lines.lock().unwrap(), expected);
        assert_eq!(sink.lines(), expected);
    }
}
