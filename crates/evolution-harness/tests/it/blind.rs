//! The proposer never sees the gate: a whole run through the kernel's proposer (diagnosis,
//! evolve prompts with the blacklist, the slow update), after which no LLM request holds a
//! gate question or a gate outcome, and the diagnosis read no gate rollout.

use std::sync::Mutex;

use async_trait::async_trait;
use evolution_evolve::EditBudgetSchedule;
use evolution_harness::{
    Budget, EventLog, GATE_RUN_MARKER, InProcessRunner, LoopConfig, LoopContext, LoopState,
    PromptTemplates, Workspace, run_evolution,
};
use evolution_store_fs::{FileCheckpoint, FsStore, FsVersionedStore};
use evolution_testkit::{MemoryRunLog, ScriptedLlm};
use evolution_types::{
    GATE_REJECTED_REASON, GeneratedQuestion, Prediction, RunLog, RunLogError, TraceStep,
};

use crate::kernel::{HARM_B, agent, init_store, scripted_llm};
use crate::support::{gate, kernel_proposer, loop_config, resuming, set};

/// A run log that notes every run id it is asked about.
struct Watched<'a> {
    inner: &'a MemoryRunLog,
    read: Mutex<Vec<String>>,
}

impl Watched<'_> {
    fn note(&self, run_id: &str) {
        self.read.lock().unwrap().push(run_id.to_owned());
    }
}

#[async_trait]
impl RunLog for Watched<'_> {
    async fn get_predictions(
        &self,
        run_id: &str,
        question_ids: Option<&[String]>,
    ) -> Result<Vec<Prediction>, RunLogError> {
        self.note(run_id);
        self.inner.get_predictions(run_id, question_ids).await
    }

    async fn get_traces(
        &self,
        run_id: &str,
        question_ids: Option<&[String]>,
    ) -> Result<Vec<TraceStep>, RunLogError> {
        self.note(run_id);
        self.inner.get_traces(run_id, question_ids).await
    }
}

/// What a prompt must never hold: a gate question's id or text, or a piece of a gate outcome.
fn gate_words(gate_set: &[GeneratedQuestion]) -> Vec<String> {
    let mut words: Vec<String> = gate_set
        .iter()
        .flat_map(|q| [q.question_id.clone(), q.question.clone()])
        .collect();
    for outcome in [
        "W=",
        "L=",
        "E=",
        "δ̂",
        "accept_",
        "reject_",
        "futility",
        "inertia",
        "directional",
    ] {
        words.push(outcome.to_owned());
    }
    words
}

#[tokio::test]
async fn no_prompt_of_a_run_holds_a_gate_question_or_outcome() {
    let dir = tempfile::tempdir().unwrap();
    init_store(dir.path());
    let store = FsVersionedStore::new(FsStore::open(dir.path().join("store")).unwrap());
    let log = MemoryRunLog::new();
    let watched = Watched {
        inner: &log,
        read: Mutex::new(Vec::new()),
    };
    let checkpoint = FileCheckpoint::new(dir.path().join("loop.json"));
    let llm: ScriptedLlm = scripted_llm();
    let train = set("t", 10);
    let schedule = EditBudgetSchedule::Linear { start: 3, end: 1 };
    let proposer = kernel_proposer(&llm, &watched, train.clone(), schedule);
    let runner = InProcessRunner::new(|ws: &Workspace, q: &GeneratedQuestion| agent(ws, q));
    let budget = Budget::unlimited();
    let events = EventLog::new();
    let ctx = LoopContext {
        validation: resuming(&runner, &log, &budget, &events),
        store: &store,
        proposer: &proposer,
        llm: &llm,
        checkpoint: &checkpoint,
        ledger: None,
    };
    let config = LoopConfig {
        gate: set("held", 30),
        slow_update_template: Some(PromptTemplates::default().slow_update),
        ..loop_config("k", 3, train)
    };
    let report = run_evolution(ctx, &config, gate("k", 11)).await.unwrap();

    // The gate rejected candidates, and the user's report keeps its figures.
    let rejected: Vec<_> = report.records.iter().filter(|r| !r.accepted).collect();
    assert!(
        rejected
            .iter()
            .any(|r| r.validation.as_ref().is_some_and(|v| v.l > 0))
    );
    assert!(
        rejected
            .iter()
            .all(|r| r.validation.as_ref().is_some_and(|v| v.n_used > 0)),
        "{:?}",
        rejected.iter().map(|r| &r.candidate).collect::<Vec<_>>()
    );
    // The blacklist remembers the harmful edit as rejected by the gate, and nothing more.
    let state = LoopState::load(&checkpoint).unwrap().unwrap();
    let harm = state
        .rejected
        .iter()
        .find(|r| r.edit.content == HARM_B)
        .unwrap();
    assert_eq!(harm.reason, GATE_REJECTED_REASON);

    let requests = llm.requests();
    let told = format!("{HARM_B:?} — {GATE_REJECTED_REASON}");
    assert!(
        requests.iter().any(|r| r.full_text().contains(&told)),
        "the blacklist never reached a prompt"
    );
    let words = gate_words(&config.gate);
    for request in &requests {
        let text = request.full_text();
        for word in &words {
            assert!(
                !text.contains(word.as_str()),
                "{word:?} in a prompt:\n{text}"
            );
        }
    }
    let read = watched.read.lock().unwrap().clone();
    assert!(!read.is_empty());
    assert!(
        read.iter().all(|id| !id.contains(GATE_RUN_MARKER)),
        "{read:?}"
    );
}
