//! Progress of a run from the harness's events: a spinner of rollouts that
//! names the phase the run is in (drawn only on a terminal) and one line per
//! gate decision, kept for the report.

use std::io::IsTerminal as _;
use std::sync::Mutex;
use std::time::Duration;

use evolution_gate::GateDecision;
use evolution_harness::{EventSink, HarnessEvent, Phase};
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::render::terminal_safe;

/// Progress bars from the harness's events (drawn only on a terminal), and
/// one line per gate decision.
pub(crate) struct Progress {
    bars: MultiProgress,
    /// The rollouts spinner.
    pub(crate) questions: ProgressBar,
    /// Every line said, in order.
    pub(crate) lines: Mutex<Vec<String>>,
    terminal: bool,
}

impl Progress {
    /// Bars on stderr when it is a terminal, hidden otherwise.
    pub(crate) fn new() -> Self {
        let terminal = std::io::stderr().is_terminal();
        let target = if terminal {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        };
        let bars = MultiProgress::with_draw_target(target);
        let questions = bars.add(ProgressBar::new_spinner());
        questions.set_style(
            ProgressStyle::with_template("{spinner} {pos} rollouts  {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        questions.enable_steady_tick(Duration::from_millis(200));
        Progress {
            bars,
            questions,
            lines: Mutex::new(Vec::new()),
            terminal,
        }
    }

    /// Prints `line` above the bars (or on stderr) and keeps it for the report.
    pub(crate) fn say(&self, line: String) {
        // Event lines quote agents, files and the LLM: nothing in them may steer the terminal.
        let line = terminal_safe(&line).into_owned();
        if self.terminal {
            let _ = self.bars.println(&line);
        } else {
            eprintln!("{line}");
        }
        if let Ok(mut lines) = self.lines.lock() {
            lines.push(line);
        }
    }
}

/// The spinner's message while `phase` of `epoch` works on `subject`, e.g.
/// `epoch 1 · gate · run_e1_0-skill.md`; the subject is escaped and cut, it
/// may name a document of the user's.
fn phase_message(epoch: u32, phase: Phase, subject: &str) -> String {
    let subject = evolution_types::template::truncate_chars(subject, MAX_SUBJECT_CHARS);
    format!(
        "epoch {epoch} · {} · {}",
        phase.label(),
        terminal_safe(&subject)
    )
}

/// Longest subject shown in the spinner.
const MAX_SUBJECT_CHARS: usize = 80;

/// The gate decision as its serialised name (`accept`, `reject`, ...).
pub(crate) fn decision_name(d: GateDecision) -> String {
    serde_json::to_value(d)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_else(|| format!("{d:?}"))
}

impl EventSink for Progress {
    fn emit(&self, event: &HarnessEvent) {
        match event {
            HarnessEvent::RunStarted { run_id, .. } => {
                self.questions.set_message(format!("run {run_id}"));
            }
            HarnessEvent::PhaseStarted {
                epoch,
                phase,
                subject,
            } => {
                tracing::info!("{}", phase_message(*epoch, *phase, subject));
                self.questions
                    .set_message(phase_message(*epoch, *phase, subject));
            }
            // The message names the phase (and its run); rollouts only count.
            HarnessEvent::QuestionDone { cached: false, .. } => self.questions.inc(1),
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
                ..
            } => self.say(format!(
                "gate {candidate} block {block}: W={w} L={l} used={n_used} remaining={n_remaining} \
                 E={e_value:.2} (confirm at {e_confirm}) → {}",
                decision_name(*decision)
            )),
            HarnessEvent::CandidateAccepted {
                candidate,
                decision,
                e_value,
                version,
            } => {
                self.say(format!(
                    "accepted {candidate} ({}, E={e_value:.2}) as {}",
                    decision_name(*decision),
                    version.as_deref().unwrap_or("a new version")
                ));
            }
            HarnessEvent::CandidateRejected {
                candidate,
                decision,
                e_value,
            } => self.say(format!(
                "rejected {candidate} ({}, E={e_value:.2})",
                decision_name(*decision)
            )),
            HarnessEvent::ProbationSettled {
                version,
                verdict,
                w,
                l,
            } => self.say(format!("probation of {version}: {verdict:?} (W={w} L={l})")),
            HarnessEvent::BudgetStop { exceeded, .. } => {
                self.say(format!("budget cap reached: {exceeded:?}"));
            }
            HarnessEvent::InputSkipped { file, reason } => {
                self.say(format!("skipped {file}: {reason}"));
            }
            HarnessEvent::RunFinished { .. } => {}
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spinner_names_the_phase_the_run_is_in() {
        let progress = Progress::new();
        let phase = |epoch, phase, subject: &str| HarnessEvent::PhaseStarted {
            epoch,
            phase,
            subject: subject.to_owned(),
        };
        progress.emit(&phase(0, Phase::Rollout, "r_train_e0_v1"));
        assert_eq!(
            progress.questions.message(),
            "epoch 0 · rollout · r_train_e0_v1"
        );
        progress.emit(&HarnessEvent::QuestionDone {
            run_id: "r_train_e0_v1".into(),
            question_id: "q1".into(),
            arm: evolution_harness::Arm::Plain,
            correct: true,
            infra_error: false,
            cached: false,
        });
        assert_eq!(progress.questions.position(), 1);
        progress.emit(&phase(1, Phase::SlowUpdate, "a\u{1b}[2Jb.md"));
        assert_eq!(
            progress.questions.message(),
            "epoch 1 · slow update · a\\x1b[2Jb.md"
        );
        // A phase is not an event line of the report.
        assert!(progress.lines.lock().unwrap().is_empty());
    }
}
