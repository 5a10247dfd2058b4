//! `skill-evolve doctor`: reports file:line:problem; `--fix` repairs what is
//! safe, after showing the diff, and only with `--yes` or a confirmation.

use std::path::Path;

use crate::support::{skill_evolve, snapshot};

const DUPLICATED: &str = include_str!("fixtures/duplicated_markers.md");

fn setup(text: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("SKILL.md");
    std::fs::write(&path, text).unwrap();
    (dir, path)
}

fn line_of(text: &str, needle: &str, nth: usize) -> usize {
    text.lines()
        .enumerate()
        .filter(|(_, l)| l.contains(needle))
        .nth(nth)
        .map(|(i, _)| i + 1)
        .unwrap()
}

#[test]
fn reports_the_line_of_a_duplicated_marker() {
    let (dir, _) = setup(DUPLICATED);
    let out = skill_evolve(dir.path())
        .args(["doctor", "SKILL.md"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).unwrap();
    let line = line_of(DUPLICATED, "<!-- SLOW_UPDATE_START -->", 1);
    assert_eq!(
        text.lines().next().unwrap(),
        format!(
            "SKILL.md:{line}: marker `<!-- SLOW_UPDATE_START -->` is duplicated (this is its \
             second occurrence) [fixable with --fix]"
        )
    );
}

#[test]
fn fix_with_yes_repairs_and_the_document_is_then_clean() {
    let (dir, path) = setup(DUPLICATED);
    let out = skill_evolve(dir.path())
        .args(["doctor", "SKILL.md", "--fix", "--yes"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        stdout.contains("-<!-- SLOW_UPDATE_START -->"),
        "diff shown: {stdout}"
    );
    let fixed = std::fs::read_to_string(&path).unwrap();
    assert_eq!(fixed.matches("<!-- SLOW_UPDATE_START -->").count(), 1);
    assert_eq!(fixed.matches("<!-- SLOW_UPDATE_END -->").count(), 1);
    // Only the two duplicated marker lines went away.
    assert_eq!(fixed.lines().count() + 2, DUPLICATED.lines().count());
    assert!(fixed.contains("Prefer replacing a faulty step"));
    let again = skill_evolve(dir.path())
        .args(["doctor", "SKILL.md"])
        .output()
        .unwrap();
    assert!(again.status.success(), "{again:?}");
}

#[test]
fn fix_without_yes_and_without_terminal_writes_nothing() {
    let (dir, _) = setup(DUPLICATED);
    let before = snapshot(dir.path());
    let out = skill_evolve(dir.path())
        .args(["doctor", "SKILL.md", "--fix"])
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.contains("not written"), "{stdout}");
    assert!(stdout.contains("+++ SKILL.md (repaired)"), "{stdout}");
    assert_eq!(snapshot(dir.path()), before);
}

#[test]
fn reversed_markers_and_unclosed_fence_are_repaired() {
    let text = "# S\n\n<!-- APPENDIX_END -->\n- note\n<!-- APPENDIX_START -->\n\n```bash\nls\n";
    let (dir, path) = setup(text);
    let out = skill_evolve(dir.path())
        .args(["doctor", "SKILL.md", "--json"])
        .output()
        .unwrap();
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let lines: Vec<u64> = report["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["line"].as_u64().unwrap())
        .collect();
    assert_eq!(lines, [3, 7]);
    skill_evolve(dir.path())
        .args(["doctor", "SKILL.md", "--fix", "-y"])
        .assert()
        .success();
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "# S\n\n<!-- APPENDIX_START -->\n- note\n<!-- APPENDIX_END -->\n\n```bash\nls\n```\n"
    );
}

#[test]
fn unsafe_problems_are_reported_and_left_alone() {
    let text = "---\nname: x\ndescription: [oops\n---\n# S\n";
    let (dir, path) = setup(text);
    let out = skill_evolve(dir.path())
        .args(["doctor", "SKILL.md", "--fix", "--yes"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.starts_with("SKILL.md:"), "{stdout}");
    assert!(stdout.contains("frontmatter is not valid YAML"), "{stdout}");
    assert!(
        stdout.contains("nothing here is safe to repair"),
        "{stdout}"
    );
    assert_eq!(std::fs::read_to_string(Path::new(&path)).unwrap(), text);
}

#[test]
fn a_skills_folder_is_checked_document_by_document() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for (name, text) in [
        ("refunds", DUPLICATED),
        ("orders", "# Orders\n\nAnswer with the order's status.\n"),
    ] {
        std::fs::create_dir_all(d.join("skills").join(name)).unwrap();
        std::fs::write(d.join("skills").join(name).join("SKILL.md"), text).unwrap();
    }
    let out = skill_evolve(d).args(["doctor", "skills"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("skills/orders/SKILL.md: no problems found\n"),
        "{text}"
    );
    assert!(
        text.contains("skills/refunds/SKILL.md:") && text.contains("is duplicated"),
        "{text}"
    );
    assert!(
        text.ends_with("checked 2 skill document(s) in skills\n"),
        "{text}"
    );

    let out = skill_evolve(d)
        .args(["doctor", "skills", "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let reports: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let files: Vec<&str> = reports
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["file"].as_str().unwrap())
        .collect();
    assert_eq!(files, ["skills/orders/SKILL.md", "skills/refunds/SKILL.md"]);
    assert!(!reports[1]["problems"].as_array().unwrap().is_empty());

    let out = skill_evolve(d)
        .args(["doctor", "skills", "--fix", "--yes"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let out = skill_evolve(d).args(["doctor", "skills"]).output().unwrap();
    assert!(out.status.success(), "{out:?}");
}
