//! Runs started by the MCP server's `run` tool: each runs on a thread of its own while the
//! server keeps answering, and `run_progress` reads what it has done so far.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use evolution_harness::HarnessEvent;
use evolution_project::run::events::RunObserver;
use evolution_project::run::{Ended, PreparedRun};
use serde::Serialize;
use tokio::sync::Notify;

/// Event lines a job keeps (the oldest are dropped past it).
const MAX_LINES: usize = 500;

/// Event lines `run_progress` returns at most.
pub(crate) const LINES_SHOWN: usize = 50;

/// Where a background run is.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "snake_case", tag = "state")]
pub(crate) enum JobState {
    /// Still running.
    Running,
    /// Finished: the summary line and the report's path.
    Finished {
        /// One line: epochs, versions, candidates and accepts.
        summary: String,
        /// `report.md`.
        report: String,
    },
    /// Stopped by `stop_run`; running it again resumes it.
    Stopped,
    /// Stopped until the requests handed off to the user are answered (provider `handoff`);
    /// running it again then resumes it.
    WaitingForAnswers {
        /// Requests waiting.
        waiting: usize,
        /// The prompts to answer.
        prompts: String,
        /// The file the answers go to.
        answers: String,
    },
    /// Failed; the checkpoint keeps what was done.
    Failed {
        /// The error, one line.
        error: String,
    },
}

/// What `run_progress` shows of one job.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct JobView {
    /// The job's number.
    pub(crate) job: u64,
    /// The run's name.
    pub(crate) run: String,
    /// The run's folder.
    pub(crate) run_dir: String,
    /// Where it is.
    #[serde(flatten)]
    pub(crate) state: JobState,
    /// Rollouts finished.
    pub(crate) rollouts: u64,
    /// The phase it is in (`gate · candidate`), empty before the first.
    pub(crate) phase: String,
    /// The last event lines (decisions and notes), oldest first.
    pub(crate) lines: Vec<String>,
    /// Event lines dropped before these.
    pub(crate) earlier_lines: usize,
}

/// One background run.
struct Job {
    view: Mutex<JobView>,
    stop: Notify,
}

impl Job {
    fn update(&self, f: impl FnOnce(&mut JobView)) {
        let mut view = self.view.lock().unwrap_or_else(PoisonError::into_inner);
        f(&mut view);
    }
}

impl RunObserver for Job {
    fn event(&self, event: &HarnessEvent) {
        match event {
            HarnessEvent::QuestionDone { cached: false, .. } => {
                self.update(|v| v.rollouts = v.rollouts.saturating_add(1));
            }
            HarnessEvent::PhaseStarted { phase, subject, .. } => {
                let phase = format!("{} · {}", phase.label(), subject);
                self.update(|v| v.phase = phase);
            }
            _ => {}
        }
    }

    fn line(&self, line: &str) {
        self.update(|v| {
            v.lines.push(line.to_owned());
            if v.lines.len() > MAX_LINES {
                v.lines.remove(0);
                v.earlier_lines = v.earlier_lines.saturating_add(1);
            }
        });
    }
}

/// The server's background runs, by number.
#[derive(Default, Clone)]
pub(crate) struct Jobs {
    jobs: Arc<Mutex<BTreeMap<u64, Arc<Job>>>>,
}

