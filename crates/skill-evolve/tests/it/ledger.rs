//! The project's ledger of gate tests (`[gate] ledger = true`): e-LOND's spending goes on
//! across runs of the same skill instead of starting again, the gate questions that
//! accepted a version do not gate its successors, a resumed run counts nothing twice, and
//! `status` shows each skill's ledger.

use std::path::Path;

use crate::run::{live_config, rule_agent, run_to_end, run_workspace_with, with_agent};
use crate::support::{assert_one_line_error, run_config, skill_evolve, snapshot};

/// One epoch of the reference agent against the fake loop LLM on 40 qa questions (6 to
/// train on, 34 to gate), with the ledger spreading 0.05 over 10 tests of the skill. The
/// run's own horizon is one candidate (`E ≥ 20`); the ledger's first test needs
/// `10 / 0.05 = 200`, its second, after one accept, `10 / (0.05 · 2) = 100`.
fn ledger_config(agent: &Path, base_url: &str, extra: &str) -> String {
    with_agent(&live_config(base_url), agent)
        .replace("train = 0.5", "train = 0.15")
        .replace("gate = 0.5", "gate = 0.85")
        .replace("max_epochs = 2", "max_epochs = 1")
        .replace(
            "ladder = [6, 12]",
            &format!(
                "ladder = [6, 12]\nanswers_per_question = 1\nledger = true\nledger_horizon = 10\n{extra}"
            ),
        )
}

