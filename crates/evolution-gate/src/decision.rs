//! The checked [`Gate`]: its decision after a validation block and its
//! probation verdict.

use crate::GateError;
use crate::discordance::plausible_discordant;
use crate::evalue::{ln_e_lower_bound, ln_e_value, wald_lambda};
use crate::types::{EProcess, GateDecision, GateParams, GateVerdict, ProbationVerdict};

/// Agresti–Coull pseudo-count of the reported `delta_shrunk`.
pub(crate) const SHRINK_PSEUDO: f64 = 4.0;

/// The counts a gate decision is made from, cumulative over the blocks so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Tally {
    /// Discordant pairs won: baseline wrong, candidate right.
    pub w: u64,
    /// Discordant pairs lost: baseline right, candidate wrong.
    pub l: u64,
    /// Questions paired so far, ties included.
    pub n_used: u64,
    /// Questions still available to validate on.
    pub n_remaining: u64,
}

impl Tally {
    /// A tally of `w` wins and `l` losses over `n_used` questions, `n_remaining` left.
    pub const fn new(w: u64, l: u64, n_used: u64, n_remaining: u64) -> Self {
        Tally {
            w,
            l,
            n_used,
            n_remaining,
        }
    }
}

/// The e-process gate with a parameter set checked once, at construction.
///
/// ```
/// use evolution_gate::{Gate, GateDecision, GateParams, ProbationVerdict, Tally};
///
/// let gate = Gate::new(GateParams::default())?;
/// let verdict = gate.decide(&Tally::new(10, 0, 10, 10))?;
/// assert_eq!(verdict.decision, GateDecision::AcceptConfirmed);
/// assert_eq!(gate.probation(0, 10), ProbationVerdict::Rollback);
/// # Ok::<(), evolution_gate::GateError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Gate {
    params: GateParams,
}

impl Default for Gate {
    /// The gate with the reference implementation's parameters ([`GateParams::default`]).
    fn default() -> Self {
        Gate {
            params: GateParams::default(),
        }
    }
}

impl Gate {
    /// A gate deciding with `params`.
    ///
    /// # Errors
    /// [`GateError::InvalidParams`] for a threshold that is NaN, infinite or
    /// (for an e-value threshold) not above one, or a `lambda_dir` above zero.
    pub fn new(params: GateParams) -> Result<Self, GateError> {
        check_params(&params)?;
        Ok(Gate { params })
    }

    /// The gate with the measured parameters of [`GateParams::calibrated`].
    pub fn calibrated() -> Self {
        Gate {
            params: GateParams::calibrated(),
        }
    }

    /// The gate with the named parameter set ([`GateParams::preset`]), one of
    /// [`PRESET_NAMES`](crate::PRESET_NAMES).
    ///
    /// # Errors
    /// [`GateError::UnknownPreset`] for a name that is not a preset.
    pub fn preset(name: &str) -> Result<Self, GateError> {
        Gate::new(GateParams::preset(name)?)
    }

    /// The parameters this gate decides with.
    pub fn params(&self) -> &GateParams {
        &self.params
    }

