//! Candidate generation of the evolution kernel: turns diagnosis case packs
//! into validated candidate documents — skills, the system prompt, tool
//! prompts — by asking an LLM for small edits and applying them with the
//! patch engine.
//!
//! Key design choice: the LLM only ever *proposes*. Every proposal goes
//! through the same funnel — parse, clip to the edit budget, apply with
//! protected regions, validate structurally — and a failure at any stage is
//! fed back to the LLM as a new chat turn (at most two rounds) instead of
//! being raised. Only provider failures (transient or permanent) and store
//! failures are errors, and they leave nothing half-applied: the
//! [`Evolver`]'s methods (`skill`, `system_prompt`, `tool`) return an
//! [`EvolutionRecord`](evolution_types::EvolutionRecord) value and never
//! write anywhere.
//!
//! # Prompt templates
//!
//! [`EvolvePrompts::builtin`] (also its `Default`) are this crate's own
//! templates, the markdown files of its `prompts/` folder;
//! [`EvolvePrompts::TEMPLATES`] declares the placeholders each may use. They use
//! `{{name}}` placeholders (the workspace's one template engine,
//! [`evolution_types::template`]): one pass, values inserted
//! verbatim and never re-scanned, unknown names left as they are. Each
//! template is sent as a single user message (except `consolidate_system`,
//! sent as the system message). Placeholders per template:
//!
//! | template | placeholders |
//! |---|---|
//! | `evolve_skill` | `task_type`, `target_file`, `skill_content`, `stats`, `failure_cases`, `success_cases`, `lapse_notes`, `rejected_edits`, `edit_budget`, `preferences` |
//! | `evolve_system` | `system_prompt`, `frozen_sections`, `stats`, `failure_cases`, `success_cases`, `rejected_edits`, `edit_budget`, `preferences` |
//! | `evolve_tool` | `tool_name`, `extract_file`, `extract_prompt`, `verify_file`, `verify_prompt`, `frozen_section`, `stats`, `failure_spans`, `success_spans`, `rejected_edits`, `edit_budget`, `preferences` |
//! | `evolve_rank` | `document`, `edits`, `n_edits`, `max_edits`, `preferences` |
//! | `consolidate_system` | `count`, `notes`, `preferences` |
//! | `evolve_rewrite` | `document`, `suggestions`, `max_chars`, `preferences` |
//!
//! `stats` is pretty JSON; case and span lists are rendered by
//! [`format::format_case_samples`] and [`format::format_spans`] (tool outputs cut to 500
//! characters); `rejected_edits` by [`format::format_rejected_edits`]; an unlimited
//! budget reads `unlimited`. `preferences` is the project's house rules
//! ([`EvolvePrompts::preferences`], from [`preferences::Preferences::prompt_section`]): empty
//! without them, and appended to a template that does not use the placeholder (an override
//! written before it existed), so every proposal prompt carries them.
//!
//! # JSON contract of the replies
//!
//! Replies are read by [`parse_llm_json`]: the whole reply, or a `` ```json `` fenced block,
//! must be one JSON object; the readers of [`replies`] then check its fields, and a reply they
//! refuse is reported as unreadable with its request's tag (in a record's reason, a ranking's
//! or a consolidation's fallback), never as a reply that proposed nothing. Fields:
//!
//! - `evolve_skill`, `evolve_system`:
//!   `{"suggestions": [any JSON, …], "edits": [{"op": "append" | "insert_after" | "replace" | "delete", "target": "…", "content": "…"}, …]}`.
//!   `edits` is required (an empty list means "nothing to change");
//!   `suggestions` is optional. Extra fields of an edit (a `reason`, say) are kept.
//! - `evolve_tool`: `{"suggestions": […], "extract_edits": [edit, …], "verify_edits": [edit, …]}`;
//!   at least one of the two edit lists is required.
//! - `evolve_rank`: `{"ranking": [0-based index, …]}`, most important first;
//!   only integers within range count, each once.
//! - `consolidate_system`: `{"notes": ["…", …]}`, fewer notes than given.
//! - `evolve_rewrite`: `{"rewritten": "<the whole new document>"}`, no longer
//!   than the original.
//!
//! [`reply_schema`] gives each of these contracts as a JSON Schema, keyed by the request's tag
//! (`evolve.skill`, `evolve.system`, `evolve.tool`, `evolve.rank`, `evolve.consolidate`,
//! `evolve.rewrite`), for providers that can decode under one. The requests themselves carry
//! no schema: a provider wrapper attaches them where the provider supports it.
//!
//! When a round fails, the next turn appends the model's reply and one of
//! three feedback messages ([`feedback::FEEDBACK_INVALID_JSON`],
//! [`feedback::FEEDBACK_NOT_APPLIED`], [`feedback::FEEDBACK_INVALID_CANDIDATE`], each followed by details): the reply was not valid JSON of
//! that shape; no edit could be applied (each edit's status listed, e.g. a
//! target that does not occur or lies in a protected region); or the
//! candidate failed validation (every failed check listed).
//!
//! # LLM calls per branch
//!
//! `k` is 1 when the skill's appendix (existing plus new lapse notes)
//! reaches `consolidate_threshold` notes, would take more than `consolidate_chars`
//! characters or would overflow its limit, and there are at least two notes, else 0.
//!
//! | branch | best | worst |
//! |---|---|---|
//! | empty pack (any target) | 0 | 0 |
//! | skill A, lapse notes only (no failure cases) | 0 + k | 0 + k |
//! | skill B, rewrite | 1 + k (no edits proposed) | 2 + k |
//! | skill C, patch (A takes over when C yields nothing) | 1 + k | 4 + k (two rounds × (evolve + rank)) |
//! | system prompt | 1 | 4 |
//! | tool prompts, per extract/verify pair | 1 | 4 |
//!
//! A rank call happens only when a round proposes more edits than the budget.
//!
//! # Building blocks
//!
//! The [`Evolver`] is the front door; the steps it is made of are public in
//! their own modules, for callers that compose their own loop:
//! [`budget`] (edit budget per step), [`rank`] (clip a proposal to the budget),
//! [`validate`] (structural checks of a candidate), [`aggregate`] (merge the
//! patches of several reflections), [`consolidate`] (merge appendix notes),
//! [`rewrite`] (whole-document rewrite), [`format`](mod@format) (the text blocks the
//! prompts are filled with), [`replies`] (the reader of each reply), [`feedback`] (the
//! messages of a failed round) and [`preferences`] (a project's house rules: the text every
//! proposal prompt carries, and the checks a candidate is held to).
//! [`reflect`] is a second loop built from them: reflect → meta-reflect on one
//! skill from its failure trajectories, with its own templates
//! ([`reflect::ReflectPrompts`]); `skill-evolve evolve` runs it.

