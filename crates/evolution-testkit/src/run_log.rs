//! An in-memory run log.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use async_trait::async_trait;
use evolution_types::{Prediction, RunLog, RunLogError, TraceStep};

#[derive(Debug, Default)]
struct State {
    predictions: Vec<Prediction>,
    traces: Vec<TraceStep>,
    failure: Option<RunLogError>,
}

/// A [`RunLog`] over in-memory vectors.
///
/// Predictions come back in insertion order; traces in the order their
/// questions were first inserted, then by step. A run id with no records is
/// [`RunLogError::RunNotFound`]. [`MemoryRunLog::fail_with`] makes every
/// later query fail, to test error paths.
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
