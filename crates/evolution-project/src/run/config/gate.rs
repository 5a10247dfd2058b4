//! `[gate]`: the gate's preset and thresholds, e-LOND's level, the block ladder, the INFRA
//! guard; the probation share is `probation.rs`'s.

use evolution_gate::{
    AcceptFloor, EProcess, Gate, GateError, GateParams, fewest_questions, fewest_wins,
    ladder_accept_probability,
};
use evolution_harness::{
    AgentNoise, AutoAnswers, Calibration, ELond, GammaSequence, Gatekeeper, LedgerBudget,
    MAX_ANSWERS_PER_QUESTION, ScreenRule, TestLevel, ValidationConfig, params_for_level,
};
use serde::Deserialize;
use toml::Spanned;

use super::reach::{MAX_NEEDED_QUESTIONS, MAX_POWER_QUESTIONS, NEEDED_AT_WIN_RATE};
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
    fdr_alpha: Spanned<LevelOrOff>,
    /// Unset: chosen from what the gate can do (see `probation.rs`).
    #[serde(default)]
    pub(super) probation: Option<Spanned<f64>>,
    /// The preset's values, overridden one by one (checked together by `Gate::new`).
    e_confirm: Option<Spanned<f64>>,
    e_provisional: Option<Spanned<f64>>,
    w_net_min: Option<Spanned<i64>>,
    delta_min: Option<Spanned<f64>>,
    lambda_dir: Option<Spanned<f64>>,
    e_rollback: Option<Spanned<f64>>,
    /// Wald's likelihood ratio tuned to this win rate instead of the uniform mixture.
    alternative: Option<Spanned<f64>>,
    /// Keep the project's ledger of gate tests per skill, across runs.
    #[serde(default)]
    ledger: bool,
    /// The tests of one skill the ledger spreads `fdr_alpha` over.
    ledger_horizon: Option<Spanned<u64>>,
    /// Gate questions that accepted a version may gate its successors.
    #[serde(default)]
    reuse_questions: bool,
    /// The most gate questions one candidate may draw.
    pool: Option<Spanned<usize>>,
    /// An accepted candidate's gate answers become its version's cached baseline answers.
    #[serde(default = "default_carry_over")]
    carry_over: bool,
    /// Screen each candidate on up to this many training questions before its gate.
    screen: Option<Spanned<usize>>,
    /// Gate at most this many candidates an epoch, the best on the screen.
    best_per_epoch: Option<Spanned<usize>>,
    /// The answers each arm gives each gate question, or "auto".
    answers_per_question: Option<Spanned<CountOrAuto>>,
    /// The risk of the gate's tie-aware futility exit, or "off".
    #[serde(default = "default_futility")]
    futility_risk: Spanned<LevelOrOff>,
    /// "pool" (unset) or "e-process".
    calibration: Option<Spanned<String>>,
    /// The share of gate questions assumed discordant until the run measures it.
    discordance: Option<Spanned<f64>>,
}

impl Default for GateSection {
    fn default() -> Self {
        GateSection {
            params: ParamsChoice::default(),
            ladder: default_ladder(),
            guard_err: default_guard(),
            seed: 0,
            fdr_alpha: default_fdr(),
            probation: None,
            e_confirm: None,
            e_provisional: None,
            w_net_min: None,
            delta_min: None,
            lambda_dir: None,
            e_rollback: None,
            alternative: None,
            ledger: false,
            ledger_horizon: None,
            reuse_questions: false,
            pool: None,
            carry_over: default_carry_over(),
            screen: None,
            best_per_epoch: None,
            answers_per_question: None,
            futility_risk: default_futility(),
            calibration: None,
            discordance: None,
        }
    }
}

/// `[gate] fdr_alpha` and `[gate] futility_risk`: a level, or a word (only `"off"` is valid).
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub(super) enum LevelOrOff {
    Level(f64),
    Word(String),
}

/// `[gate] answers_per_question`: a number, or a word (only `"auto"` is valid).
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub(super) enum CountOrAuto {
    Count(i64),
    Word(String),
}

