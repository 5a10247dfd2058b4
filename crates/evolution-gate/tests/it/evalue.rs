//! `ln_e_value` / `compute_e_value` against exact rational values and identities.

use evolution_gate::{compute_e_value, ln_e_value, wald_lambda};
use num_bigint::BigUint;

/// `ln E(W, L)` from the exact rational `Σ_{j≤W} C(M, j) / (M · C(M − 1, W))`, `M = W + L + 1`.
fn exact_ln_e(w: u64, l: u64) -> f64 {
    let m = w + l + 1;
    // Row M of Pascal's triangle up to column W, summed.
    let mut c = BigUint::from(1_u32);
    let mut numerator = c.clone();
    for j in 0..w {
        c = c * BigUint::from(m - j) / BigUint::from(j + 1);
        numerator += &c;
    }
    // M · C(M − 1, W) = M! / (W! L!).
    let mut denominator = BigUint::from(1_u32);
    for j in 0..w {
        denominator = denominator * BigUint::from(m - 1 - j) / BigUint::from(j + 1);
    }
    denominator *= BigUint::from(m);
    ln_ratio(&numerator, &denominator)
}

/// `ln(a / b)` to about 1e-16 absolute error plus the rounding of `k · ln 2`.
fn ln_ratio(a: &BigUint, b: &BigUint) -> f64 {
    let shift = 96 + b.bits() as i64 - a.bits() as i64;
    let q = if shift >= 0 {
        (a << shift as u64) / b
    } else {
        a / (b << (-shift) as u64)
    };
    let bits = q.bits();
    let top = &q >> (bits - 64);
    let top = top.to_u64_digits().first().copied().unwrap_or(0) as f64;
    top.ln() + (bits as i64 - 64 - shift) as f64 * std::f64::consts::LN_2
}

fn assert_close(w: u64, l: u64, got: f64, want: f64, tol: f64) {
    let err = (got - want).abs();
    let scale = want.abs().max(1.0);
    assert!(
        err <= tol * scale,
        "ln E({w}, {l}) = {got:e}, exact {want:e}, error {:e}",
        err / scale
    );
}

#[test]
fn matches_exact_rationals_on_a_grid() {
    let values = [
        0_u64, 1, 2, 3, 4, 5, 7, 10, 17, 31, 50, 99, 100, 101, 333, 1000, 1500,
    ];
    for &w in &values {
        for &l in &values {
            assert_close(w, l, ln_e_value(w, l), exact_ln_e(w, l), 1e-13);
        }
    }
}

#[test]
fn matches_exact_rationals_near_the_diagonal() {
    for (w, l) in [
        (2000, 2001),
        (2001, 2000),
        (2000, 2000),
        (2500, 2450),
        (2450, 2500),
    ] {
        assert_close(w, l, ln_e_value(w, l), exact_ln_e(w, l), 1e-13);
    }
}

#[test]
fn matches_exact_rationals_where_ln_e_crosses_zero() {
    // |ln E| < 1 is where the absolute error bound bites.
    for l in [10_u64, 100, 1000] {
        for w in l..l + 4 * (l as f64).sqrt() as u64 {
            let exact = exact_ln_e(w, l);
            if exact.abs() < 1.0 {
                let got = ln_e_value(w, l);
                assert!((got - exact).abs() < 1e-13, "({w}, {l}): {got} vs {exact}");
            }
        }
    }
}

#[test]
fn seed_cases() {
    assert!((compute_e_value(0, 0) - 1.0).abs() < 1e-15);
    assert_eq!(ln_e_value(0, 0), 0.0);
    // The reference implementation's tests assert E(0, 20) < 0.01, but its own formula gives exactly
    // E(0, L) = 1/(L + 1): a loss streak only shrinks the mixture as 1/(L + 1).
    assert!((compute_e_value(0, 20) - 1.0 / 21.0).abs() < 1e-16);
    assert!(compute_e_value(0, 200) < 0.01);
    assert!(compute_e_value(10, 0) > 100.0);
    assert!(compute_e_value(5, 3) > compute_e_value(3, 5));
}

#[test]
fn closed_forms_on_the_axes() {
    // E(0, L) = 1/(L + 1); E(W, 0) = (2^(W+1) − 1)/(W + 1).
    for l in [1_u64, 2, 10, 1_000, 10_000_000] {
        let want = -((l + 1) as f64).ln();
        assert_close(0, l, ln_e_value(0, l), want, 1e-15);
    }
    for w in [1_u64, 2, 10, 60, 1_000, 10_000_000] {
        let wf = w as f64;
        let want = (wf + 1.0) * std::f64::consts::LN_2 - (wf + 1.0).ln()
            + (-(-(wf + 1.0) * std::f64::consts::LN_2).exp()).ln_1p();
        assert_close(w, 0, ln_e_value(w, 0), want, 1e-14);
    }
}

