//! What the gate can accept with the gate questions a configuration leaves it: the
//! pre-flight of `run` and of gated `evolve` states the smallest accepting record and the
//! power, a gate set no record can pass is refused before any rollout, `gate` decides at a
//! run's e-LOND level, and the dry run lists the split.

use evolution_gate::{Gate, GateParams, Tally, fewest_wins, ladder_accept_probability};

use crate::evolve_gated::{agent_config, evolve, workspace};
use crate::run::{CONFIG, rule_agent, run_workspace_with};
use crate::support::{assert_one_line_error, run_config, skill_evolve, snapshot};

/// [`CONFIG`] with the default gate: preset `seed`, ladder `[5]`, e-LOND at 0.05, each
/// test calibrated for its pool. Two epochs, one task type and one skill: a horizon of
/// 2 + 1 = 3 candidates, so the first candidate is tested at level `0.05 / 3`.
fn default_gate() -> String {
    CONFIG.replace(
        "params = \"calibrated\"\nladder = [2, 4]\ncalibration = \"e-process\"\n",
        "",
    )
}

/// [`default_gate`] with the e-process's thresholds: the first candidate needs
/// `E ≥ 3 / 0.05 = 60`; with no loss `E(W, 0) = (2^(W+1) − 1)/(W + 1)` first passes 60 at
/// `W = 9` (102.3; `E(8, 0) = 56.8`).
fn e_process_gate() -> String {
    asked_once(&default_gate()).replace("[gate]\n", "[gate]\ncalibration = \"e-process\"\n")
}

/// `config` with each gate question asked once, as of an agent that answers alike.
fn asked_once(config: &str) -> String {
    config.replace("[gate]\n", "[gate]\nanswers_per_question = 1\n")
}

/// The seed preset with both accept thresholds at e-LOND's first level over `horizon`.
fn first_level(horizon: u32) -> Gate {
    let e = f64::from(horizon) / 0.05;
    Gate::new(GateParams {
        e_confirm: e,
        e_provisional: e,
        ..GateParams::default()
    })
    .unwrap()
}

