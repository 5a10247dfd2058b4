//! Domain constants of the agent being evolved.
//!
//! The reference implementation hard-coded these for a video-QA agent that
//! walks a tree of segments: [`Profile::video_qa`] keeps exactly those
//! values. Any other agent starts from [`Profile::neutral`] — also
//! `Profile::default()` — which names no tool, so nothing is judged or
//! measured on the strength of a guessed tool name, and fills in what it
//! knows (typically from a `[profile]` table of its configuration).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

/// Domain constants used by diagnosis and evolution.
///
/// Deserializing fills every missing field from [`Profile::neutral`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Profile {
    /// Tools whose calls the span judge evaluates; empty: no span is judged,
    /// so no tool prompt is evolved.
    pub span_eval_tools: BTreeSet<String>,
    /// Tool → the prompt files that steer it (its `*_extract.md` and
    /// `*_verify.md`); a span-judged tool without an entry is looked up as
    /// `<tool>_extract.md` / `<tool>_verify.md`.
    pub tool_target_files: BTreeMap<String, Vec<String>>,
    /// Tool whose calls are node visits (the input's `node_id`), for the
    /// repeat-visit rate, the level-jump pattern and the missed-nodes judge;
    /// `None`: those metrics are not computed.
    pub visit_tool: Option<String>,
    /// Tool whose calls are searches (the input's `query`), for keyword
    /// repetition; `None`: not computed.
    pub search_tool: Option<String>,
    /// Regex whose first group is a visited node's tree level (the whole
    /// match when it has no group); `None`: no level-jump pattern.
    pub level_pattern: Option<String>,
    /// `##` section titles of the system prompt that evolution must not change.
    pub frozen_system_sections: Vec<String>,
    /// `##` section title of a tool prompt that evolution must not change.
    pub tool_output_format_section: String,
    /// Stop reasons that mark an infrastructure error: such questions are
    /// counted, never diagnosed.
    pub infra_stop_reasons: BTreeSet<String>,
    /// Occurrences a behaviour pattern needs to trigger the system pack.
    pub min_pattern_count: usize,
    /// Skill file used when no file matches a task type.
    pub default_skill_file: String,
    /// Task type → skill file, chosen by the caller; wins over the
    /// `<task type>.md` naming convention (see [`crate::skill_file_for`]).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub task_skill_files: BTreeMap<String, String>,
    /// Confidence at or above which a wrong answer is `high_conf_wrong`.
    pub high_confidence: f64,
    /// Confidence below which a right answer is `low_conf_right`.
    pub low_confidence: f64,
}

fn strings<const N: usize>(items: [&str; N]) -> impl Iterator<Item = String> {
    items.into_iter().map(str::to_owned)
}

/// The section title both built-in profiles protect in tool prompts, in
/// [`Profile::neutral`]'s words.
const OUTPUT_FORMAT: &str = "Output format";

impl Profile {
    /// The domain-neutral profile: no tool named (no span judging, no tool
    /// prompt evolution, visit and search metrics not computed, no level
    /// pattern); the `## Output format` section of the system prompt and of
    /// tool prompts is frozen; the reference implementation's infrastructure
    /// stop reasons (`error`, `parse_error`), pattern count (3) and
    /// confidence thresholds (0.7, 0.5).
    pub fn neutral() -> Self {
        Profile {
            span_eval_tools: BTreeSet::new(),
            tool_target_files: BTreeMap::new(),
            visit_tool: None,
            search_tool: None,
            level_pattern: None,
            frozen_system_sections: vec![OUTPUT_FORMAT.to_owned()],
            tool_output_format_section: OUTPUT_FORMAT.to_owned(),
            infra_stop_reasons: strings(["error", "parse_error"]).collect(),
            min_pattern_count: 3,
            default_skill_file: crate::DEFAULT_SKILL_FILE.to_owned(),
            task_skill_files: BTreeMap::new(),
            high_confidence: 0.7,
            low_confidence: 0.5,
        }
    }

