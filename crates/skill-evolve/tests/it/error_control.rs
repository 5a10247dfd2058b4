//! `skill-evolve run` controls the false-discovery rate over a run's
//! candidates (e-LOND at `[gate] fdr_alpha`, 0.05 unless `"off"`), and its
//! report says which guarantee held.

use crate::run::{
    CONFIG, assert_config_refused, live_config, rule_agent, run_to_end, run_workspace_with,
    with_agent,
};
use crate::support::{assert_one_line_error, run_config, snapshot};

/// Nine questions: two training questions and seven gate questions, two
/// epochs, the calibrated gate. The reference agent with the proposed rule
/// wins all seven: E(7, 0) ≈ 31.9, enough for the gate's own `E ≥ 20` but
/// not for e-LOND's first level over a horizon of three candidates (one
/// proposal per epoch and one slow update: 20 · 3 = 60), so with e-LOND on
/// the run is refused before any call. Twelve questions give nine gate
/// questions, the fewest that can reach 60: E(9, 0) ≈ 102.3.
fn small_gate(agent: &std::path::Path, base_url: &str, fdr: Option<&str>) -> String {
    // The reference agent answers alike every time: each gate question is asked once.
    let mut config = with_agent(&live_config(base_url), agent)
        .replace("train = 0.5", "train = 0.25")
        .replace("gate = 0.5", "gate = 0.75")
        .replace("[gate]\n", "[gate]\nanswers_per_question = 1\n");
    if let Some(fdr) = fdr {
        config = config.replace(
            "ladder = [6, 12]",
            &format!("ladder = [6, 12]\nfdr_alpha = {fdr}"),
        );
    }
    config
}

/// [`CONFIG`] with `line` added to its `[gate]` table.
fn gate_config(line: &str) -> String {
    CONFIG.replace("ladder = [2, 4]", &format!("ladder = [2, 4]\n{line}"))
}

fn run(config: &str) -> (String, String) {
    let dir = run_workspace_with(config, 9);
    run_in(dir.path())
}

fn run_in(d: &std::path::Path) -> (String, String) {
    let finished = run_to_end(d);
    (finished.stdout, finished.report)
}

#[test]
fn e_lond_is_on_by_default_and_binds_every_accept() {
    let agent = rule_agent();
    let fake = crate::fake_llm::start_loop();
    // Seven gate questions cannot reach e-LOND's first level, so the run is
    // refused before any call, naming how many gate questions it needs.
    let dir = run_workspace_with(&small_gate(&agent, &fake.base_url, None), 9);
    let d = dir.path();
    let before = snapshot(d);
    let out = run_config(d, &[]);
    assert_one_line_error(
        &out,
        "the 7 gate question(s) cannot accept any candidate: the first is tested at E ≥ 60.0 \
         (e-LOND: fdr_alpha 0.05 over 3 candidate(s)), and at least 9 gate questions are needed",
    );
    assert_eq!(snapshot(d), before, "a refused run writes nothing");

    // With enough gate questions the rule is accepted at e-LOND's level, not
    // the gate's own `E ≥ 20`.
    let dir = run_workspace_with(&small_gate(&agent, &fake.base_url, None), 12);
    let d = dir.path();
    let (stdout, report) = run_in(d);
    assert!(stdout.contains("1 accepted"), "{stdout}\n{report}");
    assert!(
        report.contains("(the false-discovery rate) is at most 0.05 over this run"),
        "{report}"
    );
    assert!(report.contains("at most 3 candidate(s)"), "{report}");
    assert!(
        report.contains(
            "| yes | 9 | 0 | 9 | 0 | 102.30 | 1.000 | accept_confirmed | v000002 | 60.00 |"
        ),
        "{report}"
    );

    // A finished run asked again with `fdr_alpha = "off"` is not resumed under another
    // control: the rerun is refused, naming the key, and the report still states the
    // control the run was under.
    std::fs::write(
        d.join("evolve.toml"),
        small_gate(&agent, &fake.base_url, Some("\"off\"")),
    )
    .unwrap();
    let before = snapshot(d);
    assert_one_line_error(
        &run_config(d, &[]),
        "run \"demo\" cannot resume: the gate settings ([gate] fdr_alpha) changed since it \
         started; start over with --fresh",
    );
    assert_eq!(snapshot(d), before, "a refused resume writes nothing");
    let kept = std::fs::read_to_string(d.join(".skill-evolve/runs/demo/report.md")).unwrap();
    assert!(
        kept.contains("(the false-discovery rate) is at most 0.05 over this run"),
        "{kept}"
    );

    // The same run with `fdr_alpha = "off"`: the gate alone accepts, and the
    // report says that no run-wide bound held.
    let (stdout, report) = run(&small_gate(&agent, &fake.base_url, Some("\"off\"")));
    assert!(stdout.contains("1 accepted"), "{stdout}\n{report}");
    assert!(report.contains("Error control: off"), "{report}");
    assert!(
        stdout.contains("no run-wide error control (fdr_alpha = \"off\")"),
        "{stdout}"
    );
    assert!(report.contains("at most 1/20"), "{report}");
    assert!(report.contains("+RULE qa => yes"), "{report}");
}

#[test]
fn a_bad_fdr_level_is_one_line_exit_2() {
    for (value, needle) in [
        (
            "1.5",
            "evolve.toml:20: [gate] fdr_alpha must lie strictly between 0 and 1, not 1.5",
        ),
        (
            "0",
            "[gate] fdr_alpha must lie strictly between 0 and 1, not 0",
        ),
        (
            "\"of\"",
            "evolve.toml:20: [gate] fdr_alpha must be a level between 0 and 1 or \"off\", not \"of\"",
        ),
    ] {
        assert_config_refused(&gate_config(&format!("fdr_alpha = {value}")), needle);
    }
}

