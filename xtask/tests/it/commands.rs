//! Argument handling of the commands that drive other programs (their runs are not tested
//! here: they build the whole workspace, fuzz or benchmark).

use crate::{run, xtask};

#[test]
fn no_command_prints_usage_and_fails() {
    let out = run(&mut xtask());
    assert_eq!(out.code, Some(2));
    assert!(
        out.stderr.contains("usage: cargo xtask <command>"),
        "{}",
        out.stderr
    );
}

#[test]
fn help_lists_every_command() {
    let out = run(xtask().arg("help"));
    assert_eq!(out.code, Some(0));
    for command in ["check-deps", "tidy", "ci", "bench", "fuzz"] {
        assert!(
            out.stdout.contains(command),
            "{command} missing:\n{}",
            out.stdout
        );
    }
}

#[test]
fn unknown_command_fails() {
    let out = run(xtask().arg("deploy"));
    assert_eq!(out.code, Some(2));
    assert!(
        out.stderr.contains("unknown command `deploy`"),
        "{}",
        out.stderr
    );
}

#[test]
fn unknown_benchmark_lists_the_known_ones() {
    let out = run(xtask().args(["bench", "nope"]));
    assert_eq!(out.code, Some(2));
    assert!(
        out.stderr.contains("unknown benchmark `nope`"),
        "{}",
        out.stderr
    );
    for (name, example) in [
        ("gate", "evolution-gate --example gate_calibration"),
        ("frontier", "evolution-gate --example gate_frontier"),
        ("patch", "evolution-patch --example patch_bench"),
        ("diagnose", "evolution-diagnose --example diagnose_bench"),
        ("json", "evolution-diagnose --example json_repair_bench"),
        ("runlog", "evolution-runlog-sqlite --example runlog_bench"),
        ("inputs", "evolution-harness --example inputs_bench"),
    ] {
        let line = out
            .stderr
            .lines()
            .find(|l| l.trim_start().starts_with(name))
            .unwrap_or_else(|| panic!("{name} not listed:\n{}", out.stderr));
        assert!(line.ends_with(example), "{line}");
    }
}

#[test]
fn check_deps_rejects_unknown_arguments() {
    let out = run(xtask().args(["check-deps", "--fix"]));
    assert_eq!(out.code, Some(2));
    assert!(
        out.stderr.contains("unexpected argument `--fix`"),
        "{}",
        out.stderr
    );
}

#[test]
fn tidy_rejects_unknown_arguments() {
    let out = run(xtask().args(["tidy", "--strict"]));
    assert_eq!(out.code, Some(2));
    assert!(
        out.stderr
            .contains("unexpected argument `--strict` for tidy"),
        "{}",
        out.stderr
    );
}

#[test]
fn fuzz_needs_a_target_and_whole_seconds() {
    let out = run(xtask().arg("fuzz"));
    assert_eq!(out.code, Some(2));
    assert!(
        out.stderr.contains("usage: cargo xtask fuzz"),
        "{}",
        out.stderr
    );
    let out = run(xtask().args(["fuzz", "target", "ten"]));
    assert_eq!(out.code, Some(2));
    assert!(out.stderr.contains("whole number"), "{}", out.stderr);
}

#[test]
fn ci_takes_no_arguments() {
    let out = run(xtask().args(["ci", "--fast"]));
    assert_eq!(out.code, Some(2));
    assert!(out.stderr.contains("takes no arguments"), "{}", out.stderr);
}