/// How many times each arm answers each gate question.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum AnswersPerQuestion {
    /// This many, fixed by the configuration.
    Fixed(u32),
    /// Chosen by the run before its first gate test from the agent's measured
    /// self-disagreement ([`AutoAnswers`]): once for an agent that answers alike.
    Auto(AutoAnswers),
}

/// The run-wide false-discovery rate `run` controls unless told otherwise.
pub const DEFAULT_FDR_ALPHA: f64 = 0.05;

/// The tests of one skill the project's ledger spreads `fdr_alpha` over unless
/// `[gate] ledger_horizon` says otherwise: a year of nightly runs with one candidate of the
/// skill each (docs/gate.md gives the threshold this costs).
pub const DEFAULT_LEDGER_HORIZON: u64 = 365;

pub(super) fn default_fdr() -> Spanned<LevelOrOff> {
    Spanned::new(0..0, LevelOrOff::Level(DEFAULT_FDR_ALPHA))
}

/// The share of gate questions a pool boundary assumes discordant until the run has measured
/// it (`[gate] discordance`).
pub const DEFAULT_DISCORDANCE: f64 = 0.5;

/// The directional exit under the pool calibration unless `[gate] lambda_dir` says otherwise:
/// about six net losses. The exact futility exit already stops a candidate that cannot reach
/// the boundary; a stricter directional exit would reject good candidates after an unlucky
/// start.
pub const POOL_LAMBDA_DIR: f64 = -3.0;

/// The risk of the tie-aware futility exit `run` uses unless `[gate] futility_risk` says
/// otherwise (`None`: off).
pub const DEFAULT_FUTILITY_RISK: Option<f64> = Some(0.05);

/// `[gate] carry_over` unless set: off. The answers that got a candidate accepted were, for
/// an agent that answers at random, luckier than fresh ones, and a baseline carried over that
/// way makes the next better candidate harder to accept (0.05 instead of 0.20 at a 75 % win
/// rate in one measurement); carry-over is for agents that answer alike every time.
pub(super) fn default_carry_over() -> bool {
    false
}

pub(super) fn default_futility() -> Spanned<LevelOrOff> {
    let choice = match DEFAULT_FUTILITY_RISK {
        Some(risk) => LevelOrOff::Level(risk),
        None => LevelOrOff::Word("off".to_owned()),
    };
    Spanned::new(0..0, choice)
}

pub(super) fn default_ladder() -> Spanned<Vec<usize>> {
    Spanned::new(0..0, vec![5])
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
    /// With `[gate] ledger = true`: the tests of one skill the project's ledger spreads
    /// `fdr_alpha` over (`ledger_horizon`).
    pub ledger_horizon: Option<u64>,
    /// `[gate] reuse_questions`: gate questions that accepted a version of a skill may gate
    /// its successors.
    pub reuse_questions: bool,
    /// `[gate] pool`: the most gate questions one candidate may draw (`None`: all).
    pub pool: Option<usize>,
    /// `[gate] carry_over`: an accepted candidate's gate answers become the cached baseline
    /// answers of the version it wrote.
    pub carry_over: bool,
    /// `[gate] screen`: each candidate screened on training questions by this rule before
    /// its gate; one that does not pass is dropped without an e-LOND test.
    pub screen: Option<ScreenRule>,
    /// `[gate] best_per_epoch`: at most this many candidates of an epoch are gated, those
    /// that did best on the screen; the run's e-LOND horizon counts them, not the proposals.
    pub best_per_epoch: Option<usize>,
    /// `[gate] answers_per_question`: each arm answers each gate question this many times,
    /// every try its own pair, or as many as the run chooses (`"auto"`, the default).
    pub answers_per_question: AnswersPerQuestion,
    /// `[gate] calibration` (and `discordance`): each test's boundary exactly for its pool
    /// (the default), or the e-process's thresholds.
    pub calibration: Calibration,
}

impl GateSettings {
    /// The parameters the first candidate of a run over `horizon` candidates is gated
    /// with: e-LOND's first level raises both accept thresholds to at least its threshold.
    ///
    /// # Errors
    /// A false-discovery level e-LOND refuses (checked when the file was read).
    pub fn first_test_params(&self, horizon: u64) -> anyhow::Result<GateParams> {
        self.first_test_params_with(horizon, None)
    }

