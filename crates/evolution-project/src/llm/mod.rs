//! LLM configuration: `skill-evolve.toml`, environment variables and flags
//! (in rising order of precedence), turned into one provider.
//!
//! Without `--config`, the file is the nearest `skill-evolve.toml` beside
//! the input a command works on (the skill of `evolve`, the skills or run log
//! of `diagnose`) or in a folder above it, else in the current folder or
//! above it; `-v` names the file read. Without `api_key_env`, the key is
//! read from the variable the server's provider usually keeps it in
//! (`DEEPSEEK_API_KEY` for `api.deepseek.com`, …), else `OPENAI_API_KEY`,
//! whichever is set first (`evolution_llm_openai::usual_api_key_vars`).
//!
//! ```toml
//! [llm]
//! provider = "openai"          # openai | local | replay | handoff | claude-code | codex
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

mod config;
mod host;

/// The key a cassette (and a handoff) files a request under.
pub use evolution_llm_cassette::cassette_key;
/// The handoff provider's files and answers (no API key: requests answered outside), for the
/// front ends that show and answer them.
pub use evolution_llm_cassette::handoff;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use evolution_llm_cassette::{
    CassetteError, CassetteMode, Handoff, HandoffError, MeasuredSpeed, Recorder,
};
use evolution_llm_openai::{ConfigError, OpenAiConfig, OpenAiProvider, usual_api_key_vars};
use evolution_types::{ChatMessage, ChatOptions, LlmError, LlmErrorKind, LlmProvider, LlmResponse};
use serde::Deserialize;

pub use self::config::{
    api_key_variable, chosen_provider, find_config, read_profile, run_key_variable, run_llm_section,
};
use self::config::{provider_choice, read_file_config};
pub use self::host::run_optimizer_host;
use crate::error::{bad_at, bad_option, line_of};
use crate::input::{InputKind, check_input, read_input_text};
use crate::llm_log::LoggedLlm;
use crate::profile::ProfileSection;

/// Which LLM answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provider {
    /// Any OpenAI-compatible chat-completions server (OpenAI, DeepSeek, vLLM, Ollama,
    /// llama.cpp server).
    Openai,
    /// A GGUF model run on this machine's CPU (`[llm.local]`).
    Local,
    /// Answers from a recorded cassette; no network.
    Replay,
    /// Hands every request off to be answered outside (by the user's own agent session, or by
    /// hand) and reads the answers on the next run; no API key.
    Handoff,
    /// The user's own Claude Code answers every request headless (`[llm.host]`); no API key.
    ClaudeCode,
    /// The user's own Codex answers every request headless (`[llm.host]`); no API key.
    Codex,
}

/// What a command's caller says about the LLM, winning over the configuration file: the
/// command line's flags (or their environment variables), or a Python caller's arguments.
/// `Default` says nothing, so the file decides.
#[derive(Debug, Clone, Default)]
pub struct LlmOptions {
    /// The configuration file (`skill-evolve.toml`); found near the inputs when `None`.
    pub config: Option<PathBuf>,
    /// The provider.
    pub provider: Option<Provider>,
    /// The OpenAI-compatible server's base URL.
    pub base_url: Option<String>,
    /// The model's name.
    pub model: Option<String>,
    /// The environment variable that holds the API key.
    pub api_key_env: Option<String>,
    /// The cassette a `replay` provider answers from.
    pub cassette: Option<PathBuf>,
    /// A cassette to record every call into (replaced if it exists).
    pub record: Option<PathBuf>,
    /// The folder a `handoff` provider writes its prompts to and reads its answers from (the
    /// run's, set by the command).
    pub handoff_dir: Option<PathBuf>,
}

/// The file looked for when `--config` is not given.
pub const DEFAULT_CONFIG: &str = "skill-evolve.toml";

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileConfig {
    #[serde(default)]
    pub(crate) llm: LlmSection,
    #[serde(default)]
    pub(crate) profile: ProfileSection,
    /// `[harvest]`: the `harvest` command's rules, read by `harvest/config.rs`; accepted here
    /// so that one file configures every command.
    #[serde(default)]
    #[expect(dead_code, reason = "checked and used by the harvest command only")]
    pub(crate) harvest: Option<toml::Table>,
}

