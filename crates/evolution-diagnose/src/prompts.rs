//! The diagnosis prompt bundle and its built-in templates (the markdown files
//! of this crate's `prompts/` folder, compiled in).
//!
//! Templates never travel through a store: the caller hands the kernel a
//! bundle, built in or loaded from its own override files, so the kernel has
//! no path to know about.

use evolution_types::template::TemplateSpec;
use serde::{Deserialize, Serialize};

/// Placeholders of the question-level judges.
const JUDGE: &[&str] = &[
    "question_id",
    "task_type",
    "question",
    "answer",
    "prediction",
    "correct",
    "trace",
    "tool_outputs",
    "visited_nodes",
    "tree",
    "skill",
];
/// Placeholders of the span judge: the judges' plus the step's.
const SPAN: &[&str] = &[
    "question_id",
    "task_type",
    "question",
    "answer",
    "prediction",
    "correct",
    "trace",
    "tool_outputs",
    "visited_nodes",
    "tree",
    "skill",
    "step",
    "tool_name",
    "tool_input",
    "tool_output",
    "thought",
];
/// Placeholders of the two classifiers: the judges' plus the diagnosis.
const CLASSIFIER: &[&str] = &[
    "question_id",
    "task_type",
    "question",
    "answer",
    "prediction",
    "correct",
    "trace",
    "tool_outputs",
    "visited_nodes",
    "tree",
    "skill",
    "error_type",
    "evidence",
];

/// Placeholders of the rubric judge.
const RUBRIC: &[&str] = &["question_id", "question", "rubric", "prediction"];

macro_rules! spec {
    ($name:literal, $placeholders:expr) => {
        TemplateSpec {
            name: $name,
            placeholders: $placeholders,
            builtin: include_str!(concat!("../prompts/", $name, ".md")),
        }
    };
}

/// Templates used by the diagnosis pipeline. [`Default`] is
/// [`DiagnosePrompts::builtin`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiagnosePrompts {
    /// Classifies a failure as a skill defect or a one-off lapse.
    pub defect_vs_lapse: String,
    /// Sub-classifies reasoning failures.
    pub reasoning_sub: String,
    /// System prompt of the span judge.
    pub span_eval_system: String,
    /// User prompt of the span judge.
    pub span_eval_user: String,
    /// Judge for nodes the agent should have visited.
    pub missed_nodes: String,
    /// Judge for adherence to the skill's steps.
    pub skill_adherence: String,
    /// Judge for confirmation bias.
    pub confirmation_bias: String,
    /// Judge for whether the gathered evidence sufficed.
    pub evidence_sufficiency: String,
    /// Judge for whether an answer meets its question's rubric ([`crate::rubric`]).
    #[serde(default = "builtin_rubric")]
    pub rubric: String,
}

/// The built-in rubric template (a bundle saved before the rubric judge existed reads with it).
fn builtin_rubric() -> String {
    include_str!("../prompts/rubric.md").to_owned()
}

impl DiagnosePrompts {
    /// Every template of the bundle, in field order, with the placeholders
    /// the pipeline fills for it and its built-in text.
    pub const TEMPLATES: [TemplateSpec; 9] = [
        spec!("defect_vs_lapse", CLASSIFIER),
        spec!("reasoning_sub", CLASSIFIER),
        spec!("span_eval_system", SPAN),
        spec!("span_eval_user", SPAN),
        spec!("missed_nodes", JUDGE),
        spec!("skill_adherence", JUDGE),
        spec!("confirmation_bias", JUDGE),
        spec!("evidence_sufficiency", JUDGE),
        spec!("rubric", RUBRIC),
    ];

    /// The built-in templates (English, `{{name}}` placeholders).
    #[must_use]
    pub fn builtin() -> Self {
        let [
            defect_vs_lapse,
            reasoning_sub,
            span_eval_system,
            span_eval_user,
            missed_nodes,
            skill_adherence,
            confirmation_bias,
            evidence_sufficiency,
            rubric,
        ] = Self::TEMPLATES.map(|t| t.builtin.to_owned());
        DiagnosePrompts {
            defect_vs_lapse,
            reasoning_sub,
            span_eval_system,
            span_eval_user,
            missed_nodes,
            skill_adherence,
            confirmation_bias,
            evidence_sufficiency,
            rubric,
        }
    }

    /// The text of template `name`, if the bundle has one of that name.
    #[must_use]
    pub fn get(&self, name: &str) -> Option<&str> {
        Some(match name {
            "defect_vs_lapse" => &self.defect_vs_lapse,
            "reasoning_sub" => &self.reasoning_sub,
            "span_eval_system" => &self.span_eval_system,
            "span_eval_user" => &self.span_eval_user,
            "missed_nodes" => &self.missed_nodes,
            "skill_adherence" => &self.skill_adherence,
            "confirmation_bias" => &self.confirmation_bias,
            "evidence_sufficiency" => &self.evidence_sufficiency,
            "rubric" => &self.rubric,
            _ => return None,
        })
    }

    /// The text of template `name`, to replace it.
    pub fn get_mut(&mut self, name: &str) -> Option<&mut String> {
        Some(match name {
            "defect_vs_lapse" => &mut self.defect_vs_lapse,
            "reasoning_sub" => &mut self.reasoning_sub,
            "span_eval_system" => &mut self.span_eval_system,
            "span_eval_user" => &mut self.span_eval_user,
            "missed_nodes" => &mut self.missed_nodes,
            "skill_adherence" => &mut self.skill_adherence,
            "confirmation_bias" => &mut self.confirmation_bias,
            "evidence_sufficiency" => &mut self.evidence_sufficiency,
            "rubric" => &mut self.rubric,
            _ => return None,
        })
    }
}

impl Default for DiagnosePrompts {
    fn default() -> Self {
        Self::builtin()
    }
}
