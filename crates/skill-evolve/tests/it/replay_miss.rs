//! A replay whose request is not in the cassette says what changed since the
//! recording, and that the cassette must be recorded again.

use crate::evolve::{SKILL, record, workspace};
use crate::support::{skill_evolve, snapshot};

#[test]
fn a_cassette_miss_names_what_changed_and_how_to_re_record() {
    let dir = workspace(SKILL);
    let d = dir.path();
    assert!(record(d).status.success());
    // The skill changed since the recording: one word on one line.
    let changed = SKILL.replacen(
        "Lead with what a user notices",
        "Lead with what users notice",
        1,
    );
    assert_ne!(changed, SKILL);
    std::fs::write(d.join("skill/SKILL.md"), &changed).unwrap();
    let before = snapshot(d);
    let out = skill_evolve(d)
        .args(["evolve", "skill/SKILL.md", "--trajectories", "temp"])
        .args(["--provider", "replay", "--cassette", "run.cassette"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    let line = stderr
        .lines()
        .find(|l| l.starts_with("error: "))
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(line.contains("cassette miss"), "{line}");
    assert!(
        line.contains("the closest recording of tag \"skill_evolve.reflect\""),
        "{line}"
    );
    assert!(
        line.contains("message 1 of 1 (user) changed from line"),
        "{line}"
    );
    assert!(
        line.contains("what a user notices") && line.contains("what users notice"),
        "both texts around the change: {line}"
    );
    assert!(
        line.contains("record it again with a live provider and --record FILE"),
        "{line}"
    );
    // Said once, though the error quoting it also carries it as its cause.
    assert_eq!(line.matches("cassette miss").count(), 1, "{line}");
    // Nothing written.
    assert_eq!(snapshot(d), before);
}
