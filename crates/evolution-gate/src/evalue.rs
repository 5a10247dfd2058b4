//! The mixture e-value `E(W, L)` and its logarithm.
//!
//! `E(W, L) = 2^(N) · ∫_{1/2}^{1} 2 p^W (1 − p)^L dp` with `N = W + L`: the
//! likelihood ratio of a uniform prior on `p ∈ [1/2, 1]` against `p = 1/2`.
//! For integer counts the incomplete beta function is a binomial tail, and
//! with `M = N + 1` the whole expression collapses to
//!
//! ```text
//! E(W, L) = R(W, L) / (L + 1),   R(W, L) = Σ_{j=0}^{W} C(M, j) / C(M, W)
//! ```
//!
//! (a sum of binomial coefficients divided by its largest term). Both regimes
//! are evaluated as sums of positive, decreasing terms, so nothing cancels:
//!
//! * `W ≤ L`: `R = Σ_i Π_{m<i} (W − m)/(L + 2 + m)` directly; the ratios are
//!   below one and decrease, which gives a rigorous stopping rule.
//! * `W > L`: the complement. `Σ_{j≤W} C(M, j) = 2^M − Σ_{k≤L} C(M, k)`, and
//!   the subtracted tail is at most half of `2^M`, so
//!   `ln R = G + ln(1 − u)` with `G = ln(2^M / C(M, W))` taken from Loader's
//!   saddle-point form of the binomial density (no large logs subtracted)
//!   and `u ≤ 1/2` the relative size of the tail, itself the same kind of
//!   series with the roles of `W` and `L` swapped.
//!
//! The number of terms is about `min(W, L / (L − W), √L)`·a small constant:
//! a few dozen for the counts a gate sees, about 20 000 at `W ≈ L ≈ 10^7`.
//! Beyond the exact range (when a sum would need more than
//! [`MAX_SERIES_TERMS`] terms, i.e. `W ≈ L` of order `10^10` and more) a
//! Gaussian approximation of the same sum keeps the function total and fast;
//! there the relative error of `R` is of order `N^(-1/2)`.

use std::f64::consts::PI;

/// Terms a series may use before the asymptotic form takes over.
const MAX_SERIES_TERMS: f64 = 1_048_576.0;

/// Relative size of the neglected tail of a series (below one ulp).
const TAIL_TOLERANCE: f64 = 1.0e-17;

/// `ln E(W, L)`; see the crate root for the contract.
pub fn ln_e_value(w: u64, l: u64) -> f64 {
    if w <= l {
        // E = R / (L + 1) with the direct series.
        let r = ratio_sum(w as f64, l as f64 + 2.0);
        r.ln() - (l as f64).ln_1p()
    } else {
        let wf = w as f64;
        let lf = l as f64;
        // M = W + L + 1; `G = ln(2^M / C(M, W))`.
        let g = -ln_binom_half_density(wf, lf + 1.0);
        // u = C(M, L) R' / 2^M  with  C(M, L) / C(M, W) = (L + 1)/(W + 1).
        let r_prime = ratio_sum(lf, wf + 2.0);
        let ln_u = r_prime.ln() + lf.ln_1p() - wf.ln_1p() - g;
        let u = ln_u.exp();
        g + (-u).ln_1p() - lf.ln_1p()
    }
}

/// `E(W, L) = exp(ln E)`, saturating to `f64::INFINITY` above `f64::MAX`.
pub fn compute_e_value(w: u64, l: u64) -> f64 {
    ln_e_value(w, l).exp()
}

/// `Σ_{i≥0} Π_{m<i} (a − m)/(b + m)` for `0 ≤ a < b − 1`, `a` integral.
///
/// Every ratio is below one and the ratios decrease, so after term `t` with
/// ratio `r` the rest is at most `t·r/(1 − r)`: the loop stops once that
/// bound is below [`TAIL_TOLERANCE`] of the sum.
fn ratio_sum(a: f64, b: f64) -> f64 {
    if a < 1.0 {
        return 1.0;
    }
    if estimated_terms(a, b) > MAX_SERIES_TERMS {
        return ratio_sum_asymptotic(a, b);
    }
    let mut sum = 1.0_f64;
    let mut term = 1.0_f64;
    let mut m = 0.0_f64;
    loop {
        let num = a - m;
        if num <= 0.0 {
            break;
        }
        let r = num / (b + m);
        term *= r;
        sum += term;
        if term * r <= TAIL_TOLERANCE * sum * (1.0 - r) {
            break;
        }
        m += 1.0;
    }
    sum
}

/// Rough count of the terms [`ratio_sum`] needs before its tail is negligible.
fn estimated_terms(a: f64, b: f64) -> f64 {
    // ln t_i ≈ −i·(b − a)/b − i²/b; the tail is below 1e−17 once that is ≈ −40.
    let geometric = 40.0 * b / (b - a);
    let gaussian = (40.0 * b).sqrt();
    geometric.min(gaussian).min(a + 1.0)
}

/// The same sum for astronomically large `a`, `b`: `ln t_i ≈ −c·i − d·i²/2`,
/// integrated with the first Euler–Maclaurin corrections.
fn ratio_sum_asymptotic(a: f64, b: f64) -> f64 {
    let d = 1.0 / a + 1.0 / b;
    let c = ((b - a) / a).ln_1p() - 0.5 * d;
    let c = c.max(0.0);
    let s = (2.0 * d).sqrt();
    let integral = (PI / (2.0 * d)).sqrt() * erfcx(c / s);
    (integral + 0.5 + c / 12.0).max(1.0)
}

