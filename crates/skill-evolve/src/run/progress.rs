//! Progress of a run on the terminal: a spinner of rollouts that names the phase the run is
//! in (drawn only on a terminal) and the run's event lines on stderr.

use std::io::IsTerminal as _;
use std::time::Duration;

use evolution_harness::{HarnessEvent, Phase};
use evolution_project::run::events::RunObserver;
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::render::terminal_safe;

/// The spinner (drawn only on a terminal) and the event lines.
pub(crate) struct Progress {
    bars: MultiProgress,
    /// The rollouts spinner.
    questions: ProgressBar,
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
            terminal,
        }
    }

    /// Clears the spinner.
    pub(crate) fn finish(&self) {
        self.questions.finish_and_clear();
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

impl RunObserver for Progress {
    fn event(&self, event: &HarnessEvent) {
        match event {
            HarnessEvent::RunStarted { run_id, .. } => {
                self.questions
                    .set_message(format!("run {}", terminal_safe(run_id)));
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
            _ => {}
        }
    }

    /// Prints the line above the spinner (or on stderr); the library escaped it.
    fn line(&self, line: &str) {
        if self.terminal {
            let _ = self.bars.println(line);
        } else {
            eprintln!("{line}");
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
        progress.event(&phase(0, Phase::Rollout, "r_train_e0_v1"));
        assert_eq!(
            progress.questions.message(),
            "epoch 0 · rollout · r_train_e0_v1"
        );
        progress.event(&HarnessEvent::QuestionDone {
            run_id: "r_train_e0_v1".into(),
            question_id: "q1".into(),
            arm: evolution_harness::Arm::Plain,
            correct: true,
            infra_error: false,
            cached: false,
        });
        assert_eq!(progress.questions.position(), 1);
        progress.event(&phase(1, Phase::SlowUpdate, "a\u{1b}[2Jb.md"));
        assert_eq!(
            progress.questions.message(),
            "epoch 1 · slow update · a\\x1b[2Jb.md"
        );
    }
}
