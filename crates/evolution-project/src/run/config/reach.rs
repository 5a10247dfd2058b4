//! What a gate can accept with a number of gate questions ([`GateReach`]), per skill
//! ([`ReachScope`]) and with a project's ledger ([`LedgerReach`]): the pre-flight's reach lines
//! and the refusal of a gate set too small to ever accept.

use evolution_gate::{AcceptFloor, GateDecision};
use evolution_harness::LedgerBudget;

use super::*;

/// What the project's ledger of a skill adds to its first candidate's test.
#[derive(Debug, Clone, PartialEq)]
pub struct LedgerReach {
    /// The skill file's path in the project.
    pub skill: String,
    /// The level the ledger gives its next test (`index` over the ledger).
    pub level: evolution_harness::TestLevel,
    /// The ledger's budget.
    pub budget: LedgerBudget,
    /// The skill's gate questions left out: they accepted an earlier version.
    pub excluded: usize,
}

/// The most gate questions [`GateSettings::reach`] looks at; past it a gate can accept
/// whatever its thresholds, and the reach is not computed.
pub const MAX_REACH_QUESTIONS: usize = 20_000;

/// The most gate questions the power of [`GateReach`] is computed for (its cost grows with
/// the square of the questions).
pub(super) const MAX_POWER_QUESTIONS: usize = 2_000;

/// The most questions [`GateReach::fewest_questions`] is looked for up to.
pub(super) const MAX_NEEDED_QUESTIONS: u64 = 10_000;

/// The win rate the gate questions needed for a given power are stated at.
pub(super) const NEEDED_AT_WIN_RATE: f64 = 0.7;
/// Below this power at a 70 % win rate the pre-flight warns that most good edits will be
/// rejected.
pub const LOW_POWER: f64 = 0.2;
/// The most gate questions the needed-questions search looks at (its cost grows with the
/// cube of them).
pub(super) const MAX_NEEDED_SEARCH: u64 = 200;

/// The win rates the pre-flight states the power at.
pub const POWER_WIN_RATES: [f64; 2] = [0.6, 0.7];

/// What the gate can accept with a number of gate questions, at the level the run's first
/// candidate is tested at (e-LOND raises `e_confirm` and `e_provisional` to at least
/// `horizon / fdr_alpha` until the run's first accept).
#[derive(Debug, Clone, PartialEq)]
pub struct GateReach {
    /// Pairs the candidate is tested on: its gate questions times the answers per question.
    pub questions: usize,
    /// Its gate questions.
    pub distinct: usize,
    /// The answers each arm gives each gate question (`[gate] answers_per_question`; with
    /// `"auto"`, as many as a stochastic agent would be asked for).
    pub answers: u32,
    /// With `answers_per_question = "auto"` and more than one answer above: the power at a
    /// 70 % win rate if the agent turns out to answer alike and each question is asked once
    /// (`Some(None)`: then no record can be accepted).
    pub alike: Option<Option<f64>>,
    /// The e-value a confirmed accept of the first candidate needs.
    pub e_confirm: f64,
    /// The e-value a provisional accept of the first candidate needs.
    pub e_provisional: f64,
    /// e-LOND's level and horizon, when the run controls its false-discovery rate.
    pub fdr: Option<(f64, u64)>,
    /// The fewest wins (no loss) of each accepting exit; `None` past
    /// [`MAX_REACH_QUESTIONS`].
    pub floor: Option<AcceptFloor>,
    /// The exact accept probability at each of [`POWER_WIN_RATES`], every gate question a
    /// discordant pair, asked at the ladder's block ends; empty when not computed.
    pub power: Vec<(f64, f64)>,
    /// The fewest gate questions with which some record can be accepted, when up to
    /// 10 000 can.
    pub fewest_questions: Option<u64>,
    /// The skill whose candidates are tested on these questions, when they are the gate
    /// questions of its own task types rather than the whole gate set.
    pub scope: Option<ReachScope>,
    /// The skill's ledger, when the project keeps one (`[gate] ledger = true`).
    pub ledger: Option<LedgerReach>,
    /// What a gate calibrated for its pool can do (`[gate] calibration = "pool"`); the
    /// e-value thresholds above are then `1/level`.
    pub pool: Option<PoolReach>,
    /// `[gate] best_per_epoch`: the most candidates an epoch gates, when capped.
    pub best_per_epoch: Option<usize>,
}

/// Whose gate questions a [`GateReach`] counts: one skill's, out of the whole gate set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReachScope {
    /// The skill's name.
    pub skill: String,
    /// The gate questions of every task type.
    pub of: usize,
}

