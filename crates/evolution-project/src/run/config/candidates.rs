//! Which documents a run's candidates can change, which gate questions each is tested on, and
//! how many candidates a run can propose (the horizon e-LOND spreads its level over).

use std::collections::{BTreeMap, BTreeSet};

use evolution_types::GeneratedQuestion;

use super::RunConfig;
use crate::layout::{SkillDoc, TaskSkills};

impl RunConfig {
    /// The harness loop's settings for this configuration: its question sets, each
    /// candidate's gate scope and prompt documents, with `slow_update_template` (`None`: no
    /// slow update), the house rules `preferences` and the pre-flight `estimate`.
    pub fn loop_config(
        &self,
        slow_update_template: Option<String>,
        preferences: evolution_evolve::preferences::Preferences,
        estimate: Option<evolution_harness::Estimate>,
    ) -> evolution_harness::LoopConfig {
        evolution_harness::LoopConfig {
            run_name: self.name.clone(),
            max_epochs: self.max_epochs,
            train: self.train.clone(),
            gate: self.gate.clone(),
            // A skill's candidate (or its reference's) is gated on the questions of the task
            // types the skill serves.
            gate_scope: self.candidate_scope(),
            holdout: self.holdout.clone(),
            probation: self.probation.clone(),
            prompt_files: self.prompt_files.iter().cloned().collect(),
            slow_update_template,
            preferences,
            estimate,
        }
    }

    /// The most candidates the loop of this configuration can gate, the horizon over which
    /// e-LOND spreads its level evenly (fixed before the run).
    ///
    /// The kernel's proposer makes at most one candidate per task type of the training
    /// questions (one case pack each) and one per prompt document, every epoch; from the
    /// second epoch on, the slow update adds at most one per skill document. With
    /// `[gate] best_per_epoch = K` at most `K` of them are gated an epoch. A horizon that
    /// is too large only costs power; a candidate past it is not gated at all.
    pub fn horizon(&self) -> u64 {
        capped_horizon(
            horizon_of(
                &self.train,
                self.prompt_files.len(),
                self.max_epochs,
                self.skill_files.len(),
                &companions_of(&self.skill_docs, &self.reference_docs),
                &self.task_skills,
            ),
            self.max_epochs,
            self.gate_settings.best_per_epoch,
        )
    }

    /// The references evolved from each skill's case packs besides the skill itself (skill
    /// document → reference documents); skills without such references are left out.
    pub fn companions(&self) -> BTreeMap<String, Vec<String>> {
        companions_of(&self.skill_docs, &self.reference_docs)
    }

    /// Which task types each document a candidate can change serves: each skill's
    /// ([`Self::gate_scope`]) and, for each reference evolved as a document of its own, its
    /// skill's.
    pub fn candidate_scope(&self) -> BTreeMap<String, BTreeSet<String>> {
        let mut scope = self.gate_scope();
        for (skill, references) in self.companions() {
            if let Some(tasks) = scope.get(&skill).cloned() {
                for reference in references {
                    scope.insert(reference, tasks.clone());
                }
            }
        }
        scope
    }
}

/// Skill document → the documents of its references evolved with it.
pub(super) fn companions_of(
    skills: &[SkillDoc],
    references: &[SkillDoc],
) -> BTreeMap<String, Vec<String>> {
    let mut companions: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for reference in references {
        if let Some(skill) = skills.iter().find(|s| s.skill == reference.skill) {
            companions
                .entry(skill.document.clone())
                .or_default()
                .push(reference.document.clone());
        }
    }
    companions
}

/// A run's horizon `proposals` under a cap of `best_per_epoch` gated candidates in each of
/// `max_epochs` epochs: the smaller of the two (at least one).
pub(super) fn capped_horizon(
    proposals: u64,
    max_epochs: u32,
    best_per_epoch: Option<usize>,
) -> u64 {
    match best_per_epoch {
        Some(best) => proposals
            .min(u64::from(max_epochs).saturating_mul(u64::try_from(best).unwrap_or(u64::MAX)))
            .max(1),
        None => proposals,
    }
}

/// The most candidates a run proposes: per epoch one per training task type, one more per
/// reference its skill evolves with it (`companions`), and one per prompt document; and after
/// each epoch but the last a slow update per skill document and evolved reference.
pub(super) fn horizon_of(
    train: &[GeneratedQuestion],
    prompts: usize,
    max_epochs: u32,
    skills: usize,
    companions: &BTreeMap<String, Vec<String>>,
    task_skills: &TaskSkills,
) -> u64 {
    let task_types: BTreeSet<&str> = train.iter().map(|q| q.task_type.as_str()).collect();
    let n = |len: usize| u64::try_from(len).unwrap_or(u64::MAX);
    let with_companions = task_types.iter().fold(0u64, |sum, task| {
        let references = task_skills
            .by_task
            .get(*task)
            .or(task_skills.default.as_ref())
            .and_then(|skill| companions.get(skill))
            .map_or(0, Vec::len);
        sum.saturating_add(1).saturating_add(n(references))
    });
    let references: usize = companions.values().map(Vec::len).sum();
    let per_epoch = with_companions.saturating_add(n(prompts));
    let epochs = u64::from(max_epochs);
    let slow_updates = epochs
        .saturating_sub(1)
        .saturating_mul(n(skills).saturating_add(n(references)));
    epochs
        .saturating_mul(per_epoch)
        .saturating_add(slow_updates)
        .max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn question(task: &str) -> GeneratedQuestion {
        GeneratedQuestion {
            question_id: format!("{task}-1"),
            task_type: task.to_owned(),
            ..GeneratedQuestion::default()
        }
    }

    #[test]
    fn each_reference_evolved_with_a_skill_adds_a_candidate_per_epoch_and_a_slow_update() {
        let skill = |name: &str, path: &str| SkillDoc {
            skill: name.to_owned(),
            document: format!("{name}.md"),
            path: path.into(),
        };
        let skills = [
            skill("billing", "skills/billing/SKILL.md"),
            skill("refunds", "skills/refunds/SKILL.md"),
        ];
        let references = [
            SkillDoc {
                document: "billing.references.policy.md".to_owned(),
                path: "skills/billing/references/policy.md".into(),
                ..skills[0].clone()
            },
            SkillDoc {
                document: "billing.references.faq.md".to_owned(),
                path: "skills/billing/references/faq.md".into(),
                ..skills[0].clone()
            },
        ];
        let companions = companions_of(&skills, &references);
        assert_eq!(
            companions,
            BTreeMap::from([(
                "billing.md".to_owned(),
                vec![
                    "billing.references.policy.md".to_owned(),
                    "billing.references.faq.md".to_owned()
                ]
            )])
        );
        let task_skills = TaskSkills {
            by_task: BTreeMap::from([
                ("invoice".to_owned(), "billing.md".to_owned()),
                ("refund".to_owned(), "refunds.md".to_owned()),
            ]),
            default: None,
        };
        let train = [question("invoice"), question("refund")];
        // Without references: 2 task types and 1 prompt a epoch over 3 epochs, and 2 slow
        // updates after each of the first two.
        let none = BTreeMap::new();
        assert_eq!(
            horizon_of(&train, 1, 3, 2, &none, &task_skills),
            3 * 3 + 2 * 2
        );
        // billing's two references: 2 more candidates a epoch and 2 more slow updates.
        assert_eq!(
            horizon_of(&train, 1, 3, 2, &companions, &task_skills),
            3 * 5 + 2 * 4
        );
    }
}
