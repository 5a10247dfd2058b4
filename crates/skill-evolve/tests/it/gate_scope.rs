//! A skill of a folder gated alone: `evolve --agent-config` gives the agent the workspace
//! `run` gives it (`skills/refunds/SKILL.md` arrives as `refunds.md`, and its folder as
//! `refunds/`, beside the folder's other skills), gates a skill's candidate only on the questions of the task types that
//! skill serves, and both commands refuse, by name, a skill whose own gate questions could
//! never accept a candidate.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::atomic::Ordering;

use crate::evolve_gated::{evolve_skill, json_of};
use crate::fake_llm::{REFUND_RULE, start_evolve_refund_rule};
use crate::support::{assert_one_line_error, skill_evolve, snapshot};

/// A failed trajectory whose question is in no question set below.
const TRAJECTORY: &str = r#"{"id": "t1", "task_description": "refund", "question": "May I have my money back?",
  "fail_reason": "answered unknown", "predicted_answer": "unknown", "reference_text": "yes"}"#;

/// An agent that answers `refund` questions `yes` only when the workspace's `refunds.md`
/// holds [`REFUND_RULE`] (every other question `yes` at once), and logs each request and
/// the files of its skills folder.
const AGENT: &str = r#"#!/bin/sh
while IFS= read -r line; do
  printf '%s\n' "$line" >> requests.log
  skills=$(printf '%s' "$line" | sed -n 's/.*"skills_dir":"\([^"]*\)".*/\1/p')
  qid=$(printf '%s' "$line" | sed -n 's/.*"question_id":"\([^"]*\)".*/\1/p')
  task=$(printf '%s' "$line" | sed -n 's/.*"task_type":"\([^"]*\)".*/\1/p')
  ls "$skills" | tr '\n' ' ' >> files.log
  printf '\n' >> files.log
  answer=yes
  if [ "$task" = refund ]; then
    answer=unknown
    if grep -qx 'RULE refund => yes' "$skills/refunds.md" 2>/dev/null; then answer=yes; fi
  fi
  printf '{"type":"result","question_id":"%s","prediction":"%s"}\n' "$qid" "$answer"
done
"#;

/// A skill named `name`, without a rule for refund questions.
fn skill(name: &str) -> String {
    format!(
        "---\nname: {name}\ndescription: How to help.\n---\n\n# {name}\n\nRULE other => no\n\n\
         <!-- SLOW_UPDATE_START -->\n## Long-Term Guidance\n\n<!-- SLOW_UPDATE_END -->\n"
    )
}

/// A project: the Agent Skills folder `skills/{refunds,billing,support}/SKILL.md`, the
/// agent, one failed trajectory, `counts` questions of the task types `refund`, `billing`
/// and `support` (`[skills]` maps `refund` to `refunds`, the others find the skill of their
/// name), and `evolve.toml` sending
/// `gate_share` of them to the gate.
fn project(counts: [usize; 3], gate_share: f64) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for name in ["refunds", "billing", "support"] {
        std::fs::create_dir_all(d.join("skills").join(name)).unwrap();
        std::fs::write(d.join("skills").join(name).join("SKILL.md"), skill(name)).unwrap();
    }
    std::fs::write(d.join("agent.sh"), AGENT).unwrap();
    std::fs::create_dir_all(d.join("temp")).unwrap();
    std::fs::write(d.join("temp/failed_trajectory_001.json"), TRAJECTORY).unwrap();
    let mut questions = String::new();
    let mut i = 0;
    for (task, n) in ["refund", "billing", "support"].iter().zip(counts) {
        for _ in 0..n {
            questions.push_str(&format!(
                "{{\"question_id\": \"q{i}\", \"task_type\": \"{task}\", \
                 \"question\": \"{task} question {i}\", \"answer\": \"yes\"}}\n"
            ));
            i += 1;
        }
    }
    std::fs::write(d.join("questions.jsonl"), questions).unwrap();
    std::fs::write(
        d.join("evolve.toml"),
        format!(
            "[run]\nname = \"desk\"\nskills = \"skills\"\nmax_epochs = 1\n\n\
             [agent]\ncommand = [\"sh\", \"agent.sh\"]\ntimeout_secs = 30\n\n\
             [questions]\nfile = \"questions.jsonl\"\ntrain = {:?}\ngate = {gate_share:?}\nseed = 3\n\n\
             [gate]\nparams = \"calibrated\"\nladder = [6, 12]\ncalibration = \"e-process\"\nanswers_per_question = 1\n\n\
             [skills]\nrefund = \"refunds\"\n\n\
             [llm.openai]\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"m\"\n",
            1.0 - gate_share
        ),
    )
    .unwrap();
    dir
}

