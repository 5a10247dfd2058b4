//! `gate_decision` and `probation_verdict` (seed §5, DESIGN §3.1).

use evolution_types::{GateDecision, GateParams, GateVerdict, ProbationVerdict};

use crate::GateError;
use crate::evalue::{ln_e_value, wald_lambda};

/// Agresti–Coull pseudo-count of the reported `delta_shrunk`.
const SHRINK_PSEUDO: f64 = 4.0;

/// Decide what to do after a validation block.
///
/// `w`/`l` are the cumulative discordant pairs (baseline wrong and candidate
/// right / the reverse), `n_used` the questions paired so far (ties
/// included), `n_remaining` the questions still available. Exits, first match
/// wins: `accept_confirmed` (`E ≥ e_confirm` and `δ̂ ≥ delta_min`) →
/// `reject_directional` (`λ ≤ lambda_dir`) → `reject_futility` (questions
/// remain, yet `E(W + n_remaining, L) < e_confirm`) → at exhaustion
/// `accept_provisional` (`E ≥ e_provisional` and `W − L ≥ w_net_min`) or
/// `reject_inertia` → `continue`. E-values are compared in log space.
///
/// # Errors
/// [`GateError::NoQuestionsUsed`] when `n_used == 0`,
/// [`GateError::CountsExceedUsed`] when `w + l > n_used`, and
/// [`GateError::InvalidParams`] for a threshold that is NaN, infinite or (for
/// an e-value threshold) not above one.
pub fn gate_decision(
    w: u64,
    l: u64,
    n_used: u64,
    n_remaining: u64,
    params: &GateParams,
) -> Result<GateVerdict, GateError> {
    check_params(params)?;
    if n_used == 0 {
        return Err(GateError::NoQuestionsUsed);
    }
    match w.checked_add(l) {
        Some(d) if d <= n_used => {}
        _ => return Err(GateError::CountsExceedUsed { w, l, n_used }),
    }

    let ln_e = ln_e_value(w, l);
    let lambda = wald_lambda(w, l);
    let net = i128::from(w) - i128::from(l);
    let net_f = w as f64 - l as f64;
    let delta_hat = net_f / n_used as f64;
    let delta_shrunk = net_f / (n_used as f64 + SHRINK_PSEUDO);
    let ln_confirm = params.e_confirm.ln();

    let decision = if ln_e >= ln_confirm && delta_hat >= params.delta_min {
        GateDecision::AcceptConfirmed
    } else if lambda <= params.lambda_dir {
        GateDecision::RejectDirectional
    } else if n_remaining > 0 && ln_e_value(w.saturating_add(n_remaining), l) < ln_confirm {
        GateDecision::RejectFutility
    } else if n_remaining == 0 {
        if ln_e >= params.e_provisional.ln() && net >= i128::from(params.w_net_min) {
            GateDecision::AcceptProvisional
        } else {
            GateDecision::RejectInertia
        }
    } else {
        GateDecision::Continue
    };

    Ok(GateVerdict {
        decision,
        e_value: ln_e.exp(),
        ln_e_value: ln_e,
        wald_lambda: lambda,
        delta_hat,
        delta_shrunk,
    })
}

/// Judge a provisionally accepted version from the pairs seen since.
///
/// `confirmed` if `E(w, l) ≥ e_confirm`, else `rollback` if the reverse
/// e-value `E(l, w) ≥ e_rollback`, else `unverified`. Comparisons are in log
/// space; a NaN threshold compares false, so a malformed parameter set can
/// only ever yield `unverified` (use `gate_decision` to get it reported).
pub fn probation_verdict(w: u64, l: u64, params: &GateParams) -> ProbationVerdict {
    if ln_e_value(w, l) >= params.e_confirm.ln() {
        ProbationVerdict::Confirmed
    } else if ln_e_value(l, w) >= params.e_rollback.ln() {
        ProbationVerdict::Rollback
    } else {
        ProbationVerdict::Unverified
    }
}

/// Reject parameter sets that would make a decision meaningless.
fn check_params(p: &GateParams) -> Result<(), GateError> {
    let e_thresholds = [
        ("e_confirm", p.e_confirm),
        ("e_provisional", p.e_provisional),
        ("e_rollback", p.e_rollback),
    ];
    for (field, value) in e_thresholds {
        if !(value.is_finite() && value > 1.0) {
            return Err(GateError::InvalidParams {
                field,
                value,
                reason: "an e-value threshold must be finite and greater than 1",
            });
        }
    }
    if !p.delta_min.is_finite() {
        return Err(GateError::InvalidParams {
            field: "delta_min",
            value: p.delta_min,
            reason: "must be finite",
        });
    }
    if p.lambda_dir.is_nan() || p.lambda_dir > 0.0 {
        return Err(GateError::InvalidParams {
            field: "lambda_dir",
            value: p.lambda_dir,
            reason: "must be at most 0 (negative infinity disables the exit)",
        });
    }
    Ok(())
}
