//! `skill-evolve evolve` end to end: record a cassette against a fake
//! OpenAI-compatible server, replay it, and check what is (not) written.

use std::path::Path;
use std::sync::atomic::Ordering;

use crate::fake_llm::{APPENDED, REPLACED, REPLACEMENT, start};
use crate::support::{assert_one_line_error, history_json, skill_evolve, snapshot};

pub(crate) const SKILL: &str = include_str!("fixtures/skill.md");
const DUPLICATED: &str = include_str!("fixtures/duplicated_markers.md");
const T1: &str = include_str!("fixtures/trajectories/failed_trajectory_001.json");
const T2: &str = include_str!("fixtures/trajectories/failed_trajectory_002.json");

pub(crate) fn workspace(skill: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir_all(d.join("skill")).unwrap();
    std::fs::write(d.join("skill/SKILL.md"), skill).unwrap();
    std::fs::create_dir_all(d.join("temp")).unwrap();
    std::fs::write(d.join("temp/failed_trajectory_001.json"), T1).unwrap();
    std::fs::write(d.join("temp/failed_trajectory_002.json"), T2).unwrap();
    dir
}

/// `skill-evolve evolve` in `d` on the workspace's skill and trajectories.
pub(crate) fn evolve_cmd(d: &Path) -> assert_cmd::Command {
    let mut cmd = skill_evolve(d);
    cmd.args(["evolve", "skill/SKILL.md", "--trajectories", "temp"]);
    cmd
}

/// `skill-evolve history --json` of the workspace's skill.
pub(crate) fn skill_history(d: &Path) -> serde_json::Value {
    history_json(d, "skill/SKILL.md", None)
}

/// Records a cassette of one evolve run (without --yes, so nothing is written).
pub(crate) fn record(d: &Path) -> std::process::Output {
    let fake = start();
    let out = evolve_cmd(d)
        .args(fake.provider_args())
        .args(["--record", "run.cassette"])
        .output()
        .unwrap();
    // One reflection (two failures, one batch) and one meta-reflection.
    assert_eq!(fake.calls.load(Ordering::SeqCst), 2, "{out:?}");
    out
}

#[test]
fn without_yes_and_without_terminal_nothing_is_written() {
    let dir = workspace(SKILL);
    let d = dir.path();
    let out = record(d);
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        std::fs::read_to_string(d.join("skill/SKILL.md")).unwrap(),
        SKILL
    );
    assert!(!d.join("skill/.skill-evolve/store").exists());
    // The diff and the table were shown, and the candidate's path printed.
    assert!(stdout.contains(&format!("+{REPLACEMENT}")), "{stdout}");
    assert!(stdout.contains(&format!("-{REPLACED}")), "{stdout}");
    assert!(stdout.contains("│ replace "), "{stdout}");
    assert!(stdout.contains("applied_insert_after"), "{stdout}");
    assert!(stdout.contains("t2: a change was listed twice"), "{stdout}");
    let line = stdout
        .lines()
        .find(|l| l.starts_with("not written:"))
        .unwrap_or_else(|| panic!("{stdout}"));
    let path = line.rsplit("The candidate is at ").next().unwrap();
    let candidate = std::fs::read_to_string(d.join(path)).unwrap();
    assert!(candidate.contains(REPLACEMENT) && candidate.contains(APPENDED));
    // The protected region is byte-identical.
    let region = |t: &str| t[t.find("<!-- SLOW_UPDATE_START -->").unwrap()..].to_owned();
    assert_eq!(region(&candidate), region(SKILL));
}

