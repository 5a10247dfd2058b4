//! The write side the loop needs: a versioned document store and a run
//! recorder, with in-memory implementations. The adapter crates implement
//! the same traits on disk and in SQLite.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use async_trait::async_trait;
use evolution_types::{
    DiagnosisResult, EvolutionResult, Prediction, RunLog, RunLogError, StoreError, TraceStep,
};
use serde::{Deserialize, Serialize};

use crate::runner::QuestionOutcome;

/// One entry of a store's history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VersionInfo {
    /// The version's id.
    pub version: String,
    /// The version it was derived from (`None` for the first).
    pub parent: Option<String>,
    /// Why it was written (for example the gate evidence of an accept).
    pub message: String,
}

/// A store of immutable document versions with a movable "current" pointer.
pub trait VersionedStore: Send + Sync {
    /// The current version's id.
    ///
    /// # Errors
    /// A backend failure.
    fn current_version(&self) -> Result<String, StoreError>;

    /// Every document of `version`.
    ///
    /// # Errors
    /// [`StoreError::NotFound`] for an unknown version; a backend failure.
    fn documents(&self, version: &str) -> Result<BTreeMap<String, String>, StoreError>;

    /// Writes a new version: the current documents with `writes` applied,
    /// makes it current, and returns its id. All or nothing.
    ///
    /// # Errors
    /// [`StoreError::InvalidName`] for a bad document name; a backend failure.
    fn advance(
        &self,
        writes: &BTreeMap<String, String>,
        message: &str,
    ) -> Result<String, StoreError>;

    /// Makes an earlier version current again (its history entry stays).
    ///
    /// # Errors
    /// [`StoreError::NotFound`] for an unknown version; a backend failure.
    fn rollback(&self, to: &str) -> Result<(), StoreError>;

    /// Every version ever written, oldest first.
    ///
    /// # Errors
    /// A backend failure.
    fn history(&self) -> Result<Vec<VersionInfo>, StoreError>;
}

#[derive(Debug, Default)]
struct StoreState {
    versions: Vec<(VersionInfo, BTreeMap<String, String>)>,
    current: usize,
}

/// An in-memory [`VersionedStore`]; versions are named `v1`, `v2`, ….
#[derive(Debug)]
pub struct MemoryVersionedStore {
    state: Mutex<StoreState>,
}

