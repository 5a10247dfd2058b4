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

/// A Claude Code transcript line of a session in `/work/support`.
fn record(session: &str, at: &str, kind: &str, content: Value) -> String {
    record_in("/work/support", session, at, kind, content)
}

/// A Claude Code transcript line of a session that ran in `cwd`.
fn record_in(cwd: &str, session: &str, at: &str, kind: &str, content: Value) -> String {
    let role = if kind == "user" { "user" } else { "assistant" };
    let mut message = json!({"role": role, "content": content});
    if kind == "assistant" {
        message["id"] = json!(format!("msg-{session}-{at}"));
    }
    json!({"type": kind, "sessionId": session, "cwd": cwd, "timestamp": at,
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
    write_session_in(
        folder,
        "/work/support",
        session,
        day,
        request,
        answer,
        skill,
    );
}

/// Writes one session that ran in `cwd`: a request, `skill` loaded, and a final answer.
fn write_session_in(
    folder: &Path,
    cwd: &str,
    session: &str,
    day: u32,
    request: &str,
    answer: &str,
    skill: &str,
) {
    let record = |session: &str, at: &str, kind: &str, content: Value| {
        record_in(cwd, session, at, kind, content)
    };
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
            "--all-projects",
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
            .args([
                "harvest",
                "--source",
                "claude-code",
                "--from",
                "sessions",
                "--all-projects",
            ])
            .args(["--tasks", "here"])
            .output()
            .unwrap(),
        "--tasks must name a file",
    );
    // Three sessions per task at least: only the categories' pairs fall short.
    let out = skill_evolve(d)
        .args([
            "harvest",
            "--source",
            "claude-code",
            "--from",
            "sessions",
            "--all-projects",
        ])
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
        .args([
            "harvest",
            "--source",
            "claude-code",
            "--from",
            "sessions",
            "--all-projects",
        ])
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

/// Harvests `sessions` into `tasks.jsonl` from `d`, with `extra` flags.
fn harvest_into(d: &Path, extra: &[&str]) -> std::process::Output {
    skill_evolve(d)
        .args(["harvest", "--source", "claude-code", "--from", "sessions"])
        .args(["--tasks", "tasks.jsonl"])
        .args(extra)
        .output()
        .unwrap()
}

#[test]
fn harvesting_again_keeps_the_review_and_reads_only_this_project_by_default() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let here = d.canonicalize().unwrap();
    let here = here.to_str().unwrap();
    let folder = d.join("sessions/-project");
    std::fs::create_dir_all(&folder).unwrap();
    let ask = |category: &str, copies: u32, cwd: &str| {
        for k in 0..copies {
            let request = format!("Is a {category} ticket #{k} refundable?");
            let id = format!("s-{category}-{k}");
            write_session_in(&folder, cwd, &id, k + 1, &request, "yes", "qa");
        }
    };
    for category in ["alpha", "bravo", "charlie"] {
        ask(category, 2, here);
    }
    // Sessions in a folder under the project count; another repository's do not.
    ask("delta", 2, &format!("{here}/sub"));
    ask("elsewhere", 2, "/work/other-repository");

    let out = harvest_into(d, &[]);
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{out:?}");
    assert!(
        said.contains(&format!(
            "project: {here} (and folders under it; --all-projects reads every project)\n"
        )),
        "{said}"
    );
    assert!(said.contains("sessions: 8\n"), "{said}");
    assert!(said.contains("filtered out: 2\n"), "{said}");
    assert!(
        said.contains("tasks file: 0 kept as they were (reviewed: 0), 4 added unreviewed, 0 deleted before left out"),
        "{said}"
    );
    let first = std::fs::read_to_string(d.join("tasks.jsonl")).unwrap();
    assert!(!first.contains("elsewhere"), "{first}");
    let everywhere = skill_evolve(d)
        .args(["harvest", "--source", "claude-code", "--from", "sessions"])
        .args(["--tasks", "all.jsonl", "--all-projects"])
        .output()
        .unwrap();
    assert!(everywhere.status.success(), "{everywhere:?}");
    assert!(String::from_utf8_lossy(&everywhere.stdout).contains("project: every project\n"));
    assert_eq!(read_lines(&d.join("all.jsonl")).len(), 5);
    let both = skill_evolve(d)
        .args(["harvest", "--source", "claude-code", "--from", "sessions"])
        .args(["--project", ".", "--all-projects"])
        .output()
        .unwrap();
    assert_eq!(both.status.code(), Some(2), "{both:?}");

    // The review: alpha sharpened and reviewed (its spacing the person's own), bravo deleted,
    // charlie and delta left as harvest wrote them.
    let lines: Vec<&str> = first.lines().collect();
    let line_of = |category: &str| {
        *lines
            .iter()
            .find(|l| l.contains(&format!("{category} ticket")))
            .unwrap()
    };
    let alpha: Value = serde_json::from_str(line_of("alpha")).unwrap();
    let reviewed = format!(
        "{{\"question_id\":  {},  \"task_type\": \"qa\", \"question\": \"Is an alpha ticket refundable?\", \"check\": {{\"kind\": \"exact\", \"value\": \"yes\"}}, \"reviewed\": true}}\n{}\n{}\n",
        alpha["question_id"],
        line_of("charlie"),
        line_of("delta"),
    );
    std::fs::write(d.join("tasks.jsonl"), &reviewed).unwrap();
    // New sessions: alpha and bravo asked again, echo for the first time.
    ask("alpha", 3, here);
    ask("bravo", 3, here);
    ask("echo", 2, here);

    let out = harvest_into(d, &[]);
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{out:?}");
    assert!(
        said.contains("tasks file: 3 kept as they were (reviewed: 1), 1 added unreviewed, 1 deleted before left out"),
        "{said}"
    );
    let second = std::fs::read_to_string(d.join("tasks.jsonl")).unwrap();
    assert!(second.starts_with(&reviewed), "{second}");
    assert!(!second.contains("bravo"), "{second}");
    let added = read_lines(&d.join("tasks.jsonl")).pop().unwrap();
    assert_eq!(added["question"], "Is a echo ticket #1 refundable?");
    assert_eq!(added["reviewed"], false);
    let state: Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("tasks.jsonl.dropped.json")).unwrap())
            .unwrap();
    assert_eq!(state["dropped"].as_array().unwrap().len(), 1, "{state}");

    // Nothing new: nothing changes.
    let out = harvest_into(d, &[]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        std::fs::read_to_string(d.join("tasks.jsonl")).unwrap(),
        second
    );
    assert!(
        String::from_utf8_lossy(&out.stdout)
            .contains("tasks file: 4 kept as they were (reviewed: 1), 0 added unreviewed, 1 deleted before left out"),
        "{out:?}"
    );

    // A line that is not a task stops the harvest before anything is written.
    let broken = format!("{second}not a task\n");
    std::fs::write(d.join("tasks.jsonl"), &broken).unwrap();
    let before = snapshot(d);
    let out = harvest_into(d, &[]);
    assert_one_line_error(&out, "tasks.jsonl:5: not a JSON object");
    assert_eq!(snapshot(d), before);
}

