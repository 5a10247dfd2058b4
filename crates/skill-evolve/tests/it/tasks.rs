//! Mined tasks end to end through the binary: Claude Code sessions written here → `harvest
//! --tasks` → a question set with checks, refused by `run` until reviewed → `run` with the
//! reference agent and the fake LLM → a staged proposal → `adopt --yes` writes the skill.
//! Also: redaction in the mined file, and the question-set problems `run` refuses.

use std::path::Path;

use evolution_types::RunLog as _;
use serde_json::{Value, json};

use crate::run::{loop_config, rule_agent, run_workspace, run_workspace_with};
use crate::support::{assert_one_line_error, run_config, skill_evolve, snapshot};

/// Ticket categories: one recurring request each.
const CATEGORIES: [&str; 14] = [
    "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet",
    "kilo", "lima", "mike", "november",
];

/// A Claude Code transcript line.
fn record(session: &str, at: &str, kind: &str, content: Value) -> String {
    let role = if kind == "user" { "user" } else { "assistant" };
    let mut message = json!({"role": role, "content": content});
    if kind == "assistant" {
        message["id"] = json!(format!("msg-{session}-{at}"));
    }
    json!({"type": kind, "sessionId": session, "cwd": "/work/support", "timestamp": at,
           "message": message})
    .to_string()
}

/// Writes one session: a request, the `qa` skill loaded, and a final answer.
fn write_session(folder: &Path, session: &str, day: u32, request: &str, answer: &str) {
    write_session_with(folder, session, day, request, answer, "qa");
}

/// Writes one session: a request, `skill` loaded, and a final answer.
fn write_session_with(
    folder: &Path,
    session: &str,
    day: u32,
    request: &str,
    answer: &str,
    skill: &str,
) {
    let at = |s: u32| format!("2026-03-{day:02}T09:00:{s:02}.000Z");
    let lines = [
        record(session, &at(0), "user", json!(request)),
        record(
            session,
            &at(1),
            "assistant",
            json!([{"type": "tool_use", "id": format!("t-{session}"), "name": "Skill",
                    "input": {"skill": skill}}]),
        ),
        record(
            session,
            &at(2),
            "user",
            json!([{"type": "tool_result", "tool_use_id": format!("t-{session}"),
                    "content": "loaded"}]),
        ),
        record(
            session,
            &at(3),
            "assistant",
            json!([{"type": "text", "text": answer}]),
        ),
    ];
    std::fs::write(
        folder.join(format!("{session}.jsonl")),
        lines.join("\n") + "\n",
    )
    .unwrap();
}

/// Two sessions per category (the request's ticket number differs), plus one request seen
/// once, which is not recurring. One request carries a secret.
fn write_sessions(d: &Path) -> std::path::PathBuf {
    let folder = d.join("sessions/-work-support");
    std::fs::create_dir_all(&folder).unwrap();
    for (i, category) in CATEGORIES.iter().enumerate() {
        for (k, day) in [(0u32, 1u32), (1, 2)] {
            let n = i as u32 * 10 + k;
            let request = format!("Is a {category} ticket  #{n} refundable?");
            write_session(&folder, &format!("s-{category}-{k}"), day, &request, "yes");
        }
    }
    write_session(
        &folder,
        "s-once",
        3,
        "Rotate the key sk-proj-Q2x9LmN4pR7tV1wY3zA5bC8dE0fG6hJ please",
        "done",
    );
    write_session(
        &folder,
        "s-once-2",
        4,
        "rotate the KEY sk-proj-Q2x9LmN4pR7tV1wY3zA5bC8dE0fG6hJ please",
        "a long answer\nover two lines",
    );
    d.join("sessions")
}

fn harvest_tasks(d: &Path) -> std::process::Output {
    skill_evolve(d)
        .args([
            "harvest",
            "--source",
            "claude-code",
            "--from",
            "sessions",
            "--tasks",
            "tasks.jsonl",
        ])
        .output()
        .unwrap()
}

