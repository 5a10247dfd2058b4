//! Where and how a rollout runs so that it leaves no trace in the user's history and sees only
//! the skills under test.
//!
//! Each rollout gets a fresh folder under the user's cache (`$XDG_CACHE_HOME/skill-evolve/
//! rollouts/`, else `~/.cache/skill-evolve/rollouts/`; `SKILL_EVOLVE_ROLLOUTS_DIR` names
//! another), outside every project: `work/` is the host's working folder (the version under
//! test is installed there) and the host's own configuration home sits beside it, empty but
//! for what the host needs to log in ([`claude`], [`codex`]). The host is told not to keep the
//! session where it allows it, and the whole folder — with any session file the host wrote all
//! the same — is removed when the rollout ends. The host's process carries
//! [`ROLLOUT_MARK`]` = 1`, so that a session-end hook or a harvest that meets it skips it.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime};

use crate::Host;
use crate::error::{HostError, IoContext, Result};

pub(crate) mod claude;
pub(crate) mod codex;
mod credentials;

/// The variable set (to `1`) in every host process a rollout starts.
pub const ROLLOUT_MARK: &str = "SKILL_EVOLVE_ROLLOUT";

/// The variable that names the rollouts folder instead of the user's cache.
pub const ROLLOUTS_DIR_VAR: &str = "SKILL_EVOLVE_ROLLOUTS_DIR";

/// A rollout folder older than this, left by a process that was killed, is removed by the
/// next rollout.
const STALE_AFTER: Duration = Duration::from_secs(2 * 24 * 60 * 60);

/// The prefix of every rollout folder's name.
const PREFIX: &str = "rollout-";

/// The environment a rollout is prepared from (a function, so tests can give their own).
pub(crate) type Vars<'a> = &'a dyn Fn(&str) -> Option<OsString>;

/// The process's own environment, each variable that is set and not empty.
pub(crate) fn process_vars(name: &str) -> Option<OsString> {
    std::env::var_os(name).filter(|v| !v.is_empty())
}

/// One rollout's folder, its host configuration and what the host is started with; the folder
/// is removed when this is dropped.
pub(crate) struct Rollout {
    dir: tempfile::TempDir,
    /// What the host's process gets on top of what it inherits.
    env: Vec<(String, OsString)>,
    /// Flags for the host's command line (before the adapter's own).
    args: Vec<String>,
    /// The user's login file copied in, written back if the host renewed it.
    login: Option<credentials::Copied>,
    /// The host's configuration home in the rollout folder.
    host_home: PathBuf,
}

impl Rollout {
    /// Prepares a rollout of `host` in the rollouts folder of this process's environment.
    pub(crate) fn in_user_cache(host: Host) -> Result<Self> {
        Self::in_root_of(host, &process_vars)
    }

    /// Prepares a rollout of `host` in the rollouts folder of the environment `vars`.
    pub(crate) fn in_root_of(host: Host, vars: Vars<'_>) -> Result<Self> {
        let root = rollouts_root(vars).ok_or_else(|| {
            HostError::Invalid(
                "no folder for the rollouts: set HOME (or XDG_CACHE_HOME, or \
                 SKILL_EVOLVE_ROLLOUTS_DIR) to an absolute folder"
                    .to_owned(),
            )
        })?;
        Self::new(host, &root, vars)
    }

    /// Prepares a rollout of `host` under `root`, the user's files found through `vars`.
    pub(crate) fn new(host: Host, root: &Path, vars: Vars<'_>) -> Result<Self> {
        make_private_dir(root)?;
        remove_stale(root);
        let dir = tempfile::Builder::new()
            .prefix(PREFIX)
            .tempdir_in(root)
            .io(|| format!("cannot make a rollout folder in {}", root.display()))?;
        std::fs::create_dir(dir.path().join("work"))
            .io(|| format!("cannot make {}/work", dir.path().display()))?;
        let mut rollout = Self {
            dir,
            env: vec![(ROLLOUT_MARK.to_owned(), "1".into())],
            args: Vec::new(),
            login: None,
            host_home: PathBuf::new(),
        };
        let isolated = match host {
            Host::ClaudeCode => claude::isolate(rollout.dir.path(), vars)?,
            Host::Codex => codex::isolate(rollout.dir.path(), vars)?,
        };
        rollout.env.extend(isolated.env);
        rollout.args = isolated.args;
        rollout.login = isolated.login;
        rollout.host_home = isolated.home;
        Ok(rollout)
    }

    /// The host's working folder, where the version under test is installed.
    pub(crate) fn work(&self) -> PathBuf {
        self.dir.path().join("work")
    }

    /// The host's configuration home in the rollout folder.
    pub(crate) fn host_home(&self) -> &Path {
        &self.host_home
    }