#[test]
fn by_default_the_pre_flight_states_the_level_the_power_and_the_questions_power_needs() {
    // 40 questions: 20 for the gate, each asked twice of a stochastic agent (40 pairs, the
    // pairs "auto" aims at), tested at 0.05 / 3 by a boundary exact for them.
    let dir = run_workspace_with(&default_gate(), 40);
    let out = run_config(dir.path(), &["--dry-run"]);
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let level = 0.05 / 3.0;
    let gate = Gate::new(GateParams {
        futility_risk: Some(0.05),
        lambda_dir: -3.0,
        ..GateParams::default()
    })
    .unwrap();
    let boundary = evolution_harness::pool_boundary(&gate, 40, level, 0.5, &[5])
        .unwrap()
        .unwrap();
    assert!(
        stdout.contains(
            "gate reach: 40 pairs (20 gate questions × 2 answers); the first candidate is tested \
             at level 0.0167 \
             (e-LOND spreads fdr_alpha 0.05 over the 3 candidate(s) this run can gate at most"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!(
            "calibrated exactly for its 40 pairs (20 gate questions × 2 answers); worst-case \
             false accept {:.4}",
            boundary.false_accept()
        )),
        "{stdout}"
    );
    assert!(boundary.false_accept() <= level);
    let floor = evolution_gate::pool_fewest_wins(&gate, &boundary, &[5]).unwrap();
    let (record, _) = floor.smallest().unwrap();
    assert!(
        stdout.contains(&format!(
            "with 40 pairs (20 gate questions × 2 answers) an accept needs at least {} wins and \
             no loss \
             (accept_confirmed after {} questions)",
            record.wins, record.questions
        )),
        "{stdout}"
    );
    let power: Vec<String> = [0.6, 0.7, 0.8]
        .iter()
        .map(|&p| {
            let power =
                evolution_gate::pool_accept_probability(&gate, &boundary, &[5], p, 0.5).unwrap();
            format!("{power:.3} at a {:.0}% win rate", p * 100.0)
        })
        .collect();
    assert!(
        stdout.contains(&format!("power: {} (exact", power.join(", "))),
        "{stdout}"
    );
    assert!(
        stdout.contains("50% of the gate questions discordant"),
        "{stdout}"
    );
    assert!(
        stdout.contains("gate questions needed at a 70% win rate: "),
        "{stdout}"
    );
    // Asked once, as of an agent that answers alike: the power the same questions give then.
    let once = evolution_harness::pool_boundary(&gate, 20, level, 0.5, &[5])
        .unwrap()
        .unwrap();
    let power_once = evolution_gate::pool_accept_probability(&gate, &once, &[5], 0.7, 0.5).unwrap();
    assert!(
        stdout.contains(&format!(
            "answers per gate question: 2 when the agent answers differently when asked again \
             (measured on training questions when the run starts), else 1 — then power \
             {power_once:.3} at a 70% win rate"
        )),
        "{stdout}"
    );
    // Asked once, 20 gate questions, half of them ties, find few improvements: the
    // pre-flight says so.
    let dir = run_workspace_with(&asked_once(&default_gate()), 40);
    let out = run_config(dir.path(), &["--dry-run"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("warning: power "), "{stdout}");
}

#[test]
fn the_pre_flight_states_the_smallest_accepting_record_and_the_power() {
    // 40 questions: 20 for the gate.
    let dir = run_workspace_with(&e_process_gate(), 40);
    let out = run_config(dir.path(), &["--dry-run"]);
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(
            "gate reach: 20 gate question(s); the first candidate needs E ≥ 60.0 (e-LOND: \
             fdr_alpha 0.05 over 3 candidate(s))"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "with 20 gate questions an accept needs at least 9 wins and no loss \
             (accept_confirmed after 10 questions)"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains("accept_provisional: no record takes this exit"),
        "{stdout}"
    );
    assert!(
        stdout.contains("the fewest gate questions any accept needs: 9"),
        "{stdout}"
    );
    // The power is the library's exact number at the ladder's block ends.
    let gate = first_level(3);
    let floor = fewest_wins(&gate, 20, &[5]).unwrap();
    assert_eq!(
        floor.confirmed.map(|r| (r.wins, r.questions)),
        Some((9, 10))
    );
    let p6 = ladder_accept_probability(&gate, 20, &[5], 0.6).unwrap();
    let p7 = ladder_accept_probability(&gate, 20, &[5], 0.7).unwrap();
    assert!(p6 < p7, "{p6} {p7}");
    assert!(
        stdout.contains(&format!(
            "power: {p6:.3} at a 60% win rate, {p7:.3} at a 70% win rate"
        )),
        "{stdout}"
    );

    // Without e-LOND the seed preset's own thresholds hold: a provisional accept at
    // exhaustion needs E ≥ 3, three wins (E(3, 0) = 3.75) and two net wins.
    let off =
        e_process_gate().replace("[gate]\n", "[gate]\nfdr_alpha = \"off\"\nprobation = 0.0\n");
    let dir = run_workspace_with(&off, 40);
    let out = run_config(dir.path(), &["--dry-run"]);
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(
            "with 20 gate questions an accept needs at least 3 wins and no loss \
             (accept_provisional after 20 questions)"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "the first candidate needs E ≥ 20.0, E ≥ 3.0 for a provisional accept when the \
             questions run out (fdr_alpha = \"off\")"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains("accept_confirmed: at least 7 wins and no loss (after 10 questions)"),
        "{stdout}"
    );
}

#[test]
fn a_gate_set_no_record_can_pass_is_refused_before_any_rollout() {
    // 16 questions: 8 for the gate, one fewer than an accept at E ≥ 60 needs.
    // Also before `--record` would create its cassette.
    for extra in [
        &["--dry-run"][..],
        &[][..],
        &["--record", "run.cassette"][..],
    ] {
        let dir = run_workspace_with(&e_process_gate(), 16);
        let d = dir.path();
        let before = snapshot(d);
        let out = run_config(d, extra);
        assert_one_line_error(
            &out,
            "the 8 gate question(s) cannot accept any candidate: the first is tested at \
             E ≥ 60.0 (e-LOND: fdr_alpha 0.05 over 3 candidate(s)), and at least 9 gate \
             questions are needed",
        );
        assert_eq!(snapshot(d), before, "{extra:?}");
    }
    // 18 questions leave 9: the same configuration is valid.
    let dir = run_workspace_with(&e_process_gate(), 18);
    let out = run_config(dir.path(), &["--dry-run"]);
    assert!(out.status.success(), "{out:?}");
    // Calibrated for its pool, level 0.05 / 3 needs six wins in a row (2^-6 ≤ 1/60): 8 gate
    // questions are enough, 4 are not.
    let dir = run_workspace_with(&asked_once(&default_gate()), 16);
    let out = run_config(dir.path(), &["--dry-run"]);
    assert!(out.status.success(), "{out:?}");
    let dir = run_workspace_with(&asked_once(&default_gate()), 8);
    let out = run_config(dir.path(), &["--dry-run"]);
    assert_one_line_error(
        &out,
        "the 4 gate question(s) cannot accept any candidate: the first is tested at level 0.0167",
    );
    assert_one_line_error(&out, "and at least 6 gate questions are needed");
    // With "auto" the same 4 gate questions are asked 5 times of a stochastic agent: 20
    // pairs can accept, and the pre-flight says what asking once would give.
    let dir = run_workspace_with(&default_gate(), 8);
    let out = run_config(dir.path(), &["--dry-run"]);
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("gate reach: 20 pairs (4 gate questions × 5 answers)")
            && stdout.contains("else 1 — then no record can be accepted"),
        "{stdout}"
    );
    // One gate question cannot accept even asked 5 times (five wins in a row happen 1/32 of
    // the time by chance, above 0.05 / 3): refused.
    let dir = run_workspace_with(&default_gate(), 2);
    let out = run_config(dir.path(), &["--dry-run"]);
    assert_one_line_error(
        &out,
        "the 5 pairs (1 gate question × 5 answers) cannot accept any candidate",
    );
}

