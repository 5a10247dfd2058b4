//! Named presets, the likelihood-ratio e-process and the exact dynamic
//! program of `operating_characteristics`: the program against brute-force
//! enumeration, each preset against the numbers it promises, and the
//! Ville bound of every preset.

use evolution_gate::{
    EProcess, Gate, GateDecision, GateError, GateParams, MAX_CHARACTERISTICS_BUDGET,
    OperatingCharacteristics, PRESET_NAMES, ProbationVerdict, Tally, operating_characteristics,
    wald_lambda,
};

fn gate(name: &str) -> Gate {
    Gate::preset(name).unwrap_or_else(|e| panic!("preset {name}: {e}"))
}

fn oc(gate: &Gate, budget: u64, p: f64) -> OperatingCharacteristics {
    operating_characteristics(gate, budget, p).unwrap_or_else(|e| panic!("{e}"))
}

/// The same figures by walking every one of the `2^budget` win/loss sequences.
fn brute_force(gate: &Gate, budget: u64, p: f64) -> OperatingCharacteristics {
    let mut out = OperatingCharacteristics::default();
    for bits in 0_u64..(1 << budget) {
        let (mut w, mut l) = (0_u64, 0_u64);
        let mut prob = 1.0_f64;
        let mut stopped = None;
        for n in 1..=budget {
            if stopped.is_none() {
                if bits >> (n - 1) & 1 == 1 {
                    w += 1;
                } else {
                    l += 1;
                }
                let tally = Tally::new(w, l, n, budget - n);
                let d = gate
                    .decide(&tally)
                    .unwrap_or_else(|e| panic!("{e}"))
                    .decision;
                if d.is_terminal() {
                    stopped = Some((d, n));
                }
            }
            // Every full sequence has probability p^wins (1 − p)^losses.
            prob *= if bits >> (n - 1) & 1 == 1 { p } else { 1.0 - p };
        }
        let Some((d, n)) = stopped else {
            panic!("the gate did not stop at exhaustion");
        };
        let slot = match d {
            GateDecision::AcceptConfirmed => &mut out.accept_confirmed,
            GateDecision::AcceptProvisional => &mut out.accept_provisional,
            GateDecision::RejectDirectional => &mut out.reject_directional,
            GateDecision::RejectFutility => &mut out.reject_futility,
            GateDecision::RejectInertia => &mut out.reject_inertia,
            GateDecision::Continue => unreachable!("terminal"),
            GateDecision::RejectInfra => unreachable!("not an exit of decide"),
        };
        *slot += prob;
        out.expected_pairs += prob * n as f64;
    }
    out.accept = out.accept_confirmed + out.accept_provisional;
    out.reject = out.reject_directional + out.reject_futility + out.reject_inertia;
    out
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 * (1.0 + a.abs().max(b.abs()))
}

#[test]
fn dynamic_program_matches_brute_force_enumeration() {
    // Low thresholds so that every exit is taken within a dozen pairs.
    let loose = GateParams {
        e_confirm: 6.0,
        e_provisional: 2.0,
        w_net_min: 1,
        delta_min: 0.3,
        lambda_dir: -1.2,
        e_rollback: 10.0,
        e_process: EProcess::UniformMixture,
        futility_risk: None,
    };
    let loose_lr = GateParams {
        e_confirm: 5.0,
        e_provisional: 1.5,
        lambda_dir: -1.5,
        e_process: EProcess::LikelihoodRatio { alternative: 0.75 },
        ..loose
    };
    let mut gates: Vec<Gate> = PRESET_NAMES.iter().map(|name| gate(name)).collect();
    for params in [loose, loose_lr] {
        gates.push(Gate::new(params).unwrap_or_else(|e| panic!("{e}")));
    }
    let mut exits_seen = [false; 5];
    for g in &gates {
        for budget in [1_u64, 2, 5, 12] {
            for p in [0.0, 0.3, 0.5, 0.62, 0.8, 1.0] {
                let dp = oc(g, budget, p);
                let bf = brute_force(g, budget, p);
                let pairs = [
                    (dp.accept, bf.accept),
                    (dp.accept_confirmed, bf.accept_confirmed),
                    (dp.accept_provisional, bf.accept_provisional),
                    (dp.reject, bf.reject),
                    (dp.reject_directional, bf.reject_directional),
                    (dp.reject_futility, bf.reject_futility),
                    (dp.reject_inertia, bf.reject_inertia),
                    (dp.expected_pairs, bf.expected_pairs),
                ];
                for (a, b) in pairs {
                    assert!(close(a, b), "{g:?} budget {budget} p {p}: {dp:?} vs {bf:?}");
                }
                assert!(close(dp.accept + dp.reject, 1.0), "{dp:?}");
                let exits = [
                    bf.accept_confirmed,
                    bf.accept_provisional,
                    bf.reject_directional,
                    bf.reject_futility,
                    bf.reject_inertia,
                ];
                for (seen, x) in exits_seen.iter_mut().zip(exits) {
                    *seen |= x > 0.0;
                }
            }
        }
    }
    assert_eq!(exits_seen, [true; 5], "every exit is exercised");
}