/// The `[llm]` section, shared by `skill-evolve.toml` and a run configuration.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LlmSection {
    pub(crate) provider: Option<toml::Spanned<String>>,
    pub(crate) cassette: Option<PathBuf>,
    /// `[llm.openai]`: any field of the OpenAI-compatible provider's configuration.
    #[serde(default)]
    pub openai: toml::Table,
    /// `[llm.host]`: the `claude-code` and `codex` providers' settings (read by `host.rs`).
    #[serde(default)]
    pub host: toml::Table,
    /// `[llm.local]`: the embedded model's settings (read by `local.rs`, with the `local`
    /// feature).
    #[serde(default)]
    #[cfg_attr(not(feature = "local"), allow(dead_code))]
    pub local: toml::Table,
}

/// Keys of `[llm.openai]` that change how a call is made, never what it answers: the key's
/// variable, the timeouts, the retries, the concurrency and streaming.
const HOW_NOT_WHAT: [&str; 5] = [
    "api_key_env",
    "timeouts",
    "retry",
    "max_concurrency",
    "stream",
];

impl LlmSection {
    /// What of this section decides the answers a run gets, as text: the provider, the
    /// cassette, the `[llm.openai]` keys but those of how a call is made (the key's
    /// variable, timeouts, retries, concurrency, streaming), and `[llm.local]`. No secret is
    /// in it: the key itself is never in the file.
    pub fn answers_identity(&self) -> String {
        let sorted = |table: &toml::Table| -> std::collections::BTreeMap<String, String> {
            table
                .iter()
                .filter(|(key, _)| !HOW_NOT_WHAT.contains(&key.as_str()))
                .map(|(key, value)| (key.clone(), value.to_string()))
                .collect()
        };
        format!(
            "provider {:?}; cassette {:?}; openai {:?}; local {:?}",
            self.provider.as_ref().map(toml::Spanned::get_ref),
            self.cassette,
            sorted(&self.openai),
            sorted(&self.local)
        )
    }

    /// The environment variable the `openai` provider of this section (with
    /// the command's flags `args`, which win) reads its key from:
    /// `api_key_env`, else the first set of the server's usual variables (as
    /// [`build_llm_from`] chooses); `None` for another provider.
    pub fn key_variable(&self, args: Option<&LlmOptions>) -> Option<String> {
        let openai = match (args.and_then(|a| a.provider), &self.provider) {
            (Some(p), _) => p == Provider::Openai,
            (None, Some(p)) => p.get_ref() == "openai",
            (None, None) => self.cassette.is_none() && args.is_none_or(|a| a.cassette.is_none()),
        };
        if !openai {
            return None;
        }
        let table = |key: &str| self.openai.get(key).and_then(toml::Value::as_str);
        if let Some(var) = args
            .and_then(|a| a.api_key_env.as_deref())
            .or_else(|| table("api_key_env"))
        {
            return Some(var.to_owned());
        }
        let base_url = args
            .and_then(|a| a.base_url.as_deref())
            .or_else(|| table("base_url"))?;
        usual_api_key_vars(base_url)
            .into_iter()
            .find(|var| std::env::var_os(var).is_some_and(|v| !v.is_empty()))
            .map(str::to_owned)
    }
}

