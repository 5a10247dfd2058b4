//! The runs of a project and what each staged: what `skill-evolve status` shows.

use std::path::{Path, PathBuf};

use evolution_runlog_sqlite::SqliteRunLog;

use crate::error::{bad_at, bad_option};
use crate::render::terminal_safe;
use crate::run::dir::{EVOLVE_MARKER, RunDir, runs_of};
use crate::run::failures::{PartFailures, failures_by_part};
use crate::run::inputs::read_inputs;
use crate::run::stage::{Proposal, read_proposal, read_sources, sha256_hex};

/// The project folder: `explicit`, else `start` or the nearest folder above it that has a
/// runs folder.
///
/// # Errors
/// A bad input when there is no such folder.
pub fn find_project(explicit: Option<&Path>, start: &Path) -> anyhow::Result<PathBuf> {
    if let Some(dir) = explicit {
        if !runs_of(dir).is_dir() {
            return Err(bad_at(
                dir,
                None,
                "has no runs (no .skill-evolve/runs folder); `skill-evolve run --config FILE` \
                 makes one",
            ));
        }
        return Ok(dir.to_path_buf());
    }
    start
        .ancestors()
        .find(|d| runs_of(d).is_dir())
        .map(Path::to_path_buf)
        .ok_or_else(|| {
            bad_option(
                "no runs here: neither this folder nor a parent has a .skill-evolve/runs folder; \
                 `skill-evolve run --config FILE` makes one",
            )
        })
}

