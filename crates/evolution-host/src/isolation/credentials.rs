//! A host's login file copied into a rollout's configuration home and, when the host renewed
//! the login there, written back to the user's file.

use std::path::{Path, PathBuf};

use crate::error::{IoContext, Result, invalid};

/// Largest login file copied.
const MAX_LOGIN_BYTES: u64 = 1024 * 1024;

/// A login file copied from the user's configuration into a rollout.
pub(crate) struct Copied {
    /// The user's file.
    user: PathBuf,
    /// The rollout's copy.
    copy: PathBuf,
    /// The bytes copied.
    original: Vec<u8>,
}

/// Copies the user's login file `user` (a regular file, not a link) to `copy`, readable by
/// the user only; `None` when there is no such file.
pub(crate) fn copy(user: &Path, copy: &Path) -> Result<Option<Copied>> {
    let Ok(meta) = std::fs::symlink_metadata(user) else {
        return Ok(None);
    };
    if !meta.is_file() {
        return Ok(None);
    }
    if meta.len() > MAX_LOGIN_BYTES {
        invalid!(
            "{} is larger than {MAX_LOGIN_BYTES} bytes; not a login file",
            user.display()
        );
    }
    let original = std::fs::read(user).io(|| format!("cannot read {}", user.display()))?;
    write_private(copy, &original)?;
    Ok(Some(Copied {
        user: user.to_owned(),
        copy: copy.to_owned(),
        original,
    }))
}

impl Copied {
    /// Writes the rollout's copy back to the user's file when the host changed it (a renewed
    /// login) and the user's file still holds what was copied (nothing else renewed it).
    pub(crate) fn write_back(&self) -> Result<()> {
        let Ok(now) = std::fs::read(&self.copy) else {
            return Ok(());
        };
        if now == self.original || now.is_empty() || now.len() as u64 > MAX_LOGIN_BYTES {
            return Ok(());
        }
        let Ok(current) = std::fs::read(&self.user) else {
            return Ok(());
        };
        if current != self.original {
            return Ok(());
        }
        let dir = self.user.parent().unwrap_or(Path::new("."));
        let mut file = tempfile::NamedTempFile::new_in(dir)
            .io(|| format!("cannot write in {}", dir.display()))?;
        std::io::Write::write_all(&mut file, &now)
            .io(|| format!("cannot write {}", file.path().display()))?;
        file.as_file()
            .sync_all()
            .io(|| format!("cannot write {}", file.path().display()))?;
        file.persist(&self.user)
            .map_err(|e| e.error)
            .io(|| format!("cannot replace {}", self.user.display()))?;
        Ok(())
    }
}

/// Writes `bytes` to a new file `path` readable and writable by the user only.
pub(crate) fn write_private(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    let mut file = options
        .open(path)
        .io(|| format!("cannot create {}", path.display()))?;
    std::io::Write::write_all(&mut file, bytes).io(|| format!("cannot write {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_renewed_login_goes_back_unless_the_users_file_changed() {
        let dir = tempfile::tempdir().unwrap();
        let user = dir.path().join("auth.json");
        std::fs::write(&user, "old").unwrap();
        let copied = copy(&user, &dir.path().join("copy.json")).unwrap().unwrap();
        // Unchanged: nothing written.
        copied.write_back().unwrap();
        assert_eq!(std::fs::read_to_string(&user).unwrap(), "old");
        // Renewed in the rollout: written back.
        std::fs::write(dir.path().join("copy.json"), "new").unwrap();
        copied.write_back().unwrap();
        assert_eq!(std::fs::read_to_string(&user).unwrap(), "new");
        // Renewed in both: the user's file wins.
        let other = copy(&user, &dir.path().join("copy2.json"))
            .unwrap()
            .unwrap();
        std::fs::write(dir.path().join("copy2.json"), "mine").unwrap();
        std::fs::write(&user, "theirs").unwrap();
        other.write_back().unwrap();
        assert_eq!(std::fs::read_to_string(&user).unwrap(), "theirs");
        assert!(
            copy(&dir.path().join("none"), &dir.path().join("c3"))
                .unwrap()
                .is_none()
        );
    }
}
