//! In-memory implementations of the write ports the loop needs (a
//! versioned document store and a run recorder). The adapter crates
//! implement the same ports on disk and in SQLite.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use async_trait::async_trait;
use evolution_types::{
    DiagnosisResult, EvolutionResult, Prediction, QuestionOutcome, RecordError, RunLog,
    RunLogError, RunRecorder, StoreError, TraceStep, VersionInfo, VersionedStore,
};

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
            Err(RecordError::RunNotFound {
                run_id: run_id.to_owned(),
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
