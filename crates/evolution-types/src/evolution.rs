//! Types of the evolution engine.

use serde::{Deserialize, Serialize};

use crate::{Edit, EditReport, JsonMap};

/// Which kind of document an evolution targets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TargetType {
    /// A skill file (`*.md` with frontmatter).
    Skill,
    /// The system prompt.
    System,
    /// A tool's extract/verify prompt pair.
    Tool,
}

/// Outcome of one evolution attempt; the record's `reason` says why.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EvolutionStatus {
    /// A changed candidate passed structural validation (the gate decides next).
    Accepted,
    /// Every attempt failed validation or produced no applicable edit.
    Rejected,
    /// Nothing to do (no evidence, or the LLM proposed nothing).
    Skipped,
}

/// The record of evolving one target. Built up step by step, hence mutable.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvolutionRecord {
    /// The evolved file (for tools, the tool name's extract file).
    pub target_file: String,
    /// The kind of target.
    pub target_type: TargetType,
    /// The document before.
    pub original_content: String,
    /// The candidate document. For tools: JSON `{"extract": .., "verify": ..}`.
    pub evolved_content: String,
    /// Why the record has its status.
    pub reason: String,
    /// Accepted, rejected or skipped.
    pub status: EvolutionStatus,
    /// Store version the original was read from.
    pub source_version: String,
    /// Free-form suggestions the LLM made alongside its edits.
    #[serde(default)]
    pub suggestions: Vec<serde_json::Value>,
    /// The edits that were applied (after rank-and-clip).
    #[serde(default)]
    pub edits: Vec<Edit>,
    /// One report entry per applied edit.
    #[serde(default)]
    pub apply_report: Vec<EditReport>,
    /// What rank-and-clip did (counts, ranking, fallback).
    #[serde(default)]
    pub clip_info: JsonMap,
    /// Every failed validation check of the last attempt, readable.
    #[serde(default)]
    pub validation_errors: Vec<String>,
    /// LLM calls made to produce this record.
    #[serde(default)]
    pub llm_calls: u32,
    /// Store version the candidate was written as, once the app wrote it.
    #[serde(default)]
    pub result_version: Option<String>,
}

impl EvolutionRecord {
    /// A record with no edits yet, holding `original` as both contents.
    pub fn new(
        target_file: impl Into<String>,
        target_type: TargetType,
        original: impl Into<String>,
        source_version: impl Into<String>,
    ) -> Self {
        let original = original.into();
        EvolutionRecord {
            target_file: target_file.into(),
            target_type,
            evolved_content: original.clone(),
            original_content: original,
            reason: String::new(),
            status: EvolutionStatus::Skipped,
            source_version: source_version.into(),
            suggestions: Vec::new(),
            edits: Vec::new(),
            apply_report: Vec::new(),
            clip_info: JsonMap::new(),
            validation_errors: Vec::new(),
            llm_calls: 0,
            result_version: None,
        }
    }
}

/// The reason a blacklisted edit gives when the gate rejected it: the whole of what a
/// proposer is told about that test.
///
/// Every candidate of a run is tested on the same gate questions, so a proposer told how
/// close a rejected candidate came (its wins, losses, e-value, δ̂, the decision's name or
/// which questions it lost) could refine it towards the gate questions' noise and wear down
/// the run's error bound. The gate's figures stay in the gate's own records, for the user.
pub const GATE_REJECTED_REASON: &str = "rejected by the gate";

/// A blacklisted edit, fed back to later evolve prompts so that it is not proposed again.
///
/// It carries no gate outcome: an edit the gate rejected says [`GATE_REJECTED_REASON`] and
/// nothing more. Records saved when it also held the gate's counts (`gate_w`, `gate_l`,
/// `gate_e`, `gate_delta_hat`) still load: those fields are ignored, and a reason the gate
/// wrote then (`gate: <decision> (W=…, L=…, E=…)`) loads as [`GATE_REJECTED_REASON`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RejectedEdit {
    /// The file the edit was for.
    pub target_file: String,
    /// The edit.
    pub edit: Edit,
    /// Why it was rejected (for a gate reject, [`GATE_REJECTED_REASON`]).
    #[serde(deserialize_with = "blind_reason")]
    pub reason: String,
    /// Version the edit was proposed against.
    #[serde(default)]
    pub source_version: String,
}

/// The prefix of the reasons the gate wrote into saved records before they went blind.
const SAVED_GATE_PREFIX: &str = "gate:";
/// The one saved gate reason that told no outcome: the candidate was never tested.
const SAVED_NOT_TESTED_PREFIX: &str = "gate: not tested";

/// A saved reason as a proposer may read it: a gate reason that told the gate's outcome
/// becomes [`GATE_REJECTED_REASON`]; every other reason is kept.
fn blind_reason<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    let reason = String::deserialize(deserializer)?;
    if reason.starts_with(SAVED_GATE_PREFIX) && !reason.starts_with(SAVED_NOT_TESTED_PREFIX) {
        Ok(GATE_REJECTED_REASON.to_owned())
    } else {
        Ok(reason)
    }
}

/// Aggregate output of one evolution round, assembled by the app layer.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct EvolutionResult {
    /// The run the evidence came from.
    pub run_id: String,
    /// The version every record started from.
    pub source_version: String,
    /// One record per target.
    pub records: Vec<EvolutionRecord>,
}