impl ReachScope {
    /// `refunds: 12 of 40 gate questions serve this skill`, for `questions` of them.
    pub fn words(&self, questions: usize) -> String {
        format!(
            "{}: {questions} of {} gate questions serve this skill",
            self.skill, self.of
        )
    }
}

/// Refuses, as a bad input of the configuration `path`, the reaches of `reaches` that
/// cannot accept any candidate: one line naming each (every skill, with the gate questions
/// it would need).
///
/// # Errors
/// That refusal.
pub fn refuse_unreachable(path: &Path, reaches: &[GateReach]) -> anyhow::Result<()> {
    let refused: Vec<&GateReach> = reaches.iter().filter(|r| r.cannot_accept()).collect();
    match refused.as_slice() {
        [] => Ok(()),
        [one] => Err(bad_at(path, None, one.refusal())),
        [first, ..] => {
            // One short line per skill, and what they share said once.
            let same_level = refused
                .iter()
                .all(|r| r.level_words() == first.level_words());
            let mut lines: Vec<String> = refused
                .iter()
                .map(|r| {
                    let level = if same_level {
                        String::new()
                    } else {
                        format!(
                            "; its first candidate {} {}",
                            r.level_verb(),
                            r.level_words()
                        )
                    };
                    let whose = r.scope.as_ref().map_or_else(
                        || format!("the whole gate set: {}", r.counted_as("gate question(s)")),
                        |scope| scope.words(r.distinct),
                    );
                    format!("  {whose}; {}{level}", r.needed())
                })
                .collect();
            let shared = if same_level {
                format!(
                    "the first candidate of each {} {}; ",
                    first.level_verb(),
                    first.level_words()
                )
            } else {
                String::new()
            };
            lines.push(format!(
                "{shared}add questions of their task types, raise [questions] gate, or map \
                 more task types to them in [skills] (nothing was run)"
            ));
            let headline = format!(
                "no candidate can be accepted on {} sets of gate questions:",
                refused.len()
            );
            Err(crate::error::BadInput::at(path, None, headline)
                .with_lines(lines)
                .into())
        }
    }
}

impl GateReach {
    /// The power at win rate `p` (the pool's, or the e-process's), when computed.
    pub fn power_at(&self, p: f64) -> Option<f64> {
        let power = self.pool.as_ref().map_or(&self.power, |pool| &pool.power);
        power.iter().find(|(q, _)| *q == p).map(|(_, power)| *power)
    }

    /// `8 gate questions`, or `40 pairs (8 gate questions × 5 answers)`.
    pub fn counted(&self) -> String {
        self.counted_as("gate questions")
    }

    /// [`GateReach::counted`] with `noun` for the gate questions when each is asked once.
    fn counted_as(&self, noun: &str) -> String {
        if self.answers > 1 {
            let questions = if self.distinct == 1 {
                "gate question"
            } else {
                "gate questions"
            };
            format!(
                "{} pairs ({} {questions} × {} answers)",
                self.questions, self.distinct, self.answers
            )
        } else {
            format!("{} {noun}", self.questions)
        }
    }

    /// The line on the answers per question the run chooses, empty when they are fixed.
    fn answers_line(&self) -> String {
        let Some(alike) = self.alike else {
            return String::new();
        };
        let then = match alike {
            Some(power) => format!("power {power:.3} at a 70% win rate"),
            None => "no record can be accepted".to_owned(),
        };
        format!(
            "  answers per gate question: {} when the agent answers differently when asked \
             again (measured on training questions when the run starts), else 1 — then {then}\n",
            self.answers
        )
    }

    /// The same reach, said of the skill `scope` (its own gate questions).
    #[must_use]
    pub fn scoped(mut self, scope: ReachScope) -> Self {
        self.scope = Some(scope);
        self
    }

    /// True when no record of wins and losses on these questions can be accepted.
    pub fn cannot_accept(&self) -> bool {
        self.floor.is_some_and(|f| f.smallest().is_none())
    }