#[test]
fn dynamic_program_refuses_bad_inputs() {
    let g = Gate::default();
    for p in [f64::NAN, -0.1, 1.5, f64::INFINITY] {
        assert!(matches!(
            operating_characteristics(&g, 10, p),
            Err(GateError::InvalidWinProbability { .. })
        ));
    }
    for budget in [0, MAX_CHARACTERISTICS_BUDGET + 1, u64::MAX] {
        assert!(matches!(
            operating_characteristics(&g, budget, 0.5),
            Err(GateError::InvalidBudget { .. })
        ));
    }
}

#[test]
fn presets_resolve_by_name() {
    assert_eq!(PRESET_NAMES, ["seed", "calibrated", "thrifty", "thorough"]);
    let ok = |name: &str| GateParams::preset(name).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(ok("seed"), GateParams::default());
    assert_eq!(ok("calibrated"), GateParams::calibrated());
    assert_eq!(ok("thrifty"), GateParams::thrifty());
    assert_eq!(ok("thorough"), GateParams::thorough());
    assert_eq!(gate("seed"), Gate::default());
    assert_eq!(gate("calibrated"), Gate::calibrated());
    for bad in ["", "Seed", "fast", "thrifty "] {
        assert_eq!(
            GateParams::preset(bad),
            Err(GateError::UnknownPreset {
                name: bad.to_owned()
            })
        );
        assert!(Gate::preset(bad).is_err());
    }
}

#[test]
fn seed_and_calibrated_keep_their_published_figures() {
    // Budget 200 discordant pairs, the figures quoted for the two original sets.
    let seed = gate("seed");
    let null = oc(&seed, 200, 0.5);
    assert!((null.accept - 0.023).abs() < 5e-4, "{null:?}");
    assert!((null.expected_pairs - 8.8).abs() < 0.05, "{null:?}");
    assert!((oc(&seed, 200, 0.6).accept - 0.186).abs() < 1e-3);
    assert!((oc(&seed, 200, 0.7).accept - 0.580).abs() < 1e-3);
    let calibrated = gate("calibrated");
    let null = oc(&calibrated, 200, 0.5);
    assert!((null.accept - 0.029).abs() < 5e-4, "{null:?}");
    assert!((null.expected_pairs - 23.5).abs() < 0.05, "{null:?}");
    assert!((oc(&calibrated, 200, 0.6).accept - 0.358).abs() < 1e-3);
    assert!((oc(&calibrated, 200, 0.7).accept - 0.892).abs() < 1e-3);
}

#[test]
fn thrifty_meets_its_numbers() {
    let g = gate("thrifty");
    let null = oc(&g, 200, 0.5);
    assert!(null.expected_pairs <= 20.0, "{null:?}");
    assert!(null.accept <= 0.05, "{null:?}");
    let power = oc(&g, 200, 0.7).accept;
    assert!(power >= 0.85, "power {power}");
}

#[test]
fn thorough_meets_its_numbers() {
    let g = gate("thorough");
    let null = oc(&g, 200, 0.5);
    assert!(null.accept <= 0.05, "{null:?}");
    let at_06 = oc(&g, 200, 0.6).accept;
    let at_07 = oc(&g, 200, 0.7).accept;
    assert!(at_06 >= 0.55, "power at 0.6: {at_06}");
    assert!(at_07 >= 0.97, "power at 0.7: {at_07}");
}

#[test]
fn every_preset_respects_its_ville_bound() {
    for name in PRESET_NAMES {
        let g = gate(name);
        let params = g.params();
        // Every accept needs E ≥ min(e_confirm, e_provisional).
        let bound = 1.0 / params.e_confirm.min(params.e_provisional);
        for budget in [20_u64, 200, 500] {
            let mut previous = 0.0_f64;
            for p in [0.3, 0.45, 0.5] {
                let fa = oc(&g, budget, p).accept;
                assert!(fa <= bound, "{name} budget {budget} p {p}: {fa} > {bound}");
                assert!(fa >= previous, "{name}: false accepts fall as p falls");
                previous = fa;
            }
        }
    }
}