/// The provider a command talks to, and a one-line description for the user.
pub struct Llm {
    /// The provider (wrapped in a recorder when `--record` is given).
    pub provider: Arc<dyn LlmProvider>,
    /// `openai deepseek-chat at https://…`, `replay of run.cassette`, …
    pub description: String,
    /// Which provider answers.
    pub kind: Provider,
    /// The model's name, as its calls are recorded.
    pub model: String,
    /// How fast a replay's cassette was answered when it was recorded (`None` for a live
    /// provider: its speed is measured by its calls, see `run::measured_speed`).
    pub recorded_speed: Option<MeasuredSpeed>,
    /// One line on what quality to expect of the model, when worth saying before any call
    /// (the small embedded model, [`SMALL_MODEL_QUALITY`]).
    pub quality_note: Option<&'static str>,
    /// The handoff provider, when the requests are answered outside: its folder and the
    /// signal that a round of prompts is waiting.
    pub handoff: Option<Arc<Handoff>>,
}

/// What to expect of the small model the `local` provider loads by default, in one line.
pub const SMALL_MODEL_QUALITY: &str = "quality: the embedded SmolLM2-135M is a tiny model: it \
    runs offline and shows the loop working end to end, but its edits are mostly generic and \
    seldom pass the gate; for real improvements use a larger model through an \
    OpenAI-compatible server (hosted, or llama.cpp or Ollama on this machine)";

/// Where the user names the model, for the hint when none is named.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LlmSource {
    /// The command's flags (and `skill-evolve.toml`).
    Flags,
    /// The `[llm]` table of a run configuration.
    RunConfig,
}

/// Reads the configuration (found as the module docs say, from the inputs
/// in `near`) and builds the provider. Every problem is a bad input (exit 2)
/// found before any call is made.
pub async fn build_llm(args: &LlmOptions, near: &[&Path]) -> anyhow::Result<Llm> {
    let (file, config_path) = read_file_config(args.config.as_deref(), near)?;
    build_logged(args, &file.llm, config_path, LlmSource::Flags, near).await
}

/// Builds the provider from an `[llm]` section read from `config_path`
/// (paths in it are relative to that file), with `args` taking precedence.
/// Every call through it is logged (`-v` shows the lines).
pub async fn build_llm_from(
    args: &LlmOptions,
    section: &LlmSection,
    config_path: Option<PathBuf>,
    source: LlmSource,
) -> anyhow::Result<Llm> {
    build_logged(args, section, config_path, source, &[]).await
}

/// [`build_llm_from`], a recording also refused over the command's inputs `inputs`.
async fn build_logged(
    args: &LlmOptions,
    section: &LlmSection,
    config_path: Option<PathBuf>,
    source: LlmSource,
    inputs: &[&Path],
) -> anyhow::Result<Llm> {
    if let Some(record) = &args.record {
        let mut named: Vec<&Path> = inputs.to_vec();
        named.extend(config_path.as_deref());
        check_record_target(record, &named)?;
    }
    let llm = build_provider(args, section, config_path, source).await?;
    tracing::info!("LLM: {}", crate::render::terminal_safe(&llm.description));
    Ok(Llm {
        provider: Arc::new(LoggedLlm::new(llm.provider)),
        ..llm
    })
}

