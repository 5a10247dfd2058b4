//! What the agent is given to read: the documents of its workspace and the gate questions
//! each skill's candidate is tested on. `run` and a gated `evolve` both build them here, so
//! an agent sees the same document names (`skills/refunds/SKILL.md` arrives as
//! `refunds.md`) and a skill's candidate is judged on the same questions in both.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use evolution_harness::Workspace;
use evolution_types::GeneratedQuestion;
use serde::{Deserialize, Serialize};

use crate::input::{InputKind, read_input_text};
use crate::layout::{SkillDoc, TaskSkills};

/// What a document is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DocKind {
    /// A skill document.
    Skill,
    /// A prompt document (system or tool prompt).
    Prompt,
    /// A `references/*.md` file of an Agent Skills skill, evolved as a document of its own
    /// (`[run] evolve_references`); the agent finds it at its place in the skill's folder.
    Reference,
}

/// One document of the agent's workspace, before its text is read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedDoc {
    /// Its name in the workspace and the store (`<skill>.md`, or the prompt's file name).
    pub document: String,
    /// The skill's name (the document name without `.md` for prompts; the skill it belongs to
    /// for a reference).
    pub name: String,
    /// Skill, prompt or reference.
    pub kind: DocKind,
    /// The user's file.
    pub path: PathBuf,
}

/// The documents of the agent's workspace: every skill of `skill_docs` under its document
/// name, every reference of `references` evolved as a document of its own, and every prompt
/// of `prompt_files` in the folder `prompts`; sorted by document name.
pub fn planned(
    skill_docs: &[SkillDoc],
    references: &[SkillDoc],
    prompts: Option<&Path>,
    prompt_files: &[String],
) -> Vec<PlannedDoc> {
    let of = |kind: DocKind| {
        move |d: &SkillDoc| PlannedDoc {
            document: d.document.clone(),
            name: d.skill.clone(),
            kind,
            path: d.path.clone(),
        }
    };
    let skills = skill_docs
        .iter()
        .map(of(DocKind::Skill))
        .chain(references.iter().map(of(DocKind::Reference)));
    let prompts = prompts.into_iter().flat_map(|dir| {
        prompt_files.iter().map(move |n| PlannedDoc {
            document: n.clone(),
            name: n.trim_end_matches(".md").to_owned(),
            kind: DocKind::Prompt,
            path: dir.join(n),
        })
    });
    let mut all: Vec<PlannedDoc> = skills.chain(prompts).collect();
    all.sort_by(|a, b| a.document.cmp(&b.document));
    all
}

/// The text of a planned document, read and checked as its kind of input.
///
/// # Errors
/// A file that cannot be read, or is not a document this tool accepts (a bad input).
pub fn read_planned(doc: &PlannedDoc) -> anyhow::Result<String> {
    let input = match doc.kind {
        DocKind::Skill | DocKind::Reference => InputKind::SkillDocument,
        DocKind::Prompt => InputKind::PromptDocument,
    };
    read_input_text(&doc.path, input)
}

/// The agent's workspace `version` holding `documents` (name → text): the names in
/// `prompt_files` are its prompts, every other one a skill.
pub fn workspace(
    version: impl Into<String>,
    documents: impl IntoIterator<Item = (String, String)>,
    prompt_files: &BTreeSet<String>,
) -> Workspace {
    Workspace::of_documents(version, documents, prompt_files)
}

/// Which task types each skill document serves (document name → task types), from the
/// task-type mapping; a skill that serves none is left out.
pub fn gate_scope(task_skills: &TaskSkills) -> BTreeMap<String, BTreeSet<String>> {
    let mut scope: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (task, document) in &task_skills.by_task {
        scope
            .entry(document.clone())
            .or_default()
            .insert(task.clone());
    }
    scope
}

/// The questions of `questions` whose task type is one of `tasks`, in their order.
pub fn serving(
    questions: &[GeneratedQuestion],
    tasks: &BTreeSet<String>,
) -> Vec<GeneratedQuestion> {
    questions
        .iter()
        .filter(|q| tasks.contains(&q.task_type))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skills_and_prompts_are_planned_under_their_document_names() {
        let skills = vec![SkillDoc {
            skill: "refunds".to_owned(),
            document: "refunds.md".to_owned(),
            path: PathBuf::from("skills/refunds/SKILL.md"),
        }];
        let plan = planned(
            &skills,
            &[],
            Some(Path::new("prompts")),
            &["agent.md".to_owned()],
        );
        let names: Vec<(&str, DocKind)> =
            plan.iter().map(|d| (d.document.as_str(), d.kind)).collect();
        assert_eq!(
            names,
            [
                ("agent.md", DocKind::Prompt),
                ("refunds.md", DocKind::Skill)
            ]
        );
        let ws = workspace(
            "v1",
            [
                ("refunds.md".to_owned(), "r".to_owned()),
                ("agent.md".to_owned(), "p".to_owned()),
            ],
            &BTreeSet::from(["agent.md".to_owned()]),
        );
        assert_eq!(ws.skills.keys().collect::<Vec<_>>(), ["refunds.md"]);
        assert_eq!(ws.prompts.keys().collect::<Vec<_>>(), ["agent.md"]);
    }

    #[test]
    fn each_skill_serves_the_task_types_mapped_to_it() {
        let skills = TaskSkills {
            by_task: BTreeMap::from([
                ("refund".to_owned(), "refunds.md".to_owned()),
                ("billing".to_owned(), "billing.md".to_owned()),
                ("other".to_owned(), "billing.md".to_owned()),
            ]),
            default: None,
        };
        let scope = gate_scope(&skills);
        assert_eq!(scope.len(), 2);
        assert_eq!(scope["billing.md"].len(), 2);
        let questions: Vec<GeneratedQuestion> = ["refund", "other", "refund"]
            .iter()
            .enumerate()
            .map(|(i, t)| GeneratedQuestion {
                question_id: format!("q{i}"),
                task_type: (*t).to_owned(),
                ..GeneratedQuestion::default()
            })
            .collect();
        let ids: Vec<String> = serving(&questions, &scope["refunds.md"])
            .into_iter()
            .map(|q| q.question_id)
            .collect();
        assert_eq!(ids, ["q0", "q2"]);
    }
}
