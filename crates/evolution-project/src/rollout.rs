//! Where the host-agent adapter runs its rollouts and how they are marked, so that a
//! session-end hook and `harvest` can tell a replay from a session of the user's.

use std::path::{Path, PathBuf};

pub use evolution_host::{ROLLOUT_MARK, ROLLOUTS_DIR_VAR, rollouts_root};

/// Whether this process is part of a rollout (it carries [`ROLLOUT_MARK`], not empty, not `0`).
pub fn in_rollout() -> bool {
    std::env::var_os(ROLLOUT_MARK).is_some_and(|v| !v.is_empty() && v != "0")
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
