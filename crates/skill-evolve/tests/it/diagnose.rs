//! `skill-evolve diagnose`: rule metrics of a run stored in SQLite, and the
//! full diagnosis with the judges (recorded against a fake server, replayed).

use std::sync::atomic::Ordering;

use evolution_types::Prediction;
use serde_json::json;

use crate::fake_llm::start_judges;
use crate::runlogs::{prediction, step, write_run};
use crate::support::{assert_one_line_error, diagnose_rules, skill_evolve, snapshot};

fn make_log(path: &std::path::Path) {
    let p = |id: &str, correct: bool, conf: f64| Prediction {
        answer: "a".to_owned(),
        answer_confidence: Some(conf),
        ..prediction(id, "a", correct)
    };
    write_run(
        path,
        "r1",
        vec![p("q1", true, 0.9), p("q2", false, 0.95)],
        vec![
            step("q2", 1, "search", json!({"query": "release notes"})),
            step("q2", 2, "search", json!({"query": "release notes"})),
        ],
    );
}

#[test]
fn rule_metrics_as_markdown_and_json() {
    let dir = tempfile::tempdir().unwrap();
    make_log(&dir.path().join("run.sqlite"));
    let out = diagnose_rules(dir.path(), "r1")
        .arg("--json")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["n_questions"], 2);
    assert_eq!(report["accuracy"], 0.5);
    let q2 = &report["questions"][1];
    assert_eq!(q2["question_id"], "q2");
    assert_eq!(q2["trace_steps"], 2);
    assert_eq!(q2["confidence_calibration"], "high_conf_wrong");
    assert_eq!(q2["tool_usage"]["search"], 2);
    assert_eq!(q2["budget_usage"], 0.2);

    let out = diagnose_rules(dir.path(), "r1").output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("# Diagnosis of run `r1`"), "{text}");
    assert!(text.contains("2 questions, accuracy 50.0%"), "{text}");
    assert!(
        text.contains("| q2 | no | 0.95 | high_conf_wrong |"),
        "{text}"
    );

    let out = diagnose_rules(dir.path(), "nope").output().unwrap();
    assert_one_line_error(&out, "run.sqlite: no run with id \"nope\"");
    // The valid ids are named.
    assert_one_line_error(&out, "the run log holds 1 run(s): \"r1\"");
}

const QUESTIONS: &str = r#"{"question_id": "q1", "task_type": "qa", "video_id": "v1", "question": "Which release fixed the crash?", "answer": "a"}
{"question_id": "q2", "task_type": "qa", "video_id": "v1", "question": "What changed first?", "answer": "b"}
"#;

/// A run with a wrong answer whose trace visits and searches the source.
fn make_judged_log(path: &std::path::Path) {
    let p = |id: &str, answer: &str, correct: bool| Prediction {
        video_id: "v1".to_owned(),
        ..prediction(id, answer, correct)
    };
    let mut visit = step("q2", 1, "view_node", json!({"node_id": "n1"}));
    visit.tool_output = "node n1: the crash fix".to_owned();
    let mut search = step("q2", 2, "search_similar", json!({"query": "crash"}));
    search.tool_output = "n1".to_owned();
    write_run(
        path,
        "r1",
        vec![p("q1", "a", true), p("q2", "c", false)],
        vec![visit, search],
    );
}

pub(crate) fn judged_workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    make_judged_log(&d.join("run.sqlite"));
    std::fs::write(d.join("questions.jsonl"), QUESTIONS).unwrap();
    std::fs::create_dir_all(d.join("skills")).unwrap();
    std::fs::write(
        d.join("skills/default-strategy.md"),
        "1. List every merged change.\n2. Lead with user-visible fixes.\n",
    )
    .unwrap();
    std::fs::write(
        d.join("tree.json"),
        r#"{"v1": {"id": "root", "children": [{"id": "n1"}, {"id": "n2"}]}}"#,
    )
    .unwrap();
    // The trace's tools are the video-QA agent's: its built-in profile names them.
    std::fs::write(
        d.join("skill-evolve.toml"),
        "[profile]\npreset = \"video-qa\"\n",
    )
    .unwrap();
    dir
}

pub(crate) const INPUTS: [&str; 10] = [
    "diagnose",
    "--runlog",
    "run.sqlite",
    "--run-id",
    "r1",
    "--questions",
    "questions.jsonl",
    "--skills",
    "skills",
    "--tree",
];

