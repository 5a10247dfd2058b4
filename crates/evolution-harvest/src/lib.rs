//! Harvesting agent sessions into trajectories, without I/O: the record parsers of Claude Code
//! transcripts ([`claude_code`]) and Codex rollout files ([`codex`]), fed one line at a time;
//! the readers of Gemini CLI chats ([`gemini`]), OpenCode's and Cursor's stored rows
//! ([`opencode`], [`cursor`]) and GitHub Copilot's VS Code chat sessions and CLI events
//! ([`copilot`]);
//! secret redaction ([`redact`]); explicit outcomes ([`outcome`]); what the user said next
//! (requests repeated after an answer, replies that open with a correction: [`corrections`]),
//! the follow-up judge's prompt and reply ([`followup`]); failure signals with their
//! reasons ([`signals`]); the trajectory object `skill-evolve evolve` reads ([`trajectory`]);
//! recurring tasks mined from sessions into a question set to review ([`tasks`]), and an
//! LLM's variants of the reviewed ones ([`variants`]);
//! and one rollout's result in that same format ([`capture`]).
//!
//! Key design choice: a session is judged by what happened in it (tool errors, interrupted
//! turns, refused tool calls, the user asking again after an answer), by an outcome it states
//! in a field of its own (`Outcome: failed`), or by how the user's next message opens ("no,
//! …", "still failing"), never by words that occur anywhere in its text, so a successful
//! session whose text says "fixed the error" is not a failure. And every text a reader keeps is redacted
//! before it is capped, so no secret, whole or cut, leaves through a harvested file or a
//! prompt built from one.
//!
//! ```
//! use evolution_harvest::claude_code::ClaudeCodeReader;
//! use evolution_harvest::session::TextPolicy;
//! use evolution_harvest::signals::{HarvestRules, judge};
//! use evolution_harvest::trajectory::to_trajectory;
//!
//! let mut reader = ClaudeCodeReader::new("s1", TextPolicy::default());
//! let lines = [
//!     r#"{"type":"user","message":{"content":"deploy with key sk-ant-api03-AbCdEfGhIjKlMnOpQrStUv"}}"#,
//!     r#"{"type":"user","message":{"content":[{"type":"text","text":"[Request interrupted by user]"}]}}"#,
//! ];
//! for (i, line) in lines.iter().enumerate() {
//!     reader.push_line(i + 1, line).unwrap();
//! }
//! let (session, _) = reader.finish();
//! let verdict = judge(&session, &HarvestRules::default());
//! let trajectory = to_trajectory(&session, &verdict);
//! assert_eq!(trajectory["question"], "deploy with key [REDACTED:anthropic_key]");
//! assert_eq!(trajectory["fail_reason"], "the user interrupted 1 turn");
//! ```

// The kernel performs no I/O: the calls clippy.toml lists are refused here.
#![cfg_attr(not(test), deny(clippy::disallowed_methods, clippy::disallowed_types))]
#![warn(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

pub mod capture;
pub mod claude_code;
pub mod codex;
pub mod copilot;
mod copilot_history;
pub mod correction_check;
mod correction_cues;
pub mod corrections;
pub mod cursor;
pub mod followup;
pub mod gemini;
pub mod host_tools;
pub mod limits;
pub mod opencode;
pub mod outcome;
pub mod redact;
pub mod session;
pub mod signals;
pub mod task_file;
pub mod tasks;
pub mod trajectory;
pub mod variants;