    /// The flags the host's command line starts with.
    pub(crate) fn args(&self) -> &[String] {
        &self.args
    }

    /// Sets the host's working folder and environment on `command`.
    pub(crate) fn apply(&self, command: &mut Command) {
        command.current_dir(self.work());
        for (key, value) in &self.env {
            command.env(key, value);
        }
    }

    /// Ends the rollout: a login the host renewed goes back to the user's file (when that
    /// file did not change meanwhile), and the folder is removed.
    pub(crate) fn finish(self) -> Result<()> {
        let written_back = match &self.login {
            Some(login) => login.write_back(),
            None => Ok(()),
        };
        let path = self.dir.path().to_owned();
        self.dir
            .close()
            .io(|| format!("cannot remove the rollout folder {}", path.display()))?;
        written_back
    }
}

/// What a host's isolation adds to a rollout.
pub(crate) struct Isolated {
    /// Variables for the host's process.
    pub(crate) env: Vec<(String, OsString)>,
    /// Flags for its command line.
    pub(crate) args: Vec<String>,
    /// The login file copied in, if any.
    pub(crate) login: Option<credentials::Copied>,
    /// The host's configuration home it made.
    pub(crate) home: PathBuf,
}

/// The folder rollouts are made in, found through `vars` (a variable's value, `None` when
/// unset or empty): `SKILL_EVOLVE_ROLLOUTS_DIR`, else `skill-evolve/rollouts` of
/// `XDG_CACHE_HOME`, else of `HOME/.cache`; only an absolute folder counts.
pub fn rollouts_root(vars: &dyn Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    let absolute = |name: &str| vars(name).map(PathBuf::from).filter(|p| p.is_absolute());
    if let Some(dir) = absolute(ROLLOUTS_DIR_VAR) {
        return Some(dir);
    }
    let cache =
        absolute("XDG_CACHE_HOME").or_else(|| absolute("HOME").map(|h| h.join(".cache")))?;
    Some(cache.join("skill-evolve").join("rollouts"))
}

/// The user's home folder (absolute), when `HOME` names one.
pub(crate) fn home(vars: Vars<'_>) -> Option<PathBuf> {
    vars("HOME")
        .map(PathBuf::from)
        .filter(|home| home.is_absolute())
}

/// Creates `dir` (and its parents) readable by the user only.
fn make_private_dir(dir: &Path) -> Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt as _;
        builder.mode(0o700);
    }
    builder
        .create(dir)
        .io(|| format!("cannot create {}", dir.display()))
}

/// Removes the rollout folders of `root` older than [`STALE_AFTER`] (a killed run's);
/// a folder that cannot be removed is left.
fn remove_stale(root: &Path) {
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    let now = SystemTime::now();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let is_rollout = name.to_str().is_some_and(|n| n.starts_with(PREFIX));
        let Ok(meta) = entry.metadata() else {
            continue;
        };
        let old = meta
            .modified()
            .ok()
            .and_then(|m| now.duration_since(m).ok())
            .is_some_and(|age| age > STALE_AFTER);
        if is_rollout && meta.is_dir() && old {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_root_is_the_named_folder_or_the_users_cache() {
        let vars = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| OsString::from(v))
            }
        };
        assert_eq!(
            rollouts_root(&vars(&[("HOME", "/h")])),
            Some(PathBuf::from("/h/.cache/skill-evolve/rollouts"))
        );
        assert_eq!(
            rollouts_root(&vars(&[("HOME", "/h"), ("XDG_CACHE_HOME", "/c")])),
            Some(PathBuf::from("/c/skill-evolve/rollouts"))
        );
        assert_eq!(
            rollouts_root(&vars(&[("HOME", "/h"), (ROLLOUTS_DIR_VAR, "/r")])),
            Some(PathBuf::from("/r"))
        );
        assert_eq!(rollouts_root(&vars(&[("HOME", "relative")])), None);
    }

    #[test]
    fn a_rollout_is_marked_lives_in_its_own_folder_and_is_removed() {
        let root = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        let home_path = home.path().to_owned();
        let vars = move |name: &str| (name == "HOME").then(|| home_path.clone().into_os_string());
        let rollout = Rollout::new(Host::ClaudeCode, root.path(), &vars).unwrap();
        let work = rollout.work();
        assert!(work.starts_with(root.path()) && work.is_dir());
        let mut command = Command::new("true");
        rollout.apply(&mut command);
        let env: Vec<_> = command.get_envs().collect();
        assert!(env.contains(&(ROLLOUT_MARK.as_ref(), Some("1".as_ref()))));
        assert_eq!(command.get_current_dir(), Some(work.as_path()));
        rollout.finish().unwrap();
        assert!(!work.exists());
        assert_eq!(std::fs::read_dir(root.path()).unwrap().count(), 0);
    }
}
