//! The kernel's proposer: diagnose the epoch's training run, then evolve
//! every target that has a case pack (skills, the system prompt, tools).

use std::collections::BTreeMap;

use async_trait::async_trait;
use evolution_diagnose::{DiagnoseOptions, Diagnoser, JudgeScope};
use evolution_evolve::{EditBudgetSchedule, EvolveOptions, Evolver, tool_prompt_pairs};
use evolution_types::{
    EvolutionRecord, EvolutionStatus, GeneratedQuestion, LlmProvider, Profile, PromptStore, RunLog,
    SkillCasePack, SkillStore, StoreError,
};

use crate::evolution::{Proposal, Proposals, ProposeError, ProposeRequest, Proposer};
use crate::phase::Phase;
use crate::runner::Workspace;
use crate::templates::PromptTemplates;

/// A workspace seen through the kernel's read ports.
struct WorkspaceStore<'a>(&'a Workspace);

fn lookup(docs: &BTreeMap<String, String>, name: &str) -> Result<String, StoreError> {
    docs.get(name).cloned().ok_or_else(|| StoreError::NotFound {
        name: name.to_owned(),
    })
}

impl SkillStore for WorkspaceStore<'_> {
    fn read_skill(&self, filename: &str) -> Result<String, StoreError> {
        lookup(&self.0.skills, filename)
    }
    fn list_skill_files(&self) -> Result<Vec<String>, StoreError> {
        Ok(self.0.skills.keys().cloned().collect())
    }
}

impl PromptStore for WorkspaceStore<'_> {
    fn read_prompt(&self, filename: &str) -> Result<String, StoreError> {
        lookup(&self.0.prompts, filename)
    }
    fn list_prompt_files(&self) -> Result<Vec<String>, StoreError> {
        Ok(self.0.prompts.keys().cloned().collect())
    }
}

/// Diagnose → evolve, as a [`Proposer`] for [`crate::run_evolution`].
///
/// Each epoch: [`Diagnoser::run`] (its opening phase, `diagnose`) on the
/// epoch's training run (read from `run_log`; with
/// [`JudgeScope::ForProposal`] in `diagnose`, the system-prompt pack counts as used only
/// when the workspace holds the system prompt), then one evolve call per case pack — skills
/// ([`Evolver::skill`], once for the skill and once for each of its `companions` the
/// workspace holds), the system prompt ([`Evolver::system_prompt`],
/// only when the workspace holds `evolve.system_prompt_file` among its
/// prompts) and tools ([`Evolver::tool_pair`] for every extract/verify pair of
/// [`tool_prompt_pairs`], each pair only when the workspace holds at least one of its two
/// files), each announced as a `propose` phase naming its document
/// ([`ProposeRequest::phases`]). Each record whose
/// status is `accepted` (it changed and passed structural validation)
/// becomes one proposal labelled `<index>-<target file>`; skipped and
/// rejected records are dropped. The edit budget follows `schedule` at
/// step `epoch` of `max_epochs` ([`EditBudgetSchedule::budget_at`]); the
/// loop's blacklist goes into every evolve call's
/// [`EvolveOptions::rejected`]. The proposer writes nothing: the loop gates
/// each proposal and advances the store, and stores the diagnosis (returned
/// in [`Proposals::diagnosis`]) and the gated records in the run log.
///
/// Give it an `LlmJournal` (from `evolution-llm-cassette`) as `llm` so that
/// a run killed during a proposal does not send that proposal's finished
/// calls again when it resumes: the proposal is made again from the same
/// inputs, and the journal answers every call that finished before the kill.
pub struct KernelProposer<'a> {
    /// The LLM for judges and edits.
    pub llm: &'a dyn LlmProvider,
    /// Where the training rollouts were recorded.
    pub run_log: &'a dyn RunLog,
    /// The training questions (text and reference answers).
    pub questions: Vec<GeneratedQuestion>,
    /// Per-source trees for the judges (`video_id` → tree); may be empty.
    pub tree_data: BTreeMap<String, serde_json::Value>,
    /// The prompt templates.
    pub templates: PromptTemplates,
    /// Domain constants.
    pub profile: Profile,
    /// Diagnosis settings.
    pub diagnose: DiagnoseOptions,
    /// Evolution settings; `source_version`, `edit_budget`, `rejected` and
    /// `profile` are set per call.
    pub evolve: EvolveOptions,
    /// The edit budget over the epochs.
    pub schedule: EditBudgetSchedule,
    /// Documents evolved from a skill's case pack besides the skill itself (skill document →
    /// further documents, such as the skill's references): each is evolved from the same
    /// failures and becomes a candidate of its own. Empty: each pack evolves its skill only.
    pub companions: BTreeMap<String, Vec<String>>,
}

impl std::fmt::Debug for KernelProposer<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KernelProposer")
            .field("schedule", &self.schedule)
            .finish_non_exhaustive()
    }
}

