//! `Gate::decide` and `Gate::probation`: seed cases, every exit, priorities, errors.

use evolution_gate::{
    Gate, GateDecision, GateError, GateParams, GateVerdict, ProbationVerdict, Tally,
    compute_e_value,
};

fn params() -> GateParams {
    GateParams::default()
}

/// A gate checked from `p`, then asked about one tally.
fn decide_with(
    w: u64,
    l: u64,
    n_used: u64,
    n_remaining: u64,
    p: &GateParams,
) -> Result<GateVerdict, GateError> {
    Gate::new(*p)?.decide(&Tally::new(w, l, n_used, n_remaining))
}

/// The probation verdict of a gate checked from `p`.
fn probation_with(w: u64, l: u64, p: &GateParams) -> ProbationVerdict {
    match Gate::new(*p) {
        Ok(gate) => gate.probation(w, l),
        Err(e) => panic!("invalid parameters {p:?}: {e}"),
    }
}

fn decide(w: u64, l: u64, n_used: u64, n_remaining: u64) -> GateDecision {
    match decide_with(w, l, n_used, n_remaining, &params()) {
        Ok(v) => v.decision,
        Err(e) => panic!("decide({w}, {l}, {n_used}, {n_remaining}) failed: {e}"),
    }
}

#[test]
fn seed_cases() {
    assert_eq!(decide(10, 0, 10, 10), GateDecision::AcceptConfirmed);
    assert_eq!(decide(3, 3, 6, 20), GateDecision::Continue);
    assert_eq!(decide(1, 1, 2, 0), GateDecision::RejectInertia);
    assert_eq!(
        decide_with(0, 0, 0, 10, &params()),
        Err(GateError::NoQuestionsUsed)
    );
    assert_eq!(
        probation_with(10, 0, &params()),
        ProbationVerdict::Confirmed
    );
    assert_eq!(probation_with(0, 10, &params()), ProbationVerdict::Rollback);
    assert_eq!(
        probation_with(3, 3, &params()),
        ProbationVerdict::Unverified
    );
}