#[test]
fn gated_evolve_states_the_reach_and_refuses_a_gate_set_too_small() {
    let agent = rule_agent();
    // Calibrated, e-LOND 0.05 over one candidate: E ≥ 20, reached at W = 7 (E = 31.9);
    // four gate questions cannot (E(4, 0) = 6.2), seven can.
    let dir = workspace(
        crate::evolve_gated::SKILL,
        8,
        &agent_config(&agent, "0.5", ""),
    );
    let d = dir.path();
    let before = snapshot(d);
    let out = evolve(
        d,
        "http://127.0.0.1:9/v1",
        &["--agent-config", "evolve.toml", "--yes"],
    );
    assert_one_line_error(
        &out,
        "the 4 gate question(s) cannot accept any candidate: the first is tested at E ≥ 20.0 \
         (e-LOND: fdr_alpha 0.05 over 1 candidate(s)), and at least 7 gate questions are needed",
    );
    assert_eq!(snapshot(d), before);

    // With enough gate questions the pre-flight says what an accept needs (the model at
    // port 9 then fails the session, after the pre-flight).
    let dir = workspace(
        crate::evolve_gated::SKILL,
        8,
        &agent_config(&agent, "1.0", ""),
    );
    let out = evolve(
        dir.path(),
        "http://127.0.0.1:9/v1",
        &["--agent-config", "evolve.toml", "--yes"],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("gate reach: 8 gate question(s); the first candidate needs E ≥ 20.0"),
        "{out:?}"
    );
    assert!(
        stdout.contains("an accept needs at least 7 wins and no loss"),
        "{stdout}"
    );
}

