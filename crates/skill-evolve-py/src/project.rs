//! The project operations in process: `run`, `status`, `adopt` and `harvest`, the same
//! functions of `evolution-project` the `skill-evolve` command calls.
//!
//! Each call builds its own single-threaded async runtime and leaves the interpreter free
//! (detached) while it works, attaching only to call the Python callback with an event.
//! Ctrl-C in Python stops a run cleanly (the store at a consistent version, the checkpoint
//! saying where it was), as it does for the command, and then raises `KeyboardInterrupt`; an
//! exception raised by the callback stops it the same way and is raised. Results are plain dicts of JSON values.
//! A problem with the user's input raises `InputError` (nothing was written); any other
//! failure raises `RuntimeError` with the whole chain of causes.

use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

use evolution_project::adopt::{AdoptCheck, check_adopt, find_run};
use evolution_project::error::BadInput;
use evolution_project::harvest::{
    HarvestNote, HarvestOptions, HarvestSource, harvest as harvest_op,
};
use evolution_project::run::config::RunOptions;
use evolution_project::run::events::{HarnessEvent, RunObserver};
use evolution_project::run::{Ended, find_run_config, prepare};
use evolution_project::status::{RunState, find_project, status as status_op};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use serde_json::{Value, json};

use crate::InputError;
use crate::convert::to_python;

/// How often a running run looks for a Ctrl-C in Python.
const SIGNAL_POLL: Duration = Duration::from_millis(200);

/// An `anyhow` error as the Python exception a caller can tell apart: `InputError` for bad
/// input, `RuntimeError` for a failure while working.
fn to_py_err(e: anyhow::Error) -> PyErr {
    match e.downcast_ref::<BadInput>() {
        Some(bad) => InputError::new_err(bad.to_string()),
        None => PyRuntimeError::new_err(format!("{e:#}")),
    }
}

/// A single-threaded runtime for one call.
fn runtime() -> PyResult<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| PyRuntimeError::new_err(format!("cannot start the async runtime: {e}")))
}

/// The current folder, where relative paths and the project search start.
fn current_dir() -> PyResult<PathBuf> {
    std::env::current_dir()
        .map_err(|e| PyRuntimeError::new_err(format!("cannot read the current folder: {e}")))
}

/// Calls a Python callable with each event of a run as a dict; the first exception it
/// raises stops the run and is raised to the caller.
struct PyObserver {
    callback: Option<Py<PyAny>>,
    failed: Mutex<Option<PyErr>>,
}

impl PyObserver {
    fn call(&self, value: &Value) {
        let Some(callback) = &self.callback else {
            return;
        };
        if self.failed.lock().is_ok_and(|f| f.is_some()) {
            return;
        }
        Python::attach(|py| {
            let result = to_python(py, value).and_then(|dict| callback.call1(py, (dict,)));
            if let Err(e) = result {
                self.fail(e);
            }
        });
    }

    fn fail(&self, e: PyErr) {
        if let Ok(mut failed) = self.failed.lock()
            && failed.is_none()
        {
            *failed = Some(e);
        }
    }

    fn failed(&self) -> bool {
        self.failed.lock().is_ok_and(|f| f.is_some())
    }

    fn take_error(&self) -> Option<PyErr> {
        self.failed.lock().ok().and_then(|mut f| f.take())
    }
}

impl RunObserver for PyObserver {
    fn event(&self, event: &HarnessEvent) {
        if let Ok(value) = serde_json::to_value(event) {
            self.call(&value);
        }
    }

    fn line(&self, line: &str) {
        self.call(&json!({ "event": "line", "text": line }));
    }
}