    /// [`GateSettings::first_test_params`], the first candidate also tested at the level
    /// `ledger` of a skill's ledger: the higher threshold of the two binds.
    ///
    /// # Errors
    /// As [`GateSettings::first_test_params`]; a ledger level of zero (its horizon spent).
    pub fn first_test_params_with(
        &self,
        horizon: u64,
        ledger: Option<&TestLevel>,
    ) -> anyhow::Result<GateParams> {
        let Some(alpha) = self.fdr_alpha else {
            return Ok(self.params);
        };
        if let Some(level) = ledger {
            let run = self.first_test_params_with(horizon, None)?;
            let ledger_params = params_for_level(&self.params, level).ok_or_else(|| {
                bad_option(
                    "[gate] ledger_horizon: the skill's ledger has spent its level (every test \
                     of its horizon is used); raise ledger_horizon to go on"
                        .to_owned(),
                )
            })?;
            return Ok(if ledger_params.e_confirm > run.e_confirm {
                ledger_params
            } else {
                run
            });
        }
        let elond = ELond::new(
            alpha,
            GammaSequence::Horizon {
                proposals: horizon.max(1),
            },
        )
        .map_err(|e| bad_option(format!("[gate] fdr_alpha: {e}")))?;
        params_for_level(&self.params, &elond.next_level()).ok_or_else(|| {
            bad_option("[gate] fdr_alpha: e-LOND gives the first candidate no level".to_owned())
        })
    }

    /// What the gate can accept with `questions` gate questions, for the first candidate of
    /// a run over `horizon` candidates: the fewest wins of each exit, the exact power at
    /// [`POWER_WIN_RATES`] and the fewest questions any accept needs.
    ///
    /// # Errors
    /// Parameters or a ladder the gate refuses (checked when the file was read).
    pub fn reach(&self, questions: usize, horizon: u64) -> anyhow::Result<GateReach> {
        self.reach_with(questions, horizon, None)
    }

    /// [`GateSettings::reach`] for a skill whose candidates the project's ledger also tests
    /// (`ledger`): at the higher of the two first thresholds.
    ///
    /// # Errors
    /// As [`GateSettings::reach`].
    pub fn reach_with(
        &self,
        questions: usize,
        horizon: u64,
        ledger: Option<LedgerReach>,
    ) -> anyhow::Result<GateReach> {
        // A candidate draws at most `pool` of them, each answered `answers` times by each arm;
        // chosen by the run, as many as a stochastic agent would be asked for.
        let distinct = self.pool.map_or(questions, |pool| questions.min(pool));
        let (answers, auto) = match self.answers_per_question {
            AnswersPerQuestion::Fixed(k) => (k, false),
            AnswersPerQuestion::Auto(auto) => {
                let stochastic = AgentNoise {
                    questions: auto.questions,
                    disagreed: auto.questions,
                };
                (auto.choose(stochastic, distinct), true)
            }
        };
        let pairs = distinct.saturating_mul(answers as usize);
        let mut reach = self.reach_of_pairs(pairs, horizon, ledger.clone())?;
        reach.distinct = distinct;
        reach.answers = answers;
        if auto && answers > 1 {
            let alike = self.reach_of_pairs(distinct, horizon, ledger)?;
            reach.alike = Some(
                alike
                    .power_at(NEEDED_AT_WIN_RATE)
                    .filter(|_| !alike.cannot_accept()),
            );
        }
        Ok(reach)
    }

