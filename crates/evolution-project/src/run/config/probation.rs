//! `[gate] probation`: the share of the gate questions held back to judge provisional
//! accepts, given or chosen.
//!
//! Unset, the share is chosen from what the gate can do: a quarter of the gate questions
//! ([`AUTO_PROBATION_SHARE`]) when an accept can be provisional at all (only then is there
//! anything to watch) and the split has questions enough for both — the held-back quarter can
//! reach a rollback, and the rest can still accept. Otherwise none, and the pre-flight says why.

use evolution_gate::{Gate, GateParams, fewest_wins};
use evolution_harness::Calibration;
use evolution_types::GeneratedQuestion;
use toml::Spanned;

use super::Source;
use super::gate::GateSettings;

/// The share held back when `[gate] probation` is not set and the questions allow it.
pub const AUTO_PROBATION_SHARE: f64 = 0.25;

/// The most gate questions looked at when saying how many a probation pool would need.
const MAX_LOOKED_AT: usize = 5_000;

/// The split of the gate questions between the gate and probation, and why.
#[derive(Debug)]
pub(super) struct ProbationSplit {
    /// The questions the gate tests candidates on.
    pub(super) gate: Vec<GeneratedQuestion>,
    /// The questions held back to judge provisional accepts.
    pub(super) probation: Vec<GeneratedQuestion>,
    /// The share held back, given or chosen.
    pub(super) share: f64,
    /// One line for the pre-flight: the share used and why.
    pub(super) note: String,
}

/// Splits `gate` into the gate's questions and the probation pool: `given` (`[gate]
/// probation`), else the share the gate `settings` and the run's `horizon` (its most
/// candidates) allow.
pub(super) fn hold_back_probation(
    src: &Source<'_>,
    given: Option<&Spanned<f64>>,
    settings: &GateSettings,
    gate: Vec<GeneratedQuestion>,
    horizon: u64,
) -> anyhow::Result<ProbationSplit> {
    let Some(given) = given else {
        let (share, note) = auto_share(settings, gate.len(), horizon);
        let (gate, probation) = split(gate, share);
        return Ok(ProbationSplit {
            gate,
            probation,
            share,
            note,
        });
    };
    let share = *given.get_ref();
    if !(0.0..1.0).contains(&share) {
        return Err(src.at(
            given.span(),
            format!("[gate] probation must be a share from 0 up to (not including) 1, not {share}"),
        ));
    }
    let total = gate.len();
    let (gate, probation) = split(gate, share);
    if gate.is_empty() && total > 0 {
        return Err(src.at(
            given.span(),
            format!(
                "[gate] probation = {share} leaves none of the {total} gate questions to the gate"
            ),
        ));
    }
    let note = if probation.is_empty() {
        format!("probation: off ([gate] probation = {share})")
    } else {
        format!(
            "probation: {} of the {total} gate questions judge provisional accepts ([gate] \
             probation = {share})",
            probation.len()
        )
    };
    Ok(ProbationSplit {
        gate,
        probation,
        share,
        note,
    })
}

/// The last `share` of `gate` (rounded), held back: the last ones of the seeded order, so they
/// are never the training questions a candidate was written from, nor the questions that
/// accepted it.
fn split(
    mut gate: Vec<GeneratedQuestion>,
    share: f64,
) -> (Vec<GeneratedQuestion>, Vec<GeneratedQuestion>) {
    let held = held_back(gate.len(), share);
    let probation = gate.split_off(gate.len().saturating_sub(held));
    (gate, probation)
}

/// The questions a share in `[0, 1)` of `total` holds back, rounded.
fn held_back(total: usize, share: f64) -> usize {
    #[expect(
        clippy::cast_precision_loss,
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "a share in [0, 1) of a question count, rounded: exact below 2^53"
    )]
    let held = ((total as f64) * share).round() as usize;
    held.min(total)
}

