//! The evolution prompt bundle and its built-in templates (the markdown
//! files of this crate's `prompts/` folder, compiled in).
//!
//! Templates never travel through a store: the caller hands the kernel a
//! bundle, built in or loaded from its own override files, so the kernel has
//! no path to know about.

use evolution_types::template::TemplateSpec;
use serde::{Deserialize, Serialize};

use crate::preferences::{Preferences, render_with_preferences};

macro_rules! spec {
    ($name:literal, $placeholders:expr) => {
        TemplateSpec {
            name: $name,
            placeholders: $placeholders,
            builtin: include_str!(concat!("../prompts/", $name, ".md")),
        }
    };
}

/// Templates used by the evolution engine. [`Default`] is
/// [`EvolvePrompts::builtin`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EvolvePrompts {
    /// Proposes edits to a skill document.
    pub evolve_skill: String,
    /// Proposes edits to the system prompt.
    pub evolve_system: String,
    /// Proposes edits to a tool's extract/verify prompts.
    pub evolve_tool: String,
    /// Ranks proposed edits when they exceed the budget.
    pub evolve_rank: String,
    /// Consolidates appendix notes.
    pub consolidate_system: String,
    /// Rewrites a whole skill from suggestions. A bundle serialized before
    /// this field existed reads it as empty.
    #[serde(default)]
    pub evolve_rewrite: String,
    /// The project's house rules as every template carries them
    /// ([`Preferences::prompt_section`]): the value of each template's `{{preferences}}`,
    /// appended to a template that does not use it. Empty without preferences (the
    /// default), and then the prompts are exactly the templates'.
    #[serde(default)]
    pub preferences: String,
}

impl EvolvePrompts {
    /// Every template of the bundle, in field order, with the placeholders
    /// the engine fills for it and its built-in text.
    pub const TEMPLATES: [TemplateSpec; 6] = [
        spec!(
            "evolve_skill",
            &[
                "task_type",
                "target_file",
                "skill_content",
                "stats",
                "failure_cases",
                "success_cases",
                "lapse_notes",
                "rejected_edits",
                "edit_budget",
                "preferences",
            ]
        ),
        spec!(
            "evolve_system",
            &[
                "system_prompt",
                "frozen_sections",
                "stats",
                "failure_cases",
                "success_cases",
                "rejected_edits",
                "edit_budget",
                "preferences",
            ]
        ),
        spec!(
            "evolve_tool",
            &[
                "tool_name",
                "extract_file",
                "extract_prompt",
                "verify_file",
                "verify_prompt",
                "frozen_section",
                "stats",
                "failure_spans",
                "success_spans",
                "rejected_edits",
                "edit_budget",
                "preferences",
            ]
        ),
        spec!(
            "evolve_rank",
            &["document", "edits", "n_edits", "max_edits", "preferences"]
        ),
        spec!("consolidate_system", &["count", "notes", "preferences"]),
        spec!(
            "evolve_rewrite",
            &["document", "suggestions", "max_chars", "preferences"]
        ),
    ];

    /// The built-in templates (English, `{{name}}` placeholders).
    #[must_use]
    pub fn builtin() -> Self {
        let [
            evolve_skill,
            evolve_system,
            evolve_tool,
            evolve_rank,
            consolidate_system,
            evolve_rewrite,
        ] = Self::TEMPLATES.map(|t| t.builtin.to_owned());
        EvolvePrompts {
            evolve_skill,
            evolve_system,
            evolve_tool,
            evolve_rank,
            consolidate_system,
            evolve_rewrite,
            preferences: String::new(),
        }
    }

    /// The same templates, carrying the house rules `preferences` (in place of any before).
    #[must_use]
    pub fn with_preferences(mut self, preferences: &Preferences) -> Self {
        self.preferences = preferences.prompt_section();
        self
    }

    /// `template` (one of this bundle's) with `vars` and the bundle's house rules filled in
    /// ([`render_with_preferences`]).
    pub(crate) fn render(&self, template: &str, vars: &[(&str, &str)]) -> String {
        render_with_preferences(template, vars, &self.preferences)
    }

    /// The text of template `name`, if the bundle has one of that name.
    #[must_use]
    pub fn get(&self, name: &str) -> Option<&str> {
        Some(match name {
            "evolve_skill" => &self.evolve_skill,
            "evolve_system" => &self.evolve_system,
            "evolve_tool" => &self.evolve_tool,
            "evolve_rank" => &self.evolve_rank,
            "consolidate_system" => &self.consolidate_system,
            "evolve_rewrite" => &self.evolve_rewrite,
            _ => return None,
        })
    }

    /// The text of template `name`, to replace it.
    pub fn get_mut(&mut self, name: &str) -> Option<&mut String> {
        Some(match name {
            "evolve_skill" => &mut self.evolve_skill,
            "evolve_system" => &mut self.evolve_system,
            "evolve_tool" => &mut self.evolve_tool,
            "evolve_rank" => &mut self.evolve_rank,
            "consolidate_system" => &mut self.consolidate_system,
            "evolve_rewrite" => &mut self.evolve_rewrite,
            _ => return None,
        })
    }
}

impl Default for EvolvePrompts {
    fn default() -> Self {
        Self::builtin()
    }
}
