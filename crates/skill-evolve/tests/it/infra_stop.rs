//! A run whose agent fails on most questions of a phase stops at once with the agent's own
//! last error output (escaped, capped) and exit code 1, and resumes once the agent is fixed;
//! a run whose agent fails now and then goes on; a rubric judge that gives no verdict is
//! reported as the judge's failure, never the agent's. `status` and the reports show the
//! failed rollouts per phase with the first error.

use std::sync::atomic::Ordering;

use serde_json::json;

use crate::run::{live_config, one_epoch, rule_agent, run_workspace_with, with_agent};
use crate::support::{run_config, skill_evolve};

/// An agent that dies before answering, as Python does without its modules (with a control
/// sequence on its last line, which must come out escaped).
const BROKEN_AGENT: &str = r#"cat >/dev/null
echo 'Traceback (most recent call last):' >&2
echo '  File "agent.py", line 3, in <module>' >&2
echo '    import helpers' >&2
printf "ModuleNotFoundError: No module named 'helpers'\033[2J\n" >&2
exit 1
"#;

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn status(d: &std::path::Path) -> String {
    let out = skill_evolve(d).arg("status").output().unwrap();
    assert!(out.status.success(), "{out:?}");
    text(&out.stdout)
}

#[test]
fn a_broken_agent_stops_the_run_with_its_last_error_output_and_resumes_once_fixed() {
    let fake = crate::fake_llm::start_loop();
    // 2 training and 12 gate questions (the layout of the reference loop test).
    let dir = run_workspace_with(&one_epoch(&live_config(&fake.base_url)), 14);
    let d = dir.path();
    // The agent's command runs a script it does not name, as a Python agent imports its
    // modules: fixing that script (a missing package installed) leaves the run resumable.
    let implementation = d.join("implementation.sh");
    std::fs::write(
        d.join("agent.sh"),
        format!("exec sh '{}'\n", implementation.display()),
    )
    .unwrap();
    std::fs::write(&implementation, BROKEN_AGENT).unwrap();

    let out = run_config(d, &[]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("error: the agent failed on 2 of 2 questions; its last error output:\n"),
        "{stderr}"
    );
    assert!(
        stderr.contains(
            "  | agent ended before answering: exited with exit status: 1; stderr: Traceback \
             (most recent call last):\n  |   File \"agent.py\", line 3, in <module>\n"
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains("  | ModuleNotFoundError: No module named 'helpers'\\x1b[2J\n"),
        "{stderr}"
    );
    assert!(
        !stderr.contains('\u{1b}'),
        "a raw escape reached the terminal"
    );
    assert!(
        stderr.contains("the same command resumes where it stopped"),
        "{stderr}"
    );
    assert!(!stdout.contains("finished ("), "{stdout}");
    assert_eq!(fake.calls.load(Ordering::SeqCst), 0, "the model was asked");

    let shown = status(d);
    assert!(
        shown.contains("demo: not finished: the same `run` command resumes it"),
        "{shown}"
    );
    // A skill edited meanwhile: status says the run cannot resume, and names the file.
    let skill = d.join("skills/default-strategy.md");
    let original = std::fs::read_to_string(&skill).unwrap();
    std::fs::write(&skill, format!("{original}RULE extra => yes\n")).unwrap();
    let shown = status(d);
    assert!(
        shown.contains(
            "demo: not finished, and skills/default-strategy.md changed since it started: it \
             cannot resume; `run --fresh` starts it over"
        ),
        "{shown}"
    );
    std::fs::write(&skill, original).unwrap();
    assert!(
        shown.contains("failed rollouts (INFRA), training: the agent failed on 2 of 2 question(s) (first error: agent ended before answering:"),
        "{shown}"
    );
    assert!(
        shown.contains("ModuleNotFoundError: No module named 'helpers'\\x1b[2J)"),
        "{shown}"
    );

    // Fixed: the same command resumes and finishes.
    std::fs::write(
        &implementation,
        format!("exec '{}'\n", rule_agent().display()),
    )
    .unwrap();
    let out = run_config(d, &[]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stderr.contains("resuming from"), "{stderr}");
    assert!(stdout.contains("1 candidate(s), 1 accepted"), "{stdout}");
    assert!(!status(d).contains("failed rollouts"), "{}", status(d));
}

/// The question ids `run --dry-run` lists for `part` (`train`, `gate`, …).
fn split_ids(d: &std::path::Path, part: &str) -> Vec<String> {
    let out = run_config(d, &["--dry-run"]);
    assert!(out.status.success(), "{out:?}");
    let stdout = text(&out.stdout);
    let line = stdout
        .lines()
        .find(|l| l.trim_start().starts_with(&format!("{part} (")))
        .unwrap_or_else(|| panic!("no {part} line in\n{stdout}"));
    line.split_once("): ")
        .unwrap()
        .1
        .split(", ")
        .map(str::to_owned)
        .collect()
}

#[test]
fn an_agent_that_fails_on_one_question_in_ten_does_not_stop_the_run() {
    let fake = crate::fake_llm::start_loop();
    let config = live_config(&fake.base_url)
        .replace("max_epochs = 2", "max_epochs = 1")
        .replace("train = 0.5", "train = 0.4")
        .replace("gate = 0.5", "gate = 0.6");
    let dir = run_workspace_with(&config, 25);
    let d = dir.path();
    let train = split_ids(d, "train");
    assert_eq!(train.len(), 10, "{train:?}");
    let flaky = &train[3];
    std::fs::write(
        d.join("agent.sh"),
        format!(
            "read -r line\n\
             case \"$line\" in *'\"question_id\":\"{flaky}\"'*)\n\
             echo 'Traceback (most recent call last):' >&2\n\
             echo 'TimeoutError: the tool server did not answer' >&2\n\
             exit 1;;\n\
             esac\n\
             printf '%s\\n' \"$line\" | exec '{}'\n",
            rule_agent().display()
        ),
    )
    .unwrap();

    let out = run_config(d, &[]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("finished ("), "{stdout}");

    let shown = status(d);
    assert!(
        shown.contains("failed rollouts (INFRA), training: the agent failed on 1 of 10 question(s) (first error: agent ended before answering:"),
        "{shown}"
    );
    assert!(
        shown.contains("TimeoutError: the tool server did not answer)"),
        "{shown}"
    );
    let run = d.join(".skill-evolve/runs/demo");
    let report = std::fs::read_to_string(run.join("report.md")).unwrap();
    assert!(
        report.contains("## Failed rollouts (INFRA) by phase"),
        "{report}"
    );
    let row = report
        .lines()
        .find(|l| l.starts_with("| training |"))
        .unwrap_or_else(|| panic!("no training row in\n{report}"));
    assert!(
        row.starts_with("| training | 10 | 1 | 0 | agent ended before answering:"),
        "{row}"
    );
    assert!(
        row.contains("TimeoutError: the tool server did not answer |"),
        "{row}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("report.json")).unwrap()).unwrap();
    let training = &json["infra_by_phase"][0];
    assert_eq!(training["phase"], "training", "{json}");
    assert_eq!(
        (&training["rollouts"], &training["agent_failures"]),
        (&json!(10), &json!(1))
    );
    let html = std::fs::read_to_string(run.join("report.html")).unwrap();
    assert!(
        html.contains("<h2 id=\"failures\">Failed rollouts (INFRA) by phase</h2>"),
        "{html}"
    );
    assert!(html.contains("<tr><td>training</td><td>10</td><td>1</td><td>0</td>"));
}

#[test]
fn a_judge_that_gives_no_verdict_is_reported_as_the_judge_not_the_agent() {
    let fake = crate::fake_llm::start_loop_rubric_unreadable();
    let dir = run_workspace_with(
        &one_epoch(&with_agent(&live_config(&fake.base_url), &rule_agent())),
        14,
    );
    let d = dir.path();
    let questions: String = (0..14)
        .map(|i| {
            json!({"question_id": format!("q{i}"), "task_type": "qa", "question": "?",
                   "check": {"kind": "rubric", "text": "The answer is a plain yes."},
                   "reviewed": true})
            .to_string()
                + "\n"
        })
        .collect();
    std::fs::write(d.join("questions.jsonl"), questions).unwrap();

    let out = run_config(d, &[]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(
        stderr.contains(
            "error: the rubric judge gave no verdict on 2 answer(s): unreadable `judge.rubric` \
             reply after"
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains("the agent answered, the judge did not"),
        "{stderr}"
    );
    for blame in ["the agent failed", "fix the agent", "its last error output"] {
        assert!(!stderr.contains(blame), "{blame:?} in\n{stderr}");
    }
    let shown = status(d);
    assert!(
        shown.contains("failed rollouts (INFRA), training: the rubric judge gave no verdict on 2 of 2 answer(s) (first reason: unreadable `judge.rubric` reply after"),
        "{shown}"
    );
    assert!(!shown.contains("the agent failed"), "{shown}");
}
