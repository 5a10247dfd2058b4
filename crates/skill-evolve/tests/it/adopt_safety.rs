//! What `adopt` may write and where: only files inside the project the run was made for,
//! through the project's one version store (not a `.skill-evolve` folder in each skill
//! folder, though a store already beside a file is still used), one adoption of a file at a
//! time, and the same refusal as `rollback` when there is no terminal to confirm on.

use std::path::Path;

use crate::adopt::{SUPPORT, agent_skills_workspace};
use crate::support::{assert_one_line_error, history_json, run_config, skill_evolve, snapshot};

/// The project store of `skills/support/SKILL.md`.
const PROJECT_STORE: &str = ".skill-evolve/stores/skills/support/SKILL.md";

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A project whose run `demo` has staged the support skill (`skills/support/SKILL.md`).
fn staged_project() -> tempfile::TempDir {
    let fake = crate::fake_llm::start_loop();
    let dir = agent_skills_workspace(&fake.base_url);
    let out = run_config(dir.path(), &[]);
    assert!(out.status.success(), "{out:?}");
    dir
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        let target = to.join(path.file_name().unwrap());
        if path.is_dir() {
            copy_tree(&path, &target);
        } else {
            std::fs::copy(&path, &target).unwrap();
        }
    }
}

/// Copies the run `demo` of `d` to a run `name` that staged `staged` for the support skill
/// (not adopted yet).
fn copy_run(d: &Path, name: &str, staged: &str) {
    let run = d.join(".skill-evolve/runs").join(name);
    copy_tree(&d.join(".skill-evolve/runs/demo"), &run);
    std::fs::write(run.join("staged/files/support-bot.md"), staged).unwrap();
    let path = run.join("staged/proposal.json");
    let mut proposal: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    proposal["run"] = serde_json::json!(name);
    proposal["documents"][0]["adopted_as"] = serde_json::Value::Null;
    std::fs::write(&path, proposal.to_string()).unwrap();
}