#[test]
fn verdict_reports_its_statistics() {
    let v = decide_with(7, 2, 20, 5, &params()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(v.ln_e_value, evolution_gate::ln_e_value(7, 2));
    assert_eq!(v.e_value, compute_e_value(7, 2));
    assert_eq!(v.wald_lambda, evolution_gate::wald_lambda(7, 2));
    assert_eq!(v.delta_hat, 5.0 / 20.0);
    assert_eq!(v.delta_shrunk, 5.0 / 24.0);
}

#[test]
fn confirmed_needs_the_effect_size_too() {
    // E(10, 0) ≈ 186 ≥ 20, but δ̂ = 10/1000 < 0.02: no confirmed accept.
    assert_ne!(decide(10, 0, 1000, 50), GateDecision::AcceptConfirmed);
    assert_eq!(decide(10, 0, 500, 50), GateDecision::AcceptConfirmed);
}

#[test]
fn confirmed_outranks_directional() {
    // W/N = 0.6 makes λ negative (−0.0024 per pair) while E is astronomically large.
    let v = decide_with(600, 400, 1000, 10, &params()).unwrap_or_else(|e| panic!("{e}"));
    assert!(v.wald_lambda <= params().lambda_dir);
    assert_eq!(v.decision, GateDecision::AcceptConfirmed);
    // With δ̂ below delta_min the same counts fall through to directional.
    assert_eq!(
        decide(600, 400, 20_000, 10),
        GateDecision::RejectDirectional
    );
}

#[test]
fn directional_outranks_futility_and_exhaustion() {
    // Two losses: λ = 2 ln 0.6 ≈ −1.02 ≤ −0.642, and E(2, 2) < 20 makes futility true as well.
    assert_eq!(decide(0, 2, 2, 2), GateDecision::RejectDirectional);
    assert_eq!(decide(0, 2, 2, 0), GateDecision::RejectDirectional);
    assert_eq!(decide(1, 2, 3, 1000), GateDecision::RejectDirectional);
}

#[test]
fn futility_only_while_questions_remain() {
    // (3, 3): E(5, 3) < 20, so with two questions left nothing can confirm.
    assert!(compute_e_value(5, 3) < 20.0);
    assert_eq!(decide(3, 3, 6, 2), GateDecision::RejectFutility);
    // With none left the exhaustion exits decide instead.
    assert_eq!(decide(3, 3, 6, 0), GateDecision::RejectInertia);
}

#[test]
fn futility_agrees_with_walking_the_best_case_path() {
    // Futility claims no path through the remaining questions confirms; the best path is all wins.
    for w in 0..12_u64 {
        for l in 0..8_u64 {
            for n_rem in 1..30_u64 {
                let n_used = w + l + 3;
                let d = decide(w, l, n_used, n_rem);
                if !matches!(d, GateDecision::RejectFutility | GateDecision::Continue) {
                    continue;
                }
                let best_path_confirms = (1..=n_rem).any(|k| {
                    decide(w + k, l, n_used + k, n_rem - k) == GateDecision::AcceptConfirmed
                });
                assert_eq!(
                    d == GateDecision::RejectFutility,
                    !best_path_confirms,
                    "({w}, {l}, {n_used}, {n_rem})"
                );
            }
        }
    }
}

#[test]
fn provisional_is_reachable_at_exhaustion() {
    // E(5, 0) = 63/6 = 10.5: between e_provisional and e_confirm, W − L = 5 ≥ 2.
    assert_eq!(decide(5, 0, 5, 0), GateDecision::AcceptProvisional);
    // E ≥ e_confirm but δ̂ too small for a confirmed accept.
    assert_eq!(decide(10, 0, 1000, 0), GateDecision::AcceptProvisional);
    // Enough evidence but W − L below w_net_min: inertia.
    let strict = GateParams {
        w_net_min: 6,
        ..GateParams::default()
    };
    let v = decide_with(5, 0, 5, 0, &strict).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(v.decision, GateDecision::RejectInertia);
    // Not enough evidence: E(3, 1) = 2.2 < 3.
    assert!(compute_e_value(3, 1) < 3.0);
    assert_eq!(decide(3, 1, 4, 0), GateDecision::RejectInertia);
}

#[test]
fn thresholds_are_inclusive() {
    // E(W, 0) = (2^(W+1) − 1)/(W + 1); put e_confirm just below and above E(6, 0) = 127/7.
    let p = GateParams {
        e_confirm: 127.0 / 7.0 * (1.0 - 1e-12),
        ..GateParams::default()
    };
    let v = decide_with(6, 0, 6, 5, &p).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(v.decision, GateDecision::AcceptConfirmed);
    let p = GateParams {
        e_confirm: 127.0 / 7.0 * (1.0 + 1e-9),
        ..GateParams::default()
    };
    let v = decide_with(6, 0, 6, 5, &p).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(v.decision, GateDecision::Continue);
}

#[test]
fn input_errors() {
    let p = params();
    assert_eq!(decide_with(0, 0, 0, 0, &p), Err(GateError::NoQuestionsUsed));
    assert_eq!(
        decide_with(3, 3, 5, 0, &p),
        Err(GateError::CountsExceedUsed {
            w: 3,
            l: 3,
            n_used: 5
        })
    );
    assert_eq!(
        decide_with(u64::MAX, 1, u64::MAX, 0, &p),
        Err(GateError::CountsExceedUsed {
            w: u64::MAX,
            l: 1,
            n_used: u64::MAX
        })
    );
}

#[test]
fn malformed_parameters_are_errors() {
    let cases: [(&str, GateParams); 9] = [
        (
            "futility_risk",
            GateParams {
                futility_risk: Some(0.0),
                ..params()
            },
        ),
        (
            "futility_risk",
            GateParams {
                futility_risk: Some(f64::NAN),
                ..params()
            },
        ),
        (
            "e_confirm",
            GateParams {
                e_confirm: f64::NAN,
                ..params()
            },
        ),
        (
            "e_confirm",
            GateParams {
                e_confirm: 1.0,
                ..params()
            },
        ),
        (
            "e_provisional",
            GateParams {
                e_provisional: f64::INFINITY,
                ..params()
            },
        ),
        (
            "e_rollback",
            GateParams {
                e_rollback: 0.5,
                ..params()
            },
        ),
        (
            "delta_min",
            GateParams {
                delta_min: f64::NAN,
                ..params()
            },
        ),
        (
            "lambda_dir",
            GateParams {
                lambda_dir: f64::NAN,
                ..params()
            },
        ),
        (
            "lambda_dir",
            GateParams {
                lambda_dir: 0.5,
                ..params()
            },
        ),
    ];
    for (name, p) in cases {
        match Gate::new(p) {
            Err(GateError::InvalidParams { field, .. }) => assert_eq!(field, name),
            other => panic!("{name}: expected InvalidParams, got {other:?}"),
        }
    }
    // −∞ switches the directional exit off.
    let off = GateParams {
        lambda_dir: f64::NEG_INFINITY,
        ..params()
    };
    let v = decide_with(0, 50, 50, 10, &off).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(v.decision, GateDecision::RejectFutility);
}

#[test]
fn probation_is_asymmetric() {
    let p = params();
    // E(5, 0) = 10.5: enough to roll back (≥ 10) but not to confirm (< 20).
    assert_eq!(probation_with(0, 5, &p), ProbationVerdict::Rollback);
    assert_eq!(probation_with(5, 0, &p), ProbationVerdict::Unverified);
    // Confirm is checked first.
    let loose = GateParams {
        e_confirm: 1.5,
        e_rollback: 1.01,
        ..params()
    };
    assert_eq!(probation_with(5, 0, &loose), ProbationVerdict::Confirmed);
}

#[test]
fn calibrated_parameters_are_valid_and_differ_from_the_seed() {
    let c = GateParams::calibrated();
    assert_ne!(c, GateParams::default());
    assert!(decide_with(1, 0, 1, 1, &c).is_ok());
    assert!(c.lambda_dir < GateParams::default().lambda_dir);
    // Every accept needs E ≥ e_confirm, so Ville's bound covers the provisional exit too.
    assert!(c.e_provisional >= c.e_confirm);
}

#[test]
fn the_checked_gate_keeps_its_parameters() {
    assert_eq!(Gate::new(GateParams::default()), Ok(Gate::default()));
    assert_eq!(Gate::new(GateParams::calibrated()), Ok(Gate::calibrated()));
    let strict = GateParams {
        w_net_min: 6,
        ..params()
    };
    let gate = Gate::new(strict).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(gate.params(), &strict);
}

#[test]
fn probation_parameters_are_checked_too() {
    // A NaN rollback threshold used to make probation answer `unverified`
    // forever; now the gate refuses it before any verdict.
    let p = GateParams {
        e_rollback: f64::NAN,
        ..params()
    };
    assert!(matches!(
        Gate::new(p),
        Err(GateError::InvalidParams {
            field: "e_rollback",
            ..
        })
    ));
}

#[test]
fn a_candidate_that_mostly_ties_stops_early_with_the_tie_aware_exit() {
    // e-LOND's first level over six candidates: E ≥ 120. One win and 29 ties in 30
    // questions, 36 left: winning all 36 would reach it, so the plain gate goes on.
    let plain = GateParams {
        e_confirm: 120.0,
        e_provisional: 120.0,
        ..params()
    };
    let v = decide_with(1, 0, 30, 36, &plain).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(v.decision, GateDecision::Continue);
    // At one discordant pair in 30 the share still to come is at most 0.177 (risk 0.05),
    // so at most 7 of the 36 can be won: E(8, 0) = 56.8 < 120, futile.
    let aware = GateParams {
        futility_risk: Some(0.05),
        ..plain
    };
    let v = decide_with(1, 0, 30, 36, &aware).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(v.decision, GateDecision::RejectFutility);
    // A candidate whose pairs are mostly discordant wins is left alone: 8 wins in 12.
    let v = decide_with(8, 0, 12, 54, &aware).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(v.decision, GateDecision::Continue);
    // The field is left out of the JSON when unset, so older parameter sets read back.
    let json = serde_json::to_string(&plain).unwrap_or_else(|e| panic!("{e}"));
    assert!(!json.contains("futility_risk"), "{json}");
    let back: GateParams =
        serde_json::from_str(&serde_json::to_string(&aware).unwrap_or_else(|e| panic!("{e}")))
            .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(back, aware);
}
