//! The app layer of the evolution kernel: it runs agents, gates candidates
//! and keeps a whole run honest.
//!
//! The kernel crates decide; this crate orchestrates. It depends on kernel
//! crates only: every outside party sits behind a small trait with an
//! in-memory implementation. The agent ([`AgentRunner`]) and the progress
//! display ([`EventSink`]) are defined here; the write ports it persists
//! through — the versioned store ([`VersionedStore`]), the run log
//! ([`RunRecorder`]) and the checkpoint ([`Checkpoint`]) — are defined in
//! `evolution-types` (and re-exported here). The adapter crates implement
//! them for real (`evolution-store-fs`, `evolution-runlog-sqlite`),
//! `evolution-testkit` in memory; a front end such as `skill-evolve` wires
//! the adapters in.
//!
//! # Map
//!
//! - Agents: [`AgentRunner`], [`InProcessRunner`], [`SubprocessRunner`]
//!   (protocol below), [`Workspace`], [`QuestionOutcome`].
//! - Validation: [`validate_candidate`] runs block after
//!   block in a seed-fixed order ([`fixed_question_order`]) with a
//!   [`BaselineCache`], the INFRA guard and the gate's `Gate::decide`
//!   (how failures are scored: below);
//!   [`DataSplit`] and [`check_split`] keep a candidate's own evidence out
//!   of its gate; [`Gatekeeper`] gates a run's proposals one after another,
//!   advancing the [`VersionedStore`] on accept and starting a [`Probation`]
//!   on a provisional accept, judged on a pool of fresh questions
//!   ([`Probation::judge`]).
//! - The loop: [`run_evolution`] runs epochs of training rollouts →
//!   [`Proposer`] → [`Gatekeeper`] → blacklist → slow update (its guidance
//!   gated as a candidate like any other: nothing reaches the store
//!   ungated); a proposal that breaks a check of the project's preferences
//!   ([`LoopConfig::preferences`]) is dropped before its gate ([`DroppedProposal`]); stops after its epochs, on repeated edits or no improvement,
//!   or at a budget cap, and resumes from a [`Checkpoint`]
//!   (holding a [`LoopState`]) and the run log after a kill at any point.
//! - Error control over a run: [`ELond`] (online FDR with e-values) gives
//!   each proposal its threshold; [`params_for_level`] turns it into gate
//!   parameters.
//! - Budgets: [`Budget`] (calls, tokens, money, rollouts), [`MeteredLlm`],
//!   the pre-flight [`Estimate`].
//! - Slow update: [`slow_update`] writes long-term guidance into the
//!   skill's slow-update region, regressions first.
//! - Inputs: [`load_trajectory_dir`] and [`load_session_state`]
//!   with per-file [`IngestDiagnostic`]s; question sets ([`parse_question_set`],
//!   JSON array or JSON lines); [`PromptTemplates`], the kernel
//!   crates' built-in prompts plus the slow update's, overridable from a
//!   directory.
//! - Progress: [`HarnessEvent`] through an [`EventSink`]; the loop announces
//!   each [`Phase`] it enters ([`Phases`]), and the [`Budget`] charges its
//!   usage to that phase.
//! - The kernel: [`KernelProposer`] (diagnose → case packs → evolve every
//!   target).
//!
//! # Wiring a real run
//!
//! A front end (`skill-evolve run`) builds these and calls
//! [`run_evolution`]:
//!
//! ```text
//! store      = FsVersionedStore::new(FsStore::open(dir)?)        // VersionedStore (store-fs)
//! log        = SqliteRunLog::open(db)?                           // RunRecorder + RunLog (runlog-sqlite)
//! checkpoint = FileCheckpoint::new(state_json)                   // Checkpoint, atomic (store-fs)
//! llm        = LlmJournal::open(MeteredLlm::new(provider, budget),
//!                               run_dir, model).await?           // journaled (llm-cassette), metered
//! proposer   = KernelProposer { llm: &llm, run_log: &log, questions: train,
//!                               tree_data, templates, profile, diagnose, evolve,
//!                               schedule, companions }
//! validation = ValidationContext { runner, recorder: &log, budget, events,
//!                                  resume_from: Some(&log) }
//! ctx        = LoopContext { validation, store: &store, proposer: &proposer,
//!                            llm: &llm, checkpoint: &checkpoint, ledger: None }
//! keeper     = Gatekeeper::new(..)                               // per-candidate bounds
//!                  .with_fdr(ELond::new(0.05, GammaSequence::Horizon { proposals })?)
//! report     = run_evolution(ctx, &loop_config, keeper).await?  // run-wide FDR ≤ 0.05
//! ```
//!
//! Run it again with the same store, log, checkpoint and run directory
//! after a kill: it continues where it stopped, without repeating a
//! finished rollout (the run log answers) or a finished LLM call (the
//! `evolution-llm-cassette`'s `LlmJournal` answers, even for a proposal the
//! kill interrupted).
//!
//! # The subprocess protocol
//!
//! [`SubprocessRunner`] lets an agent written in any language plug in. For
//! each run it writes the workspace to a fresh temporary directory
//! (`skills/<name>` and `prompts/<name>`, plus each skill's folder of
//! [`SubprocessConfig::packages`] as `skills/<folder>/`), then talks to the agent program
//! over its stdin and stdout, one JSON object per line (UTF-8, `\n`):
//!
//! - request, harness → agent:
//!   `{"type":"question","run_id":"…","workspace":{"version":"v3","dir":"…","skills_dir":"…","prompts_dir":"…"},"question":{"question_id":"…","task_type":"…","question":"…",…}}`
//!   (every field of the question except the reference `answer`, which
//!   stays with the harness);
//! - zero or more trace steps, agent → harness:
//!   `{"type":"step","tool_name":"…","tool_input":…,"tool_output":"…","thought":"…","raw_content":"…"}`
//!   (`step` numbers are optional; they default to the position);
//! - exactly one result, agent → harness:
//!   `{"type":"result","prediction":"…","answer_confidence":0.8,"steps_used":3,"max_steps":15,"stop_reason":"submit"}`
//!   (every field optional; unknown fields are kept in the prediction).
//!
//! Step and result lines may carry `"question_id"`; a mismatch is a protocol
//! error. Stdout is reserved for the protocol: logs go to stderr, whose tail
//! is quoted in error messages. In [`ProcessMode::PerQuestion`] the program
//! gets one request and then end-of-file; in [`ProcessMode::Worker`] it gets
//! one request after another and should exit at end-of-file; idle workers
//! are kept for the runner's next run until [`SubprocessRunner::shutdown`].
//!
//! A crash, a hang past the per-question timeout, a non-JSON or unknown
//! line, a line over [`MAX_LINE_BYTES`] or not UTF-8, more trace steps or
//! output bytes than its [`OutputLimits`] allow, or an answer for
//! another question makes that question an INFRA error (`stop_reason =
//! "error"` with the reason in `error`), and so does a result that reports
//! an `error` or the stop reason `error`/`parse_error`; the child is killed
//! with what it started (its process group, and on Linux every process
//! carrying its token in [`AGENT_TREE_VAR`]) and the next question gets a
//! fresh one. A question whose request never
//! reached the agent (the program could not be started, or the request
//! could not be written to it) is marked `stop_reason = "not_started"`
//! instead ([`QuestionOutcome::not_started`]); an agent cannot claim that
//! stop reason for itself. The run goes on.
//!
//! # How failures are scored
//!
//! The gate compares the two versions question by question, and a failure
//! counts against the version that failed: a question on which only the
//! candidate's arm failed is a loss for the candidate, whatever the baseline
//! answered, and one on which only the baseline's arm failed is a win
//! ([`evolution_gate::score_pair`]: `failed < wrong < right`). The harness
//! cannot tell a failure the documents under test caused ("stop with an
//! error when unsure", an instruction that makes the agent loop until its
//! timeout) from bad luck, and a caused one is evidence against the
//! candidate: left out of the comparison, it would let a candidate pass by
//! turning the questions it would lose into failures. Failures that are not
//! caused by either version fall on both arms alike, so they cost the gate
//! power, not validity. Only a question both arms failed, or one the agent
//! never started on, is left out; when more than `gate_guard_err` of the
//! questions reached are left out (from [`INFRA_GUARD_MIN_QUESTIONS`] on),
//! or none could be paired, the candidate is rejected with
//! `GateDecision::RejectInfra` (`reject_infra`) and the run goes on with the
//! next one. Probation ([`Probation::judge`]) scores its questions the same
//! way. The baseline cache keeps no failure, so a baseline failure is run
//! again for the next candidate. The
//! harness scores answers itself ([`Scoring::ExactMatch`]) unless told to
//! trust the agent's own `correct` field. The agent inherits this
//! program's environment minus the names [`InheritedEnv::AllExcept`] lists,
//! or only the names [`InheritedEnv::Only`] lists, plus
//! [`SubprocessConfig::env`]. `src/bin/rule-agent.rs` is a complete
//! reference agent.

