//! Domain constants of the agent being evolved.
//!
//! The seed hard-coded these for a video-QA agent that walks a tree of
//! segments. Here they live in one value; `Profile::default()` reproduces
//! the reference implementation exactly and other agents pass their own.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

/// Domain constants used by diagnosis and evolution.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Profile {
    /// Tools whose calls the span judge evaluates (`_SPAN_EVAL_TOOLS`).
    pub span_eval_tools: BTreeSet<String>,
    /// Tool → the prompt files that steer it (`_TOOL_TARGET_FILES`).
    pub tool_target_files: BTreeMap<String, Vec<String>>,
    /// Tool whose calls are node visits (for the repeat-visit rate).
    pub visit_tool: String,
    /// Tool whose calls are searches (for keyword repetition).
    pub search_tool: String,
    /// Regex whose first group is a node's tree level (`_L(\d+)_`).
    pub level_pattern: String,
    /// `##` section titles of the system prompt that evolution must not change.
    pub frozen_system_sections: Vec<String>,
    /// `##` section title of a tool prompt that evolution must not change.
    pub tool_output_format_section: String,
    /// Stop reasons that mark an infrastructure error (`_INFRA_STOP_REASONS`).
    pub infra_stop_reasons: BTreeSet<String>,
    /// Occurrences a behaviour pattern needs to trigger the system pack (`_MIN_PATTERN_COUNT`).
    pub min_pattern_count: usize,
    /// Lapse note used when a task type is left with a single defect.
    pub single_failure_note: String,
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

impl Default for Profile {
    fn default() -> Self {
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
            visit_tool: "view_node".to_owned(),
            search_tool: "search_similar".to_owned(),
            level_pattern: r"_L(\d+)_".to_owned(),
            frozen_system_sections: strings(["能力边界", "输出格式", "视频树结构"]).collect(),
            tool_output_format_section: "输出格式".to_owned(),
            infra_stop_reasons: strings(["error", "parse_error"]).collect(),
            min_pattern_count: 3,
            single_failure_note: "复核该类已有规则，避免重复此类单例失败".to_owned(),
            default_skill_file: crate::DEFAULT_SKILL_FILE.to_owned(),
            task_skill_files: BTreeMap::new(),
            high_confidence: 0.7,
            low_confidence: 0.5,
        }
    }
}
