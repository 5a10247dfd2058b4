//! Where `evolve` keeps a run's candidate and report, and where it must
//! not: the run folder may be anywhere but the skill's own folder (the
//! candidate would sit beside, or replace, the skill before anyone said yes)
//! and the skill's version store (which only the store writes).

use std::path::{Component, Path, PathBuf};

use crate::error::{bad_at, bad_option};

/// The candidate's file name in the run folder: never the skill's own name,
/// so no run folder can make the candidate replace the skill.
pub(crate) fn candidate_file_name(skill_name: &str) -> String {
    format!("candidate-{skill_name}")
}

/// Refuses a run folder that resolves (symbolic links and `..` followed) to
/// the skill's folder, or to the store or a folder inside it.
pub(crate) fn check_run_dir(run_dir: &Path, skill_dir: &Path, store: &Path) -> anyhow::Result<()> {
    let run = resolve(run_dir);
    let refuse = |what: String| {
        Err(bad_option(format!(
            "--run-dir {} is {what}; choose a folder of its own (the default is \
             .skill-evolve/runs/ beside the skill)",
            run_dir.display()
        )))
    };
    if run == resolve(skill_dir) {
        return refuse(
            "the skill's own folder, where the candidate could be taken for the skill".to_owned(),
        );
    }
    let store_resolved = resolve(store);
    if run.starts_with(&store_resolved) {
        return refuse(format!(
            "inside the skill's version store {}, which only the store may write",
            store.display()
        ));
    }
    Ok(())
}

/// Refuses a run folder that cannot be written, before anything is asked of
/// the model: the folder itself, or the nearest folder above it that exists,
/// must take a new file. The check leaves nothing behind.
pub(crate) fn check_run_dir_writable(run_dir: &Path) -> anyhow::Result<()> {
    let existing = run_dir
        .ancestors()
        .find(|p| !p.as_os_str().is_empty() && std::fs::symlink_metadata(p).is_ok())
        .unwrap_or(Path::new("."));
    if !existing.is_dir() {
        return Err(bad_at(
            run_dir,
            None,
            format!(
                "cannot be the run folder: {} is not a folder; nothing was sent to the model",
                existing.display()
            ),
        ));
    }
    let probe = existing.join(format!(".skill-evolve-write-check-{}", std::process::id()));
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
    {
        Ok(file) => {
            drop(file);
            // Best effort: the probe is empty and hidden.
            let _ = std::fs::remove_file(&probe);
            Ok(())
        }
        Err(e) => Err(bad_at(
            run_dir,
            None,
            format!(
                "cannot be the run folder: {} cannot be written ({e}); nothing was sent to the model",
                existing.display()
            ),
        )),
    }
}

/// `path` made absolute with its links resolved, also when its last
/// components do not exist yet: the longest existing prefix is
/// canonicalised and the rest appended (`..` taking one component off).
fn resolve(path: &Path) -> PathBuf {
    let absolute = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir().unwrap_or_default().join(path)
    };
    let components: Vec<Component<'_>> = absolute.components().collect();
    for known in (1..=components.len()).rev() {
        let (Some(prefix), Some(rest)) = (components.get(..known), components.get(known..)) else {
            continue;
        };
        let Ok(mut out) = prefix.iter().collect::<PathBuf>().canonicalize() else {
            continue;
        };
        for component in rest {
            match component {
                Component::ParentDir => {
                    out.pop();
                }
                Component::CurDir => {}
                other => out.push(other),
            }
        }
        return out;
    }
    absolute
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidates_never_take_the_skills_name() {
        assert_eq!(candidate_file_name("SKILL.md"), "candidate-SKILL.md");
    }

    #[test]
    fn missing_folders_resolve_through_their_existing_parent() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir(root.join("skill")).unwrap();
        assert_eq!(resolve(&root.join("skill/new/../.")), root.join("skill"));
        assert_eq!(resolve(&root.join("a/b/../c")), root.join("a/c"));
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(root.join("skill"), root.join("link")).unwrap();
            assert_eq!(resolve(&root.join("link")), root.join("skill"));
            assert_eq!(resolve(&root.join("link/x")), root.join("skill/x"));
        }
    }
}
