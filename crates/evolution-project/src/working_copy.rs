//! Writing the user's own files (a skill's working copy, a repaired
//! document): the one way this program replaces them.
//!
//! A file is replaced atomically (a synced temporary file renamed over it,
//! then its folder synced, by `atomic-write-file`), so a crash leaves the old
//! text or the new one. A symbolic link is written through: the file it
//! points to gets the new text and the link stays a link, so a skill shared
//! by several folders stays shared. A read-only file is refused, never
//! silently replaced.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use atomic_write_file::AtomicWriteFile;

use crate::error::bad_at;

/// The file `path` stands for: itself, or the file its symbolic link(s)
/// point to. Refuses (as bad input) a dangling link, something that is not
/// a regular file, and a read-only file. A missing `path` is its own target.
pub fn writable_target(path: &Path) -> anyhow::Result<PathBuf> {
    let is_link = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
    let target = if is_link {
        path.canonicalize().map_err(|e| {
            bad_at(
                path,
                None,
                format!("is a symbolic link to a file that cannot be reached: {e}"),
            )
        })?
    } else {
        path.to_path_buf()
    };
    let shown = if is_link {
        format!(" (the file its link points to, {})", target.display())
    } else {
        String::new()
    };
    match std::fs::metadata(&target) {
        Ok(meta) if !meta.is_file() => Err(bad_at(
            path,
            None,
            format!("is not a regular file{shown}; nothing written"),
        )),
        Ok(meta) if meta.permissions().readonly() => Err(bad_at(
            path,
            None,
            format!(
                "is read-only{shown}; nothing written. Make it writable (chmod u+w) and run \
                 again"
            ),
        )),
        _ => Ok(target),
    }
}

/// Replaces the text of the user's file `path` with `text`: through its
/// symbolic link if it is one, atomically, with the file and its folder
/// synced; permissions are kept. Refuses what [`writable_target`] refuses.
pub fn write_through(path: &Path, text: &str) -> anyhow::Result<()> {
    let target = writable_target(path)?;
    write_file(&target, text).map_err(|e| anyhow::anyhow!("cannot write {}: {e}", target.display()))
}

/// Replaces a file this program owns (a report, a staged document in a run
/// folder) atomically, with the file and its folder synced; readable and
/// writable by its owner only (0600 on Unix: it holds what models and agents
/// wrote). A symbolic link at `path` is replaced, never written through.
pub fn write_atomically(path: &Path, text: &str) -> anyhow::Result<()> {
    write_private(path, text).map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))
}

/// Replaces a file the user keeps and this program edits (a crontab file)
/// atomically, with the file and its folder synced; its permissions are kept.
pub fn write_keeping_mode(path: &Path, text: &str) -> anyhow::Result<()> {
    write_file(path, text).map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))
}

/// Writes a file this program creates for the user to keep (a harvested trajectory, mined
/// tasks): atomically, readable and writable by the user only (mode 0600 on Unix: harvested
/// sessions hold the user's work), whatever the file it replaces allowed. A symbolic link at
/// `path`, even a dangling one, is refused as bad input: the output never lands somewhere
/// else than the path named, and never replaces a link with a file.
pub fn write_private_output(path: &Path, text: &str) -> anyhow::Result<()> {
    refuse_link(path)?;
    write_private(path, text).map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))
}

/// Refuses (as bad input) a symbolic link at `path`, dangling or not.
pub fn refuse_link(path: &Path) -> anyhow::Result<()> {
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(bad_at(
            path,
            None,
            "is a symbolic link; this command writes only a plain file it can replace, so this \
             file was not written. Remove the link or name another path",
        ));
    }
    Ok(())
}

fn write_private(target: &Path, text: &str) -> std::io::Result<()> {
    let mut options = AtomicWriteFile::options();
    #[cfg(unix)]
    {
        use atomic_write_file::unix::OpenOptionsExt as _;
        options.preserve_mode(false);
    }
    let mut file = options.open(target)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        file.as_file()
            .set_permissions(std::fs::Permissions::from_mode(0o600))?;
    }
    file.write_all(text.as_bytes())?;
    file.commit()
}

fn write_file(target: &Path, text: &str) -> std::io::Result<()> {
    let mut file = AtomicWriteFile::options().open(target)?;
    file.write_all(text.as_bytes())?;
    file.commit()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn links_are_written_through_and_read_only_files_refused() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir(d.join("shared")).unwrap();
        std::fs::write(d.join("shared/doc.md"), "old\n").unwrap();
        std::fs::set_permissions(
            d.join("shared/doc.md"),
            std::fs::Permissions::from_mode(0o640),
        )
        .unwrap();
        std::os::unix::fs::symlink("shared/doc.md", d.join("link.md")).unwrap();
        write_through(&d.join("link.md"), "new\n").unwrap();
        assert!(
            d.join("link.md")
                .symlink_metadata()
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(
            std::fs::read_to_string(d.join("shared/doc.md")).unwrap(),
            "new\n"
        );
        let mode = std::fs::metadata(d.join("shared/doc.md"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o640);

        std::fs::set_permissions(
            d.join("shared/doc.md"),
            std::fs::Permissions::from_mode(0o444),
        )
        .unwrap();
        let err = write_through(&d.join("link.md"), "newer\n").unwrap_err();
        assert!(err.to_string().contains("is read-only"), "{err}");
        assert_eq!(
            std::fs::read_to_string(d.join("shared/doc.md")).unwrap(),
            "new\n"
        );

        std::os::unix::fs::symlink("nowhere.md", d.join("dangling.md")).unwrap();
        let err = write_through(&d.join("dangling.md"), "x").unwrap_err();
        assert!(err.to_string().contains("cannot be reached"), "{err}");
        assert!(!d.join("nowhere.md").exists());
    }

    #[cfg(unix)]
    #[test]
    fn private_outputs_are_0600_and_never_written_through_a_link() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(d.join("wide.json"), "old").unwrap();
        std::fs::set_permissions(d.join("wide.json"), std::fs::Permissions::from_mode(0o777))
            .unwrap();
        write_private_output(&d.join("wide.json"), "new").unwrap();
        write_private_output(&d.join("fresh.json"), "new").unwrap();
        write_atomically(&d.join("report.md"), "new").unwrap();
        for name in ["wide.json", "fresh.json", "report.md"] {
            let meta = std::fs::metadata(d.join(name)).unwrap();
            assert_eq!(meta.permissions().mode() & 0o777, 0o600, "{name}");
            assert_eq!(std::fs::read_to_string(d.join(name)).unwrap(), "new");
        }
        std::os::unix::fs::symlink("wide.json", d.join("link.json")).unwrap();
        std::os::unix::fs::symlink("nowhere.json", d.join("dangling.json")).unwrap();
        for name in ["link.json", "dangling.json"] {
            let err = write_private_output(&d.join(name), "x").unwrap_err();
            assert!(err.to_string().contains("is a symbolic link"), "{err}");
            assert!(
                d.join(name)
                    .symlink_metadata()
                    .unwrap()
                    .file_type()
                    .is_symlink()
            );
        }
        assert_eq!(std::fs::read_to_string(d.join("wide.json")).unwrap(), "new");
        assert!(!d.join("nowhere.json").exists());
    }
}
