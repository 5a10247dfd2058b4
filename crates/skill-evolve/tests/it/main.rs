//! End-to-end tests: they run the built `skill-evolve` binary.

mod adopt;
mod adopt_safety;
mod agent_protocol;
mod bad_input;
mod capture;
mod claude_plugin;
mod crash;
mod diagnose;
mod docs;
mod doctor;
mod error_control;
mod escapes;
mod evolve;
mod evolve_gated;
mod failure_scoring;
mod fake_llm;
#[cfg(feature = "local")]
mod fetch_model;
mod gate;
mod gate_reach;
mod gate_scope;
mod handoff;
mod harvest;
mod hook;
mod host_agents;
mod host_journey;
mod host_model;
mod hostile_outputs;
mod infra_stop;
mod init;
mod inputs;
mod journal;
mod llm_setup;
#[cfg(feature = "local")]
mod local;
mod pipes;
mod probes;
mod profile;
mod replay_miss;
mod report_html;
mod resume;
mod run;
mod run_fresh;
mod run_ids;
mod run_knobs;
mod runlogs;
mod schedule;
mod secrets;
mod suggestions;
mod suite;
mod support;
mod tasks;
#[cfg(unix)]
mod terminal;
mod verbose;
mod working_copy;
