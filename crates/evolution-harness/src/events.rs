//! A typed stream of progress events that a front end can render.

use std::sync::{Mutex, PoisonError};

use evolution_gate::GateDecision;
use serde::{Deserialize, Serialize};

use crate::budget::{Budget, BudgetExceeded, Usage};
use crate::phase::Phase;

/// Which side of a paired comparison a rollout belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Arm {
    /// The current version.
    Baseline,
    /// The proposed version.
    Candidate,
    /// A plain run (diagnosis rollouts, held-out evaluation).
    Plain,
}

/// Something that happened during a run. Serialized with an `event` tag in
/// snake case, so a JSON-lines log of events is self-describing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
#[non_exhaustive]
pub enum HarnessEvent {
    /// A run began.
    RunStarted {
        /// The run's id.
        run_id: String,
        /// The pre-flight estimate, when one was made.
        estimate: Option<crate::budget::Estimate>,
    },
    /// One question of one arm finished.
    QuestionDone {
        /// The run-log run id of the rollout.
        run_id: String,
        /// The question.
        question_id: String,
        /// Which arm.
        arm: Arm,
        /// Whether the answer was correct.
        correct: bool,
        /// Whether it failed for infrastructure reasons.
        infra_error: bool,
        /// True when the result came from the baseline cache (no rollout).
        cached: bool,
    },
    /// A phase began; it lasts until the next one.
    PhaseStarted {
        /// The 0-based epoch (the number of epochs run, for the holdout
        /// rollouts after the last one).
        epoch: u32,
        /// Which phase.
        phase: Phase,
        /// What it works on: a run id for rollouts and diagnosis, a
        /// document for proposing and the slow update, a candidate for the
        /// gate, a version for probation.
        subject: String,
    },
    /// A validation block was paired and the gate decided.
    BlockGated {
        /// The candidate's label.
        candidate: String,
        /// 0-based block number.
        block: usize,
        /// Questions in this block.
        block_size: usize,
        /// Cumulative wins.
        w: u64,
        /// Cumulative losses.
        l: u64,
        /// Cumulative paired questions.
        n_used: u64,
        /// Questions not yet used.
        n_remaining: u64,
        /// The gate's decision.
        decision: GateDecision,
        /// `E(W, L)`.
        e_value: f64,
        /// The e-value a confirmed accept needed (with the e-process calibration).
        e_confirm: f64,
        /// With the pool calibration: the wins an accept needs at this many discordant pairs
        /// (`None`: none can accept there yet, or the e-process decides).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        wins_needed: Option<u64>,
        /// Cumulative INFRA errors over both arms.
        infra_errors: u64,
    },
    /// A candidate passed the gate.
    CandidateAccepted {
        /// The candidate's label.
        candidate: String,
        /// How it was accepted.
        decision: GateDecision,
        /// Its final e-value.
        e_value: f64,
        /// The store version it became, once written.
        version: Option<String>,
    },
    /// A candidate was rejected.
    CandidateRejected {
        /// The candidate's label.
        candidate: String,
        /// Why.
        decision: GateDecision,
        /// Its final e-value.
        e_value: f64,
    },
    /// A candidate was dropped before its gate: it broke a check of the project's
    /// preferences, failed the screen, or an epoch's gated candidates were used. None of
    /// the run's level was spent on it.
    CandidateDropped {
        /// The candidate's label.
        candidate: String,
        /// Every check it broke, in words.
        reasons: Vec<String>,
    },
    /// A provisionally accepted version was judged on later evidence.
    ProbationSettled {
        /// The version on probation.
        version: String,
        /// The verdict (`rollback` restores the previous version).
        verdict: evolution_gate::ProbationVerdict,
        /// Wins so far.
        w: u64,
        /// Losses so far.
        l: u64,
    },
    /// The run measured the agent's self-disagreement on training questions and chose how
    /// many times each arm answers each gate question.
    AnswersChosen {
        /// Training questions answered twice by the same version.
        questions: usize,
        /// Of them, answered right once and wrong once.
        disagreed: usize,
        /// The answers per gate question chosen.
        answers_per_question: u32,
    },
    /// A budget cap stopped the run.
    BudgetStop {
        /// Which cap.
        exceeded: BudgetExceeded,
        /// What had been used.
        usage: Usage,
    },
    /// An input file was skipped (with its reason).
    InputSkipped {
        /// The file.
        file: String,
        /// Why.
        reason: String,
    },
    /// A run ended.
    RunFinished {
        /// The run's id.
        run_id: String,
        /// What it used.
        usage: Usage,
    },
}

/// Receives events. Implemented for closures, for an unbounded tokio channel
/// and for [`EventLog`]. Emitting never fails the run: a sink whose receiver
/// is gone simply drops events.
pub trait EventSink: Send + Sync {
    /// Handles one event.
    fn emit(&self, event: &HarnessEvent);
}

impl<F: Fn(&HarnessEvent) + Send + Sync> EventSink for F {
    fn emit(&self, event: &HarnessEvent) {
        self(event);
    }
}

impl EventSink for tokio::sync::mpsc::UnboundedSender<HarnessEvent> {
    fn emit(&self, event: &HarnessEvent) {
        // A closed receiver means nobody watches; the run goes on.
        let _ = self.send(event.clone());
    }
}

/// Announces the phases of a run: each start is emitted as
/// [`HarnessEvent::PhaseStarted`] and, with a budget, what the budget
/// meters from then on is charged to that phase.
#[derive(Clone, Copy)]
pub struct Phases<'a> {
    events: &'a dyn EventSink,
    budget: Option<&'a Budget>,
    epoch: u32,
}

impl<'a> Phases<'a> {
    /// Announces to `events` and charges `budget`, in epoch `epoch`.
    pub fn new(events: &'a dyn EventSink, budget: &'a Budget, epoch: u32) -> Self {
        Phases {
            events,
            budget: Some(budget),
            epoch,
        }
    }

    /// Announces nothing and charges nothing (for calling a proposer outside a run).
    pub fn silent() -> Phases<'static> {
        Phases {
            events: &NoEvents,
            budget: None,
            epoch: 0,
        }
    }

    /// The epoch the phases belong to.
    pub fn epoch(&self) -> u32 {
        self.epoch
    }

    /// `phase` begins, working on `subject`.
    pub fn start(&self, phase: Phase, subject: &str) {
        if let Some(budget) = self.budget {
            budget.enter_phase(phase);
        }
        self.events.emit(&HarnessEvent::PhaseStarted {
            epoch: self.epoch,
            phase,
            subject: subject.to_owned(),
        });
    }
}

impl std::fmt::Debug for Phases<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Phases")
            .field("epoch", &self.epoch)
            .field("charges_a_budget", &self.budget.is_some())
            .finish_non_exhaustive()
    }
}

/// A sink that discards everything.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoEvents;

impl EventSink for NoEvents {
    fn emit(&self, _event: &HarnessEvent) {}
}

/// A sink that keeps every event in memory, for tests and reports.
#[derive(Debug, Default)]
pub struct EventLog {
    events: Mutex<Vec<HarnessEvent>>,
}

impl EventLog {
    /// An empty log.
    pub fn new() -> Self {
        EventLog::default()
    }

    /// A copy of the events so far.
    pub fn events(&self) -> Vec<HarnessEvent> {
        self.events
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl EventSink for EventLog {
    fn emit(&self, event: &HarnessEvent) {
        self.events
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(event.clone());
    }
}
