//! An in-memory run log: both the read port and the write port.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Mutex, MutexGuard};

use async_trait::async_trait;
use evolution_types::{
    DiagnosisResult, EvolutionResult, Prediction, QuestionOutcome, RecordError, RunLog,
    RunLogError, RunRecorder, TraceStep,
};

#[derive(Debug, Default)]
struct State {
    predictions: Vec<Prediction>,
    traces: Vec<TraceStep>,
    diagnoses: Vec<DiagnosisResult>,
    evolutions: Vec<EvolutionResult>,
    failure: Option<RunLogError>,
}

/// A run log over in-memory vectors, with both sides: [`RunLog`] to read
/// and [`RunRecorder`] to write.
///
/// Predictions come back in insertion order; traces in the order their
/// questions were first inserted, then by step. A run id with no records is
/// [`RunLogError::RunNotFound`]. [`MemoryRunLog::fail_with`] makes every
/// later query fail, to test error paths. Recording a question again under
/// the same run id replaces its prediction and trace; a diagnosis or
/// evolution result equal to one its run already holds is not stored again.
#[derive(Debug, Default)]
pub struct MemoryRunLog {
    state: Mutex<State>,
}

impl MemoryRunLog {
    /// An empty run log.
    pub fn new() -> Self {
        MemoryRunLog::default()
    }

    /// Adds predictions.
    pub fn insert_predictions(&self, predictions: impl IntoIterator<Item = Prediction>) {
        self.lock().predictions.extend(predictions);
    }

    /// Adds trace steps.
    pub fn insert_traces(&self, traces: impl IntoIterator<Item = TraceStep>) {
        self.lock().traces.extend(traces);
    }

    /// The ids of every run with a prediction, sorted.
    pub fn run_ids(&self) -> Vec<String> {
        let state = self.lock();
        let ids: BTreeSet<_> = state.predictions.iter().map(|p| p.run_id.clone()).collect();
        ids.into_iter().collect()
    }

    /// The diagnoses recorded under `run_id`, oldest first.
    pub fn diagnoses(&self, run_id: &str) -> Vec<DiagnosisResult> {
        let state = self.lock();
        state
            .diagnoses
            .iter()
            .filter(|d| d.run_id == run_id)
            .cloned()
            .collect()
    }

    /// The evolution results recorded under `run_id`, oldest first.
    pub fn evolutions(&self, run_id: &str) -> Vec<EvolutionResult> {
        let state = self.lock();
        state
            .evolutions
            .iter()
            .filter(|e| e.run_id == run_id)
            .cloned()
            .collect()
    }

    /// Makes every later query fail with `error`.
    pub fn fail_with(&self, error: RunLogError) {
        self.lock().failure = Some(error);
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn check(state: &State, run_id: &str) -> Result<(), RunLogError> {
        if let Some(error) = &state.failure {
            return Err(error.clone());
        }
        let known = state.predictions.iter().any(|p| p.run_id == run_id)
            || state.traces.iter().any(|t| t.run_id == run_id);
        if known {
            Ok(())
        } else {
            Err(RunLogError::RunNotFound {
                run_id: run_id.to_owned(),
            })
        }
    }
}

fn require_run(state: &State, run_id: &str) -> Result<(), RecordError> {
    if state.predictions.iter().any(|p| p.run_id == run_id) {
        Ok(())
    } else {
        Err(RecordError::RunNotFound {
            run_id: run_id.to_owned(),
        })
    }
}

#[async_trait]
impl RunRecorder for MemoryRunLog {
    async fn record(&self, outcomes: &[QuestionOutcome]) -> Result<(), RecordError> {
        let mut state = self.lock();
        for outcome in outcomes {
            let p = &outcome.prediction;
            let same = |run_id: &str, question_id: &str| {
                run_id == p.run_id && question_id == p.question_id
            };
            state
                .predictions
                .retain(|old| !same(&old.run_id, &old.question_id));
            state
                .traces
                .retain(|old| !same(&old.run_id, &old.question_id));
            state.predictions.push(p.clone());
            state.traces.extend(outcome.trace.iter().cloned());
        }
        Ok(())
    }

    async fn record_diagnosis(&self, diagnosis: &DiagnosisResult) -> Result<(), RecordError> {
        let mut state = self.lock();
        require_run(&state, &diagnosis.run_id)?;
        if !state.diagnoses.contains(diagnosis) {
            state.diagnoses.push(diagnosis.clone());
        }
        Ok(())
    }

    async fn record_evolution(&self, result: &EvolutionResult) -> Result<(), RecordError> {
        let mut state = self.lock();
        require_run(&state, &result.run_id)?;
        if !state.evolutions.contains(result) {
            state.evolutions.push(result.clone());
        }
        Ok(())
    }
}

fn wanted(question_ids: Option<&[String]>, question_id: &str) -> bool {
    question_ids.is_none_or(|ids| ids.iter().any(|id| id == question_id))
}

#[async_trait]
impl RunLog for MemoryRunLog {
    async fn get_predictions(
        &self,
        run_id: &str,
        question_ids: Option<&[String]>,
    ) -> Result<Vec<Prediction>, RunLogError> {
        let state = self.lock();
        MemoryRunLog::check(&state, run_id)?;
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
        MemoryRunLog::check(&state, run_id)?;
        // Rank each question by its first appearance, then sort once: O(n log n).
        let mut first_seen: HashMap<&str, usize> = HashMap::new();
        let mut steps: Vec<TraceStep> = state
            .traces
            .iter()
            .filter(|t| t.run_id == run_id && wanted(question_ids, &t.question_id))
            .inspect(|t| {
                let next = first_seen.len();
                first_seen.entry(t.question_id.as_str()).or_insert(next);
            })
            .cloned()
            .collect();
        steps.sort_by_key(|t| (first_seen.get(t.question_id.as_str()).copied(), t.step));
        Ok(steps)
    }
}