    /// [`GateSettings::reach_with`] for `questions` pairs.
    fn reach_of_pairs(
        &self,
        questions: usize,
        horizon: u64,
        ledger: Option<LedgerReach>,
    ) -> anyhow::Result<GateReach> {
        if let Calibration::Pool { discordance } = self.calibration {
            return self.pool_reach(questions, horizon, ledger, discordance);
        }
        let params = self.first_test_params_with(horizon, ledger.as_ref().map(|l| &l.level))?;
        let gate = Gate::new(params).map_err(|e| bad_option(format!("[gate]: {e}")))?;
        let gate_error = |e: GateError| bad_option(format!("[gate]: {e}"));
        let n = u64::try_from(questions).unwrap_or(u64::MAX);
        let floor = if questions == 0 {
            Some(AcceptFloor::default())
        } else if questions <= MAX_REACH_QUESTIONS {
            Some(fewest_wins(&gate, n, &self.ladder).map_err(gate_error)?)
        } else {
            None
        };
        let power = if (1..=MAX_POWER_QUESTIONS).contains(&questions) {
            POWER_WIN_RATES
                .iter()
                .map(|&p| {
                    ladder_accept_probability(&gate, n, &self.ladder, p)
                        .map(|power| (p, power))
                        .map_err(gate_error)
                })
                .collect::<anyhow::Result<Vec<_>>>()?
        } else {
            Vec::new()
        };
        let fewest =
            fewest_questions(&gate, &self.ladder, MAX_NEEDED_QUESTIONS).map_err(gate_error)?;
        Ok(GateReach {
            best_per_epoch: self.best_per_epoch,
            questions,
            distinct: questions,
            answers: 1,
            alike: None,
            e_confirm: params.e_confirm,
            e_provisional: params.e_provisional,
            fdr: self.fdr_alpha.map(|alpha| (alpha, horizon.max(1))),
            floor,
            power,
            fewest_questions: fewest,
            scope: None,
            ledger,
            pool: None,
        })
    }

    /// [`GateSettings::reach`] (said of the skill `scope` when the questions are its own),
    /// refused as a bad input of the configuration file `path` when no record can be
    /// accepted.
    ///
    /// # Errors
    /// The refusal ([`GateReach::refusal`]), and as [`GateSettings::reach`].
    pub fn check_reach(
        &self,
        path: &Path,
        questions: usize,
        horizon: u64,
        scope: Option<ReachScope>,
    ) -> anyhow::Result<GateReach> {
        let mut reach = self.reach(questions, horizon)?;
        reach.scope = scope;
        if reach.cannot_accept() {
            return Err(bad_at(path, None, reach.refusal()));
        }
        Ok(reach)
    }

    /// The gate's settings a resumed run must share with its start, each as its key and a
    /// text of its value: the thresholds (the preset and the keys that change it), the
    /// ladder, the INFRA guard, the order of the gate questions and the false-discovery rate.
    pub fn resume_settings(&self) -> Vec<(&'static str, String)> {
        let mut settings = vec![
            (
                "[gate] params",
                format!("{} {:?}", self.preset, self.params),
            ),
            ("[gate] ladder", format!("{:?}", self.ladder)),
            ("[gate] guard_err", format!("{:?}", self.guard_err)),
            ("[gate] seed", self.seed.to_string()),
            ("[gate] fdr_alpha", format!("{:?}", self.fdr_alpha)),
        ];
        // Only a run that sets them records them, so a run started before they existed
        // resumes as it was.
        if let Some(pool) = self.pool {
            settings.push(("[gate] pool", pool.to_string()));
        }
        if self.carry_over {
            settings.push(("[gate] carry_over", "true".to_owned()));
        }
        if let Some(screen) = self.screen {
            settings.push(("[gate] screen", format!("{screen:?}")));
        }
        if let Some(best) = self.best_per_epoch {
            settings.push(("[gate] best_per_epoch", best.to_string()));
        }
        match self.answers_per_question {
            AnswersPerQuestion::Fixed(1) => {}
            AnswersPerQuestion::Fixed(k) => {
                settings.push(("[gate] answers_per_question", k.to_string()));
            }
            AnswersPerQuestion::Auto(auto) => {
                settings.push(("[gate] answers_per_question", format!("auto {auto:?}")));
            }
        }
        if let Calibration::Pool { discordance } = self.calibration {
            settings.push(("[gate] calibration", format!("pool {discordance:?}")));
        }
        settings
    }

