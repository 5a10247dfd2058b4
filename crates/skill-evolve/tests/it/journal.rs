//! `skill-evolve run` journals every finished LLM call in the run's
//! directory (`llm-journal.jsonl`), and a run over that directory answers
//! the calls it holds from there instead of asking the provider again.

use std::sync::atomic::Ordering;

use crate::run::{CONFIG, run_workspace_with};
use crate::support::skill_evolve;

/// The reference agent of evolution-harness, built next to this binary.
fn rule_agent() -> std::path::PathBuf {
    let bin = assert_cmd::cargo::cargo_bin("skill-evolve");
    let debug_dir = bin.parent().unwrap().to_path_buf();
    let target = debug_dir.parent().unwrap();
    let status = std::process::Command::new(env!("CARGO"))
        .args([
            "build",
            "-q",
            "-p",
            "evolution-harness",
            "--bin",
            "rule-agent",
        ])
        .env("CARGO_TARGET_DIR", target)
        .status()
        .unwrap();
    assert!(status.success());
    debug_dir.join("rule-agent")
}

#[test]
fn a_rerun_answers_finished_llm_calls_from_the_runs_journal() {
    let agent = rule_agent();
    let fake = crate::fake_llm::start_loop();
    let config = CONFIG
        .replace(
            r#"["sh", "agent.sh"]"#,
            &format!("[{:?}]", agent.display().to_string()),
        )
        .replace("max_llm_calls = 10", "max_llm_calls = 500")
        .replace("train = 0.5", "train = 0.15")
        .replace("gate = 0.5", "gate = 0.85")
        .replace("max_epochs = 2", "max_epochs = 1")
        .replace("ladder = [2, 4]", "ladder = [6, 12]")
        .replace("http://127.0.0.1:9/v1", &fake.base_url);
    let dir = run_workspace_with(&config, 14);
    let d = dir.path();
    let run = |what: &str| {
        let out = skill_evolve(d)
            .env("SKILL_EVOLVE_TEST_KEY", "k")
            .args(["run", "--config", "evolve.toml"])
            .output()
            .unwrap();
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
