//! `skill-evolve run` journals every finished LLM call in the run's
//! directory (`llm-journal.jsonl`), and a run over that directory answers
//! the calls it holds from there instead of asking the provider again.

use std::sync::atomic::Ordering;

use crate::run::{loop_config, rule_agent, run_workspace_with};
use crate::support::run_config;

#[test]
fn a_rerun_answers_finished_llm_calls_from_the_runs_journal() {
    let agent = rule_agent();
    let fake = crate::fake_llm::start_loop();
    let dir = run_workspace_with(&loop_config(&agent, &fake.base_url), 14);
    let d = dir.path();
    let run = |what: &str| {
        let out = run_config(d, &[]);
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "{what}: {stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
    };
    let first = run("first run");
    assert!(first.contains("1 candidate(s), 1 accepted"), "{first}");
    let calls = fake.calls.load(Ordering::SeqCst);
    assert!(calls > 0);
    let root = d.join(".skill-evolve/runs/demo");
    let journal = std::fs::read_to_string(root.join("llm-journal.jsonl")).unwrap();
    assert_eq!(journal.lines().count(), calls, "one line per finished call");

    // Everything of the run but the journal is lost: the run starts over,
    // makes the same requests, and the journal answers every one.
    for file in [
        "checkpoint.json",
        "runlog.sqlite",
        "report.md",
        "report.json",
    ] {
        std::fs::remove_file(root.join(file)).unwrap();
    }
    for file in ["runlog.sqlite-wal", "runlog.sqlite-shm"] {
        let _ = std::fs::remove_file(root.join(file));
    }
    std::fs::remove_dir_all(root.join("store")).unwrap();
    let second = run("second run");
    assert!(second.contains("1 candidate(s), 1 accepted"), "{second}");
    assert_eq!(fake.calls.load(Ordering::SeqCst), calls, "no call repeated");
}
