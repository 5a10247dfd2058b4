//! `run --fresh` deletes only what the run wrote, never through a link, and one run of a name
//! at a time: a second is refused at once, naming the lock its holder keeps.

use std::path::Path;

use crate::run::{CONFIG, loop_config, rule_agent, run_workspace, run_workspace_with};
use crate::support::{assert_one_line_error, run_config, snapshot};

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A project whose `evolve.toml` runs one epoch of the reference agent against `base_url`.
fn live_project(base_url: &str) -> tempfile::TempDir {
    run_workspace_with(&loop_config(&rule_agent(), base_url), 14)
}

#[test]
fn fresh_deletes_what_the_run_wrote_and_keeps_the_users_files() {
    let fake = crate::fake_llm::start_loop();
    let dir = live_project(&fake.base_url);
    let d = dir.path();
    let first = run_config(d, &[]);
    assert!(first.status.success(), "{first:?}");
    let run = d.join(".skill-evolve/runs/demo");
    std::fs::write(run.join("my-notes.md"), "why I ran this\n").unwrap();
    std::fs::create_dir(run.join("mine")).unwrap();
    std::fs::write(run.join("mine/keep.txt"), "keep\n").unwrap();
    // Something the run does write: an earlier report goes.
    std::fs::write(run.join("report.md"), "an old report\n").unwrap();

    let fresh = run_config(d, &["--fresh"]);
    let stdout = text(&fresh.stdout);
    assert!(fresh.status.success(), "{stdout}\n{}", text(&fresh.stderr));
    assert!(
        stdout.contains("--fresh: deleted the earlier state of run \"demo\""),
        "{stdout}"
    );
    assert!(
        stdout.contains("--fresh: kept what the run did not write in")
            && stdout.contains(": mine, my-notes.md"),
        "{stdout}"
    );
    assert_eq!(
        std::fs::read_to_string(run.join("my-notes.md")).unwrap(),
        "why I ran this\n"
    );
    assert_eq!(
        std::fs::read_to_string(run.join("mine/keep.txt")).unwrap(),
        "keep\n"
    );
    let report = std::fs::read_to_string(run.join("report.md")).unwrap();
    assert_ne!(report, "an old report\n");
    assert!(stdout.contains("1 candidate(s), 1 accepted"), "{stdout}");
}

#[cfg(unix)]
#[test]
fn fresh_refuses_a_linked_state_runs_or_run_folder_and_deletes_nothing() {
    for linked in [
        ".skill-evolve",
        ".skill-evolve/runs",
        ".skill-evolve/runs/demo",
    ] {
        let dir = run_workspace(CONFIG);
        let d = dir.path();
        let outside = tempfile::tempdir().unwrap();
        let o = outside.path();
        // What the link leads to looks like the run's state.
        let target = match linked {
            ".skill-evolve" => o.join("runs/demo"),
            ".skill-evolve/runs" => o.join("demo"),
            _ => o.to_path_buf(),
        };
        std::fs::create_dir_all(&target).unwrap();
        std::fs::write(target.join("report.md"), "someone else's\n").unwrap();
        std::fs::write(target.join("precious.txt"), "keep\n").unwrap();
        let link = d.join(linked);
        std::fs::create_dir_all(link.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(o, &link).unwrap();
        let before = snapshot(o);
        for extra in [&["--fresh"][..], &["--fresh", "--dry-run"], &[]] {
            let out = run_config(d, extra);
            assert_one_line_error(&out, &format!("{linked}: is a symbolic link"));
            assert_one_line_error(&out, "never through a link");
            assert_eq!(snapshot(o), before, "{linked} {extra:?}");
        }
    }
}

/// Holds the lock of the run name `name` of the project `d` as another `run` would, its
/// file naming `holder`.
fn hold_run_lock(d: &Path, name: &str, holder: &str) -> std::fs::File {
    use std::io::Write as _;
    let runs = d.join(".skill-evolve/runs");
    std::fs::create_dir_all(&runs).unwrap();
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .open(runs.join(format!(".{name}.lock")))
        .unwrap();
    write!(file, "{holder}").unwrap();
    file.lock().unwrap();
    file
}

#[test]
fn a_second_run_of_one_name_is_refused_at_once_and_another_name_runs() {
    let fake = crate::fake_llm::start_loop();
    let dir = live_project(&fake.base_url);
    let d = dir.path();
    let lock = hold_run_lock(d, "demo", "process 4242\n");
    let before = snapshot(d);
    for extra in [&[][..], &["--fresh"]] {
        let out = run_config(d, extra);
        assert_one_line_error(
            &out,
            ".skill-evolve/runs/.demo.lock: run \"demo\" is running in process 4242, which \
             holds this lock",
        );
        assert!(out.stdout.is_empty(), "{out:?}");
        assert_eq!(snapshot(d), before, "{extra:?}");
    }
    assert_eq!(fake.calls.load(std::sync::atomic::Ordering::SeqCst), 0);
    // A dry run writes nothing and needs no lock.
    assert!(run_config(d, &["--dry-run"]).status.success());
    // Another name runs meanwhile.
    let config = std::fs::read_to_string(d.join("evolve.toml")).unwrap();
    std::fs::write(
        d.join("evolve.toml"),
        config.replace("name = \"demo\"", "name = \"other\""),
    )
    .unwrap();
    let other = run_config(d, &[]);
    assert!(other.status.success(), "{other:?}");
    assert!(text(&other.stdout).contains("1 candidate(s), 1 accepted"));
    drop(lock);
}

/// Two `run --fresh` of one name started at once: each either runs to its end or is
/// refused at once by the other's lock; never does one fail half-way.
#[test]
fn concurrent_fresh_runs_of_one_name_never_fail_half_way() {
    let fake = crate::fake_llm::start_loop();
    let dir = live_project(&fake.base_url);
    let d = dir.path();
    let first = run_config(d, &[]);
    assert!(first.status.success(), "{first:?}");
    let spawn = || {
        std::process::Command::new(assert_cmd::cargo::cargo_bin!("skill-evolve"))
            .args(["run", "--config", "evolve.toml", "--fresh"])
            .current_dir(d)
            .env("SKILL_EVOLVE_TEST_KEY", "k")
            .env("NO_COLOR", "1")
            .env_remove("SKILL_EVOLVE_CONFIG")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let children = [spawn(), spawn()];
    let outputs: Vec<std::process::Output> = children
        .into_iter()
        .map(|c| c.wait_with_output().unwrap())
        .collect();
    let mut finished = 0;
    for out in &outputs {
        if out.status.success() {
            assert!(
                text(&out.stdout).contains("1 candidate(s), 1 accepted"),
                "{out:?}"
            );
            finished += 1;
        } else {
            // The holder's process id, unless the lock is checked before the holder wrote it.
            assert_one_line_error(
                out,
                ".skill-evolve/runs/.demo.lock: run \"demo\" is running in",
            );
            assert_one_line_error(out, "which holds this lock");
        }
    }
    assert!(finished >= 1, "{outputs:?}");
    let staged =
        std::fs::read_to_string(d.join(".skill-evolve/runs/demo/staged/files/default-strategy.md"))
            .unwrap();
    assert!(staged.contains("RULE qa => yes"), "{staged}");
}
