//! A run's folder is its own: a symbolic link anywhere in it (the handoff folder linked to a
//! folder outside the project, a staged or journal entry linked elsewhere) is refused with a
//! line naming it and nothing is written through it, by `run` and by the MCP server's tools;
//! and everything a run writes there is readable by its owner only (files 0600, folders 0700).
#![cfg(unix)]

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;

use crate::agent_protocol::demo_with_agent;
use crate::mcp_lines::Server;
use crate::run::rule_agent;
use crate::support::{assert_one_line_error, run_config, snapshot};

/// The replayed demo, with the handoff provider when `handoff`.
fn demo(handoff: bool) -> tempfile::TempDir {
    let dir = demo_with_agent(&[rule_agent().display().to_string()]);
    if handoff {
        let path = dir.path().join("evolve.toml");
        let config = std::fs::read_to_string(&path).unwrap();
        let replaced = config
            .replace("provider = \"replay\"", "provider = \"handoff\"")
            .replace("cassette = \"demo.cassette\"\n", "");
        assert_ne!(replaced, config);
        std::fs::write(path, replaced).unwrap();
    }
    dir
}

fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path)
        .unwrap()
        .permissions()
        .mode()
        & 0o777
}

#[test]
fn a_linked_handoff_folder_is_refused_and_nothing_is_written_through_it() {
    let outside = tempfile::tempdir().unwrap();
    let dir = demo(true);
    let d = dir.path();
    std::fs::create_dir_all(d.join(".skill-evolve/runs/demo")).unwrap();
    std::os::unix::fs::symlink(outside.path(), d.join(".skill-evolve/runs/demo/handoff")).unwrap();
    let out = run_config(d, &[]);
    assert_one_line_error(&out, "handoff: is a symbolic link inside the run folder");
    assert!(
        snapshot(outside.path()).is_empty(),
        "written through the link"
    );

    // The link made after the run stopped for answers: neither the run nor `answer` write there.
    std::fs::remove_file(d.join(".skill-evolve/runs/demo/handoff")).unwrap();
    let out = run_config(d, &[]);
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    let handoff = d.join(".skill-evolve/runs/demo/handoff");
    let moved = outside.path().join("handoff");
    std::fs::rename(&handoff, &moved).unwrap();
    std::os::unix::fs::symlink(&moved, &handoff).unwrap();
    let before = snapshot(&moved);
    let out = run_config(d, &[]);
    assert_one_line_error(&out, "is a symbolic link inside the run folder");
    let out = run_config(d, &["--fresh"]);
    assert_one_line_error(&out, "is a symbolic link inside the run folder");
    assert_eq!(snapshot(&moved), before, "written through the link");
    assert!(moved.join("prompts.json").is_file());
}

#[test]
fn a_link_anywhere_in_the_run_folder_is_refused() {
    let outside = tempfile::tempdir().unwrap();
    let dir = demo(false);
    let d = dir.path();
    let out = run_config(d, &[]);
    assert!(out.status.success(), "{out:?}");
    let run = d.join(".skill-evolve/runs/demo");
    for entry in ["staged/files", "llm-journal.jsonl", "report.md", "store"] {
        let path = run.join(entry);
        let kept = outside.path().join("kept");
        std::fs::rename(&path, &kept).unwrap();
        std::os::unix::fs::symlink(&kept, &path).unwrap();
        let out = run_config(d, &[]);
        assert_one_line_error(&out, "is a symbolic link inside the run folder");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(entry), "{entry}: {stderr}");
        std::fs::remove_file(&path).unwrap();
        std::fs::rename(&kept, &path).unwrap();
    }
    assert!(run_config(d, &[]).status.success());
}

#[test]
fn everything_a_run_writes_is_readable_by_its_owner_only() {
    for handoff in [false, true] {
        let dir = demo(handoff);
        let d = dir.path();
        let out = run_config(d, &[]);
        let expected = if handoff { Some(3) } else { Some(0) };
        assert_eq!(out.status.code(), expected, "{out:?}");
        let run = d.join(".skill-evolve/runs/demo");
        let mut seen = Vec::new();
        let mut folders = vec![run.clone()];
        while let Some(folder) = folders.pop() {
            assert_eq!(mode(&folder), 0o700, "{}", folder.display());
            for entry in std::fs::read_dir(&folder).unwrap() {
                let path = entry.unwrap().path();
                let name = path.strip_prefix(&run).unwrap().display().to_string();
                if path.is_dir() {
                    folders.push(path);
                } else {
                    assert_eq!(mode(&path), 0o600, "{name}");
                    seen.push(name);
                }
            }
        }
        let wanted: &[&str] = if handoff {
            &[
                "handoff/requests.jsonl",
                "handoff/prompts.md",
                "handoff/prompts.json",
            ]
        } else {
            &[
                "runlog.sqlite",
                "llm-journal.jsonl",
                "report.md",
                "checkpoint.json",
            ]
        };
        for file in wanted {
            assert!(seen.iter().any(|s| s == file), "{file} not in {seen:?}");
        }
        assert_eq!(mode(&d.join(".skill-evolve/runs/.demo.lock")), 0o600);
    }
}

#[test]
fn the_mcp_answer_tool_writes_nothing_through_a_linked_handoff_folder() {
    let outside = tempfile::tempdir().unwrap();
    let dir = demo(true);
    let d = dir.path();
    assert_eq!(run_config(d, &[]).status.code(), Some(3));
    let handoff = d.join(".skill-evolve/runs/demo/handoff");
    let waiting: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(handoff.join("prompts.json")).unwrap())
            .unwrap();
    let key = waiting[0]["key"].as_str().unwrap().to_owned();
    let moved = outside.path().join("handoff");
    std::fs::rename(&handoff, &moved).unwrap();
    std::os::unix::fs::symlink(&moved, &handoff).unwrap();
    let before = snapshot(&moved);
    let mut server = Server::start(d);
    let error = server
        .call(
            1,
            "answer",
            serde_json::json!({ "run": "demo", "key": key, "reply": "{}" }),
        )
        .unwrap_err();
    assert!(error.contains("is a symbolic link"), "{error}");
    let error = server
        .call(2, "handoff_prompts", serde_json::json!({ "run": "demo" }))
        .unwrap_err();
    assert!(error.contains("is a symbolic link"), "{error}");
    assert_eq!(snapshot(&moved), before, "written through the link");
}
