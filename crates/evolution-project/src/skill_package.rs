//! A skill's whole folder: an Agent Skills skill (`<folder>/SKILL.md`) is a package of
//! files, its `references/`, `scripts/` and assets beside the `SKILL.md`. The agent of
//! `run` and of a gated `evolve` gets the package as `skills_dir/<name>/`, the `SKILL.md`
//! (and any evolved document of the package) as the version under test has it, every other
//! file unchanged, read once before the first rollout.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use evolution_harness::{PackageFile, SkillPackage};

use crate::agent_workspace::{DocKind, PlannedDoc};
use crate::error::bad_at;
use crate::layout::{SKILL_MD, SkillDoc};

/// Most files of one package carried into the agent's workspace.
pub const MAX_PACKAGE_FILES: usize = 1000;

/// Most bytes of one package's files carried into the agent's workspace.
pub const MAX_PACKAGE_BYTES: u64 = 32 * 1024 * 1024;

/// The folder of the skill file `path` when it is a package (`<folder>/SKILL.md`).
pub fn package_folder(path: &Path) -> Option<PathBuf> {
    if path.file_name().and_then(|n| n.to_str()) != Some(SKILL_MD) {
        return None;
    }
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => Some(p.to_path_buf()),
        _ => Some(PathBuf::from(".")),
    }
}

/// How far above a file its skill's `SKILL.md` is looked for.
const MAX_PACKAGE_DEPTH: usize = 8;

/// Where a file lies in a skill's folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PackageMember {
    /// No `SKILL.md` above it, or it is the `SKILL.md` itself, a Markdown file beside it, or
    /// no file at all.
    Outside,
    /// A `references/…/*.md` file of the skill folder `folder`, at `path` inside it.
    Reference {
        /// The skill's folder (the one holding its `SKILL.md`).
        folder: PathBuf,
        /// The file's path inside it, `/`-separated.
        path: String,
    },
    /// Any other file of the skill folder `folder` (a script, an asset): carried to the agent
    /// unchanged, never edited.
    Carried {
        /// The skill's folder.
        folder: PathBuf,
        /// The file's path inside it, `/`-separated.
        path: String,
    },
}

/// Where `file` lies in a skill's folder: the nearest folder above it holding a `SKILL.md`
/// (at most eight levels up) is its skill's. A missing file, and a Markdown
/// file directly beside the `SKILL.md`, are outside.
pub fn package_member(file: &Path) -> PackageMember {
    let Ok(file) = std::path::absolute(file) else {
        return PackageMember::Outside;
    };
    if file.file_name().and_then(|n| n.to_str()) == Some(SKILL_MD) {
        return PackageMember::Outside;
    }
    for folder in file.ancestors().skip(1).take(MAX_PACKAGE_DEPTH) {
        if !folder.join(SKILL_MD).is_file() {
            continue;
        }
        let Ok(inner) = file.strip_prefix(folder) else {
            break;
        };
        let parts: Vec<String> = inner
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        let path = parts.join("/");
        // A Markdown file beside the `SKILL.md` may be a skill of its own (a single-skill
        // project holding other documents); a file that does not exist is reported as such.
        if (parts.len() == 1 && path.ends_with(".md")) || !file.is_file() {
            return PackageMember::Outside;
        }
        let folder = folder.to_path_buf();
        let reference = parts.len() >= 2
            && parts.first().is_some_and(|p| p == "references")
            && path.ends_with(".md");
        return if reference {
            PackageMember::Reference { folder, path }
        } else {
            PackageMember::Carried { folder, path }
        };
    }
    PackageMember::Outside
}

/// Why the file `file` (at `path` of the skill folder `folder`, a script or an asset) is not
/// evolved: a bad input.
pub fn carried_refusal(file: &Path, folder: &Path, path: &str) -> anyhow::Error {
    bad_at(
        file,
        None,
        format!(
            "is {path} of the skill folder {}: a skill's scripts and assets are given to the \
                agent unchanged and never edited (evolve its {SKILL_MD}, or a references/*.md \
                file of a skill listed in [run] evolve_references; nothing was run)",
            folder.display()
        ),
    )
}