#![warn(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod agent_tree;
mod baseline_cache;
mod budget;
mod calibration;
mod check;
mod data_split;
mod events;
mod evolution;
pub mod failpoint;
mod failures;
mod fdr;
mod gatekeeper;
mod ingest;
mod kernel;
mod ledger;
mod package;
mod phase;
mod probation;
mod question_set;
mod repeat;
mod reply_schemas;
mod runner;
mod screen;
mod slow_update;
mod subprocess;
mod templates;
mod validate;
mod workspace_dir;

pub use crate::budget::{
    Budget, BudgetError, BudgetExceeded, BudgetLimits, Estimate, MeteredLlm, Price, RunPlan, Usage,
};
pub use crate::calibration::{
    Calibration, DESIGN_DISCORDANCE_STEP, DiscordanceTally, MEASURED_DISCORDANCE_MIN_QUESTIONS,
    MIN_DESIGN_DISCORDANCE, POOL_WIN_RATE, PoolCheck, design_discordance, pool_boundary,
};
pub use crate::check::{AnswerCheck, CHECK_KEY, CheckError, REFUSAL_OPENINGS};
pub use crate::events::{Arm, EventLog, EventSink, HarnessEvent, NoEvents, Phases};
pub use crate::evolution::{
    DroppedProposal, EvolutionReport, LoopConfig, LoopContext, LoopError, LoopState, PendingGate,
    Proposal, Proposals, ProposeError, ProposeRequest, Proposer, SLOW_UPDATE_LABEL, StopReason,
    run_evolution, scoped_questions,
};
pub use crate::failures::{
    FailureCount, JUDGE_ERROR_KEY, MIN_FAILURES_TO_STOP, MIN_FAILURES_UNDER_WAY, PhaseFailures,
    is_failure, judge_error,
};
pub use crate::fdr::{
    CLOSURE_MAX_DISCOVERIES, ELond, FdrDecision, FdrError, GammaSequence, LedgerBudget,
    LedgerLevel, LedgerSpent, TestLevel,
};
pub use crate::gatekeeper::{GateRecord, Gatekeeper};
pub use crate::ingest::{
    FailureRules, FailureSignal, IngestDiagnostic, IngestError, Ingested,
    MAX_TRAJECTORY_FILE_BYTES, REQUIRED_TRAJECTORY_FIELDS, load_session_state, load_trajectory_dir,
    parse_session_state, parse_trajectories,
};
pub use crate::kernel::KernelProposer;
pub use crate::ledger::{LedgerError, LedgerOutcome, LedgerTest, TestLedger};
pub use crate::package::{PackageFile, SkillPackage, package_path_problem};
pub use crate::phase::Phase;
pub use crate::repeat::{
    AgentNoise, AutoAnswers, MAX_ANSWERS_PER_QUESTION, RepeatedQuestions, repeat_id,
    repeat_questions,
};
pub use crate::screen::{SCREEN_RUN_MARKER, ScreenOutcome, ScreenRule};

