//! Whole skill packages in the agent's workspace: an Agent Skills skill is a folder
//! (`SKILL.md`, `references/`, `scripts/`, assets), and the agent gets that folder as
//! `skills_dir/<folder>/`, so that the relative links and script paths of its `SKILL.md`
//! resolve. The files written from the version under test (its documents) come from the
//! [`Workspace`]; every other file of the folder is carried unchanged, as read once when
//! the run started.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use crate::runner::{RunnerError, Workspace};

/// One file of a skill's folder carried unchanged into every workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackageFile {
    /// Its bytes, as read when the run started.
    pub bytes: Arc<Vec<u8>>,
    /// Whether it is written executable (a script the skill runs).
    pub executable: bool,
}

/// A skill's folder given to the agent beside its documents: `skills_dir/<folder>/` holds
/// each document of `documents` with the text of the version under test and each file of
/// `files` unchanged.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SkillPackage {
    /// The folder's name under `skills_dir` (the skill's name).
    pub folder: String,
    /// Files written from the version under test: path in the folder (`SKILL.md`,
    /// `references/policy.md`) → the workspace document whose text it gets. A document the
    /// workspace does not hold is left out. A document placed anywhere but at `SKILL.md`
    /// (a reference evolved as a document of its own) is written only here, not at the top
    /// of the skills folder.
    pub documents: BTreeMap<String, String>,
    /// Files carried unchanged: path in the folder (`/`-separated) → the file.
    pub files: BTreeMap<String, PackageFile>,
}

/// Why a path inside a package cannot be written, `None` when it can: relative, made of
/// `/`-separated names, none of them empty, `.` or `..`, and no `\` or NUL anywhere.
pub fn package_path_problem(path: &str) -> Option<&'static str> {
    if path.is_empty() {
        return Some("empty");
    }
    if path.contains(['\\', '\0']) {
        return Some("contains a backslash or NUL");
    }
    if path.split('/').any(|part| part.is_empty()) {
        return Some("is absolute or has an empty part");
    }
    if path.split('/').any(|part| part == "." || part == "..") {
        return Some("has a relative directory part");
    }
    None
}

/// Whether the skill document `name` is written only inside a package (placed there at a
/// path other than its `SKILL.md`).
pub(crate) fn package_only(packages: &[SkillPackage], name: &str) -> bool {
    packages.iter().any(|p| {
        p.documents
            .iter()
            .any(|(path, document)| document == name && path != "SKILL.md")
    })
}

/// Writes every package of `packages` into `skills` (the workspace's skills folder).
pub(crate) fn write_packages(
    skills: &Path,
    workspace: &Workspace,
    packages: &[SkillPackage],
) -> Result<(), RunnerError> {
    let io = |source| RunnerError::Materialize {
        version: workspace.version.clone(),
        source,
    };
    for package in packages {
        let invalid = |name: &str, reason| RunnerError::InvalidDocumentName {
            version: workspace.version.clone(),
            name: format!("{}/{name}", package.folder),
            reason,
        };
        if let Some(reason) = package_path_problem(&package.folder) {
            return Err(invalid("", reason));
        }
        if package.folder.contains('/') || workspace.skills.contains_key(&package.folder) {
            return Err(invalid("", "is not a folder name of its own"));
        }
        let root = skills.join(&package.folder);
        std::fs::create_dir(&root).map_err(io)?;
        let texts = package.documents.iter().filter_map(|(path, document)| {
            workspace
                .skills
                .get(document)
                .map(|text| (path, text.as_bytes(), false))
        });
        let files = package
            .files
            .iter()
            .filter(|(path, _)| !package.documents.contains_key(*path))
            .map(|(path, file)| (path, file.bytes.as_slice(), file.executable));
        for (path, bytes, executable) in files.chain(texts) {
            if let Some(reason) = package_path_problem(path) {
                return Err(invalid(path, reason));
            }
            let target = root.join(path);
            if let Some(parent) = target.parent() {
                std::fs::create_dir_all(parent).map_err(io)?;
            }
            std::fs::write(&target, bytes).map_err(io)?;
            if executable {
                make_executable(&target).map_err(io)?;
            }
        }
    }
    Ok(())
}

#[cfg(unix)]
fn make_executable(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let mut permissions = std::fs::metadata(path)?.permissions();
    permissions.set_mode(permissions.mode() | 0o111);
    std::fs::set_permissions(path, permissions)
}

#[cfg(not(unix))]
fn make_executable(_: &Path) -> std::io::Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_inside_a_package_stay_inside_it() {
        assert_eq!(package_path_problem("references/a.md"), None);
        for bad in ["", "/etc/passwd", "a//b", "../x", "a/./b", "a\\b", "a\0"] {
            assert!(package_path_problem(bad).is_some(), "{bad:?}");
        }
    }

    #[test]
    fn documents_come_from_the_version_and_files_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::new("v2").with_skill("refunds.md", "rule v2");
        let package = SkillPackage {
            folder: "refunds".to_owned(),
            documents: BTreeMap::from([("SKILL.md".to_owned(), "refunds.md".to_owned())]),
            files: BTreeMap::from([
                (
                    "SKILL.md".to_owned(),
                    PackageFile {
                        bytes: Arc::new(b"rule v1".to_vec()),
                        executable: false,
                    },
                ),
                (
                    "scripts/run.sh".to_owned(),
                    PackageFile {
                        bytes: Arc::new(b"echo hi".to_vec()),
                        executable: true,
                    },
                ),
            ]),
        };
        write_packages(dir.path(), &ws, std::slice::from_ref(&package)).unwrap();
        let root = dir.path().join("refunds");
        assert_eq!(std::fs::read(root.join("SKILL.md")).unwrap(), b"rule v2");
        assert_eq!(
            std::fs::read(root.join("scripts/run.sh")).unwrap(),
            b"echo hi"
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(root.join("scripts/run.sh"))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o100, 0o100);
        }
        // A reference evolved as a document of its own is written in its folder only.
        let ws = ws.with_skill("refunds.references.policy.md", "policy v2");
        let mut with_reference = package.clone();
        with_reference.documents.insert(
            "references/policy.md".to_owned(),
            "refunds.references.policy.md".to_owned(),
        );
        assert!(package_only(
            std::slice::from_ref(&with_reference),
            "refunds.references.policy.md"
        ));
        assert!(!package_only(
            std::slice::from_ref(&with_reference),
            "refunds.md"
        ));
        let again = tempfile::tempdir().unwrap();
        write_packages(again.path(), &ws, &[with_reference]).unwrap();
        assert_eq!(
            std::fs::read(again.path().join("refunds/references/policy.md")).unwrap(),
            b"policy v2"
        );
        let mut bad = package;
        bad.folder = "..".to_owned();
        let other = tempfile::tempdir().unwrap();
        assert!(write_packages(other.path(), &ws, &[bad]).is_err());
    }
}
