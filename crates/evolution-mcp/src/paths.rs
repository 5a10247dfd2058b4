//! The project an MCP server serves, and the paths its tools may name: every path a tool
//! reads a configuration from or writes to is resolved inside the project folder, so no tool
//! input can make the server write elsewhere.

use std::path::{Component, Path, PathBuf};

/// The project folder, resolved once (symbolic links followed).
#[derive(Debug, Clone)]
pub(crate) struct Project {
    root: PathBuf,
}

impl Project {
    /// The project at `root`, which must be an existing folder.
    pub(crate) fn at(root: &Path) -> anyhow::Result<Self> {
        let root = root
            .canonicalize()
            .map_err(|e| anyhow::anyhow!("cannot serve {}: {e}", root.display()))?;
        if !root.is_dir() {
            anyhow::bail!("cannot serve {}: not a folder", root.display());
        }
        Ok(Project { root })
    }

    /// The project folder.
    pub(crate) fn root(&self) -> &Path {
        &self.root
    }

    /// `given` (relative to the project, or absolute) as a path inside the project: its
    /// existing part resolved (links followed), the rest plain names. Anything that would end
    /// up outside the project, or climbs with `..` past what exists, is refused with a
    /// sentence naming the input `what`.
    pub(crate) fn inside(&self, what: &str, given: &str) -> Result<PathBuf, String> {
        if given.is_empty() || given.contains('\0') {
            return Err(format!("{what}: an empty path or one with a NUL byte"));
        }
        let joined = self.root.join(given);
        let mut existing = joined.as_path();
        let mut rest: Vec<&std::ffi::OsStr> = Vec::new();
        while std::fs::symlink_metadata(existing).is_err() {
            match (existing.file_name(), existing.parent()) {
                (Some(name), Some(parent)) => {
                    rest.push(name);
                    existing = parent;
                }
                _ => return Err(format!("{what}: {given:?} is not a path in the project")),
            }
        }
        // A name that does not exist yet must be a plain name: `..` or `.` could climb out.
        let trailing_is_plain = joined
            .strip_prefix(existing)
            .map(|tail| tail.components().all(|c| matches!(c, Component::Normal(_))))
            .unwrap_or(false);
        if !trailing_is_plain {
            return Err(format!("{what}: {given:?} climbs out of what exists"));
        }
        let mut resolved = existing
            .canonicalize()
            .map_err(|e| format!("{what}: cannot resolve {given:?}: {e}"))?;
        for name in rest.into_iter().rev() {
            resolved.push(name);
        }
        if !resolved.starts_with(&self.root) {
            return Err(format!(
                "{what}: {given:?} is outside the project {}; this server reads and writes \
                 only inside it",
                self.root.display()
            ));
        }
        Ok(resolved)
    }
}

#[cfg(test)]
mod tests {
    use super::Project;

    #[test]
    fn paths_stay_inside_the_project() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("project");
        std::fs::create_dir_all(root.join("skills")).unwrap();
        let project = Project::at(&root).unwrap();
        let canonical = root.canonicalize().unwrap();
        assert_eq!(
            project.inside("out", "skills/new/file.json").unwrap(),
            canonical.join("skills/new/file.json")
        );
        assert_eq!(
            project.inside("out", "skills/../evolve.toml").unwrap(),
            canonical.join("evolve.toml")
        );
        for outside in [
            "../elsewhere.json",
            "/etc/passwd",
            "skills/../../x",
            "new/../../x",
        ] {
            assert!(project.inside("out", outside).is_err(), "{outside}");
        }
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(dir.path(), root.join("link")).unwrap();
            assert!(project.inside("out", "link/escaped.json").is_err());
        }
        assert!(project.inside("out", "").is_err());
    }
}
