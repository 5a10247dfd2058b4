//! Installs the version under test where the host reads it: each skill document as an Agent
//! Skills folder (`<root>/<name>/SKILL.md` with `name` and `description` frontmatter, beside
//! the other files of the skill's folder in the workspace: references, scripts, assets) and
//! the prompt documents as the host's instructions file.

use std::path::Path;

use crate::error::{IoContext, Result, invalid};

/// Longest skill name the hosts accept (the Agent Skills limit).
const MAX_NAME_CHARS: usize = 64;

/// Longest description written for a skill whose document has none.
const MAX_DESCRIPTION_CHARS: usize = 200;

/// Writes every skill document of `skills_dir` under `folder/skills_root` and the prompt
/// documents of `prompts_dir` (joined in name order) to `folder/instructions`; returns the
/// names of the installed skills.
pub(crate) fn install(
    skills_dir: &Path,
    prompts_dir: &Path,
    folder: &Path,
    skills_root: &str,
    instructions: &str,
) -> Result<Vec<String>> {
    let mut names = Vec::new();
    for (file, text) in documents(skills_dir)? {
        let stem = file
            .rsplit_once('.')
            .map_or(file.as_str(), |(stem, _)| stem);
        let (name, document) = skill_document(stem, &text);
        if names.contains(&name) {
            invalid!("two skill documents install as the same skill {name:?}");
        }
        let dir = folder.join(skills_root).join(&name);
        std::fs::create_dir_all(&dir).io(|| format!("cannot create {}", dir.display()))?;
        let package = skills_dir.join(stem);
        if package.is_dir() {
            copy_package(&package, &dir)?;
        }
        std::fs::write(dir.join("SKILL.md"), document)
            .io(|| format!("cannot write {}/SKILL.md", dir.display()))?;
        names.push(name);
    }
    let prompts = documents(prompts_dir)?;
    if !prompts.is_empty() {
        let text = match prompts.as_slice() {
            [(_, only)] => only.clone(),
            several => several
                .iter()
                .map(|(name, text)| format!("<!-- {name} -->\n{text}"))
                .collect::<Vec<_>>()
                .join("\n\n"),
        };
        std::fs::write(folder.join(instructions), text)
            .io(|| format!("cannot write {instructions}"))?;
    }
    Ok(names)
}

/// Copies every file and folder of `from` into `to` (its `SKILL.md` too, overwritten by
/// the caller), permissions kept; a symbolic link is not followed but left out.
fn copy_package(from: &Path, to: &Path) -> Result<()> {
    for entry in std::fs::read_dir(from).io(|| format!("cannot read {}", from.display()))? {
        let entry = entry.io(|| format!("cannot read {}", from.display()))?;
        let kind = entry
            .file_type()
            .io(|| format!("cannot read {}", entry.path().display()))?;
        let target = to.join(entry.file_name());
        if kind.is_dir() {
            std::fs::create_dir_all(&target)
                .io(|| format!("cannot create {}", target.display()))?;
            copy_package(&entry.path(), &target)?;
        } else if kind.is_file() {
            std::fs::copy(entry.path(), &target)
                .io(|| format!("cannot write {}", target.display()))?;
        }
    }
    Ok(())
}

/// The documents of `dir` (file name, text), in name order; none when it does not exist.
fn documents(dir: &Path) -> Result<Vec<(String, String)>> {
    if !dir.is_dir() {
        return Ok(Vec::new());
    }
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).io(|| format!("cannot read {}", dir.display()))? {
        let entry = entry.io(|| format!("cannot read {}", dir.display()))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.')
            || !entry
                .file_type()
                .io(|| format!("cannot read {}", entry.path().display()))?
                .is_file()
        {
            continue;
        }
        let text = std::fs::read_to_string(entry.path())
            .io(|| format!("cannot read {} as UTF-8", entry.path().display()))?;
        found.push((name, text));
    }
    found.sort();
    Ok(found)
}

