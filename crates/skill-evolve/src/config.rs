//! LLM configuration: `skill-evolve.toml`, environment variables and flags
//! (in rising order of precedence), turned into one provider.
//!
//! ```toml
//! [llm]
//! provider = "openai"          # openai | local | replay
//! cassette = "run.cassette"    # for replay, relative to this file
//!
//! [llm.openai]                 # any field of evolution-llm-openai's OpenAiConfig
//! base_url = "https://api.deepseek.com/v1"
//! model = "deepseek-chat"
//! api_key_env = "DEEPSEEK_API_KEY"
//!
//! [profile]                    # the agent's tool names and thresholds (see `profile.rs`)
//! span_eval_tools = ["lookup_order"]
//! ```

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use evolution_llm_cassette::{CassetteError, CassetteMode, Recorder};
use evolution_llm_openai::{ConfigError, OpenAiConfig, OpenAiProvider};
use evolution_types::{
    ChatMessage, ChatOptions, LlmError, LlmErrorKind, LlmProvider, LlmResponse, Profile,
};
use serde::Deserialize;

use crate::cli::{LlmArgs, ProviderArg};
use crate::error::{bad_at, bad_option, line_of};
use crate::input::{InputKind, check_input, read_input_text};
use crate::profile::ProfileSection;

/// The file read when `--config` is not given and it exists.
pub(crate) const DEFAULT_CONFIG: &str = "skill-evolve.toml";

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    #[serde(default)]
    llm: LlmSection,
    #[serde(default)]
    profile: ProfileSection,
}

/// The `[llm]` section, shared by `skill-evolve.toml` and a run configuration.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct LlmSection {
    provider: Option<toml::Spanned<String>>,
    cassette: Option<PathBuf>,
    #[serde(default)]
    pub(crate) openai: toml::Table,
    /// `[llm.local]`: the embedded model's settings (see `local.rs`).
    #[serde(default)]
    #[cfg_attr(not(feature = "local"), allow(dead_code))]
    pub(crate) local: toml::Table,
}

/// The provider a command talks to, and a one-line description for the user.
pub(crate) struct Llm {
    /// The provider (wrapped in a recorder when `--record` is given).
    pub(crate) provider: Arc<dyn LlmProvider>,
    /// `openai deepseek-chat at https://…`, `replay of run.cassette`, …
    pub(crate) description: String,
}

/// Reads the configuration and builds the provider. Every problem is a bad
/// input (exit 2) found before any call is made.
pub(crate) async fn build_llm(args: &LlmArgs) -> anyhow::Result<Llm> {
    let (file, config_path) = read_file_config(args.config.as_deref())?;
    build_llm_from(args, &file.llm, config_path).await
}

