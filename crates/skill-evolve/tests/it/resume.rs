//! Ctrl-C in the middle of the shipped offline demo, then the same command
//! again: the store was at a consistent version in between, the resumed run
//! ends with the verdicts and version of an uninterrupted run, and no
//! rollout the run log had finished is asked of the agent again.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use evolution_types::RunLog as _;

use crate::run::rule_agent;
use crate::runlogs::with_log;
use crate::support::{history_json, skill_evolve};
#[cfg(unix)]
use crate::support::{interrupt, spawn_run};

/// The shipped demo in a fresh folder, its agent wrapped by a script that
/// logs every request to `calls.log` and waits `delay` before handing it to
/// the reference agent (in worker mode, like the demo), so that an
/// interrupt lands mid-run.
fn demo_workspace(agent: &Path, delay: &str) -> tempfile::TempDir {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/rule-agent-demo");
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir_all(d.join("skills")).unwrap();
    for name in [
        "questions.jsonl",
        "demo.cassette",
        "skills/default-strategy.md",
    ] {
        std::fs::copy(example.join(name), d.join(name)).unwrap();
    }
    let script = d.join("slow-agent.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nwhile IFS= read -r line; do\n  printf '%s\\n' \"$line\" >> '{}'\n  \
             sleep {delay}\n  printf '%s\\n' \"$line\"\ndone | '{}'\n",
            d.join("calls.log").display(),
            agent.display()
        ),
    )
    .unwrap();
    let config = std::fs::read_to_string(example.join("evolve.toml")).unwrap();
    let wrapped = config.replace(
        r#"command = ["rule-agent"]"#,
        &format!("command = [\"sh\", {:?}]", script.display().to_string()),
    );
    assert_ne!(wrapped, config);
    std::fs::write(d.join("evolve.toml"), wrapped).unwrap();
    dir
}

fn run_demo(d: &Path) -> Output {
    skill_evolve(d)
        .args(["run", "--config", "evolve.toml"])
        .output()
        .unwrap()
}

/// `(run id, question id)` of every request the agent received, in order.
fn calls(d: &Path) -> Vec<(String, String)> {
    std::fs::read_to_string(d.join("calls.log"))
        .unwrap_or_default()
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            (
                v["run_id"].as_str().unwrap().to_owned(),
                v["question"]["question_id"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// Every rollout the run log holds a prediction for.
fn finished_rollouts(runlog: PathBuf) -> BTreeSet<(String, String)> {
    with_log(&runlog, async |log| {
        let mut out = BTreeSet::new();
        for run in log.runs().await.unwrap() {
            for p in log.get_predictions(&run.run_id, None).await.unwrap() {
                out.insert((run.run_id.clone(), p.question_id));
            }
        }
        out
    })
}

fn report_json(d: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(d.join(".skill-evolve/runs/demo/report.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// The history of the default skill in the run's store.
pub(crate) fn history(d: &Path) -> serde_json::Value {
    history_json(
        d,
        "skills/default-strategy.md",
        Some(".skill-evolve/runs/demo/store"),
    )
}

#[cfg(unix)]
#[test]
fn an_interrupted_demo_resumes_to_the_uninterrupted_result() {
    let agent = rule_agent();

    // The reference: the same demo, never interrupted.
    let reference = demo_workspace(&agent, "0");
    let r = reference.path();
    let out = run_demo(r);
    assert!(out.status.success(), "{out:?}");
    let expected = report_json(r);
    let reference_calls = calls(r);
    assert_eq!(expected["final_version"], "v000002", "{expected}");

    // Interrupt once the agent has answered a dozen questions: past the
    // training and holdout runs, inside the gate's validation.
    let dir = demo_workspace(&agent, "0.15");
    let d = dir.path();
    let child = spawn_run(d);
    let started = Instant::now();
    while calls(d).len() < 12 {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "the agent never got 12 questions"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    interrupt(child);
    assert!(!d.join(".skill-evolve/runs/demo/report.json").exists());

    // In between: the store is at its first version, intact.
    let between = history(d);
    assert_eq!(between["current"], "v000001", "{between}");
    let asked_before = calls(d);
    assert!(
        asked_before.len() < reference_calls.len(),
        "interrupted after the run ended: {} of {} questions",
        asked_before.len(),
        reference_calls.len()
    );
    let finished = finished_rollouts(d.join(".skill-evolve/runs/demo/runlog.sqlite"));
    assert!(
        finished.iter().any(|(run, _)| run.contains("_gate_")),
        "interrupted before the gate recorded a block: {finished:?}"
    );

    // The same command again.
    let out = run_demo(d);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stderr.contains("resuming from"), "{stderr}");
    let mut resumed = report_json(d);
    let mut expected = expected;
    // A validation counts the rollouts it ran itself: the resumed one ran
    // fewer, since it reused those recorded before the interrupt.
    let ran = |report: &mut serde_json::Value| {
        report["records"][0]["validation"]
            .as_object_mut()
            .and_then(|v| v.remove("rollouts"))
            .and_then(|n| n.as_u64())
            .unwrap()
    };
    let (ran_before, ran_after) = (ran(&mut expected), ran(&mut resumed));
    assert!(ran_after < ran_before, "{ran_after} vs {ran_before}");
    for key in [
        "records",
        "final_version",
        "stop_reason",
        "holdout_before",
        "holdout_after",
    ] {
        assert_eq!(resumed[key], expected[key], "{key}");
    }
    let after = history(d);
    assert_eq!(after["current"], "v000002", "{after}");

    // No rollout the run log had finished was asked again; the ones asked
    // but not yet recorded at the interrupt (in flight, or in a gate block
    // still open) were asked once more, and nothing else was.
    let asked = calls(d);
    for rollout in &finished {
        let n = asked.iter().filter(|c| *c == rollout).count();
        assert_eq!(n, 1, "{rollout:?} asked {n} times");
    }
    let unique: BTreeSet<_> = asked.iter().cloned().collect();
    assert_eq!(
        unique,
        reference_calls.iter().cloned().collect::<BTreeSet<_>>(),
        "the resumed run asked other questions than the reference"
    );
    let unrecorded = asked_before
        .iter()
        .filter(|c| !finished.contains(*c))
        .count();
    assert_eq!(
        asked.len(),
        reference_calls.len() + unrecorded,
        "{} requests for {} rollouts, {unrecorded} unrecorded at the interrupt",
        asked.len(),
        reference_calls.len()
    );
}
