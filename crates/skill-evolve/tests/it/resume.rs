//! Ctrl-C in the middle of the shipped offline demo, then the same command
//! again: the store was at a consistent version in between, the resumed run
//! ends with the verdicts and version of an uninterrupted run, and no
//! rollout the run log had finished is asked of the agent again. A run whose
//! question set or split changed in between does not resume: it says what
//! changed and names `--fresh`, before any rollout.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use evolution_types::RunLog as _;

use crate::run::rule_agent;
use crate::runlogs::with_log;
use crate::support::{assert_one_line_error, history_json, skill_evolve, snapshot};
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
    // The report's usage counts both legs: more rollouts than the resumed leg asked for.
    let asked_after = calls(d).len() - asked_before.len();
    let counted = resumed["usage"]["rollouts"].as_u64().unwrap();
    assert!(
        counted > asked_after as u64,
        "{counted} rollouts counted, {asked_after} asked after the resume"
    );
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

/// The demo (its agent slowed down) interrupted once the agent has answered a dozen
/// questions, inside the gate's validation; the checkpoint says where it was.
#[cfg(unix)]
fn interrupted_demo(agent: &Path) -> tempfile::TempDir {
    let dir = demo_workspace(agent, "0.15");
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
    assert!(d.join(".skill-evolve/runs/demo/checkpoint.json").is_file());
    assert!(!d.join(".skill-evolve/runs/demo/report.json").exists());
    dir
}

/// The same command refuses to resume the run of `d`, its dry run too: exit code 2, one
/// line containing `needle` and naming `--fresh`, no question asked of the agent and
/// nothing written.
#[cfg(unix)]
fn assert_resume_refused(d: &Path, needle: &str) {
    let before = snapshot(d);
    for extra in [&["--dry-run"][..], &[]] {
        let out = skill_evolve(d)
            .args(["run", "--config", "evolve.toml"])
            .args(extra)
            .output()
            .unwrap();
        assert_one_line_error(&out, needle);
        assert_one_line_error(&out, "start over with --fresh, or use another run name");
        assert_eq!(snapshot(d), before, "{extra:?} wrote something");
    }
}

#[cfg(unix)]
#[test]
fn a_changed_question_set_is_not_resumed_and_the_unchanged_one_is() {
    let dir = interrupted_demo(&rule_agent());
    let d = dir.path();
    let questions = std::fs::read_to_string(d.join("questions.jsonl")).unwrap();
    // One reference answer corrected between the interrupt and the rerun.
    let corrected = questions.replacen("\"answer\": \"yes\"", "\"answer\": \"no\"", 1);
    assert_ne!(corrected, questions);
    std::fs::write(d.join("questions.jsonl"), &corrected).unwrap();
    assert_resume_refused(
        d,
        "error: run \"demo\" cannot resume: the question set (questions.jsonl) changed since \
         it started; start over with --fresh, or use another run name",
    );

    // Back as it was: the same command resumes and finishes as the demo does.
    std::fs::write(d.join("questions.jsonl"), &questions).unwrap();
    let out = run_demo(d);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{out:?}");
    assert!(stderr.contains("resuming from"), "{stderr}");
    assert_eq!(report_json(d)["final_version"], "v000002");
}

#[cfg(unix)]
#[test]
fn a_changed_split_is_not_resumed() {
    let dir = interrupted_demo(&rule_agent());
    let d = dir.path();
    let config = std::fs::read_to_string(d.join("evolve.toml")).unwrap();
    let reseeded = config.replace("seed = 2\n", "seed = 5\n");
    assert_ne!(reseeded, config);
    std::fs::write(d.join("evolve.toml"), &reseeded).unwrap();
    assert_resume_refused(
        d,
        "run \"demo\" cannot resume: the question split ([questions] seed) changed since it \
         started",
    );
    let reshared = config
        .replace("train = 0.1\n", "train = 0.2\n")
        .replace("holdout = 0.2\n", "holdout = 0.1\n");
    assert_ne!(reshared, config);
    std::fs::write(d.join("evolve.toml"), &reshared).unwrap();
    assert_resume_refused(
        d,
        "the question split ([questions] holdout, [questions] train) changed since it started",
    );
    // With --fresh the same configuration is accepted: the run would start over.
    let fresh = skill_evolve(d)
        .args(["run", "--config", "evolve.toml", "--fresh", "--dry-run"])
        .output()
        .unwrap();
    assert!(fresh.status.success(), "{fresh:?}");
    assert!(String::from_utf8_lossy(&fresh.stdout).contains("the run would start over"));
}
