//! The confirmation on a pseudo-terminal: 「拒绝」 discards, 「确认改」 writes.
//!
//! rexpect decodes what it reads byte by byte, so the expectations stick to
//! ASCII; the answers are sent as UTF-8.

use std::path::Path;

use rexpect::session::{PtySession, spawn_command};

use crate::evolve::{SKILL, record, workspace};

fn spawn_evolve(d: &Path) -> PtySession {
    let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin!("skill-evolve"));
    cmd.current_dir(d)
        .env("NO_COLOR", "1")
        .env_remove("SKILL_EVOLVE_CONFIG")
        .env_remove("SKILL_EVOLVE_PROVIDER")
        .args(["evolve", "skill/SKILL.md", "--trajectories", "temp"])
        .args(["--provider", "replay", "--cassette", "run.cassette"]);
    spawn_command(cmd, Some(60_000)).unwrap()
}

#[test]
fn refusing_on_a_terminal_discards_the_candidate() {
    let dir = workspace(SKILL);
    let d = dir.path();
    assert!(record(d).status.success());
    let mut p = spawn_evolve(d);
    p.exp_string("Write this version of SKILL.md? [y/yes/")
        .unwrap();
    p.exp_string("| n/").unwrap();
    // An answer that is neither yes nor no is asked again.
    p.send_line("maybe").unwrap();
    p.exp_string("answer y, yes, ").unwrap();
    p.exp_string("| n/").unwrap();
    p.send_line("拒绝").unwrap();
    p.exp_string("discarded: skill/SKILL.md is unchanged")
        .unwrap();
    p.exp_eof().unwrap();
    assert_eq!(
        std::fs::read_to_string(d.join("skill/SKILL.md")).unwrap(),
        SKILL
    );
    assert!(!d.join("skill/.skill-evolve/store").exists());
}

#[test]
fn confirming_on_a_terminal_writes_a_new_version() {
    let dir = workspace(SKILL);
    let d = dir.path();
    assert!(record(d).status.success());
    let mut p = spawn_evolve(d);
    p.exp_string("Write this version of SKILL.md? [y/yes/")
        .unwrap();
    p.exp_string("| n/").unwrap();
    p.send_line("确认改").unwrap();
    p.exp_string("wrote skill/SKILL.md as v000002").unwrap();
    p.exp_eof().unwrap();
    assert_ne!(
        std::fs::read_to_string(d.join("skill/SKILL.md")).unwrap(),
        SKILL
    );
}

/// `adopt` on a terminal: 「拒绝」 writes nothing, 「确认改」 writes the file.
#[test]
fn adopt_asks_on_a_terminal() {
    let fake = crate::fake_llm::start_loop();
    let dir = crate::adopt::agent_skills_workspace(&fake.base_url);
    let d = dir.path();
    assert!(crate::support::run_config(d, &[]).status.success());
    let before = std::fs::read_to_string(d.join("skills/support/SKILL.md")).unwrap();
    let spawn = || {
        let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin!("skill-evolve"));
        cmd.current_dir(d)
            .env("NO_COLOR", "1")
            .args(["adopt", "demo"]);
        spawn_command(cmd, Some(60_000)).unwrap()
    };
    let mut p = spawn();
    p.exp_string("+RULE qa => yes").unwrap();
    p.exp_string("Write 1 document(s) of run \"demo\" to your files? [y/yes/")
        .unwrap();
    p.exp_string("| n/").unwrap();
    p.send_line("拒绝").unwrap();
    p.exp_string("discarded: nothing was written").unwrap();
    p.exp_eof().unwrap();
    assert_eq!(
        std::fs::read_to_string(d.join("skills/support/SKILL.md")).unwrap(),
        before
    );
    assert!(!d.join("skills/support/.skill-evolve").exists());
    let mut p = spawn();
    p.exp_string("| n/").unwrap();
    p.send_line("确认改").unwrap();
    p.exp_string("adopted skills/support/SKILL.md as v000002")
        .unwrap();
    p.exp_eof().unwrap();
    assert!(
        std::fs::read_to_string(d.join("skills/support/SKILL.md"))
            .unwrap()
            .contains("RULE qa => yes")
    );
}

/// On a terminal, `diagnose` draws a bar of the judged questions on stderr
/// while the judges work (the same command off a terminal prints none:
/// `diagnose.rs`).
#[test]
fn diagnose_shows_its_progress_on_a_terminal() {
    let dir = crate::diagnose::judged_workspace();
    let d = dir.path();
    let fake = crate::fake_llm::start_judges();
    let recorded = crate::support::skill_evolve(d)
        .args(crate::diagnose::INPUTS)
        .args(["tree.json", "--json"])
        .args(fake.provider_args())
        .args(["--record", "diag.cassette"])
        .output()
        .unwrap();
    assert!(recorded.status.success(), "{recorded:?}");
    let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin!("skill-evolve"));
    cmd.current_dir(d)
        .env("NO_COLOR", "1")
        .env_remove("SKILL_EVOLVE_CONFIG")
        .env_remove("SKILL_EVOLVE_PROVIDER")
        .args(crate::diagnose::INPUTS)
        .args(["tree.json", "--json", "--provider", "replay"])
        .args(["--cassette", "diag.cassette"]);
    let mut p = spawn_command(cmd, Some(60_000)).unwrap();
    p.exp_string("diagnosing run \"r1\"").unwrap();
    p.exp_string("judging questions").unwrap();
    p.exp_string("\"run_id\": \"r1\"").unwrap();
    p.exp_eof().unwrap();
}
