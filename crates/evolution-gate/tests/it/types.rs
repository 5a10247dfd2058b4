//! The gate's value types: the reference implementation's defaults and their serde spellings.

use evolution_gate::{GateDecision, GateParams, GateVerdict, ProbationVerdict};

#[test]
fn default_params_are_the_seeds() {
    let p = GateParams::default();
    assert_eq!(
        (
            p.e_confirm,
            p.e_provisional,
            p.w_net_min,
            p.delta_min,
            p.lambda_dir,
            p.e_rollback
        ),
        (20.0, 3.0, 2, 0.02, -0.642, 10.0)
    );
}

#[test]
fn decisions_serialize_to_the_seeds_strings() {
    let all = [
        (GateDecision::AcceptConfirmed, "accept_confirmed"),
        (GateDecision::AcceptProvisional, "accept_provisional"),
        (GateDecision::RejectDirectional, "reject_directional"),
        (GateDecision::RejectFutility, "reject_futility"),
        (GateDecision::RejectInertia, "reject_inertia"),
        (GateDecision::RejectInfra, "reject_infra"),
        (GateDecision::Continue, "continue"),
    ];
    for (decision, text) in all {
        assert_eq!(
            serde_json::to_string(&decision).unwrap(),
            format!("\"{text}\"")
        );
        assert_eq!(decision.to_string(), text);
        let back: GateDecision = serde_json::from_str(&format!("\"{text}\"")).unwrap();
        assert_eq!(back, decision);
    }
    assert!(GateDecision::AcceptProvisional.is_accept());
    assert!(!GateDecision::RejectInertia.is_accept());
    assert!(!GateDecision::RejectInfra.is_accept() && GateDecision::RejectInfra.is_terminal());
    assert!(!GateDecision::Continue.is_terminal());
    assert_eq!(
        serde_json::to_string(&ProbationVerdict::Rollback).unwrap(),
        "\"rollback\""
    );
}

#[test]
fn verdict_round_trips() {
    let v = GateVerdict {
        decision: GateDecision::Continue,
        e_value: 1.5,
        ln_e_value: 1.5f64.ln(),
        wald_lambda: -0.2,
        delta_hat: 0.1,
        delta_shrunk: 0.05,
    };
    let json = serde_json::to_string(&v).unwrap();
    assert_eq!(serde_json::from_str::<GateVerdict>(&json).unwrap(), v);
}
