//! After a run: its report explains the gate table (or why it is empty),
//! `status` lists the run ids of its run log, and `diagnose` with a wrong
//! `--run-id` names the valid ones.

use crate::run::{loop_config, rule_agent, run_workspace_with};
use crate::support::{assert_one_line_error, skill_evolve};

#[test]
fn the_report_explains_the_table_and_status_and_diagnose_name_the_run_ids() {
    let agent = rule_agent();
    let fake = crate::fake_llm::start_loop();
    let dir = run_workspace_with(&loop_config(&agent, &fake.base_url), 14);
    let d = dir.path();
    let out = skill_evolve(d)
        .env("SKILL_EVOLVE_TEST_KEY", "k")
        .args(["run", "--config", "evolve.toml"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let report = std::fs::read_to_string(d.join(".skill-evolve/runs/demo/report.md")).unwrap();
    for line in [
        "- **W** (wins): ",
        "- **L** (losses): ",
        "- **E**: the e-value",
        "- **δ̂**: the estimated gain in accuracy, (W − L) / paired.",
        "- `accept_confirmed`: ",
        "- `accept_provisional`: ",
        "- `reject_directional`: ",
        "- `reject_futility`: ",
        "- `reject_inertia`: ",
        "- `continue`: ",
    ] {
        assert!(
            report.lines().any(|l| l.starts_with(line)),
            "{line:?} not in {report}"
        );
    }
    assert!(!report.contains("No candidate was gated"), "{report}");

    let out = skill_evolve(d).arg("status").output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let ids = stdout
        .lines()
        .find(|l| l.contains("run ids in"))
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(ids.contains("runlog.sqlite"), "{ids}");
    assert!(ids.contains("demo_train_e0_v000001"), "{ids}");
    assert!(ids.contains("demo_gate_"), "{ids}");

    let out = skill_evolve(d)
        .args([
            "diagnose",
            "--runlog",
            ".skill-evolve/runs/demo/runlog.sqlite",
        ])
        .args(["--run-id", "demo_train", "--no-llm"])
        .output()
        .unwrap();
    assert_one_line_error(&out, "no run with id \"demo_train\"; the run log holds");
    assert_one_line_error(&out, "\"demo_train_e0_v000001\"");
}

#[test]
fn a_report_without_candidates_says_why() {
    let agent = rule_agent();
    let fake = crate::fake_llm::start_loop();
    let dir = run_workspace_with(&loop_config(&agent, &fake.base_url), 14);
    let d = dir.path();
    // The skill already answers every question: nothing fails.
    std::fs::write(d.join("skills/default-strategy.md"), "RULE qa => yes\n").unwrap();
    let out = skill_evolve(d)
        .env("SKILL_EVOLVE_TEST_KEY", "k")
        .args(["run", "--config", "evolve.toml"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("0 candidate(s)"), "{stdout}");
    let report = std::fs::read_to_string(d.join(".skill-evolve/runs/demo/report.md")).unwrap();
    let why = report
        .lines()
        .find(|l| l.starts_with("No candidate was gated: "))
        .unwrap_or_else(|| panic!("{report}"));
    assert!(
        why.contains("the agent answered all 2 training question(s) correctly"),
        "{why}"
    );
    assert!(why.contains("there was no failure to learn from"), "{why}");
}