async fn build_provider(
    args: &LlmOptions,
    section: &LlmSection,
    config_path: Option<PathBuf>,
    source: LlmSource,
) -> anyhow::Result<Llm> {
    let file = FileConfig {
        llm: section.clone(),
        profile: ProfileSection::default(),
        harvest: None,
    };
    let base_dir = config_path
        .as_deref()
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let (provider, chosen) = provider_choice(args, &file.llm, config_path.as_deref())?;
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
        Provider::Local => {
            check_local_ranges(&file.llm.local, config_path.as_deref())?;
            let (live, description, model) =
                crate::local::local_provider(&file.llm.local, config_path.as_deref()).await?;
            let mut llm =
                with_recording(live, description, args.record.as_deref(), model, provider).await?;
            if !file.llm.local.contains_key("model") {
                llm.quality_note = Some(SMALL_MODEL_QUALITY);
            }
            Ok(llm)
        }
        #[cfg(not(feature = "local"))]
        Provider::Local => Err(check_local_ranges(&file.llm.local, config_path.as_deref())
            .err()
            .unwrap_or_else(|| bad_option(
            "provider `local` (the embedded model) is not in this build: rebuild skill-evolve \
             with its default `local` feature, or use `--provider openai` with any \
             OpenAI-compatible server (a local llama.cpp or Ollama server works offline)",
            ))),
        Provider::Openai => {
            if !chosen && !openai.contains_key("base_url") && !openai.contains_key("model") {
                return Err(bad_option(no_provider_hint(source)));
            }
            let mut config = openai_config(openai, config_path.as_deref(), source)?;
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
            if config.api_key_env.is_none() {
                config.api_key_env = usual_api_key_vars(&config.base_url)
                    .into_iter()
                    .find(|var| std::env::var_os(var).is_some_and(|v| !v.is_empty()))
                    .map(str::to_owned);
            }
            let description = format!(
                "openai {} at {} ({})",
                config.model,
                config.base_url,
                match &config.api_key_env {
                    Some(var) => format!("API key from {var}"),
                    None => "no API key".to_owned(),
                }
            );
            let model = config.model.clone();
            let live = OpenAiProvider::new(config).map_err(|e| match e {
                ConfigError::MissingApiKey { var } => bad_option(format!(
                    "environment variable {var} (api_key_env) is not set: export your API key \
                     there, or set api_key_env to the variable that holds it"
                )),
                other => bad_option(other.to_string()),
            })?;
            with_recording(
                Arc::new(live),
                description,
                args.record.as_deref(),
                model,
                provider,
            )
            .await
        }
        Provider::ClaudeCode | Provider::Codex => {
            let (live, description, model) =
                host::host_provider(provider, &file.llm.host, args.model.as_deref(), &base_dir)?;
            with_recording(live, description, args.record.as_deref(), model, provider).await
        }
        Provider::Replay => {
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
            let recorded_speed = Some(recorder.measured_speed());
            Ok(Llm {
                provider: Arc::new(Replay { recorder }),
                description: format!("replay of {} (model {model})", cassette.display()),
                kind: Provider::Replay,
                model,
                recorded_speed,
                quality_note: None,
                handoff: None,
            })
        }
        Provider::Handoff => {
            if args.record.is_some() {
                return Err(bad_option(
                    "--record needs a live provider; a handoff is answered outside",
                ));
            }
            let Some(dir) = &args.handoff_dir else {
                return Err(bad_option(
                    "provider `handoff` needs a folder for its prompts: it works with `run` \
                     and `evolve`, which keep them in their run folder",
                ));
            };
            let model = openai
                .get("model")
                .and_then(toml::Value::as_str)
                .unwrap_or("handoff")
                .to_owned();
            let handoff = Handoff::open(dir, &model).map_err(|e| match e {
                HandoffError::BadAnswer { path, line, reason } => bad_at(&path, Some(line), reason),
                other => anyhow::anyhow!(other.to_string()),
            })?;
            let handoff = Arc::new(handoff);
            Ok(Llm {
                provider: Arc::clone(&handoff) as Arc<dyn LlmProvider>,
                description: format!(
                    "handoff: prompts to {} ({} answer(s) read)",
                    handoff.files().prompts.display(),
                    handoff.answered()
                ),
                kind: Provider::Handoff,
                model,
                recorded_speed: None,
                quality_note: None,
                handoff: Some(handoff),
            })
        }
    }
}

