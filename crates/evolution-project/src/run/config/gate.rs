//! `[gate]`: the gate's preset and thresholds, e-LOND's level, the block ladder, the INFRA
//! guard and the probation share.

use evolution_gate::{EProcess, Gate, GateError, GateParams};
use evolution_harness::{ELond, GammaSequence, Gatekeeper, ValidationConfig};
use evolution_types::GeneratedQuestion;
use serde::Deserialize;
use toml::Spanned;

use super::*;

#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum ParamsChoice {
    #[default]
    Seed,
    Calibrated,
    Thrifty,
    Thorough,
}

impl ParamsChoice {
    /// The preset's name, as `evolution_gate::GateParams::preset` spells it.
    fn name(self) -> &'static str {
        match self {
            ParamsChoice::Seed => "seed",
            ParamsChoice::Calibrated => "calibrated",
            ParamsChoice::Thrifty => "thrifty",
            ParamsChoice::Thorough => "thorough",
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct GateSection {
    #[serde(default)]
    params: ParamsChoice,
    #[serde(default = "default_ladder")]
    ladder: Spanned<Vec<usize>>,
    #[serde(default = "default_guard")]
    guard_err: Spanned<f64>,
    #[serde(default)]
    seed: u64,
    #[serde(default = "default_fdr")]
    fdr_alpha: Spanned<FdrChoice>,
    #[serde(default = "no_share")]
    probation: Spanned<f64>,
    /// The preset's values, overridden one by one (checked together by `Gate::new`).
    e_confirm: Option<Spanned<f64>>,
    e_provisional: Option<Spanned<f64>>,
    w_net_min: Option<Spanned<i64>>,
    delta_min: Option<Spanned<f64>>,
    lambda_dir: Option<Spanned<f64>>,
    e_rollback: Option<Spanned<f64>>,
    /// Wald's likelihood ratio tuned to this win rate instead of the uniform mixture.
    alternative: Option<Spanned<f64>>,
}

impl Default for GateSection {
    fn default() -> Self {
        GateSection {
            params: ParamsChoice::default(),
            ladder: default_ladder(),
            guard_err: default_guard(),
            seed: 0,
            fdr_alpha: default_fdr(),
            probation: no_share(),
            e_confirm: None,
            e_provisional: None,
            w_net_min: None,
            delta_min: None,
            lambda_dir: None,
            e_rollback: None,
            alternative: None,
        }
    }
}

/// `[gate] fdr_alpha`: a level, or a word (only `"off"` is valid).
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub(super) enum FdrChoice {
    Level(f64),
    Word(String),
}

/// The run-wide false-discovery rate `run` controls unless told otherwise.
pub const DEFAULT_FDR_ALPHA: f64 = 0.05;

pub(super) fn default_fdr() -> Spanned<FdrChoice> {
    Spanned::new(0..0, FdrChoice::Level(DEFAULT_FDR_ALPHA))
}

pub(super) fn default_ladder() -> Spanned<Vec<usize>> {
    Spanned::new(0..0, vec![10, 20, 40])
}

pub(super) fn default_guard() -> Spanned<f64> {
    Spanned::new(0..0, 0.2)
}

/// The gate of `[gate]`, checked: how both `run` and `evolve` test a candidate.
#[derive(Debug)]
pub struct GateSettings {
    /// Gate thresholds.
    pub params: GateParams,
    /// The preset they come from, and the keys of `[gate]` that changed it.
    pub preset: String,
    /// Validation block sizes.
    pub ladder: Vec<usize>,
    /// Tolerated INFRA error rate.
    pub guard_err: f64,
    /// Seed of the gate's question order.
    seed: u64,
    /// The false-discovery rate controlled over the candidates (e-LOND), or `None` when
    /// `[gate] fdr_alpha = "off"`.
    pub fdr_alpha: Option<f64>,
}

impl GateSettings {
    /// A gatekeeper whose run ids start with `run_prefix`; with a false-discovery rate,
    /// e-LOND spreads it evenly over `horizon` candidates (at least one).
    pub fn gatekeeper(&self, run_prefix: String, horizon: u64) -> anyhow::Result<Gatekeeper> {
        let keeper = Gatekeeper::new(ValidationConfig {
            gate_run_prefix: run_prefix,
            ladder: self.ladder.clone(),
            seed: self.seed,
            gate_guard_err: self.guard_err,
            params: self.params,
        });
        Ok(match self.fdr_alpha {
            Some(alpha) => keeper.with_fdr(
                ELond::new(
                    alpha,
                    GammaSequence::Horizon {
                        proposals: horizon.max(1),
                    },
                )
                .map_err(|e| bad_option(format!("[gate] fdr_alpha: {e}")))?,
            ),
            None => keeper,
        })
    }
}

/// `[gate]`: the ladder, the INFRA guard, the parameter preset, `seed` and the
/// false-discovery rate.
pub(super) fn check_gate(src: &Source<'_>, g: &GateSection) -> anyhow::Result<GateSettings> {
    let ladder = g.ladder.get_ref().clone();
    if ladder.is_empty() || ladder.contains(&0) {
        return Err(src.at(
            g.ladder.span(),
            "[gate] ladder must list block sizes of at least 1".to_owned(),
        ));
    }
    let guard_err = *g.guard_err.get_ref();
    if !(0.0..=1.0).contains(&guard_err) {
        return Err(src.at(
            g.guard_err.span(),
            format!("[gate] guard_err must be from 0 to 1, not {guard_err}"),
        ));
    }
    let (params, preset) = custom_params(src, g)?;
    let fdr_alpha = match g.fdr_alpha.get_ref() {
        FdrChoice::Level(alpha) if *alpha > 0.0 && *alpha < 1.0 => Some(*alpha),
        FdrChoice::Word(word) if word == "off" => None,
        FdrChoice::Level(alpha) => {
            return Err(src.at(
                g.fdr_alpha.span(),
                format!("[gate] fdr_alpha must lie strictly between 0 and 1, not {alpha}"),
            ));
        }
        FdrChoice::Word(word) => {
            return Err(src.at(
                g.fdr_alpha.span(),
                format!(
                    "[gate] fdr_alpha must be a level between 0 and 1 or \"off\", not {word:?}"
                ),
            ));
        }
    };
    Ok(GateSettings {
        params,
        preset,
        ladder,
        guard_err,
        seed: g.seed,
        fdr_alpha,
    })
}

/// `[gate] params` and the keys that override its values one by one, checked together by
/// `Gate::new`; a value it refuses is reported at its key. Returns the parameters and how
/// they were chosen (`seed`, or `seed (e_confirm, w_net_min set in [gate])`).
pub(super) fn custom_params(
    src: &Source<'_>,
    g: &GateSection,
) -> anyhow::Result<(GateParams, String)> {
    let name = g.params.name();
    let mut params = GateParams::preset(name).map_err(|e| anyhow::anyhow!("[gate] params: {e}"))?;
    let mut changed: Vec<(&str, Range<usize>)> = Vec::new();
    for (key, given, field) in [
        ("e_confirm", &g.e_confirm, &mut params.e_confirm),
        ("e_provisional", &g.e_provisional, &mut params.e_provisional),
        ("delta_min", &g.delta_min, &mut params.delta_min),
        ("lambda_dir", &g.lambda_dir, &mut params.lambda_dir),
        ("e_rollback", &g.e_rollback, &mut params.e_rollback),
    ] {
        if let Some(value) = given {
            *field = *value.get_ref();
            changed.push((key, value.span()));
        }
    }
    if let Some(value) = &g.w_net_min {
        params.w_net_min = *value.get_ref();
        changed.push(("w_net_min", value.span()));
    }
    if let Some(value) = &g.alternative {
        params.e_process = EProcess::LikelihoodRatio {
            alternative: *value.get_ref(),
        };
        changed.push(("alternative", value.span()));
    }
    if let Err(error) = Gate::new(params) {
        let key = match &error {
            GateError::InvalidParams { field, .. } => field.rsplit('.').next().unwrap_or(field),
            _ => "",
        };
        let span = changed
            .iter()
            .find(|(k, _)| *k == key)
            .map_or(0..0, |(_, span)| span.clone());
        return Err(src.at(span, format!("[gate]: {error}")));
    }
    let preset = if changed.is_empty() {
        name.to_owned()
    } else {
        let keys: Vec<&str> = changed.iter().map(|(k, _)| *k).collect();
        format!("{name} ({} set in [gate])", keys.join(", "))
    };
    Ok((params, preset))
}

/// `[gate] probation`: the share of the gate questions held back to judge
/// provisional accepts — the last ones of the seeded order, so they are
/// never the training questions a candidate was written from, nor the
/// questions that accepted it.
pub(super) fn hold_back_probation(
    src: &Source<'_>,
    g: &GateSection,
    mut gate: Vec<GeneratedQuestion>,
) -> anyhow::Result<(Vec<GeneratedQuestion>, Vec<GeneratedQuestion>)> {
    let share = *g.probation.get_ref();
    if !(0.0..1.0).contains(&share) {
        return Err(src.at(
            g.probation.span(),
            format!("[gate] probation must be a share from 0 up to (not including) 1, not {share}"),
        ));
    }
    #[expect(
        clippy::cast_precision_loss,
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "a share in [0, 1) of a question count, rounded: exact below 2^53"
    )]
    let held = ((gate.len() as f64) * share).round() as usize;
    if held >= gate.len() {
        return Err(src.at(
            g.probation.span(),
            format!(
                "[gate] probation = {share} leaves none of the {} gate questions to the gate",
                gate.len()
            ),
        ));
    }
    let probation = gate.split_off(gate.len().saturating_sub(held));
    Ok((gate, probation))
}
