//! `-v`: every LLM call's tag and latency on stderr, and why a reply could
//! not be used; without `-v` none of it.

use crate::evolve::{SKILL, workspace};
use crate::support::skill_evolve;

fn evolve_recording(d: &std::path::Path, verbose: bool) -> std::process::Output {
    let fake = crate::fake_llm::start();
    let mut cmd = skill_evolve(d);
    if verbose {
        cmd.arg("--verbose");
    }
    cmd.args(["evolve", "skill/SKILL.md", "--trajectories", "temp"])
        .args(["--base-url", &fake.base_url, "--model", "fake-model"])
        .output()
        .unwrap()
}

#[test]
fn verbose_shows_every_llm_call_with_its_tag_and_latency() {
    let dir = workspace(SKILL);
    let d = dir.path();
    let out = evolve_recording(d, true);
    assert!(out.status.success(), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    for tag in ["skill_evolve.reflect", "skill_evolve.meta_reflect"] {
        let line = stderr
            .lines()
            .find(|l| l.contains(&format!("LLM call {tag}: ")))
            .unwrap_or_else(|| panic!("no line for {tag}: {stderr}"));
        assert!(
            line.contains(" ms, 100 prompt + 50 completion tokens"),
            "{line}"
        );
    }
    assert!(
        stderr.contains("configuration: no skill-evolve.toml found"),
        "{stderr}"
    );
    assert!(stderr.contains("LLM: openai fake-model at"), "{stderr}");

    // Without -v: the same run prints none of it.
    let dir = workspace(SKILL);
    let out = evolve_recording(dir.path(), false);
    assert!(out.status.success(), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("LLM call"), "{stderr}");
    assert!(!stderr.contains("configuration:"), "{stderr}");
}

/// A server whose replies are prose where JSON was asked for.
fn prose(_body: &str, _auth: &str) -> (u16, String) {
    (
        200,
        crate::fake_llm::completion("I would rather not answer in JSON today."),
    )
}

/// A server whose replies are empty.
fn empty(_body: &str, _auth: &str) -> (u16, String) {
    (200, crate::fake_llm::completion(""))
}

#[test]
fn verbose_says_why_a_reply_was_unusable() {
    for (server, expected) in [
        (
            prose as fn(&str, &str) -> (u16, String),
            "reply is not a JSON object as asked (the caller may repair it or ask again); it \
             begins \"I would rather not answer in JSON today.\"",
        ),
        (
            empty,
            "reply unusable (EmptyContent): the reply has no content",
        ),
    ] {
        let dir = workspace(SKILL);
        let base_url = crate::fake_llm::start_raw(server);
        let out = skill_evolve(dir.path())
            .arg("-v")
            .args(["evolve", "skill/SKILL.md", "--trajectories", "temp"])
            .args(["--base-url", &base_url, "--model", "m"])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr
                .lines()
                .any(|l| l.contains("LLM call skill_evolve.reflect: ") && l.contains(expected)),
            "{expected:?} not in {stderr}"
        );
    }
}
