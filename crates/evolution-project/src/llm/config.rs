//! Where the LLM's settings come from: the `skill-evolve.toml` found near the command's
//! inputs (or named), its `[llm]` and `[profile]` sections, and the provider and API-key
//! variable they choose, read before anything is built.

use std::path::{Path, PathBuf};

use evolution_types::Profile;
use serde::Deserialize;

use super::{DEFAULT_CONFIG, FileConfig, LlmOptions, LlmSection, Provider};
use crate::error::{bad_at, line_of};
use crate::input::{InputKind, read_input_text};

pub(crate) fn read_file_config(
    explicit: Option<&Path>,
    near: &[&Path],
) -> anyhow::Result<(FileConfig, Option<PathBuf>)> {
    Ok(match load_file_config(explicit, near)? {
        Some((config, path, _)) => (config, Some(path)),
        None => (FileConfig::default(), None),
    })
}

/// The nearest `skill-evolve.toml`: in the folder of each path of `near`
/// (a file's folder, or the folder itself) or a folder above it, then in the
/// current folder or a folder above it.
pub fn find_config(near: &[&Path]) -> Option<PathBuf> {
    let cwd = std::env::current_dir().ok();
    let starts = near
        .iter()
        .filter_map(|p| std::path::absolute(p).ok())
        .map(|p| {
            if p.is_dir() {
                p
            } else {
                p.parent().map(Path::to_path_buf).unwrap_or(p)
            }
        })
        .chain(cwd);
    for start in starts {
        if let Some(found) = start
            .ancestors()
            .map(|dir| dir.join(DEFAULT_CONFIG))
            .find(|candidate| candidate.is_file())
        {
            return Some(found);
        }
    }
    None
}

/// The configuration file (`explicit`, else the one [`find_config`] finds),
/// parsed, with its path and text.
fn load_file_config(
    explicit: Option<&Path>,
    near: &[&Path],
) -> anyhow::Result<Option<(FileConfig, PathBuf, String)>> {
    let path = match explicit {
        Some(path) => path.to_path_buf(),
        None => match find_config(near) {
            Some(found) => found,
            None => {
                tracing::info!("configuration: no {DEFAULT_CONFIG} found, none read");
                return Ok(None);
            }
        },
    };
    tracing::info!(
        "configuration: {}",
        crate::render::terminal_safe(&path.display().to_string())
    );
    let text = read_input_text(&path, InputKind::Config)?;
    let config: FileConfig = toml::from_str(&text).map_err(|e| {
        let line = e.span().map(|span| line_of(&text, span.start));
        bad_at(&path, line, e.message().to_owned())
    })?;
    Ok(Some((config, path, text)))
}

/// The provider `args` and the configuration's `section` (read from `config_path`) choose,
/// and whether one was chosen at all (else the OpenAI-compatible default).
pub(crate) fn provider_choice(
    args: &LlmOptions,
    section: &LlmSection,
    config_path: Option<&Path>,
) -> anyhow::Result<(Provider, bool)> {
    Ok(match (&args.provider, &section.provider) {
        (Some(p), _) => (*p, true),
        (None, Some(spanned)) => (
            parse_provider(spanned, config_path.unwrap_or(Path::new("")))?,
            true,
        ),
        (None, None) if args.cassette.is_some() || section.cassette.is_some() => {
            (Provider::Replay, true)
        }
        (None, None) => (Provider::Openai, false),
    })
}

/// The provider the options `args` and the configuration file found from `near` choose,
/// before anything is built (a command that needs a folder for the `handoff` provider
/// chooses it by this).
///
/// # Errors
/// A configuration file that cannot be read, or an unknown provider in it.
pub fn chosen_provider(args: &LlmOptions, near: &[&Path]) -> anyhow::Result<Provider> {
    let (file, path) = read_file_config(args.config.as_deref(), near)?;
    Ok(provider_choice(args, &file.llm, path.as_deref())?.0)
}

