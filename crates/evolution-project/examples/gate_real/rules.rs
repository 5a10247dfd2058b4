//! The acceptance rules the benchmark compares, and their names in the table, the plot and
//! on the command line.

/// The risk of the tie-aware futility exit where a rule turns it on.
pub(crate) const FUTILITY_RISK: f64 = 0.05;

/// An acceptance rule.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Rule {
    /// A gate preset judging each candidate on its own, on every gate question.
    Preset(&'static str),
    /// E-LOND as `skill-evolve run` uses it (`fdr_alpha = 0.05`): the `seed` preset, e-LOND over
    /// the run's candidates, and here a quarter of the gate questions held back to judge
    /// provisional accepts (`run` holds none back at this level, where no accept can be
    /// provisional); blocks of 10, 20 and 40 and no other option, or with `every`, the gate looks every `every` questions (`[gate] ladder =
    /// [every]`) instead of after blocks of 10, 20 and 40, with `carry_over` an accepted
    /// candidate's answers become the next baseline's (`[gate] carry_over = true`), and with
    /// `futility` a candidate that mostly ties stops early (`[gate] futility_risk = 0.05`). All
    /// three on were `run`'s defaults before each test was calibrated for its pool; with
    /// `pool` each test's accept boundary is computed exactly for its gate questions at the
    /// level e-LOND grants it (`[gate] calibration = "pool"`, `lambda_dir = -3`, no questions
    /// held back), which with a look every 5 questions, the futility exit and no carry-over
    /// are `run`'s defaults now ([`Rule::ELOND_SHIPPED`]).
    ELond {
        /// Block size of a ladder of equal blocks (`None`: the default ladder).
        every: Option<usize>,
        /// Whether accepted answers are carried over.
        carry_over: bool,
        /// Whether the gate's tie-aware futility exit is on (`futility_risk = 0.05`).
        futility: bool,
        /// Whether each test is calibrated exactly for its pool of gate questions.
        pool: bool,
    },
    /// Keep the candidate when it answers more of a fresh random batch of `batch` gate
    /// questions rightly than the current skill (or as many, with `ties`).
    Greedy {
        /// Questions per batch.
        batch: usize,
        /// Whether a tie keeps the candidate.
        ties: bool,
    },
}

impl Rule {
    /// E-LOND with the `[gate]` options `skill-evolve run` turns on by default: a look every 5
    /// questions, the tie-aware futility exit, each test calibrated for its pool.
    pub(crate) const ELOND_SHIPPED: Rule = Rule::ELond {
        every: Some(5),
        carry_over: false,
        futility: true,
        pool: true,
    };

    /// Every rule the benchmark compares.
    pub(crate) fn all() -> Vec<Rule> {
        let mut rules: Vec<Rule> = evolution_gate::PRESET_NAMES
            .iter()
            .map(|&n| Rule::Preset(n))
            .collect();
        rules.push(Rule::ELond {
            every: None,
            carry_over: false,
            futility: false,
            pool: false,
        });
        for (carry_over, futility) in [(false, false), (true, false), (false, true), (true, true)] {
            rules.push(Rule::ELond {
                every: Some(5),
                carry_over,
                futility,
                pool: false,
            });
        }
        rules.push(Rule::ELOND_SHIPPED);
        rules.push(Rule::Greedy {
            batch: 10,
            ties: false,
        });
        rules.push(Rule::Greedy {
            batch: 40,
            ties: false,
        });
        rules.push(Rule::Greedy {
            batch: 10,
            ties: true,
        });
        rules
    }

    /// The rule whose [`Rule::label`] is `label`.
    pub(crate) fn by_label(label: &str) -> Option<Rule> {
        Rule::all().into_iter().find(|r| r.label() == label)
    }

    /// The rule's label in the table.
    pub(crate) fn label(self) -> String {
        match self {
            Rule::Preset(name) => format!("`{name}`, each candidate alone"),
            Rule::ELond { pool: false, .. } => {
                self.with_options("`seed` + e-LOND (α = 0.05) + probation", Spelling::Table)
            }
            Rule::ELond { pool: true, .. } => {
                self.with_options("`seed` + e-LOND (α = 0.05)", Spelling::Table)
            }
            Rule::Greedy { batch, ties: false } => format!("keep if higher, {batch} questions"),
            Rule::Greedy { batch, ties: true } => {
                format!("keep if higher or equal, {batch} questions")
            }
        }
    }

    /// A short label for the plot.
    pub(crate) fn short(self) -> String {
        match self {
            Rule::Preset(name) => name.to_owned(),
            Rule::ELond { .. } => self.with_options("e-LOND run", Spelling::Plot),
            Rule::Greedy { batch, ties: false } => format!("higher/{batch}"),
            Rule::Greedy { batch, ties: true } => format!("higher-or-equal/{batch}"),
        }
    }

    /// The rule's name on the command line (`--rules`).
    pub(crate) fn id(self) -> String {
        match self {
            Rule::Preset(name) => name.to_owned(),
            Rule::ELond { .. } => self.with_options("elond", Spelling::CommandLine),
            Rule::Greedy { batch, ties: false } => format!("higher-{batch}"),
            Rule::Greedy { batch, ties: true } => format!("higher-or-equal-{batch}"),
        }
    }

    /// `base` followed by the options an e-LOND rule sets, spelt for `spelling`.
    fn with_options(self, base: &str, spelling: Spelling) -> String {
        let Rule::ELond {
            every,
            carry_over,
            futility,
            pool,
        } = self
        else {
            return base.to_owned();
        };
        let mut out = base.to_owned();
        if let Some(every) = every {
            out.push_str(&match spelling {
                Spelling::Table => format!(", `ladder = [{every}]`"),
                Spelling::Plot => format!(" [{every}]"),
                Spelling::CommandLine => format!("-look{every}"),
            });
        }
        if carry_over {
            out.push_str(match spelling {
                Spelling::Table => ", `carry_over`",
                Spelling::Plot => " +carry",
                Spelling::CommandLine => "-carry",
            });
        }
        if futility {
            out.push_str(&match spelling {
                Spelling::Table => format!(", `futility_risk = {FUTILITY_RISK}`"),
                Spelling::Plot => " +futility".to_owned(),
                Spelling::CommandLine => "-futility".to_owned(),
            });
        }
        if pool {
            out.push_str(match spelling {
                Spelling::Table => ", calibrated for the pool",
                Spelling::Plot => " +pool",
                Spelling::CommandLine => "-pool",
            });
        }
        out
    }
}

/// Where a rule's name is written.
#[derive(Clone, Copy)]
enum Spelling {
    Table,
    Plot,
    CommandLine,
}
