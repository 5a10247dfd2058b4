//! [`Evolver`]: the front door of evolution, one method per target.

use evolution_types::{
    EvolutionRecord, LlmProvider, PromptStore, SkillCasePack, SkillStore, SystemCasePack,
    ToolCasePack,
};

use crate::error::EvolveError;
use crate::evolve::{
    EvolveOptions, ToolPromptPair, evolve_single_skill, evolve_system_prompt, evolve_tool_pair,
    tool_prompt_pairs,
};
use crate::prompts::EvolvePrompts;

/// Proposes a new version of a skill, of the system prompt or of a tool's
/// prompts from its case pack: the LLM it calls, with the prompts and the
/// options every target shares.
///
/// ```no_run
/// # async fn demo(
/// #     llm: &dyn evolution_types::LlmProvider,
/// #     skills: &dyn evolution_types::SkillStore,
/// #     pack: &evolution_types::SkillCasePack,
/// # ) -> Result<(), evolution_evolve::EvolveError> {
/// use evolution_evolve::{EvolveOptions, Evolver};
/// let evolver = Evolver::new(llm)
///     .with_options(EvolveOptions { edit_budget: 4, ..EvolveOptions::default() });
/// let record = evolver.skill(pack, skills).await?;
/// println!("{:?}: {}", record.status, record.reason);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Evolver<'a> {
    llm: &'a dyn LlmProvider,
    prompts: EvolvePrompts,
    options: EvolveOptions,
}

impl std::fmt::Debug for Evolver<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Evolver")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl<'a> Evolver<'a> {
    /// An evolver that calls `llm`, with the built-in prompts and the
    /// default options.
    #[must_use]
    pub fn new(llm: &'a dyn LlmProvider) -> Self {
        Evolver {
            llm,
            prompts: EvolvePrompts::builtin(),
            options: EvolveOptions::default(),
        }
    }

    /// With these prompts instead of the built-in ones.
    #[must_use]
    pub fn with_prompts(mut self, prompts: EvolvePrompts) -> Self {
        self.prompts = prompts;
        self
    }

    /// With these options (edit budget, rejected edits, profile, ...).
    #[must_use]
    pub fn with_options(mut self, options: EvolveOptions) -> Self {
        self.options = options;
        self
    }

    /// The options in use.
    #[must_use]
    pub fn options(&self) -> &EvolveOptions {
        &self.options
    }

    /// Evolves one skill file from its case pack.
    ///
    /// The target is `pack.target_file`, or [`skill_file_for`](evolution_types::skill_file_for) of the task
    /// type when that is empty. Without failure cases and lapse notes nothing
    /// is called and the record is `Skipped`. Otherwise, for failure cases:
    ///
    /// - **C, patch** (default): the `evolve_skill` prompt, then rank-and-clip
    ///   to the budget, apply with the frontmatter, appendix and momentum
    ///   protected, and [`validate_skill`](crate::validate::validate_skill); a round that fails (not JSON, no
    ///   applicable edit, invalid candidate) is retried once with feedback.
    /// - **B, rewrite**: one `evolve_skill` call for suggestions and edits, then
    ///   [`rewrite_from_suggestions`](crate::rewrite::rewrite_from_suggestions); the rewrite must keep the appendix and
    ///   momentum regions byte-equal and pass [`validate_skill`](crate::validate::validate_skill).
    ///
    /// When that produced no candidate and the pack has lapse notes, branch
    /// **A** (lapse only) takes over: one synthesized `applied_append` report per
    /// note, so that a caller does not mistake the round for a no-op. In every
    /// branch the lapse notes then go to the appendix; when existing plus new
    /// notes reach `consolidate_threshold`, would take more than `consolidate_chars`
    /// characters or would overflow the appendix limit
    /// ([`APPENDIX_MAX_CHARS`](evolution_patch::APPENDIX_MAX_CHARS)),
    /// [`consolidate_appendix`](crate::consolidate::consolidate_appendix) runs and its result
    /// is kept only when strictly shorter, in notes or, for a size trigger, in characters
    /// (guard G4). Notes that still cannot be written never cost the body candidate: it is
    /// kept (`Accepted`), and the reason says `appendix not applied: <why>`; a record whose
    /// only change was the appendix is then `Rejected`.
    ///
    /// Provider and store errors propagate; the record is built only at the end,
    /// so an error leaves nothing behind.
    ///
    /// # Errors
    /// The provider's and the store's errors.
    pub async fn skill(
        &self,
        pack: &SkillCasePack,
        store: &dyn SkillStore,
    ) -> Result<EvolutionRecord, EvolveError> {
        evolve_single_skill(self.llm, pack, store, &self.prompts, &self.options).await
    }

    /// Evolves the system prompt from the cross-task pack (branch C only: no
    /// lapse notes, no rewrite, no appendix writes).
    ///
    /// The profile's frozen `##` sections and the appendix are protected and
    /// [`validate_system`](crate::validate::validate_system) checks the candidate. A pack without failure cases is
    /// `Skipped` without a call.
    ///
    /// # Errors
    /// The provider's and the store's errors.
    pub async fn system_prompt(
        &self,
        pack: &SystemCasePack,
        store: &dyn PromptStore,
    ) -> Result<EvolutionRecord, EvolveError> {
        evolve_system_prompt(self.llm, pack, store, &self.prompts, &self.options).await
    }

    /// Evolves every extract/verify pair of a tool ([`tool_prompt_pairs`]), one record per
    /// pair in that order; see [`tool_pair`](Self::tool_pair).
    ///
    /// # Errors
    /// The provider's and the store's errors (a pair whose files the store lacks included).
    pub async fn tool(
        &self,
        pack: &ToolCasePack,
        store: &dyn PromptStore,
    ) -> Result<Vec<EvolutionRecord>, EvolveError> {
        let mut records = Vec::new();
        for pair in tool_prompt_pairs(pack) {
            records.push(self.tool_pair(pack, &pair, store).await?);
        }
        Ok(records)
    }

    /// Evolves one extract prompt and its verify prompt together, from the tool's pack.
    ///
    /// The `evolve_tool` reply's `extract_edits` and `verify_edits` are pooled
    /// (each tagged in `extra["_src"]`) so that one budget and one ranking cover
    /// both, then split back by the tag and applied per file with the
    /// output-format section and the appendix protected; [`validate_tool`](crate::validate::validate_tool)
    /// checks both. `original_content` and `evolved_content` are JSON
    /// `{"extract": …, "verify": …}`; `target_file` is the extract file. A pack
    /// without failure spans is `Skipped` without a call.
    ///
    /// # Errors
    /// The provider's and the store's errors.
    pub async fn tool_pair(
        &self,
        pack: &ToolCasePack,
        pair: &ToolPromptPair,
        store: &dyn PromptStore,
    ) -> Result<EvolutionRecord, EvolveError> {
        evolve_tool_pair(self.llm, pack, pair, store, &self.prompts, &self.options).await
    }
}