/// Refuses to evolve `file` when it lies in a skill's folder and may not be: a script or an
/// asset never, a reference only when `gated` (with `--agent-config`, whose
/// `[run] evolve_references` must list its skill: [`crate::evolve::gating::GateTarget::resolve`]
/// checks it).
///
/// # Errors
/// A bad input naming the file and why.
pub fn refuse_member(file: &Path, gated: bool) -> anyhow::Result<()> {
    match package_member(file) {
        PackageMember::Outside => Ok(()),
        PackageMember::Reference { .. } if gated => Ok(()),
        PackageMember::Carried { folder, path } => Err(carried_refusal(file, &folder, &path)),
        PackageMember::Reference { folder, .. } => Err(bad_at(
            file,
            None,
            format!(
                "is a reference of the skill folder {}: a reference is evolved as a document \
                    of its own only with --agent-config naming a run configuration whose [run] \
                    evolve_references lists its skill (nothing was run)",
                folder.display()
            ),
        )),
    }
}

/// The document name of the reference `path` (`references/policy.md`) of skill `skill` when
/// it is evolved as a document of its own: `billing.references.policy.md`.
pub fn reference_document(skill: &str, path: &str) -> String {
    let stem = path.strip_suffix(".md").unwrap_or(path);
    format!("{skill}.{}.md", stem.replace('/', "."))
}

/// The packages of the skills among `docs`: each skill read from a `SKILL.md` becomes the
/// folder `<name>/` of the agent's skills folder, its `SKILL.md` the version's text of the
/// skill's document and every other file (hidden ones left out) carried unchanged.
///
/// # Errors
/// A bad input naming the file: a symbolic link in the folder, a file name that is not
/// UTF-8, a file that cannot be read, or a folder past [`MAX_PACKAGE_FILES`] files or
/// [`MAX_PACKAGE_BYTES`] bytes.
pub fn packages(docs: &[PlannedDoc]) -> anyhow::Result<Vec<SkillPackage>> {
    let mut found = Vec::new();
    let mut folders = Vec::new();
    for doc in docs.iter().filter(|d| d.kind == DocKind::Skill) {
        let Some(folder) = package_folder(&doc.path) else {
            continue;
        };
        let mut files = BTreeMap::new();
        let mut bytes = 0u64;
        collect(&folder, "", &mut files, &mut bytes)?;
        files.remove(SKILL_MD);
        found.push(SkillPackage {
            folder: doc.name.clone(),
            documents: BTreeMap::from([(SKILL_MD.to_owned(), doc.document.clone())]),
            files,
        });
        folders.push(folder);
    }
    // A reference evolved as a document of its own is written from the version under test
    // at its place in its skill's folder, not carried as the user's file.
    for doc in docs.iter().filter(|d| d.kind == DocKind::Reference) {
        let placed = found
            .iter_mut()
            .zip(&folders)
            .find(|(package, _)| package.folder == doc.name)
            .and_then(|(package, folder)| {
                let inner = doc.path.strip_prefix(folder).ok()?;
                Some((package, slash_path(inner)))
            });
        let Some((package, inner)) = placed else {
            return Err(bad_at(
                &doc.path,
                None,
                format!("is no file of the folder of skill {}", doc.name),
            ));
        };
        package.files.remove(&inner);
        package.documents.insert(inner, doc.document.clone());
    }
    Ok(found)
}

