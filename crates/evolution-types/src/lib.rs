//! Every data type the evolution kernel shares, and the ports it talks through.
//!
//! The kernel decides and never writes: diagnosis and evolution take plain
//! values plus four read ports ([`SkillStore`], [`PromptStore`], [`RunLog`],
//! [`LlmProvider`]) and return values; the app layer persists them through
//! three write ports ([`VersionedStore`], [`RunRecorder`], [`Checkpoint`]),
//! which the adapter crates implement. (The gate is arithmetic on counts and
//! needs no port: its types live in `evolution-gate`, which depends on no
//! other crate of the workspace.) This crate holds those values and ports
//! and nothing else, so that any crate of the workspace, or a user's own
//! harness, can depend on it without pulling in I/O.
//!
//! Design choices: what the original Python kept in loose dicts becomes typed
//! structs with serde; string enums serialize to the reference implementation's snake_case
//! strings; records read from a run log keep unknown fields in a flattened
//! `extra` map so that a round trip loses nothing.

// The kernel performs no I/O: the calls clippy.toml lists are refused here.
#![cfg_attr(not(test), deny(clippy::disallowed_methods, clippy::disallowed_types))]
#![warn(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod diagnosis;
mod edit;
mod evolution;
mod ports;
mod profile;
mod records;
mod skill_file;
pub mod template;

pub use crate::diagnosis::{
    CaseMetrics, CaseSample, CauseCategory, ConfidenceCalibration, DiagnosisResult,
    ErrorAttribution, ErrorType, QuestionMetrics, SkillCasePack, SkillStepAdherence, SpanMetrics,
    SpanSample, Stats, SystemCasePack, ToolCasePack,
};
pub use crate::edit::{Edit, EditOp, EditReport, EditStatus, EditStatusKind};
pub use crate::evolution::{
    EvolutionRecord, EvolutionResult, EvolutionStatus, GATE_REJECTED_REASON, RejectedEdit,
    TargetType,
};
pub use crate::ports::checkpoint::{Checkpoint, CheckpointError};
pub use crate::ports::llm::{
    ChatMessage, ChatOptions, ChatRole, LlmError, LlmErrorClass, LlmErrorKind, LlmProvider,
    LlmResponse,
};
pub use crate::ports::recorder::{RecordError, RunRecorder};
pub use crate::ports::run_log::{RunLog, RunLogError};
pub use crate::ports::store::{PromptStore, SkillStore, StoreError};
pub use crate::ports::versioned::{VersionInfo, VersionedStore};
pub use crate::profile::Profile;
pub use crate::records::{
    GeneratedQuestion, INFRA_STOP_REASON, NOT_STARTED_STOP_REASON, Prediction, QuestionOutcome,
    TraceStep, is_infra_stop_reason,
};
pub use crate::skill_file::{
    DEFAULT_SKILL_FILE, MAX_SKILL_NAME_CHARS, resolve_skill_file, skill_file_for, skill_file_name,
    skill_name_from, skill_name_problem,
};

/// A JSON object: the map type used for free-form fields that must survive a
/// round trip unchanged.
pub type JsonMap = serde_json::Map<String, serde_json::Value>;
