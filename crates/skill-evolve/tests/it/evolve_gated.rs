//! `skill-evolve evolve --agent-config`: the candidate is gated against the
//! reference agent on paired rollouts, and only a passing candidate is
//! offered; without an agent the summary says the candidate is ungated.
//! Also `--slow-update` (gated and ungated) and trajectories read from a
//! folder and a SESSION-STATE.md together.

use std::path::Path;
use std::sync::atomic::Ordering;

use evolution_types::RunLog as _;

use crate::evolve::skill_history;
use crate::fake_llm::{
    GUIDANCE, QA_RULE, WRONG_RULE, start, start_evolve_gain, start_evolve_gain_rubric,
    start_evolve_regress,
};
use crate::run::rule_agent;
use crate::runlogs::with_log;
use crate::support::{assert_one_line_error, skill_evolve, snapshot};

/// A skill with no rule for qa questions: the reference agent answers `unknown`.
pub(crate) const SKILL: &str = "---\nname: qa\ndescription: Answer questions.\n---\n\n# QA\n\n\
                     RULE other => no\n\n<!-- SLOW_UPDATE_START -->\n## Long-Term Guidance\n\n\
                     <!-- SLOW_UPDATE_END -->\n";

/// A failed trajectory `t1` whose question is in no question set below.
const TRAJECTORY: &str = r#"{"id": "t1", "task_description": "qa", "question": "Is the sky up?",
  "fail_reason": "answered unknown", "predicted_answer": "unknown", "reference_text": "yes"}"#;

/// An `evolve.toml` as `run` reads it: evolve uses its `[agent]`,
/// `[questions]` and `[gate]`, and accepts the sections only `run` reads.
pub(crate) fn agent_config(agent: &Path, gate_share: &str, extra: &str) -> String {
    format!(
        "[run]\nname = \"demo\"\nskills = \"skill\"\n\n\
         [agent]\ncommand = [{:?}]\ntimeout_secs = 30\n\n\
         [questions]\nfile = \"questions.jsonl\"\ntrain = {:?}\ngate = {gate_share}\nseed = 3\n\n\
         [gate]\nparams = \"calibrated\"\nladder = [6, 12]\ncalibration = \"e-process\"\n{extra}",
        agent.display().to_string(),
        1.0 - gate_share.parse::<f64>().unwrap(),
    )
}

/// A workspace: the skill, one failed trajectory, `n` qa questions whose
/// answer is `yes`, and `evolve.toml`.
pub(crate) fn workspace(skill: &str, n: usize, config: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir_all(d.join("skill")).unwrap();
    std::fs::write(d.join("skill/SKILL.md"), skill).unwrap();
    std::fs::create_dir_all(d.join("temp")).unwrap();
    std::fs::write(d.join("temp/failed_trajectory_001.json"), TRAJECTORY).unwrap();
    let questions: String = (0..n)
        .map(|i| {
            format!(
                "{{\"question_id\": \"q{i}\", \"task_type\": \"qa\", \
                 \"question\": \"qa question {i}\", \"answer\": \"yes\"}}\n"
            )
        })
        .collect();
    std::fs::write(d.join("questions.jsonl"), questions).unwrap();
    std::fs::write(d.join("evolve.toml"), config).unwrap();
    dir
}

/// `evolve` on the workspace against the fake server at `base_url`.
pub(crate) fn evolve(d: &Path, base_url: &str, extra: &[&str]) -> std::process::Output {
    evolve_skill(d, "skill/SKILL.md", base_url, extra)
}

/// `evolve` of the skill file `skill` (relative to `d`) on the trajectories of `d/temp`
/// against the fake server at `base_url`.
pub(crate) fn evolve_skill(
    d: &Path,
    skill: &str,
    base_url: &str,
    extra: &[&str],
) -> std::process::Output {
    skill_evolve(d)
        .args(["evolve", skill, "--trajectories", "temp"])
        .args(["--provider", "openai", "--base-url", base_url])
        .args(["--model", "fake-model"])
        .args(extra)
        .output()
        .unwrap()
}

