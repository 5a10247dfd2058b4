//! `provider = "handoff"`: a run without an API key. Every request of the model goes to the
//! run's `handoff/prompts.md` (and `prompts.json`), the run stops with exit code 3 at its last
//! consistent point, and once the answers are written the same command resumes; after several
//! rounds it ends as the replayed demo does. Answers are checked like any other input.

use std::collections::HashMap;
use std::path::Path;

use serde_json::Value;

use crate::agent_protocol::demo_with_agent;
use crate::run::rule_agent;
use crate::support::{assert_one_line_error, skill_evolve};

/// The demo with the handoff provider instead of its cassette.
fn handoff_demo() -> tempfile::TempDir {
    let dir = demo_with_agent(&[rule_agent().display().to_string()]);
    let config = std::fs::read_to_string(dir.path().join("evolve.toml")).unwrap();
    let replaced = config
        .replace("provider = \"replay\"", "provider = \"handoff\"")
        .replace("cassette = \"demo.cassette\"\n", "");
    assert_ne!(replaced, config);
    std::fs::write(dir.path().join("evolve.toml"), replaced).unwrap();
    dir
}

/// The demo cassette's reply for each request key: the answers a person would give.
fn replies(d: &Path) -> HashMap<String, String> {
    std::fs::read_to_string(d.join("demo.cassette"))
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let entry: Value = serde_json::from_str(l).unwrap();
            (
                entry["key"].as_str().unwrap().to_owned(),
                entry["response"]["content"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn run(d: &Path) -> std::process::Output {
    skill_evolve(d)
        .args(["run", "--config", "evolve.toml"])
        .output()
        .unwrap()
}

/// Runs `command` until it no longer stops for answers (exit 3), answering each round's
/// waiting requests in `folder` from `known` (and calling `each_round` with what it printed
/// first); the last output and the number of rounds.
fn answer_every_round(
    folder: &Path,
    known: &HashMap<String, String>,
    mut command: impl FnMut() -> std::process::Output,
    mut each_round: impl FnMut(&str),
) -> (std::process::Output, usize) {
    let mut rounds = 0;
    loop {
        let out = command();
        if out.status.code() != Some(3) {
            return (out, rounds);
        }
        rounds += 1;
        assert!(rounds < 20, "the handoff never ends");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("waiting for answers: "), "{stdout}");
        each_round(&stdout);
        let prompts = std::fs::read_to_string(folder.join("prompts.md")).unwrap();
        let waiting: Vec<Value> =
            serde_json::from_str(&std::fs::read_to_string(folder.join("prompts.json")).unwrap())
                .unwrap();
        assert!(!waiting.is_empty());
        let mut answers = std::fs::read_to_string(folder.join("answers.jsonl")).unwrap_or_default();
        for request in &waiting {
            let key = request["key"].as_str().unwrap();
            assert!(
                prompts.contains(&format!("key `{key}`")),
                "{key} not in prompts.md"
            );
            let reply = known
                .get(key)
                .unwrap_or_else(|| panic!("{key} was never recorded"));
            answers.push_str(&serde_json::json!({ "key": key, "reply": reply }).to_string());
            answers.push('\n');
        }
        std::fs::write(folder.join("answers.jsonl"), answers).unwrap();
    }
}

#[test]
fn a_run_without_an_api_key_goes_round_by_round_and_ends_as_the_replay_does() {
    let dir = handoff_demo();
    let d = dir.path();
    let folder = d.join(".skill-evolve/runs/demo/handoff");
    let known = replies(d);
    let (out, rounds) = answer_every_round(
        &folder,
        &known,
        || run(d),
        |stdout| {
            assert!(stdout.contains("handoff/prompts.md"), "{stdout}");
        },
    );
    assert!(out.status.success(), "{out:?}");
    // The judges of the training answers; each wrong answer's defect-or-lapse call with its
    // reasoning sub-type beside it; the proposal: each round needs the one before.
    assert_eq!(rounds, 3, "{rounds} round(s)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("1 candidate(s), 1 accepted"), "{stdout}");
    assert!(stdout.contains("staged 1 document(s)"), "{stdout}");
    assert!(
        !folder.join("prompts.md").exists(),
        "a finished run leaves no prompt waiting"
    );
}

#[test]
fn bad_answers_are_refused_with_their_line() {
    let dir = handoff_demo();
    let d = dir.path();
    let out = run(d);
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    let folder = d.join(".skill-evolve/runs/demo/handoff");
    for (answers, needle) in [
        (
            "{\"key\": \"abc\", \"reply\": \"x\"}\n",
            "answers.jsonl:1: the key must be",
        ),
        ("\n{\"reply\": \"x\"}\n", "answers.jsonl:2: not an answer"),
        (
            "{\"key\": \"d641b02d175032dc095a8c7f63a35831f8622c0fbd812d15e6e9971e4f624a72\", \"reply\": \"x\", \"extra\": 1}\n",
            "answers.jsonl:1: not an answer",
        ),
    ] {
        std::fs::write(folder.join("answers.jsonl"), answers).unwrap();
        let out = run(d);
        assert_one_line_error(&out, needle);
    }
    let huge = format!(
        "{{\"key\": \"{}\", \"reply\": \"{}\"}}\n",
        "a".repeat(64),
        "x".repeat(1024 * 1024 + 1)
    );
    std::fs::write(folder.join("answers.jsonl"), huge).unwrap();
    assert_one_line_error(&run(d), "more than 1048576");
}

#[test]
fn a_dry_run_with_the_handoff_provider_writes_nothing() {
    let dir = handoff_demo();
    let d = dir.path();
    let out = skill_evolve(d)
        .args(["run", "--config", "evolve.toml", "--dry-run"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("llm: handoff: prompts to"));
    assert!(!d.join(".skill-evolve").exists());
}

/// The release-notes example (a skill, its failed trajectories and the replies its cassette
/// recorded), in a fresh folder.
pub(crate) fn release_notes_example() -> tempfile::TempDir {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/release-notes");
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir_all(d.join("temp")).unwrap();
    for name in ["SKILL.md", "demo.cassette"] {
        std::fs::copy(example.join(name), d.join(name)).unwrap();
    }
    for entry in std::fs::read_dir(example.join("temp")).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, d.join("temp").join(path.file_name().unwrap())).unwrap();
    }
    dir
}

fn evolve_handoff(d: &Path) -> std::process::Output {
    skill_evolve(d)
        .args(["evolve", "SKILL.md", "--trajectories", "temp", "--yes"])
        // The model the example's replies were recorded with: its requests' keys name it.
        .args(["--provider", "handoff", "--model", "demo-model"])
        .output()
        .unwrap()
}

#[test]
fn evolve_without_an_api_key_asks_round_by_round_and_writes_what_the_replay_writes() {
    let dir = release_notes_example();
    let d = dir.path();
    let original = std::fs::read_to_string(d.join("SKILL.md")).unwrap();
    let known = replies(d);
    let folder = d.join(".skill-evolve/runs/handoff-SKILL/handoff");
    let (out, rounds) = answer_every_round(
        &folder,
        &known,
        || evolve_handoff(d),
        |stdout| {
            assert!(
                stdout.contains("nothing was written to the skill"),
                "{stdout}"
            );
            assert_eq!(
                std::fs::read_to_string(d.join("SKILL.md")).unwrap(),
                original,
                "the skill changed before the answers were in"
            );
        },
    );
    assert!(out.status.success(), "{out:?}");
    assert!(rounds >= 1, "{rounds} round(s)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("wrote SKILL.md as v000002"), "{stdout}");
    // The same document the recorded session writes.
    let replayed = release_notes_example();
    let out = skill_evolve(replayed.path())
        .args(["evolve", "SKILL.md", "--trajectories", "temp", "--yes"])
        .args(["--provider", "replay", "--cassette", "demo.cassette"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        std::fs::read_to_string(d.join("SKILL.md")).unwrap(),
        std::fs::read_to_string(replayed.path().join("SKILL.md")).unwrap()
    );
    assert!(!folder.join("prompts.md").exists());
}

#[test]
fn a_gated_slow_update_is_not_handed_off() {
    let dir = release_notes_example();
    let d = dir.path();
    std::fs::write(d.join("evolve.toml"), "").unwrap();
    let out = skill_evolve(d)
        .args(["evolve", "SKILL.md", "--trajectories", "temp", "--yes"])
        .args(["--provider", "handoff", "--agent-config", "evolve.toml"])
        .arg("--slow-update")
        .output()
        .unwrap();
    assert_one_line_error(&out, "would gate the candidate twice");
    assert!(!d.join(".skill-evolve").exists(), "something was written");
}

#[test]
fn status_lists_the_evolve_sessions_kept_in_the_project() {
    let example = release_notes_example();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // An Agent Skills folder: the skill, its trajectories and the replies, in a project.
    std::fs::create_dir_all(d.join("skills/notes")).unwrap();
    std::fs::rename(example.path().join("temp"), d.join("temp")).unwrap();
    std::fs::rename(
        example.path().join("demo.cassette"),
        d.join("demo.cassette"),
    )
    .unwrap();
    std::fs::rename(
        example.path().join("SKILL.md"),
        d.join("skills/notes/SKILL.md"),
    )
    .unwrap();
    let evolve = |extra: &[&str]| {
        skill_evolve(d)
            .args(["evolve", "skills/notes/SKILL.md", "--trajectories", "temp"])
            .args(extra)
            .output()
            .unwrap()
    };
    // Without a terminal and without --yes: a candidate, not written.
    let out = evolve(&["--provider", "replay", "--cassette", "demo.cassette"]);
    assert!(out.status.success(), "{out:?}");
    // A handoff waiting for its answers.
    let out = evolve(&["--provider", "handoff", "--model", "demo-model"]);
    assert_eq!(out.status.code(), Some(3), "{out:?}");

    let out = skill_evolve(d).arg("status").output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let shown = String::from_utf8_lossy(&out.stdout);
    let sessions: Vec<&str> = shown
        .lines()
        .filter(|l| l.starts_with("evolve session .skill-evolve/runs/"))
        .collect();
    assert_eq!(sessions.len(), 2, "{shown}");
    // Nothing of them is inside the skill's folder.
    assert!(!d.join("skills/notes/.skill-evolve").exists());
    assert!(
        sessions
            .iter()
            .any(|l| l.contains("/handoff-skills-notes-SKILL: not finished")),
        "{shown}"
    );
    assert!(
        sessions.iter().any(|l| l
            .contains(" of skills/notes/SKILL.md: candidate not written (ungated): ")
            && l.ends_with("SKILL.md")),
        "{shown}"
    );

    // Written with --yes: the session says so, with the version.
    let out = evolve(&[
        "--provider",
        "replay",
        "--cassette",
        "demo.cassette",
        "--yes",
    ]);
    assert!(out.status.success(), "{out:?}");
    let shown = String::from_utf8_lossy(&skill_evolve(d).arg("status").output().unwrap().stdout)
        .into_owned();
    assert!(
        shown.contains(" of skills/notes/SKILL.md: written as v000002 (ungated)"),
        "{shown}"
    );
}

#[test]
fn a_run_whose_every_answer_is_unreadable_says_which_and_fails() {
    let dir = handoff_demo();
    let d = dir.path();
    let folder = d.join(".skill-evolve/runs/demo/handoff");
    // Every request answered with prose where JSON is asked for.
    let mut rounds = 0;
    let out = loop {
        let out = run(d);
        if out.status.code() != Some(3) {
            break out;
        }
        rounds += 1;
        assert!(rounds < 20, "the handoff never ends");
        let waiting: Vec<Value> =
            serde_json::from_str(&std::fs::read_to_string(folder.join("prompts.json")).unwrap())
                .unwrap();
        let mut answers = std::fs::read_to_string(folder.join("answers.jsonl")).unwrap_or_default();
        for request in &waiting {
            let reply = "I had a look and the skill reads fine to me.";
            answers.push_str(
                &serde_json::json!({ "key": request["key"], "reply": reply }).to_string(),
            );
            answers.push('\n');
        }
        std::fs::write(folder.join("answers.jsonl"), answers).unwrap();
    };
    // The resumed run's progress lines, then one line naming the answers.
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let last = stderr.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("error: ")
            && last.contains("answers.jsonl: every answer the run used is unreadable"),
        "{stderr}"
    );
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("finished ("),
        "{out:?}"
    );
    assert!(stderr.contains("line 1 ("), "{stderr}");
    assert!(stderr.contains("not a JSON object"), "{stderr}");
    assert!(stderr.contains("--fresh"), "{stderr}");
    let report = std::fs::read_to_string(d.join(".skill-evolve/runs/demo/report.md")).unwrap();
    assert!(report.contains("## Unreadable handoff answers"), "{report}");
    assert!(report.contains("- line 1 ("), "{report}");
}

#[test]
fn a_fresh_start_says_it_reuses_the_earlier_answers() {
    let dir = handoff_demo();
    let d = dir.path();
    let folder = d.join(".skill-evolve/runs/demo/handoff");
    let known = replies(d);
    assert_eq!(run(d).status.code(), Some(3));
    let waiting: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(folder.join("prompts.json")).unwrap())
            .unwrap();
    let answers: String = waiting
        .iter()
        .map(|r| {
            let key = r["key"].as_str().unwrap();
            format!(
                "{}\n",
                serde_json::json!({ "key": key, "reply": known[key] })
            )
        })
        .collect();
    std::fs::write(folder.join("answers.jsonl"), answers).unwrap();
    let said = format!("keeps {} earlier answer(s)", waiting.len());
    for dry_run in [true, false] {
        let mut command = skill_evolve(d);
        command.args(["run", "--config", "evolve.toml", "--fresh"]);
        if dry_run {
            command.arg("--dry-run");
        }
        let out = command.output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains(&said), "{stdout}");
        assert!(stdout.contains("handoff/answers.jsonl"), "{stdout}");
    }
    // Without earlier answers a fresh start says nothing of them.
    std::fs::remove_file(folder.join("answers.jsonl")).unwrap();
    let out = skill_evolve(d)
        .args(["run", "--config", "evolve.toml", "--fresh"])
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&out.stdout).contains("earlier answer"));
}

