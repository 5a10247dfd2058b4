//! The gate: `Gate` built once from a preset or thresholds, its verdicts, and the e-value
//! functions.

use evolution_gate::{EProcess, GateParams, Tally};
use pyo3::prelude::*;
use pyo3::types::PyString;

use crate::GateError;
use crate::convert::{from_python, into_python};

/// A count from Python: a whole number in `0..=u64::MAX`, else `GateError`.
fn count(name: &str, value: i128) -> PyResult<u64> {
    u64::try_from(value).map_err(|_| {
        GateError::new_err(format!(
            "{name} must be a count from 0 to {}, got {value}",
            u64::MAX
        ))
    })
}

fn gate_error(err: &evolution_gate::GateError) -> PyErr {
    GateError::new_err(err.to_string())
}

/// The anytime-valid gate: decides from paired wins and losses whether a candidate beats
/// its baseline. Its thresholds are checked once, when it is built.
#[pyclass(module = "skill_evolve._native", frozen)]
pub(crate) struct Gate {
    inner: evolution_gate::Gate,
}

#[pymethods]
impl Gate {
    /// `Gate(preset="seed", *, e_confirm=..., ...)`: the preset's thresholds with the given
    /// keywords replacing its values; `e_process` is `"uniform_mixture"` or
    /// `{"kind": "likelihood_ratio", "alternative": p}`.
    #[new]
    #[pyo3(signature = (
        preset = None,
        *,
        e_confirm = None,
        e_provisional = None,
        w_net_min = None,
        delta_min = None,
        lambda_dir = None,
        e_rollback = None,
        e_process = None
    ))]
    #[expect(
        clippy::too_many_arguments,
        reason = "Python keywords, one per threshold"
    )]
    fn new(
        preset: Option<&str>,
        e_confirm: Option<f64>,
        e_provisional: Option<f64>,
        w_net_min: Option<i64>,
        delta_min: Option<f64>,
        lambda_dir: Option<f64>,
        e_rollback: Option<f64>,
        e_process: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let mut params = match preset {
            Some(name) => GateParams::preset(name).map_err(|err| gate_error(&err))?,
            None => GateParams::default(),
        };
        let floats = [
            (&mut params.e_confirm, e_confirm),
            (&mut params.e_provisional, e_provisional),
            (&mut params.delta_min, delta_min),
            (&mut params.lambda_dir, lambda_dir),
            (&mut params.e_rollback, e_rollback),
        ];
        for (field, value) in floats {
            if let Some(value) = value {
                *field = value;
            }
        }
        if let Some(value) = w_net_min {
            params.w_net_min = value;
        }
        if let Some(process) = e_process {
            params.e_process = if let Ok(kind) = process.cast::<PyString>() {
                let json = serde_json::json!({ "kind": kind.to_cow()? });
                serde_json::from_value::<EProcess>(json)
                    .map_err(|err| GateError::new_err(format!("e_process: {err}")))?
            } else {
                from_python(process, "e_process", GateError::new_err)?
            };
        }
        let inner = evolution_gate::Gate::new(params).map_err(|err| gate_error(&err))?;
        Ok(Gate { inner })
    }

    /// The thresholds as a dict (the JSON form of the gate's parameters); `Gate(**params)`
    /// rebuilds the same gate.
    #[getter]
    fn params<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let mut json = serde_json::to_value(self.inner.params())
            .map_err(|err| GateError::new_err(err.to_string()))?;
        // The uniform mixture is left out of the JSON form; here every key is present.
        if let Some(map) = json.as_object_mut() {
            map.entry("e_process")
                .or_insert_with(|| serde_json::json!({ "kind": "uniform_mixture" }));
        }
        crate::convert::to_python(py, &json)
    }

    /// The verdict after a block: `w` wins and `l` losses among `n_used` paired questions,
    /// with `n_remaining` questions still available (0: this was the last block).
    #[pyo3(signature = (w, l, n_used, n_remaining = 0))]
    fn decide(&self, w: i128, l: i128, n_used: i128, n_remaining: i128) -> PyResult<GateVerdict> {
        let tally = Tally::new(
            count("w", w)?,
            count("l", l)?,
            count("n_used", n_used)?,
            count("n_remaining", n_remaining)?,
        );
        let inner = self.inner.decide(&tally).map_err(|err| gate_error(&err))?;
        Ok(GateVerdict { inner })
    }

    /// The probation verdict of a provisionally accepted version: `"confirmed"`,
    /// `"rollback"` or `"unverified"`.
    fn probation(&self, w: i128, l: i128) -> PyResult<&'static str> {
        Ok(self
            .inner
            .probation(count("w", w)?, count("l", l)?)
            .as_str())
    }

    /// The e-value of `w` wins against `l` losses under this gate's e-process.
    fn e_value(&self, w: i128, l: i128) -> PyResult<f64> {
        Ok(self.ln_e_value(w, l)?.exp())
    }

    /// The natural logarithm of [`Gate::e_value`], finite where the e-value overflows.
    fn ln_e_value(&self, w: i128, l: i128) -> PyResult<f64> {
        Ok(self
            .inner
            .params()
            .e_process
            .ln_e_value(count("w", w)?, count("l", l)?))
    }

    fn __repr__(&self) -> String {
        let p = self.inner.params();
        format!(
            "Gate(e_confirm={}, e_provisional={}, w_net_min={}, delta_min={}, lambda_dir={}, \
             e_rollback={}, e_process={:?})",
            p.e_confirm,
            p.e_provisional,
            p.w_net_min,
            p.delta_min,
            p.lambda_dir,
            p.e_rollback,
            p.e_process
        )
    }
}