/// Runs (or resumes) the run configuration `config` (an `evolve.toml`; `None` finds the
/// nearest one from the current folder up), calling `on_event(dict)` with every event (its
/// `event` key names it; `"line"` events carry the decision lines the command prints).
///
/// With `dry_run`, only checks the configuration and returns its pre-flight. With `fresh`,
/// deletes the run name's earlier state first. Returns a dict: `preflight`, `interrupted`,
/// and for a finished run `report` (the loop's report), `report_md`, `report_html` and
/// `staged` (how many documents wait for `adopt`). `preferences` names the project's house
/// rules file (as `--preferences` does), over the configuration's.
#[pyfunction]
#[pyo3(signature = (config=None, on_event=None, *, fresh=false, dry_run=false, allow_unreviewed=false, record=None, preferences=None))]
#[expect(
    clippy::too_many_arguments,
    reason = "Python's keyword arguments, each its own flag of `skill-evolve run`"
)]
pub(crate) fn run(
    py: Python<'_>,
    config: Option<PathBuf>,
    on_event: Option<Py<PyAny>>,
    fresh: bool,
    dry_run: bool,
    allow_unreviewed: bool,
    record: Option<PathBuf>,
    preferences: Option<PathBuf>,
) -> PyResult<Py<PyAny>> {
    let config = match config {
        Some(path) => path,
        None => find_run_config(&current_dir()?).map_err(to_py_err)?,
    };
    let options = RunOptions {
        allow_unreviewed,
        preferences,
        ..RunOptions::default()
    };
    let runtime = runtime()?;
    let observer = PyObserver {
        callback: on_event,
        failed: Mutex::new(None),
    };
    let outcome = py.detach(|| -> anyhow::Result<Value> {
        let prepared = runtime.block_on(prepare(&config, &options, record, fresh))?;
        let preflight = prepared.preflight();
        if dry_run {
            return Ok(json!({ "preflight": preflight, "dry_run": true, "interrupted": false }));
        }
        if fresh {
            prepared.start_over()?;
        }
        let dir = prepared.dir.clone();
        let stop = async {
            loop {
                tokio::time::sleep(SIGNAL_POLL).await;
                // A Ctrl-C stops the run like a callback's exception: cleanly, then raised.
                if let Err(e) = Python::attach(|py| py.check_signals()) {
                    observer.fail(e);
                }
                if observer.failed() {
                    break;
                }
            }
        };
        let ended = runtime.block_on(prepared.execute(&observer, stop))?;
        Ok(match ended {
            Ended::Interrupted => json!({
                "preflight": preflight,
                "interrupted": true,
                "checkpoint": dir.checkpoint(),
            }),
            Ended::Handoff {
                waiting,
                prompts,
                answers,
            } => json!({
                "preflight": preflight,
                "interrupted": true,
                "checkpoint": dir.checkpoint(),
                "handoff": {"waiting": waiting, "prompts": prompts, "answers": answers},
            }),
            Ended::Finished(report, path) => {
                let staged = evolution_project::run::stage::read_proposal(&dir)?
                    .map_or(0, |p| p.documents.len());
                json!({
                    "preflight": preflight,
                    "interrupted": false,
                    "report": serde_json::to_value(&*report)?,
                    "report_md": path,
                    "report_html": dir.report_html(),
                    "staged": staged,
                })
            }
        })
    });
    if let Some(e) = observer.take_error() {
        return Err(e);
    }
    let value = outcome.map_err(to_py_err)?;
    Ok(to_python(py, &value)?.unbind())
}

/// The runs of the project `project` (`None`: the current folder or the nearest one above it
/// with runs), sorted by name: one dict each with `name`, `dir`, `state` (`finished` or
/// `not_finished`), `resumable`, `final_version`, `staged`, `waiting`, `documents` (each
/// `name`, `path`, `adopted_as`, `diff`), `run_ids` and `lines` (what `skill-evolve status`
/// prints).
#[pyfunction]
#[pyo3(signature = (project=None))]
pub(crate) fn status(py: Python<'_>, project: Option<PathBuf>) -> PyResult<Py<PyAny>> {
    let cwd = current_dir()?;
    let runtime = runtime()?;
    let runs = py
        .detach(|| -> anyhow::Result<_> {
            let project = find_project(project.as_deref(), &cwd)?;
            runtime.block_on(status_op(&project))
        })
        .map_err(to_py_err)?;
    let list: Vec<Value> = runs
        .iter()
        .map(|run| {
            let (state, resumable, final_version, staged, waiting) = match &run.state {
                RunState::Finished {
                    final_version,
                    staged,
                    waiting,
                } => ("finished", false, final_version.clone(), *staged, *waiting),
                RunState::NotFinished { resumable } => ("not_finished", *resumable, None, 0, 0),
            };
            let documents: Vec<Value> = run
                .proposal
                .iter()
                .flat_map(|p| &p.documents)
                .map(|d| {
                    json!({
                        "name": d.source.name,
                        "path": d.source.path,
                        "adopted_as": d.adopted_as,
                        "diff": run.dir.root().join(&d.diff_file),
                    })
                })
                .collect();
            json!({
                "name": run.name,
                "dir": run.dir.root(),
                "state": state,
                "resumable": resumable && run.changed.is_empty(),
                "changed": run.changed,
                "final_version": final_version,
                "staged": staged,
                "waiting": waiting,
                "documents": documents,
                "run_ids": run.run_ids,
                "lines": run.lines(),
            })
        })
        .collect();
    Ok(to_python(py, &Value::Array(list))?.unbind())
}