/// The run folders of a project (not its `evolve` sessions), sorted by name.
///
/// # Errors
/// A runs folder that cannot be read.
pub fn list_runs(project: &Path) -> anyhow::Result<Vec<(String, RunDir)>> {
    let runs = runs_of(project);
    let entries = std::fs::read_dir(&runs)
        .map_err(|e| bad_at(&runs, None, format!("cannot read the runs folder: {e}")))?;
    let mut out = Vec::new();
    for entry in entries {
        let path = entry
            .map_err(|e| bad_at(&runs, None, format!("cannot read the runs folder: {e}")))?
            .path();
        if !path.is_dir() {
            continue;
        }
        let Some(name) = path.file_name().and_then(|n| n.to_str()).map(str::to_owned) else {
            continue;
        };
        if name.starts_with('.') || path.join(EVOLVE_MARKER).exists() {
            // `evolve` sessions are listed apart ([`evolve_sessions`]).
            continue;
        }
        out.push((name, RunDir::at(path)));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

/// Where a run is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunState {
    /// Finished: the version it ended at (when it staged a proposal), how many documents it
    /// staged and how many of those are not adopted yet.
    Finished {
        /// The store's version at the end, when known.
        final_version: Option<String>,
        /// Documents staged.
        staged: usize,
        /// Staged documents not adopted yet.
        waiting: usize,
    },
    /// Not finished; `resumable` when a checkpoint says where it was.
    NotFinished {
        /// Whether the same `run` resumes it.
        resumable: bool,
    },
}

/// One run of a project.
#[derive(Debug, Clone)]
pub struct RunStatus {
    /// The run's name (its folder's name).
    pub name: String,
    /// Its folder.
    pub dir: RunDir,
    /// Where it is.
    pub state: RunState,
    /// What it staged, when it finished with a proposal.
    pub proposal: Option<Proposal>,
    /// The run ids its log holds (training and gate rollouts), oldest first.
    pub run_ids: Vec<String>,
    /// The failed rollouts (INFRA) of each part of the run, from its log.
    pub failures: Vec<PartFailures>,
    /// The user files of an unfinished run that changed (or went missing) since it started,
    /// as the run recorded their paths: such a run cannot resume, only start over.
    pub changed: Vec<PathBuf>,
    /// For each adopted document whose store has moved on from the version the adoption
    /// wrote (a rollback, a later adopt or `evolve`): its document name and the store's
    /// current version.
    pub moved_on: Vec<(String, String)>,
}

impl RunStatus {
    /// The run as `skill-evolve status` prints it: a line, then its staged documents, the
    /// adopt command and its run ids (escaped).
    pub fn lines(&self) -> Vec<String> {
        let name = terminal_safe(&self.name);
        let state = match &self.state {
            RunState::Finished {
                final_version: Some(version),
                staged: 0,
                ..
            } => format!("finished ({version}): nothing staged"),
            RunState::Finished {
                final_version: Some(version),
                staged,
                waiting,
            } => format!(
                "finished ({version}): {staged} document(s) staged, {waiting} not adopted yet"
            ),
            RunState::Finished {
                final_version: None,
                ..
            } => "finished: nothing staged".to_owned(),
            RunState::NotFinished { resumable: true } if !self.changed.is_empty() => {
                let files: Vec<String> = self
                    .changed
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect();
                format!(
                    "not finished, and {} changed since it started: it cannot resume; \
                     `run --fresh` starts it over",
                    files.join(", ")
                )
            }
            RunState::NotFinished { resumable: true } => {
                "not finished: the same `run` command resumes it (when its configuration is \
                 unchanged)"
                    .to_owned()
            }
            RunState::NotFinished { resumable: false } => "not finished".to_owned(),
        };
        let mut lines = vec![format!("{name}: {state}")];
        for d in self.proposal.iter().flat_map(|p| &p.documents) {
            let now = self
                .moved_on
                .iter()
                .find(|(document, _)| *document == d.source.document)
                .map(|(_, now)| now);
            let adopted = match (&d.adopted_as, now) {
                (None, _) => "staged".to_owned(),
                (Some(v), None) => format!("adopted as {v}"),
                (Some(v), Some(now)) if now < v => {
                    format!("adopted as {v}, since rolled back to {now}")
                }
                (Some(v), Some(now)) => format!("adopted as {v}, its store now at {now}"),
            };
            lines.push(
                terminal_safe(&format!(
                    "  {} → {} ({adopted}; diff {})",
                    d.source.name,
                    d.source.path.display(),
                    self.dir.root().join(&d.diff_file).display()
                ))
                .into_owned(),
            );
        }
        if matches!(self.state, RunState::Finished { waiting, .. } if waiting > 0) {
            lines.push(format!("  adopt with: skill-evolve adopt {name}"));
        }
        for part in &self.failures {
            if let Some(line) = part.describe() {
                lines.push(format!(
                    "  failed rollouts (INFRA), {}",
                    terminal_safe(&line)
                ));
            }
        }
        if !self.run_ids.is_empty() {
            lines.push(format!(
                "  run ids in {} (for `skill-evolve diagnose --runlog FILE --run-id ID`): {}",
                terminal_safe(&self.dir.runlog().display().to_string()),
                terminal_safe(&self.run_ids.join(", "))
            ));
        }
        lines
    }
}

/// Every run of `project`, sorted by name.
///
/// # Errors
/// A runs folder, a staged proposal or a run log that cannot be read.
pub async fn status(project: &Path) -> anyhow::Result<Vec<RunStatus>> {
    let mut out = Vec::new();
    for (name, dir) in list_runs(project)? {
        let proposal = read_proposal(&dir)?;
        let state = match &proposal {
            Some(p) => RunState::Finished {
                final_version: Some(p.final_version.clone()),
                staged: p.documents.len(),
                waiting: p
                    .documents
                    .iter()
                    .filter(|d| d.adopted_as.is_none())
                    .count(),
            },
            None if dir.report_md().is_file() => RunState::Finished {
                final_version: None,
                staged: 0,
                waiting: 0,
            },
            None => RunState::NotFinished {
                resumable: dir.checkpoint().is_file(),
            },
        };
        let (run_ids, failures) = from_log(&dir).await?;
        let changed = match state {
            RunState::NotFinished { resumable: true } => changed_files(project, &dir),
            _ => Vec::new(),
        };
        let moved_on = proposal
            .as_ref()
            .map(|p| moved_on(&dir, p))
            .unwrap_or_default();
        out.push(RunStatus {
            name,
            dir,
            state,
            proposal,
            run_ids,
            failures,
            changed,
            moved_on,
        });
    }
    Ok(out)
}

/// The adopted documents of `proposal` whose store is no longer at the version their
/// adoption wrote, with the store's current version; a store that cannot be read is left out
/// (the line then says what the adoption wrote, as before).
fn moved_on(dir: &RunDir, proposal: &Proposal) -> Vec<(String, String)> {
    proposal
        .documents
        .iter()
        .filter_map(|d| {
            let adopted = d.adopted_as.as_ref()?;
            // The store adopt wrote through (only read here): the one beside the file, else
            // the project's for its path; a path that does not stay inside the project is
            // not followed.
            let recorded = &d.source.path;
            if !recorded
                .components()
                .all(|c| matches!(c, std::path::Component::Normal(_)))
            {
                return None;
            }
            let project = dir.project();
            let beside = crate::skill_store::beside_store(&project.join(recorded));
            let store = if beside.is_dir() {
                beside
            } else {
                crate::skill_store::project_store(&project, recorded)
            };
            let now = evolution_store_fs::FsStore::open(&store)
                .ok()?
                .current_version()
                .ok()?
                .to_string();
            (now != *adopted).then(|| (d.source.document.clone(), now))
        })
        .collect()
}

/// The run ids a run's log holds, oldest first, and the failed rollouts of each part of the
/// run; both empty before the run log exists.
async fn from_log(dir: &RunDir) -> anyhow::Result<(Vec<String>, Vec<PartFailures>)> {
    let path = dir.runlog();
    if !path.is_file() {
        return Ok((Vec::new(), Vec::new()));
    }
    let log = SqliteRunLog::open_read_only(&path)
        .map_err(|e| bad_at(&path, None, format!("not a run log: {e}")))?;
    let runs = log
        .runs()
        .await
        .map_err(|e| bad_at(&path, None, format!("not a run log: {e}")))?;
    let failures = failures_by_part(&log).await;
    Ok((runs.into_iter().map(|r| r.run_id).collect(), failures))
}

/// The user files of the run in `dir` whose text is not what the run started with (its
/// `inputs.json`), or that cannot be read any more; empty when the run recorded no inputs or
/// no sources (nothing to compare) or when every file is as it was.
fn changed_files(project: &Path, dir: &RunDir) -> Vec<PathBuf> {
    let (Ok(Some(inputs)), Ok(Some(sources))) = (read_inputs(dir), read_sources(dir)) else {
        return Vec::new();
    };
    sources
        .documents
        .into_iter()
        .filter(|source| {
            let Some(started) = inputs
                .skills
                .get(&source.document)
                .or_else(|| inputs.prompts.get(&source.document))
            else {
                return false;
            };
            std::fs::read_to_string(project.join(&source.path))
                .map_or(true, |text| sha256_hex(&text) != *started)
        })
        .map(|source| source.path)
        .collect()
}

/// Folders never searched for `evolve` sessions: version control, dependencies, builds.
const NOT_SEARCHED: [&str; 7] = [
    ".git",
    "node_modules",
    "target",
    ".venv",
    "venv",
    "__pycache__",
    ".skill-evolve",
];

/// How deep below the project `evolve` sessions are looked for (`skills/<name>/` is 2).
const SESSION_DEPTH: usize = 6;

/// One `evolve` session of a project: its folder, and what its report says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvolveSession {
    /// The session's folder.
    pub dir: PathBuf,
    /// The skill file it evolved, as its report names it.
    pub skill: Option<String>,
    /// How it ended.
    pub state: EvolveState,
}