#[test]
fn replay_with_yes_writes_a_version_that_history_shows() {
    let dir = workspace(SKILL);
    let d = dir.path();
    assert!(record(d).status.success());
    let before = snapshot(&d.join("skill"));
    let out = evolve_cmd(d)
        .arg("--yes")
        .args([
            "--provider",
            "replay",
            "--cassette",
            "run.cassette",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["written"], true);
    assert_eq!(summary["version"], "v000002");
    assert_eq!(summary["failures"], 2);
    assert_eq!(summary["passed_trajectories"], 1);
    assert_eq!(summary["llm_calls"], 2);
    assert!(
        summary["stop_reason"]
            .as_str()
            .unwrap()
            .contains("every known failure addressed"),
        "{summary}"
    );
    let written = std::fs::read_to_string(d.join("skill/SKILL.md")).unwrap();
    assert_ne!(snapshot(&d.join("skill")), before);
    assert!(written.contains(REPLACEMENT) && written.contains(APPENDED));
    assert!(
        written.find(APPENDED).unwrap() > written.find("3. Name breaking changes").unwrap(),
        "insert_after lands after its target"
    );

    let history = skill_history(d);
    assert_eq!(history["current"], "v000002");
    let entries = history["history"].as_array().unwrap();
    assert_eq!(entries.len(), 2);
    assert_eq!(entries[0]["kind"], "init");
    assert_eq!(entries[1]["kind"], "advance");
    assert!(
        entries[1]["message"]
            .as_str()
            .unwrap()
            .contains("2 edits from 2 failure")
    );

    let out = skill_evolve(d)
        .args(["diff", "skill/SKILL.md"])
        .output()
        .unwrap();
    let diff = String::from_utf8(out.stdout).unwrap();
    assert!(
        diff.contains("--- SKILL.md@v000001") && diff.contains(&format!("+{APPENDED}")),
        "{diff}"
    );

    // Rolling back restores the working copy and keeps the history.
    skill_evolve(d)
        .args(["rollback", "skill/SKILL.md", "--to", "v1", "--yes"])
        .assert()
        .success();
    assert_eq!(
        std::fs::read_to_string(d.join("skill/SKILL.md")).unwrap(),
        SKILL
    );
    let out = skill_evolve(d)
        .args(["history", "skill/SKILL.md"])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.lines().count(), 3, "{text}");
    assert!(text.lines().last().unwrap().contains("rollback"), "{text}");
}

#[test]
fn a_skill_with_duplicated_markers_is_refused_with_a_pointer_to_doctor() {
    let dir = workspace(DUPLICATED);
    let d = dir.path();
    let before = snapshot(d);
    let out = evolve_cmd(d)
        .args(["--provider", "replay", "--cassette", "missing.cassette"])
        .output()
        .unwrap();
    let line = DUPLICATED
        .lines()
        .enumerate()
        .filter(|(_, l)| l.contains("SLOW_UPDATE_START"))
        .nth(1)
        .unwrap()
        .0
        + 1;
    assert_one_line_error(&out, &format!("skill/SKILL.md:{line}: marker"));
    assert_one_line_error(&out, "skill-evolve doctor --fix skill/SKILL.md");
    assert_eq!(snapshot(d), before);
}

#[test]
fn input_problems_exit_2_before_any_call() {
    let dir = workspace(SKILL);
    let d = dir.path();
    std::fs::create_dir_all(d.join("empty")).unwrap();
    std::fs::write(d.join("temp/broken.json"), "{\n  \"id\": \"b\",\n  ,\n}\n").unwrap();
    std::fs::write(d.join("bad.toml"), "[llm]\nprovider = \"gpt\"\n").unwrap();
    std::fs::write(d.join("worse.toml"), "[llm\n").unwrap();
    std::fs::write(d.join("S.md"), "## Outcomes\n- soft_score: 7\n").unwrap();
    let before = snapshot(d);
    let cases: [(&[&str], &str); 9] = [
        (
            &["--trajectories", "empty"],
            "empty: no .json trajectory files here",
        ),
        (
            &["--trajectories", "temp"],
            "temp/broken.json:3: invalid JSON",
        ),
        (
            &["--session-state", "S.md"],
            "S.md:1: soft_score must be a number in [0, 1]",
        ),
        (
            // Both sources are read; the first bad one stops the command.
            &["--session-state", "S.md", "--trajectories", "temp"],
            "temp/broken.json:3: invalid JSON",
        ),
        (
            &["--session-state", "nowhere.md"],
            "nowhere.md: cannot read",
        ),
        (
            &["--session-state", "S.md", "--config", "bad.toml"],
            "S.md:1",
        ),
        (
            &[
                "--trajectories",
                "empty",
                "--schedule",
                "linear",
                "--max-edits",
                "1",
                "--min-edits",
                "3",
            ],
            "empty:",
        ),
        (
            &["--trajectories", "empty", "--config", "worse.toml"],
            "empty:",
        ),
        (
            &["--trajectories", "empty", "--provider", "local"],
            "empty:",
        ),
    ];
    for (args, needle) in cases {
        let out = skill_evolve(d)
            .args(["evolve", "skill/SKILL.md"])
            .args(args)
            .output()
            .unwrap();
        assert_one_line_error(&out, needle);
    }
    assert_eq!(snapshot(d), before);
}