#[test]
fn likelihood_ratio_is_walds_statistic() {
    let lr = EProcess::LikelihoodRatio { alternative: 0.7 };
    for (w, l) in [
        (0_u64, 0_u64),
        (1, 0),
        (0, 1),
        (7, 3),
        (40, 55),
        (1_000_000, 999_999),
    ] {
        let (a, b) = (lr.ln_e_value(w, l), wald_lambda(w, l));
        assert!(
            (a - b).abs() <= 1e-12 * (1.0 + b.abs()),
            "({w}, {l}): {a} vs {b}"
        );
    }
    // A martingale at p = 1/2: the average of the two next values is the current one.
    let lr = EProcess::LikelihoodRatio { alternative: 0.65 };
    for (w, l) in [(0_u64, 0_u64), (3, 9), (20, 11)] {
        let now = lr.ln_e_value(w, l).exp();
        let next = 0.5 * (lr.ln_e_value(w + 1, l).exp() + lr.ln_e_value(w, l + 1).exp());
        assert!((now - next).abs() <= 1e-12 * now);
    }
    assert!(lr.ln_e_value(u64::MAX, u64::MAX).is_finite());
}

#[test]
fn the_alternative_must_lie_between_one_half_and_one() {
    for alternative in [0.5, 0.3, 1.0, 1.2, f64::NAN, f64::INFINITY] {
        let params = GateParams {
            e_process: EProcess::LikelihoodRatio { alternative },
            ..GateParams::thrifty()
        };
        assert!(
            matches!(
                Gate::new(params),
                Err(GateError::InvalidParams {
                    field: "e_process.alternative",
                    ..
                })
            ),
            "alternative {alternative}"
        );
    }
}

#[test]
fn the_likelihood_ratio_drives_every_decision() {
    let g = gate("thrifty");
    // λ(9, 0) = 9 ln 1.4 = 3.03 ≥ ln 20 = 3.00: confirmed after nine straight wins.
    let v = g
        .decide(&Tally::new(9, 0, 9, 100))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(v.decision, GateDecision::AcceptConfirmed);
    assert!((v.ln_e_value - wald_lambda(9, 0)).abs() < 1e-12);
    let v = g
        .decide(&Tally::new(8, 0, 8, 100))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(v.decision, GateDecision::Continue);
    // Futility uses the same e-process: 8 wins in the remaining 8 cannot reach 20.
    let v = g
        .decide(&Tally::new(0, 0, 1, 8))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(v.decision, GateDecision::RejectFutility);
    let v = g
        .decide(&Tally::new(0, 0, 1, 9))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(v.decision, GateDecision::Continue);
    // Probation too, in both directions.
    assert_eq!(g.probation(9, 0), ProbationVerdict::Confirmed);
    // Reverse ratio 1.4^7 = 10.5 ≥ e_rollback = 10; 1.4^6 = 7.5 is not.
    assert_eq!(g.probation(0, 7), ProbationVerdict::Rollback);
    assert_eq!(g.probation(0, 6), ProbationVerdict::Unverified);
    assert_eq!(g.probation(3, 3), ProbationVerdict::Unverified);
}

#[test]
fn the_e_process_choice_leaves_old_json_unchanged() {
    let old = r#"{"e_confirm":20.0,"e_provisional":3.0,"w_net_min":2,"delta_min":0.02,"lambda_dir":-0.642,"e_rollback":10.0}"#;
    let parsed: GateParams = serde_json::from_str(old).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(parsed, GateParams::default());
    assert_eq!(
        serde_json::to_string(&GateParams::default()).unwrap_or_default(),
        old
    );
    for name in PRESET_NAMES {
        let params = GateParams::preset(name).unwrap_or_else(|e| panic!("{e}"));
        let json = serde_json::to_string(&params).unwrap_or_default();
        assert_eq!(
            json.contains("e_process"),
            !params.e_process.is_uniform_mixture()
        );
        let back: GateParams = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(back, params);
    }
    let thrifty = serde_json::to_string(&GateParams::thrifty()).unwrap_or_default();
    assert!(
        thrifty.ends_with(r#""e_process":{"kind":"likelihood_ratio","alternative":0.7}}"#),
        "{thrifty}"
    );
}