/// The share held back when `[gate] probation` is not set, and the pre-flight's line on it.
fn auto_share(settings: &GateSettings, total: usize, horizon: u64) -> (f64, String) {
    let params = &settings.params;
    if matches!(settings.calibration, Calibration::Pool { .. }) {
        return (
            0.0,
            "probation: off — every accept crosses the boundary calibrated for the gate \
             questions (calibration = \"pool\"), none is provisional, so there is nothing to \
             watch"
                .to_owned(),
        );
    }
    if !provisional_possible(params, settings.fdr_alpha) {
        let why = match settings.fdr_alpha {
            Some(alpha) => format!(
                "e-LOND at {alpha} raises every accept's threshold to at least {} ≥ e_confirm \
                 {}",
                fmt(1.0 / alpha),
                fmt(params.e_confirm)
            ),
            None => format!(
                "e_provisional {} is not below e_confirm {}",
                fmt(params.e_provisional),
                fmt(params.e_confirm)
            ),
        };
        return (
            0.0,
            format!(
                "probation: off — no accept can be provisional here ({why}), so there is \
                 nothing to watch"
            ),
        );
    }
    let Some(rollback) = fewest_rollback_losses(params) else {
        return (
            0.0,
            "probation: off — no number of losses reaches e_rollback".to_owned(),
        );
    };
    let fits = |n: usize| {
        let held = held_back(n, AUTO_PROBATION_SHARE);
        held >= rollback && can_accept(settings, n - held, horizon)
    };
    if fits(total) {
        let held = held_back(total, AUTO_PROBATION_SHARE);
        return (
            AUTO_PROBATION_SHARE,
            format!(
                "probation: on by default — {held} of the {total} gate questions judge a \
                 provisional accept (a rollback needs at least {rollback} losses and no win; \
                 the other {} can still accept); [gate] probation = 0 turns it off",
                total - held
            ),
        );
    }
    let needed = (total + 1..=MAX_LOOKED_AT).find(|&n| fits(n));
    (
        0.0,
        format!(
            "probation: off — too few gate questions to watch provisional accepts: holding back \
             a quarter {}; with {total}, a provisional accept stands unwatched",
            needed.map_or_else(
                || format!("needs more than {MAX_LOOKED_AT}"),
                |n| format!("needs at least {n}")
            )
        ),
    )
}

/// Whether some candidate of a run can be accepted provisionally: its `e_provisional` below
/// its `e_confirm` once e-LOND has raised both to at least its level's threshold, which is
/// never below `1 / fdr_alpha` (the last candidate's, after every other was accepted).
fn provisional_possible(params: &GateParams, fdr_alpha: Option<f64>) -> bool {
    let floor = fdr_alpha.map_or(0.0, |alpha| 1.0 / alpha);
    params.e_provisional.max(floor) < params.e_confirm.max(floor)
}

/// The fewest losses, with no win, at which probation rolls a version back.
fn fewest_rollback_losses(params: &GateParams) -> Option<usize> {
    let ln_rollback = params.e_rollback.ln();
    (1..=MAX_LOOKED_AT).find(|&l| {
        let l = u64::try_from(l).unwrap_or(u64::MAX);
        params.e_process.ln_e_value(l, 0) >= ln_rollback
    })
}

/// Whether some record on `questions` gate questions is accepted at the first candidate's level.
fn can_accept(settings: &GateSettings, questions: usize, horizon: u64) -> bool {
    let Ok(params) = settings.first_test_params(horizon) else {
        return false;
    };
    let Ok(gate) = Gate::new(params) else {
        return false;
    };
    let n = u64::try_from(questions).unwrap_or(u64::MAX);
    questions > 0
        && fewest_wins(&gate, n, &settings.ladder).is_ok_and(|floor| floor.smallest().is_some())
}

/// An e-value for a message.
fn fmt(e: f64) -> String {
    format!("{e:.1}")
}
