//! Task suites and checks through `skill-evolve run`: a `[questions] suite` folder already
//! split into `train.jsonl`, `gate.jsonl` and `holdout.jsonl` (each file a resume input),
//! checks that combine a format and a content check, the pre-flight's line on checks a skill
//! can pass by form alone, and bad checks and suites refused with their file and line.

use std::path::Path;

use crate::run::{CONFIG, loop_config, rule_agent, run_to_end};
use crate::support::{assert_one_line_error, run_config, snapshot};

/// `config` with its `[questions]` table replaced by `suite = "suite"` and its skills read
/// from the suite's `skills` folder.
fn as_suite(config: &str) -> String {
    let start = config.find("[questions]\n").unwrap();
    let end = start + config[start..].find("\n\n[").unwrap();
    format!(
        "{}[questions]\nsuite = \"suite\"{}",
        &config[..start],
        &config[end..]
    )
    .replace(r#"skills = "skills""#, r#"skills = "suite/skills""#)
}

/// One qa question line with `check`.
fn line(id: &str, check: &str) -> String {
    format!(
        "{{\"question_id\": \"{id}\", \"task_type\": \"qa\", \"question\": \"?\", \"check\": {check}}}\n"
    )
}

/// `n` question lines `<prefix>0`, `<prefix>1`, … each with `check`.
fn lines(prefix: &str, n: usize, check: &str) -> String {
    (0..n)
        .map(|i| line(&format!("{prefix}{i}"), check))
        .collect()
}

/// A project whose run configuration is `config` and whose suite folder holds a skill with
/// no rule for qa questions and the files `parts` (name, text).
fn suite_workspace(config: &str, parts: &[(&str, String)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir_all(d.join("suite/skills/default-strategy")).unwrap();
    std::fs::write(
        d.join("suite/skills/default-strategy/SKILL.md"),
        "---\nname: default-strategy\ndescription: Answers qa questions.\n---\nRULE other => no\n",
    )
    .unwrap();
    for (name, text) in parts {
        std::fs::write(d.join("suite").join(name), text).unwrap();
    }
    std::fs::write(d.join("evolve.toml"), config).unwrap();
    dir
}

/// The answer must be exactly `yes`, reached by reading the skill (the reference agent's
/// one tool).
const YES_BY_READING: &str = r#"{"kind": "all_of", "checks": [{"kind": "tool_called", "tool": "read_skill"}, {"kind": "exact", "value": "yes"}]}"#;

#[test]
fn a_suite_folder_is_run_behind_the_gate_and_each_of_its_files_is_an_input() {
    let fake = crate::fake_llm::start_loop();
    let config = as_suite(&loop_config(&rule_agent(), &fake.base_url));
    let dir = suite_workspace(
        &config,
        &[
            ("train.jsonl", lines("t", 2, YES_BY_READING)),
            ("gate.jsonl", lines("g", 12, YES_BY_READING)),
            ("holdout.jsonl", lines("h", 2, YES_BY_READING)),
        ],
    );
    let d = dir.path();
    let dry = run_config(d, &["--dry-run"]);
    let text = String::from_utf8_lossy(&dry.stdout);
    assert!(dry.status.success(), "{dry:?}");
    // Each file is its part, in its own order.
    assert!(
        text.contains("questions: 2 train, 12 gate, 2 holdout"),
        "{text}"
    );
    assert!(text.contains("  train (2): t0, t1\n"), "{text}");
    assert!(text.contains("  holdout (2): h0, h1\n"), "{text}");
    assert!(!text.contains("gameable"), "{text}");
    // Before the edit the agent answers `unknown`, after it `yes`: every gate question is won.
    let finished = run_to_end(d);
    finished.assert_summary("1 candidate(s), 1 accepted");
    assert!(
        finished.report.contains("+RULE qa => yes"),
        "{}",
        finished.report
    );
    // A changed gate file is a changed input: the run does not resume on other questions.
    std::fs::write(d.join("suite/gate.jsonl"), lines("n", 12, YES_BY_READING)).unwrap();
    let again = run_config(d, &[]);
    assert_one_line_error(
        &again,
        "run \"demo\" cannot resume: the question set (suite/gate.jsonl) changed since it \
         started",
    );
}

#[test]
fn the_pre_flight_flags_checks_a_skill_can_pass_by_form_alone() {
    let config = as_suite(CONFIG);
    let form = r#"{"kind": "all_of", "checks": [{"kind": "section_present", "heading": "Answer"}, {"kind": "no_refusal"}]}"#;
    let content = r#"{"kind": "all_of", "checks": [{"kind": "section_present", "heading": "Answer"}, {"kind": "section_contains", "heading": "Answer", "value": "yes"}]}"#;
    let plain = r#"{"kind": "contains", "value": "yes"}"#;
    let gate = [
        line("g0", form),
        line("g1", content),
        line("g2", r#"{"kind": "max_chars", "chars": 80}"#),
        line("g3", r#"{"kind": "tool_called", "tool": "read_skill"}"#),
        lines("p", 5, plain),
    ]
    .concat();
    let dir = suite_workspace(
        &config,
        &[
            (
                "train.jsonl",
                line("t0", r#"{"kind": "min_chars", "chars": 20}"#),
            ),
            ("gate.jsonl", gate),
        ],
    );
    let d = dir.path();
    let before = snapshot(d);
    let out = run_config(d, &["--dry-run"]);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    let flagged: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("gameable checks: "))
        .collect();
    assert_eq!(flagged.len(), 1, "{text}");
    assert!(
        flagged[0].starts_with(
            "gameable checks: 4 question(s) are scored by their form alone (section_present, \
             min_chars, max_chars, no_refusal or tool_called, with no content check), which a \
             skill can pass without a right answer: \"t0\", \"g0\", \"g2\", …; add a content \
             check"
        ),
        "{text}"
    );
    assert_eq!(snapshot(d), before);
}

#[test]
fn a_bad_check_in_a_suite_is_refused_with_its_file_and_line() {
    let config = as_suite(CONFIG);
    let plain = r#"{"kind": "contains", "value": "yes"}"#;
    let bad = r###"{"kind": "all_of", "checks": [{"kind": "no_refusal"}, {"kind": "section_present", "heading": "## Answer"}]}"###;
    let gate = [lines("g", 2, plain), line("bad", bad), lines("p", 6, plain)].concat();
    let dir = suite_workspace(
        &config,
        &[("train.jsonl", lines("t", 2, plain)), ("gate.jsonl", gate)],
    );
    let d = dir.path();
    let before = snapshot(d);
    let out = run_config(d, &["--dry-run"]);
    assert_one_line_error(
        &out,
        "gate.jsonl:3: question \"bad\" has a bad check: check 2 of the all_of: write the \
         heading's title without its #s",
    );
    assert_eq!(snapshot(d), before);
    // An unknown kind names every kind there is.
    std::fs::write(
        d.join("suite/train.jsonl"),
        line("t0", r#"{"kind": "equals"}"#),
    )
    .unwrap();
    let out = run_config(d, &["--dry-run"]);
    assert_one_line_error(&out, "train.jsonl:1: question \"t0\" has a bad check");
    assert_one_line_error(&out, "tool_called, all_of or rubric");
}

/// Writes `config` over `d`'s run configuration and asserts that a dry run refuses it with
/// one line holding `needle`.
fn assert_refused(d: &Path, config: &str, needle: &str) {
    std::fs::write(d.join("evolve.toml"), config).unwrap();
    let out = run_config(d, &["--dry-run"]);
    assert_one_line_error(&out, needle);
}

#[test]
fn a_suite_is_refused_when_it_cannot_be_split_as_written() {
    let config = as_suite(CONFIG);
    let plain = r#"{"kind": "contains", "value": "yes"}"#;
    let dir = suite_workspace(&config, &[("train.jsonl", lines("t", 2, plain))]);
    let d = dir.path();
    assert_refused(d, &config, "evolve.toml:12: [questions] suite");
    assert_refused(
        d,
        &config,
        "has no gate.jsonl: the gate needs its questions",
    );
    std::fs::write(d.join("suite/gate.jsonl"), lines("g", 9, plain)).unwrap();
    let both = config.replace(
        "suite = \"suite\"",
        "file = \"questions.jsonl\"\nsuite = \"suite\"",
    );
    assert_refused(
        d,
        &both,
        "evolve.toml:13: [questions] file and suite cannot both be set",
    );
    let shared = config.replace("suite = \"suite\"", "suite = \"suite\"\ntrain = 0.5");
    assert_refused(
        d,
        &shared,
        "evolve.toml:13: [questions] train divides a question file",
    );
    let neither = config.replace("suite = \"suite\"", "");
    assert_refused(d, &neither, "evolve.toml:11: [questions] needs file");
    let nowhere = config.replace("suite = \"suite\"", "suite = \"nowhere\"");
    assert_refused(d, &nowhere, "nowhere: not a folder");
    let no_shares = config.replace("suite = \"suite\"", "file = \"suite/gate.jsonl\"");
    assert_refused(
        d,
        &no_shares,
        "evolve.toml:12: [questions] file needs the shares train and gate",
    );
    // A question in two parts would let the training see the gate.
    std::fs::write(d.join("suite/holdout.jsonl"), line("g3", plain)).unwrap();
    assert_refused(d, &config, "question_id \"g3\" is also in gate.jsonl");
    std::fs::remove_file(d.join("suite/holdout.jsonl")).unwrap();
    // run trains: without a training file it has nothing to learn from.
    std::fs::remove_file(d.join("suite/train.jsonl")).unwrap();
    assert_refused(
        d,
        &config,
        "has no train.jsonl: run trains on its questions",
    );
    // Nothing was written by any refusal.
    assert!(!d.join(".skill-evolve").exists());
}