#[test]
fn configuration_problems_exit_2_with_file_and_line() {
    let dir = workspace(SKILL);
    let d = dir.path();
    std::fs::remove_file(d.join("temp/failed_trajectory_002.json")).unwrap();
    std::fs::write(d.join("bad.toml"), "[llm]\nprovider = \"gpt\"\n").unwrap();
    std::fs::write(d.join("worse.toml"), "[llm]\nmodel = 3\n").unwrap();
    std::fs::write(d.join("skill-evolve.toml"), "[llm.openai]\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"m\"\napi_key_env = \"SKILL_EVOLVE_TEST_NO_SUCH_KEY\"\n").unwrap();
    let before = snapshot(d);
    let base = ["evolve", "skill/SKILL.md", "--trajectories", "temp"];
    let cases: [(&[&str], &str); 6] = [
        (
            &["--config", "bad.toml"],
            "bad.toml:2: unknown provider \"gpt\"",
        ),
        (
            &["--config", "worse.toml"],
            "worse.toml:2: unknown field `model`",
        ),
        (
            &["--config", "none.toml"],
            "none.toml: cannot read the configuration",
        ),
        (
            &["--provider", "replay"],
            "provider `replay` needs a cassette",
        ),
        (
            &["--provider", "replay", "--cassette", "skill/SKILL.md"],
            "skill/SKILL.md:1: not a cassette entry",
        ),
        (
            &[],
            "SKILL_EVOLVE_TEST_NO_SUCH_KEY (api_key_env) is not set",
        ),
    ];
    for (args, needle) in cases {
        let out = skill_evolve(d).args(base).args(args).output().unwrap();
        assert_one_line_error(&out, needle);
    }
    let out = skill_evolve(d)
        .args(base)
        .args([
            "--config",
            "bad.toml",
            "--schedule",
            "cosine",
            "--max-edits",
            "2",
            "--min-edits",
            "4",
        ])
        .output()
        .unwrap();
    assert_one_line_error(&out, "--max-edits/--min-edits");
    assert_eq!(snapshot(d), before);
}