fn ledger_json(d: &Path) -> serde_json::Value {
    let path = d.join(".skill-evolve/ledger/skills/default-strategy.md.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

fn strings(value: &serde_json::Value) -> Vec<String> {
    value
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect()
}

fn fresh_run(d: &Path) -> crate::run::Finished {
    let out = run_config(d, &["--fresh"]);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let report = std::fs::read_to_string(d.join(".skill-evolve/runs/demo/report.md")).unwrap();
    crate::run::Finished {
        stdout,
        stderr,
        report,
    }
}

#[test]
fn spending_and_used_questions_carry_over_to_the_next_run() {
    let agent = rule_agent();
    let fake = crate::fake_llm::start_loop();
    let dir = run_workspace_with(&ledger_config(&agent, &fake.base_url, ""), 40);
    let d = dir.path();

    // The first run: the ledger's first test needs E ≥ 200, not the run's own 20; the
    // rule wins every question and is accepted after 18 (E(18, 0) ≈ 27594).
    let first = run_to_end(d);
    assert!(
        first
            .stdout
            .contains("ledger: each skill's candidates are tests of its ledger"),
        "{}",
        first.stdout
    );
    assert!(
        first
            .stdout
            .contains("test 1 of 10 at fdr_alpha 0.05, 0 accept(s) before it, E ≥ 200.0"),
        "{}",
        first.stdout
    );
    first.assert_summary("1 candidate(s), 1 accepted");
    let ledger = ledger_json(d);
    let tests = ledger["tests"].as_array().unwrap();
    assert_eq!(tests.len(), 1, "{ledger:#}");
    assert_eq!(tests[0]["index"], 1);
    assert_eq!(tests[0]["decision"], "accept_confirmed");
    assert_eq!(tests[0]["threshold"], 200.0);
    assert_eq!(tests[0]["discoveries"], 1);
    let used = strings(&tests[0]["questions"]);
    assert_eq!(used.len(), 18, "{ledger:#}");
    // The reports show what the ledger asked of the candidate beside the run's own level.
    let md = std::fs::read_to_string(d.join(".skill-evolve/runs/demo/report.md")).unwrap();
    assert!(
        md.contains("| 20.00; ledger test 1 of the skill: 200.00 |"),
        "{md}"
    );
    let json: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(d.join(".skill-evolve/runs/demo/report.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(json["records"][0]["ledger"]["threshold"], 200.0, "{json:#}");
    let html = std::fs::read_to_string(d.join(".skill-evolve/runs/demo/report.html")).unwrap();
    assert!(
        html.contains("Ledger kept across runs: test 1 of this skill"),
        "{html}"
    );

    // The same command again (a finished run resumed): nothing is tested twice.
    let again = run_config(d, &[]);
    assert!(again.status.success(), "{again:?}");
    assert_eq!(ledger_json(d)["tests"].as_array().unwrap().len(), 1);

    // A fresh run of the same skill is the ledger's second test: E ≥ 100 (one accept
    // before it), on the 16 gate questions the first accept did not use.
    let dry = run_config(d, &["--fresh", "--dry-run"]);
    let dry_out = String::from_utf8_lossy(&dry.stdout);
    assert!(
        dry_out.contains("gate reach: 16 gate question(s); the first candidate needs E ≥ 100.0")
            && dry_out.contains("test 2 of 10 at fdr_alpha 0.05, 1 accept(s) before it"),
        "{dry_out}"
    );
    let second = fresh_run(d);
    second.assert_summary("1 candidate(s), 1 accepted");
    let ledger = ledger_json(d);
    let tests = ledger["tests"].as_array().unwrap();
    assert_eq!(tests.len(), 2, "{ledger:#}");
    assert_eq!(tests[1]["index"], 2);
    assert_eq!(tests[1]["threshold"], 100.0);
    assert_eq!(tests[1]["discoveries_before"], 1);
    assert_eq!(strings(&tests[1]["excluded"]), used);
    let second_used = strings(&tests[1]["questions"]);
    assert_eq!(second_used.len(), 16, "{ledger:#}");
    assert!(second_used.iter().all(|q| !used.contains(q)), "{ledger:#}");
    assert_ne!(tests[0]["run"], tests[1]["run"]);

    // `status` shows the ledger.
    let status = skill_evolve(d).arg("status").output().unwrap();
    let status_out = String::from_utf8_lossy(&status.stdout);
    assert!(
        status_out.contains(
            "ledger skills/default-strategy.md: 2 test(s), 2 accept(s), level spent 0.010000 \
             of fdr_alpha 0.05 over 10 tests, 0.040000 left, 34 gate question(s) used by accepts"
        ),
        "{status_out}"
    );

    // A third run has no fresh gate question left: refused before any rollout, saying how
    // many it lacks, and the ledger is untouched.
    let before = snapshot(d);
    assert_one_line_error(
        &run_config(d, &["--fresh"]),
        "34 of its gate questions accepted earlier versions and are not reused \
         ([gate] reuse_questions = false): it lacks 9 fresh gate question(s)",
    );
    assert_eq!(snapshot(d), before, "a refused run writes nothing");

    // With `reuse_questions = true` the same questions may gate the next version.
    std::fs::write(
        d.join("evolve.toml"),
        ledger_config(&agent, &fake.base_url, "reuse_questions = true"),
    )
    .unwrap();
    let dry = run_config(d, &["--fresh", "--dry-run"]);
    let dry_out = String::from_utf8_lossy(&dry.stdout);
    assert!(dry.status.success(), "{dry:?}");
    assert!(
        dry_out.contains("gate reach: 34 gate question(s)")
            && dry_out.contains("test 3 of 10 at fdr_alpha 0.05, 2 accept(s) before it"),
        "{dry_out}"
    );

    // With `fdr_alpha = "off"` the ledger is left untouched, and the run says so.
    std::fs::write(
        d.join("evolve.toml"),
        ledger_config(&agent, &fake.base_url, "fdr_alpha = \"off\""),
    )
    .unwrap();
    let off = fresh_run(d);
    assert!(
        off.stdout
            .contains("ledger: untouched (fdr_alpha = \"off\")"),
        "{}",
        off.stdout
    );
    assert_eq!(
        ledger_json(d),
        ledger,
        "fdr_alpha = \"off\" leaves the ledger as it was"
    );
}

#[test]
fn a_run_killed_after_its_decision_counts_its_test_once() {
    let agent = rule_agent();
    let fake = crate::fake_llm::start_loop();
    let dir = run_workspace_with(&ledger_config(&agent, &fake.base_url, ""), 40);
    let d = dir.path();
    let out = skill_evolve(d)
        .env("SKILL_EVOLVE_TEST_KEY", "k")
        .env("SKILL_EVOLVE_FAILPOINT", "gate-decided")
        .args(["run", "--config", "evolve.toml"])
        .output()
        .unwrap();
    assert!(!out.status.success(), "not killed: {out:?}");
    let killed = ledger_json(d);
    assert_eq!(killed["tests"].as_array().unwrap().len(), 1, "{killed:#}");
    assert_eq!(killed["tests"][0]["closed"], true);
    // Resumed from its checkpoint: the same test, not a second one.
    let resumed = run_to_end(d);
    resumed.assert_summary("1 candidate(s), 1 accepted");
    let ledger = ledger_json(d);
    assert_eq!(ledger, killed, "{ledger:#}");
}

/// Gated `evolve` sessions are tests of the same ledger as runs: the first session's
/// candidate needs the ledger's threshold, and a second session on the same skill finds the
/// gate questions the first accept used taken.
#[test]
fn gated_evolve_sessions_are_tests_of_the_skills_ledger() {
    use crate::evolve_gated::{SKILL, agent_config, evolve, json_of, workspace};
    let agent = rule_agent();
    let fake = crate::fake_llm::start_evolve_gain();
    // 2 training and 12 gate questions; the ledger spreads 0.05 over 10 tests.
    let config = agent_config(&agent, "0.85", "ledger = true\nledger_horizon = 10\n");
    let dir = workspace(SKILL, 14, &config);
    let d = dir.path();
    let args = ["--agent-config", "evolve.toml", "--yes", "--json"];
    let summary = json_of(&evolve(d, &fake.base_url, &args));
    let verdict = &summary["gate"]["verdicts"][0];
    // The rule wins all 12: E(12, 0) = 630, above the ledger's 10 / 0.05 = 200.
    assert_eq!(verdict["passed"], true, "{summary}");
    assert_eq!(verdict["w"], 12, "{summary}");
    let path = d.join(".skill-evolve/ledger/skill/SKILL.md.json");
    let ledger: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let tests = ledger["tests"].as_array().unwrap();
    assert_eq!(tests.len(), 1, "{ledger:#}");
    assert_eq!(tests[0]["threshold"], 200.0, "{ledger:#}");
    assert_eq!(tests[0]["decision"], "accept_confirmed", "{ledger:#}");
    assert_eq!(strings(&tests[0]["questions"]).len(), 12, "{ledger:#}");

    // A second session on the same skill: every gate question accepted the first version,
    // so it is refused before any call, and the ledger is untouched.
    let calls = fake.calls.load(std::sync::atomic::Ordering::SeqCst);
    let before = snapshot(d);
    let again = evolve(d, &fake.base_url, &args);
    assert!(!again.status.success(), "{again:?}");
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert!(
        stderr.contains("the ledger of skill/SKILL.md: test 2 of 10 at fdr_alpha 0.05, 1 accept(s) before it, E ≥ 100.0")
            && stderr.contains("12 of its gate questions accepted earlier versions")
            && stderr.contains("it lacks 9 fresh gate question(s)"),
        "{stderr}"
    );
    assert_eq!(fake.calls.load(std::sync::atomic::Ordering::SeqCst), calls);
    assert_eq!(snapshot(d), before, "a refused session writes nothing");
}

#[test]
fn the_ledger_flag_keeps_the_ledger_a_configuration_does_not_name() {
    let agent = rule_agent();
    let fake = crate::fake_llm::start_loop();
    let config = ledger_config(&agent, &fake.base_url, "")
        .replace("ledger = true\nledger_horizon = 10\n", "");
    let dir = run_workspace_with(&config, 40);
    let d = dir.path();
    let without = run_config(d, &["--dry-run"]);
    assert!(without.status.success(), "{without:?}");
    let stdout = String::from_utf8_lossy(&without.stdout);
    assert!(!stdout.contains("tests of its ledger"), "{stdout}");

    let with = run_config(d, &["--dry-run", "--ledger"]);
    assert!(with.status.success(), "{with:?}");
    let stdout = String::from_utf8_lossy(&with.stdout);
    assert!(
        stdout.contains("ledger: each skill's candidates are tests of its ledger")
            && stdout.contains("over 365 tests"),
        "{stdout}"
    );
    // A whole run started so writes the skill's ledger.
    let out = run_config(d, &["--ledger"]);
    assert!(out.status.success(), "{out:?}");
    let ledger = ledger_json(d);
    assert_eq!(ledger["tests"][0]["horizon"], 365, "{ledger}");
}
