//! How many of the remaining questions can still be discordant pairs: the bound the
//! tie-aware futility exit ([`GateParams::futility_risk`](crate::GateParams::futility_risk))
//! assumes instead of "every one of them".

/// Bisection steps of [`rate_upper_bound`]: the bracket shrinks below `2^-60`.
const BISECTION_STEPS: u32 = 60;

/// The most of `remaining` questions that can plausibly still be discordant, after
/// `discordant` of `used`: `⌈remaining · p⁺⌉` with `p⁺` = [`rate_upper_bound`] at `risk`,
/// never more than `remaining`.
pub(crate) fn plausible_discordant(discordant: u64, used: u64, remaining: u64, risk: f64) -> u64 {
    let bound = (remaining as f64 * rate_upper_bound(discordant, used, risk)).ceil();
    if bound >= remaining as f64 {
        remaining
    } else {
        // `bound` is a nonnegative integer below `remaining`, so the cast is exact.
        bound as u64
    }
}

/// Chernoff's upper confidence bound on a binomial rate: the largest `p ≥ d/n` with
/// `n · KL(d/n ‖ p) ≤ ln(1/risk)`. A rate above it makes `d` or fewer of `n` a chance of at
/// most `risk`. It is 1 when nothing was seen (`n = 0`) or everything was (`d ≥ n`).
pub(crate) fn rate_upper_bound(d: u64, n: u64, risk: f64) -> f64 {
    if n == 0 || d >= n {
        return 1.0;
    }
    let p_hat = d as f64 / n as f64;
    let budget = -risk.ln() / n as f64;
    let (mut lo, mut hi) = (p_hat, 1.0_f64);
    for _ in 0..BISECTION_STEPS {
        let mid = 0.5 * (lo + hi);
        if bernoulli_kl(p_hat, mid) > budget {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    hi
}

/// `KL(a ‖ b)` between Bernoulli laws, `0 · ln 0 = 0`; infinite when `b` is 0 or 1 and `a` is not.
fn bernoulli_kl(a: f64, b: f64) -> f64 {
    let term = |x: f64, y: f64| if x == 0.0 { 0.0 } else { x * (x / y).ln() };
    term(a, b) + term(1.0 - a, 1.0 - b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bound_holds_the_rate_seen_and_narrows_with_questions() {
        assert_eq!(rate_upper_bound(3, 0, 0.05), 1.0);
        assert_eq!(rate_upper_bound(10, 10, 0.05), 1.0);
        // No discordant pair in n: KL(0 ‖ p) = −ln(1 − p), so p⁺ = 1 − risk^(1/n).
        let closed = 1.0 - 0.05_f64.powf(1.0 / 30.0);
        assert!((rate_upper_bound(0, 30, 0.05) - closed).abs() < 1e-12);
        let (small, large) = (
            rate_upper_bound(3, 30, 0.05),
            rate_upper_bound(30, 300, 0.05),
        );
        assert!(
            small > 0.1 && large > 0.1 && large < small,
            "{small} {large}"
        );
        // A smaller risk is a wider bound.
        assert!(rate_upper_bound(3, 30, 0.01) > small);
    }

    #[test]
    fn the_plausible_count_never_exceeds_what_remains() {
        assert_eq!(plausible_discordant(0, 0, 12, 0.05), 12);
        assert_eq!(plausible_discordant(5, 5, 12, 0.05), 12);
        assert_eq!(plausible_discordant(0, 30, 0, 0.05), 0);
        let some = plausible_discordant(1, 30, 36, 0.05);
        assert!(some > 0 && some < 36, "{some}");
    }
}