    /// The reference implementation's video-QA agent, value for value: it
    /// visits a tree of segments with `view_node` (levels in node ids like
    /// `seg_L2_004`), searches with `search_similar`, looks at frames with
    /// `observe_frame`, and its prompts are written in Chinese.
    pub fn video_qa() -> Self {
        Profile {
            span_eval_tools: strings(["view_node", "search_similar", "observe_frame"]).collect(),
            tool_target_files: BTreeMap::from([
                (
                    "view_node".to_owned(),
                    strings([
                        "view_node_extract.md",
                        "view_node_verify.md",
                        "view_leaf_extract.md",
                        "view_leaf_verify.md",
                    ])
                    .collect(),
                ),
                (
                    "search_similar".to_owned(),
                    strings(["search_similar_extract.md", "search_similar_verify.md"]).collect(),
                ),
                (
                    "observe_frame".to_owned(),
                    strings(["observe_frame_extract.md", "observe_frame_verify.md"]).collect(),
                ),
            ]),
            visit_tool: Some("view_node".to_owned()),
            search_tool: Some("search_similar".to_owned()),
            level_pattern: Some(r"_L(\d+)_".to_owned()),
            frozen_system_sections: strings(["能力边界", "输出格式", "视频树结构"]).collect(),
            tool_output_format_section: "输出格式".to_owned(),
            ..Profile::neutral()
        }
    }

    /// The built-in profile of that name: `neutral` or `video-qa`.
    pub fn preset(name: &str) -> Option<Self> {
        match name {
            "neutral" => Some(Profile::neutral()),
            "video-qa" => Some(Profile::video_qa()),
            _ => None,
        }
    }

    /// Names accepted by [`Profile::preset`].
    pub const PRESET_NAMES: [&'static str; 2] = ["neutral", "video-qa"];

    /// Every problem of the values that needs no regex engine, as
    /// `(field, problem)`: thresholds outside `[0, 1]` or in the wrong
    /// order, a pattern count of 0, empty or path-like names. (The level
    /// pattern's syntax is checked by the diagnosis, which compiles it.)
    pub fn problems(&self) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        for (field, value) in [
            ("high_confidence", self.high_confidence),
            ("low_confidence", self.low_confidence),
        ] {
            if !(0.0..=1.0).contains(&value) {
                out.push((field, format!("must be from 0 to 1, not {value}")));
            }
        }
        if self.low_confidence > self.high_confidence {
            out.push((
                "low_confidence",
                format!(
                    "must not exceed high_confidence ({} > {})",
                    self.low_confidence, self.high_confidence
                ),
            ));
        }
        if self.min_pattern_count == 0 {
            out.push(("min_pattern_count", "must be at least 1".to_owned()));
        }
        let named: [(&'static str, Vec<&String>); 5] = [
            ("span_eval_tools", self.span_eval_tools.iter().collect()),
            ("tool_target_files", self.tool_target_files.keys().collect()),
            ("visit_tool", self.visit_tool.iter().collect()),
            ("search_tool", self.search_tool.iter().collect()),
            (
                "frozen_system_sections",
                self.frozen_system_sections.iter().collect(),
            ),
        ];
        for (field, names) in named {
            if names.iter().any(|n| n.trim().is_empty()) {
                out.push((field, "holds an empty name".to_owned()));
            }
        }
        if let Some(file) = self
            .tool_target_files
            .values()
            .flatten()
            .find(|f| !is_plain_file_name(f))
        {
            out.push((
                "tool_target_files",
                format!("{file:?} is not a plain file name (no folders, not empty)"),
            ));
        }
        if !is_plain_file_name(&self.default_skill_file) {
            out.push((
                "default_skill_file",
                format!(
                    "{:?} is not a plain file name (no folders, not empty)",
                    self.default_skill_file
                ),
            ));
        }
        out
    }
}

/// A file name without folders: not empty, no `/` or `\`, not `.` or `..`.
fn is_plain_file_name(name: &str) -> bool {
    !name.trim().is_empty() && !name.contains(['/', '\\']) && name != "." && name != ".."
}

impl Default for Profile {
    /// [`Profile::neutral`]: nothing about the agent is assumed.
    fn default() -> Self {
        Profile::neutral()
    }
}
