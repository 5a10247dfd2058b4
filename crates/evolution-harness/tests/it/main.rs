//! Public-API tests of the harness.

mod adapters;
mod blind;
mod budget;
mod evolution;
mod failures;
mod gatekeeper;
mod ingest;
mod journal;
mod kernel;
mod persist;
mod preferences;
mod prompts;
mod repeats;
mod reply_schemas;
mod runner;
mod schema_replies;
mod slow_update;
mod subprocess;
mod support;
mod templates;
mod validate;