/// The folder name and the `SKILL.md` text of the skill document `text` named `stem`:
/// frontmatter kept, `name` and `description` added when missing.
pub(crate) fn skill_document(stem: &str, text: &str) -> (String, String) {
    let (front, body) = split_frontmatter(text);
    let value_of = |key: &str| {
        front.and_then(|front| {
            front.lines().find_map(|line| {
                line.strip_prefix(key)
                    .and_then(|rest| rest.strip_prefix(':'))
                    .map(|v| v.trim().trim_matches(['"', '\'']).to_owned())
                    .filter(|v| !v.is_empty())
            })
        })
    };
    let name = skill_name(value_of("name").as_deref().unwrap_or(stem));
    let mut added = String::new();
    if value_of("name").is_none() {
        added.push_str(&format!("name: {name}\n"));
    }
    if value_of("description").is_none() {
        added.push_str(&format!(
            "description: {}\n",
            yaml_string(&description(body, &name))
        ));
    }
    let document = match front {
        Some(front) => format!("---\n{added}{front}---\n{body}"),
        None => format!("---\n{added}---\n{body}"),
    };
    (name, document)
}

/// The frontmatter (its lines, each ending in a newline) and the body after it.
fn split_frontmatter(text: &str) -> (Option<&str>, &str) {
    let Some(rest) = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
    else {
        return (None, text);
    };
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            let front = rest.get(..offset).unwrap_or_default();
            let body = rest.get(offset + line.len()..).unwrap_or_default();
            return (Some(front), body);
        }
        offset += line.len();
    }
    (None, text)
}

/// `raw` as an Agent Skills name: lowercase letters, digits and hyphens, at most 64.
fn skill_name(raw: &str) -> String {
    let mut name: String = raw
        .chars()
        .map(|c| {
            let c = c.to_ascii_lowercase();
            if c.is_ascii_lowercase() || c.is_ascii_digit() {
                c
            } else {
                '-'
            }
        })
        .collect();
    while name.contains("--") {
        name = name.replace("--", "-");
    }
    let name: String = name
        .trim_matches('-')
        .chars()
        .take(MAX_NAME_CHARS)
        .collect();
    let name = name.trim_end_matches('-');
    if name.is_empty() {
        "skill".to_owned()
    } else {
        name.to_owned()
    }
}

/// A description for a skill that has none: its first line of text.
fn description(body: &str, name: &str) -> String {
    body.lines()
        .map(|line| line.trim().trim_start_matches('#').trim())
        .find(|line| !line.is_empty())
        .map_or_else(
            || format!("The {name} skill."),
            |line| line.chars().take(MAX_DESCRIPTION_CHARS).collect(),
        )
}

/// `text` as a YAML double-quoted scalar (a JSON string is one).
fn yaml_string(text: &str) -> String {
    serde_json::Value::String(text.to_owned()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frontmatter_is_kept_and_completed() {
        let (name, doc) =
            skill_document("Release Notes", "# Write release notes\nRULE qa => yes\n");
        assert_eq!(name, "release-notes");
        assert_eq!(
            doc,
            "---\nname: release-notes\ndescription: \"Write release notes\"\n---\n# Write release notes\nRULE qa => yes\n"
        );
        let kept = "---\nname: lint\ndescription: Lints code\nlicense: MIT\n---\nbody\n";
        assert_eq!(
            skill_document("other", kept),
            ("lint".to_owned(), kept.to_owned())
        );
        let (_, doc) = skill_document("x", "---\nname: x\n---\n\n\"quoted\" line\n");
        assert!(doc.starts_with("---\ndescription: \"\\\"quoted\\\" line\"\nname: x\n---\n"));
    }

    #[test]
    fn names_fit_the_agent_skills_rules() {
        assert_eq!(skill_name("../Etc"), "etc");
        assert_eq!(skill_name("___"), "skill");
        assert_eq!(skill_name(&"a".repeat(100)).len(), MAX_NAME_CHARS);
    }
}
