//! The `[profile]` table of `skill-evolve.toml` and of a run configuration:
//! what the diagnosis and the evolution need to know about the agent (its
//! tool names, the prompt files of each tool, the sections never to edit,
//! thresholds). Without the table the profile is domain-neutral: no tool is
//! named, so no tool call is judged and no tool prompt evolves.
//!
//! ```toml
//! [profile]
//! # preset = "video-qa"                        # start from a built-in profile (default: neutral)
//! span_eval_tools = ["lookup_order", "search_kb"]   # tool calls the span judge scores
//! tool_target_files = { lookup_order = ["lookup_order_extract.md", "lookup_order_verify.md"] }
//! visit_tool = "open_page"                     # calls whose input `node_id` is a visit ("" = none)
//! search_tool = "search_kb"                    # calls whose input `query` is a search ("" = none)
//! level_pattern = '_L(\d+)_'                   # regex: a node id's level ("" = none)
//! frozen_system_sections = ["Output format"]   # `##` sections of the system prompt kept as they are
//! tool_output_format_section = "Output format" # `##` section of a tool prompt kept as it is
//! infra_stop_reasons = ["error", "parse_error"]
//! min_pattern_count = 3                        # failures a behaviour needs to reach the system prompt
//! high_confidence = 0.7                        # wrong at or above: overconfident
//! low_confidence = 0.5                         # right below: underconfident
//! default_skill_file = "default-strategy.md"
//! ```

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::Path;

use evolution_diagnose::{DiagnoseError, check_profile};
use evolution_types::Profile;
use serde::Deserialize;
use toml::Spanned;

use crate::error::{bad_at, line_of};

/// The `[profile]` table as written; every key is optional.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProfileSection {
    preset: Option<Spanned<String>>,
    span_eval_tools: Option<Spanned<Vec<String>>>,
    tool_target_files: Option<Spanned<BTreeMap<String, Vec<String>>>>,
    visit_tool: Option<Spanned<String>>,
    search_tool: Option<Spanned<String>>,
    level_pattern: Option<Spanned<String>>,
    frozen_system_sections: Option<Spanned<Vec<String>>>,
    tool_output_format_section: Option<Spanned<String>>,
    infra_stop_reasons: Option<Spanned<Vec<String>>>,
    min_pattern_count: Option<Spanned<usize>>,
    high_confidence: Option<Spanned<f64>>,
    low_confidence: Option<Spanned<f64>>,
    default_skill_file: Option<Spanned<String>>,
}

/// Takes a value given in the table, remembering where it was written.
fn take<T: Clone>(
    spans: &mut BTreeMap<&'static str, Range<usize>>,
    key: &'static str,
    value: &Option<Spanned<T>>,
) -> Option<T> {
    let value = value.as_ref()?;
    spans.insert(key, value.span());
    Some(value.get_ref().clone())
}

/// A name, or `None` for the empty string (which switches the metric off).
fn optional(text: String) -> Option<String> {
    let text = text.trim().to_owned();
    (!text.is_empty()).then_some(text)
}

impl ProfileSection {
    /// The profile: the preset (neutral unless named), then every key given.
    /// `path` and `text` are the configuration file, for errors naming the
    /// file, the line and the key.
    pub fn resolve(&self, path: &Path, text: &str) -> anyhow::Result<Profile> {
        let at = |span: Option<Range<usize>>, problem: String| {
            let line = span.filter(|s| s.end > 0).map(|s| line_of(text, s.start));
            bad_at(path, line, problem)
        };
        let mut profile = match &self.preset {
            None => Profile::neutral(),
            Some(name) => Profile::preset(name.get_ref()).ok_or_else(|| {
                at(
                    Some(name.span()),
                    format!(
                        "[profile] preset {:?} is unknown: expected one of {}",
                        name.get_ref(),
                        Profile::PRESET_NAMES.join(", ")
                    ),
                )
            })?,
        };
        let mut spans = BTreeMap::new();
        let s = &mut spans;
        if let Some(v) = take(s, "span_eval_tools", &self.span_eval_tools) {
            profile.span_eval_tools = v.into_iter().collect();
        }
        if let Some(v) = take(s, "tool_target_files", &self.tool_target_files) {
            profile.tool_target_files = v;
        }
        if let Some(v) = take(s, "visit_tool", &self.visit_tool) {
            profile.visit_tool = optional(v);
        }
        if let Some(v) = take(s, "search_tool", &self.search_tool) {
            profile.search_tool = optional(v);
        }
        if let Some(v) = take(s, "level_pattern", &self.level_pattern) {
            profile.level_pattern = optional(v);
        }
        if let Some(v) = take(s, "frozen_system_sections", &self.frozen_system_sections) {
            profile.frozen_system_sections = v;
        }
        if let Some(v) = take(
            s,
            "tool_output_format_section",
            &self.tool_output_format_section,
        ) {
            profile.tool_output_format_section = v;
        }
        if let Some(v) = take(s, "infra_stop_reasons", &self.infra_stop_reasons) {
            profile.infra_stop_reasons = v.into_iter().collect();
        }
        if let Some(v) = take(s, "min_pattern_count", &self.min_pattern_count) {
            profile.min_pattern_count = v;
        }
        if let Some(v) = take(s, "high_confidence", &self.high_confidence) {
            profile.high_confidence = v;
        }
        if let Some(v) = take(s, "low_confidence", &self.low_confidence) {
            profile.low_confidence = v;
        }
        if let Some(v) = take(s, "default_skill_file", &self.default_skill_file) {
            profile.default_skill_file = v;
        }
        match check_profile(&profile) {
            Ok(()) => Ok(profile),
            Err(DiagnoseError::InvalidProfile { field, message }) => {
                // A regex error spans several lines; its last one says what is wrong.
                let message = match field {
                    "level_pattern" => format!(
                        "is not a valid regular expression: {}",
                        message
                            .lines()
                            .last()
                            .unwrap_or_default()
                            .trim()
                            .trim_start_matches("error: ")
                    ),
                    _ => message,
                };
                Err(at(
                    spans.get(field).cloned(),
                    format!("[profile] {field} {message}"),
                ))
            }
            Err(other) => Err(at(None, format!("[profile]: {other}"))),
        }
    }
}

/// A one-line summary of a profile, for plans and reports.
pub fn describe(profile: &Profile) -> String {
    let list = |items: &mut dyn Iterator<Item = &String>| {
        let items: Vec<&str> = items.map(String::as_str).collect();
        if items.is_empty() {
            "none".to_owned()
        } else {
            items.join(", ")
        }
    };
    format!(
        "span-judged tools: {}; visit tool: {}; search tool: {}",
        list(&mut profile.span_eval_tools.iter()),
        profile.visit_tool.as_deref().unwrap_or("none"),
        profile.search_tool.as_deref().unwrap_or("none"),
    )
}