#[test]
fn diagonal_matches_the_central_binomial_asymptotic() {
    // E(W, W) = 4^W / ((2W + 1) C(2W, W)) and
    // C(2W, W)/4^W = (πW)^(-1/2) (1 − 1/(8W) + 1/(128W²) + 5/(1024W³) − 21/(32768W⁴) + …).
    for w in [100_000_u64, 1_234_567, 9_999_999, 10_000_000] {
        let x = w as f64;
        let series = 1.0 - 1.0 / (8.0 * x) + 1.0 / (128.0 * x * x) + 5.0 / (1024.0 * x * x * x)
            - 21.0 / (32768.0 * x * x * x * x);
        let want = -(2.0 * x + 1.0).ln() + 0.5 * (std::f64::consts::PI * x).ln() - series.ln();
        assert_close(w, w, ln_e_value(w, w), want, 1e-13);
    }
}

/// `ln((e^a + e^b)/2)` without overflow.
fn ln_mean_exp(a: f64, b: f64) -> f64 {
    let hi = a.max(b);
    hi + (((a - hi).exp() + (b - hi).exp()) / 2.0).ln()
}

#[test]
fn is_a_martingale_at_huge_counts() {
    // ∫ p^W (1−p)^L = ∫ p^(W+1) (1−p)^L + ∫ p^W (1−p)^(L+1)  ⇒  E(W, L) = (E(W+1, L) + E(W, L+1))/2.
    let big = 10_000_000_u64 - 1;
    let cases = [
        (big, big),
        (big, big - 1),
        (big - 1, big),
        (big, big - 3_000),
        (big - 3_000, big),
        (big, big - 30_000),
        (big - 30_000, big),
        (big, big / 2),
        (big / 2, big),
        (big, 3),
        (3, big),
        (big, 10_000),
        (10_000, big),
        (5_000_000, 5_001_234),
    ];
    for (w, l) in cases {
        let lhs = ln_e_value(w, l);
        let rhs = ln_mean_exp(ln_e_value(w + 1, l), ln_e_value(w, l + 1));
        assert_close(w, l, lhs, rhs, 1e-12);
    }
}

#[test]
fn grows_with_wins_and_shrinks_with_losses() {
    for n in [0_u64, 1, 5, 40, 1_000, 100_000, 9_999_999] {
        for k in [0_u64, 1, 2, n / 3, n / 2, n]
            .into_iter()
            .filter(|&k| k <= n)
        {
            let (w, l) = (k, n - k);
            assert!(
                ln_e_value(w + 1, l) > ln_e_value(w, l),
                "W step at ({w}, {l})"
            );
            assert!(
                ln_e_value(w, l + 1) < ln_e_value(w, l),
                "L step at ({w}, {l})"
            );
        }
    }
}

#[test]
fn saturates_only_when_e_exceeds_f64() {
    // ln E(1100, 0) ≈ 1101 ln 2 − ln 1101 ≈ 756 > ln f64::MAX ≈ 709.78.
    assert_eq!(compute_e_value(1100, 0), f64::INFINITY);
    assert!(ln_e_value(1100, 0).is_finite());
    // ln E(1030, 0) ≈ 707: still representable.
    assert!(compute_e_value(1030, 0).is_finite());
    assert!(compute_e_value(0, u64::MAX) > 0.0 || ln_e_value(0, u64::MAX).is_finite());
}

#[test]
fn total_and_finite_at_u64_extremes() {
    let edge = [
        0,
        1,
        2,
        1 << 32,
        1 << 53,
        u64::MAX / 2,
        u64::MAX - 1,
        u64::MAX,
    ];
    for &w in &edge {
        for &l in &edge {
            let v = ln_e_value(w, l);
            assert!(v.is_finite(), "ln E({w}, {l}) = {v}");
            assert!(!compute_e_value(w, l).is_nan());
            assert!(wald_lambda(w, l).is_finite());
        }
    }
    // Monotone in W even where the asymptotic form takes over.
    let big = 1_u64 << 50;
    assert!(ln_e_value(big + 1_000_000, big) > ln_e_value(big, big));
    assert!(ln_e_value(big, big) > ln_e_value(big, big + 1_000_000));
}

#[test]
fn wald_statistic_is_recomputed_from_counts() {
    let want = 7.0 * 1.4_f64.ln() + 3.0 * 0.6_f64.ln();
    assert!((wald_lambda(7, 3) - want).abs() < 1e-15);
    assert_eq!(wald_lambda(0, 0), 0.0);
}