/// Every request the agent received, as JSON.
fn requests(d: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(d.join("requests.log"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn gated_evolve_names_the_skill_as_run_does_and_gates_only_its_task_types() {
    let fake = start_evolve_refund_rule();
    // 40 questions, 34 of them gate questions: the refund ones among them serve the skill.
    let dir = project([20, 10, 10], 0.85);
    let d = dir.path();
    let out = evolve_skill(
        d,
        "skills/refunds/SKILL.md",
        &fake.base_url,
        &["--agent-config", "evolve.toml", "--yes", "--json"],
    );
    let summary = json_of(&out);
    let gate = &summary["gate"];
    assert_eq!(gate["document"], "refunds.md", "{gate}");
    let served = gate["gate_questions"].as_u64().unwrap();
    assert!((9..34).contains(&served), "{gate}");
    let note = gate["note"].as_str().unwrap();
    assert!(
        note.contains(&format!(
            "(refunds: {served} of 34 gate questions serve this skill)"
        )),
        "{note}"
    );
    // The agent read the rule from `refunds.md`: every refund gate question is a win.
    let verdict = &gate["verdicts"][0];
    assert_eq!(verdict["passed"], true, "{verdict}");
    assert_eq!(verdict["w"].as_u64(), Some(served), "{verdict}");
    assert_eq!(verdict["l"], 0, "{verdict}");
    assert_eq!(
        verdict["paired"].as_u64().unwrap() + verdict["remaining"].as_u64().unwrap(),
        served,
        "{verdict}"
    );
    let written = std::fs::read_to_string(d.join("skills/refunds/SKILL.md")).unwrap();
    assert!(written.contains(REFUND_RULE), "{written}");
    // Only refund questions were asked, in workspaces named as `run` names them.
    let asked = requests(d);
    assert!(!asked.is_empty());
    for request in &asked {
        assert_eq!(request["question"]["task_type"], "refund", "{request}");
    }
    let files: BTreeSet<String> = std::fs::read_to_string(d.join("files.log"))
        .unwrap()
        .lines()
        .map(|l| l.trim().to_owned())
        .collect();
    assert_eq!(
        files,
        BTreeSet::from(["billing billing.md refunds refunds.md support support.md".to_owned()]),
        "{files:?}"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "gate reach of skill refunds: {served} of 34 gate questions serve this skill"
        )),
        "{stderr}"
    );
}

#[test]
fn a_skill_whose_own_gate_questions_cannot_accept_is_refused_by_name() {
    // 40 questions, 30 of them to the gate: the 4 support questions leave the support
    // skill too few gate questions of its own.
    let dir = project([18, 18, 4], 0.75);
    let d = dir.path();
    let before = snapshot(d);
    let out = skill_evolve(d)
        .args(["run", "--config", "evolve.toml", "--dry-run"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_one_line_error(&out, "skill support: the ");
    assert!(
        stderr.contains("gate question(s) of its task types cannot accept any candidate of this skill (of 30 gate questions in all)")
            && stderr.contains("and at least 9 gate questions are needed"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("skill refunds") && !stderr.contains("skill billing"),
        "{stderr}"
    );
    // A gated evolve of that skill is refused the same way, before any LLM call.
    let fake = start_evolve_refund_rule();
    let out = evolve_skill(
        d,
        "skills/support/SKILL.md",
        &fake.base_url,
        &["--agent-config", "evolve.toml", "--yes"],
    );
    assert_one_line_error(&out, "skill support: the ");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("gate questions are needed"),
        "{out:?}"
    );
    assert_eq!(fake.calls.load(Ordering::SeqCst), 0);
    assert!(requests(d).is_empty(), "no agent was started");
    assert_eq!(snapshot(d), before, "a refused command writes nothing");
    // With sixteen questions of each task type every skill can be gated, and the dry run
    // says how many gate questions each has.
    let dir = project([16, 16, 16], 0.9);
    let out = skill_evolve(dir.path())
        .args(["run", "--config", "evolve.toml", "--dry-run"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let printed = String::from_utf8(out.stdout).unwrap();
    let counts: Vec<usize> = ["refunds", "billing", "support"]
        .iter()
        .map(|skill| {
            let head = format!("gate reach of skill {skill}: ");
            let line = printed
                .lines()
                .find(|l| l.starts_with(&head))
                .unwrap_or_else(|| panic!("no reach line for {skill}:\n{printed}"));
            assert!(
                line.contains(" of 43 gate questions serve this skill; "),
                "{line}"
            );
            line[head.len()..]
                .split(' ')
                .next()
                .unwrap()
                .parse()
                .unwrap()
        })
        .collect();
    assert_eq!(counts.iter().sum::<usize>(), 43, "{printed}");
    assert!(!printed.contains("gate reach: "), "{printed}");
}

#[test]
fn several_skills_refused_get_one_short_line_each_and_one_trailer() {
    // Four questions each for refunds and billing leave both too few gate questions.
    let dir = project([4, 4, 30], 0.75);
    let d = dir.path();
    let before = snapshot(d);
    let out = skill_evolve(d)
        .args(["run", "--config", "evolve.toml", "--dry-run"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 4, "{stderr}");
    assert!(
        lines[0].starts_with("error: ")
            && lines[0].ends_with("no candidate can be accepted on 2 sets of gate questions:"),
        "{stderr}"
    );
    for skill in ["refunds", "billing"] {
        let line = lines[1..3]
            .iter()
            .find(|l| l.starts_with(&format!("  {skill}: ")))
            .unwrap_or_else(|| panic!("no line for {skill}: {stderr}"));
        assert!(line.contains("gate questions are needed"), "{stderr}");
        assert!(line.chars().count() < 160, "{line}");
    }
    assert!(
        lines[3].starts_with("the first candidate of each "),
        "{stderr}"
    );
    assert!(lines[3].ends_with("(nothing was run)"), "{stderr}");
    assert_eq!(stderr.matches("nothing was run").count(), 1, "{stderr}");
    assert_eq!(snapshot(d), before, "a refused command writes nothing");
}

#[test]
fn the_agent_starts_in_the_configurations_folder_wherever_the_command_is_run() {
    // `[agent] command = ["sh", "agent.sh"]` names a script of the project folder; run from
    // its `skills/` subfolder, the agent still finds it.
    let fake = start_evolve_refund_rule();
    let dir = project([20, 10, 10], 0.85);
    let d = dir.path();
    let out = skill_evolve(&d.join("skills"))
        .args(["evolve", "refunds/SKILL.md", "--trajectories", "../temp"])
        .args(["--provider", "openai", "--base-url", &fake.base_url])
        .args(["--model", "fake-model"])
        .args(["--agent-config", "../evolve.toml", "--yes", "--json"])
        .output()
        .unwrap();
    let summary = json_of(&out);
    let verdict = &summary["gate"]["verdicts"][0];
    assert_eq!(verdict["passed"], true, "{summary}");
    assert!(
        !requests(d).is_empty(),
        "the agent wrote its log in the project"
    );
    assert!(!d.join("skills/requests.log").exists());
}

#[test]
fn gated_evolve_asks_the_model_of_the_agent_configurations_llm_table() {
    // No model flag: the `[llm.openai]` of `evolve.toml` names the model server.
    let fake = start_evolve_refund_rule();
    let dir = project([20, 10, 10], 0.85);
    let d = dir.path();
    let config = std::fs::read_to_string(d.join("evolve.toml")).unwrap();
    let pointed = config.replace("http://127.0.0.1:9/v1", &fake.base_url);
    assert_ne!(pointed, config);
    std::fs::write(d.join("evolve.toml"), pointed).unwrap();
    let out = skill_evolve(d)
        .args([
            "evolve",
            "skills/refunds/SKILL.md",
            "--trajectories",
            "temp",
        ])
        .args(["--agent-config", "evolve.toml", "--yes", "--json"])
        .output()
        .unwrap();
    let summary = json_of(&out);
    assert_eq!(summary["gate"]["verdicts"][0]["passed"], true, "{summary}");
    assert!(fake.calls.load(Ordering::SeqCst) > 0);
}