#[test]
fn judges_record_then_replay_the_same_diagnosis() {
    let dir = judged_workspace();
    let d = dir.path();
    let fake = start_judges();
    let live = skill_evolve(d)
        .args(INPUTS)
        .args(["tree.json", "--json", "--concurrency", "1"])
        .args(fake.provider_args())
        .args(["--record", "diag.cassette"])
        .output()
        .unwrap();
    assert!(live.status.success(), "{live:?}");
    // q1 (right): adherence, confirmation bias, evidence, missed nodes.
    // q2 (wrong): the same, two spans, then defect-vs-lapse (and a reasoning
    // sub-type when attributed to reasoning).
    let calls = fake.calls.load(Ordering::SeqCst);
    assert!((10..=11).contains(&calls), "{calls} calls");
    let report: serde_json::Value = serde_json::from_slice(&live.stdout).unwrap();
    assert_eq!(report["run_id"], "r1");
    assert_eq!(report["n_diagnosed"], 2);
    assert_eq!(report["n_degraded"], 0);
    let q2 = &report["question_metrics"][1];
    assert_eq!(q2["question_id"], "q2");
    assert_eq!(q2["adherence_rate"], 0.5);
    assert_eq!(q2["confirmation_bias"], true);
    assert_eq!(q2["evidence_sufficient"], true);
    assert_eq!(q2["missed_nodes"], json!(["n2"]));
    assert_eq!(q2["span_metrics"].as_array().unwrap().len(), 2);
    let attribution = &report["attributions"][0];
    assert_eq!(attribution["question_id"], "q2");
    assert_eq!(attribution["cause_category"], "defect");
    assert_eq!(report["attributions"].as_array().unwrap().len(), 1);
    assert_eq!(
        report["skill_packs"][0]["target_file"],
        "default-strategy.md"
    );

    // The cassette replays the same diagnosis with no server, as markdown too.
    let replayed = skill_evolve(d)
        .args(INPUTS)
        .args([
            "tree.json",
            "--json",
            "--provider",
            "replay",
            "--cassette",
            "diag.cassette",
        ])
        .output()
        .unwrap();
    assert!(replayed.status.success(), "{replayed:?}");
    assert_eq!(replayed.stdout, live.stdout);
    // Not on a terminal: no progress bar, only the line naming the run and the model.
    let stderr = String::from_utf8(replayed.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr:?}");
    assert!(
        stderr.starts_with("diagnosing run \"r1\" with "),
        "{stderr:?}"
    );
    // `--quiet`: nothing at all on stderr, the same diagnosis on stdout.
    let quiet = skill_evolve(d)
        .args(INPUTS)
        .args(["tree.json", "--json", "-q", "--provider", "replay"])
        .args(["--cassette", "diag.cassette"])
        .output()
        .unwrap();
    assert!(quiet.status.success(), "{quiet:?}");
    assert_eq!(quiet.stdout, live.stdout);
    assert!(quiet.stderr.is_empty(), "{quiet:?}");
    let text = skill_evolve(d)
        .args(INPUTS)
        .args(["tree.json", "--cassette", "diag.cassette"])
        .output()
        .unwrap();
    assert!(text.status.success(), "{text:?}");
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(text.starts_with("# Diagnosis of run `r1`"), "{text}");
    assert!(
        text.contains("diagnosed: 2, correct: 1 (accuracy 50.0%)"),
        "{text}"
    );
    assert!(
        text.contains("| q2 | no | high_conf_wrong | 0.50 | yes | yes | 1 | 2 | no |"),
        "{text}"
    );
    assert!(
        text.contains("- skill `default-strategy.md` (task type `qa`)"),
        "{text}"
    );
}

#[test]
fn bad_inputs_of_the_judged_diagnosis_exit_2_before_any_call() {
    let dir = judged_workspace();
    let d = dir.path();
    std::fs::write(d.join("bad.jsonl"), "{\"question_id\": \"q1\"}\n{oops\n").unwrap();
    std::fs::write(d.join("bad-tree.json"), "[1, 2]").unwrap();
    // The run log is opened read-and-write by SQLite; every other file must stay as it was.
    let files = || -> Vec<_> {
        snapshot(d)
            .into_iter()
            .filter(|(name, _)| !name.starts_with("run.sqlite"))
            .collect()
    };
    let before = files();
    let fake = start_judges();
    let llm = fake.provider_args();
    let run = |extra: &[&str]| {
        skill_evolve(d)
            .args(["diagnose", "--runlog", "run.sqlite"])
            .args(extra)
            .args(llm)
            .output()
            .unwrap()
    };
    assert_one_line_error(
        &run(&["--run-id", "r1", "--questions", "bad.jsonl"]),
        "bad.jsonl:2: not a question",
    );
    assert_one_line_error(
        &run(&["--run-id", "r1", "--tree", "bad-tree.json"]),
        "bad-tree.json:1: not a JSON object",
    );
    assert_one_line_error(
        &run(&["--run-id", "r1", "--skills", "nowhere"]),
        "nowhere: cannot read",
    );
    assert_one_line_error(&run(&["--run-id", "nope"]), "no run with id \"nope\"");
    assert_one_line_error(
        &run(&[
            "--run-id",
            "r1",
            "--no-llm",
            "--questions",
            "questions.jsonl",
        ]),
        "cannot be used with",
    );
    assert_eq!(fake.calls.load(Ordering::SeqCst), 0);
    assert_eq!(files(), before);
}