pub(crate) fn json_of(out: &std::process::Output) -> serde_json::Value {
    assert!(out.status.success(), "{out:?}");
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

#[test]
fn a_candidate_that_passes_the_gate_is_written_and_the_slow_update_is_gated_too() {
    let agent = rule_agent();
    let fake = start_evolve_gain();
    // 2 training and 12 gate questions.
    let dir = workspace(SKILL, 14, &agent_config(&agent, "0.85", ""));
    let d = dir.path();
    let out = evolve(
        d,
        &fake.base_url,
        &[
            "--agent-config",
            "evolve.toml",
            "--slow-update",
            "--yes",
            "--json",
        ],
    );
    let summary = json_of(&out);
    let gate = &summary["gate"];
    assert_eq!(gate["mode"], "gated", "{summary}");
    assert!(
        gate["note"].as_str().unwrap().starts_with("gated: "),
        "{gate}"
    );
    // The rule wins every gate question: 12 wins, E(12, 0) = 630.
    let first = &gate["verdicts"][0];
    assert_eq!(first["candidate"], "evolve");
    assert_eq!(first["passed"], true, "{gate}");
    assert_eq!(first["decision"], "accept_confirmed", "{gate}");
    assert_eq!(
        (first["w"].as_u64(), first["l"].as_u64()),
        (Some(12), Some(0))
    );
    // The slow update's guidance changes no answer: all ties, rejected.
    let second = &gate["verdicts"][1];
    assert_eq!(second["candidate"], "slow-update", "{gate}");
    assert_eq!(second["passed"], false, "{gate}");
    assert_eq!(
        (second["w"].as_u64(), second["l"].as_u64()),
        (Some(0), Some(0))
    );
    let slow = &summary["slow_update"];
    assert_eq!(slow["updated"], true, "{slow}");
    assert!(
        slow["compared_on"]
            .as_str()
            .unwrap()
            .contains("2 training question(s)"),
        "{slow}"
    );
    // Reflect, meta-reflect, slow update.
    assert_eq!(summary["llm_calls"], 3);
    assert_eq!(fake.calls.load(Ordering::SeqCst), 3);
    // Per phase: the rounds' two calls, the slow update's one; the gates run
    // the agent only.
    let phases = summary["usage_by_phase"].as_object().unwrap();
    assert_eq!(phases["propose"]["llm_calls"], 2, "{phases:?}");
    assert_eq!(phases["slow_update"]["llm_calls"], 1, "{phases:?}");
    assert_eq!(phases["gate"]["llm_calls"], 0, "{phases:?}");
    assert!(
        phases["gate"]["rollouts"].as_u64().unwrap() > 0,
        "{phases:?}"
    );
    let calls: u64 = phases
        .values()
        .map(|u| u["llm_calls"].as_u64().unwrap())
        .sum();
    assert_eq!(calls, 3);
    // Written: the gated candidate, without the rejected guidance.
    assert_eq!(summary["written"], true);
    let written = std::fs::read_to_string(d.join("skill/SKILL.md")).unwrap();
    assert!(written.contains(QA_RULE), "{written}");
    assert!(!written.contains(GUIDANCE), "{written}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("gate: evolve passed — accept_confirmed (W=12, L=0, E=630.0"),
        "{stderr}"
    );
    // The session's evidence is in its run folder, the user's store has the version.
    let run = Path::new(summary["run_dir"].as_str().unwrap());
    let run = if run.is_absolute() {
        run.to_path_buf()
    } else {
        d.join(run)
    };
    assert!(run.join("runlog.sqlite").is_file() && run.join("store").is_dir());
    let history = skill_history(d);
    let message = history["history"][1]["message"].as_str().unwrap();
    assert!(
        message.contains("gated, accept_confirmed (W=12, L=0"),
        "{message}"
    );
}

#[test]
fn rubric_checks_are_judged_by_the_sessions_llm_for_both_arms() {
    let agent = rule_agent();
    // The judge passes an answer when it is `yes`.
    let fake = start_evolve_gain_rubric();
    let dir = workspace(SKILL, 14, &agent_config(&agent, "0.85", ""));
    let d = dir.path();
    // Every question is checked by a rubric instead of an answer.
    let questions: String = (0..14)
        .map(|i| {
            format!(
                "{{\"question_id\": \"q{i}\", \"task_type\": \"qa\", \
                 \"question\": \"qa question {i}\", \
                 \"check\": {{\"kind\": \"rubric\", \"text\": \"agrees\"}}}}\n"
            )
        })
        .collect();
    std::fs::write(d.join("questions.jsonl"), questions).unwrap();
    let summary = json_of(&evolve(
        d,
        &fake.base_url,
        &["--agent-config", "evolve.toml", "--yes", "--json"],
    ));
    // The baseline answers `unknown` (judged wrong), the candidate `yes` (judged right).
    let first = &summary["gate"]["verdicts"][0];
    assert_eq!(first["passed"], true, "{summary}");
    assert_eq!(
        (first["w"].as_u64(), first["l"].as_u64()),
        (Some(12), Some(0)),
        "{first}"
    );
    // One judge call per answer of either arm, metered in the gate's phase.
    let phases = summary["usage_by_phase"].as_object().unwrap();
    let rollouts = phases["gate"]["rollouts"].as_u64().unwrap();
    assert_eq!(
        phases["gate"]["llm_calls"].as_u64(),
        Some(rollouts),
        "{phases:?}"
    );
    assert_eq!(rollouts, 24, "{phases:?}");
    assert_eq!(summary["llm_calls"], 2 + 24);
    assert_eq!(fake.calls.load(Ordering::SeqCst), 2 + 24);
    assert_eq!(summary["written"], true);
    // The judge's reasons are kept with the answers in the session's run log.
    let run = Path::new(summary["run_dir"].as_str().unwrap());
    let run = if run.is_absolute() {
        run.to_path_buf()
    } else {
        d.join(run)
    };
    let reasons: Vec<String> = with_log(&run.join("runlog.sqlite"), async |log| {
        let mut reasons = Vec::new();
        for run in log.runs().await.unwrap() {
            for p in log.get_predictions(&run.run_id, None).await.unwrap() {
                let reason = p.extra.get("rubric_reason").and_then(|r| r.as_str());
                reasons.push(reason.unwrap_or_default().to_owned());
            }
        }
        reasons
    });
    assert_eq!(reasons.len(), 24, "{reasons:?}");
    assert!(
        reasons.contains(&"answered \"yes\"".to_owned()),
        "{reasons:?}"
    );
    assert!(
        reasons.contains(&"answered \"unknown\"".to_owned()),
        "{reasons:?}"
    );
}

#[test]
fn a_candidate_that_fails_the_gate_is_reported_and_nothing_is_written() {
    let agent = rule_agent();
    let fake = start_evolve_regress();
    // The skill already answers qa questions right; the candidate breaks it.
    let skill = SKILL.replace("RULE other => no", &format!("RULE other => no\n{QA_RULE}"));
    let dir = workspace(&skill, 14, &agent_config(&agent, "0.85", ""));
    let d = dir.path();
    let before = snapshot(&d.join("skill"));
    let out = evolve(
        d,
        &fake.base_url,
        &["--agent-config", "evolve.toml", "--yes"],
    );
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    let line = stdout
        .lines()
        .find(|l| l.starts_with("gate: evolve failed"))
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(line.contains("reject"), "{line}");
    assert!(line.contains("W=0, L=6, E="), "{line}");
    assert!(
        stdout.contains("not written: the candidate did not pass the gate"),
        "{stdout}"
    );
    // The skill and its store are untouched; the report says why.
    let mut after = snapshot(&d.join("skill"));
    after.retain(|(p, _)| !p.starts_with(".skill-evolve/runs"));
    assert_eq!(after, before);
    assert!(!d.join("skill/.skill-evolve/store").exists());
    let report = stdout
        .lines()
        .find_map(|l| l.strip_prefix("run report: "))
        .unwrap();
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join(report)).unwrap()).unwrap();
    assert_eq!(report["written"], false);
    assert_eq!(report["gate"]["verdicts"][0]["passed"], false);
    assert_eq!(report["gate"]["verdicts"][0]["l"], 6);
    let candidate =
        std::fs::read_to_string(report["candidate"].as_str().map(|p| d.join(p)).unwrap()).unwrap();
    assert!(candidate.contains(WRONG_RULE));
    // A run folder holding a gated session is not reused: its run log would
    // mix two sessions' answers.
    let run_dir = report["run_dir"].as_str().unwrap().to_owned();
    let before = snapshot(d);
    let again = evolve(
        d,
        &fake.base_url,
        &["--agent-config", "evolve.toml", "--run-dir", &run_dir],
    );
    assert_one_line_error(&again, "already holds a gated session");
    assert_eq!(snapshot(d), before);
}

