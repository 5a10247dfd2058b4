//! Which model a session asks: the flags and `skill-evolve.toml`, or, for a gated session
//! whose `--agent-config` file has an `[llm]` table (and no `--config` names another file),
//! that table, as `run` reads it.

use std::path::{Path, PathBuf};

use evolution_project::llm::{
    Llm, LlmOptions, LlmSection, LlmSource, Provider, api_key_variable, build_llm, build_llm_from,
    chosen_provider, run_llm_section,
};

use crate::cli::EvolveArgs;

/// The model's settings of a session: the run configuration's `[llm]` with its path, when
/// the session reads it.
pub(super) struct SessionModel {
    run_llm: Option<(LlmSection, PathBuf)>,
}

impl SessionModel {
    /// The settings `args` choose (the `--agent-config` file is read here).
    pub(super) fn of(args: &EvolveArgs, options: &LlmOptions) -> anyhow::Result<Self> {
        let run_llm = match (&args.agent_config, &options.config) {
            (Some(path), None) => run_llm_section(path)?.map(|section| (section, path.clone())),
            _ => None,
        };
        Ok(SessionModel { run_llm })
    }

    /// Whether the `handoff` provider answers (a file that cannot be read says no here and
    /// is reported where the model is built).
    pub(super) fn is_handoff(&self, options: &LlmOptions, skill: &Path) -> bool {
        match &self.run_llm {
            Some((section, path)) => section.provider(options, path),
            None => chosen_provider(options, &[skill]),
        }
        .is_ok_and(|p| p == Provider::Handoff)
    }

    /// The variable holding the model's API key, which the agent must not inherit.
    pub(super) fn key_variable(
        &self,
        options: &LlmOptions,
        skill: &Path,
    ) -> anyhow::Result<Option<String>> {
        match &self.run_llm {
            Some((section, _)) => Ok(section.key_variable(Some(options))),
            None => api_key_variable(options, &[skill]),
        }
    }

    /// Builds the model.
    pub(super) async fn build(&self, options: &LlmOptions, skill: &Path) -> anyhow::Result<Llm> {
        match &self.run_llm {
            Some((section, path)) => {
                build_llm_from(options, section, Some(path.clone()), LlmSource::RunConfig).await
            }
            None => build_llm(options, &[skill]).await,
        }
    }
}
