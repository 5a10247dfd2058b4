//! Setup the loop tests share: question sets, the simulated agents' replies, the loop's and
//! the gate's configuration, validation that resumes from its log, and the kernel's proposer.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicUsize, Ordering};

use evolution_diagnose::DiagnoseOptions;
use evolution_evolve::{EditBudgetSchedule, EvolveOptions};
use evolution_gate::GateParams;
use evolution_harness::{
    AgentReply, AgentRunner, Budget, Checkpoint, CheckpointError, EventSink, EvolutionReport,
    Gatekeeper, KernelProposer, LoopConfig, PromptTemplates, RunRecorder, ValidationConfig,
    ValidationContext,
};
use evolution_testkit::fixtures::question;
use evolution_types::{GeneratedQuestion, LlmProvider, Profile, RunLog};
use serde_json::json;

/// `per_type` questions of each task type `a`, `b` and `c`, with ids `<prefix>-<type><nn>`
/// and the reference answer `v`.
pub(crate) fn set(prefix: &str, per_type: usize) -> Vec<GeneratedQuestion> {
    ["a", "b", "c"]
        .iter()
        .flat_map(|t| (0..per_type).map(move |i| question(&format!("{prefix}-{t}{i:02}"), t, "v")))
        .collect()
}

/// Each record of a loop's report: the candidate, whether it was accepted, the version it
/// became.
pub(crate) fn summary(report: &EvolutionReport) -> Vec<(String, bool, Option<String>)> {
    report
        .records
        .iter()
        .map(|r| (r.candidate.clone(), r.accepted, r.new_version.clone()))
        .collect()
}

/// A simulated agent's reply to `q`: its reference answer when `right`, a wrong one when not.
pub(crate) fn reply(q: &GeneratedQuestion, right: bool) -> AgentReply {
    AgentReply {
        prediction: if right {
            q.answer.clone()
        } else {
            "wrong".into()
        },
        ..AgentReply::default()
    }
}

/// A reply to the evolve prompts of skills and of the system prompt: no suggestion, an
/// append of each of `contents`.
pub(crate) fn edits(contents: &[&str]) -> String {
    let edits: Vec<_> = contents
        .iter()
        .map(|c| json!({"op": "append", "target": "", "content": c}))
        .collect();
    json!({"suggestions": [], "edits": edits}).to_string()
}

/// A loop named `name` of at most `max_epochs` epochs, learning from `train`, gated on 30
/// and scored on 10 holdout questions per task type ([`set`] `g` and `h`); no probation, no
/// prompt documents, no slow update, no estimate.
pub(crate) fn loop_config(
    name: &str,
    max_epochs: u32,
    train: Vec<GeneratedQuestion>,
) -> LoopConfig {
    LoopConfig {
        run_name: name.into(),
        max_epochs,
        train,
        gate: set("g", 30),
        gate_scope: std::collections::BTreeMap::new(),
        holdout: set("h", 10),
        probation: vec![],
        prompt_files: BTreeSet::new(),
        slow_update_template: None,
        preferences: Default::default(),
        estimate: None,
    }
}

/// The gate on blocks of 10 then 20 questions in the order `seed` gives, with the default
/// parameters; its run ids start with `<name>_gate_`.
pub(crate) fn gate(name: &str, seed: u64) -> Gatekeeper {
    Gatekeeper::new(ValidationConfig {
        gate_run_prefix: format!("{name}_gate_"),
        ladder: vec![10, 20],
        seed,
        gate_guard_err: 0.2,
        params: GateParams::default(),
        calibration: evolution_harness::Calibration::EProcess,
    })
}

/// Validation that runs `runner`, records both arms in `log` and reuses the answers `log`
/// already holds.
pub(crate) fn resuming<'a, L: RunRecorder + RunLog>(
    runner: &'a dyn AgentRunner,
    log: &'a L,
    budget: &'a Budget,
    events: &'a dyn EventSink,
) -> ValidationContext<'a> {
    ValidationContext {
        runner,
        recorder: log,
        budget,
        events,
        resume_from: Some(log),
    }
}

/// The kernel's proposer over `llm`, diagnosing the rollouts of `train` that `log` holds,
/// with the built-in templates, the default profile and options, and `schedule`.
pub(crate) fn kernel_proposer<'a>(
    llm: &'a dyn LlmProvider,
    log: &'a dyn RunLog,
    train: Vec<GeneratedQuestion>,
    schedule: EditBudgetSchedule,
) -> KernelProposer<'a> {
    KernelProposer {
        llm,
        run_log: log,
        questions: train,
        tree_data: BTreeMap::new(),
        templates: PromptTemplates::default(),
        profile: Profile::default(),
        diagnose: DiagnoseOptions::default(),
        evolve: EvolveOptions::default(),
        schedule,
        companions: BTreeMap::new(),
    }
}

/// A checkpoint whose `fail_at`-th save fails, as if the process died just before it (none
/// fails while `fail_at` is 0); `saves` counts the saves tried.
#[derive(Default)]
pub(crate) struct Dying<C> {
    /// Where the saves that do not fail go.
    pub(crate) inner: C,
    /// Saves tried so far.
    pub(crate) saves: AtomicUsize,
    /// The save that fails, counting from 1.
    pub(crate) fail_at: AtomicUsize,
}

impl<C> Dying<C> {
    /// `inner`, with its `fail_at`-th save failing.
    pub(crate) fn new(inner: C, fail_at: usize) -> Self {
        Dying {
            inner,
            saves: AtomicUsize::new(0),
            fail_at: AtomicUsize::new(fail_at),
        }
    }
}

impl<C: Checkpoint> Checkpoint for Dying<C> {
    fn load(&self) -> Result<Option<serde_json::Value>, CheckpointError> {
        self.inner.load()
    }

    fn save(&self, state: &serde_json::Value) -> Result<(), CheckpointError> {
        let n = self.saves.fetch_add(1, Ordering::Relaxed) + 1;
        if n == self.fail_at.load(Ordering::Relaxed) {
            return Err(CheckpointError::Backend {
                message: "killed".into(),
            });
        }
        self.inner.save(state)
    }
}