/// The environment variable a run of the run configuration at `path` reads its LLM's API key
/// from (its `[llm]` section: `[llm.openai] api_key_env`, else the usual variable of its
/// `base_url`), `None` when its model needs no key (a replay, the embedded model, a handoff).
///
/// # Errors
/// A configuration that cannot be read, whose `[llm]` section is not one, or whose
/// OpenAI-compatible model names no key variable that can be known.
pub fn run_key_variable(path: &Path) -> anyhow::Result<Option<String>> {
    /// A run configuration's `[llm]`, its other sections left to `run`.
    #[derive(Deserialize)]
    struct LlmOnly {
        #[serde(default)]
        llm: LlmSection,
    }
    let text = read_input_text(path, InputKind::Config)?;
    let LlmOnly { llm: section } = toml::from_str(&text)
        .map_err(|e| bad_at(path, None, format!("not a run configuration: {e}")))?;
    let (provider, _) = provider_choice(&LlmOptions::default(), &section, Some(path))?;
    if provider != Provider::Openai {
        return Ok(None);
    }
    section.key_variable(None).map(Some).ok_or_else(|| {
        bad_at(
            path,
            None,
            "[llm.openai] names neither api_key_env nor a base_url whose key variable is known",
        )
    })
}

/// The `[llm]` table of the run configuration at `path`, when it has one (`evolve
/// --agent-config` asks its model there, as `run` does).
///
/// # Errors
/// A configuration that cannot be read, or whose `[llm]` is not one.
pub fn run_llm_section(path: &Path) -> anyhow::Result<Option<LlmSection>> {
    /// A run configuration's `[llm]`, its other sections left to `run`.
    #[derive(Deserialize)]
    struct LlmOnly {
        #[serde(default)]
        llm: Option<LlmSection>,
    }
    let text = read_input_text(path, InputKind::Config)?;
    let LlmOnly { llm } = toml::from_str(&text)
        .map_err(|e| bad_at(path, None, format!("not a run configuration: {e}")))?;
    Ok(llm)
}

impl LlmSection {
    /// The provider the options `args` and this section (read from `path`) choose.
    ///
    /// # Errors
    /// An unknown provider in the section.
    pub fn provider(&self, args: &LlmOptions, path: &Path) -> anyhow::Result<Provider> {
        Ok(provider_choice(args, self, Some(path))?.0)
    }
}

/// The name of the environment variable holding the API key of the LLM
/// `args` configure (`--api-key-env`, else `[llm.openai] api_key_env` of the
/// configuration file found from `near`, else the usual variable the key is
/// read from without one), when there is one: an agent run beside this LLM
/// must not inherit it.
pub fn api_key_variable(args: &LlmOptions, near: &[&Path]) -> anyhow::Result<Option<String>> {
    let (file, _) = read_file_config(args.config.as_deref(), near)?;
    Ok(file.llm.key_variable(Some(args)))
}

/// The agent's profile from the configuration's `[profile]` table
/// (domain-neutral without a file or a table); every problem is one line
/// naming the file, the line and the key.
pub fn read_profile(explicit: Option<&Path>, near: &[&Path]) -> anyhow::Result<Profile> {
    match load_file_config(explicit, near)? {
        Some((config, path, text)) => config.profile.resolve(&path, &text),
        None => Ok(Profile::neutral()),
    }
}

fn parse_provider(spanned: &toml::Spanned<String>, path: &Path) -> anyhow::Result<Provider> {
    match spanned.get_ref().as_str() {
        "openai" => Ok(Provider::Openai),
        "local" => Ok(Provider::Local),
        "replay" => Ok(Provider::Replay),
        "handoff" => Ok(Provider::Handoff),
        "claude-code" => Ok(Provider::ClaudeCode),
        "codex" => Ok(Provider::Codex),
        other => {
            let text = read_input_text(path, InputKind::Config).unwrap_or_default();
            Err(bad_at(
                path,
                Some(line_of(&text, spanned.span().start)),
                format!(
                    "unknown provider {other:?}: expected \"openai\", \"local\", \"replay\", \
                     \"handoff\", \"claude-code\" or \"codex\""
                ),
            ))
        }
    }
}