fn gate_json(args: &[&str]) -> serde_json::Value {
    let dir = tempfile::tempdir().unwrap();
    let out = skill_evolve(dir.path())
        .args(["gate", "--json"])
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn gate_decides_at_a_runs_e_lond_level() {
    let counts = [
        "--wins",
        "8",
        "--losses",
        "0",
        "--used",
        "10",
        "--remaining",
        "10",
    ];
    // E(8, 0) = 56.8: enough for the preset's e_confirm of 20, not for 3 / 0.05 = 60.
    let plain = gate_json(&counts);
    assert_eq!(plain["decision"], "accept_confirmed");
    let at_level = |extra: &[&str]| {
        let mut args = counts.to_vec();
        args.extend_from_slice(extra);
        gate_json(&args)
    };
    let expected = first_level(3).decide(&Tally::new(8, 0, 10, 10)).unwrap();
    let expected = serde_json::to_value(expected).unwrap();
    assert_eq!(expected["decision"], "continue");
    assert_eq!(
        at_level(&["--fdr-level", "0.05", "--horizon", "3"]),
        expected
    );
    assert_eq!(at_level(&["--e-needed", "60"]), expected);
    // The default horizon is one candidate: E ≥ 20.
    assert_eq!(
        at_level(&["--fdr-level", "0.05"])["decision"],
        "accept_confirmed"
    );

    // The text says which thresholds the verdict was made with.
    let dir = tempfile::tempdir().unwrap();
    let out = skill_evolve(dir.path())
        .arg("gate")
        .args(counts)
        .args(["--fdr-level", "0.05", "--horizon", "3"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("< e_confirm 60 "), "{text}");
    assert!(
        text.contains(
            "thresholds raised for the run's error control: e_confirm 60, e_provisional 60"
        ),
        "{text}"
    );

    for (bad, needle) in [
        (
            &["--fdr-level", "1.5"][..],
            "--fdr-level: FDR level alpha = 1.5",
        ),
        (&["--e-needed", "0.5"][..], "--e-needed must be a finite"),
        (
            &["--fdr-level", "0.05", "--horizon", "0"][..],
            "--horizon must be at least 1",
        ),
    ] {
        let out = skill_evolve(dir.path())
            .arg("gate")
            .args(counts)
            .args(bad)
            .output()
            .unwrap();
        assert_one_line_error(&out, needle);
    }
}

#[test]
fn every_gate_question_among_the_trajectories_is_named_in_one_error() {
    let agent = rule_agent();
    let dir = workspace(
        crate::evolve_gated::SKILL,
        8,
        &agent_config(&agent, "1.0", ""),
    );
    let d = dir.path();
    for (i, id) in ["q3", "q5", "q6"].iter().enumerate() {
        std::fs::write(
            d.join(format!("temp/failed_trajectory_{:03}.json", i + 2)),
            format!(
                r#"{{"id": "{id}", "task_description": "qa", "question": "other {i}",
  "fail_reason": "wrong", "predicted_answer": "no", "reference_text": "yes"}}"#
            ),
        )
        .unwrap();
    }
    let before = snapshot(d);
    let out = evolve(
        d,
        "http://127.0.0.1:9/v1",
        &["--agent-config", "evolve.toml", "--yes"],
    );
    assert_one_line_error(
        &out,
        "gate question(s) the candidate is written from (3): \"q3\" has the id of trajectory \
         \"q3\", \"q5\" has the id of trajectory \"q5\", \"q6\" has the id of trajectory \"q6\"",
    );
    assert_eq!(snapshot(d), before);
}

#[test]
fn the_dry_run_lists_the_question_ids_of_each_part_of_the_split() {
    let config = default_gate()
        .replace("gate = 0.5", "gate = 0.25\nholdout = 0.25")
        .replace("[gate]\n", "[gate]\nprobation = 0.1\n");
    let dir = run_workspace_with(&config, 40);
    let out = run_config(dir.path(), &["--dry-run"]);
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let mut seen: Vec<String> = Vec::new();
    for (part, count) in [
        ("train", 20),
        ("gate", 9),
        ("probation", 1),
        ("holdout", 10),
    ] {
        let prefix = format!("  {part} ({count}): ");
        let line = stdout
            .lines()
            .find(|l| l.starts_with(&prefix))
            .unwrap_or_else(|| panic!("no {prefix:?} in {stdout}"));
        let ids: Vec<String> = line[prefix.len()..]
            .split(", ")
            .map(str::to_owned)
            .collect();
        assert_eq!(ids.len(), count, "{line}");
        seen.extend(ids);
    }
    seen.sort();
    let mut all: Vec<String> = (0..40).map(|i| format!("q{i}")).collect();
    all.sort();
    assert_eq!(seen, all, "every question in exactly one part");
}

/// The `probation:` line of a dry run of `config` over `n` questions (half of them gate).
fn probation_line(config: &str, n: usize) -> String {
    let dir = run_workspace_with(config, n);
    let out = run_config(dir.path(), &["--dry-run"]);
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    stdout
        .lines()
        .find(|l| l.starts_with("probation: "))
        .unwrap_or_else(|| panic!("no probation line in\n{stdout}"))
        .to_owned()
}

