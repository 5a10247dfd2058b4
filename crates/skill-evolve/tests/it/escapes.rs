//! What an LLM, a store or a server wrote reaches the terminal with its
//! control characters escaped: an ESC sequence in an edit's reason or in the
//! meta-reflection's summary cannot erase or move the lines of the diff the
//! user is approving.

use crate::evolve::{SKILL, evolve_cmd, workspace};
use crate::fake_llm::{completion, start_raw};
use crate::runlogs::write_run;
use crate::support::{diagnose_rules, skill_evolve};

/// Erase the line, move up, clear the screen: what a hostile reply would send.
const ERASE: &str = "\u{1b}[2K\u{1b}[1A\u{1b}[2J";
/// How it is shown.
const SHOWN: &str = r"\x1b[2K\x1b[1A\x1b[2J";

/// Replies whose every free text carries [`ERASE`].
fn hostile(prompt: &str, _auth: &str) -> (u16, String) {
    let content = if prompt.contains("## Known failures") {
        serde_json::json!({"addressed": ["t1"],
                           "unaddressed": [{"id": "t2", "why": format!("open{ERASE}")}],
                           "summary": format!("covered{ERASE}")})
    } else {
        serde_json::json!({"suggestions": [], "reasoning": "r",
            "edits": [{"op": "append", "target": "",
                       "content": format!("- Check twice.{ERASE}"),
                       "reason": format!("why{ERASE}")}]})
    };
    (200, completion(&content.to_string()))
}

fn assert_no_escape(text: &str) {
    assert!(
        !text.contains('\u{1b}'),
        "a raw ESC reached the terminal: {text:?}"
    );
}

#[test]
fn escape_sequences_in_replies_are_shown_escaped_in_the_diff_table_and_summary() {
    let url = start_raw(hostile);
    let dir = workspace(SKILL);
    let d = dir.path();
    let out = evolve_cmd(d)
        .arg("--yes")
        .args(["--provider", "openai", "--base-url", &url, "--model", "m"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_no_escape(&stdout);
    assert!(
        stdout.contains(&format!("+- Check twice.{SHOWN}")),
        "{stdout}"
    );
    assert!(stdout.contains(&format!("why{SHOWN}")), "{stdout}");
    assert!(stdout.contains(&format!("covered{SHOWN}")), "{stdout}");
    assert!(
        stdout.contains(&format!("still open: t2: open{SHOWN}")),
        "{stdout}"
    );
    // The document keeps what was approved, byte for byte.
    let written = std::fs::read_to_string(d.join("skill/SKILL.md")).unwrap();
    assert!(written.contains(&format!("- Check twice.{ERASE}")));

    // A history message written into the store by someone else is escaped too.
    let manifest = d.join(".skill-evolve/stores/skill/SKILL.md/manifest.json");
    let text = std::fs::read_to_string(&manifest).unwrap();
    let edited = text.replace("imported working copy", r"imported\u001b[2J working copy");
    assert_ne!(edited, text);
    std::fs::write(&manifest, edited).unwrap();
    let out = skill_evolve(d)
        .args(["history", "skill/SKILL.md"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_no_escape(&stdout);
    assert!(stdout.contains(r"imported\x1b[2J working copy"), "{stdout}");
}

#[test]
fn an_error_quoting_a_server_message_shows_its_control_characters_escaped() {
    let url = start_raw(|_, _| {
        let message = format!("denied{ERASE}\u{7}");
        (
            403,
            serde_json::json!({"error": {"message": message}}).to_string(),
        )
    });
    let dir = workspace(SKILL);
    let out = skill_evolve(dir.path())
        .args(["evolve", "skill/SKILL.md", "--trajectories", "temp"])
        .args(["--provider", "openai", "--base-url", &url, "--model", "m"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_no_escape(&stderr);
    assert!(!stderr.contains('\u{7}'), "{stderr:?}");
    assert!(stderr.contains(&format!(r"denied{SHOWN}\x07")), "{stderr}");
}

/// What an agent wrote into the run log (here, a tool name) is shown escaped
/// in the diagnosis.
#[test]
fn agent_output_in_a_run_log_is_shown_escaped_by_diagnose() {
    use evolution_types::{Prediction, TraceStep};
    let dir = tempfile::tempdir().unwrap();
    let prediction = Prediction {
        question_id: "q1".to_owned(),
        task_type: "qa".to_owned(),
        prediction: "a".to_owned(),
        answer: "b".to_owned(),
        ..Prediction::default()
    };
    let step = TraceStep {
        question_id: "q1".to_owned(),
        step: 1,
        tool_name: format!("search{ERASE}"),
        ..TraceStep::default()
    };
    write_run(
        &dir.path().join("run.sqlite"),
        "r1",
        vec![prediction],
        vec![step],
    );
    let out = diagnose_rules(dir.path(), "r1").output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_no_escape(&stdout);
    assert!(stdout.contains(&format!("search{SHOWN}×1")), "{stdout}");
}
