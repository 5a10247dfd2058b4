//! A failure is scored against the version that failed: `skill-evolve run`
//! does not accept a candidate whose documents make the agent stop with an
//! error on the questions it answered right before, however many questions
//! it wins elsewhere — with the gate alone (`fdr_alpha = "off"`) and under
//! the default run-wide error control (e-LOND).

use crate::fake_llm::{completion, start_raw};
use crate::run::{CONFIG, run_to_end};

/// The agent, in POSIX sh: it answers a question of task type `T` with `X`
/// when a skill document holds the line `RULE T => X`, with `unknown`
/// otherwise, and reports an error instead of answering when a document
/// holds the line `STOP T`.
const AGENT: &str = r#"read -r line
tt=$(printf '%s' "$line" | sed -n 's/.*"task_type":"\([^"]*\)".*/\1/p')
dir=$(printf '%s' "$line" | sed -n 's/.*"skills_dir":"\([^"]*\)".*/\1/p')
printf '{"type":"step","tool_name":"read_skill","tool_input":{"task_type":"%s"}}\n' "$tt"
if grep -qsx "STOP $tt" "$dir"/*; then
  printf '{"type":"result","prediction":"","error":"unsure about %s questions, stopped"}\n' "$tt"
  exit 0
fi
ans=$(grep -hs "^RULE $tt => " "$dir"/* | head -n 1 | sed 's/^RULE [^ ]* => //')
[ -n "$ans" ] || ans=unknown
printf '{"type":"result","prediction":"%s"}\n' "$ans"
"#;

/// The skill before the run: a rule for `xa` questions only.
const SKILL: &str = "RULE xa => yes\nRULE other => no\n";

/// The proposed edit: a rule that wins the `qa` questions, and the `xa`
/// rule (right on every `xa` question) replaced by "stop with an error".
const GIVE_UP: &str = "RULE qa => yes\nSTOP xa";

/// The fake optimizer: the judges of the diagnosis, the edit above, the slow
/// update's guidance.
fn reply(body: &str, _auth: &str) -> (u16, String) {
    let request: serde_json::Value = serde_json::from_str(body).unwrap_or_default();
    let prompt = crate::fake_llm::prompt_text(&request);
    let content = if prompt.contains("You improve a skill document") {
        serde_json::json!({"suggestions": ["qa questions have no rule"],
            "edits": [{"op": "replace", "target": "RULE xa => yes", "content": GIVE_UP}]})
        .to_string()
    } else if prompt.contains("long-term guidance") {
        "Answer every question type from its own rule.".to_owned()
    } else if prompt.contains("for confirmation bias") {
        serde_json::json!({"confirmation_bias": false}).to_string()
    } else if prompt.contains("explored a source") {
        serde_json::json!({"missed_nodes": []}).to_string()
    } else if prompt.contains("Rank them by expected benefit") {
        serde_json::json!({"ranking": [0]}).to_string()
    } else if prompt.contains("Decide whether the failure comes") {
        serde_json::json!({"category": "defect"}).to_string()
    } else if prompt.contains("Classify it with one label") {
        serde_json::json!({"type": "wrong_inference"}).to_string()
    } else if prompt.contains("followed the skill it was given") {
        serde_json::json!({"steps": [
            {"step": "Answer from the rule of the question's type", "followed": false,
             "reason": "no rule for qa"}]})
        .to_string()
    } else {
        serde_json::json!({"evidence_sufficient": true}).to_string()
    };
    (200, completion(&content))
}

/// A run of one epoch over 40 questions, 15% of them to train on: `qa`
/// questions the skill has no rule for (wrong before the edit, right after),
/// `xa` questions its rule answers right (an error after the edit), and `za`
/// questions no version answers right.
fn workspace(base_url: &str, fdr: Option<&str>) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir_all(d.join("skills")).unwrap();
    std::fs::write(d.join("skills/default-strategy.md"), SKILL).unwrap();
    std::fs::write(d.join("agent.sh"), AGENT).unwrap();
    let mut questions = String::new();
    for (task_type, n) in [("qa", 12), ("xa", 14), ("za", 14)] {
        for i in 0..n {
            questions.push_str(&format!(
                "{{\"question_id\": \"{task_type}{i:02}\", \"task_type\": \"{task_type}\", \
                 \"question\": \"?\", \"answer\": \"yes\"}}\n"
            ));
        }
    }
    std::fs::write(d.join("questions.jsonl"), questions).unwrap();
    let mut config = CONFIG
        .replace("max_epochs = 2", "max_epochs = 1")
        .replace("train = 0.5", "train = 0.15")
        .replace("gate = 0.5", "gate = 0.85")
        .replace("max_llm_calls = 10", "max_llm_calls = 500")
        .replace("http://127.0.0.1:9/v1", base_url);
    if let Some(fdr) = fdr {
        config = config.replace(
            "ladder = [2, 4]",
            &format!("ladder = [2, 4]\nfdr_alpha = {fdr}"),
        );
    }
    config = config.replace("ladder = [2, 4]", "ladder = [40]");
    std::fs::write(d.join("evolve.toml"), config).unwrap();
    dir
}

/// The gate table's row of the proposal (not the slow update's).
fn proposal_row(report: &str) -> &str {
    report
        .lines()
        .find(|l| l.starts_with('|') && l.contains("demo_e0_0-") && !l.contains("slow"))
        .unwrap_or_else(|| panic!("no gate row for the proposal in\n{report}"))
}

fn assert_not_accepted(fdr: Option<&str>) {
    let base_url = start_raw(reply);
    let dir = workspace(&base_url, fdr);
    let finished = run_to_end(dir.path());
    // 34 gate questions: the 9 `qa` ones won, the 13 `xa` ones on which the
    // candidate stopped with an error lost (left out, they would have given
    // W = 9, L = 0, E = 102.3 and an accept), the 12 `za` ones tied.
    let row = proposal_row(&finished.report);
    assert!(
        row.contains("| no | 9 | 13 | 34 | 0 | 0.15 | -0.118 | reject_directional |"),
        "{row}\n{}",
        finished.report
    );
    assert!(
        finished.stdout.contains("2 candidate(s), 0 accepted"),
        "{}\n{}",
        finished.stdout,
        finished.report
    );
    let staged = dir
        .path()
        .join(".skill-evolve/runs/demo/staged/files/default-strategy.md");
    assert!(!staged.exists(), "the candidate was staged for adoption");
}

#[test]
fn failure_scoring_rejects_a_candidate_that_gives_up_with_the_gate_alone() {
    assert_not_accepted(Some("\"off\""));
}

#[test]
fn failure_scoring_rejects_a_candidate_that_gives_up_under_e_lond() {
    assert_not_accepted(None);
}