#[test]
fn probation_is_on_by_default_only_where_an_accept_can_be_provisional_and_questions_suffice() {
    // Calibrated for the pool (the default), no accept is provisional: nothing to watch.
    let line = probation_line(&default_gate(), 80);
    assert!(
        line.starts_with("probation: off — every accept crosses the boundary calibrated"),
        "{line}"
    );
    // With the e-process, e-LOND at 0.05 raises every threshold to at least 20 = e_confirm.
    let line = probation_line(&e_process_gate(), 80);
    assert!(
        line.starts_with("probation: off — no accept can be provisional here (e-LOND at 0.05"),
        "{line}"
    );

    // Without e-LOND the seed preset accepts provisionally at E ≥ 3: 40 gate questions hold
    // back 10, enough for a rollback (five losses reach e_rollback = 10).
    let off = e_process_gate().replace("[gate]\n", "[gate]\nfdr_alpha = \"off\"\n");
    let line = probation_line(&off, 80);
    assert!(
        line.starts_with("probation: on by default — 10 of the 40 gate questions"),
        "{line}"
    );
    assert!(line.contains("at least 5 losses"), "{line}");
    let dir = run_workspace_with(&off, 80);
    let out = run_config(dir.path(), &["--dry-run"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("questions: 40 train, 30 gate, 0 holdout"),
        "{stdout}"
    );
    assert!(
        stdout.contains("10 gate question(s) held back for probation"),
        "{stdout}"
    );

    // Too few: the line names how many would do, and that many turns it on.
    let line = probation_line(&off, 20);
    let needed: usize = line
        .split("needs at least ")
        .nth(1)
        .and_then(|rest| rest.split(';').next())
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("{line}"));
    assert!(
        line.starts_with("probation: off — too few gate questions"),
        "{line}"
    );
    assert!(needed > 10, "{line}");
    assert!(
        probation_line(&off, 2 * needed).starts_with("probation: on by default"),
        "{needed}"
    );
    assert!(
        probation_line(&off, 2 * (needed - 1)).starts_with("probation: off — too few"),
        "{needed}"
    );

    // Set explicitly, the share is the user's.
    let set = off.replace("[gate]\n", "[gate]\nprobation = 0.0\n");
    assert_eq!(
        probation_line(&set, 80),
        "probation: off ([gate] probation = 0)"
    );
}

#[test]
fn best_per_epoch_makes_the_horizon_count_gated_candidates() {
    // Two epochs of at most one gated candidate: a horizon of 2, not 3.
    let config = default_gate().replace("[gate]\n", "[gate]\nscreen = 10\nbest_per_epoch = 1\n");
    let dir = run_workspace_with(&config, 40);
    let out = run_config(dir.path(), &["--dry-run"]);
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(
            "the first candidate is tested at level 0.0250 (e-LOND spreads fdr_alpha 0.05 over \
             the 2 candidate(s) this run can gate at most — the 1 best on the screen each \
             epoch ([gate] best_per_epoch)"
        ),
        "{stdout}"
    );

    let zero = default_gate().replace("[gate]\n", "[gate]\nbest_per_epoch = 0\n");
    let dir = run_workspace_with(&zero, 40);
    let out = run_config(dir.path(), &["--dry-run"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("[gate] best_per_epoch must be at least 1 candidate"),
        "{stderr}"
    );
}

#[test]
fn a_run_with_best_per_epoch_screens_and_gates_one_candidate_an_epoch() {
    let agent = crate::run::rule_agent();
    let fake = crate::fake_llm::start_loop();
    let config = crate::run::with_agent(&crate::run::live_config(&fake.base_url), &agent).replace(
        "ladder = [6, 12]",
        "ladder = [6, 12]\nscreen = 10\nbest_per_epoch = 1",
    );
    let dir = run_workspace_with(&config, 60);
    let d = dir.path();
    let finished = crate::run::run_to_end(d);
    let stdout = &finished.stdout;
    assert!(
        stdout.contains("(e-LOND: fdr_alpha 0.05 over 2 candidate(s))"),
        "{stdout}"
    );
    // No epoch gated more than one candidate.
    let report: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(d.join(".skill-evolve/runs/demo/report.json")).unwrap(),
    )
    .unwrap();
    let gated: Vec<String> = report["records"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["candidate"].as_str().map(str::to_owned))
        .collect();
    for epoch in ["_e0_", "_e1_"] {
        let n = gated.iter().filter(|c| c.contains(epoch)).count();
        assert!(n <= 1, "{epoch}: {gated:?}\n{stdout}");
    }
    assert!(!gated.is_empty(), "{report}");
    // The reference agent answers alike every time: the run measured it so and asked each
    // gate question once; the next pre-flight says what it measured.
    assert!(
        finished.stderr.contains(
            "the agent answered 0 of 20 training question(s) differently when asked again: \
             each arm answers each gate question once"
        ),
        "{}",
        finished.stderr
    );
    let dry = run_config(d, &["--dry-run"]);
    let dry_out = String::from_utf8_lossy(&dry.stdout);
    assert!(
        dry_out.contains(
            "measured by the last run of this name: the agent answered 0 of 20 training \
             question(s) differently when asked again (each gate question asked 1 time(s)); "
        ) && dry_out.contains("paired answers were discordant"),
        "{dry_out}"
    );
}
