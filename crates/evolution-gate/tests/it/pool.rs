//! The finite pool's exactly calibrated boundary: its false-accept rate computed three ways
//! (its own dynamic program, exact integer path counts, an adaptive worst case), its power
//! against the sign test and against simulation, and its decisions.

use evolution_gate::{
    Gate, GateDecision, GateError, GateParams, PoolBoundary, PoolDesign, SpendingShape, Tally,
    pool_accept_probability, pool_worst_case_false_accept,
};
use num_bigint::BigUint;

/// `run`'s gate with the directional exit off: only the boundary and the futility exits decide.
fn gate(futility_risk: Option<f64>) -> Gate {
    Gate::new(GateParams {
        futility_risk,
        lambda_dir: f64::NEG_INFINITY,
        ..GateParams::default()
    })
    .unwrap()
}

fn shape(exponent: f64, horizon: u64) -> SpendingShape {
    SpendingShape { exponent, horizon }
}

/// The chance that a fair coin, watched after every pair, crosses `boundary` within its pool,
/// as an exact fraction `numerator / 2^questions`: integer path counts.
fn exact_crossing(boundary: &PoolBoundary) -> (BigUint, u64) {
    let n = boundary.questions();
    // `live[w]`: paths of `d` steps with `w` wins that have not crossed.
    let mut live = vec![BigUint::from(1_u32)];
    let mut crossed = BigUint::from(0_u32);
    for d in 1..=n {
        let mut next = vec![BigUint::from(0_u32); live.len() + 1];
        for (w, count) in live.iter().enumerate() {
            next[w] += count;
            next[w + 1] += count;
        }
        if let Some(needed) = boundary.min_wins(d) {
            for (w, count) in next.iter_mut().enumerate() {
                if w as u64 >= needed {
                    crossed += &*count << (n - d);
                    *count = BigUint::from(0_u32);
                }
            }
        }
        live = next;
    }
    (crossed, n)
}

/// `level · 2^bits` rounded down, exactly (a double is a dyadic rational).
fn scaled_level(level: f64, bits: u64) -> BigUint {
    let raw = level.to_bits();
    let exponent = ((raw >> 52) & 0x7ff) as i64;
    let mantissa = (raw & ((1_u64 << 52) - 1)) | (1_u64 << 52);
    // level = mantissa · 2^(exponent − 1075)
    let shift = exponent - 1075 + bits as i64;
    let m = BigUint::from(mantissa);
    if shift >= 0 {
        m << shift
    } else {
        m >> (-shift)
    }
}

#[test]
fn the_false_accept_rate_is_computed_exactly_and_stays_within_the_level() {
    for questions in [1_u64, 5, 14, 20, 33, 60] {
        for level in [0.05, 0.01, 0.002] {
            for (exponent, horizon) in [(0.5, questions), (2.0, questions), (10.0, 7), (1.0, 3)] {
                let b = PoolBoundary::new(questions, level, shape(exponent, horizon)).unwrap();
                let (crossed, bits) = exact_crossing(&b);
                assert!(
                    crossed <= scaled_level(level, bits),
                    "{questions} questions at {level}, shape ({exponent}, {horizon}): above the level"
                );
                let exact = crossed.to_string().parse::<f64>().unwrap() / 2_f64.powi(bits as i32);
                assert!(
                    (exact - b.false_accept()).abs() <= 1e-12 * level,
                    "{questions}/{level}: exact {exact} vs computed {}",
                    b.false_accept()
                );
                assert!(b.false_accept() <= level);
            }
        }
    }
}

#[test]
fn an_adaptive_candidate_that_is_not_better_is_accepted_at_most_the_level() {
    // It sees every outcome and picks, question by question, a tie or a fair discordant pair.
    for questions in [12_u64, 33] {
        for ladder in [&[1_usize][..], &[5], &[10, 20, 40]] {
            for risk in [None, Some(0.05)] {
                for discordance in [1.0, 0.4] {
                    let g = gate(risk);
                    let design = PoolDesign {
                        questions,
                        level: 0.01,
                        discordance,
                        win_rate: 0.7,
                    };
                    let b = PoolBoundary::design(&g, &design, ladder).unwrap();
                    let worst = pool_worst_case_false_accept(&g, &b, ladder).unwrap();
                    assert!(
                        worst <= b.false_accept() + 1e-15 && b.false_accept() <= 0.01,
                        "{questions} {ladder:?} {risk:?} {discordance}: {worst} vs {}",
                        b.false_accept()
                    );
                }
            }
        }
    }
}