    /// The budget of the project's ledger of each skill: `fdr_alpha` over `ledger_horizon`
    /// tests, `None` without a ledger or with `fdr_alpha = "off"` (the ledger is then left
    /// untouched).
    pub fn ledger_budget(&self) -> Option<LedgerBudget> {
        let alpha = self.fdr_alpha?;
        LedgerBudget::new(alpha, self.ledger_horizon?).ok()
    }

    /// The pre-flight's line on the project's ledger, empty without one.
    pub fn ledger_line(&self) -> String {
        match (self.ledger_horizon, self.fdr_alpha) {
            (None, _) => String::new(),
            (Some(horizon), Some(alpha)) => format!(
                "ledger: each skill's candidates are tests of its ledger in \
                 .skill-evolve/ledger/, fdr_alpha {alpha} spread over {horizon} tests across \
                 runs; gate questions that accepted a version are {}\n",
                if self.reuse_questions {
                    "reused ([gate] reuse_questions = true)"
                } else {
                    "not reused"
                }
            ),
            (Some(_), None) => "ledger: untouched (fdr_alpha = \"off\"): this run's tests are \
                                not recorded and its candidates are not held to it\n"
                .to_owned(),
        }
    }

    /// A gatekeeper whose run ids start with `run_prefix`; with a false-discovery rate,
    /// e-LOND spreads it evenly over `horizon` candidates (at least one).
    pub fn gatekeeper(&self, run_prefix: String, horizon: u64) -> anyhow::Result<Gatekeeper> {
        let mut keeper = Gatekeeper::new(ValidationConfig {
            gate_run_prefix: run_prefix,
            ladder: self.ladder.clone(),
            seed: self.seed,
            gate_guard_err: self.guard_err,
            params: self.params,
            calibration: self.calibration,
        });
        if let Some(pool) = self.pool {
            keeper = keeper.with_pool(pool);
        }
        if self.carry_over {
            keeper = keeper.with_carry_over();
        }
        if let Some(rule) = self.screen {
            keeper = keeper.with_screen(rule);
        }
        if let Some(best) = self.best_per_epoch {
            keeper = keeper.with_best_per_epoch(best);
        }
        keeper = match self.answers_per_question {
            AnswersPerQuestion::Fixed(k) => keeper.with_answers_per_question(k),
            AnswersPerQuestion::Auto(auto) => keeper.with_auto_answers(auto),
        };
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
    let (mut params, preset) = custom_params(src, g)?;
    let calibration = check_calibration(src, g)?;
    if matches!(calibration, Calibration::Pool { .. }) && g.lambda_dir.is_none() {
        params.lambda_dir = POOL_LAMBDA_DIR;
    }
    let fdr_alpha = level_or_off(src, "fdr_alpha", &g.fdr_alpha)?;
    params.futility_risk = level_or_off(src, "futility_risk", &g.futility_risk)?;
    let ledger_horizon = match &g.ledger_horizon {
        Some(h) if *h.get_ref() == 0 => {
            return Err(src.at(
                h.span(),
                "[gate] ledger_horizon must be at least 1 test".to_owned(),
            ));
        }
        Some(h) if !g.ledger => {
            return Err(src.at(
                h.span(),
                "[gate] ledger_horizon is set but ledger is not: add ledger = true".to_owned(),
            ));
        }
        Some(h) => Some(*h.get_ref()),
        None => g.ledger.then_some(DEFAULT_LEDGER_HORIZON),
    };
    let pool = match &g.pool {
        Some(p) if *p.get_ref() == 0 => {
            return Err(src.at(
                p.span(),
                "[gate] pool must let a candidate draw at least 1 gate question".to_owned(),
            ));
        }
        Some(p) => Some(*p.get_ref()),
        None => None,
    };
    let screen = match &g.screen {
        Some(q) if *q.get_ref() == 0 => {
            return Err(src.at(
                q.span(),
                "[gate] screen must be at least 1 training question (leave it out for no \
                 screen)"
                    .to_owned(),
            ));
        }
        Some(q) => Some(ScreenRule {
            questions: *q.get_ref(),
            ..ScreenRule::default()
        }),
        None => None,
    };
    let best_per_epoch = match &g.best_per_epoch {
        Some(k) if *k.get_ref() == 0 => {
            return Err(src.at(
                k.span(),
                "[gate] best_per_epoch must be at least 1 candidate (leave it out to gate every \
                 candidate)"
                    .to_owned(),
            ));
        }
        Some(k) => Some(*k.get_ref()),
        None => None,
    };
    let answers_per_question = answers_per_question(src, g.answers_per_question.as_ref())?;
    Ok(GateSettings {
        params,
        preset,
        ladder,
        guard_err,
        seed: g.seed,
        fdr_alpha,
        ledger_horizon,
        reuse_questions: g.reuse_questions,
        pool,
        carry_over: g.carry_over,
        screen,
        best_per_epoch,
        answers_per_question,
        calibration,
    })
}

/// `[gate] answers_per_question`: from 1 to [`MAX_ANSWERS_PER_QUESTION`], or `"auto"` (unset).
fn answers_per_question(
    src: &Source<'_>,
    value: Option<&Spanned<CountOrAuto>>,
) -> anyhow::Result<AnswersPerQuestion> {
    let Some(value) = value else {
        return Ok(AnswersPerQuestion::Auto(AutoAnswers::default()));
    };
    match value.get_ref() {
        CountOrAuto::Word(w) if w == "auto" => Ok(AnswersPerQuestion::Auto(AutoAnswers::default())),
        CountOrAuto::Count(k) => match u32::try_from(*k) {
            Ok(k) if (1..=MAX_ANSWERS_PER_QUESTION).contains(&k) => {
                Ok(AnswersPerQuestion::Fixed(k))
            }
            _ => Err(src.at(
                value.span(),
                format!(
                    "[gate] answers_per_question must be from 1 to {MAX_ANSWERS_PER_QUESTION} \
                     or \"auto\", not {k}"
                ),
            )),
        },
        CountOrAuto::Word(w) => Err(src.at(
            value.span(),
            format!(
                "[gate] answers_per_question must be from 1 to {MAX_ANSWERS_PER_QUESTION} or \
                 \"auto\", not {w:?}"
            ),
        )),
    }
}

/// `[gate] calibration` and `[gate] discordance`.
fn check_calibration(src: &Source<'_>, g: &GateSection) -> anyhow::Result<Calibration> {
    let discordance = match &g.discordance {
        Some(d) if !(*d.get_ref() > 0.0 && *d.get_ref() <= 1.0) => {
            return Err(src.at(
                d.span(),
                format!(
                    "[gate] discordance must be a share above 0 and at most 1, not {}",
                    d.get_ref()
                ),
            ));
        }
        Some(d) => *d.get_ref(),
        None => DEFAULT_DISCORDANCE,
    };
    match g
        .calibration
        .as_ref()
        .map(|c| (c.get_ref().as_str(), c.span()))
    {
        None | Some(("pool", _)) => Ok(Calibration::Pool { discordance }),
        Some(("e-process", _)) => match &g.discordance {
            Some(d) => Err(src.at(
                d.span(),
                "[gate] discordance shapes a pool boundary: it has no effect with calibration \
                 = \"e-process\" (leave it out)"
                    .to_owned(),
            )),
            None => Ok(Calibration::EProcess),
        },
        Some((other, span)) => Err(src.at(
            span,
            format!("[gate] calibration must be \"pool\" or \"e-process\", not {other:?}"),
        )),
    }
}

/// A key that takes a level strictly between 0 and 1 or the word `"off"` (`None`).
fn level_or_off(
    src: &Source<'_>,
    key: &str,
    given: &Spanned<LevelOrOff>,
) -> anyhow::Result<Option<f64>> {
    match given.get_ref() {
        LevelOrOff::Level(level) if *level > 0.0 && *level < 1.0 => Ok(Some(*level)),
        LevelOrOff::Word(word) if word == "off" => Ok(None),
        LevelOrOff::Level(level) => Err(src.at(
            given.span(),
            format!("[gate] {key} must lie strictly between 0 and 1, not {level}"),
        )),
        LevelOrOff::Word(word) => Err(src.at(
            given.span(),
            format!("[gate] {key} must be a level between 0 and 1 or \"off\", not {word:?}"),
        )),
    }
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