/// Writes a Claude Code session of `turns` (user first, then agent, in turn) that ran in
/// `/work/support`.
fn write_conversation(folder: &Path, session: &str, day: u32, turns: &[&str]) {
    let lines: Vec<String> = turns
        .iter()
        .enumerate()
        .map(|(i, text)| {
            let at = format!("2026-03-{day:02}T09:00:{i:02}.000Z");
            if i % 2 == 0 {
                record(session, &at, "user", json!(text))
            } else {
                record(
                    session,
                    &at,
                    "assistant",
                    json!([{"type": "text", "text": text}]),
                )
            }
        })
        .collect();
    std::fs::write(
        folder.join(format!("{session}.jsonl")),
        lines.join("\n") + "\n",
    )
    .unwrap();
}

#[test]
fn a_corrected_session_gives_its_task_the_users_words_and_a_check_from_them() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let folder = d.join("sessions/-work-support");
    std::fs::create_dir_all(&folder).unwrap();
    let said = "no, that's wrong, use `make migration name=…`: it keeps our dated rev-id";
    write_conversation(
        &folder,
        "s-1",
        1,
        &[
            "Add a migration for archived_at",
            "Ran alembic revision --autogenerate -m archived_at.",
            said,
            "Sorry! Ran make migration name=add_archived_at.",
            "thanks, looks good",
            "Glad it helps.",
        ],
    );
    write_conversation(
        &folder,
        "s-2",
        2,
        &[
            "add a migration for archived_at",
            "Done: 0042_archived_at.py",
        ],
    );
    // Another task, closed with thanks: its check is the answer, never the reply to the thanks.
    for (n, day) in [("s-3", 3), ("s-4", 4)] {
        write_conversation(
            &folder,
            n,
            day,
            &[
                "Write release notes for v2.3",
                "Faster search, dark mode.",
                "thanks, looks good",
                "Glad it helps.",
            ],
        );
    }
    let out = skill_evolve(d)
        .args(["harvest", "--source", "claude-code", "--from", "sessions"])
        .args(["--tasks", "tasks.jsonl", "--out", "h", "--all-projects"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let tasks = read_lines(&d.join("tasks.jsonl"));
    let migration = tasks
        .iter()
        .find(|t| t["question"].as_str().unwrap().contains("migration"))
        .unwrap();
    assert_eq!(
        migration["check"],
        json!({"kind": "contains", "value": "make migration name="})
    );
    assert_eq!(migration["reviewed"], false);
    assert_eq!(
        migration["correction"],
        json!({"session": "s-1", "said": said,
               "answer": "Ran alembic revision --autogenerate -m archived_at."})
    );
    let notes = tasks
        .iter()
        .find(|t| t["question"].as_str().unwrap().contains("release notes"))
        .unwrap();
    assert_eq!(
        notes["check"],
        json!({"kind": "contains", "value": "Faster search, dark mode."})
    );
    assert!(notes.get("correction").is_none(), "{notes}");
    // The trajectory keeps the answer the user corrected, and their words.
    let trajectory: Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("h/claude-code-s-1.json")).unwrap())
            .unwrap();
    assert_eq!(trajectory["hard"], 0.0);
    assert_eq!(
        trajectory["predicted_answer"],
        "Ran alembic revision --autogenerate -m archived_at."
    );
    assert_eq!(trajectory["correction"], said);
    // `run` reads the line as a question whose check the set accepts.
    let text = std::fs::read_to_string(d.join("tasks.jsonl")).unwrap();
    let questions = evolution_harness::parse_question_set(&text).unwrap();
    assert_eq!(questions.len(), 2);
}

