//! What `evolve` writes where: the candidate never lands on the skill (a run
//! folder that is the skill's own folder, or the store, is refused), and
//! the working copy is written through a symbolic link, never over a
//! read-only file.

use crate::evolve::{SKILL, record, workspace};
use crate::support::{assert_one_line_error, skill_evolve, snapshot};

#[test]
fn a_run_folder_that_is_the_skills_folder_or_the_store_is_refused() {
    let dir = workspace(SKILL);
    let d = dir.path();
    std::fs::create_dir_all(d.join("elsewhere")).unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(d.join("skill"), d.join("alias")).unwrap();
    let before = snapshot(d);
    let cases: &[(&[&str], &str)] = &[
        (
            &["--run-dir", "skill"],
            "--run-dir skill is the skill's own folder",
        ),
        (&["--run-dir", "skill/."], "is the skill's own folder"),
        (
            &["--run-dir", "elsewhere/../skill"],
            "is the skill's own folder",
        ),
        #[cfg(unix)]
        (
            &["--run-dir", "alias"],
            "--run-dir alias is the skill's own folder",
        ),
        (
            &["--run-dir", "skill/.skill-evolve/store"],
            "inside the skill's version store",
        ),
        (
            &["--store", "elsewhere", "--run-dir", "elsewhere/runs/1"],
            "inside the skill's version store elsewhere",
        ),
    ];
    for (args, needle) in cases {
        let out = skill_evolve(d)
            .args(["evolve", "skill/SKILL.md", "--trajectories", "temp"])
            .args(["--provider", "replay", "--cassette", "missing.cassette"])
            .args(*args)
            .output()
            .unwrap();
        assert_one_line_error(&out, needle);
    }
    assert_eq!(snapshot(d), before, "nothing written");
}

#[test]
fn the_candidate_has_its_own_name_in_the_run_folder() {
    let dir = workspace(SKILL);
    let d = dir.path();
    assert!(record(d).status.success());
    let out = skill_evolve(d)
        .args(["evolve", "skill/SKILL.md", "--trajectories", "temp"])
        .args(["--provider", "replay", "--cassette", "run.cassette"])
        .args(["--run-dir", "out"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(!d.join("out/SKILL.md").exists());
    let candidate = std::fs::read_to_string(d.join("out/candidate-SKILL.md")).unwrap();
    assert_ne!(candidate, SKILL);
    assert_eq!(
        std::fs::read_to_string(d.join("skill/SKILL.md")).unwrap(),
        SKILL
    );
}