/// How an `evolve` session ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EvolveState {
    /// No report: it was stopped, or waits for the answers of a handoff.
    NotFinished,
    /// The rounds proposed no change.
    NoChange,
    /// A candidate was made and not written (not accepted by the gate, not confirmed, or
    /// discarded): where it is, and the gate's word on it.
    NotWritten {
        /// The candidate's file.
        candidate: Option<String>,
        /// `gated, <decision>` or `ungated`.
        gate: String,
    },
    /// The candidate was written to the skill as this version.
    Written {
        /// The version written.
        version: String,
        /// `gated, <decision>` or `ungated`.
        gate: String,
    },
}

impl EvolveSession {
    /// The session as `skill-evolve status` prints it, its folder shown relative to `project`.
    pub fn line(&self, project: &Path) -> String {
        let dir = self.dir.strip_prefix(project).unwrap_or(&self.dir);
        let skill = self
            .skill
            .as_deref()
            .map(|s| format!(" of {s}"))
            .unwrap_or_default();
        let state = match &self.state {
            EvolveState::NotFinished => {
                "not finished (no report: stopped, or waiting for handoff answers; the same \
                 `evolve` command goes on)"
                    .to_owned()
            }
            EvolveState::NoChange => "no change proposed".to_owned(),
            EvolveState::NotWritten { candidate, gate } => format!(
                "candidate not written ({gate}){}",
                candidate
                    .as_deref()
                    .map(|c| format!(": {c}"))
                    .unwrap_or_default()
            ),
            EvolveState::Written { version, gate } => format!("written as {version} ({gate})"),
        };
        terminal_safe(&format!("evolve session {}{skill}: {state}", dir.display())).into_owned()
    }
}