fn proposal(index: usize, record: EvolutionRecord, writes: BTreeMap<String, String>) -> Proposal {
    Proposal {
        label: format!("{index}-{}", record.target_file),
        writes,
        record,
    }
}

#[async_trait]
impl Proposer for KernelProposer<'_> {
    async fn propose(&self, request: ProposeRequest<'_>) -> Result<Proposals, ProposeError> {
        let store = WorkspaceStore(request.workspace);
        let has_system = request
            .workspace
            .prompts
            .contains_key(&self.evolve.system_prompt_file);
        let mut diagnose = self.diagnose.clone();
        // Without a system prompt in the workspace its pack is never used: no judge runs
        // for it alone.
        if let JudgeScope::ForProposal { system_pack } = &mut diagnose.judges {
            *system_pack = *system_pack && has_system;
        }
        let diagnosis = Diagnoser::new(self.llm, self.run_log, &store)
            .with_prompts(self.templates.diagnose.clone())
            .with_profile(self.profile.clone())
            .with_options(diagnose)
            .run(request.train_run_id, &self.questions, &self.tree_data)
            .await?;
        let budget = self
            .schedule
            .budget_at(u64::from(request.epoch), u64::from(request.max_epochs))?
            .unwrap_or(usize::MAX);
        let options = EvolveOptions {
            source_version: request.workspace.version.clone(),
            edit_budget: budget,
            rejected: request.rejected.to_vec(),
            profile: self.profile.clone(),
            ..self.evolve.clone()
        };
        let system_file = options.system_prompt_file.clone();
        let evolver = Evolver::new(self.llm)
            .with_prompts(self.templates.evolve.clone())
            .with_options(options);
        let mut records = Vec::new();
        for skill_pack in &diagnosis.skill_packs {
            let companions = self.companions.get(&skill_pack.target_file);
            let held = companions
                .into_iter()
                .flatten()
                .filter(|file| request.workspace.skills.contains_key(*file))
                .cloned();
            let targets = std::iter::once(skill_pack.target_file.clone()).chain(held);
            for target in targets {
                let pack = SkillCasePack {
                    target_file: target,
                    ..skill_pack.clone()
                };
                request.phases.start(Phase::Propose, &pack.target_file);
                let record =
                    evolver
                        .skill(&pack, &store)
                        .await
                        .map_err(|source| ProposeError::Evolve {
                            target: "skill",
                            source,
                        })?;
                let writes =
                    BTreeMap::from([(record.target_file.clone(), record.evolved_content.clone())]);
                records.push((record, writes));
            }
        }
        let has_system = request.workspace.prompts.contains_key(&system_file);
        if let Some(pack) = diagnosis.system_pack.as_ref().filter(|_| has_system) {
            request.phases.start(Phase::Propose, &system_file);
            let record = evolver
                .system_prompt(pack, &store)
                .await
                .map_err(|source| ProposeError::Evolve {
                    target: "system prompt",
                    source,
                })?;
            let writes =
                BTreeMap::from([(record.target_file.clone(), record.evolved_content.clone())]);
            records.push((record, writes));
        }
        for pack in &diagnosis.tool_packs {
            // Every extract/verify pair the profile maps to the tool is its own candidate.
            for pair in tool_prompt_pairs(pack) {
                let prompts_held = &request.workspace.prompts;
                if !prompts_held.contains_key(&pair.extract)
                    && !prompts_held.contains_key(&pair.verify)
                {
                    continue;
                }
                request.phases.start(Phase::Propose, &pair.extract);
                let record = evolver
                    .tool_pair(pack, &pair, &store)
                    .await
                    .map_err(|source| ProposeError::Evolve {
                        target: "tool",
                        source,
                    })?;
                let mut writes = BTreeMap::new();
                if record.status == EvolutionStatus::Accepted {
                    // A tool record holds {"extract": …, "verify": …}.
                    let texts: serde_json::Value = serde_json::from_str(&record.evolved_content)
                        .map_err(|e| ProposeError::Unreadable {
                            what: "evolved tool prompts",
                            message: e.to_string(),
                        })?;
                    for (file, key) in [(pair.extract, "extract"), (pair.verify, "verify")] {
                        if let Some(text) = texts.get(key).and_then(serde_json::Value::as_str) {
                            writes.insert(file, text.to_owned());
                        }
                    }
                }
                records.push((record, writes));
            }
        }
        let proposals = records
            .into_iter()
            .filter(|(record, writes)| {
                record.status == EvolutionStatus::Accepted && !writes.is_empty()
            })
            .enumerate()
            .map(|(i, (record, writes))| proposal(i, record, writes))
            .collect();
        Ok(Proposals {
            proposals,
            diagnosis: Some(diagnosis),
        })
    }

    fn opening_phase(&self) -> Phase {
        Phase::Diagnose
    }
}
