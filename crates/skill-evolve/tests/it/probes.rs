//! Where a command will write is checked before anything is paid for: the
//! run folder of `run`, and the cassette `--record` names (a folder, a pipe,
//! a path through a file) — one line, exit 2, no agent started, no call.

use std::sync::atomic::Ordering;

use crate::evolve::{SKILL, workspace};
use crate::run::{CONFIG, run_workspace};
use crate::support::{assert_one_line_error, skill_evolve, snapshot};

/// An agent that leaves a mark in the project folder, then answers.
const MARKING_AGENT: &str =
    "touch ran\nread -r line\nprintf '{\"type\":\"result\",\"prediction\":\"unknown\"}\\n'\n";

fn marking_workspace(base_url: &str) -> tempfile::TempDir {
    let dir = run_workspace(&CONFIG.replace("http://127.0.0.1:9/v1", base_url));
    std::fs::write(dir.path().join("agent.sh"), MARKING_AGENT).unwrap();
    dir
}

#[test]
fn run_refuses_a_run_folder_it_cannot_write_before_any_rollout_or_call() {
    let fake = crate::fake_llm::start_loop();
    // A file where the state folder goes, and a file where the run folder goes.
    for blocker in [".skill-evolve", ".skill-evolve/runs/demo"] {
        let dir = marking_workspace(&fake.base_url);
        let d = dir.path();
        let blocked = d.join(blocker);
        std::fs::create_dir_all(blocked.parent().unwrap()).unwrap();
        std::fs::write(&blocked, "not a folder").unwrap();
        let before = snapshot(d);
        let out = skill_evolve(d)
            .env("SKILL_EVOLVE_TEST_KEY", "k")
            .args(["run", "--config", "evolve.toml"])
            .output()
            .unwrap();
        assert_one_line_error(&out, "cannot be the run folder");
        assert_one_line_error(&out, &format!("{blocker} is not a folder"));
        assert_one_line_error(
            &out,
            "no agent was started and nothing was sent to the model",
        );
        assert!(!d.join("ran").exists(), "the agent ran");
        assert_eq!(snapshot(d), before);
    }
    assert_eq!(fake.calls.load(Ordering::SeqCst), 0);
}

#[test]
fn record_refuses_a_folder_a_pipe_or_a_path_through_a_file_before_any_call() {
    let dir = workspace(SKILL);
    let d = dir.path();
    std::fs::create_dir(d.join("cassettes")).unwrap();
    std::fs::write(d.join("plain"), "a file").unwrap();
    let fifo = std::process::Command::new("mkfifo")
        .arg(d.join("fifo"))
        .status()
        .unwrap();
    assert!(fifo.success());
    let fake = crate::fake_llm::start();
    let before = snapshot(&d.join("skill"));
    let cases = [
        (
            "cassettes",
            "cassettes: cannot record a cassette here: it is a folder",
        ),
        (
            "fifo",
            "fifo: cannot record a cassette here: it is not a regular file",
        ),
        (
            "plain/run.cassette",
            "plain/run.cassette: cannot use the cassette",
        ),
    ];
    for (target, needle) in cases {
        let out = skill_evolve(d)
            .args(["evolve", "skill/SKILL.md", "--trajectories", "temp"])
            .args(["--base-url", &fake.base_url, "--model", "fake-model"])
            .args(["--record", target])
            .output()
            .unwrap();
        assert_one_line_error(&out, needle);
    }
    assert_eq!(fake.calls.load(Ordering::SeqCst), 0, "no call was made");
    assert_eq!(std::fs::read_dir(d.join("cassettes")).unwrap().count(), 0);
    assert_eq!(snapshot(&d.join("skill")), before);

    // `run --record` is checked the same way, before the agent starts.
    let fake = crate::fake_llm::start_loop();
    let dir = marking_workspace(&fake.base_url);
    let d = dir.path();
    std::fs::create_dir(d.join("cassettes")).unwrap();
    let out = skill_evolve(d)
        .env("SKILL_EVOLVE_TEST_KEY", "k")
        .args(["run", "--config", "evolve.toml", "--record", "cassettes"])
        .output()
        .unwrap();
    assert_one_line_error(&out, "cannot record a cassette here: it is a folder");
    assert!(!d.join("ran").exists(), "the agent ran");
    assert_eq!(fake.calls.load(Ordering::SeqCst), 0);
}