#[test]
fn adopt_refuses_a_staged_path_outside_the_project_before_any_write() {
    let dir = staged_project();
    let d = dir.path();
    let outside = tempfile::tempdir().unwrap();
    let o = outside.path();
    // The victim holds the text the run imported, so only the path check can stop it.
    std::fs::write(o.join("victim.md"), SUPPORT).unwrap();
    let o_name = o.file_name().unwrap().to_str().unwrap().to_owned();
    let mut paths = vec![
        format!("../{o_name}/victim.md"),
        format!("skills/../../{o_name}/victim.md"),
        o.join("victim.md").display().to_string(),
    ];
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(o, d.join("skills/elsewhere")).unwrap();
        paths.push("skills/elsewhere/victim.md".to_owned());
    }
    let proposal_path = d.join(".skill-evolve/runs/demo/staged/proposal.json");
    let original = std::fs::read_to_string(&proposal_path).unwrap();
    for path in &paths {
        let mut proposal: serde_json::Value = serde_json::from_str(&original).unwrap();
        proposal["documents"][0]["path"] = serde_json::json!(path);
        std::fs::write(&proposal_path, proposal.to_string()).unwrap();
        let (before, before_outside) = (snapshot(d), snapshot(o));
        let out = skill_evolve(d)
            .args(["adopt", "demo", "--yes"])
            .output()
            .unwrap();
        assert_one_line_error(&out, "leads outside the project");
        assert_one_line_error(&out, "nothing was adopted");
        assert_eq!(snapshot(d), before, "{path}");
        assert_eq!(snapshot(o), before_outside, "{path}");
    }
    assert_eq!(
        std::fs::read_to_string(o.join("victim.md")).unwrap(),
        SUPPORT
    );
    assert!(!o.join(".skill-evolve").exists());
    // The path the run recorded is adopted, though not through a linked store folder.
    std::fs::write(&proposal_path, &original).unwrap();
    #[cfg(unix)]
    {
        let stores = d.join(".skill-evolve/stores");
        std::os::unix::fs::symlink(o, &stores).unwrap();
        let (before, before_outside) = (snapshot(d), snapshot(o));
        let out = skill_evolve(d)
            .args(["adopt", "demo", "--yes"])
            .output()
            .unwrap();
        assert_one_line_error(&out, "leads outside the project");
        assert_eq!(snapshot(d), before);
        assert_eq!(snapshot(o), before_outside);
        std::fs::remove_file(&stores).unwrap();
    }
    let out = skill_evolve(d)
        .args(["adopt", "demo", "--yes"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(
        std::fs::read_to_string(d.join("skills/support/SKILL.md"))
            .unwrap()
            .contains("RULE qa => yes")
    );
}

#[test]
fn adopt_keeps_the_history_in_the_project_store_that_history_diff_and_rollback_find() {
    let dir = staged_project();
    let d = dir.path();
    // Without a terminal and without --yes, adopt and rollback refuse alike: exit 2, one
    // line, nothing written.
    let before = snapshot(d);
    let refused = skill_evolve(d).args(["adopt", "demo"]).output().unwrap();
    assert_one_line_error(&refused, "not adopted: there is no terminal to confirm on");
    assert_eq!(snapshot(d), before);

    let out = skill_evolve(d)
        .args(["adopt", "demo", "--yes"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(
        text(&out.stdout).contains("adopted skills/support/SKILL.md as v000002"),
        "{}",
        text(&out.stdout)
    );
    // No version store inside the skill folder: the project keeps it.
    assert!(!d.join("skills/support/.skill-evolve").exists());
    assert!(d.join(PROJECT_STORE).is_dir());
    let history = history_json(d, "skills/support/SKILL.md", None);
    assert_eq!(history["current"], "v000002", "{history}");
    assert!(
        history["store"].as_str().unwrap().ends_with(PROJECT_STORE),
        "{history}"
    );
    // Found from a folder inside the project too, by a path relative to it.
    let inner = history_json(&d.join("skills"), "support/SKILL.md", None);
    assert_eq!(inner["current"], "v000002", "{inner}");
    let diff = skill_evolve(d)
        .args(["diff", "skills/support/SKILL.md"])
        .output()
        .unwrap();
    assert!(diff.status.success(), "{diff:?}");
    assert!(text(&diff.stdout).contains("+RULE qa => yes"), "{diff:?}");

    let adopted = std::fs::read_to_string(d.join("skills/support/SKILL.md")).unwrap();
    let before = snapshot(d);
    let refused = skill_evolve(&d.join("skills/support"))
        .args(["rollback", "SKILL.md", "--to", "v1"])
        .output()
        .unwrap();
    assert_one_line_error(
        &refused,
        "not rolled back: there is no terminal to confirm on",
    );
    assert!(
        text(&refused.stdout).contains("-RULE qa => yes"),
        "{refused:?}"
    );
    assert_eq!(snapshot(d), before);
    let back = skill_evolve(&d.join("skills/support"))
        .args(["rollback", "SKILL.md", "--to", "v1", "--yes"])
        .output()
        .unwrap();
    assert!(back.status.success(), "{back:?}");
    assert_eq!(
        std::fs::read_to_string(d.join("skills/support/SKILL.md")).unwrap(),
        SUPPORT
    );
    assert!(!d.join("skills/support/.skill-evolve").exists());

    // A store beside the file (the older layout) is still found, and a later adoption
    // writes into it rather than starting a second history.
    std::fs::create_dir_all(d.join("skills/support/.skill-evolve")).unwrap();
    std::fs::rename(
        d.join(PROJECT_STORE),
        d.join("skills/support/.skill-evolve/store"),
    )
    .unwrap();
    let history = history_json(d, "skills/support/SKILL.md", None);
    assert_eq!(history["current"], "v000001", "{history}");
    copy_run(d, "again", &adopted);
    let out = skill_evolve(d)
        .args(["adopt", "again", "--yes"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(!d.join(PROJECT_STORE).exists());
    let history = history_json(d, "skills/support/SKILL.md", None);
    assert_eq!(history["current"], "v000003", "{history}");
    assert_eq!(
        history["history"].as_array().unwrap().last().unwrap()["message"],
        "adopted from run again (v000002)",
        "{history}"
    );
}

/// Four adoptions started at once, two of each of two runs that staged different texts for
/// one file: exactly one writes it; the other run's are refused because the file changed
/// since that run read it, the same run's find it adopted; the store holds the imported text
/// and that one adoption, nothing else.
#[test]
fn concurrent_adopts_of_one_file_write_it_once() {
    let dir = staged_project();
    let d = dir.path();
    let demo =
        std::fs::read_to_string(d.join(".skill-evolve/runs/demo/staged/files/support-bot.md"))
            .unwrap();
    let other = format!("{demo}RULE refund => ask\n");
    copy_run(d, "other", &other);
    let children: Vec<(&str, std::process::Child)> = ["demo", "other", "demo", "other"]
        .into_iter()
        .map(|run| {
            let child = std::process::Command::new(assert_cmd::cargo::cargo_bin!("skill-evolve"))
                .current_dir(d)
                .env("NO_COLOR", "1")
                .args(["adopt", run, "--yes"])
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            (run, child)
        })
        .collect();
    let outputs: Vec<(&str, std::process::Output)> = children
        .into_iter()
        .map(|(run, child)| (run, child.wait_with_output().unwrap()))
        .collect();
    let winners: Vec<&str> = outputs
        .iter()
        .filter(|(_, out)| text(&out.stdout).contains("adopted skills/support/SKILL.md as v000002"))
        .map(|(run, _)| *run)
        .collect();
    assert_eq!(winners.len(), 1, "{outputs:?}");
    let winner = winners[0];
    for (run, out) in &outputs {
        let stdout = text(&out.stdout);
        if stdout.contains("adopted skills/support/SKILL.md as") {
            continue;
        }
        if *run == winner {
            assert!(out.status.success(), "{out:?}");
            assert!(
                stdout.contains("adopted already")
                    || stdout.contains("adopted meanwhile")
                    || stdout.contains("already has the staged text"),
                "{stdout}"
            );
        } else {
            assert_one_line_error(out, &format!("changed since run {run:?} read it"));
        }
    }
    let expected = if winner == "demo" { &demo } else { &other };
    assert_eq!(
        &std::fs::read_to_string(d.join("skills/support/SKILL.md")).unwrap(),
        expected
    );
    let history = history_json(d, "skills/support/SKILL.md", None);
    let entries = history["history"].as_array().unwrap();
    assert_eq!(entries.len(), 2, "{history}");
    assert_eq!(
        entries[1]["message"],
        format!("adopted from run {winner} (v000002)"),
        "{history}"
    );
}
