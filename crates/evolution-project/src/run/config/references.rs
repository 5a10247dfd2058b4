//! `[run] evolve_references`: the skills whose `references/*.md` files are evolved as
//! documents of their own (by `run`, and by `evolve <file> --agent-config`); every other file
//! of a skill's folder is carried to the agent unchanged and never edited.

use std::collections::BTreeSet;

use toml::Spanned;

use super::Source;
use crate::layout::SkillDoc;
use crate::skill_package::{package_folder, references};

/// The skills `key` names, each an Agent Skills skill of `docs` (by its name or its document
/// name); none when the key is absent.
pub(super) fn check_evolve_references(
    src: &Source<'_>,
    key: Option<&Spanned<Vec<String>>>,
    docs: &[SkillDoc],
) -> anyhow::Result<BTreeSet<String>> {
    let Some(key) = key else {
        return Ok(BTreeSet::new());
    };
    let mut names = BTreeSet::new();
    for wanted in key.get_ref() {
        let found = docs
            .iter()
            .find(|d| d.skill == *wanted || d.document == *wanted);
        match found {
            Some(doc) if package_folder(&doc.path).is_some() => {
                names.insert(doc.skill.clone());
            }
            Some(doc) => {
                return Err(src.at(
                    key.span(),
                    format!(
                        "[run] evolve_references: skill {:?} is a single file ({}), it has no \
                         references/ folder",
                        doc.skill,
                        doc.path.display()
                    ),
                ));
            }
            None => {
                let all: Vec<&str> = docs.iter().map(|d| d.skill.as_str()).collect();
                return Err(src.at(
                    key.span(),
                    format!(
                        "[run] evolve_references: {:?} is no skill of [run] skills (they are {})",
                        crate::render::terminal_safe(wanted),
                        all.join(", ")
                    ),
                ));
            }
        }
    }
    Ok(names)
}

/// The references of the skills `names` (of `docs`), each the document of its own `run`
/// evolves it as.
///
/// # Errors
/// A reference whose document name is that of a skill, or a folder that cannot be listed.
pub(super) fn reference_docs(
    src: &Source<'_>,
    key: Option<&Spanned<Vec<String>>>,
    names: &BTreeSet<String>,
    docs: &[SkillDoc],
) -> anyhow::Result<Vec<SkillDoc>> {
    let mut found = Vec::new();
    for doc in docs.iter().filter(|d| names.contains(&d.skill)) {
        for reference in references(doc)? {
            if let Some(clash) = docs.iter().find(|d| d.document == reference.document) {
                let problem = format!(
                    "[run] evolve_references: the reference {} would be evolved as the \
                     document {}, the name of the skill {}; rename one of them",
                    reference.path.display(),
                    reference.document,
                    clash.path.display()
                );
                return Err(match key {
                    Some(key) => src.at(key.span(), problem),
                    None => anyhow::anyhow!(problem),
                });
            }
            found.push(reference);
        }
    }
    Ok(found)
}
