//! The `claude-code` and `codex` providers: the user's own Claude Code or Codex answers the
//! optimizer's requests (no API key: the host's own login), one headless run per request
//! (see `evolution_host::HostLlm`).
//!
//! ```toml
//! [llm]
//! provider = "claude-code"      # or "codex"
//!
//! [llm.host]
//! cli = "claude"                # the host's program (PATH or relative to this file)
//! model = "haiku"               # the host's model (default: the host's own choice)
//! timeout_secs = 600            # one request's time limit
//! max_concurrency = 2           # requests at a time
//! ```

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use evolution_host::{Host, HostLlm, HostSettings};
use evolution_types::LlmProvider;

use super::Provider;
use crate::error::bad_option;

/// One request's time limit when `[llm.host]` names none.
const DEFAULT_TIMEOUT_SECS: u64 = 600;

/// Requests at a time when `[llm.host]` names no limit.
const DEFAULT_CONCURRENCY: usize = 2;

/// The settings `[llm.host]` may hold.
const KNOWN: [&str; 4] = ["cli", "model", "timeout_secs", "max_concurrency"];

/// The host provider `kind` from `[llm.host]` (`table`, its paths relative to `base`), the
/// model `model` (from `--model`) winning over the table's: the provider, its description
/// and its model's name.
pub(super) fn host_provider(
    kind: Provider,
    table: &toml::Table,
    model: Option<&str>,
    base: &Path,
) -> anyhow::Result<(Arc<dyn LlmProvider>, String, String)> {
    let (settings, timeout, concurrency) = host_settings(kind, table, model, base)?;
    let model_name = settings
        .model
        .clone()
        .unwrap_or_else(|| "default".to_owned());
    let description = format!(
        "{} {model_name} through {} (the host's own login)",
        settings.host.name(),
        settings.cli.display()
    );
    let provider = HostLlm::new(settings, timeout, concurrency);
    Ok((Arc::new(provider), description, model_name))
}

/// The host of the optimizer's model of the run configuration at `path` (`[llm] provider =
/// "claude-code"` or `"codex"`), its program found as the provider finds it; `None` for
/// another provider. What a front end checks the host's login with before a run.
///
/// # Errors
/// A configuration that cannot be read, an `[llm]` or `[llm.host]` that is not valid, or a
/// host program that is not found.
pub fn run_optimizer_host(path: &Path) -> anyhow::Result<Option<HostSettings>> {
    let Some(section) = super::run_llm_section(path)? else {
        return Ok(None);
    };
    let kind = section.provider(&super::LlmOptions::default(), path)?;
    if !matches!(kind, Provider::ClaudeCode | Provider::Codex) {
        return Ok(None);
    }
    let base = path.parent().unwrap_or(Path::new(""));
    Ok(Some(host_settings(kind, &section.host, None, base)?.0))
}

/// The host settings of `[llm.host]` (`table`, its paths relative to `base`) for the provider
/// `kind`, `model` winning over the table's, with one request's time limit and the requests
/// at a time.
fn host_settings(
    kind: Provider,
    table: &toml::Table,
    model: Option<&str>,
    base: &Path,
) -> anyhow::Result<(HostSettings, Duration, usize)> {
    let (host, program) = match kind {
        Provider::Codex => (Host::Codex, "codex"),
        _ => (Host::ClaudeCode, "claude"),
    };
    if let Some(key) = table.keys().find(|k| !KNOWN.contains(&k.as_str())) {
        return Err(bad_option(format!(
            "[llm.host] {key:?} is not a setting of the {} provider (its settings: {})",
            host.name(),
            KNOWN.join(", ")
        )));
    }
    let text = |key: &str| match table.get(key) {
        None => Ok(None),
        Some(toml::Value::String(s)) if !s.trim().is_empty() => Ok(Some(s.clone())),
        Some(_) => Err(bad_option(format!(
            "[llm.host] {key} must be a non-empty string"
        ))),
    };
    let number = |key: &str, default: u64| match table.get(key) {
        None => Ok(default),
        Some(toml::Value::Integer(n)) if *n >= 1 => Ok(n.unsigned_abs()),
        Some(_) => Err(bad_option(format!(
            "[llm.host] {key} must be a whole number of at least 1"
        ))),
    };
    let timeout = Duration::from_secs(number("timeout_secs", DEFAULT_TIMEOUT_SECS)?);
    let concurrency = usize::try_from(number("max_concurrency", DEFAULT_CONCURRENCY as u64)?)
        .unwrap_or(usize::MAX);
    let cli_name = text("cli")?.unwrap_or_else(|| program.to_owned());
    let cli = evolution_host::find_program(&cli_name, base).ok_or_else(|| {
        bad_option(format!(
            "provider `{}`: program {cli_name:?} not found (not a file, nor on PATH); install \
             it or name it with [llm.host] cli",
            host.name()
        ))
    })?;
    // The host runs in its rollout folder: a program named relative to the configuration
    // (or to a configuration named relatively) is made absolute here.
    let cli = std::path::absolute(&cli).unwrap_or(cli);
    let mut settings = HostSettings::new(host, &cli);
    settings.model = model.map(str::to_owned).or(text("model")?);
    Ok((settings, timeout, concurrency))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> toml::Table {
        text.parse().unwrap()
    }

    #[test]
    fn settings_are_checked_and_the_program_must_exist() {
        let base = tempfile::tempdir().unwrap();
        let error = |text: &str| {
            host_provider(Provider::ClaudeCode, &table(text), None, base.path())
                .err()
                .unwrap()
                .to_string()
        };
        assert!(error("sandbox = \"x\"").contains("\"sandbox\" is not a setting"));
        assert!(error("timeout_secs = 0").contains("timeout_secs must be"));
        assert!(error("cli = \"./no-such-host\"").contains("\"./no-such-host\" not found"));
        std::fs::write(base.path().join("host"), "").unwrap();
        let (_, description, model) = host_provider(
            Provider::Codex,
            &table("cli = \"./host\"\nmodel = \"small\""),
            Some("flag"),
            base.path(),
        )
        .unwrap();
        assert_eq!(model, "flag");
        assert!(
            description.starts_with("codex flag through "),
            "{description}"
        );
    }
}