/// `path` (relative) as `/`-separated names.
fn slash_path(path: &Path) -> String {
    path.components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

/// The `references/**/*.md` files of the Agent Skills skill `skill` (none for a skill that is
/// a single file), each as the document of its own it is evolved as
/// ([`reference_document`]), sorted by path; hidden files and folders are left out.
///
/// # Errors
/// A bad input naming the file: a symbolic link, a name that is not UTF-8, a folder that
/// cannot be read, or more than [`MAX_PACKAGE_FILES`] references.
pub fn references(skill: &SkillDoc) -> anyhow::Result<Vec<SkillDoc>> {
    let Some(folder) = package_folder(&skill.path) else {
        return Ok(Vec::new());
    };
    let mut found = Vec::new();
    let root = folder.join("references");
    if root.is_dir() {
        walk(&root, "references/", &mut |path, inner, _| {
            if !inner.ends_with(".md") {
                return Ok(());
            }
            if found.len() >= MAX_PACKAGE_FILES {
                return Err(bad_at(
                    &root,
                    None,
                    format!("holds more than {MAX_PACKAGE_FILES} references"),
                ));
            }
            found.push(SkillDoc {
                skill: skill.skill.clone(),
                document: reference_document(&skill.skill, &inner),
                path: path.to_path_buf(),
            });
            Ok(())
        })?;
    }
    Ok(found)
}

/// Every carried file of the packages of `docs`, as `<name>/<path>` → the SHA-256 of its
/// bytes (a resumed run compares them).
///
/// # Errors
/// As [`packages`].
pub fn file_digests(docs: &[PlannedDoc]) -> anyhow::Result<BTreeMap<String, String>> {
    use sha2::{Digest as _, Sha256};
    let mut digests = BTreeMap::new();
    for package in packages(docs)? {
        for (path, file) in &package.files {
            let hex = Sha256::digest(file.bytes.as_slice()).iter().fold(
                String::with_capacity(64),
                |mut hex, byte| {
                    hex.push_str(&format!("{byte:02x}"));
                    hex
                },
            );
            digests.insert(format!("{}/{path}", package.folder), hex);
        }
    }
    Ok(digests)
}

/// Adds the files under `dir` (at `prefix` inside the package) to `files`.
fn collect(
    dir: &Path,
    prefix: &str,
    files: &mut BTreeMap<String, PackageFile>,
    bytes: &mut u64,
) -> anyhow::Result<()> {
    walk(dir, prefix, &mut |path, inner, meta| {
        *bytes = bytes.saturating_add(meta.len());
        if files.len() >= MAX_PACKAGE_FILES || *bytes > MAX_PACKAGE_BYTES {
            return Err(bad_at(
                path,
                None,
                format!(
                    "the skill's folder holds more than {MAX_PACKAGE_FILES} files or \
                     {} MiB, all of which the agent would be given; move what the skill \
                     does not use out of it",
                    MAX_PACKAGE_BYTES / (1024 * 1024)
                ),
            ));
        }
        let content =
            std::fs::read(path).map_err(|e| bad_at(path, None, format!("cannot read: {e}")))?;
        files.insert(
            inner,
            PackageFile {
                bytes: Arc::new(content),
                executable: is_executable(meta),
            },
        );
        Ok(())
    })
}

/// Calls `file` with each regular file under `dir` (its path, its `/`-separated path after
/// `prefix`, its metadata), in name order, hidden files and folders left out.
///
/// # Errors
/// A symbolic link, a name that is not UTF-8 or a folder that cannot be read (a bad input
/// naming it), or what `file` returns.
fn walk(
    dir: &Path,
    prefix: &str,
    file: &mut dyn FnMut(&Path, String, &std::fs::Metadata) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let entries = std::fs::read_dir(dir)
        .map_err(|e| bad_at(dir, None, format!("cannot read the skill's folder: {e}")))?;
    let mut paths = Vec::new();
    for entry in entries {
        let entry =
            entry.map_err(|e| bad_at(dir, None, format!("cannot read the skill's folder: {e}")))?;
        paths.push(entry.path());
    }
    paths.sort();
    for path in paths {
        let Some(name) = path.file_name().and_then(|n| n.to_str()).map(str::to_owned) else {
            return Err(bad_at(
                &path,
                None,
                "a file name of a skill's folder must be UTF-8",
            ));
        };
        if name.starts_with('.') {
            continue;
        }
        let inner = format!("{prefix}{name}");
        let meta = std::fs::symlink_metadata(&path)
            .map_err(|e| bad_at(&path, None, format!("cannot read: {e}")))?;
        if meta.file_type().is_symlink() {
            return Err(bad_at(
                &path,
                None,
                "is a symbolic link; skill folders may not hold links (copy the file in instead)",
            ));
        }
        if meta.is_dir() {
            walk(&path, &format!("{inner}/"), file)?;
        } else if meta.is_file() {
            file(&path, inner, &meta)?;
        }
    }
    Ok(())
}

#[cfg(unix)]
fn is_executable(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    meta.permissions().mode() & 0o111 != 0
}

#[cfg(not(unix))]
fn is_executable(_: &std::fs::Metadata) -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn planned(path: PathBuf) -> PlannedDoc {
        PlannedDoc {
            document: "refunds.md".to_owned(),
            name: "refunds".to_owned(),
            kind: DocKind::Skill,
            path,
        }
    }

    #[test]
    fn a_skill_folder_is_carried_whole_but_hidden_files() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir_all(d.join("references")).unwrap();
        std::fs::create_dir_all(d.join(".git")).unwrap();
        std::fs::write(d.join("SKILL.md"), "skill").unwrap();
        std::fs::write(d.join("references/policy.md"), "policy").unwrap();
        std::fs::write(d.join(".git/HEAD"), "x").unwrap();
        let found = packages(&[planned(d.join("SKILL.md"))]).unwrap();
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].folder, "refunds");
        assert_eq!(found[0].documents["SKILL.md"], "refunds.md");
        assert_eq!(
            found[0].files.keys().collect::<Vec<_>>(),
            ["references/policy.md"]
        );
        // A flat skill file has no package.
        std::fs::write(d.join("refunds.md"), "skill").unwrap();
        assert!(
            packages(&[planned(d.join("refunds.md"))])
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn files_are_placed_in_their_skill_folder() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir_all(d.join("billing/references/deep")).unwrap();
        std::fs::create_dir_all(d.join("billing/scripts")).unwrap();
        for file in [
            "billing/SKILL.md",
            "billing/notes.md",
            "billing/logo.png",
            "billing/references/policy.md",
            "billing/references/deep/faq.md",
            "billing/references/table.csv",
            "billing/scripts/run.md",
            "flat.md",
        ] {
            std::fs::write(d.join(file), "x").unwrap();
        }
        let member = |file: &str| match package_member(&d.join(file)) {
            PackageMember::Outside => "outside".to_owned(),
            PackageMember::Reference { path, .. } => format!("reference {path}"),
            PackageMember::Carried { path, .. } => format!("carried {path}"),
        };
        assert_eq!(member("billing/SKILL.md"), "outside");
        assert_eq!(member("billing/notes.md"), "outside");
        assert_eq!(member("billing/missing.sh"), "outside");
        assert_eq!(member("flat.md"), "outside");
        assert_eq!(member("billing/logo.png"), "carried logo.png");
        assert_eq!(
            member("billing/references/policy.md"),
            "reference references/policy.md"
        );
        assert_eq!(
            member("billing/references/deep/faq.md"),
            "reference references/deep/faq.md"
        );
        assert_eq!(
            member("billing/references/table.csv"),
            "carried references/table.csv"
        );
        assert_eq!(member("billing/scripts/run.md"), "carried scripts/run.md");
        assert_eq!(
            reference_document("billing", "references/deep/faq.md"),
            "billing.references.deep.faq.md"
        );
    }

    #[test]
    fn references_are_listed_and_placed_as_documents_of_their_own() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir_all(d.join("references/deep")).unwrap();
        std::fs::create_dir_all(d.join("references/.drafts")).unwrap();
        for file in [
            "SKILL.md",
            "references/policy.md",
            "references/deep/faq.md",
            "references/table.csv",
            "references/.drafts/old.md",
        ] {
            std::fs::write(d.join(file), "x").unwrap();
        }
        let skill = SkillDoc {
            skill: "refunds".to_owned(),
            document: "refunds.md".to_owned(),
            path: d.join("SKILL.md"),
        };
        let found = references(&skill).unwrap();
        let names: Vec<&str> = found.iter().map(|r| r.document.as_str()).collect();
        assert_eq!(
            names,
            [
                "refunds.references.deep.faq.md",
                "refunds.references.policy.md"
            ]
        );
        let mut plan = vec![planned(d.join("SKILL.md"))];
        plan.extend(found.iter().map(|r| PlannedDoc {
            document: r.document.clone(),
            name: r.skill.clone(),
            kind: DocKind::Reference,
            path: r.path.clone(),
        }));
        let package = packages(&plan).unwrap().remove(0);
        assert_eq!(
            package.documents,
            BTreeMap::from([
                ("SKILL.md".to_owned(), "refunds.md".to_owned()),
                (
                    "references/deep/faq.md".to_owned(),
                    "refunds.references.deep.faq.md".to_owned()
                ),
                (
                    "references/policy.md".to_owned(),
                    "refunds.references.policy.md".to_owned()
                ),
            ])
        );
        // What is not evolved is carried unchanged; hidden files are left out.
        assert_eq!(
            package.files.keys().collect::<Vec<_>>(),
            ["references/table.csv"]
        );
        // A single-file skill has no references.
        std::fs::write(d.join("flat.md"), "x").unwrap();
        let flat = SkillDoc {
            path: d.join("flat.md"),
            ..skill
        };
        assert!(references(&flat).unwrap().is_empty());
    }

    #[cfg(unix)]
    #[test]
    fn a_link_in_the_folder_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(d.join("SKILL.md"), "skill").unwrap();
        std::os::unix::fs::symlink("/etc/hostname", d.join("leak")).unwrap();
        let err = packages(&[planned(d.join("SKILL.md"))]).unwrap_err();
        assert!(err.to_string().contains("symbolic link"), "{err}");
    }
}