impl MemoryVersionedStore {
    /// A store whose first version `v1` holds `documents`.
    pub fn new(documents: BTreeMap<String, String>) -> Self {
        let info = VersionInfo {
            version: "v1".to_owned(),
            parent: None,
            message: "initial".to_owned(),
        };
        MemoryVersionedStore {
            state: Mutex::new(StoreState {
                versions: vec![(info, documents)],
                current: 0,
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, StoreState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn find(state: &StoreState, version: &str) -> Result<usize, StoreError> {
        state
            .versions
            .iter()
            .position(|(info, _)| info.version == version)
            .ok_or_else(|| StoreError::NotFound {
                name: version.to_owned(),
            })
    }
}

impl VersionedStore for MemoryVersionedStore {
    fn current_version(&self) -> Result<String, StoreError> {
        let state = self.lock();
        state
            .versions
            .get(state.current)
            .map(|(info, _)| info.version.clone())
            .ok_or_else(|| StoreError::Corrupt {
                message: "current version missing".to_owned(),
            })
    }

    fn documents(&self, version: &str) -> Result<BTreeMap<String, String>, StoreError> {
        let state = self.lock();
        let index = MemoryVersionedStore::find(&state, version)?;
        Ok(state
            .versions
            .get(index)
            .map(|(_, docs)| docs.clone())
            .unwrap_or_default())
    }

    fn advance(
        &self,
        writes: &BTreeMap<String, String>,
        message: &str,
    ) -> Result<String, StoreError> {
        for name in writes.keys() {
            if name.is_empty() || name.contains(['/', '\\', '\0']) || name == "." || name == ".." {
                return Err(StoreError::InvalidName {
                    name: name.clone(),
                    reason: "not a plain file name".to_owned(),
                });
            }
        }
        let mut state = self.lock();
        let (parent, mut docs) = state
            .versions
            .get(state.current)
            .map(|(info, docs)| (info.version.clone(), docs.clone()))
            .ok_or_else(|| StoreError::Corrupt {
                message: "current version missing".to_owned(),
            })?;
        docs.extend(writes.iter().map(|(k, v)| (k.clone(), v.clone())));
        let version = format!("v{}", state.versions.len().saturating_add(1));
        state.versions.push((
            VersionInfo {
                version: version.clone(),
                parent: Some(parent),
                message: message.to_owned(),
            },
            docs,
        ));
        state.current = state.versions.len().saturating_sub(1);
        Ok(version)
    }

    fn rollback(&self, to: &str) -> Result<(), StoreError> {
        let mut state = self.lock();
        state.current = MemoryVersionedStore::find(&state, to)?;
        Ok(())
    }

    fn history(&self) -> Result<Vec<VersionInfo>, StoreError> {
        Ok(self
            .lock()
            .versions
            .iter()
            .map(|(info, _)| info.clone())
            .collect())
    }
}

/// Why the run recorder could not write.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RecordError {
    /// The backing storage failed.
    #[error("run recorder backend failed: {message}")]
    Backend {
        /// The underlying error, rendered.
        message: String,
    },
}

/// Write side of the run log: the outcomes of rollouts, and the diagnosis
/// and evolution results the loop made from them.
#[async_trait]
pub trait RunRecorder: Send + Sync {
    /// Records `outcomes` (predictions and traces). A question recorded
    /// again under the same run id replaces the earlier record.
    ///
    /// # Errors
    /// A backend failure; nothing of the batch is kept then.
    async fn record(&self, outcomes: &[QuestionOutcome]) -> Result<(), RecordError>;

    /// Stores a diagnosis under its `run_id` (a run already recorded). A
    /// result equal to one the run already holds is not stored again, so a
    /// resumed run that diagnoses again from the same evidence adds nothing.
    ///
    /// # Errors
    /// A backend failure (an unknown run included).
    async fn record_diagnosis(&self, diagnosis: &DiagnosisResult) -> Result<(), RecordError>;

    /// Stores evolution records under `result.run_id` (the run they were
    /// made from), with the same rule for an equal result.
    ///
    /// # Errors
    /// A backend failure (an unknown run included).
    async fn record_evolution(&self, result: &EvolutionResult) -> Result<(), RecordError>;
}

#[derive(Debug, Default)]
struct LogState {
    predictions: Vec<Prediction>,
    traces: Vec<TraceStep>,
    diagnoses: Vec<DiagnosisResult>,
    evolutions: Vec<EvolutionResult>,
}

/// An in-memory run log with both sides: [`RunRecorder`] to write and
/// [`RunLog`] to read.
#[derive(Debug, Default)]
pub struct MemoryRunRecorder {
    state: Mutex<LogState>,
}

impl MemoryRunRecorder {
    /// An empty log.
    pub fn new() -> Self {
        MemoryRunRecorder::default()
    }

    /// The ids of every run recorded, sorted.
    pub fn run_ids(&self) -> Vec<String> {
        let state = self.lock();
        let ids: std::collections::BTreeSet<_> =
            state.predictions.iter().map(|p| p.run_id.clone()).collect();
        ids.into_iter().collect()
    }

    /// The diagnoses stored under `run_id`, oldest first.
    pub fn diagnoses(&self, run_id: &str) -> Vec<DiagnosisResult> {
        let state = self.lock();
        state
            .diagnoses
            .iter()
            .filter(|d| d.run_id == run_id)
            .cloned()
            .collect()
    }

    /// The evolution results stored under `run_id`, oldest first.
    pub fn evolutions(&self, run_id: &str) -> Vec<EvolutionResult> {
        let state = self.lock();
        state
            .evolutions
            .iter()
            .filter(|e| e.run_id == run_id)
            .cloned()
            .collect()
    }

    fn lock(&self) -> MutexGuard<'_, LogState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn require_run(state: &LogState, run_id: &str) -> Result<(), RecordError> {
        if state.predictions.iter().any(|p| p.run_id == run_id) {
            Ok(())
        } else {
            Err(RecordError::Backend {
                message: format!("run {run_id:?} not found"),
            })
        }
    }
}

#[async_trait]
impl RunRecorder for MemoryRunRecorder {
    async fn record_diagnosis(&self, diagnosis: &DiagnosisResult) -> Result<(), RecordError> {
        let mut state = self.lock();
        MemoryRunRecorder::require_run(&state, &diagnosis.run_id)?;
        if !state.diagnoses.contains(diagnosis) {
            state.diagnoses.push(diagnosis.clone());
        }
        Ok(())
    }

    async fn record_evolution(&self, result: &EvolutionResult) -> Result<(), RecordError> {
        let mut state = self.lock();
        MemoryRunRecorder::require_run(&state, &result.run_id)?;
        if !state.evolutions.contains(result) {
            state.evolutions.push(result.clone());
        }
        Ok(())
    }

    async fn record(&self, outcomes: &[QuestionOutcome]) -> Result<(), RecordError> {
        let mut state = self.lock();
        for outcome in outcomes {
            let p = &outcome.prediction;
            state
                .predictions
                .retain(|old| !(old.run_id == p.run_id && old.question_id == p.question_id));
            state
                .traces
                .retain(|old| !(old.run_id == p.run_id && old.question_id == p.question_id));
            state.predictions.push(p.clone());
            state.traces.extend(outcome.trace.iter().cloned());
        }
        Ok(())
    }
}

fn wanted(ids: Option<&[String]>, id: &str) -> bool {
    ids.is_none_or(|ids| ids.iter().any(|i| i == id))
}

#[async_trait]
impl RunLog for MemoryRunRecorder {
    async fn get_predictions(
        &self,
        run_id: &str,
        question_ids: Option<&[String]>,
    ) -> Result<Vec<Prediction>, RunLogError> {
        let state = self.lock();
        if !state.predictions.iter().any(|p| p.run_id == run_id) {
            return Err(RunLogError::RunNotFound {
                run_id: run_id.to_owned(),
            });
        }
        Ok(state
            .predictions
            .iter()
            .filter(|p| p.run_id == run_id && wanted(question_ids, &p.question_id))
            .cloned()
            .collect())
    }

    async fn get_traces(
        &self,
        run_id: &str,
        question_ids: Option<&[String]>,
    ) -> Result<Vec<TraceStep>, RunLogError> {
        let state = self.lock();
        if !state.predictions.iter().any(|p| p.run_id == run_id) {
            return Err(RunLogError::RunNotFound {
                run_id: run_id.to_owned(),
            });
        }
        // Traces are stored question by question in step order already.
        Ok(state
            .traces
            .iter()
            .filter(|t| t.run_id == run_id && wanted(question_ids, &t.question_id))
            .cloned()
            .collect())
    }
}
