//! Fixed prompt-template bundles passed into diagnosis and evolution (seed §3).
//!
//! Templates never travel through a store: the caller loads them and hands
//! the kernel a bundle, so the kernel has no path to know about.

use serde::{Deserialize, Serialize};

/// Templates used by the diagnosis pipeline.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
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
}

/// Templates used by the evolution engine.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
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
    /// Rewrites a whole skill from suggestions. The seed loaded this one from a
    /// file beside the others; here it travels in the bundle like them.
    #[serde(default)]
    pub evolve_rewrite: String,
}
