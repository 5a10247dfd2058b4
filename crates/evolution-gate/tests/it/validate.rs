//! `pair_block`, `classify_quadrants`, `compute_accuracy`.

use std::collections::{BTreeMap, HashMap};

use evolution_gate::{GateError, classify_quadrants, compute_accuracy, pair_block};

fn map(entries: &[(&str, bool)]) -> HashMap<String, bool> {
    entries.iter().map(|&(k, v)| (k.to_owned(), v)).collect()
}

#[test]
fn pair_block_counts_flips() {
    let baseline = map(&[("q1", false), ("q2", true), ("q3", true)]);
    let candidate = map(&[("q1", true), ("q2", false), ("q3", true)]);
    let r =
        pair_block(&baseline, &candidate, &["q1", "q2", "q3"]).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((r.w, r.l), (1, 1));
    let want: BTreeMap<String, (bool, bool)> = [
        ("q1".to_owned(), (false, true)),
        ("q2".to_owned(), (true, false)),
        ("q3".to_owned(), (true, true)),
    ]
    .into_iter()
    .collect();
    assert_eq!(r.observed, want);
}

#[test]
fn pair_block_on_nothing_is_empty() {
    let empty: HashMap<String, bool> = HashMap::new();
    let ids: [&str; 0] = [];
    let r = pair_block(&empty, &empty, &ids).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((r.w, r.l, r.observed.len()), (0, 0, 0));
}

#[test]
fn pair_block_errors() {
    let baseline = map(&[("q1", false)]);
    let candidate: BTreeMap<&str, bool> = [("q1", true), ("q2", true)].into_iter().collect();
    assert_eq!(
        pair_block(&baseline, &candidate, &["q1", "q2"]),
        Err(GateError::MissingQuestion {
            id: "q2".into(),
            arm: "baseline"
        })
    );
    assert_eq!(
        pair_block(&candidate, &baseline, &["q2"]),
        Err(GateError::MissingQuestion {
            id: "q2".into(),
            arm: "candidate"
        })
    );
    assert_eq!(
        pair_block(&baseline, &candidate, &["q1", "q1"]),
        Err(GateError::DuplicateQuestion { id: "q1".into() })
    );
}

#[test]
fn quadrants_all_four() {
    let observed: BTreeMap<String, (bool, bool)> = [
        ("q1", (false, true)),
        ("q2", (true, false)),
        ("q3", (false, false)),
        ("q4", (true, true)),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    let qc = classify_quadrants(&observed);
    assert_eq!(qc.improvements, ["q1"]);
    assert_eq!(qc.regressions, ["q2"]);
    assert_eq!(qc.persistent_fails, ["q3"]);
    assert_eq!(qc.stable_successes, ["q4"]);
}

#[test]
fn quadrants_are_sorted() {
    let observed: BTreeMap<String, (bool, bool)> = [
        ("z", (false, true)),
        ("a", (false, true)),
        ("é", (false, true)),
        ("b", (true, true)),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    let qc = classify_quadrants(&observed);
    assert_eq!(qc.improvements, ["a", "z", "é"]);
    assert_eq!(qc.stable_successes, ["b"]);
}

#[test]
fn accuracy() {
    let c = map(&[("q1", true), ("q2", false)]);
    assert_eq!(compute_accuracy(&c, &["q1", "q2"]), Ok(0.5));
    assert_eq!(compute_accuracy(&c, &["q1"]), Ok(1.0));
    let ids: Vec<String> = Vec::new();
    assert_eq!(compute_accuracy(&c, &ids), Err(GateError::EmptyQuestionIds));
    assert_eq!(
        compute_accuracy(&c, &["q3"]),
        Err(GateError::MissingQuestion {
            id: "q3".into(),
            arm: "correctness"
        })
    );
    assert_eq!(
        compute_accuracy(&c, &["q1", "q1"]),
        Err(GateError::DuplicateQuestion { id: "q1".into() })
    );
}
