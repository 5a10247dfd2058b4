//! The files this crate keeps in a run's folder (the journal, the handoff's requests, prompts
//! and answers): readable by their owner only (files 0600, folders 0700 on Unix), and never
//! opened through a symbolic link, so nothing is read from or written to somewhere else.

use std::path::Path;

/// Creates the folder `dir` (with its missing parents) owner-only; refuses a symbolic link at
/// `dir`.
pub(crate) fn create_dir(dir: &Path) -> std::io::Result<()> {
    if std::fs::symlink_metadata(dir).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(std::io::Error::other(
            "is a symbolic link; nothing is written through a link",
        ));
    }
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt as _;
        builder.mode(0o700);
    }
    builder.create(dir)
}

/// Options that create a file owner-only and refuse to open a symbolic link; the caller says
/// how the file is opened (append, create new).
pub(crate) fn options() -> std::fs::OpenOptions {
    let mut options = std::fs::OpenOptions::new();
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600).custom_flags(nix::libc::O_NOFOLLOW);
    }
    options
}

#[cfg(all(test, unix))]
mod tests {
    use std::os::unix::fs::PermissionsExt as _;

    use super::*;

    #[test]
    fn folders_and_files_are_owner_only_and_links_refused() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("a/handoff");
        create_dir(&dir).unwrap();
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        let file = dir.join("requests.jsonl");
        drop(options().create(true).append(true).open(&file).unwrap());
        let mode = std::fs::metadata(&file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        std::os::unix::fs::symlink(&file, dir.join("link")).unwrap();
        assert!(options().append(true).open(dir.join("link")).is_err());
        std::os::unix::fs::symlink(&dir, d.path().join("linked")).unwrap();
        assert!(create_dir(&d.path().join("linked")).is_err());
    }
}