    /// `needs` before an e-value threshold, `is tested at` before a pool's level.
    fn level_verb(&self) -> &'static str {
        if self.pool.is_some() {
            "is tested at"
        } else {
            "needs"
        }
    }

    /// How the first candidate's threshold comes about, in words.
    fn level_words(&self) -> String {
        if let Some(pool) = &self.pool {
            return pool.level_words(self);
        }
        let provisional = if self.e_provisional == self.e_confirm {
            String::new()
        } else {
            format!(
                ", E ≥ {} for a provisional accept when the questions run out",
                fmt_e(self.e_provisional)
            )
        };
        let ledger = self
            .ledger
            .as_ref()
            .map(LedgerReach::words)
            .unwrap_or_default();
        match self.fdr {
            Some((alpha, horizon)) => format!(
                "E ≥ {}{provisional} (e-LOND: fdr_alpha {alpha} over {horizon} candidate(s){ledger})",
                fmt_e(self.e_confirm)
            ),
            None => format!(
                "E ≥ {}{provisional} (fdr_alpha = \"off\")",
                fmt_e(self.e_confirm)
            ),
        }
    }

    /// The pre-flight's lines: the smallest accepting record of each exit and the power.
    pub fn lines(&self) -> String {
        let mut out = match &self.scope {
            Some(scope) => format!(
                "gate reach of skill {}; the first candidate {} {}\n",
                scope.words(self.distinct),
                self.level_verb(),
                self.level_words()
            ),
            None => format!(
                "gate reach: {}; the first candidate {} {}\n",
                self.counted_as("gate question(s)"),
                self.level_verb(),
                self.level_words()
            ),
        };
        let Some(floor) = self.floor else {
            out.push_str(&format!(
                "  not computed past {MAX_REACH_QUESTIONS} gate questions\n"
            ));
            return out;
        };
        match floor.smallest() {
            Some((record, decision)) => {
                out.push_str(&format!(
                    "  with {} an accept needs at least {} wins and no loss ({} after {} \
                     questions)\n",
                    self.counted(),
                    record.wins,
                    decision_words(decision),
                    record.questions
                ));
                for (exit, other) in [
                    (GateDecision::AcceptConfirmed, floor.confirmed),
                    (GateDecision::AcceptProvisional, floor.provisional),
                ] {
                    if exit == decision {
                        continue;
                    }
                    out.push_str(&match other {
                        Some(r) => format!(
                            "  {}: at least {} wins and no loss (after {} questions)\n",
                            decision_words(exit),
                            r.wins,
                            r.questions
                        ),
                        None => format!("  {}: no record takes this exit\n", decision_words(exit)),
                    });
                }
            }
            None => out.push_str(&format!("  no record can be accepted: {}\n", self.needed())),
        }
        if let Some(n) = self.fewest_questions {
            let what = if self.answers > 1 {
                "pairs"
            } else {
                "gate questions"
            };
            out.push_str(&format!("  the fewest {what} any accept needs: {n}\n"));
        }
        out.push_str(&self.answers_line());
        if let Some(pool) = &self.pool {
            out.push_str(&pool.power_lines());
        }
        if !self.power.is_empty() {
            out.push_str(&format!(
                "  power: {} (exact, at the ladder's block ends, every gate question won or \
                 lost; ties lower it)\n",
                power_words(&self.power)
            ));
        }
        out
    }

    /// How many gate questions an accept needs, in words.
    fn needed(&self) -> String {
        let fresh = match (&self.ledger, self.fewest_questions) {
            (Some(ledger), Some(n)) if ledger.excluded > 0 => format!(
                "; {} of its gate questions accepted earlier versions and are not reused \
                 ([gate] reuse_questions = false): it lacks {} fresh gate question(s)",
                ledger.excluded,
                n.saturating_sub(u64::try_from(self.questions).unwrap_or(u64::MAX))
            ),
            _ => String::new(),
        };
        match self.fewest_questions {
            Some(n) if self.answers > 1 => format!(
                "at least {n} pairs are needed ({} gate questions asked {} times){fresh}",
                n.div_ceil(u64::from(self.answers)),
                self.answers
            ),
            Some(n) => format!("at least {n} gate questions are needed{fresh}"),
            None => format!("not even {MAX_NEEDED_QUESTIONS} gate questions would do{fresh}"),
        }
    }

    /// The one-line refusal of a gate set too small for any accept.
    pub fn refusal(&self) -> String {
        match &self.scope {
            Some(scope) => format!(
                "skill {}: the {} of its task types cannot accept any \
                 candidate of this skill (of {} gate questions in all): the first is tested at \
                 {}, and {}; add questions of its task types, raise [questions] gate, or map \
                 more task types to it in [skills] (nothing was run)",
                scope.skill,
                self.counted_as("gate question(s)"),
                scope.of,
                self.level_words(),
                self.needed()
            ),
            None => format!(
                "the {} cannot accept any candidate: the first is tested at {}, \
                 and {}; add questions or raise [questions] gate (nothing was run)",
                self.counted_as("gate question(s)"),
                self.level_words(),
                self.needed()
            ),
        }
    }
}