/// What the gate decided after a block, with the evidence behind it.
#[pyclass(module = "skill_evolve._native", frozen, eq)]
#[derive(PartialEq)]
pub(crate) struct GateVerdict {
    inner: evolution_gate::GateVerdict,
}

#[pymethods]
impl GateVerdict {
    /// `accept_confirmed`, `accept_provisional`, `reject_directional`, `reject_futility`,
    /// `reject_inertia` or `continue`.
    #[getter]
    fn decision(&self) -> &'static str {
        self.inner.decision.as_str()
    }

    /// Whether the candidate is accepted (confirmed or provisionally).
    #[getter]
    fn accepted(&self) -> bool {
        self.inner.decision.is_accept()
    }

    /// Whether the decision ends the comparison (every decision but `continue`).
    #[getter]
    fn terminal(&self) -> bool {
        self.inner.decision.is_terminal()
    }

    /// The e-value of the wins and losses.
    #[getter]
    fn e_value(&self) -> f64 {
        self.inner.e_value
    }

    /// Its natural logarithm.
    #[getter]
    fn ln_e_value(&self) -> f64 {
        self.inner.ln_e_value
    }

    /// Wald's statistic `W·ln 1.4 + L·ln 0.6`.
    #[getter]
    fn wald_lambda(&self) -> f64 {
        self.inner.wald_lambda
    }

    /// The net win rate `(W − L) / n_used`.
    #[getter]
    fn delta_hat(&self) -> f64 {
        self.inner.delta_hat
    }

    /// The net win rate shrunk towards 0: `(W − L) / (n_used + 4)`.
    #[getter]
    fn delta_shrunk(&self) -> f64 {
        self.inner.delta_shrunk
    }

    /// The verdict as a dict, in the JSON form the run log records.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        into_python(py, &self.inner)
    }

    fn __repr__(&self) -> String {
        let v = &self.inner;
        format!(
            "GateVerdict(decision={:?}, e_value={}, ln_e_value={}, wald_lambda={}, \
             delta_hat={}, delta_shrunk={})",
            v.decision.as_str(),
            v.e_value,
            v.ln_e_value,
            v.wald_lambda,
            v.delta_hat,
            v.delta_shrunk
        )
    }
}

/// The uniform-mixture e-value `E(w, l)` of `w` wins against `l` losses.
#[pyfunction]
pub(crate) fn e_value(w: i128, l: i128) -> PyResult<f64> {
    Ok(evolution_gate::compute_e_value(
        count("w", w)?,
        count("l", l)?,
    ))
}

/// `ln E(w, l)`, finite where `E` itself overflows.
#[pyfunction]
pub(crate) fn ln_e_value(w: i128, l: i128) -> PyResult<f64> {
    Ok(evolution_gate::ln_e_value(count("w", w)?, count("l", l)?))
}

/// Wald's statistic `w·ln 1.4 + l·ln 0.6`.
#[pyfunction]
pub(crate) fn wald_lambda(w: i128, l: i128) -> PyResult<f64> {
    Ok(evolution_gate::wald_lambda(count("w", w)?, count("l", l)?))
}