impl Jobs {
    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, Arc<Job>>> {
        self.jobs.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Starts `prepared` on a thread of its own; refused while a job of the same run folder
    /// is still running. Returns the job's number.
    pub(crate) fn start(&self, prepared: PreparedRun) -> Result<u64, String> {
        let run_dir = prepared.dir.root().display().to_string();
        let mut jobs = self.lock();
        if let Some((n, _)) = jobs.iter().find(|(_, j)| {
            let v = j.view.lock().unwrap_or_else(PoisonError::into_inner);
            v.run_dir == run_dir && matches!(v.state, JobState::Running)
        }) {
            return Err(format!(
                "run {:?} is already running as job {n}; read it with run_progress",
                prepared.config.name
            ));
        }
        let number = jobs.keys().next_back().map_or(1, |n| n.saturating_add(1));
        let job = Arc::new(Job {
            view: Mutex::new(JobView {
                job: number,
                run: prepared.config.name.clone(),
                run_dir,
                state: JobState::Running,
                rollouts: 0,
                phase: String::new(),
                lines: Vec::new(),
                earlier_lines: 0,
            }),
            stop: Notify::new(),
        });
        jobs.insert(number, Arc::clone(&job));
        drop(jobs);
        std::thread::Builder::new()
            .name(format!("run-job-{number}"))
            .spawn(move || {
                let state = contained(|| execute(&job, prepared));
                job.update(|v| v.state = state);
            })
            .map_err(|e| format!("cannot start the run: {e}"))?;
        Ok(number)
    }

    /// The job `number`, or the latest when `None`.
    pub(crate) fn view(&self, number: Option<u64>) -> Result<JobView, String> {
        let jobs = self.lock();
        let job = match number {
            Some(n) => jobs.get(&n),
            None => jobs.values().next_back(),
        }
        .ok_or_else(|| match number {
            Some(n) => format!("no job {n} (jobs: {})", list(&jobs)),
            None => "no run was started by this server yet".to_owned(),
        })?;
        let mut view = job
            .view
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let hidden = view.lines.len().saturating_sub(LINES_SHOWN);
        view.lines.drain(..hidden);
        view.earlier_lines = view.earlier_lines.saturating_add(hidden);
        Ok(view)
    }

    /// Asks job `number` to stop at its next consistent point.
    pub(crate) fn stop(&self, number: u64) -> Result<(), String> {
        let jobs = self.lock();
        let job = jobs
            .get(&number)
            .ok_or_else(|| format!("no job {number} (jobs: {})", list(&jobs)))?;
        job.stop.notify_one();
        Ok(())
    }
}

/// The state `run` ends in; a panic inside it ends the job as failed, not the server.
fn contained(run: impl FnOnce() -> JobState) -> JobState {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(run)).unwrap_or_else(|panic| {
        JobState::Failed {
            error: format!(
                "the run stopped on an internal error ({}); the checkpoint keeps what was done",
                panic_message(panic.as_ref())
            ),
        }
    })
}

/// What a panic said, when it said it with text.
pub(crate) fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    let text = panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic".to_owned());
    text.chars()
        .take(300)
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// The job numbers, for messages.
fn list(jobs: &BTreeMap<u64, Arc<Job>>) -> String {
    if jobs.is_empty() {
        return "none".to_owned();
    }
    jobs.keys()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Runs `prepared` to its end on this thread, telling `job` what happens.
fn execute(job: &Arc<Job>, prepared: PreparedRun) -> JobState {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            return JobState::Failed {
                error: format!("cannot start the async runtime: {e}"),
            };
        }
    };
    let observer: &Job = job;
    let ended = runtime.block_on(prepared.execute(observer, job.stop.notified()));
    match ended {
        Ok(Ended::Interrupted) => JobState::Stopped,
        Ok(Ended::Handoff {
            waiting,
            prompts,
            answers,
        }) => JobState::WaitingForAnswers {
            waiting,
            prompts: prompts.display().to_string(),
            answers: answers.display().to_string(),
        },
        Ok(Ended::Finished(report, path)) => JobState::Finished {
            summary: format!(
                "finished ({}) after {} epoch(s): version {} → {}; {} candidate(s), {} accepted",
                report.stop_reason,
                report.epochs,
                report.initial_version,
                report.final_version,
                report.records.len(),
                report.records.iter().filter(|r| r.accepted).count()
            ),
            report: path.display().to_string(),
        },
        Err(e) => JobState::Failed {
            error: format!("{e:#}"),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_that_panics_ends_as_failed() {
        let state = contained(|| panic!("index out of bounds\nat line 3"));
        match state {
            JobState::Failed { error } => {
                assert!(
                    error.contains("internal error (index out of bounds at line 3)"),
                    "{error}"
                );
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(contained(|| JobState::Stopped), JobState::Stopped));
    }
}