pub use crate::probation::{Probation, ProbationOutcome};
pub use crate::question_set::{QuestionSetError, parse_question_set};
pub use crate::reply_schemas::{WithReplySchemas, kernel_reply_schema};
pub use crate::runner::{
    AgentReply, AgentRunner, InProcessRunner, OutputLimits, RunnerError, Scoring, Workspace,
};
// The ports and records the loop writes through, defined in `evolution-types`.
pub use crate::data_split::DataSplit;
pub use crate::slow_update::{
    ComparisonPair, IMPROVED, PAIRS_PER_QUADRANT, PERSISTENT_FAIL, REGRESSED, STABLE_SUCCESS,
    SlowUpdate, SlowUpdateError, slow_update,
};
pub use crate::subprocess::{
    AGENT_TREE_VAR, InheritedEnv, MAX_LINE_BYTES, ProcessMode, SubprocessConfig, SubprocessRunner,
};
pub use crate::templates::{
    MAX_TEMPLATE_BYTES, PromptTemplates, SLOW_UPDATE, TemplateError, all_templates,
    reads_legacy_syntax, template_spec,
};
pub use crate::validate::{
    BaselineCache, Candidate, GATE_RUN_MARKER, GatePoint, INFRA_GUARD_MIN_QUESTIONS,
    ValidationConfig, ValidationContext, ValidationError, ValidationOutcome, check_split,
    fixed_question_order, params_for_level, validate_candidate,
};
pub use evolution_types::{
    Checkpoint, CheckpointError, INFRA_STOP_REASON, NOT_STARTED_STOP_REASON, QuestionOutcome,
    RecordError, RunRecorder, VersionInfo, VersionedStore,
};
