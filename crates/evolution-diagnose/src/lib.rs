//! Two-stage diagnosis of an agent run: turns predictions and traces into
//! failure attributions and the case packs that evolution consumes.
//!
//! **Stage 1**, per question: seven rule metrics (pure functions of the
//! prediction and trace, [`rules::extract_rule_metrics`]) and five LLM judges
//! (span, missed nodes, skill adherence, confirmation bias, evidence
//! sufficiency; [`judges::compute_question_metrics`]); then, for wrong answers, the
//! attribution waterfall ([`attribution::attribute_error`]: extraction → search →
//! reasoning → mixed) and the defect-vs-lapse classifier, with a reasoning
//! failure's sub-classification made at the same time (it needs only the
//! attribution). **Stage 2** is pure logic: the
//! statistics of [`stats`] (per tool, per task type, skill adherence,
//! behaviour) and the skill, system and tool case packs of [`packs`].
//! [`Diagnoser::run`] runs it all over one run; the building blocks live in
//! the named modules [`rules`], [`judges`], [`attribution`], [`stats`],
//! [`packs`] and [`json`]. A front end that shows progress gives the
//! diagnoser a [`DiagnoseProgress`] observer, told of each pass and of every
//! judged item; the kernel itself prints nothing.
//!
//! Key design choice: the kernel decides and never writes. Inputs come
//! through the ports (`RunLog`, `SkillStore`, `LlmProvider`) and plain
//! values; the result is a [`evolution_types::DiagnosisResult`] value. Every
//! domain constant (span-judged tools, tool → prompt files, the level
//! pattern, INFRA stop reasons, the pattern threshold, confidence
//! thresholds) comes from [`evolution_types::Profile`]:
//! `Profile::video_qa()` is the reference implementation's, the default
//! (`Profile::neutral()`) names no tool, and then no span is judged, the
//! missed-nodes judge is not asked, and the visit and search metrics are
//! `None` (not computed) rather than 0; [`rules::check_profile`] checks a
//! profile before use. Concurrency is bounded by the caller: at
//! most `concurrency` LLM calls are in flight at once, across questions and
//! the judges of one question, so wall time tracks
//! `calls × latency / concurrency`.
//!
//! # Prompt templates
//!
//! [`DiagnosePrompts`] holds the templates; [`DiagnosePrompts::builtin`] (also
//! its `Default`) are this crate's own, the markdown files of its `prompts/`
//! folder, and [`DiagnosePrompts::TEMPLATES`] declares the placeholders each
//! may use, so that a caller can check its overrides. A placeholder is
//! `{{name}}` (the workspace's one template syntax,
//! [`evolution_types::template`]); known names are replaced in one pass and
//! everything else, JSON examples included, is kept verbatim. Every judge sees:
//!
//! | placeholder | value |
//! |---|---|
//! | `{{question_id}}`, `{{task_type}}` | from the prediction |
//! | `{{question}}`, `{{answer}}` | question text and reference answer |
//! | `{{prediction}}`, `{{correct}}` | the agent's answer, `true`/`false` |
//! | `{{trace}}` | the trace, thought cut to 100 and tool output to 200 characters (cuts marked `…[N more chars]`); untruncated for `defect_vs_lapse` and `reasoning_sub` |
//! | `{{tool_outputs}}` | every output of a span-judged tool, untruncated |
//! | `{{visited_nodes}}` | node ids the visit tool opened, comma-separated |
//! | `{{tree}}` | the source's tree (`tree_data[video_id]`) as pretty JSON |
//! | `{{skill}}` | the skill file that serves the task type |
//!
//! The span judge (`span_eval_system` as system message, `span_eval_user` as
//! user message) also gets `{{step}}`, `{{tool_name}}`, `{{tool_input}}`,
//! `{{tool_output}}` (untruncated) and `{{thought}}`; `defect_vs_lapse` and
//! `reasoning_sub` also get `{{error_type}}` and `{{evidence}}`. Other judges
//! send their rendered template as one user message.
//!
//! # What each judge must reply
//!
//! A JSON object, fenced or bare, possibly malformed (see below):
//!
//! | judge | reply | when a field is missing |
//! |---|---|---|
//! | span | `{"extraction_completeness": 0..1, "hallucination_rate": 0..1, "missed_info_tags": [..], "hallucination_tags": [..]}` | scores 0.0, tags `[]`; scores are clamped to `[0, 1]` |
//! | missed nodes | `{"missed_nodes": ["node id", ..]}` | `[]` |
//! | skill adherence | `{"steps": [{"step": "..", "followed": bool, "reason": ".."}], "adherence_rate": 0..1}` | rate = share of followed steps, else the given rate, else none |
//! | confirmation bias | `{"confirmation_bias": bool}` | unusable reply (retried) |
//! | evidence sufficiency | `{"evidence_sufficient": bool}` | unusable reply (retried) |
//! | defect vs lapse | `{"category": "defect" \| "lapse", "lapse_note": ".."}` | unusable reply; after 3 attempts: lapse without note |
//! | reasoning sub-type | `{"type": ".."}` | none; a blank type is `other` |
//! | rubric ([`rubric`]) | `{"passed": bool, "reason": ".."}` | unusable reply (retried); `passed` must be a JSON boolean |
//!
//! [`reply_schema`] gives each reply above as a JSON Schema keyed by the request tag
//! (`judge.<name>`), for providers that can decode under one; the requests carry none.
//!
//! Booleans may also be `"yes"`/`"no"`, `"true"`/`"false"` or 1/0.
//! [`judges::call_judge`] makes 3 attempts; only unusable replies (and provider
//! errors of class `Content`) are retried, other provider errors pass
//! through. A question whose judges stay unusable is *degraded*: its rule
//! metrics are kept, judge fields are empty, `degraded = true`, and a wrong
//! degraded answer is attributed `mixed` without a defect/lapse call.
//!
//! # JSON from LLMs
//!
//! [`json::extract_json_from_response`] takes a reply that is one JSON object as a whole as
//! it is (its strings may quote think tags or fences); otherwise it drops
//! `<think>…</think>` blocks, then tries
//! a fenced block, the outermost braces, and a repair parser of our own
//! (missing/doubled/single/typographic quotes, unquoted keys and values,
//! missing commas and colons, trailing commas, comments, Python literals,
//! tuples, truncation, and full-width `：，｛｝［］` used as punctuation while
//! full-width text inside strings is kept). Only objects count; an object
//! repaired to no member is a failure. Nothing in it can panic.
//!
//! # Choices where the reference implementation is silent
//!
//! - `calc_budget_usage` with a budget of 0 is 0.0 with no step used, else 1.0.
//! - A node id is the visit tool's `node_id` input, a query the search tool's `query` input.
//! - Span quality is `completeness × (1 − hallucination)`; the soft score is its mean.
//! - An early submit is a wrong answer with budget usage below 0.3.
//! - Severity within an error type, success counts of the system and tool
//!   packs: see [`packs::severity`], [`packs::build_system_case_pack`],
//!   [`packs::build_tool_case_packs`].
//! - A reasoning failure is sub-classified beside its defect-vs-lapse call, not in a serial
//!   pass after Stage 1 as in the reference implementation: the call's inputs are the same, so
//!   are the results, and a provider that hands requests off asks for both in one round.

// The kernel performs no I/O: the calls clippy.toml lists are refused here.
#![cfg_attr(not(test), deny(clippy::disallowed_methods, clippy::disallowed_types))]
#![warn(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

pub mod attribution;
mod error;
pub mod json;
pub mod judges;
pub mod packs;
mod pipeline;
mod progress;
mod prompts;
pub mod rubric;
pub mod rules;
mod schema;
pub mod stats;

pub use crate::error::{DiagnoseError, JudgeError};
pub use crate::pipeline::{DiagnoseOptions, Diagnoser, JudgeScope};
pub use crate::progress::{DiagnosePass, DiagnoseProgress};
pub use crate::prompts::DiagnosePrompts;
pub use crate::rules::check_profile;
pub use crate::schema::{REPLY_SCHEMA_TAGS, reply_schema};
