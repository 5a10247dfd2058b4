//! How one question counts from what each arm produced: the better result
//! wins, a failure ranks below a wrong answer, and only a question both arms
//! failed or one that never started is left out.

use evolution_gate::{
    ArmResult, Gate, GateDecision, GateError, PairScore, Tally, classify_quadrants, pair_block,
    score_pair, scored_pair,
};
use std::collections::BTreeMap;

use ArmResult::{Failed, NotStarted, Right, Wrong};
use PairScore::{Excluded, Loss, Tie, Win};

#[test]
fn every_pair_of_arm_results_scores_as_documented() {
    // Rows: baseline; columns: candidate (right, wrong, failed, never started).
    let table = [
        (Right, [Tie, Loss, Loss, Excluded]),
        (Wrong, [Win, Tie, Loss, Excluded]),
        (Failed, [Win, Win, Excluded, Excluded]),
        (NotStarted, [Excluded, Excluded, Excluded, Excluded]),
    ];
    for (baseline, row) in table {
        for (candidate, want) in [Right, Wrong, Failed, NotStarted].into_iter().zip(row) {
            assert_eq!(
                score_pair(baseline, candidate),
                want,
                "{baseline:?} vs {candidate:?}"
            );
        }
    }
}

#[test]
fn scored_pairs_count_as_the_wins_and_losses_of_score_pair() {
    let all = [Right, Wrong, Failed, NotStarted];
    let mut baseline = BTreeMap::new();
    let mut candidate = BTreeMap::new();
    let mut ids = Vec::new();
    let (mut wins, mut losses) = (0, 0);
    for (i, &b) in all.iter().enumerate() {
        for (j, &c) in all.iter().enumerate() {
            let id = format!("q{i}{j}");
            match score_pair(b, c) {
                Win => wins += 1,
                Loss => losses += 1,
                _ => {}
            }
            if let Some((b_right, c_right)) = scored_pair(b, c) {
                baseline.insert(id.clone(), b_right);
                candidate.insert(id.clone(), c_right);
                ids.push(id);
            }
        }
    }
    let pairs = pair_block(&baseline, &candidate, &ids).unwrap();
    assert_eq!((pairs.w, pairs.l), (wins, losses));
    assert_eq!((wins, losses, ids.len()), (3, 3, 8));
    // A tie keeps the arms' own correctness.
    assert_eq!(scored_pair(Wrong, Wrong), Some((false, false)));
    assert_eq!(scored_pair(Right, Right), Some((true, true)));
    let quadrants = classify_quadrants(&pairs.observed);
    assert_eq!(quadrants.regressions.len(), 3);
    assert_eq!(quadrants.improvements.len(), 3);
}

#[test]
fn reject_infra_reports_the_evidence_it_had() {
    let gate = Gate::default();
    let v = gate.reject_infra(&Tally::new(3, 1, 6, 10)).unwrap();
    let decided = gate.decide(&Tally::new(3, 1, 6, 10)).unwrap();
    assert_eq!(v.decision, GateDecision::RejectInfra);
    assert_eq!(v.ln_e_value, decided.ln_e_value);
    assert_eq!(v.wald_lambda, decided.wald_lambda);
    assert_eq!(v.delta_hat, decided.delta_hat);
    // Nothing paired: no evidence either way, and no error.
    let v = gate.reject_infra(&Tally::new(0, 0, 0, 0)).unwrap();
    assert_eq!((v.e_value, v.delta_hat, v.wald_lambda), (1.0, 0.0, 0.0));
    assert!(matches!(
        gate.reject_infra(&Tally::new(2, 1, 2, 0)),
        Err(GateError::CountsExceedUsed { .. })
    ));
}