/// The example shipped in `examples/release-notes` replays offline: its
/// cassette matches the prompts this build sends.
#[test]
fn the_shipped_example_replays_offline() {
    let dir = crate::handoff::release_notes_example();
    let d = dir.path();
    let out = skill_evolve(d)
        .args(["evolve", "SKILL.md", "--trajectories", "temp", "--yes"])
        .args(["--provider", "replay", "--cassette", "demo.cassette"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.contains("wrote SKILL.md as v000002"), "{stdout}");
    assert!(
        std::fs::read_to_string(d.join("SKILL.md"))
            .unwrap()
            .contains(APPENDED)
    );
}

#[test]
fn hand_edits_are_kept_in_history_and_block_a_rollback() {
    let dir = workspace(SKILL);
    let d = dir.path();
    assert!(record(d).status.success());
    let replay = [
        "--provider",
        "replay",
        "--cassette",
        "run.cassette",
        "--yes",
    ];
    evolve_cmd(d).args(replay).assert().success();
    // A hand edit since the last version blocks a rollback, which writes nothing.
    let edited = std::fs::read_to_string(d.join("skill/SKILL.md")).unwrap() + "\nhand edit\n";
    std::fs::write(d.join("skill/SKILL.md"), &edited).unwrap();
    let before = snapshot(d);
    let out = skill_evolve(d)
        .args(["rollback", "skill/SKILL.md", "--to", "1", "--yes"])
        .output()
        .unwrap();
    assert_one_line_error(
        &out,
        "skill/SKILL.md: the working copy was edited since its last version",
    );
    assert_eq!(snapshot(d), before);
    // The next evolve records the hand edit as its own version first.
    let fake = start();
    evolve_cmd(d)
        .arg("--yes")
        .args(fake.provider_args())
        .assert()
        .success();
    let history = skill_history(d);
    let messages: Vec<&str> = history["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["message"].as_str().unwrap())
        .collect();
    assert_eq!(messages.len(), 4, "{messages:?}");
    assert_eq!(messages[2], "working copy as found before evolving");
    assert_eq!(history["current"], "v000004");
    let out = skill_evolve(d)
        .args(["diff", "skill/SKILL.md", "v2", "v3"])
        .output()
        .unwrap();
    assert!(
        String::from_utf8(out.stdout)
            .unwrap()
            .contains("+hand edit")
    );
}

/// Without the `local` feature, asking for the embedded model is bad input naming the feature.
#[cfg(not(feature = "local"))]
#[test]
fn provider_local_without_the_feature_is_one_line() {
    let dir = workspace(SKILL);
    let d = dir.path();
    let out = evolve_cmd(d)
        .args(["--provider", "local"])
        .output()
        .unwrap();
    assert_one_line_error(
        &out,
        "rebuild skill-evolve with its default `local` feature",
    );
}

#[test]
fn evolves_started_at_once_on_a_new_skill_share_one_store() {
    let dir = workspace(SKILL);
    let d = dir.path();
    assert!(record(d).status.success());
    let outputs: Vec<std::process::Output> = std::thread::scope(|scope| {
        let runs: Vec<_> = (0..3)
            .map(|i| {
                scope.spawn(move || {
                    evolve_cmd(d)
                        .arg("--yes")
                        .args(["--provider", "replay", "--cassette", "run.cassette"])
                        .args(["--run-dir", &format!("runs/r{i}")])
                        .output()
                        .unwrap()
                })
            })
            .collect();
        runs.into_iter().map(|r| r.join().unwrap()).collect()
    });
    // Each one either writes its candidate, or refuses to overwrite the skill
    // another one wrote while it was evolving, or (when it started after that
    // write) finds no recording for the new skill text in the replay cassette;
    // none trips over the store the others are creating.
    let mut written = 0;
    for out in &outputs {
        if out.status.success() {
            written += 1;
        } else {
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(
                stderr.contains("changed while evolving; nothing written")
                    || stderr.contains("cassette miss"),
                "{out:?}"
            );
        }
    }
    assert!(written >= 1, "{outputs:?}");
    let history = skill_history(d);
    let entries = history["history"].as_array().unwrap();
    let imports = entries.iter().filter(|e| e["kind"] == "init").count();
    assert_eq!(imports, 1, "{history}");
}

/// The evolve workspace with a `prompts` folder of template overrides.
fn workspace_with_prompts(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = workspace(SKILL);
    let prompts = dir.path().join("prompts");
    std::fs::create_dir_all(&prompts).unwrap();
    for (name, text) in files {
        std::fs::write(prompts.join(name), text).unwrap();
    }
    dir
}

#[test]
fn prompt_overrides_change_what_the_reflect_and_meta_reflect_calls_say() {
    // The fake server tells the two calls apart by these section titles.
    let dir = workspace_with_prompts(&[
        (
            "reflect.md",
            "HOUSE REFLECT on:\n{{skill_content}}\n## Failed trajectories ({{n_trajectories}})\n{{trajectories}}\n",
        ),
        (
            "meta_reflect.md",
            "HOUSE META on:\n{{skill_content}}\n## Known failures ({{n_trajectories}})\n{{failure_modes}}\n",
        ),
    ]);
    let d = dir.path();
    let fake = start();
    let out = evolve_cmd(d)
        .args(["--prompts", "prompts", "--json"])
        .args(fake.provider_args())
        .args(["--record", "run.cassette"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(fake.calls.load(Ordering::SeqCst), 2, "{out:?}");
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["changed"], true, "{summary}");
    // The cassette keeps each request: both prompts are the overrides, filled in.
    let cassette = std::fs::read_to_string(d.join("run.cassette")).unwrap();
    let prompts: Vec<String> = cassette
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .map(|entry| {
            entry["messages"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|m| m["content"].as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .collect();
    assert_eq!(prompts.len(), 2, "{cassette}");
    let reflect = prompts.iter().find(|p| p.contains("HOUSE REFLECT on:\n"));
    let meta = prompts.iter().find(|p| p.contains("HOUSE META on:\n"));
    let (reflect, meta) = (reflect.unwrap(), meta.unwrap());
    assert!(reflect.contains("## Failed trajectories (2)"), "{reflect}");
    assert!(!reflect.contains("{{"), "{reflect}");
    assert!(meta.contains("## Known failures (2)"), "{meta}");
    assert!(
        meta.contains(REPLACEMENT),
        "the candidate is judged: {meta}"
    );
}

#[test]
fn a_prompt_override_with_an_unknown_placeholder_is_refused_before_any_call() {
    let dir = workspace_with_prompts(&[(
        "reflect.md",
        "Improve {{skil_content}} from {{trajectories}}\n",
    )]);
    let d = dir.path();
    let before = snapshot(d);
    let fake = start();
    let out = evolve_cmd(d)
        .args(["--prompts", "prompts"])
        .args(fake.provider_args())
        .output()
        .unwrap();
    assert_one_line_error(&out, "prompts: template reflect uses \"skil_content\"");
    assert_eq!(fake.calls.load(Ordering::SeqCst), 0);
    assert_eq!(snapshot(d), before);
    let out = evolve_cmd(d)
        .args(["--prompts", "no-such-folder"])
        .args(["--provider", "replay", "--cassette", "missing.cassette"])
        .output()
        .unwrap();
    assert_one_line_error(&out, "no-such-folder: no such prompt-template folder");
    assert_eq!(snapshot(d), before);
}

#[test]
fn evolve_warns_when_no_harvested_session_used_the_skill() {
    let dir = workspace(SKILL);
    let d = dir.path();
    let with_skills = |skills: &str| {
        std::fs::remove_dir_all(d.join("temp")).unwrap();
        std::fs::create_dir_all(d.join("temp")).unwrap();
        for (name, text) in [("a.json", T1), ("b.json", T2)] {
            let mut value: serde_json::Value = serde_json::from_str(text).unwrap();
            let note = serde_json::json!({"source": "claude-code", "skills": [skills]});
            match &mut value {
                serde_json::Value::Array(items) => {
                    items
                        .iter_mut()
                        .for_each(|item| item["harvest"] = note.clone());
                }
                one => one["harvest"] = note,
            }
            std::fs::write(d.join("temp").join(name), value.to_string()).unwrap();
        }
    };
    let run = || {
        let fake = start();
        let out = evolve_cmd(d).args(fake.provider_args()).output().unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    with_skills("pdf-tools");
    let stderr = run();
    assert!(
        stderr.contains("warning: none of the 3 trajectories that name their skills used release-notes (they used: pdf-tools)"),
        "{stderr}"
    );
    // Its frontmatter name or its folder (`skill`), plugin prefix or not, is a use.
    for used in ["release-notes", "team:release-notes", "skill"] {
        with_skills(used);
        let stderr = run();
        assert!(!stderr.contains("warning: none of"), "{used}: {stderr}");
    }
    // A task type is no skill: trajectories that only have one name no skill.
    std::fs::remove_dir_all(d.join("temp")).unwrap();
    std::fs::create_dir_all(d.join("temp")).unwrap();
    let mut typed: serde_json::Value = serde_json::from_str(T1).unwrap();
    typed["task_type"] = "triage".into();
    std::fs::write(d.join("temp/t1.json"), typed.to_string()).unwrap();
    let stderr = run();
    assert!(!stderr.contains("warning:"), "{stderr}");
}

#[test]
fn evolve_keeps_history_in_the_project_not_in_the_skill_folder_and_reads_an_old_store() {
    let dir = workspace(SKILL);
    let d = dir.path();
    assert!(record(d).status.success());
    let out = replay_with(d, &[]);
    assert!(out.status.success(), "{out:?}");
    // The skill's folder holds the skill only: `cp -r skill` copies no history.
    let in_skill: Vec<String> = snapshot(&d.join("skill"))
        .into_iter()
        .map(|(p, _)| p)
        .collect();
    assert_eq!(in_skill, ["SKILL.md"]);
    assert!(
        d.join(".skill-evolve/stores/skill/SKILL.md/manifest.json")
            .is_file()
    );
    assert!(
        std::fs::read_dir(d.join(".skill-evolve/runs"))
            .unwrap()
            .flatten()
            .any(|e| e.file_name().to_string_lossy().starts_with("run-"))
    );
    assert_eq!(skill_history(d)["current"], "v000002");
    // The same history from another folder of the project (`evolve.toml` marks it).
    std::fs::write(d.join("evolve.toml"), "").unwrap();
    let out = skill_evolve(&d.join("temp"))
        .args(["history", "../skill/SKILL.md", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let history: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(history["current"], "v000002");

    // A store an earlier version kept beside the skill (made here with the explicit option,
    // which still works) is still the skill's: found without the option, no history lost.
    let old = workspace(SKILL);
    let o = old.path();
    assert!(record(o).status.success());
    let out = replay_with(o, &["--store", "skill/.skill-evolve/store"]);
    assert!(out.status.success(), "{out:?}");
    std::fs::write(o.join("skill/SKILL.md"), SKILL).unwrap();
    let out = replay_with(o, &[]);
    assert!(out.status.success(), "{out:?}");
    assert!(!o.join(".skill-evolve/stores").exists());
    // v1 imported, v2 evolved, v3 the working copy as found, v4 evolved again.
    assert_eq!(skill_history(o)["current"], "v000004");
}

/// A replay of the recorded session in `d` with `--yes` and `extra`.
fn replay_with(d: &Path, extra: &[&str]) -> std::process::Output {
    evolve_cmd(d)
        .arg("--yes")
        .args(["--provider", "replay", "--cassette", "run.cassette"])
        .args(extra)
        .output()
        .unwrap()
}
