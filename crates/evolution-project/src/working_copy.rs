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
/// folder) atomically, with the file and its folder synced.
pub fn write_atomically(path: &Path, text: &str) -> anyhow::Result<()> {
    write_file(path, text).map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))
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
}
