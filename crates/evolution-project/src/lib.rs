//! The operations a user runs on a project of skills, for every front end: the
//! `skill-evolve` command, the Python module and the MCP server call these and add only
//! their own flags, output and prompts.
//!
//! - [`run`]: load and check a run configuration ([`run::config::load`]), its pre-flight
//!   estimate, and the run itself with an observer of its progress
//!   ([`run::events::RunObserver`]); [`run::stage`] keeps what a run proposes and where each
//!   document came from, for adopt;
//! - [`agent_workspace`]: the documents an agent reads and the gate questions of each
//!   skill, alike for `run` and a gated `evolve`; [`skill_package`]: a skill's whole folder
//!   (references, scripts, assets) given to the agent beside them;
//! - [`adopt`]: a run's staged documents written to the user's files once confirmed;
//! - [`status`]: the runs of a project and what each staged;
//! - [`ledger`]: the project's ledger of gate tests per skill file, kept across runs;
//! - [`harvest`]: real agent sessions into trajectories and mined tasks; [`session_log`]: the
//!   finished sessions a host's hook recorded for it; [`rollout`]: where the host-agent
//!   adapter's replays run and how they are marked, so that neither counts them;
//! - [`report_html`]: the HTML report of a run or an `evolve` session;
//! - [`evolve`]: the parts of an `evolve` session that are not the terminal's;
//! - [`llm`]: the LLM configuration (`skill-evolve.toml`, a run's `[llm]`) into a provider;
//! - [`layout`], [`profile`], [`questions`], [`input`]: the user's files, read and checked;
//!   [`preferences`]: a project's house rules (the `preferences` file), found and read;
//! - [`error`]: the bad-input contract (one line naming the file, the line and the problem);
//! - [`skill_store`]: the version store beside a skill, and writing a new version;
//! - [`render`], [`working_copy`], [`probe`]: diffs and escaping, atomic writes, folder checks.
//!
//! Errors are `anyhow::Error`; one that holds an [`error::BadInput`] is the user's input at
//! fault (nothing was written), anything else a failure of the run.

pub mod adopt;
pub mod agent_workspace;
pub mod error;
pub mod evolve;
pub mod harvest;
pub mod host_check;
pub mod input;
pub mod layout;
pub mod ledger;
pub mod llm;
mod llm_log;
#[cfg(feature = "local")]
pub mod local;
pub mod preferences;
pub mod probe;
pub mod profile;
pub mod questions;
pub mod render;
pub mod report_html;
pub mod rollout;
pub mod run;
pub mod session_log;
pub mod skill_package;
pub mod skill_store;
pub mod status;
pub mod working_copy;

/// The project's own folder, beside the skills: stores, runs and staged proposals.
pub const STATE_DIR: &str = ".skill-evolve";
