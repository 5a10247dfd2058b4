//! A run killed right after each durable write of a gated candidate (the
//! test-only `SKILL_EVOLVE_FAILPOINT` hooks abort the binary there, as a
//! kill would), then the same command again. Right after the kill, the
//! store's head is the starting version or one whose accept the checkpoint
//! records; after the resume, the run ends as one never killed, the
//! checkpoint and the run log agree, the staged proposal holds exactly the
//! accepted versions, and e-LOND tested each gated candidate once.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::run::{live_config, rule_agent, run_workspace_with, with_agent};
use crate::runlogs::with_log;
use crate::support::run_config;

/// What the slow update's guidance says (the fake loop LLM's reply).
const GUIDANCE: &str = "Keep the qa rule";

/// Two epochs of the reference agent against the fake loop LLM, 40 qa
/// questions (6 to train on, 34 to gate): the first epoch's edit adds the
/// rule that answers them (an accept), the second epoch's slow update adds
/// guidance that changes no answer (a reject).
fn workspace(agent: &Path, base_url: &str) -> tempfile::TempDir {
    let config = with_agent(&live_config(base_url), agent)
        .replace("train = 0.5", "train = 0.15")
        .replace("gate = 0.5", "gate = 0.85")
        .replace("concurrency = 1", "mode = \"worker\"\nconcurrency = 2");
    run_workspace_with(&config, 40)
}

fn run_dir(d: &Path) -> PathBuf {
    d.join(".skill-evolve/runs/demo")
}

