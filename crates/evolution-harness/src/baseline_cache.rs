//! The baseline arm's answers, kept per version so each question is asked of a version once.

use std::collections::BTreeMap;

use evolution_types::Prediction;
use serde::{Deserialize, Serialize};

use crate::runner::is_infra_stop;

/// Baseline results by (baseline version, question id), so the baseline arm
/// of a version runs each question once however many candidates it faces.
/// INFRA failures are not cached: they are retried next time.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct BaselineCache {
    entries: BTreeMap<String, BTreeMap<String, Prediction>>,
}

impl BaselineCache {
    /// An empty cache.
    pub fn new() -> Self {
        BaselineCache::default()
    }

    /// The cached prediction of `question_id` under `version`.
    pub fn get(&self, version: &str, question_id: &str) -> Option<&Prediction> {
        self.entries.get(version)?.get(question_id)
    }

    /// Caches `prediction` (not an INFRA failure) for `version`; returns whether it was kept.
    pub fn insert(&mut self, version: &str, prediction: Prediction) -> bool {
        if is_infra_stop(&prediction.stop_reason) || prediction.error.is_some() {
            return false;
        }
        self.entries
            .entry(version.to_owned())
            .or_default()
            .insert(prediction.question_id.clone(), prediction);
        true
    }

    /// Cached entries over all versions.
    pub fn len(&self) -> usize {
        self.entries.values().map(BTreeMap::len).sum()
    }

    /// True when nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
