//! A run's folder is private and holds no link: what the model, the agents and the user's
//! sessions wrote stays readable by its owner only (files 0600, folders 0700 on Unix), and a
//! symbolic link anywhere in it is refused, never followed, so nothing a run writes lands
//! outside its folder.
//!
//! Folders are created owner-only here; [`check_tree`] walks a run folder (iteratively: its
//! depth is the file system's, not a stack's) refusing every link and, when asked, taking
//! away what group and others may do with each entry, for files a library wrote with its own
//! modes (the SQLite run log's side files, the version store's files).

use std::fs::File;
use std::path::{Path, PathBuf};

use crate::error::bad_at;

/// A folder (with its missing parents) created readable by its owner only; an existing one
/// is left as it is.
///
/// # Errors
/// The folder cannot be created.
pub(crate) fn create_private_dir(path: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt as _;
        builder.mode(0o700);
    }
    builder.create(path)
}

/// Opens `path` to read and write, created (0600 on Unix) when missing, refusing to open it
/// through a symbolic link.
///
/// # Errors
/// The file cannot be opened, or `path` is a link.
pub(crate) fn open_private(path: &Path) -> std::io::Result<File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600).custom_flags(nix::libc::O_NOFOLLOW);
    }
    options.open(path)
}

/// What [`check_tree`] does besides refusing links.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tighten {
    /// Only look (a dry run writes nothing).
    No,
    /// Also make every entry owner-only.
    Yes,
}

/// Walks the folder `root` (nothing when it does not exist or is no folder): a symbolic link anywhere in it is
/// refused as bad input naming the link. The entries of the folders named in `opaque` (paths
/// relative to `root`, such as the agents' workspaces) are checked but not entered: what an
/// agent makes inside its workspace is its own.
///
/// # Errors
/// A link, or a folder that cannot be read or an entry whose mode cannot be changed.
pub(crate) fn check_tree(root: &Path, opaque: &[&str], tighten: Tighten) -> anyhow::Result<()> {
    let meta = match std::fs::symlink_metadata(root) {
        Ok(meta) => meta,
        // Missing, or under something that is no folder: nothing to walk.
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
            ) =>
        {
            return Ok(());
        }
        Err(e) => return Err(anyhow::anyhow!("cannot read {}: {e}", root.display())),
    };
    if meta.file_type().is_symlink() {
        return Err(link_refused(root, root));
    }
    if !meta.is_dir() {
        // Not a folder: nothing to walk (whoever needs a folder there says so).
        return Ok(());
    }
    if tighten == Tighten::Yes {
        make_owner_only(root, &meta)?;
    }
    let opaque: Vec<PathBuf> = opaque.iter().map(|p| root.join(p)).collect();
    let mut folders = vec![root.to_path_buf()];
    while let Some(folder) = folders.pop() {
        let entries = match std::fs::read_dir(&folder) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(anyhow::anyhow!("cannot read {}: {e}", folder.display())),
        };
        let enter = !opaque.contains(&folder);
        for entry in entries {
            let entry =
                entry.map_err(|e| anyhow::anyhow!("cannot read {}: {e}", folder.display()))?;
            let path = entry.path();
            let meta = match std::fs::symlink_metadata(&path) {
                Ok(meta) => meta,
                // Gone since it was listed (a temporary file renamed into place).
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(anyhow::anyhow!("cannot read {}: {e}", path.display())),
            };
            if meta.file_type().is_symlink() {
                return Err(link_refused(&path, root));
            }
            if tighten == Tighten::Yes {
                make_owner_only(&path, &meta)?;
            }
            if enter && meta.is_dir() {
                folders.push(path);
            }
        }
    }
    Ok(())
}

/// The error of a link found in (or as) the run folder `root`.
fn link_refused(link: &Path, root: &Path) -> anyhow::Error {
    let place = if link == root {
        "is a symbolic link where a run folder belongs".to_owned()
    } else {
        format!(
            "is a symbolic link inside the run folder {}",
            root.display()
        )
    };
    bad_at(
        link,
        None,
        format!(
            "{place}; a run never reads or writes through a link, so nothing was run or \
             written: remove the link (the run makes the folders it needs)"
        ),
    )
}

/// Takes away every permission of group and others on `path` (Unix; elsewhere nothing).
fn make_owner_only(path: &Path, meta: &std::fs::Metadata) -> anyhow::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = meta.permissions().mode();
        if mode & 0o077 != 0 {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode & 0o700))
                .map_err(|e| anyhow::anyhow!("cannot make {} private: {e}", path.display()))?;
        }
    }
    #[cfg(not(unix))]
    let _ = (path, meta);
    Ok(())
}

#[cfg(all(test, unix))]
mod tests {
    use std::os::unix::fs::PermissionsExt as _;

    use super::*;

    fn mode(path: &Path) -> u32 {
        std::fs::symlink_metadata(path)
            .unwrap()
            .permissions()
            .mode()
            & 0o777
    }

    #[test]
    fn a_run_folder_is_made_owner_only_and_a_link_anywhere_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("runs/r");
        create_private_dir(&root.join("staged/files")).unwrap();
        assert_eq!(mode(&root), 0o700);
        std::fs::write(root.join("staged/files/a.md"), "x").unwrap();
        std::fs::set_permissions(
            root.join("staged/files/a.md"),
            std::fs::Permissions::from_mode(0o644),
        )
        .unwrap();
        std::fs::create_dir_all(root.join("workspaces/w1/deep")).unwrap();
        std::os::unix::fs::symlink("/etc", root.join("workspaces/w1/deep/agent-made")).unwrap();
        check_tree(&root, &["workspaces"], Tighten::No).unwrap();
        assert_eq!(mode(&root.join("staged/files/a.md")), 0o644);
        check_tree(&root, &["workspaces"], Tighten::Yes).unwrap();
        assert_eq!(mode(&root.join("staged/files/a.md")), 0o600);
        assert_eq!(mode(&root.join("workspaces/w1")), 0o700);

        let outside = d.path().join("outside");
        std::fs::create_dir(&outside).unwrap();
        std::os::unix::fs::symlink(&outside, root.join("staged/files/handoff")).unwrap();
        let err = check_tree(&root, &["workspaces"], Tighten::Yes).unwrap_err();
        assert!(
            err.to_string().contains("staged/files/handoff")
                && err
                    .to_string()
                    .contains("symbolic link inside the run folder"),
            "{err}"
        );
        std::fs::remove_file(root.join("staged/files/handoff")).unwrap();
        std::os::unix::fs::symlink(&outside, root.join("workspaces/w2")).unwrap();
        assert!(check_tree(&root, &["workspaces"], Tighten::No).is_err());
        assert!(check_tree(&d.path().join("missing"), &[], Tighten::Yes).is_ok());
    }

    #[test]
    fn private_files_are_0600_and_never_opened_through_a_link() {
        let d = tempfile::tempdir().unwrap();
        let file = d.path().join("lock");
        drop(open_private(&file).unwrap());
        assert_eq!(mode(&file), 0o600);
        std::os::unix::fs::symlink(&file, d.path().join("link")).unwrap();
        assert!(open_private(&d.path().join("link")).is_err());
    }
}