fn read_lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn mined_tasks_are_reviewed_run_behind_the_gate_and_adopted() {
    let fake = crate::fake_llm::start_loop();
    let config = loop_config(&rule_agent(), &fake.base_url)
        .replace("file = \"questions.jsonl\"", "file = \"tasks.jsonl\"");
    let dir = run_workspace_with(&config, 1);
    let d = dir.path();
    write_sessions(d);

    let out = harvest_tasks(d);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert!(
        stdout.contains("tasks: 15 recurring (seen in at least 2 sessions)"),
        "{stdout}"
    );
    let tasks = read_lines(&d.join("tasks.jsonl"));
    assert_eq!(tasks.len(), 15);
    let alpha = tasks
        .iter()
        .find(|t| t["question"] == "Is a alpha ticket  #1 refundable?")
        .expect("the alpha task, with its latest request");
    assert_eq!(alpha["task_type"], "qa");
    assert_eq!(alpha["sessions"], json!(["s-alpha-0", "s-alpha-1"]));
    assert_eq!(alpha["check"], json!({"kind": "contains", "value": "yes"}));
    assert_eq!(alpha["reviewed"], false);
    // The key request recurs too; its secret is redacted and its answer makes a rubric.
    let text = std::fs::read_to_string(d.join("tasks.jsonl")).unwrap();
    assert!(!text.contains("Q2x9LmN4pR7tV1wY3zA5bC8dE0fG6hJ"), "{text}");
    let rotate = tasks
        .iter()
        .find(|t| t["question"].as_str().unwrap().contains("[REDACTED:"))
        .expect("the rotate task");
    assert_eq!(rotate["check"]["kind"], "rubric");

    // Unreviewed: refused before any rollout, naming the file, the count and the first id.
    let before = snapshot(d);
    let refused = run_config(d, &[]);
    assert_one_line_error(&refused, "tasks.jsonl");
    assert_one_line_error(&refused, "15 question(s) are marked \"reviewed\": false");
    assert_one_line_error(&refused, &format!("(first: {})", tasks[0]["question_id"]));
    assert_eq!(snapshot(d), before);
    // The rubric is accepted: the run's LLM judges it.
    let rubric = run_config(d, &["--dry-run", "--allow-unreviewed"]);
    assert!(rubric.status.success(), "{rubric:?}");
    assert!(
        String::from_utf8_lossy(&rubric.stdout).contains("rubric checks: 1 question(s)"),
        "{rubric:?}"
    );
    // The judge's calls are in the estimate: the same questions, the rubric turned into a
    // plain check, plan fewer LLM calls.
    let plain: String = tasks
        .iter()
        .map(|t| {
            let mut t = t.clone();
            if t["check"]["kind"] == "rubric" {
                t["check"] = json!({"kind": "contains", "value": "rotated"});
            }
            t.to_string() + "\n"
        })
        .collect();
    std::fs::write(d.join("tasks.jsonl"), &plain).unwrap();
    let unjudged = run_config(d, &["--dry-run", "--allow-unreviewed"]);
    assert!(unjudged.status.success(), "{unjudged:?}");
    assert!(
        estimated_llm_calls(&rubric) > estimated_llm_calls(&unjudged),
        "{rubric:?} {unjudged:?}"
    );

    // The review: the rotate task is dropped (a rubric is tested on its own below), the first task's check is left unreviewed
    // (allowed below), and every other task is marked reviewed.
    let reviewed: String = tasks
        .iter()
        .filter(|t| t["check"]["kind"] != "rubric")
        .enumerate()
        .map(|(i, t)| {
            let mut t = t.clone();
            t["reviewed"] = json!(i != 0);
            t.to_string() + "\n"
        })
        .collect();
    std::fs::write(d.join("tasks.jsonl"), &reviewed).unwrap();
    assert_one_line_error(&run_config(d, &["--dry-run"]), "1 question(s) are marked");
    let dry = run_config(d, &["--dry-run", "--allow-unreviewed"]);
    assert!(dry.status.success(), "{dry:?}");
    assert!(
        String::from_utf8_lossy(&dry.stdout).contains(
            "unreviewed: 1 question(s) marked \"reviewed\": false run anyway (--allow-unreviewed)"
        ),
        "{dry:?}"
    );

    let out = run_config(d, &["--allow-unreviewed"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert!(stdout.contains("1 candidate(s), 1 accepted"), "{stdout}");
    let report = std::fs::read_to_string(d.join(".skill-evolve/runs/demo/report.md")).unwrap();
    assert!(
        report.contains("Unreviewed questions: 1 question(s)"),
        "{report}"
    );
    let staged = d.join(".skill-evolve/runs/demo/staged/files/default-strategy.md");
    let staged = std::fs::read_to_string(staged).unwrap();
    assert!(staged.contains("RULE qa => yes"), "{staged}");

    let adopted = skill_evolve(d)
        .args(["adopt", "demo", "--yes"])
        .output()
        .unwrap();
    assert!(adopted.status.success(), "{adopted:?}");
    assert_eq!(
        std::fs::read_to_string(d.join("skills/default-strategy.md")).unwrap(),
        staged
    );
}

/// A workspace of 14 qa questions for the fake LLM at `base_url`, each with a rubric check
/// and no reference answer: only the rubric says what passes.
fn rubric_workspace(base_url: &str) -> tempfile::TempDir {
    let dir = run_workspace_with(&loop_config(&rule_agent(), base_url), 14);
    let questions: String = (0..14)
        .map(|i| {
            json!({"question_id": format!("q{i}"), "task_type": "qa", "question": "?",
                   "check": {"kind": "rubric", "text": "The answer is a plain yes (RUBRIC-TEXT)."},
                   "reviewed": true})
            .to_string()
                + "\n"
        })
        .collect();
    std::fs::write(dir.path().join("questions.jsonl"), questions).unwrap();
    dir
}

#[test]
fn rubric_checks_are_judged_by_the_run_llm() {
    let fake = crate::fake_llm::start_loop_rubric();
    let dir = rubric_workspace(&fake.base_url);
    let d = dir.path();

    let finished = crate::run::run_to_end(d);
    finished.assert_summary("1 candidate(s), 1 accepted");
    let staged = d.join(".skill-evolve/runs/demo/staged/files/default-strategy.md");
    assert!(
        std::fs::read_to_string(staged)
            .unwrap()
            .contains("RULE qa => yes")
    );
    // The judge was asked, with the rubric.
    let journal =
        std::fs::read_to_string(d.join(".skill-evolve/runs/demo/llm-journal.jsonl")).unwrap();
    assert!(journal.contains("judge.rubric"), "no rubric judge call");
    assert!(journal.contains("RUBRIC-TEXT"));
}

#[test]
fn an_unreadable_rubric_verdict_is_an_infrastructure_failure_not_a_wrong_answer() {
    let fake = crate::fake_llm::start_loop_rubric_unreadable();
    let dir = rubric_workspace(&fake.base_url);
    let d = dir.path();
    let out = run_config(d, &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!stdout.contains("1 accepted"), "{stdout}");
    let predictions = crate::runlogs::with_log(
        &d.join(".skill-evolve/runs/demo/runlog.sqlite"),
        async |log| {
            let mut all = Vec::new();
            for run in log.runs().await.unwrap() {
                all.extend(log.get_predictions(&run.run_id, None).await.unwrap());
            }
            all
        },
    );
    assert!(!predictions.is_empty(), "{out:?}");
    for p in &predictions {
        assert!(!p.correct, "{p:?}");
        assert_eq!(p.stop_reason, "error", "{p:?}");
        let error = p.error.as_deref().unwrap_or_default();
        assert!(
            error.starts_with("the rubric judge gave no verdict"),
            "{error}"
        );
    }
}

#[test]
fn tasks_need_transcripts_and_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write_sessions(d);
    std::fs::create_dir_all(d.join("trajectories")).unwrap();
    assert_one_line_error(
        &skill_evolve(d)
            .args(["harvest", "--source", "dir", "--from", "trajectories"])
            .args(["--tasks", "t.jsonl"])
            .output()
            .unwrap(),
        "--tasks groups agent transcripts",
    );
    std::fs::create_dir_all(d.join("here")).unwrap();
    assert_one_line_error(
        &skill_evolve(d)
            .args(["harvest", "--source", "claude-code", "--from", "sessions"])
            .args(["--tasks", "here"])
            .output()
            .unwrap(),
        "--tasks must name a file",
    );
    // Three sessions per task at least: only the categories' pairs fall short.
    let out = skill_evolve(d)
        .args(["harvest", "--source", "claude-code", "--from", "sessions"])
        .args(["--tasks", "t.jsonl", "--min-sessions", "3"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(std::fs::read_to_string(d.join("t.jsonl")).unwrap(), "");
}

#[test]
fn a_check_that_cannot_be_read_is_refused_with_its_line() {
    let dir = run_workspace(crate::run::CONFIG);
    let d = dir.path();
    let mut lines = std::fs::read_to_string(d.join("questions.jsonl")).unwrap();
    lines.push_str(
        r#"{"question_id": "bad", "task_type": "qa", "question": "?", "check": {"kind": "regex", "pattern": "(unclosed"}}"#,
    );
    lines.push('\n');
    std::fs::write(d.join("questions.jsonl"), lines).unwrap();
    let before = snapshot(d);
    let out = run_config(d, &["--dry-run"]);
    assert_one_line_error(&out, "questions.jsonl:19");
    assert_one_line_error(&out, "question \"bad\" has a bad check");
    assert_eq!(snapshot(d), before);
}

/// The LLM calls of a `--dry-run`'s pre-flight estimate line.
fn estimated_llm_calls(out: &std::process::Output) -> u64 {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout
        .lines()
        .find(|l| l.starts_with("pre-flight estimate"))
        .expect("a pre-flight line");
    let (_, rest) = line.split_once("): ").expect("the estimate after the plan");
    rest.split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .expect("a number of LLM calls")
}

/// A request naming a generated work-item id, as an orchestrator writes them.
fn bead(id: &str) -> String {
    format!(
        "Work on bead spotter-{id}. Run bd show spotter-{id} to see the issue details and bd \
         ready to find available subtasks. Start with the first ready task."
    )
}

#[test]
fn requests_naming_generated_ids_are_mined_as_one_task_and_unmined_sessions_are_explained() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let folder = d.join("sessions/-work-spotter");
    std::fs::create_dir_all(&folder).unwrap();
    for (day, id) in [(1, "dov"), (2, "fum"), (3, "4te"), (4, "a0y")] {
        write_session_with(
            &folder,
            &format!("s-{id}"),
            day,
            &bead(id),
            "done",
            "elixir:hex-docs-search",
        );
    }
    write_session(
        &folder,
        "s-other",
        5,
        "mix phx.server doesnt seem to start",
        "fixed",
    );
    let out = harvest_tasks(d);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert!(
        stdout.contains("tasks: 1 recurring (seen in at least 2 sessions)"),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "sessions without a task: 1 asked a request fewer than 2 sessions asked (1 \
             different request; --min-sessions 1 keeps requests asked once)\n"
        ),
        "{stdout}"
    );
    let tasks = read_lines(&d.join("tasks.jsonl"));
    assert_eq!(
        tasks[0]["sessions"].as_array().map(Vec::len),
        Some(4),
        "{tasks:?}"
    );
    // A plugin's skill becomes a valid skill name as the task type.
    assert_eq!(tasks[0]["task_type"], "hex-docs-search");

    // Asked once is enough with --min-sessions 1, said in the singular.
    let out = skill_evolve(d)
        .args(["harvest", "--source", "claude-code", "--from", "sessions"])
        .args(["--tasks", "tasks.jsonl", "--min-sessions", "1"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("tasks: 2 recurring (seen in at least 1 session)"),
        "{stdout}"
    );
    assert!(!stdout.contains("sessions without a task"), "{stdout}");
    for task in read_lines(&d.join("tasks.jsonl")) {
        let name = task["task_type"].as_str().unwrap_or_default();
        assert_eq!(evolution_types::skill_name_problem(name), None, "{task}");
    }
}