/// Builds the provider from an `[llm]` section read from `config_path`
/// (paths in it are relative to that file), with `args` taking precedence.
pub(crate) async fn build_llm_from(
    args: &LlmArgs,
    section: &LlmSection,
    config_path: Option<PathBuf>,
) -> anyhow::Result<Llm> {
    let file = FileConfig {
        llm: section.clone(),
        profile: ProfileSection::default(),
    };
    let base_dir = config_path
        .as_deref()
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let provider = match (&args.provider, &file.llm.provider) {
        (Some(p), _) => *p,
        (None, Some(spanned)) => {
            parse_provider(spanned, config_path.as_deref().unwrap_or(Path::new("")))?
        }
        (None, None) if args.cassette.is_some() || file.llm.cassette.is_some() => {
            ProviderArg::Replay
        }
        (None, None) => ProviderArg::Openai,
    };
    let mut openai = file.llm.openai.clone();
    for (key, value) in [
        ("base_url", &args.base_url),
        ("model", &args.model),
        ("api_key_env", &args.api_key_env),
    ] {
        if let Some(value) = value {
            openai.insert(key.to_owned(), toml::Value::String(value.clone()));
        }
    }
    match provider {
        #[cfg(feature = "local")]
        ProviderArg::Local => {
            let (live, description, model) =
                crate::local::local_provider(&file.llm.local, config_path.as_deref()).await?;
            with_recording(live, description, args.record.as_deref(), model).await
        }
        #[cfg(not(feature = "local"))]
        ProviderArg::Local => Err(bad_option(
            "provider `local` (the embedded model) is not in this build: rebuild skill-evolve \
             with its default `local` feature, or use `--provider openai` with any \
             OpenAI-compatible server (a local llama.cpp or Ollama server works offline)",
        )),
        ProviderArg::Openai => {
            let config = openai_config(openai, config_path.as_deref())?;
            if let Some(var) = &config.api_key_env
                && !is_variable_name(var)
            {
                // Quoting it would print the key to anyone who passed the key itself.
                return Err(bad_option(
                    "api_key_env must be the name of the environment variable that holds the \
                     key (letters, digits and _, such as OPENAI_API_KEY); the value given is \
                     not such a name, and is not shown in case it is the key itself",
                ));
            }
            let description = format!("openai {} at {}", config.model, config.base_url);
            let model = config.model.clone();
            let live = OpenAiProvider::new(config).map_err(|e| match e {
                ConfigError::MissingApiKey { var } => bad_option(format!(
                    "environment variable {var} (api_key_env) is not set: export your API key \
                     there, or set api_key_env to the variable that holds it"
                )),
                other => bad_option(other.to_string()),
            })?;
            with_recording(Arc::new(live), description, args.record.as_deref(), model).await
        }
        ProviderArg::Replay => {
            if args.record.is_some() {
                return Err(bad_option(
                    "--record needs a live provider; a replay answers from its cassette only",
                ));
            }
            let cassette = match (&args.cassette, &file.llm.cassette) {
                (Some(path), _) => path.clone(),
                (None, Some(path)) => base_dir.join(path),
                (None, None) => {
                    return Err(bad_option(
                        "provider `replay` needs a cassette: --cassette FILE, \
                         SKILL_EVOLVE_CASSETTE or [llm] cassette in skill-evolve.toml",
                    ));
                }
            };
            let model = match openai.get("model").and_then(toml::Value::as_str) {
                Some(model) => model.to_owned(),
                None => cassette_model(&cassette)?,
            };
            // The recorder reads the file itself: checked first, so a pipe never blocks it
            // (a missing file is left to the recorder, which says what a cassette is).
            if cassette.exists() {
                check_input(&cassette, InputKind::Cassette)?;
            }
            let recorder = Recorder::open(NoLiveProvider, &cassette, CassetteMode::Replay, &model)
                .await
                .map_err(cassette_error)?;
            Ok(Llm {
                provider: Arc::new(recorder),
                description: format!("replay of {} (model {model})", cassette.display()),
            })
        }
    }
}

/// The live provider, behind a recorder writing to `record` when one is given.
async fn with_recording(
    live: Arc<dyn LlmProvider>,
    description: String,
    record: Option<&Path>,
    model: String,
) -> anyhow::Result<Llm> {
    match record {
        Some(path) => {
            let recorder = Recorder::open(live, path, CassetteMode::Record, model)
                .await
                .map_err(cassette_error)?;
            Ok(Llm {
                provider: Arc::new(recorder),
                description: format!("{description}, recording to {}", path.display()),
            })
        }
        None => Ok(Llm {
            provider: live,
            description,
        }),
    }
}

fn read_file_config(explicit: Option<&Path>) -> anyhow::Result<(FileConfig, Option<PathBuf>)> {
    Ok(match load_file_config(explicit)? {
        Some((config, path, _)) => (config, Some(path)),
        None => (FileConfig::default(), None),
    })
}

/// The configuration file (`explicit`, else `skill-evolve.toml` when it
/// exists), parsed, with its path and text.
fn load_file_config(
    explicit: Option<&Path>,
) -> anyhow::Result<Option<(FileConfig, PathBuf, String)>> {
    let path = match explicit {
        Some(path) => path.to_path_buf(),
        None => {
            let default = PathBuf::from(DEFAULT_CONFIG);
            if !default.is_file() {
                return Ok(None);
            }
            default
        }
    };
    let text = read_input_text(&path, InputKind::Config)?;
    let config: FileConfig = toml::from_str(&text).map_err(|e| {
        let line = e.span().map(|span| line_of(&text, span.start));
        bad_at(&path, line, e.message().to_owned())
    })?;
    Ok(Some((config, path, text)))
}