fn read_json(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

/// The run's checkpoint.
fn checkpoint(d: &Path) -> serde_json::Value {
    read_json(&run_dir(d).join("checkpoint.json"))
}

/// The store's manifest: its current version and every move of it.
fn manifest(d: &Path) -> serde_json::Value {
    read_json(&run_dir(d).join("store/manifest.json"))
}

/// The labels of the candidates whose accept the checkpoint records, the
/// saved decision not carried out yet included.
fn recorded_accepts(checkpoint: &serde_json::Value) -> BTreeSet<String> {
    let records = checkpoint["records"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    records
        .iter()
        .chain(
            checkpoint["pending"]["record"]
                .as_object()
                .map(|_| &checkpoint["pending"]["record"]),
        )
        .filter(|r| r["accepted"] == true)
        .map(|r| r["candidate"].as_str().unwrap().to_owned())
        .collect()
}

/// The store's head is the version the run started from, or one written by
/// an accept the checkpoint records.
fn assert_head_recorded(d: &Path, point: &str) {
    let manifest = manifest(d);
    let current = manifest["current"].as_str().unwrap();
    let entry = manifest["history"]
        .as_array()
        .unwrap()
        .iter()
        .rfind(|h| h["version"] == current)
        .unwrap();
    if entry["kind"] == "init" {
        return;
    }
    let message = entry["message"].as_str().unwrap();
    let accepts = recorded_accepts(&checkpoint(d));
    assert!(
        accepts
            .iter()
            .any(|label| message.starts_with(&format!("{label}: accept"))),
        "{point}: the head {current} ({message}) is no recorded accept: {accepts:?}"
    );
}

/// A run's records without the count of rollouts each validation ran
/// itself (a resumed validation runs fewer: it reuses recorded ones).
fn decisions(records: &serde_json::Value) -> serde_json::Value {
    let mut records = records.clone();
    for r in records.as_array_mut().unwrap() {
        if let Some(v) = r["validation"].as_object_mut() {
            v.remove("rollouts");
        }
    }
    records
}

/// Every evolution record of the run log: `(target file, result version)`.
fn logged_evolutions(d: &Path) -> Vec<(String, Option<String>)> {
    with_log(&run_dir(d).join("runlog.sqlite"), async |log| {
        let mut out = Vec::new();
        for run in log.runs().await.unwrap() {
            for result in log.evolutions(&run.run_id).await.unwrap() {
                for r in result.records {
                    out.push((r.target_file.clone(), r.result_version.clone()));
                }
            }
        }
        out.sort();
        out
    })
}

/// What the finished run `d` holds, checked against itself and against the
/// reference run never killed (`reference`, a checkpoint).
fn assert_consistent(d: &Path, reference: &serde_json::Value, point: &str) {
    let cp = checkpoint(d);
    assert!(cp["pending"].is_null(), "{point}: {}", cp["pending"]);
    let records = cp["records"].as_array().unwrap();
    assert_eq!(
        decisions(&cp["records"]),
        decisions(&reference["records"]),
        "{point}: other decisions than the run never killed"
    );
    let accepted: Vec<&serde_json::Value> =
        records.iter().filter(|r| r["accepted"] == true).collect();
    let rejected = records.iter().filter(|r| r["accepted"] == false).count();
    assert!(!accepted.is_empty() && rejected > 0, "{point}: {records:?}");

    // The store's head is the last recorded accept's version, written once.
    let manifest = manifest(d);
    let head = manifest["current"].as_str().unwrap();
    let last = accepted.last().unwrap();
    assert_eq!(last["new_version"], head, "{point}");
    let advances: Vec<&str> = manifest["history"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|h| h["kind"] == "advance")
        .map(|h| h["message"].as_str().unwrap())
        .collect();
    assert_eq!(advances.len(), accepted.len(), "{point}: {advances:?}");
    for (message, record) in advances.iter().zip(&accepted) {
        let label = record["candidate"].as_str().unwrap();
        assert!(
            message.starts_with(&format!("{label}: accept")),
            "{point}: {message}"
        );
    }

    // The run log holds one evolution record per gate record, with the
    // version its accept wrote.
    let mut expected: Vec<(String, Option<String>)> = records
        .iter()
        .map(|r| {
            (
                "default-strategy.md".to_owned(),
                r["new_version"].as_str().map(str::to_owned),
            )
        })
        .collect();
    expected.sort();
    assert_eq!(logged_evolutions(d), expected, "{point}");

    // Staged: exactly the accepted versions.
    let staged = read_json(&run_dir(d).join("staged/proposal.json"));
    assert_eq!(staged["final_version"], head, "{point}");
    let staged_accepts: BTreeSet<&str> = staged["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["accepted"] == true)
        .map(|e| e["candidate"].as_str().unwrap())
        .collect();
    let accepted_labels: BTreeSet<&str> = accepted
        .iter()
        .map(|r| r["candidate"].as_str().unwrap())
        .collect();
    assert_eq!(staged_accepts, accepted_labels, "{point}");
    let documents = staged["documents"].as_array().unwrap();
    assert_eq!(documents.len(), 1, "{point}: {documents:?}");
    let candidates: BTreeSet<&str> = documents[0]["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    assert_eq!(candidates, accepted_labels, "{point}");
    let text =
        std::fs::read_to_string(run_dir(d).join("staged/files/default-strategy.md")).unwrap();
    let at_head = std::fs::read_to_string(
        run_dir(d).join(format!("store/versions/{head}/default-strategy.md")),
    )
    .unwrap();
    assert_eq!(text, at_head, "{point}");
    assert!(text.contains("RULE qa => yes"), "{point}: {text}");
    assert!(
        !text.contains(GUIDANCE),
        "{point}: a rejected candidate was staged: {text}"
    );

    // e-LOND tested each gated candidate once, as in the run never killed.
    let history = cp["gatekeeper"]["fdr"]["history"].as_array().unwrap();
    let tested = records.iter().filter(|r| !r["fdr"].is_null()).count();
    assert_eq!(history.len(), tested, "{point}");
    assert_eq!(tested, records.len(), "{point}");
    assert_eq!(
        cp["gatekeeper"]["fdr"], reference["gatekeeper"]["fdr"],
        "{point}"
    );
}

/// Runs `d` killed at `point` (`<name>` or `<name>:<n>`), checks the state
/// it left, runs it again to its end and checks the whole run.
fn kill_and_resume(d: &Path, point: &str, reference: &serde_json::Value) {
    let name = point.split(':').next().unwrap();
    let out = crate::support::skill_evolve(d)
        .env("SKILL_EVOLVE_TEST_KEY", "k")
        .env("SKILL_EVOLVE_FAILPOINT", point)
        .args(["run", "--config", "evolve.toml"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{point}: not killed\n{stderr}");
    assert!(
        stderr.contains(&format!("failpoint {name} reached")),
        "{point}: killed elsewhere\n{stderr}"
    );
    assert_head_recorded(d, point);
    if name == "version-written" {
        // The version is on disk, and the head has not moved to it.
        let current = manifest(d)["current"].as_str().unwrap().to_owned();
        assert_eq!(current, "v000001", "{point}");
        assert!(
            run_dir(d).join("store/versions/v000002").is_dir(),
            "{point}"
        );
    }
    let out = run_config(d, &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{point}: {stdout}\n{stderr}");
    assert!(stderr.contains("resuming from"), "{point}: {stderr}");
    assert!(
        stdout.contains("2 candidate(s), 1 accepted"),
        "{point}: {stdout}"
    );
    assert_consistent(d, reference, point);
}

/// The run never killed: its checkpoint, checked like a resumed one's.
fn reference(agent: &Path, base_url: &str) -> serde_json::Value {
    let dir = workspace(agent, base_url);
    let d = dir.path();
    let out = run_config(d, &[]);
    assert!(out.status.success(), "{out:?}");
    let cp = checkpoint(d);
    assert_consistent(d, &cp, "never killed");
    cp
}

fn kill_at_each(points: &[&str]) {
    let agent = rule_agent();
    let fake = crate::fake_llm::start_loop();
    let reference = reference(&agent, &fake.base_url);
    for point in points {
        let dir = workspace(&agent, &fake.base_url);
        kill_and_resume(dir.path(), point, &reference);
    }
}

#[test]
fn a_run_killed_after_each_write_of_an_accepted_candidate_resumes_to_the_same_run() {
    kill_at_each(&[
        "gate-decided:1",
        "version-written:1",
        "head-moved:1",
        "evolution-recorded:1",
        "gate-closed:1",
    ]);
}

#[test]
fn a_run_killed_after_each_write_of_a_rejected_candidate_or_its_staging_resumes_to_the_same_run() {
    kill_at_each(&[
        "gate-decided:2",
        "evolution-recorded:2",
        "gate-closed:2",
        "staged:1",
    ]);
}