#[test]
fn the_tie_aware_futility_exit_is_stated_and_a_bad_risk_is_one_line_exit_2() {
    let dir = run_workspace_with(&gate_config("futility_risk = 0.05"), 24);
    let out = run_config(dir.path(), &["--dry-run"]);
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(
            "blocks [2, 4], a candidate that mostly ties stops early (futility_risk 0.05), INFRA"
        ),
        "{stdout}"
    );
    let dir = run_workspace_with(&gate_config("futility_risk = \"off\""), 24);
    let out = run_config(dir.path(), &["--dry-run"]);
    assert!(out.status.success(), "{out:?}");
    assert!(!String::from_utf8_lossy(&out.stdout).contains("futility_risk"));
    for (value, needle) in [
        (
            "1",
            "evolve.toml:20: [gate] futility_risk must lie strictly between 0 and 1, not 1",
        ),
        (
            "\"no\"",
            "evolve.toml:20: [gate] futility_risk must be a level between 0 and 1 or \"off\", not \"no\"",
        ),
    ] {
        assert_config_refused(&gate_config(&format!("futility_risk = {value}")), needle);
    }
}

#[test]
fn the_probation_pool_is_held_back_from_the_gate_and_checked() {
    // Twelve gate questions, three held back for probation: the nine left
    // are the fewest the reach check lets through.
    let dir = run_workspace_with(&gate_config("probation = 0.25"), 24);
    let out = run_config(dir.path(), &["--dry-run"]);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("questions: 12 train, 9 gate, 0 holdout"),
        "{text}"
    );
    assert!(
        text.contains(
            "INFRA guard 20%, false-discovery rate at most 0.05 over the run (e-LOND), \
             3 gate question(s) held back for probation"
        ),
        "{text}"
    );
    for (value, needle) in [
        (
            "1.0",
            "evolve.toml:20: [gate] probation must be a share from 0 up to (not including) 1, not 1",
        ),
        ("-0.1", "[gate] probation must be a share"),
        (
            "0.95",
            "evolve.toml:20: [gate] probation = 0.95 leaves none of the 9 gate questions to the gate",
        ),
    ] {
        assert_config_refused(&gate_config(&format!("probation = {value}")), needle);
    }
}

/// With `fdr_alpha = "off"` and the `seed` preset, four gate questions end in
/// a provisional accept (E(4, 0) = 6.2 ≥ 3); the three questions held back by
/// `[gate] probation` judge it at once, and the report shows the verdict.
#[test]
fn a_provisional_accept_is_judged_on_the_held_back_questions() {
    let agent = rule_agent();
    let fake = crate::fake_llm::start_loop();
    let config = small_gate(&agent, &fake.base_url, Some("\"off\""))
        .replace("max_epochs = 2", "max_epochs = 1")
        .replace(r#"params = "calibrated""#, r#"params = "seed""#)
        .replace("ladder = [6, 12]", "ladder = [4]\nprobation = 0.4");
    let (stdout, report) = run(&config);
    assert!(
        stdout.contains("1 candidate(s), 1 accepted"),
        "{stdout}\n{report}"
    );
    assert!(
        report.contains(
            "| yes | 4 | 0 | 4 | 0 | 6.20 | 1.000 | accept_provisional; probation unverified (W=3, L=0) |"
        ),
        "{report}"
    );
    assert!(report.contains("at most 1/3"), "{report}");
}

/// `[gate] pool`, `carry_over` and `screen`: the candidate that fixes the rule passes
/// its screen on the training questions and is accepted at e-LOND's level on the pool;
/// a value that cannot work is one line, exit 2.
#[test]
fn a_screened_run_with_a_pool_and_carry_over_accepts_the_fix() {
    let agent = rule_agent();
    let fake = crate::fake_llm::start_loop();
    let config = small_gate(&agent, &fake.base_url, None).replace(
        "ladder = [6, 12]",
        "ladder = [6, 12]\npool = 400\ncarry_over = true\nscreen = 20",
    );
    let dir = run_workspace_with(&config, 12);
    let (stdout, report) = run_in(dir.path());
    assert!(stdout.contains("1 accepted"), "{stdout}\n{report}");
    assert!(
        report.contains("(the false-discovery rate) is at most 0.05 over this run"),
        "{report}"
    );
    // The slow update changes nothing on the training questions: screened out, with its
    // reason, before any e-LOND test (one test in the history: the accepted fix).
    assert!(
        report.contains(
            "screened out on training questions: W=0, L=0 on 3 question(s), W - L short of 2"
        ),
        "{report}"
    );
    let checkpoint: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join(".skill-evolve/runs/demo/checkpoint.json"))
            .unwrap(),
    )
    .unwrap();
    let keeper = &checkpoint["gatekeeper"];
    assert_eq!(keeper["fdr"]["history"].as_array().unwrap().len(), 1);
    // Carry-over: the accepted version's cached answers are the fix's own (no candidate
    // was gated against it), on the gate questions and on the screen's.
    let count = |cache: &str, version: &str| {
        keeper[cache]["entries"][version]
            .as_object()
            .map_or(0, serde_json::Map::len)
    };
    assert_eq!(count("cache", "v000002"), count("cache", "v000001"));
    assert!(count("cache", "v000002") > 0);
    assert_eq!(count("screen_cache", "v000002"), 3);
    for (line, needle) in [
        (
            "pool = 0",
            "evolve.toml:21: [gate] pool must let a candidate draw at least 1 gate question",
        ),
        (
            "screen = 0",
            "evolve.toml:21: [gate] screen must be at least 1 training question",
        ),
    ] {
        assert_config_refused(&gate_config(&format!("seed = 0\n{line}")), needle);
    }
}