/// Every training answer of the demo's first batch has a rubric check: their verdicts are
/// handed off together, in one round, not one round each; and the diagnosis of those answers
/// asks all its judges in its first round, not as many as an API would take at once.
#[test]
fn the_rubric_verdicts_of_a_batch_are_asked_in_one_round() {
    let dir = handoff_demo();
    let d = dir.path();
    let config = std::fs::read_to_string(d.join("evolve.toml")).unwrap();
    let config = config
        .replace("train = 0.1", "train = 0.4")
        .replace("gate = 0.7", "gate = 0.4");
    std::fs::write(d.join("evolve.toml"), config).unwrap();
    let questions: String = std::fs::read_to_string(d.join("questions.jsonl"))
        .unwrap()
        .lines()
        .map(|line| {
            let mut q: serde_json::Map<String, Value> = serde_json::from_str(line).unwrap();
            let answer = q.remove("answer").unwrap();
            q.insert(
                "check".to_owned(),
                serde_json::json!({"kind": "rubric", "text": format!("The answer is {answer}.")}),
            );
            Value::Object(q).to_string() + "\n"
        })
        .collect();
    let train = questions.lines().count() * 4 / 10;
    std::fs::write(d.join("questions.jsonl"), questions).unwrap();
    let folder = d.join(".skill-evolve/runs/demo/handoff");
    // Each round's tags, until the first that asks for more than rubric verdicts.
    let mut rounds: Vec<Vec<String>> = Vec::new();
    loop {
        let out = run(d);
        assert_eq!(out.status.code(), Some(3), "{out:?}");
        let waiting: Vec<Value> =
            serde_json::from_str(&std::fs::read_to_string(folder.join("prompts.json")).unwrap())
                .unwrap();
        let tags: Vec<String> = waiting
            .iter()
            .map(|w| w["tag"].as_str().unwrap_or_default().to_owned())
            .collect();
        let only_rubrics = tags.iter().all(|t| t == "judge.rubric");
        rounds.push(tags);
        if !only_rubrics {
            break;
        }
        assert!(rounds.len() < 20, "the rubric rounds never end: {rounds:?}");
        let mut answers = std::fs::read_to_string(folder.join("answers.jsonl")).unwrap_or_default();
        answers += &waiting
            .iter()
            .map(|w| {
                let reply = serde_json::json!({"passed": false, "reason": "not what it asks"});
                serde_json::json!({"key": w["key"], "reply": reply.to_string()}).to_string() + "\n"
            })
            .collect::<String>();
        std::fs::write(folder.join("answers.jsonl"), answers).unwrap();
    }
    // One round of every training answer's verdict, then the diagnosis, whose first round
    // asks every judge of every (wrong) training answer at once: three each.
    assert_eq!(rounds.len(), 2, "{rounds:?}");
    assert_eq!(
        rounds[0],
        vec!["judge.rubric".to_owned(); train],
        "{rounds:?}"
    );
    assert_eq!(rounds[1].len(), 3 * train, "{rounds:?}");
    assert!(
        rounds[1].iter().all(|t| t.starts_with("judge.")),
        "{rounds:?}"
    );
}