// The kernel performs no I/O: the calls clippy.toml lists are refused here.
#![cfg_attr(not(test), deny(clippy::disallowed_methods, clippy::disallowed_types))]
#![warn(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

pub mod aggregate;
pub mod budget;
pub mod consolidate;
mod error;
mod evolve;
mod evolver;
pub mod format;
mod json;
pub mod preferences;
mod prompts;
pub mod rank;
pub mod reflect;
pub mod replies;
pub mod rewrite;
mod schema;
pub mod validate;

/// The feedback turns of a patch round: when a round's reply cannot be used,
/// the next turn appends the model's reply and one of these messages,
/// followed by the details, at most [`PATCH_ROUNDS`](feedback::PATCH_ROUNDS) rounds in all.
pub mod feedback {
    pub use crate::evolve::{
        FEEDBACK_INVALID_CANDIDATE, FEEDBACK_INVALID_JSON, FEEDBACK_NOT_APPLIED, PATCH_ROUNDS,
    };
}

pub use crate::budget::EditBudgetSchedule;
pub use crate::error::{BudgetError, EvolveError};
pub use crate::evolve::{EvolveOptions, SkillUpdateMode, ToolPromptPair, tool_prompt_pairs};
pub use crate::evolver::Evolver;
pub use crate::json::parse_llm_json;
pub use crate::prompts::EvolvePrompts;
pub use crate::schema::{REPLY_SCHEMA_TAGS, reply_schema};

/// The `extra` key that marks which file a pooled tool edit belongs to.
pub(crate) const SOURCE_TAG: &str = "_src";
