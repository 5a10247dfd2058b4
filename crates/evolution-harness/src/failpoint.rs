//! Test-only crash hooks: a process killed right after a named durable write.
//!
//! Built only with the `failpoints` feature, which no release build turns on
//! (the `skill-evolve` binary's tests turn it on through a dev-dependency);
//! without it [`failpoint`] does nothing. With it, and with
//! `SKILL_EVOLVE_FAILPOINT=<point>` (or `<point>:<n>`, the `n`-th time the
//! point is reached, from 1) in the environment, the process prints
//! `failpoint <point> reached` on stderr and aborts there, as a kill would
//! stop it: no destructor runs, nothing is flushed.
//!
//! The points of one gated candidate, in the order they are written, are
//! listed in [`POINTS`].

/// The environment variable naming the point to die at.
pub const FAILPOINT_VAR: &str = "SKILL_EVOLVE_FAILPOINT";

/// Every point, in the order a gated candidate reaches them: the gate's
/// decision in the checkpoint, the new version's directory in the store
/// (accepts only; reached in `evolution-store-fs`), the store's head moved
/// (accepts only), the evolution record in the run log, the checkpoint
/// that closes the candidate, and the staged proposal of a finished run.
pub const POINTS: [&str; 6] = [
    GATE_DECIDED,
    VERSION_WRITTEN,
    HEAD_MOVED,
    EVOLUTION_RECORDED,
    GATE_CLOSED,
    STAGED,
];

/// The gate's decision and the e-LOND state after it are in the checkpoint.
pub const GATE_DECIDED: &str = "gate-decided";
/// An accepted version's directory is in the store; its head has not moved.
pub const VERSION_WRITTEN: &str = "version-written";
/// The store's head is the accepted version.
pub const HEAD_MOVED: &str = "head-moved";
/// The candidate's evolution record is in the run log.
pub const EVOLUTION_RECORDED: &str = "evolution-recorded";
/// The checkpoint holds the candidate's gate record and counts it judged.
pub const GATE_CLOSED: &str = "gate-closed";
/// A finished run's proposal is staged for adoption.
pub const STAGED: &str = "staged";

/// Aborts the process when `point` is the one the environment names (and
/// this is the time it names); does nothing otherwise, and nothing at all
/// without the `failpoints` feature.
#[inline]
pub fn failpoint(point: &str) {
    #[cfg(feature = "failpoints")]
    armed::hit(point);
    #[cfg(not(feature = "failpoints"))]
    let _ = point;
}

#[cfg(feature = "failpoints")]
mod armed {
    use std::sync::atomic::{AtomicU64, Ordering};

    /// Times the armed point was reached in this process.
    static HITS: AtomicU64 = AtomicU64::new(0);

    pub(super) fn hit(point: &str) {
        let Ok(spec) = std::env::var(super::FAILPOINT_VAR) else {
            return;
        };
        let (name, nth) = match spec.split_once(':') {
            Some((name, n)) => (name, n.trim().parse::<u64>().unwrap_or(1)),
            None => (spec.as_str(), 1),
        };
        if name.trim() != point {
            return;
        }
        let seen = HITS.fetch_add(1, Ordering::SeqCst).saturating_add(1);
        if seen == nth {
            #[expect(
                clippy::print_stderr,
                reason = "the test reads which point stopped the run"
            )]
            {
                eprintln!("failpoint {point} reached");
            }
            std::process::abort();
        }
    }
}
