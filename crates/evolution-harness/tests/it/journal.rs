//! The LLM journal: a run killed in the middle of a proposal resumes
//! without sending any finished LLM call again.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use evolution_diagnose::DiagnoseOptions;
use evolution_evolve::EditBudgetSchedule;
use evolution_harness::{
    Budget, EvolutionReport, InProcessRunner, KernelProposer, LoopConfig, LoopContext, LoopError,
    NoEvents, PromptTemplates, Workspace, run_evolution,
};
use evolution_llm_cassette::{LLM_JOURNAL_FILE, LlmJournal, cassette_key};
use evolution_runlog_sqlite::SqliteRunLog;
use evolution_store_fs::{FileCheckpoint, FsStore, FsVersionedStore};
use evolution_testkit::ScriptedLlm;
use evolution_types::{
    ChatMessage, ChatOptions, GeneratedQuestion, LlmError, LlmProvider, LlmResponse,
};
use tokio::sync::Notify;

use crate::kernel::{agent, final_documents, init_store, scripted_llm};
use crate::support::{gate, kernel_proposer, loop_config, resuming, set, summary};

/// Passes the first `live` calls to the scripted LLM; the next one never
/// returns and wakes the test, which then drops the run — a kill with that
/// call in flight.
struct Killer<'a> {
    inner: &'a ScriptedLlm,
    live: usize,
    calls: AtomicUsize,
    killed: &'a Notify,
}

#[async_trait]
impl LlmProvider for Killer<'_> {
    async fn chat(
        &self,
        messages: &[ChatMessage],
        options: &ChatOptions,
    ) -> Result<LlmResponse, LlmError> {
        if self.calls.fetch_add(1, Ordering::SeqCst) >= self.live {
            self.killed.notify_one();
            std::future::pending::<()>().await;
        }
        self.inner.chat(messages, options).await
    }
}

/// How a run ended.
enum Ended {
    Done(Box<EvolutionReport>),
    Killed,
}

/// One process's worth of a run in `dir`: the store, the SQLite log, the
/// checkpoint file and the LLM journal are reopened from disk; the LLM is
/// `llm` behind a [`Killer`] that lets `live` calls through.
async fn run(dir: &Path, llm: &ScriptedLlm, live: usize, concurrency: usize) -> Ended {
    let store = FsVersionedStore::new(FsStore::open(dir.join("store")).unwrap());
    let log = SqliteRunLog::open(dir.join("runs.sqlite")).unwrap();
    let checkpoint = FileCheckpoint::new(dir.join("loop.json"));
    let killed = Notify::new();
    let killer = Killer {
        inner: llm,
        live,
        calls: AtomicUsize::new(0),
        killed: &killed,
    };
    let journal = LlmJournal::open(&killer, dir, "scripted").await.unwrap();
    let train = set("t", 10);
    let schedule = EditBudgetSchedule::Linear { start: 3, end: 1 };
    let proposer = KernelProposer {
        diagnose: DiagnoseOptions {
            concurrency,
            ..DiagnoseOptions::default()
        },
        ..kernel_proposer(&journal, &log, train.clone(), schedule)
    };
    let runner = InProcessRunner::new(|ws: &Workspace, q: &GeneratedQuestion| agent(ws, q));
    let budget = Budget::unlimited();
    let ctx = LoopContext {
        validation: resuming(&runner, &log, &budget, &NoEvents),
        store: &store,
        proposer: &proposer,
        llm: &journal,
        checkpoint: &checkpoint,
        ledger: None,
    };
    let config = LoopConfig {
        slow_update_template: Some(PromptTemplates::default().slow_update),
        ..loop_config("j", 3, train)
    };
    let result: Option<Result<EvolutionReport, LoopError>> = tokio::select! {
        biased;
        () = killed.notified() => None,
        result = run_evolution(ctx, &config, gate("j", 11)) => Some(result),
    };
    match result {
        Some(report) => Ended::Done(Box::new(report.unwrap())),
        None => Ended::Killed,
    }
}