/// The name of the environment variable holding the API key of the LLM
/// `args` configure (`--api-key-env`, else `[llm.openai] api_key_env` of the
/// configuration file), when one is named: an agent run beside this LLM
/// must not inherit it.
pub(crate) fn api_key_variable(args: &LlmArgs) -> anyhow::Result<Option<String>> {
    if let Some(name) = &args.api_key_env {
        return Ok(Some(name.clone()));
    }
    let (file, _) = read_file_config(args.config.as_deref())?;
    Ok(file
        .llm
        .openai
        .get("api_key_env")
        .and_then(toml::Value::as_str)
        .map(str::to_owned))
}

/// The agent's profile from the configuration's `[profile]` table
/// (domain-neutral without a file or a table); every problem is one line
/// naming the file, the line and the key.
pub(crate) fn read_profile(explicit: Option<&Path>) -> anyhow::Result<Profile> {
    match load_file_config(explicit)? {
        Some((config, path, text)) => config.profile.resolve(&path, &text),
        None => Ok(Profile::neutral()),
    }
}

fn parse_provider(spanned: &toml::Spanned<String>, path: &Path) -> anyhow::Result<ProviderArg> {
    match spanned.get_ref().as_str() {
        "openai" => Ok(ProviderArg::Openai),
        "local" => Ok(ProviderArg::Local),
        "replay" => Ok(ProviderArg::Replay),
        other => {
            let text = read_input_text(path, InputKind::Config).unwrap_or_default();
            Err(bad_at(
                path,
                Some(line_of(&text, spanned.span().start)),
                format!("unknown provider {other:?}: expected \"openai\", \"local\" or \"replay\""),
            ))
        }
    }
}

fn openai_config(table: toml::Table, config_path: Option<&Path>) -> anyhow::Result<OpenAiConfig> {
    let hint = "set --base-url and --model (or SKILL_EVOLVE_BASE_URL / SKILL_EVOLVE_MODEL, or \
                [llm.openai] in skill-evolve.toml)";
    for key in ["base_url", "model"] {
        if !table.contains_key(key) {
            return Err(bad_option(format!(
                "provider `openai` needs a {key}: {hint}"
            )));
        }
    }
    toml::Value::Table(table)
        .try_into::<OpenAiConfig>()
        .map_err(|e| {
            let problem = format!("[llm.openai]: {}", e.message());
            match config_path {
                Some(path) => bad_at(path, None, problem),
                None => bad_option(problem),
            }
        })
}

/// True for a portable environment variable name: `[A-Za-z_][A-Za-z0-9_]*`.
fn is_variable_name(name: &str) -> bool {
    name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The model of a cassette's first entry, so `--model` can be left out on replay.
fn cassette_model(path: &Path) -> anyhow::Result<String> {
    let text = read_input_text(path, InputKind::Cassette)?;
    let Some((index, line)) = text
        .lines()
        .enumerate()
        .find(|(_, line)| !line.trim().is_empty())
    else {
        return Err(bad_at(path, None, "the cassette is empty"));
    };
    let value: serde_json::Value = serde_json::from_str(line).map_err(|e| {
        bad_at(
            path,
            Some(index.saturating_add(1)),
            format!("not a cassette entry: {e}"),
        )
    })?;
    value
        .get("model")
        .and_then(serde_json::Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| {
            bad_at(
                path,
                Some(index.saturating_add(1)),
                "not a cassette entry: no \"model\" field",
            )
        })
}

fn cassette_error(e: CassetteError) -> anyhow::Error {
    match e {
        CassetteError::Io { path, source } => {
            bad_at(&path, None, format!("cannot use the cassette: {source}"))
        }
        CassetteError::Parse { path, line, source } => {
            bad_at(&path, Some(line), format!("not a cassette entry: {source}"))
        }
        CassetteError::KeyMismatch { path, line, .. } => bad_at(
            &path,
            Some(line),
            "the stored key does not match its request (edited by hand, or written by another \
             version)",
        ),
        other => bad_option(other.to_string()),
    }
}

/// The live side of a replay: never called, since a replay answers from the
/// cassette or fails with a miss.
#[derive(Debug)]
struct NoLiveProvider;

#[async_trait]
impl LlmProvider for NoLiveProvider {
    async fn chat(
        &self,
        _messages: &[ChatMessage],
        _options: &ChatOptions,
    ) -> Result<LlmResponse, LlmError> {
        Err(LlmError::new(
            LlmErrorKind::Other,
            "a replay has no live provider to ask",
        ))
    }
}
