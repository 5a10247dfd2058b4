//! The per-target evolution functions: skill (branches A/B/C), system
//! prompt and tool prompts.

use evolution_types::{Profile, RejectedEdit};
use serde::{Deserialize, Serialize};

/// Rounds of the patch loop: the first attempt plus one retry with feedback
/// (the reference implementation's `range(2)`).
pub const PATCH_ROUNDS: u32 = 2;

/// First line of the feedback sent when a reply was not the expected JSON.
pub const FEEDBACK_INVALID_JSON: &str =
    "Your reply could not be used: it must be one JSON object of the requested shape.";
/// First line of the feedback sent when no proposed edit could be applied.
pub const FEEDBACK_NOT_APPLIED: &str = "None of your edits could be applied to the document:";
/// First line of the feedback sent when the candidate failed validation.
pub const FEEDBACK_INVALID_CANDIDATE: &str =
    "Your edits were applied, but the resulting document failed validation:";

/// How a skill's defects are addressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SkillUpdateMode {
    /// Small edits applied by the patch engine (branch C).
    #[default]
    Patch,
    /// A whole-document rewrite from the suggestions (branch B).
    Rewrite,
}

/// Settings shared by every target of an [`crate::Evolver`].
#[derive(Debug, Clone, PartialEq)]
pub struct EvolveOptions {
    /// Store version the documents are read from; copied into the record.
    pub source_version: String,
    /// Most edits applied per round; `usize::MAX` for no limit.
    pub edit_budget: usize,
    /// Appendix note count (existing plus new) at which notes are consolidated.
    pub consolidate_threshold: usize,
    /// Appendix size in characters (existing plus new notes, as written) above which notes
    /// are consolidated; a size over the appendix limit
    /// ([`APPENDIX_MAX_CHARS`](evolution_patch::APPENDIX_MAX_CHARS)) always is.
    pub consolidate_chars: usize,
    /// Patch (default) or rewrite, for skills.
    pub skill_update_mode: SkillUpdateMode,
    /// Edits rejected earlier; those for the evolved file are shown to the LLM.
    pub rejected: Vec<RejectedEdit>,
    /// Frozen sections and other domain constants (default: `Profile::neutral()`,
    /// which freezes the `## Output format` sections).
    pub profile: Profile,
    /// File name of the system prompt in the prompt store.
    pub system_prompt_file: String,
}

impl Default for EvolveOptions {
    /// Budget 8, consolidation at 6 notes or past the appendix limit, patch mode, `system.md`.
    fn default() -> Self {
        EvolveOptions {
            source_version: String::new(),
            edit_budget: 8,
            consolidate_threshold: 6,
            consolidate_chars: evolution_patch::APPENDIX_MAX_CHARS,
            skill_update_mode: SkillUpdateMode::Patch,
            rejected: Vec::new(),
            profile: Profile::default(),
            system_prompt_file: "system.md".to_owned(),
        }
    }
}

mod appendix;
mod patch_loop;
mod single_doc;
mod skill;
mod system;
mod tool;

pub(crate) use skill::evolve_single_skill;
pub(crate) use system::evolve_system_prompt;
pub(crate) use tool::evolve_tool_pair;
pub use tool::{ToolPromptPair, tool_prompt_pairs};