/// Adopts the staged documents of the run `run` (a run's name or its folder) into the user's
/// files. Without `confirm=True` nothing is written: the dict returned holds the `diff` to
/// show the user, the `documents` that would be written and the `notes` on those left as they
/// are. With `confirm=True` (the user saw that diff and said yes) each document is written
/// through its own version store and `adopted` lists `{"file", "version"}`. `skills` picks
/// documents by name (every one not adopted yet when empty; a skill's name takes its
/// `SKILL.md` and the references evolved with it). With `undo=True` the same steps take an
/// adoption of the run back: each file it wrote gets the text the run started from again
/// (`adopted` then lists the restored files and their new versions).
#[pyfunction]
#[pyo3(signature = (run, *, project=None, skills=None, confirm=false, undo=false))]
pub(crate) fn adopt(
    py: Python<'_>,
    run: String,
    project: Option<PathBuf>,
    skills: Option<Vec<String>>,
    confirm: bool,
    undo: bool,
) -> PyResult<Py<PyAny>> {
    let cwd = current_dir()?;
    let skills = skills.unwrap_or_default();
    let value = py
        .detach(|| -> anyhow::Result<Value> {
            let dir = find_run(&run, project.as_deref(), &cwd)?;
            if undo {
                return undo_adoption(&dir, &skills, confirm);
            }
            Ok(match check_adopt(&dir, &skills)? {
                AdoptCheck::NothingStaged { run } => json!({
                    "run": run, "diff": "", "documents": [], "notes": [],
                    "adopted": [], "confirmed": confirm,
                    "nothing": "the run staged nothing: no candidate was accepted",
                }),
                AdoptCheck::NothingLeft { run, notes } => json!({
                    "run": run, "diff": "", "documents": [], "notes": notes,
                    "adopted": [], "confirmed": confirm,
                    "nothing": "nothing left to adopt",
                }),
                AdoptCheck::Ready(plan) => {
                    let documents = plan.ready.iter().map(|r| r.user_file.clone()).collect();
                    let (run, diff, notes) = (plan.run(), plan.diff(), plan.notes.clone());
                    plan_value(run, diff, notes, documents, confirm, || plan.apply(true))?
                }
            })
        })
        .map_err(to_py_err)?;
    Ok(to_python(py, &value)?.unbind())
}

/// [`adopt`] with `undo=True`: the adoption of the run in `dir` taken back once `confirm`ed.
fn undo_adoption(
    dir: &evolution_project::run::dir::RunDir,
    skills: &[String],
    confirm: bool,
) -> anyhow::Result<Value> {
    use evolution_project::adopt::undo::{UndoCheck, check_undo};
    Ok(match check_undo(dir, skills)? {
        UndoCheck::NothingAdopted { run, notes } => json!({
            "run": run, "diff": "", "documents": [], "notes": notes,
            "adopted": [], "confirmed": confirm,
            "nothing": "nothing of the run is adopted",
        }),
        UndoCheck::Ready(plan) => {
            let documents = plan.ready.iter().map(|r| r.user_file.clone()).collect();
            let (run, diff, notes) = (plan.run(), plan.diff(), plan.notes.clone());
            plan_value(run, diff, notes, documents, confirm, || plan.apply(true))?
        }
    })
}

/// What `adopt` returns for a plan: its diff, the files it writes and, once `confirm`ed,
/// what `apply` wrote.
fn plan_value(
    run: String,
    diff: String,
    notes: Vec<String>,
    documents: Vec<PathBuf>,
    confirm: bool,
    apply: impl FnOnce() -> anyhow::Result<Vec<evolution_project::adopt::Adopted>>,
) -> anyhow::Result<Value> {
    let written: Vec<Value> = if confirm {
        apply()?
            .into_iter()
            .map(|a| json!({ "file": a.user_file, "version": a.version }))
            .collect()
    } else {
        Vec::new()
    };
    Ok(json!({
        "run": run, "diff": diff, "documents": documents, "notes": notes,
        "adopted": written, "confirmed": confirm, "nothing": null,
    }))
}

