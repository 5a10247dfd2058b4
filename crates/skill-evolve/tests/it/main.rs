//! End-to-end tests: they run the built `skill-evolve` binary.

mod adopt;
mod agent_protocol;
mod bad_input;
mod diagnose;
mod doctor;
mod error_control;
mod escapes;
mod evolve;
mod fake_llm;
mod gate;
mod init;
mod inputs;
mod journal;
#[cfg(feature = "local")]
mod local;
mod pipes;
mod profile;
mod resume;
mod run;
mod secrets;
mod support;
#[cfg(unix)]
mod terminal;
mod working_copy;