/// The content keys of every request the scripted LLM received, with how
/// often each came.
fn request_counts(llm: &ScriptedLlm) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for r in llm.requests() {
        *counts
            .entry(cassette_key("scripted", &r.messages, &r.options))
            .or_insert(0) += 1;
    }
    counts
}

fn done(ended: Ended) -> EvolutionReport {
    match ended {
        Ended::Done(report) => *report,
        Ended::Killed => panic!("the run was killed"),
    }
}

#[tokio::test]
async fn a_journaled_run_sends_each_distinct_request_once_even_with_concurrent_judges() {
    let dir = tempfile::tempdir().unwrap();
    init_store(dir.path());
    let llm = scripted_llm();
    let report = done(run(dir.path(), &llm, usize::MAX, 8).await);
    assert_eq!(summary(&report).iter().filter(|r| r.1).count(), 2);
    let counts = request_counts(&llm);
    assert!(counts.len() > 50, "{}", counts.len());
    let repeated: Vec<_> = counts.iter().filter(|(_, n)| **n > 1).collect();
    assert!(repeated.is_empty(), "{repeated:?}");
    // Every call is in the journal, one line each.
    let journal = std::fs::read_to_string(dir.path().join(LLM_JOURNAL_FILE)).unwrap();
    assert_eq!(journal.lines().count(), counts.len());
}

#[tokio::test]
async fn a_run_killed_in_the_middle_of_a_proposal_resumes_without_repeating_llm_calls() {
    // The uninterrupted run (one judge at a time, so that a kill leaves no
    // finished-but-unjournaled call behind).
    let whole = tempfile::tempdir().unwrap();
    init_store(whole.path());
    let llm = scripted_llm();
    let expected = done(run(whole.path(), &llm, usize::MAX, 1).await);
    let expected_docs = final_documents(whole.path());
    let expected_requests = request_counts(&llm);
    let total: usize = expected_requests.values().sum();
    assert_eq!(total, expected_requests.len(), "no repeats uninterrupted");
    assert!(total > 50, "{total}");

    // Kill points across the run: early in the first diagnosis, between the
    // judges, in the first epoch's evolve calls, and in later epochs.
    for live in [1, 7, 31, total / 3, total / 2, total - 5] {
        let dir = tempfile::tempdir().unwrap();
        init_store(dir.path());
        let llm = scripted_llm();
        assert!(
            matches!(run(dir.path(), &llm, live, 1).await, Ended::Killed),
            "live {live}"
        );
        assert_eq!(llm.call_count(), live, "live {live}");
        // Killed mid-proposal: the epoch's proposals are not yet saved.
        let state =
            evolution_harness::LoopState::load(&FileCheckpoint::new(dir.path().join("loop.json")))
                .unwrap()
                .unwrap();
        assert!(state.proposals.is_none(), "live {live}: {state:?}");

        let resumed = done(run(dir.path(), &llm, usize::MAX, 1).await);
        assert_eq!(summary(&resumed), summary(&expected), "live {live}");
        assert_eq!(resumed.final_version, expected.final_version);
        assert_eq!(
            (resumed.holdout_before, resumed.holdout_after),
            (expected.holdout_before, expected.holdout_after),
            "live {live}"
        );
        assert_eq!(final_documents(dir.path()), expected_docs, "live {live}");
        // Across both processes the LLM got each distinct request exactly
        // once: the same requests as the uninterrupted run, none repeated.
        assert_eq!(request_counts(&llm), expected_requests, "live {live}");
        // The diagnosis the kill interrupted is stored once.
        let log = SqliteRunLog::open(dir.path().join("runs.sqlite")).unwrap();
        for run in log.runs().await.unwrap() {
            if run.run_id.starts_with("j_train_") {
                let n = log.diagnoses(&run.run_id).await.unwrap().len();
                assert_eq!(n, 1, "live {live}: {}", run.run_id);
            }
        }
    }
}
