//! What `evolve` writes where: the candidate never lands on the skill (a run
//! folder that is the skill's own folder, or the store, is refused), and
//! the working copy is written through a symbolic link, never over a
//! read-only file.

use crate::evolve::{SKILL, evolve_cmd, record, workspace};
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
            &["--run-dir", ".skill-evolve/stores/skill/SKILL.md/v1"],
            "inside the skill's version store",
        ),
        (
            &["--store", "elsewhere", "--run-dir", "elsewhere/runs/1"],
            "inside the skill's version store elsewhere",
        ),
    ];
    for (args, needle) in cases {
        let out = evolve_cmd(d)
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
    let out = evolve_cmd(d)
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

/// Replays the recorded cassette with `--yes`: the evolved version is written.
fn evolve_yes(d: &std::path::Path) -> std::process::Output {
    evolve_cmd(d)
        .arg("--yes")
        .args(["--provider", "replay", "--cassette", "run.cassette"])
        .output()
        .unwrap()
}

fn rollback(d: &std::path::Path, to: &str) -> std::process::Output {
    skill_evolve(d)
        .args(["rollback", "skill/SKILL.md", "--to", to, "--yes"])
        .output()
        .unwrap()
}

#[cfg(unix)]
#[test]
fn a_symlinked_skill_is_written_through_its_link() {
    let dir = workspace(SKILL);
    let d = dir.path();
    std::fs::create_dir(d.join("shared")).unwrap();
    std::fs::rename(d.join("skill/SKILL.md"), d.join("shared/SKILL.md")).unwrap();
    std::os::unix::fs::symlink("../shared/SKILL.md", d.join("skill/SKILL.md")).unwrap();
    assert!(record(d).status.success());
    let out = evolve_yes(d);
    assert!(out.status.success(), "{out:?}");
    let is_link = |p: &str| {
        d.join(p)
            .symlink_metadata()
            .unwrap()
            .file_type()
            .is_symlink()
    };
    assert!(is_link("skill/SKILL.md"), "the link was replaced by a file");
    let shared = std::fs::read_to_string(d.join("shared/SKILL.md")).unwrap();
    assert_ne!(shared, SKILL, "the shared file was not updated");
    let out = rollback(d, "1");
    assert!(out.status.success(), "{out:?}");
    assert!(is_link("skill/SKILL.md"));
    assert_eq!(
        std::fs::read_to_string(d.join("shared/SKILL.md")).unwrap(),
        SKILL
    );
}

#[cfg(unix)]
#[test]
fn a_read_only_skill_is_refused_before_anything_is_written() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = workspace(SKILL);
    let d = dir.path();
    let read_only = |mode: u32| {
        std::fs::set_permissions(
            d.join("skill/SKILL.md"),
            std::fs::Permissions::from_mode(mode),
        )
        .unwrap();
    };
    read_only(0o444);
    let before = snapshot(d);
    let out = evolve_cmd(d)
        .arg("--yes")
        .args(["--provider", "replay", "--cassette", "missing.cassette"])
        .output()
        .unwrap();
    assert_one_line_error(&out, "skill/SKILL.md: is read-only; nothing written");
    assert_eq!(snapshot(d), before);

    // A rollback onto a read-only working copy leaves the store where it was.
    read_only(0o644);
    assert!(record(d).status.success());
    assert!(evolve_yes(d).status.success());
    read_only(0o444);
    let before = snapshot(d);
    assert_one_line_error(&rollback(d, "1"), "is read-only");
    assert_eq!(snapshot(d), before);
}

/// After a write that failed once the store had moved (a full disk), the
/// file holds an older stored version: either rollback the error suggests
/// brings the store and the file together.
#[test]
fn rollback_recovers_a_store_that_is_ahead_of_its_file() {
    let dir = workspace(SKILL);
    let d = dir.path();
    assert!(record(d).status.success());
    assert!(evolve_yes(d).status.success());
    let evolved = std::fs::read_to_string(d.join("skill/SKILL.md")).unwrap();
    // What a failed write leaves: the store at v2, the file at v1.
    std::fs::write(d.join("skill/SKILL.md"), SKILL).unwrap();
    let out = rollback(d, "2");
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        std::fs::read_to_string(d.join("skill/SKILL.md")).unwrap(),
        evolved
    );
    std::fs::write(d.join("skill/SKILL.md"), SKILL).unwrap();
    let out = rollback(d, "1");
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        std::fs::read_to_string(d.join("skill/SKILL.md")).unwrap(),
        SKILL
    );
    // A hand edit that is in no version still blocks a rollback.
    std::fs::write(d.join("skill/SKILL.md"), "hand edit\n").unwrap();
    assert_one_line_error(&rollback(d, "2"), "edited since its last version");
}

#[test]
fn a_run_folder_that_cannot_be_made_is_refused_before_the_model_is_asked() {
    let dir = workspace(SKILL);
    let d = dir.path();
    assert!(record(d).status.success());
    std::fs::write(d.join("notes.txt"), "a file, not a folder").unwrap();
    let before = snapshot(d);
    let out = evolve_cmd(d)
        .args(["--provider", "replay", "--cassette", "run.cassette"])
        .args(["--run-dir", "notes.txt/run"])
        .output()
        .unwrap();
    assert_one_line_error(
        &out,
        "notes.txt is not a folder; nothing was sent to the model",
    );
    assert_eq!(snapshot(d), before, "nothing written");
}