/// An agent that appends its environment to `env.txt` and answers `unknown`.
const ENV_AGENT: &str = "read -r line\nenv >> env.txt\n\
                         printf '{\"type\":\"result\",\"prediction\":\"unknown\"}\\n'\n";

#[test]
fn the_gates_agent_does_not_get_the_llms_api_key() {
    let fake = start_evolve_gain();
    let config = agent_config(Path::new("sh"), "0.75", "")
        .replace("command = [\"sh\"]", "command = [\"sh\", \"agent.sh\"]");
    // 3 training and 9 gate questions: enough for the gate to accept a
    // candidate at all, so the agent runs.
    let dir = workspace(SKILL, 12, &config);
    let d = dir.path();
    std::fs::write(d.join("agent.sh"), ENV_AGENT).unwrap();
    let out = skill_evolve(d)
        .env("EVOLVE_GATED_TEST_KEY", "sk-gated-0123456789")
        .env("EVOLVE_GATED_OTHER", "other")
        .args(["evolve", "skill/SKILL.md", "--trajectories", "temp"])
        .args(["--provider", "openai", "--base-url", &fake.base_url])
        .args([
            "--model",
            "fake-model",
            "--api-key-env",
            "EVOLVE_GATED_TEST_KEY",
        ])
        .args(["--agent-config", "evolve.toml"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let env = std::fs::read_to_string(d.join("env.txt")).unwrap();
    assert!(
        env.lines().any(|l| l == "EVOLVE_GATED_OTHER=other"),
        "{env}"
    );
    assert!(!env.contains("EVOLVE_GATED_TEST_KEY"), "{env}");
    assert!(!env.contains("sk-gated-0123456789"), "{env}");
}

#[test]
fn e_lond_spreads_its_level_over_the_sessions_candidates() {
    let agent = rule_agent();
    let fake = start_evolve_gain();
    // 2 training and 7 gate questions: 7 wins give E ≈ 31.9, above the
    // gate's own 20 but below e-LOND's first level over two candidates.
    let gate_set =
        |n: usize, extra_gate: &str| workspace(SKILL, n, &agent_config(&agent, "0.75", extra_gate));
    let run = |n: usize, extra_gate: &str, args: &[&str]| {
        let dir = gate_set(n, extra_gate);
        let summary = json_of(&evolve(dir.path(), &fake.base_url, args));
        summary["gate"]["verdicts"][0].clone()
    };
    let alone = run(9, "", &["--agent-config", "evolve.toml", "--json"]);
    assert_eq!(alone["passed"], true, "{alone}");
    let needed = alone["e_confirm"].as_f64().unwrap();
    assert!((needed - 20.0).abs() < 1e-9, "{alone}");
    // With the slow update as a second candidate no record of seven gate
    // questions can pass: refused before any call, naming how many it needs.
    let dir = gate_set(9, "");
    let d = dir.path();
    let before = snapshot(d);
    let slow = ["--agent-config", "evolve.toml", "--slow-update", "--json"];
    let out = evolve(d, &fake.base_url, &slow);
    assert_one_line_error(
        &out,
        "the 7 gate question(s) cannot accept any candidate: the first is tested at E ≥ 40.0 \
         (e-LOND: fdr_alpha 0.05 over 2 candidate(s)), and at least 8 gate questions are needed",
    );
    assert_eq!(snapshot(d), before, "a refused evolve writes nothing");
    // With 3 training and 8 gate questions it passes at the raised level:
    // 8 wins give E ≈ 57.1 ≥ 40.
    let with_slow = run(11, "", &slow);
    assert_eq!(with_slow["passed"], true, "{with_slow}");
    assert_eq!(with_slow["w"], 8, "{with_slow}");
    let raised = with_slow["e_confirm"].as_f64().unwrap();
    assert!((raised - 40.0).abs() < 1e-9, "{with_slow}");
    let off = run(9, "fdr_alpha = \"off\"\n", &slow);
    assert_eq!(off["passed"], true, "{off}");
}

#[test]
fn a_provisional_accept_is_judged_on_the_held_back_questions() {
    let agent = rule_agent();
    let fake = start_evolve_gain();
    // 8 questions: 2 training, 6 gate of which half are held back for
    // probation. Without e-LOND the seed preset accepts three wins out of
    // three provisionally (E = 3.75 ≥ 3); three more wins on the held-back
    // questions are not enough to confirm it (E < 20).
    let config = agent_config(&agent, "0.75", "fdr_alpha = \"off\"\nprobation = 0.5\n")
        .replace("params = \"calibrated\"", "params = \"seed\"");
    let dir = workspace(SKILL, 8, &config);
    let d = dir.path();
    let summary = json_of(&evolve(
        d,
        &fake.base_url,
        &["--agent-config", "evolve.toml", "--yes", "--json"],
    ));
    let verdict = &summary["gate"]["verdicts"][0];
    assert_eq!(verdict["decision"], "accept_provisional", "{verdict}");
    assert_eq!(verdict["paired"], 3, "{verdict}");
    assert!(
        verdict["probation"]
            .as_str()
            .unwrap()
            .starts_with("unverified: the held-back questions ran out"),
        "{verdict}"
    );
    assert_eq!(verdict["passed"], true, "{verdict}");
    assert_eq!(summary["written"], true);
    assert!(
        summary["gate"]["note"]
            .as_str()
            .unwrap()
            .contains("fdr_alpha = \"off\"")
    );
}

#[test]
fn gate_questions_among_the_trajectories_fail_closed() {
    let agent = rule_agent();
    for (trajectory, needle) in [
        (
            TRAJECTORY.replace("\"t1\"", "\"q3\""),
            "has the id of trajectory \"q3\"",
        ),
        (
            TRAJECTORY.replace("Is the sky up?", "  QA question\\n 5 "),
            "has the text of trajectory \"t1\"",
        ),
    ] {
        // Every question is a gate question.
        let dir = workspace(SKILL, 8, &agent_config(&agent, "1.0", ""));
        let d = dir.path();
        std::fs::write(d.join("temp/failed_trajectory_001.json"), &trajectory).unwrap();
        let before = snapshot(d);
        let out = evolve(
            d,
            "http://127.0.0.1:9/v1",
            &["--agent-config", "evolve.toml", "--yes"],
        );
        assert_one_line_error(&out, needle);
        assert_one_line_error(&out, "questions.jsonl: gate question");
        assert_eq!(snapshot(d), before);
    }
}

#[test]
fn bad_agent_configurations_are_one_line_before_any_call() {
    let agent = rule_agent();
    let good = agent_config(&agent, "0.85", "");
    let cases = [
        (good.replace("[gate]", "[gates]"), "evolve.toml:"),
        (
            good.replace("timeout_secs = 30", "timeout_secs = 0"),
            "[agent] timeout_secs must be at least 1",
        ),
        (
            good.replace("params = \"calibrated\"", "params = \"tuned\""),
            "unknown variant `tuned`",
        ),
        // The preset's values overridden in `[gate]` are checked as `run` checks them.
        (
            good.replace("ladder = [6, 12]", "ladder = [6, 12]\ne_confirm = 0.5"),
            "[gate]: invalid gate parameter e_confirm = 0.5",
        ),
    ];
    for (config, needle) in cases {
        let dir = workspace(SKILL, 14, &config);
        let d = dir.path();
        let before = snapshot(d);
        let out = evolve(
            d,
            "http://127.0.0.1:9/v1",
            &["--agent-config", "evolve.toml"],
        );
        assert_one_line_error(&out, needle);
        assert_eq!(snapshot(d), before);
    }
    // The slow update compares on training questions: the split must leave one.
    let dir = workspace(SKILL, 8, &agent_config(&agent, "1.0", ""));
    let out = evolve(
        dir.path(),
        "http://127.0.0.1:9/v1",
        &["--agent-config", "evolve.toml", "--slow-update"],
    );
    assert_one_line_error(&out, "leaves 0 training and 8 gate questions");
}

#[test]
fn without_an_agent_the_candidate_is_said_to_be_ungated() {
    let fake = start_evolve_gain();
    let dir = workspace(SKILL, 1, "");
    let d = dir.path();
    let out = evolve(d, &fake.base_url, &["--yes"]);
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        stdout.contains(
            "ungated: no agent or question set configured, the candidate was not tested \
             against the agent"
        ),
        "{stdout}"
    );
    let dir = workspace(SKILL, 1, "");
    let summary = json_of(&evolve(dir.path(), &fake.base_url, &["--json"]));
    assert_eq!(summary["gate"]["mode"], "ungated");
    assert!(
        summary["gate"]["note"]
            .as_str()
            .unwrap()
            .starts_with("ungated: no agent or question set configured"),
        "{summary}"
    );
    assert_eq!(summary["gate"]["verdicts"], serde_json::json!([]));
}

#[test]
fn an_ungated_slow_update_writes_guidance_and_says_what_it_compared() {
    let fake = start_evolve_gain();
    let dir = workspace(SKILL, 1, "");
    let d = dir.path();
    let summary = json_of(&evolve(
        d,
        &fake.base_url,
        &["--slow-update", "--yes", "--json"],
    ));
    assert_eq!(summary["gate"]["mode"], "ungated");
    let slow = &summary["slow_update"];
    assert_eq!(slow["updated"], true, "{slow}");
    assert!(
        slow["compared_on"]
            .as_str()
            .unwrap()
            .starts_with("ungated: "),
        "{slow}"
    );
    assert_eq!(summary["llm_calls"], 3);
    // Ungated: no gate phase, only the rounds and the slow update called the model.
    let phases = summary["usage_by_phase"].as_object().unwrap();
    let names: Vec<&str> = phases.keys().map(String::as_str).collect();
    assert_eq!(names, ["propose", "slow_update"], "{phases:?}");
    assert_eq!(phases["propose"]["llm_calls"], 2, "{phases:?}");
    assert_eq!(phases["slow_update"]["llm_calls"], 1, "{phases:?}");
    // The session's page shows them as a table.
    let page = std::path::Path::new(summary["run_dir"].as_str().unwrap()).join("report.html");
    let html = std::fs::read_to_string(d.join(page)).unwrap();
    assert!(
        html.contains("<h2 id=\"usage\">Usage by phase</h2>"),
        "{html}"
    );
    assert!(
        html.contains("<tr><td>propose</td><td class=\"num\">2</td>"),
        "{html}"
    );
    assert!(
        html.contains("<tr><td>slow update</td><td class=\"num\">1</td>"),
        "{html}"
    );
    let written = std::fs::read_to_string(d.join("skill/SKILL.md")).unwrap();
    let start = written.find("<!-- SLOW_UPDATE_START -->").unwrap();
    assert!(written[start..].contains(GUIDANCE), "{written}");
    assert!(written[..start].contains(QA_RULE), "{written}");
}

#[test]
fn trajectories_and_a_session_state_are_reflected_on_together() {
    let dir = crate::evolve::workspace(crate::evolve::SKILL);
    let d = dir.path();
    std::fs::write(
        d.join("SESSION-STATE.md"),
        "# Session\n\n## Outcomes\n- hard_success: false\n\
         - fail_reason: \"the notes missed the security fix\"\n\
         - task_description: \"release notes for 1.6.0\"\n",
    )
    .unwrap();
    let fake = start();
    let out = skill_evolve(d)
        .args(["evolve", "skill/SKILL.md", "--trajectories", "temp"])
        .args(["--session-state", "SESSION-STATE.md", "--json"])
        .args(["--provider", "openai", "--base-url", &fake.base_url])
        .args(["--model", "fake-model", "--record", "both.cassette"])
        .output()
        .unwrap();
    let summary = json_of(&out);
    // Two failures of the folder, one of the session state, in one batch.
    assert_eq!(summary["failures"], 3, "{summary}");
    assert_eq!(summary["passed_trajectories"], 1);
    assert_eq!(summary["rounds"][0]["trajectories"], 3, "{summary}");
    let cassette = std::fs::read_to_string(d.join("both.cassette")).unwrap();
    assert!(cassette.contains("the notes missed the security fix"));
    assert!(cassette.contains("A crash fix that users had reported"));
}

#[test]
fn the_slow_update_prompt_comes_from_the_prompts_folder_when_it_has_one() {
    let fake = start_evolve_gain();
    let dir = workspace(SKILL, 1, "");
    let d = dir.path();
    std::fs::create_dir_all(d.join("prompts")).unwrap();
    // The fake server answers the slow update by its words "long-term guidance".
    std::fs::write(
        d.join("prompts/slow_update.md"),
        "HOUSE long-term guidance for {{current_skill}} after {{regressions}}\n",
    )
    .unwrap();
    let summary = json_of(&evolve(
        d,
        &fake.base_url,
        &[
            "--slow-update",
            "--prompts",
            "prompts",
            "--json",
            "--record",
            "slow.cassette",
        ],
    ));
    assert_eq!(summary["slow_update"]["updated"], true, "{summary}");
    let cassette = std::fs::read_to_string(d.join("slow.cassette")).unwrap();
    let asked: Vec<serde_json::Value> = cassette
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let slow: Vec<&str> = asked
        .iter()
        .flat_map(|entry| entry["messages"].as_array().unwrap())
        .filter_map(|m| m["content"].as_str())
        .filter(|text| text.starts_with("HOUSE long-term guidance for "))
        .collect();
    assert_eq!(slow.len(), 1, "{cassette}");
    assert!(
        slow[0].contains(QA_RULE),
        "the candidate is filled in: {}",
        slow[0]
    );
}
