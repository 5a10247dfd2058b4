//! Where the host-agent adapter runs its rollouts and how they are marked, so that a
//! session-end hook and `harvest` can tell a replay from a session of the user's.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The variable set (to `1`) in every host process a rollout starts.
pub const ROLLOUT_MARK: &str = "SKILL_EVOLVE_ROLLOUT";

/// The variable that names the rollouts folder instead of the user's cache.
pub const ROLLOUTS_DIR_VAR: &str = "SKILL_EVOLVE_ROLLOUTS_DIR";

/// Whether this process is part of a rollout (it carries [`ROLLOUT_MARK`], not empty, not `0`).
pub fn in_rollout() -> bool {
    std::env::var_os(ROLLOUT_MARK).is_some_and(|v| !v.is_empty() && v != "0")
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

/// The rollouts folder of this process's environment.
pub fn default_rollouts_root() -> Option<PathBuf> {
    rollouts_root(&|name| std::env::var_os(name).filter(|v| !v.is_empty()))
}

/// Whether a session that ran in `cwd` was a rollout: inside the rollouts folder `root`, or
/// in a question folder of a run's state (`.skill-evolve/runs/<run>/workspaces/`, where
/// earlier versions ran them).
pub fn is_rollout_folder(cwd: &Path, root: Option<&Path>) -> bool {
    if root.is_some_and(|root| cwd.starts_with(root)) {
        return true;
    }
    let parts: Vec<_> = cwd.components().map(|c| c.as_os_str()).collect();
    parts.windows(4).any(|w| {
        w.first().is_some_and(|p| *p == ".skill-evolve")
            && w.get(1).is_some_and(|p| *p == "runs")
            && w.get(3).is_some_and(|p| *p == "workspaces")
    })
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
    fn rollout_folders_are_recognised() {
        let root = Path::new("/h/.cache/skill-evolve/rollouts");
        assert!(is_rollout_folder(
            Path::new("/h/.cache/skill-evolve/rollouts/rollout-x/work"),
            Some(root)
        ));
        assert!(is_rollout_folder(
            Path::new("/p/.skill-evolve/runs/demo/workspaces/evolution-ws-1/host-2"),
            None
        ));
        assert!(!is_rollout_folder(Path::new("/p/src"), Some(root)));
        assert!(!is_rollout_folder(
            Path::new("/p/.skill-evolve/runs/demo"),
            Some(root)
        ));
    }
}