/// Harvests agent sessions into trajectories, as `skill-evolve harvest` does: `source` is
/// `"claude-code"`, `"codex"`, `"session-state"` or `"dir"`; the keyword arguments are the
/// command's flags (`from_` for `--from`). `on_note(dict)` receives each note (`kind`
/// `"warning"`, `"skipped"` or `"session"`). Returns a dict with `source`, `from`, `counts`,
/// `redactions` (`None` when off), `out`, `tasks` and `lines` (the command's summary).
#[pyfunction]
#[pyo3(signature = (source, *, from_=None, project=None, since=None, skill=None, out=None, tasks=None, min_sessions=2, no_redact=false, config=None, recorded=false, on_note=None))]
#[expect(
    clippy::too_many_arguments,
    reason = "one keyword argument per flag of the command"
)]
pub(crate) fn harvest(
    py: Python<'_>,
    source: &str,
    from_: Option<PathBuf>,
    project: Option<PathBuf>,
    since: Option<String>,
    skill: Option<String>,
    out: Option<PathBuf>,
    tasks: Option<PathBuf>,
    min_sessions: usize,
    no_redact: bool,
    config: Option<PathBuf>,
    recorded: bool,
    on_note: Option<Py<PyAny>>,
) -> PyResult<Py<PyAny>> {
    let source = match source {
        "claude-code" => HarvestSource::ClaudeCode,
        "codex" => HarvestSource::Codex,
        "gemini" => HarvestSource::Gemini,
        "opencode" => HarvestSource::OpenCode,
        "cursor" => HarvestSource::Cursor,
        "copilot" => HarvestSource::Copilot,
        "session-state" => HarvestSource::SessionState,
        "dir" => HarvestSource::Dir,
        other => {
            return Err(InputError::new_err(format!(
                "source {other:?}: expected \"claude-code\", \"codex\", \"gemini\", \
                 \"opencode\", \"cursor\", \"copilot\", \"session-state\" or \"dir\""
            )));
        }
    };
    let options = HarvestOptions {
        source,
        from: from_,
        project,
        since,
        skill,
        out,
        tasks,
        min_sessions,
        no_redact,
        config,
        recorded,
        judge_followups: false,
        variants: None,
    };
    let observer = PyObserver {
        callback: on_note,
        failed: Mutex::new(None),
    };
    let summary = py.detach(|| {
        harvest_op(&options, &mut |note| {
            let value = match note {
                HarvestNote::Warning(text) => json!({ "kind": "warning", "text": text }),
                HarvestNote::Skipped(text) => json!({ "kind": "skipped", "text": text }),
                HarvestNote::Session {
                    id,
                    passed,
                    reasons,
                } => json!({ "kind": "session", "id": id, "passed": passed, "reasons": reasons }),
            };
            observer.call(&value);
        })
    });
    if let Some(e) = observer.take_error() {
        return Err(e);
    }
    let summary = summary.map_err(to_py_err)?;
    let c = &summary.counts;
    let value = json!({
        "source": summary.source.name(),
        "from": summary.from,
        "also_from": summary.also_from,
        "counts": {
            "sessions": c.sessions, "turns": c.turns, "tool_calls": c.tool_calls,
            "tool_errors": c.tool_errors, "interruptions": c.interruptions,
            "failed": c.failed, "passed": c.passed, "filtered_out": c.filtered_out,
            "skipped_records": c.skipped_records, "skipped_sessions": c.skipped_sessions,
            "written": c.written,
        },
        "redactions": summary.redactions,
        "out": summary.out,
        "tasks": summary.tasks.as_ref().map(|(path, n)| {
            let merged = summary.task_file.as_ref();
            json!({
                "file": path, "count": n,
                "kept": merged.map(|m| m.kept),
                "kept_reviewed": merged.map(|m| m.kept_reviewed),
                "added": merged.map(|m| m.added),
                "dropped_before": merged.map(|m| m.dropped_before),
            })
        }),
        "lines": summary.lines(),
    });
    Ok(to_python(py, &value)?.unbind())
}
