//! The knobs of `evolve.toml` that shape candidates and their gate: `[evolve] skill_update`,
//! `consolidate_notes`, `consolidate_chars`, and `[gate]`'s individual parameters over a
//! preset. Accepted values show in the pre-flight lines; bad ones are one line, exit 2.

use crate::run::{CONFIG, run_workspace_with};
use crate::support::{assert_one_line_error, skill_evolve, snapshot};

/// `CONFIG` with `gate_keys` added to its `[gate]` table and an `[evolve]` table.
fn with_knobs(gate_keys: &str, evolve_keys: &str) -> String {
    let config = CONFIG.replace("ladder = [2, 4]", &format!("ladder = [2, 4]\n{gate_keys}"));
    format!("{config}\n[evolve]\n{evolve_keys}\n")
}

/// A dry run of `config` over 26 questions (13 gate): enough for the knobs
/// below, whose first test needs 13 gate questions, to pass the reach check.
fn dry_run(config: &str) -> std::process::Output {
    let dir = run_workspace_with(config, 26);
    let d = dir.path();
    let before = snapshot(d);
    let out = skill_evolve(d)
        .env("SKILL_EVOLVE_TEST_KEY", "k")
        .args(["run", "--config", "evolve.toml", "--dry-run"])
        .output()
        .unwrap();
    assert_eq!(snapshot(d), before, "a dry run writes nothing");
    out
}

#[test]
fn the_defaults_are_shown() {
    let out = dry_run(CONFIG);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("gate: calibrated parameters"), "{text}");
    assert!(
        text.contains(
            "skills: patched with small edits; appendix notes merged at 6 notes or past 2000 characters"
        ),
        "{text}"
    );
}

#[test]
fn knobs_are_accepted_and_shown() {
    let config = with_knobs(
        "e_confirm = 30.0\nw_net_min = 3\nalternative = 0.7\nlambda_dir = -inf",
        "skill_update = \"rewrite\"\nconsolidate_notes = 4\nconsolidate_chars = 900",
    );
    let out = dry_run(&config);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains(
            "gate: calibrated (e_confirm, lambda_dir, w_net_min, alternative set in [gate]) parameters"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "skills: rewritten whole (never longer); appendix notes merged at 4 notes or past 900 characters"
        ),
        "{text}"
    );
}

#[test]
fn bad_knobs_are_one_line_exit_2_at_their_line() {
    // `[gate]` is on line 17 of CONFIG and its keys follow `ladder` (line 19); `[evolve]`
    // comes after the rest of CONFIG and a blank line (line 33).
    let cases = [
        (
            "e_confirm = 0.5",
            "",
            "evolve.toml:20: [gate]: invalid gate parameter e_confirm = 0.5: an e-value threshold must be finite and greater than 1",
        ),
        (
            "w_net_min = 1\nalternative = 1.2",
            "",
            "evolve.toml:21: [gate]: invalid gate parameter e_process.alternative = 1.2",
        ),
        (
            "lambda_dir = 0.5",
            "",
            "evolve.toml:20: [gate]: invalid gate parameter lambda_dir = 0.5",
        ),
        (
            "delta_min = nan",
            "",
            "evolve.toml:20: [gate]: invalid gate parameter delta_min = NaN",
        ),
        (
            "w_net_min = \"two\"",
            "",
            "evolve.toml:20: invalid type: string \"two\", expected i64",
        ),
        (
            "e_confirm_typo = 3.0",
            "",
            "evolve.toml:20: unknown field `e_confirm_typo`",
        ),
        (
            "",
            "skill_update = \"rewrites\"",
            "evolve.toml:35: unknown variant `rewrites`, expected `patch` or `rewrite`",
        ),
        (
            "",
            "consolidate_notes = 1",
            "evolve.toml:35: [evolve] consolidate_notes must be at least 2",
        ),
        (
            "",
            "consolidate_chars = 5000",
            "evolve.toml:35: [evolve] consolidate_chars must be 1 to 2000",
        ),
        (
            "",
            "consolidate_chars = 0",
            "evolve.toml:35: [evolve] consolidate_chars must be 1 to 2000",
        ),
    ];
    for (gate_keys, evolve_keys, needle) in cases {
        let out = dry_run(&with_knobs(gate_keys, evolve_keys));
        assert_one_line_error(&out, needle);
    }
}
