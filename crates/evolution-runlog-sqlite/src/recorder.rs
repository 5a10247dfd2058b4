//! The run log's write port: [`RunRecorder`] on [`SqliteRunLog`].

use std::collections::BTreeMap;

use async_trait::async_trait;
use evolution_types::{
    DiagnosisResult, EvolutionResult, Prediction, QuestionOutcome, RecordError, RunRecorder,
    TraceStep,
};

use crate::log::SqliteRunLog;

/// Records each run's outcomes with [`SqliteRunLog::replace_outcomes`]: one
/// transaction per run id, the run created on first use, a question
/// recorded again replacing its earlier prediction and trace. Diagnoses and
/// evolution results go to [`SqliteRunLog::store_diagnosis`] and
/// [`SqliteRunLog::store_evolution`] (read back with
/// [`SqliteRunLog::diagnoses`] and [`SqliteRunLog::evolutions`]), unless the
/// run already holds an equal one. The same
/// value is the kernel's [`evolution_types::RunLog`] (read back on resume,
/// and by diagnosis).
#[async_trait]
impl RunRecorder for SqliteRunLog {
    async fn record(&self, outcomes: &[QuestionOutcome]) -> Result<(), RecordError> {
        let mut by_run: BTreeMap<&str, (Vec<Prediction>, Vec<TraceStep>)> = BTreeMap::new();
        for outcome in outcomes {
            let entry = by_run
                .entry(outcome.prediction.run_id.as_str())
                .or_default();
            entry.0.push(outcome.prediction.clone());
            entry.1.extend(outcome.trace.iter().cloned());
        }
        for (run_id, (predictions, steps)) in by_run {
            self.replace_outcomes(run_id, predictions, steps)
                .await
                .map_err(|e| RecordError::Backend {
                    message: e.to_string(),
                })?;
        }
        Ok(())
    }

    async fn record_diagnosis(&self, diagnosis: &DiagnosisResult) -> Result<(), RecordError> {
        let stored = self.diagnoses(&diagnosis.run_id).await.map_err(backend)?;
        if !stored.contains(diagnosis) {
            self.store_diagnosis(diagnosis).await.map_err(backend)?;
        }
        Ok(())
    }

    async fn record_evolution(&self, result: &EvolutionResult) -> Result<(), RecordError> {
        let stored = self.evolutions(&result.run_id).await.map_err(backend)?;
        if !stored.contains(result) {
            self.store_evolution(result).await.map_err(backend)?;
        }
        Ok(())
    }
}

fn backend(error: impl std::fmt::Display) -> RecordError {
    RecordError::Backend {
        message: error.to_string(),
    }
}
