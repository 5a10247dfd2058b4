// Shared by the harvest fuzz targets: what every session a reader returns must hold, whatever
// its input. Small bounds, so that inputs of a few kilobytes reach each of them.

use evolution_harvest::limits::{Budget, Limits, depth_of};
use evolution_harvest::session::{Session, TextPolicy};
use evolution_harvest::signals::{HarvestRules, judge};
use evolution_harvest::trajectory::to_trajectory;

/// Bounds a fuzzer's inputs can cross.
pub fn limits() -> Limits {
    Limits {
        max_depth: 16,
        max_document_values: 2_000,
        max_session_values: 5_000,
        max_string_bytes: 4_096,
        max_session_bytes: 64 * 1024,
    }
}

/// A policy with those bounds and a short text cap.
pub fn policy() -> TextPolicy {
    TextPolicy {
        budget: Budget::new(limits()),
        max_chars: 200,
        ..TextPolicy::default()
    }
}

/// A session read: no tool input nests past the bound, and it judges and serializes.
pub fn check(session: &Session) {
    for call in &session.tool_calls {
        assert!(depth_of(&call.input) <= limits().max_depth);
    }
    let verdict = judge(session, &HarvestRules::default());
    let trajectory = to_trajectory(session, &verdict);
    let text = serde_json::to_string(&trajectory).expect("a trajectory serializes");
    assert!(!text.is_empty());
}