/// The summary's line on `skill`'s gate questions, and the hint after it when there is one.
fn supply_lines<'a>(stdout: &'a str, skill: &str) -> (&'a str, Option<&'a str>) {
    let mut lines = stdout.lines();
    let line = lines
        .find(|l| l.starts_with(&format!("  {skill}: ")))
        .unwrap_or_else(|| panic!("no gate questions line for {skill} in {stdout}"));
    let hint = lines.next().filter(|l| l.starts_with("  hint: "));
    (line, hint)
}

#[test]
fn harvest_says_how_many_gate_questions_each_skill_has_and_needs() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write_sessions(d);
    let out = harvest_tasks(d);
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        stdout.contains(
            "gate questions per skill, under the run `init` writes (train 0.5 / gate 0.5, seed 0, \
             3 epochs"
        ),
        "{stdout}"
    );
    // 15 tasks of `qa`, none reviewed; half of them gate questions (rounded as `run` splits).
    let (line, hint) = supply_lines(&stdout, "qa");
    assert!(
        line.starts_with("  qa: 15 tasks (0 reviewed), 7 gate questions; a decision needs "),
        "{line}"
    );
    assert!(
        line.contains(" for 50 %, ") && line.ends_with(" for 80 % power at a 70 % win rate"),
        "{line}"
    );
    let hint = hint.unwrap_or_else(|| panic!("no hint after {line}"));
    assert!(hint.contains("--min-sessions 1 also mines"), "{hint}");

    // Mining single sessions: the requests asked once are tasks too, and no flag is suggested.
    write_session(
        &d.join("sessions/-work-support"),
        "s-single",
        5,
        "Summarise the weekly report",
        "done",
    );
    let out = skill_evolve(d)
        .args([
            "harvest",
            "--source",
            "claude-code",
            "--from",
            "sessions",
            "--tasks",
            "single.jsonl",
            "--all-projects",
            "--min-sessions",
            "1",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let (line, hint) = supply_lines(&stdout, "qa");
    assert!(line.starts_with("  qa: 16 tasks (0 reviewed), "), "{line}");
    assert!(
        !hint.unwrap_or_default().contains("--min-sessions"),
        "{hint:?}"
    );
}

#[test]
fn variants_of_reviewed_tasks_are_written_unreviewed_and_marked() {
    let fake = crate::fake_llm::start_variants();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write_sessions(d);
    assert!(harvest_tasks(d).status.success());
    // Review two tasks.
    let mut tasks = read_lines(&d.join("tasks.jsonl"));
    for task in tasks.iter_mut().take(2) {
        task["reviewed"] = json!(true);
    }
    let text: String = tasks.iter().map(|t| format!("{t}\n")).collect();
    std::fs::write(d.join("tasks.jsonl"), text).unwrap();
    std::fs::write(
        d.join("skill-evolve.toml"),
        format!(
            "[llm]\nprovider = \"openai\"\n\n[llm.openai]\nbase_url = \"{}\"\nmodel = \
             \"fake-model\"\n",
            fake.base_url
        ),
    )
    .unwrap();
    let variants = |n: &str| {
        skill_evolve(d)
            .args([
                "harvest",
                "--source",
                "claude-code",
                "--from",
                "sessions",
                "--tasks",
                "tasks.jsonl",
                "--all-projects",
                "--config",
                "skill-evolve.toml",
                "--variants",
                n,
            ])
            .output()
            .unwrap()
    };
    // Out of range: refused before anything is written or asked.
    let before = snapshot(d);
    assert_one_line_error(
        &variants("0"),
        "--variants 0: from 1 to 20 variants per task",
    );
    assert_eq!(snapshot(d), before);
    assert_eq!(fake.calls.load(std::sync::atomic::Ordering::SeqCst), 0);

    let out = variants("2");
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(fake.calls.load(std::sync::atomic::Ordering::SeqCst), 2);
    assert!(
        stdout.contains(
            "variants (fake-model): 2 reviewed tasks asked, 4 written unreviewed (marked \
             variant_of their task; review them), 6 left out of the replies, 0 calls failed, 0 \
             tasks varied before"
        ),
        "{stdout}"
    );
    let after = read_lines(&d.join("tasks.jsonl"));
    assert_eq!(after.len(), 15 + 4);
    let source = &after[0];
    let variant = &after[15];
    let source_id = source["question_id"].as_str().unwrap();
    assert_eq!(variant["question_id"], format!("{source_id}-variant-1"));
    assert_eq!(variant["variant_of"], source["question_id"]);
    assert_eq!(variant["check"], source["check"]);
    assert_eq!(variant["task_type"], "qa");
    assert_eq!(variant["reviewed"], false);
    assert!(variant.get("sessions").is_none(), "{variant}");
    // The reply's hostile item was left out, not cut or escaped into the file.
    let text = std::fs::read_to_string(d.join("tasks.jsonl")).unwrap();
    assert!(!text.contains("\\u001b"), "{text}");
    // The variants count as the skill's questions.
    let (line, _) = supply_lines(&stdout, "qa");
    assert!(line.starts_with("  qa: 19 tasks (2 reviewed), "), "{line}");
    // Varied once: no call the next time.
    let out = variants("2");
    assert!(out.status.success(), "{out:?}");
    assert_eq!(fake.calls.load(std::sync::atomic::Ordering::SeqCst), 2);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("0 reviewed tasks asked"),
        "{out:?}"
    );
}