/// The `evolve` sessions under `project` (its own runs folder and those beside its skills,
/// at most a few folders deep, skipping version control, dependencies and builds), sorted by
/// folder. Folders that cannot be read are passed over.
pub fn evolve_sessions(project: &Path) -> Vec<EvolveSession> {
    let mut out = Vec::new();
    let walker = walkdir::WalkDir::new(project)
        .max_depth(SESSION_DEPTH)
        .follow_links(false)
        .into_iter()
        .filter_entry(|e| {
            e.depth() == 0
                || (e.file_type().is_dir()
                    && !NOT_SEARCHED.contains(&e.file_name().to_string_lossy().as_ref()))
        });
    for folder in walker.flatten() {
        let Ok(entries) = std::fs::read_dir(runs_of(folder.path())) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
            if is_dir && path.join(EVOLVE_MARKER).is_file() {
                out.push(read_session(path));
            }
        }
    }
    out.sort_by(|a, b| a.dir.cmp(&b.dir));
    out
}

/// What the session folder `dir`'s `report.json` says of it.
fn read_session(dir: PathBuf) -> EvolveSession {
    let report: Option<serde_json::Value> =
        std::fs::read_to_string(RunDir::at(dir.clone()).report_json())
            .ok()
            .and_then(|text| serde_json::from_str(&text).ok());
    let Some(report) = report else {
        return EvolveSession {
            dir,
            skill: None,
            state: EvolveState::NotFinished,
        };
    };
    let text = |key: &str| report.get(key).and_then(|v| v.as_str()).map(str::to_owned);
    let flag = |key: &str| report.get(key).and_then(serde_json::Value::as_bool);
    let gate = {
        let passed = report
            .pointer("/gate/verdicts")
            .and_then(|v| v.as_array())
            .and_then(|v| v.last())
            .and_then(|v| v.get("decision"))
            .and_then(|v| v.as_str());
        match (
            report.pointer("/gate/mode").and_then(|v| v.as_str()),
            passed,
        ) {
            (Some("gated"), Some(decision)) => format!("gated, {decision}"),
            (Some("gated"), None) => "gated".to_owned(),
            _ => "ungated".to_owned(),
        }
    };
    let state = match (flag("changed"), flag("written"), text("version")) {
        (_, Some(true), Some(version)) => EvolveState::Written { version, gate },
        (Some(false), _, _) => EvolveState::NoChange,
        _ => EvolveState::NotWritten {
            candidate: text("candidate"),
            gate,
        },
    };
    EvolveSession {
        dir,
        skill: text("skill"),
        state,
    }
}