/// Refuses (as bad input, before any call) a `--record` path whose recording would destroy
/// something: one of the command's named inputs `inputs` (the skill, the configuration), a
/// path inside a folder only this program writes (the project's `.skill-evolve` folder, an
/// `evolve` session folder, a version store), or an existing file that is not a cassette
/// (a trajectory, a question set, any document: a recording replaces the file it names).
pub fn check_record_target(record: &Path, inputs: &[&Path]) -> anyhow::Result<()> {
    let refuse = |problem: String| {
        Err(bad_at(
            record,
            None,
            format!("--record: {problem}; nothing was sent to the model"),
        ))
    };
    let resolved = crate::run::dir::resolve(record);
    if let Some(input) = inputs
        .iter()
        .find(|input| crate::run::dir::resolve(input) == resolved)
    {
        return refuse(format!(
            "this is {}, an input of this command, which a recording would replace; name a \
             new file for the cassette",
            input.display()
        ));
    }
    if let Some(owned) = resolved.ancestors().skip(1).find(|dir| owned_folder(dir)) {
        return refuse(format!(
            "this lies inside {}, a folder only skill-evolve writes (its runs and version \
             stores); record the cassette outside it",
            owned.display()
        ));
    }
    if std::fs::metadata(&resolved).is_ok_and(|m| m.is_file() && m.len() > 0)
        && !starts_like_a_cassette(&resolved)
    {
        return refuse(
            "this file exists and is not a cassette (its first line is not a recorded call), \
             and a recording would replace it; name a new file or an earlier cassette"
                .to_owned(),
        );
    }
    Ok(())
}

/// A folder this program alone writes: the project's state folder, an `evolve` session
/// folder (its marker), or a version store (its manifest beside its versions).
fn owned_folder(dir: &Path) -> bool {
    dir.file_name() == Some(std::ffi::OsStr::new(crate::STATE_DIR))
        || dir.join(crate::run::dir::EVOLVE_MARKER).is_file()
        || (dir.join("manifest.json").is_file() && dir.join("versions").is_dir())
}

/// Whether the first non-blank line of the regular file `path` is a recorded call (a JSON
/// object with the key, model, messages and response a cassette entry holds). Reads at most
/// the first 64 MiB.
fn starts_like_a_cassette(path: &Path) -> bool {
    use std::io::{BufRead as _, Read as _};
    const LIMIT: u64 = 64 * 1024 * 1024;
    let Ok(file) = std::fs::File::open(path) else {
        return false;
    };
    let mut reader = std::io::BufReader::new(file.take(LIMIT));
    let mut line = Vec::new();
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return false,
            Ok(_) if line.iter().all(u8::is_ascii_whitespace) => {}
            Ok(_) => break,
        }
    }
    serde_json::from_slice::<serde_json::Value>(&line).is_ok_and(|value| {
        ["key", "model", "messages", "response"]
            .iter()
            .all(|field| value.get(field).is_some())
    })
}

/// The live provider `kind`, behind a recorder writing to `record` when one is given.
async fn with_recording(
    live: Arc<dyn LlmProvider>,
    description: String,
    record: Option<&Path>,
    model: String,
    kind: Provider,
) -> anyhow::Result<Llm> {
    let (provider, description): (Arc<dyn LlmProvider>, String) = match record {
        Some(path) => {
            let recorder = Recorder::open(live, path, CassetteMode::Record, model.clone())
                .await
                .map_err(cassette_error)?;
            (
                Arc::new(recorder),
                format!("{description}, recording to {}", path.display()),
            )
        }
        None => (live, description),
    };
    Ok(Llm {
        provider,
        description,
        kind,
        model,
        recorded_speed: None,
        quality_note: None,
        handoff: None,
    })
}

/// The one-line error of a command that needs a model when none is named,
/// with the choices that work offline.
fn no_provider_hint(source: LlmSource) -> String {
    match source {
        LlmSource::Flags => format!(
            "no LLM is configured: name an OpenAI-compatible server with --base-url URL and \
             --model NAME (or [llm.openai] in {DEFAULT_CONFIG}), or work offline with \
             --provider local (the embedded model) or --provider replay --cassette FILE"
        ),
        LlmSource::RunConfig => "no LLM is configured: add [llm.openai] with base_url and \
             model for an OpenAI-compatible server, or work offline with [llm] provider = \
             \"local\" (the embedded model) or provider = \"replay\" and cassette = \"FILE\""
            .to_owned(),
    }
}