#[test]
fn asked_after_every_pair_the_worst_case_spends_what_the_boundary_says() {
    // With no futility exit and a look after every question, the adaptive candidate's best is
    // to be discordant every time: exactly the boundary's own crossing chance.
    let g = Gate::new(GateParams {
        lambda_dir: f64::NEG_INFINITY,
        delta_min: -1.0,
        ..GateParams::default()
    })
    .unwrap();
    let b = PoolBoundary::new(30, 0.05, shape(2.0, 30)).unwrap();
    let worst = pool_worst_case_false_accept(&g, &b, &[1]).unwrap();
    assert!(
        (worst - b.false_accept()).abs() < 1e-12,
        "{worst} vs {}",
        b.false_accept()
    );
    // The level is spent, not a fraction of it.
    assert!(b.false_accept() > 0.04, "{}", b.false_accept());
}

/// `P(X ≥ k)`, `X ~ Binomial(n, p)`.
fn binomial_tail(n: u64, k: u64, p: f64) -> f64 {
    let mut pmf = vec![0.0_f64; n as usize + 1];
    pmf[0] = 1.0;
    for _ in 0..n {
        for i in (0..pmf.len()).rev() {
            let below = if i > 0 { pmf[i - 1] } else { 0.0 };
            pmf[i] = pmf[i] * (1.0 - p) + below * p;
        }
    }
    pmf.iter().skip(k as usize).sum()
}

/// The power at `p` of the one-sided sign test on `n` pairs at `level`.
fn sign_test_power(n: u64, level: f64, p: f64) -> f64 {
    let k = (0..=n + 1)
        .find(|&k| binomial_tail(n, k, 0.5) <= level)
        .unwrap();
    binomial_tail(n, k, p)
}

#[test]
fn every_question_won_or_lost_it_finds_nine_tenths_of_what_the_sign_test_finds() {
    // The sign test asks once, after every question; the gate asks every 5 and may stop early.
    let g = gate(Some(0.05));
    for questions in [20_u64, 40, 80, 160] {
        let design = PoolDesign {
            questions,
            level: 0.01,
            discordance: 1.0,
            win_rate: 0.7,
        };
        let b = PoolBoundary::design(&g, &design, &[5]).unwrap();
        let power = pool_accept_probability(&g, &b, &[5], 0.7, 1.0).unwrap();
        let sign = sign_test_power(questions, 0.01, 0.7);
        assert!(
            power >= 0.9 * sign,
            "{questions}: {power} vs the sign test's {sign}"
        );
    }
}

#[test]
fn its_power_beats_the_e_process_at_the_same_level() {
    let g = gate(Some(0.05));
    let e_gate = Gate::new(GateParams {
        e_confirm: 100.0,
        e_provisional: 100.0,
        ..*g.params()
    })
    .unwrap();
    let b = PoolBoundary::design(
        &g,
        &PoolDesign {
            questions: 40,
            level: 0.01,
            discordance: 1.0,
            win_rate: 0.7,
        },
        &[5],
    )
    .unwrap();
    let pool = pool_accept_probability(&g, &b, &[5], 0.7, 1.0).unwrap();
    let e_process = evolution_gate::ladder_accept_probability(&e_gate, 40, &[5], 0.7).unwrap();
    assert!(pool > 2.0 * e_process, "{pool} vs {e_process}");
}

/// xorshift64*: a tiny fixed generator for the simulation.
struct Rng(u64);
impl Rng {
    fn uniform(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1_u64 << 53) as f64
    }
}

#[test]
fn the_exact_power_agrees_with_simulated_comparisons() {
    let g = gate(Some(0.05));
    let (questions, p, q, ladder) = (50_u64, 0.8, 0.5, [5_usize]);
    let b = PoolBoundary::design(
        &g,
        &PoolDesign {
            questions,
            level: 0.02,
            discordance: q,
            win_rate: 0.7,
        },
        &ladder,
    )
    .unwrap();
    let exact = pool_accept_probability(&g, &b, &ladder, p, q).unwrap();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let runs = 20_000;
    let mut accepted = 0_u32;
    for _ in 0..runs {
        let (mut w, mut l) = (0_u64, 0_u64);
        for n in 1..=questions {
            let u = rng.uniform();
            if u < q * p {
                w += 1;
            } else if u < q {
                l += 1;
            }
            if n % 5 == 0 {
                let v = g
                    .decide_in_pool(&Tally::new(w, l, n, questions - n), &b)
                    .unwrap();
                if v.decision.is_terminal() {
                    accepted += u32::from(v.decision.is_accept());
                    break;
                }
            }
        }
    }
    let simulated = f64::from(accepted) / f64::from(runs);
    let se = (exact * (1.0 - exact) / f64::from(runs)).sqrt();
    assert!(
        (simulated - exact).abs() < 5.0 * se,
        "simulated {simulated} vs exact {exact}"
    );
}

