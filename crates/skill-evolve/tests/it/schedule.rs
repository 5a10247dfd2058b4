//! `skill-evolve schedule`: the crontab entry printed, put into a crontab file the test names
//! (never the real crontab) once per folder, replacing that folder's earlier entry only, and
//! paths cron cannot carry refused.

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
    assert!(
        lines[0].starts_with("# skill-evolve schedule of '"),
        "{stdout}"
    );
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
        text.starts_with("MAILTO=me@example.com\n# skill-evolve schedule of '"),
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

/// The crontab lines of `text` that start a command (not comments, not variables).
fn command_lines(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.contains('='))
        .collect()
}

#[test]
fn installing_again_replaces_the_folders_entry_and_keeps_every_other_line() {
    let dir = folder();
    let d = dir.path();
    let other = folder();
    let crontab = d.join("crontab.txt");
    std::fs::write(&crontab, "MAILTO=me@example.com\n15 2 * * * backup.sh\n").unwrap();
    let install = |folder: &std::path::Path, every: &str| {
        let out = skill_evolve(folder)
            .args(["schedule", "--every", every, "--install"])
            .arg(&crontab)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    install(other.path(), "night");
    install(d, "night");
    let said = install(d, "hour");
    assert!(
        said.contains("replaced this folder's earlier entry"),
        "{said}"
    );
    let text = std::fs::read_to_string(&crontab).unwrap();
    let commands = command_lines(&text);
    assert_eq!(commands.len(), 3, "{text}");
    assert_eq!(commands[0], "15 2 * * * backup.sh", "{text}");
    let of = |folder: &std::path::Path| {
        let name = folder.file_name().unwrap().to_str().unwrap().to_owned();
        commands
            .iter()
            .filter(|l| l.contains(&format!("{name}' && mkdir -p .skill-evolve")))
            .copied()
            .collect::<Vec<_>>()
    };
    let ours = of(d);
    assert_eq!(ours.len(), 1, "one entry for this folder: {text}");
    assert!(ours[0].starts_with("0 * * * * "), "{text}");
    let theirs = of(other.path());
    assert_eq!(theirs.len(), 1, "the other folder's entry stays: {text}");
    assert!(theirs[0].starts_with("0 3 * * * "), "{text}");
    assert!(text.starts_with("MAILTO=me@example.com\n"), "{text}");
    let comments = text.lines().filter(|l| l.starts_with('#')).count();
    assert_eq!(comments, 2, "one comment per entry: {text}");

    // An entry written before entries named their folder is replaced too.
    let old = ours[0].replace("0 * * * * ", "0 3 * * * ");
    let before = format!(
        "MAILTO=me@example.com\n# skill-evolve: harvest, then run (results staged; adopt \
         with `skill-evolve adopt`)\n{old}\n"
    );
    std::fs::write(&crontab, &before).unwrap();
    let said = install(d, "hour");
    assert!(said.contains("(2 lines removed)"), "{said}");
    let text = std::fs::read_to_string(&crontab).unwrap();
    assert_eq!(command_lines(&text), [ours[0]], "{text}");
    assert_eq!(text.lines().count(), 3, "{text}");
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
