//! `skill-evolve schedule`: the crontab entry printed, appended to a crontab file the test
//! names (never the real crontab) once only, and paths cron cannot carry refused.

use crate::support::{assert_one_line_error, skill_evolve, snapshot};

fn folder() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("evolve.toml"), "# a run configuration\n").unwrap();
    dir
}

#[test]
fn the_entry_harvests_then_runs_and_stages_only() {
    let dir = folder();
    let d = dir.path();
    let out = skill_evolve(d)
        .args(["schedule", "--every", "night", "--source", "codex"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{stdout}");
    assert!(lines[0].starts_with("# skill-evolve:"), "{stdout}");
    let line = lines[1];
    assert!(line.starts_with("0 3 * * * cd '"), "{line}");
    let here = d.canonicalize().unwrap();
    assert!(
        line.contains(&format!("'{}'", here.display()))
            || line.contains(&format!("'{}'", d.display())),
        "{line}"
    );
    let harvest = line
        .find(" harvest --source codex --tasks 'mined-tasks.jsonl'")
        .unwrap();
    let run = line.find(" run --config 'evolve.toml' --fresh").unwrap();
    assert!(harvest < run, "{line}");
    assert!(!line.contains("adopt"), "{line}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("API key"));

    let hourly = skill_evolve(d)
        .args(["schedule", "--every", "hour"])
        .output()
        .unwrap();
    let hourly = String::from_utf8(hourly.stdout).unwrap();
    assert!(hourly.contains("\n0 * * * * cd "), "{hourly}");
    assert!(hourly.contains("--source claude-code"), "{hourly}");
}

#[test]
fn install_appends_to_the_named_file_once() {
    let dir = folder();
    let d = dir.path();
    std::fs::write(d.join("crontab.txt"), "MAILTO=me@example.com").unwrap();
    let install = || {
        skill_evolve(d)
            .args(["schedule", "--every", "night", "--install", "crontab.txt"])
            .output()
            .unwrap()
    };
    let first = install();
    assert!(first.status.success(), "{first:?}");
    assert!(String::from_utf8_lossy(&first.stdout).contains("crontab crontab.txt"));
    let text = std::fs::read_to_string(d.join("crontab.txt")).unwrap();
    assert!(
        text.starts_with("MAILTO=me@example.com\n# skill-evolve:"),
        "{text}"
    );
    assert_eq!(
        text.lines().filter(|l| l.starts_with("0 3 * * *")).count(),
        1
    );
    let second = install();
    assert!(second.status.success(), "{second:?}");
    assert!(String::from_utf8_lossy(&second.stdout).contains("nothing written"));
    assert_eq!(
        std::fs::read_to_string(d.join("crontab.txt")).unwrap(),
        text
    );
}

#[test]
fn what_cron_cannot_carry_is_refused_and_nothing_written() {
    let dir = folder();
    let d = dir.path();
    let before = snapshot(d);
    let refused = |args: &[&str]| {
        skill_evolve(d)
            .args(["schedule", "--every", "night"])
            .args(args)
            .output()
            .unwrap()
    };
    assert_one_line_error(
        &refused(&["--tasks", "50%.jsonl", "--install", "cron.txt"]),
        "cannot carry safely",
    );
    assert_one_line_error(
        &refused(&["--config", "it's.toml", "--install", "cron.txt"]),
        "no run configuration here",
    );
    std::fs::write(d.join("it's.toml"), "").unwrap();
    assert_one_line_error(
        &refused(&["--config", "it's.toml", "--install", "cron.txt"]),
        "cannot carry safely",
    );
    std::fs::remove_file(d.join("it's.toml")).unwrap();
    std::fs::create_dir(d.join("cron.d")).unwrap();
    assert_one_line_error(
        &refused(&["--install", "cron.d"]),
        "--install must name a regular file",
    );
    std::fs::remove_dir(d.join("cron.d")).unwrap();
    assert_eq!(snapshot(d), before);
}
