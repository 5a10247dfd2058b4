//! `skill-evolve gate`: the e-process gate's verdict, explained.

use std::process::ExitCode;

use evolution_gate::{Gate, GateDecision, GateError, GateParams, GateVerdict, Tally};
use evolution_harness::{ELond, GammaSequence, TestLevel, params_for_level};

use crate::cli::GateArgs;
use crate::out::{out, outln};
use evolution_project::error::bad_option;

pub(crate) fn run(args: &GateArgs) -> anyhow::Result<ExitCode> {
    let preset = args.preset_name();
    let params = GateParams::preset(preset).map_err(|e| bad_option(e.to_string()))?;
    let params = raised(args, params)?;
    let gate = Gate::new(params).map_err(|e| bad_option(e.to_string()))?;
    let tally = Tally::new(args.wins, args.losses, args.used, args.remaining);
    let verdict = gate.decide(&tally).map_err(|e| match e {
        GateError::NoQuestionsUsed => bad_option("--used must be at least 1"),
        GateError::CountsExceedUsed { w, l, n_used } => bad_option(format!(
            "--wins {w} plus --losses {l} exceeds --used {n_used}: wins and losses are \
                 questions too"
        )),
        other => bad_option(other.to_string()),
    })?;
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&verdict)?);
    } else {
        out!("{}", explain(args, gate.params(), &verdict));
        if args.fdr_level.is_some() || args.e_needed.is_some() {
            let p = gate.params();
            outln!(
                "thresholds raised for the run's error control: e_confirm {}, e_provisional {}",
                fmt_threshold(p.e_confirm),
                fmt_threshold(p.e_provisional)
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `params` with both accept thresholds raised to the level `--fdr-level` and `--horizon`
/// (e-LOND's level before a run's first accept) or `--e-needed` ask for.
fn raised(args: &GateArgs, params: GateParams) -> anyhow::Result<GateParams> {
    let level = match (args.fdr_level, args.e_needed) {
        (Some(alpha), _) => {
            if args.horizon == 0 {
                return Err(bad_option("--horizon must be at least 1"));
            }
            ELond::new(
                alpha,
                GammaSequence::Horizon {
                    proposals: args.horizon,
                },
            )
            .map_err(|e| bad_option(format!("--fdr-level: {e}")))?
            .next_level()
        }
        (None, Some(e)) => {
            if !(e.is_finite() && e > 1.0) {
                return Err(bad_option(format!(
                    "--e-needed must be a finite e-value above 1, not {e}"
                )));
            }
            TestLevel {
                index: 1,
                alpha_t: 1.0 / e,
                threshold: e,
                discoveries_before: 0,
            }
        }
        (None, None) => return Ok(params),
    };
    params_for_level(&params, &level)
        .ok_or_else(|| bad_option("the e-LOND level leaves no threshold an accept can reach"))
}

/// The verdict and one line each for E, λ and δ̂.
fn explain(args: &GateArgs, p: &GateParams, v: &GateVerdict) -> String {
    let (w, l, n) = (args.wins, args.losses, args.used);
    let cmp = |ok: bool| if ok { "≥" } else { "<" };
    let e_line = format!(
        "E  = {}  (ln E = {:.3}): evidence that the candidate wins more than half of the {} \
         discordant pairs; {} e_confirm {} (false-accept risk ≤ 1/E)",
        fmt_e(v.e_value),
        v.ln_e_value,
        w.saturating_add(l),
        cmp(v.ln_e_value >= p.e_confirm.ln()),
        fmt_threshold(p.e_confirm)
    );
    let lambda_line = format!(
        "λ  = {:.3}: Wald statistic W·ln1.4 + L·ln0.6 ({w} wins, {l} losses); {} lambda_dir {} \
         ({})",
        v.wald_lambda,
        if v.wald_lambda <= p.lambda_dir {
            "≤"
        } else {
            ">"
        },
        p.lambda_dir,
        if v.wald_lambda <= p.lambda_dir {
            "going the wrong way"
        } else {
            "not going the wrong way"
        }
    );
    let delta_line = format!(
        "δ̂  = {:+.4}: net wins per question (W − L)/n = ({w} − {l})/{n}; {} delta_min {} \
         (shrunk (W − L)/(n + 4) = {:+.4}, reported only)",
        v.delta_hat,
        cmp(v.delta_hat >= p.delta_min),
        p.delta_min,
        v.delta_shrunk
    );
    format!(
        "decision: {} — {}\n{e_line}\n{lambda_line}\n{delta_line}\nremaining questions: {} ({} parameters)\n",
        v.decision,
        meaning(v.decision),
        args.remaining,
        args.preset_name()
    )
}

/// A threshold as given (`20`, `3.5`), with the rounding of `horizon / level` left out
/// (`100`, not `99.99999999999999`).
fn fmt_threshold(e: f64) -> String {
    let whole = e.round();
    if (e - whole).abs() <= 1e-9 * e.abs() {
        format!("{whole}")
    } else {
        format!("{e}")
    }
}

fn fmt_e(e: f64) -> String {
    if !e.is_finite() {
        "beyond f64".to_owned()
    } else if e >= 1e6 || (e > 0.0 && e < 1e-3) {
        format!("{e:.3e}")
    } else {
        format!("{e:.3}")
    }
}

fn meaning(d: GateDecision) -> &'static str {
    match d {
        GateDecision::AcceptConfirmed => "accept: strong evidence and a large enough effect",
        GateDecision::AcceptProvisional => {
            "accept on probation: questions exhausted with moderate evidence"
        }
        GateDecision::RejectDirectional => "reject: the candidate is going the wrong way",
        GateDecision::RejectFutility => {
            "reject: even winning every remaining pair could not reach e_confirm"
        }
        GateDecision::RejectInertia => "reject: questions exhausted without enough evidence",
        GateDecision::RejectInfra => {
            "reject: too many questions could not be compared (both versions failed on them, or \
             the agent never started)"
        }
        GateDecision::Continue => "continue: validate the next block",
    }
}
