//! Record and replay for any [`LlmProvider`](evolution_types::LlmProvider):
//! a JSONL cassette keyed by a SHA-256 of the request, and a run's journal
//! of finished LLM calls built on it.
//!
//! [`Recorder`] wraps a provider. In [`CassetteMode::Record`] it calls the
//! provider and writes every answer; in [`CassetteMode::Replay`] it answers
//! only from the cassette and never calls the provider, so a run can be
//! replayed offline and deterministically; in
//! [`CassetteMode::RecordIfMissing`] it does both. Keys ([`cassette_key`])
//! cover the model, the messages and the options, not the tag or the
//! timeout. Each recorded call is synced to disk before it returns; in
//! `RecordIfMissing` mode a torn last line is dropped on reopen (replay
//! refuses such a file with [`CassetteError::TornLine`]) and identical concurrent requests reach the provider once, so the cassette
//! also serves as a killed run's journal of finished calls: that is
//! [`LlmJournal`], one file in a run's directory. [`Handoff`] answers from a file someone else
//! wrote, handing each unanswered request off to be answered outside (no API key needed).
//! [`MeasuredSpeed`] reads how fast the recorded calls were answered.
//!
//! ```no_run
//! use evolution_llm_cassette::{CassetteMode, Recorder};
//! use evolution_types::{ChatMessage, ChatOptions, LlmProvider};
//!
//! # async fn demo(provider: impl LlmProvider) -> Result<(), Box<dyn std::error::Error>> {
//! let llm = Recorder::open(provider, "run.cassette.jsonl", CassetteMode::RecordIfMissing, "deepseek-chat").await?;
//! let reply = llm
//!     .chat(&[ChatMessage::user("Say hi")], &ChatOptions::default().with_tag("demo"))
//!     .await?;
//! println!("{} (from the cassette: {})", reply.content, reply.cache_hit);
//! # Ok(())
//! # }
//! ```

#![warn(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod entry;
pub mod handoff;
mod journal;
mod miss;
mod private;
mod replay;
mod speed;

pub use crate::entry::cassette_key;
pub use crate::handoff::{AnsweredRequest, Handoff, HandoffError, HandoffFiles};
pub use crate::journal::{LLM_JOURNAL_FILE, LlmJournal};
pub use crate::replay::{CassetteError, CassetteMode, Recorder};
pub use crate::speed::{MeasuredSpeed, answered_by};