/// Scaled complementary error function `exp(z²)·erfc(z)` for `z ≥ 0`.
fn erfcx(z: f64) -> f64 {
    const FRAC_1_SQRT_PI: f64 = 0.564_189_583_547_756_3;
    if z < 3.0 {
        // erf(z) = (2/√π) e^{−z²} Σ 2^n z^{2n+1} / (2n+1)!!, all terms positive.
        let z2 = z * z;
        let mut term = z;
        let mut sum = z;
        let mut n = 0.0_f64;
        while term > 1.0e-17 * sum {
            n += 1.0;
            term *= 2.0 * z2 / (2.0 * n + 1.0);
            sum += term;
        }
        z2.exp() - 2.0 * FRAC_1_SQRT_PI * sum
    } else {
        // Continued fraction erfcx(z) = (1/√π) / (z + (1/2)/(z + 1/(z + (3/2)/(z + …)))).
        let mut f = z;
        let mut k = 60.0_f64;
        while k >= 1.0 {
            f = z + (k / 2.0) / f;
            k -= 1.0;
        }
        FRAC_1_SQRT_PI / f
    }
}

/// `ln(C(x + y, x) / 2^(x + y))` for `x, y ≥ 1`, in Loader's saddle-point form.
fn ln_binom_half_density(x: f64, y: f64) -> f64 {
    let n = x + y;
    let half = 0.5 * n;
    stirlerr(n) - stirlerr(x) - stirlerr(y) - bd0(x, half) - bd0(y, half)
        + 0.5 * (n.ln() - x.ln() - y.ln() - (2.0 * PI).ln())
}

/// `ln n! − [(n + ½) ln n − n + ½ ln 2π]` for integral `n ≥ 1`.
fn stirlerr(n: f64) -> f64 {
    if n < 16.0 {
        let mut ln_fact = 0.0_f64;
        let mut prod = 1.0_f64;
        let mut k = 2.0_f64;
        while k <= n {
            prod *= k;
            k += 1.0;
        }
        // n! ≤ 15! < 2^53 is exact here.
        ln_fact += prod.ln();
        ln_fact - (n + 0.5) * n.ln() + n - 0.5 * (2.0 * PI).ln()
    } else {
        let nn = n * n;
        (1.0 / 12.0
            - (1.0 / 360.0 - (1.0 / 1260.0 - (1.0 / 1680.0 - 1.0 / (1188.0 * nn)) / nn) / nn) / nn)
            / n
    }
}

/// `x ln(x/m) + m − x` without cancellation when `x ≈ m`.
fn bd0(x: f64, m: f64) -> f64 {
    let diff = x - m;
    if diff.abs() < 0.1 * (x + m) {
        let v = diff / (x + m);
        let v2 = v * v;
        let mut s = diff * v;
        let mut ej = 2.0 * x * v;
        let mut j = 1.0_f64;
        loop {
            ej *= v2;
            let next = s + ej / (2.0 * j + 1.0);
            if next == s {
                return s;
            }
            s = next;
            j += 1.0;
        }
    } else {
        x * (x / m).ln() + m - x
    }
}

/// `W·ln 1.4 + L·ln 0.6`, the log-likelihood ratio of `p = 0.7` against `p = 1/2`.
pub fn wald_lambda(w: u64, l: u64) -> f64 {
    const WALD_WIN: f64 = 0.336_472_236_621_212_9; // ln 1.4
    const WALD_LOSS: f64 = -0.510_825_623_765_990_7; // ln 0.6
    w as f64 * WALD_WIN + l as f64 * WALD_LOSS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constants_match_their_definitions() {
        assert_eq!(wald_lambda(1, 0), 1.4_f64.ln());
        assert_eq!(wald_lambda(0, 1), 0.6_f64.ln());
    }

    #[test]
    fn stirlerr_branches_meet() {
        // ln (n+1)! − ln n! = ln(n + 1) links neighbours across the branch point.
        for n in [14.0_f64, 15.0, 16.0, 17.0] {
            let lhs = stirlerr(n + 1.0) - stirlerr(n);
            let rhs = (n + 1.0).ln() - (n + 1.5) * (n + 1.0).ln() + (n + 0.5) * n.ln() + 1.0;
            assert!((lhs - rhs).abs() < 1e-14, "n = {n}: {lhs} vs {rhs}");
        }
    }

    #[test]
    fn bd0_branches_meet() {
        let m = 1000.0_f64;
        for x in [880.0, 905.0, 1095.0, 1125.0] {
            let direct = x * (x / m).ln() + m - x;
            assert!((bd0(x, m) - direct).abs() < 1e-11 * direct.max(1.0));
        }
    }

    #[test]
    fn erfcx_branches_meet() {
        let below = erfcx(3.0 - 1e-12);
        let above = erfcx(3.0);
        assert!((below - above).abs() < 1e-9 * above, "{below} vs {above}");
        assert!((erfcx(0.0) - 1.0).abs() < 1e-15);
    }

    #[test]
    fn asymptotic_sum_agrees_with_the_series_where_both_work() {
        let (a, b) = (4.0e6, 4.0e6 + 2.0);
        let exact = ratio_sum(a, b);
        let approx = ratio_sum_asymptotic(a, b);
        assert!((exact / approx - 1.0).abs() < 1e-3, "{exact} vs {approx}");
    }
}
