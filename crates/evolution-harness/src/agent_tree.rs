//! The tree of processes an agent starts: a token unique to each agent process in its
//! environment ([`AGENT_TREE_VAR`]), which every descendant inherits, and, on Linux, every
//! process of this user carrying it found and killed when the agent is stopped, so that a
//! descendant that left the agent's process group (`setsid`, a double fork) stops too.

/// The variable of an agent's environment that names the agents it descends from: tokens
/// separated by `:`, the agent's own last (an agent that runs this harness in turn passes its
/// own token on to its agents, so stopping it stops theirs too).
pub const AGENT_TREE_VAR: &str = "EVOLUTION_AGENT_TREE";
/// Longest inherited [`AGENT_TREE_VAR`] value passed on; a longer one is replaced by the token.
const MAX_TREE_VALUE_BYTES: usize = 4096;

/// A token no other agent process gets: this program's pid, the time and a counter.
pub(crate) fn new_tree_token() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let count = NEXT.fetch_add(1, Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("{}.{nanos:x}.{count}", std::process::id())
}

/// The [`AGENT_TREE_VAR`] value an agent gets: the tokens it inherits (`configured`, the
/// agent configuration's value, else this program's own), then `token`.
pub(crate) fn tree_value(configured: Option<&String>, token: &str) -> String {
    let inherited = configured
        .cloned()
        .or_else(|| std::env::var(AGENT_TREE_VAR).ok())
        .filter(|v| !v.is_empty() && v.len() <= MAX_TREE_VALUE_BYTES);
    match inherited {
        Some(inherited) => format!("{inherited}:{token}"),
        None => token.to_owned(),
    }
}

/// Finding and killing, on Linux, the processes that carry an agent's token.
#[cfg(target_os = "linux")]
mod descendants {
    use std::collections::BTreeSet;
    use std::io::Read;
    use std::os::unix::fs::MetadataExt;

    use super::AGENT_TREE_VAR;

    /// Most rounds of looking: a process forking while the previous round killed its parent
    /// leaves a child the next round finds.
    const MAX_ROUNDS: usize = 8;
    /// Most bytes of a process's environment read.
    const MAX_ENVIRON_BYTES: u64 = 1 << 20;

    /// Sends SIGKILL to every process of this user (other than this one) whose starting
    /// environment names `token` in [`AGENT_TREE_VAR`], until a round finds none not
    /// signalled already. Best effort: a process that cannot be read is left alone.
    pub(super) fn kill_carriers(token: &str) {
        let Ok(me) = std::fs::metadata("/proc/self") else {
            return;
        };
        let own_pid = std::process::id();
        let mut signalled = BTreeSet::new();
        for _ in 0..MAX_ROUNDS {
            let found: Vec<u32> = carriers(token, me.uid(), own_pid)
                .into_iter()
                .filter(|pid| !signalled.contains(pid))
                .collect();
            if found.is_empty() {
                return;
            }
            for pid in found {
                if let Ok(raw) = i32::try_from(pid) {
                    let _ = nix::sys::signal::kill(
                        nix::unistd::Pid::from_raw(raw),
                        nix::sys::signal::Signal::SIGKILL,
                    );
                }
                signalled.insert(pid);
            }
        }
    }

    /// The processes of user `uid`, other than `own_pid`, carrying `token`.
    fn carriers(token: &str, uid: u32, own_pid: u32) -> Vec<u32> {
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        entries
            .filter_map(Result::ok)
            .filter_map(|entry| {
                let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
                if pid == own_pid || entry.metadata().ok()?.uid() != uid {
                    return None;
                }
                carries(&entry.path(), token).then_some(pid)
            })
            .collect()
    }

    /// Whether the environment of the process at `/proc/<pid>` names `token`. A zombie's
    /// environment reads empty: it carries nothing.
    fn carries(process: &std::path::Path, token: &str) -> bool {
        let Ok(file) = std::fs::File::open(process.join("environ")) else {
            return false;
        };
        let mut environ = Vec::new();
        if file
            .take(MAX_ENVIRON_BYTES)
            .read_to_end(&mut environ)
            .is_err()
        {
            return false;
        }
        let prefix = format!("{AGENT_TREE_VAR}=");
        environ.split(|&b| b == 0).any(|entry| {
            entry
                .strip_prefix(prefix.as_bytes())
                .is_some_and(|value| value.split(|&b| b == b':').any(|t| t == token.as_bytes()))
        })
    }
}

/// Kills the processes carrying `token` (on Linux; elsewhere the process group alone is
/// killed, by the caller).
pub(crate) fn kill_carriers(token: &str) {
    #[cfg(target_os = "linux")]
    descendants::kill_carriers(token);
    #[cfg(not(target_os = "linux"))]
    let _ = token;
}
