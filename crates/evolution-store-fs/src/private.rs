//! Owner-only permissions for what the store writes: every file 0600 (the writers' lock file
//! too) and every folder it creates 0700 on Unix, set by the store itself rather than left to the folder above it or
//! the process's umask (a skill's versions may hold what only their owner should read).

use std::fs::File;
use std::io;
use std::path::Path;

/// Makes an open file readable and writable by its owner only (0600 on Unix; nothing
/// elsewhere). Called before the file's content is written, so it is never readable by others.
pub(crate) fn make_private(file: &File) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    }
    #[cfg(not(unix))]
    let _ = file;
    Ok(())
}

/// Opens `path` for reading and writing, creating it 0600 on Unix when it is missing (so it
/// is never readable by others, whatever the umask) and making an existing one 0600 too (a
/// file left readable by an older store, or created by another tool, is closed to others).
pub(crate) fn open_private(path: &Path) -> io::Result<File> {
    let mut options = File::options();
    options.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    let file = options.open(path)?;
    make_private(&file)?;
    Ok(file)
}

/// Creates one folder (its parent must exist) readable only by its owner (0700 on Unix).
pub(crate) fn create_private_dir(path: &Path) -> io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt as _;
        builder.mode(0o700);
    }
    builder.create(path)
}