    /// Decide what to do after a validation block.
    ///
    /// `E` is the parameter set's e-process ([`GateParams::e_process`]; by
    /// default the uniform mixture `E(W, L)`).
    ///
    /// Exits, first match wins: `accept_confirmed` (`E ≥ e_confirm` and
    /// `δ̂ ≥ delta_min`) → `reject_directional` (`λ ≤ lambda_dir`) →
    /// `reject_futility` (questions remain, yet `E(W + n_remaining, L) <
    /// e_confirm`; with [`GateParams::futility_risk`], also when `W + D` wins, `D` the
    /// remaining questions that can plausibly still be discordant, would reach neither
    /// `e_confirm` nor the provisional exit) → at exhaustion `accept_provisional` (`E ≥ e_provisional`
    /// and `W − L ≥ w_net_min`) or `reject_inertia` → `continue`. E-values
    /// are compared in log space.
    ///
    /// # Errors
    /// [`GateError::NoQuestionsUsed`] when `n_used == 0`,
    /// [`GateError::CountsExceedUsed`] when `w + l > n_used`.
    pub fn decide(&self, tally: &Tally) -> Result<GateVerdict, GateError> {
        let Tally {
            w,
            l,
            n_used,
            n_remaining,
        } = *tally;
        let params = &self.params;
        if n_used == 0 {
            return Err(GateError::NoQuestionsUsed);
        }
        match w.checked_add(l) {
            Some(d) if d <= n_used => {}
            _ => return Err(GateError::CountsExceedUsed { w, l, n_used }),
        }

        let ln_e = params.e_process.ln_e_value(w, l);
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
        } else if n_remaining > 0
            && best_case_falls_short(
                &params.e_process,
                w.saturating_add(n_remaining),
                l,
                ln_confirm,
            )
        {
            GateDecision::RejectFutility
        } else if let Some(risk) = params.futility_risk
            && n_remaining > 0
            && no_plausible_accept(
                params,
                w.saturating_add(plausible_discordant(
                    w.saturating_add(l),
                    n_used,
                    n_remaining,
                    risk,
                )),
                l,
            )
        {
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

    /// The verdict for a comparison stopped because too many of its
    /// questions could not be compared ([`GateDecision::RejectInfra`]), with
    /// the statistics of the pairs it had: `E` and `λ` of `w` and `l`, and
    /// `δ̂ = 0` when nothing was paired.
    ///
    /// # Errors
    /// [`GateError::CountsExceedUsed`] when `w + l > n_used`.
    pub fn reject_infra(&self, tally: &Tally) -> Result<GateVerdict, GateError> {
        let Tally { w, l, n_used, .. } = *tally;
        match w.checked_add(l) {
            Some(d) if d <= n_used => {}
            _ => return Err(GateError::CountsExceedUsed { w, l, n_used }),
        }
        let ln_e = self.params.e_process.ln_e_value(w, l);
        let net_f = w as f64 - l as f64;
        let delta_hat = if n_used == 0 {
            0.0
        } else {
            net_f / n_used as f64
        };
        Ok(GateVerdict {
            decision: GateDecision::RejectInfra,
            e_value: ln_e.exp(),
            ln_e_value: ln_e,
            wald_lambda: wald_lambda(w, l),
            delta_hat,
            delta_shrunk: net_f / (n_used as f64 + SHRINK_PSEUDO),
        })
    }

    /// Judge a provisionally accepted version from the pairs seen since:
    /// `w` questions the previous version got wrong and this one right, `l`
    /// the reverse.
    ///
    /// `confirmed` if `E(w, l) ≥ e_confirm`, else `rollback` if the reverse
    /// e-value `E(l, w) ≥ e_rollback`, else `unverified`, with `E` the
    /// parameter set's e-process. Comparisons are in log space.
    pub fn probation(&self, w: u64, l: u64) -> ProbationVerdict {
        let e_process = &self.params.e_process;
        if e_process.ln_e_value(w, l) >= self.params.e_confirm.ln() {
            ProbationVerdict::Confirmed
        } else if e_process.ln_e_value(l, w) >= self.params.e_rollback.ln() {
            ProbationVerdict::Rollback
        } else {
            ProbationVerdict::Unverified
        }
    }
}

/// True when `E(w_best, l) < e_confirm`; for the uniform mixture a cheap
/// lower bound settles most calls.
fn best_case_falls_short(e_process: &EProcess, w_best: u64, l: u64, ln_confirm: f64) -> bool {
    match e_process {
        EProcess::UniformMixture => {
            ln_e_lower_bound(w_best, l) < ln_confirm && ln_e_value(w_best, l) < ln_confirm
        }
        EProcess::LikelihoodRatio { .. } => e_process.ln_e_value(w_best, l) < ln_confirm,
    }
}

/// True when `w_best` wins and `l` losses would reach neither accept: `E < e_confirm`, and
/// `E < e_provisional` or `w_best − l < w_net_min` (the provisional exit at exhaustion).
fn no_plausible_accept(params: &GateParams, w_best: u64, l: u64) -> bool {
    let ln_e = params.e_process.ln_e_value(w_best, l);
    let net = i128::from(w_best) - i128::from(l);
    ln_e < params.e_confirm.ln()
        && (ln_e < params.e_provisional.ln() || net < i128::from(params.w_net_min))
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
    if let EProcess::LikelihoodRatio { alternative } = p.e_process
        && !(alternative > 0.5 && alternative < 1.0)
    {
        return Err(GateError::InvalidParams {
            field: "e_process.alternative",
            value: alternative,
            reason: "must lie strictly between 1/2 and 1",
        });
    }
    if let Some(risk) = p.futility_risk
        && !(risk > 0.0 && risk < 1.0)
    {
        return Err(GateError::InvalidParams {
            field: "futility_risk",
            value: risk,
            reason: "must lie strictly between 0 and 1",
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
