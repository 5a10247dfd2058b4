//! Property tests: the decisions are total and the e-value is ordered.

use evolution_gate::{
    EProcess, Gate, GateDecision, GateError, GateParams, GateVerdict, Tally, ln_e_value,
};
use proptest::prelude::*;

/// Counts biased towards the edges of `u64` as well as small values.
fn count() -> impl Strategy<Value = u64> {
    prop_oneof![
        0_u64..64,
        0_u64..10_000_000,
        any::<u64>(),
        prop::sample::select(vec![0, 1, u64::MAX / 2, u64::MAX - 1, u64::MAX]),
    ]
}

/// Any `f64` including NaN, infinities and the reference implementation's values.
fn threshold() -> impl Strategy<Value = f64> {
    prop_oneof![
        any::<f64>(),
        prop::sample::select(vec![
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            0.0,
            1.0,
            3.0,
            20.0,
            -0.642
        ]),
    ]
}

fn params() -> impl Strategy<Value = GateParams> {
    (
        threshold(),
        threshold(),
        any::<i64>(),
        threshold(),
        threshold(),
        threshold(),
    )
        .prop_map(
            |(e_confirm, e_provisional, w_net_min, delta_min, lambda_dir, e_rollback)| GateParams {
                e_confirm,
                e_provisional,
                w_net_min,
                delta_min,
                lambda_dir,
                e_rollback,
                e_process: EProcess::UniformMixture,
                futility_risk: None,
            },
        )
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

proptest! {
    #[test]
    fn decide_is_total(w in count(), l in count(), n_used in count(), n_rem in count(), p in params()) {
        match decide_with(w, l, n_used, n_rem, &p) {
            Ok(v) => {
                prop_assert!(v.ln_e_value.is_finite());
                prop_assert!(!v.delta_hat.is_nan() && !v.wald_lambda.is_nan());
            }
            Err(GateError::NoQuestionsUsed) => prop_assert_eq!(n_used, 0),
            Err(GateError::CountsExceedUsed { .. }) => {
                prop_assert!(w.checked_add(l).is_none_or(|d| d > n_used));
            }
            Err(GateError::InvalidParams { .. }) => {}
            Err(e) => prop_assert!(false, "unexpected error {e}"),
        }
    }

    #[test]
    fn probation_is_total(w in count(), l in count(), p in params()) {
        if let Ok(gate) = Gate::new(p) {
            let _verdict = gate.probation(w, l);
        }
    }

    #[test]
    fn default_params_decide_every_valid_input(w in 0_u64..5_000, l in 0_u64..5_000, ties in 0_u64..5_000, n_rem in count()) {
        let v = decide_with(w, l, w + l + ties.max(1), n_rem, &GateParams::default());
        prop_assert!(v.is_ok());
    }

    #[test]
    fn e_value_orders_wins_and_losses(w in 0_u64..10_000_000, l in 0_u64..10_000_000) {
        let here = ln_e_value(w, l);
        prop_assert!(ln_e_value(w + 1, l) > here);
        prop_assert!(ln_e_value(w, l + 1) < here);
    }
}

proptest! {
    #[test]
    fn futility_is_the_exact_best_case_check(w in 0_u64..400, l in 0_u64..400, ties in 1_u64..400, n_rem in 1_u64..3_000) {
        let p = GateParams::default();
        let n_used = w + l + ties;
        let v = decide_with(w, l, n_used, n_rem, &p);
        prop_assert!(v.is_ok());
        if let Ok(v) = v {
            if v.decision == GateDecision::RejectFutility {
                prop_assert!(ln_e_value(w + n_rem, l) < p.e_confirm.ln());
            } else if v.decision == GateDecision::Continue {
                prop_assert!(ln_e_value(w + n_rem, l) >= p.e_confirm.ln());
            }
        }
    }
}

proptest! {
    /// The tie-aware futility exit only stops a comparison the plain gate would continue:
    /// every other decision, each accept included, is the plain gate's.
    #[test]
    fn tie_aware_futility_only_turns_continue_into_reject(
        w in 0_u64..300,
        l in 0_u64..300,
        ties in 0_u64..600,
        n_rem in 0_u64..600,
        risk in 0.001_f64..0.5,
        e_confirm in 2.0_f64..1_000.0,
    ) {
        let plain = GateParams { e_confirm, ..GateParams::default() };
        let aware = GateParams { futility_risk: Some(risk), ..plain };
        let n_used = w + l + ties;
        prop_assume!(n_used > 0);
        let (Ok(a), Ok(b)) = (
            decide_with(w, l, n_used, n_rem, &plain),
            decide_with(w, l, n_used, n_rem, &aware),
        ) else {
            return Err(TestCaseError::fail("valid counts were refused"));
        };
        if a.decision == GateDecision::Continue {
            prop_assert!(matches!(b.decision, GateDecision::Continue | GateDecision::RejectFutility));
        } else {
            prop_assert_eq!(a.decision, b.decision);
        }
        // With no tie so far every remaining question counts as a possible win: no change.
        if ties == 0 {
            prop_assert_eq!(a.decision, b.decision);
        }
    }
}