impl LedgerReach {
    /// `; the skill's ledger: test 2 of 365, 1 accept before it`.
    fn words(&self) -> String {
        format!(
            "; the ledger of {}: test {} of {} at fdr_alpha {}, {} accept(s) before it, E ≥ {}",
            crate::render::terminal_safe(&self.skill),
            self.level.index,
            self.budget.horizon,
            self.budget.alpha,
            self.level.discoveries_before,
            fmt_e(self.level.threshold)
        )
    }
}

/// `0.123 at a 60% win rate, 0.456 at a 70% win rate`.
fn power_words(power: &[(f64, f64)]) -> String {
    power
        .iter()
        .map(|(p, power)| format!("{power:.3} at a {:.0}% win rate", p * 100.0))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A decision's name as the report spells it.
fn decision_words(decision: GateDecision) -> &'static str {
    decision.as_str()
}

/// An e-value for a message: one decimal, or in scientific notation past a million.
fn fmt_e(e: f64) -> String {
    if e < 1e6 {
        format!("{e:.1}")
    } else {
        format!("{e:.3e}")
    }
}

/// What a gate calibrated for its pool can do, for the pre-flight.
#[derive(Debug, Clone, PartialEq)]
pub struct PoolReach {
    /// The level the first candidate is tested at.
    pub level: f64,
    /// The boundary's exact worst-case false-accept rate, when it was built.
    pub false_accept: Option<f64>,
    /// The share of the gate questions assumed discordant.
    pub discordance: f64,
    /// Exact power at each of [`POOL_POWER_WIN_RATES`], at that share; empty past
    /// [`evolution_gate::MAX_POOL_POWER_QUESTIONS`] questions.
    pub power: Vec<(f64, f64)>,
    /// For each of 50 % and 80 % power at a 70 % win rate: the gate questions that reach it,
    /// `None` past 200.
    pub needed: Vec<(f64, Option<u64>)>,
}

impl PoolReach {
    /// How the first candidate's level comes about, in words.
    pub(super) fn level_words(&self, reach: &GateReach) -> String {
        let how = match (reach.fdr, reach.best_per_epoch) {
            (Some((alpha, horizon)), Some(best)) => format!(
                "e-LOND spreads fdr_alpha {alpha} over the {horizon} candidate(s) this run can \
                 gate at most — the {best} best on the screen each epoch ([gate] best_per_epoch)"
            ),
            (Some((alpha, horizon)), None) => format!(
                "e-LOND spreads fdr_alpha {alpha} over the {horizon} candidate(s) this run can \
                 gate at most — one per training task type and prompt each epoch, and a slow \
                 update per skill between epochs"
            ),
            (None, _) => "fdr_alpha = \"off\": the level of e_confirm alone".to_owned(),
        };
        let exact = match self.false_accept {
            Some(f) if f > 0.0 => format!("; worst-case false accept {f:.4}"),
            _ => String::new(),
        };
        format!(
            "level {} ({how}{}), calibrated exactly for its {}{exact}",
            fmt_level(self.level),
            reach
                .ledger
                .as_ref()
                .map(|l| format!("; the ledger of {} binds when stricter", l.skill))
                .unwrap_or_default(),
            reach.counted_as("gate question(s)"),
        )
    }

    /// The pre-flight's power lines.
    pub(super) fn power_lines(&self) -> String {
        let mut out = String::new();
        if !self.power.is_empty() {
            out.push_str(&format!(
                "  power: {} (exact, at the ladder's block ends, with {:.0}% of the gate \
                 questions discordant — assumed ([gate] discordance) until the run measures it)\n",
                power_words(&self.power),
                self.discordance * 100.0
            ));
        }
        let needed: Vec<String> = self
            .needed
            .iter()
            .map(|(target, n)| match n {
                Some(n) => format!("{n} for {:.0}% power", target * 100.0),
                None => format!(
                    "more than {MAX_NEEDED_SEARCH} for {:.0}% power",
                    target * 100.0
                ),
            })
            .collect();
        out.push_str(&format!(
            "  gate questions needed at a 70% win rate: {}\n",
            needed.join(", ")
        ));
        if let Some((_, power)) = self.power.iter().find(|(p, _)| *p == NEEDED_AT_WIN_RATE)
            && *power < LOW_POWER
        {
            out.push_str(&format!(
                "  warning: power {power:.3} at a 70% win rate — most good edits will be \
                 rejected; add gate questions, or test fewer candidates (fewer epochs or skills, or \
                 [gate] best_per_epoch = 1 with a screen, \
                 raise the level)\n"
            ));
        }
        out
    }
}

/// A level for a message: four significant digits.
fn fmt_level(level: f64) -> String {
    format!("{level:.4}")
}
