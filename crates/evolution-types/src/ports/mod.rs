//! The ports through which the kernel and the app layer reach the outside
//! world.
//!
//! The kernel only reads: [`crate::SkillStore`], [`crate::PromptStore`],
//! [`crate::RunLog`] and [`crate::LlmProvider`]. It returns results and the
//! app layer persists them through the write ports: [`crate::VersionedStore`]
//! (new versions, rollbacks), [`crate::RunRecorder`] (rollouts, diagnoses,
//! evolution results) and [`crate::Checkpoint`] (where a run resumes from).
//! Adapter crates implement them on real storage; stores and checkpoints are
//! synchronous (small, fast operations), the run log and the LLM are async.

pub(crate) mod checkpoint;
pub(crate) mod llm;
pub(crate) mod recorder;
pub(crate) mod run_log;
pub(crate) mod store;
pub(crate) mod versioned;