fn openai_config(
    table: toml::Table,
    config_path: Option<&Path>,
    source: LlmSource,
) -> anyhow::Result<OpenAiConfig> {
    let hint = match source {
        LlmSource::Flags => {
            "set --base-url and --model (or SKILL_EVOLVE_BASE_URL / SKILL_EVOLVE_MODEL, or \
             [llm.openai] in skill-evolve.toml)"
        }
        LlmSource::RunConfig => "set base_url and model in [llm.openai]",
    };
    for key in ["base_url", "model"] {
        if !table.contains_key(key) {
            return Err(bad_option(format!(
                "provider `openai` needs a {key}: {hint}"
            )));
        }
    }
    let config = toml::Value::Table(table)
        .try_into::<OpenAiConfig>()
        .map_err(|e| {
            let problem = format!("[llm.openai]: {}", e.message());
            match config_path {
                Some(path) => bad_at(path, None, problem),
                None => bad_option(problem),
            }
        })?;
    config
        .check_ranges()
        .map_err(|(key, problem)| out_of_range(config_path, "openai", key, &problem))?;
    Ok(config)
}

/// The bad input of the key `key` (dotted, inside `[llm.<table>]`) whose value is out of
/// range: the file and the key's line when the configuration came from a file.
fn out_of_range(
    config_path: Option<&Path>,
    table: &str,
    key: &str,
    problem: &str,
) -> anyhow::Error {
    let message = format!("[llm.{table}] {key} {problem}");
    match config_path {
        Some(path) => {
            let mut keys = vec!["llm", table];
            keys.extend(key.split('.'));
            let line = std::fs::read_to_string(path)
                .ok()
                .and_then(|text| key_line(&text, &keys));
            bad_at(path, line, message)
        }
        None => bad_option(message),
    }
}

/// The line of the key at the dotted path `keys` in the TOML document `text`, however its
/// tables are written (`[llm.openai.timeouts]`, `timeouts = { … }`, dotted keys).
fn key_line(text: &str, keys: &[&str]) -> Option<usize> {
    let document = toml::de::DeTable::parse(text).ok()?;
    let (last, parents) = keys.split_last()?;
    let mut table = document.get_ref();
    for key in parents {
        let (_, value) = table.iter().find(|(k, _)| k.get_ref().as_ref() == *key)?;
        match value.get_ref() {
            toml::de::DeValue::Table(inner) => table = inner,
            _ => return None,
        }
    }
    let (key, _) = table.iter().find(|(k, _)| k.get_ref().as_ref() == *last)?;
    Some(line_of(text, key.span().start))
}

/// Refuses the `[llm.local]` settings that cannot be used: a count or token budget of 0.
fn check_local_ranges(table: &toml::Table, config_path: Option<&Path>) -> anyhow::Result<()> {
    for key in ["threads", "slots", "context_tokens", "max_tokens"] {
        if table.get(key).and_then(toml::Value::as_integer) == Some(0) {
            return Err(out_of_range(
                config_path,
                "local",
                key,
                "must be at least 1, got 0",
            ));
        }
    }
    Ok(())
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
        CassetteError::NotAFile { path, reason } => bad_at(
            &path,
            None,
            format!("cannot record a cassette here: {reason}; nothing was sent to the model"),
        ),
        CassetteError::KeyMismatch { path, line, .. } => bad_at(
            &path,
            Some(line),
            "the stored key does not match its request (edited by hand, or written by another \
             version)",
        ),
        other => bad_option(other.to_string()),
    }
}

/// A replay: the cassette's answers, and on a miss (the only way it fails)
/// what to do about it.
#[derive(Debug)]
struct Replay {
    recorder: Recorder<NoLiveProvider>,
}

#[async_trait]
impl LlmProvider for Replay {
    async fn chat(
        &self,
        messages: &[ChatMessage],
        options: &ChatOptions,
    ) -> Result<LlmResponse, LlmError> {
        self.recorder.chat(messages, options).await.map_err(|e| {
            LlmError::new(
                e.kind(),
                format!(
                    "{}; the cassette {} was recorded for other requests: record it again with \
                     a live provider and --record FILE",
                    e.message(),
                    self.recorder.path().display()
                ),
            )
        })
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