#[test]
fn decisions_follow_the_boundary_and_the_exits() {
    let g = gate(None);
    let b = PoolBoundary::new(20, 0.01, shape(2.0, 20)).unwrap();
    let needed = b.min_wins(20).unwrap();
    // Exhaustion: on the boundary accepts, one win short is inertia (no provisional accept).
    let on = g
        .decide_in_pool(&Tally::new(needed, 20 - needed, 20, 0), &b)
        .unwrap();
    assert_eq!(on.decision, GateDecision::AcceptConfirmed);
    let short = g
        .decide_in_pool(&Tally::new(needed - 1, 21 - needed, 20, 0), &b)
        .unwrap();
    assert_eq!(short.decision, GateDecision::RejectInertia);
    // Five questions in, five losses: no run of wins over the 15 left reaches the boundary.
    let lost = g.decide_in_pool(&Tally::new(0, 5, 5, 15), &b).unwrap();
    assert_eq!(lost.decision, GateDecision::RejectFutility);
    assert!(!b.reachable(0, 5, 15) && b.reachable(0, 0, 20));
    // Ties so far: still reachable, so the gate goes on.
    let ties = g.decide_in_pool(&Tally::new(0, 0, 5, 15), &b).unwrap();
    assert_eq!(ties.decision, GateDecision::Continue);
    // With the tie-aware exit, many ties stop it: the few plausible discordant pairs cannot reach.
    let tie_aware = gate(Some(0.05));
    let many_ties = tie_aware
        .decide_in_pool(&Tally::new(1, 0, 15, 5), &b)
        .unwrap();
    assert_eq!(many_ties.decision, GateDecision::RejectFutility);
    // delta_min still binds an accept.
    let strict = Gate::new(GateParams {
        delta_min: 0.99,
        lambda_dir: f64::NEG_INFINITY,
        ..GateParams::default()
    })
    .unwrap();
    let v = strict
        .decide_in_pool(&Tally::new(needed, 20 - needed, 20, 0), &b)
        .unwrap();
    assert_eq!(v.decision, GateDecision::RejectInertia);
}

#[test]
fn more_questions_than_the_pool_or_bad_designs_are_refused() {
    let g = gate(None);
    let b = PoolBoundary::new(10, 0.05, shape(1.0, 10)).unwrap();
    assert!(matches!(
        g.decide_in_pool(&Tally::new(1, 0, 5, 6), &b),
        Err(GateError::InvalidPool { .. })
    ));
    assert!(matches!(
        g.decide_in_pool(&Tally::new(1, 0, 0, 6), &b),
        Err(GateError::NoQuestionsUsed)
    ));
    for (questions, level, exponent, horizon) in [
        (0, 0.05, 1.0, 1),
        (10, 0.0, 1.0, 1),
        (10, 1.0, 1.0, 1),
        (10, f64::NAN, 1.0, 1),
        (10, 0.05, f64::NAN, 1),
        (10, 0.05, -1.0, 1),
        (10, 0.05, 1.0, 0),
        (evolution_gate::MAX_POOL_QUESTIONS + 1, 0.05, 1.0, 1),
    ] {
        assert!(
            PoolBoundary::new(questions, level, shape(exponent, horizon)).is_err(),
            "{questions} {level} {exponent} {horizon}"
        );
    }
    for (discordance, win_rate) in [
        (0.0, 0.7),
        (1.1, 0.7),
        (0.5, 0.5),
        (0.5, 1.0),
        (f64::NAN, 0.7),
    ] {
        let design = PoolDesign {
            questions: 10,
            level: 0.05,
            discordance,
            win_rate,
        };
        assert!(PoolBoundary::design(&g, &design, &[5]).is_err());
    }
    assert!(pool_accept_probability(&g, &b, &[5], 1.5, 1.0).is_err());
    assert!(pool_accept_probability(&g, &b, &[], 0.7, 1.0).is_err());
    let big = PoolBoundary::new(1000, 0.05, shape(1.0, 1000)).unwrap();
    assert!(pool_worst_case_false_accept(&g, &big, &[5]).is_err());
    // A large pool still gets a boundary (its shape not searched).
    let design = PoolDesign {
        questions: 1000,
        level: 0.01,
        discordance: 0.5,
        win_rate: 0.7,
    };
    let large = PoolBoundary::design(&g, &design, &[5]).unwrap();
    assert!(large.false_accept() <= 0.01 && large.min_wins(1000).is_some());
}

#[test]
fn reachable_is_what_some_run_of_wins_would_accept() {
    for (questions, exponent, horizon) in [(30_u64, 2.0, 30), (45, 0.5, 20), (12, 10.0, 5)] {
        let b = PoolBoundary::new(questions, 0.05, shape(exponent, horizon)).unwrap();
        for w in 0..=questions {
            for l in 0..=(questions - w) {
                for more in [0, 1, 2, 5, 17, questions] {
                    let room = (questions - w - l).min(more);
                    let brute = (0..=room).any(|k| b.accepts(w + k, l));
                    assert_eq!(b.reachable(w, l, more), brute, "{w} {l} {more}");
                }
            }
        }
    }
    let b = PoolBoundary::new(10, 0.05, shape(1.0, 10)).unwrap();
    assert!(!b.reachable(u64::MAX, 1, 3) && !b.reachable(11, 0, 0));
}
