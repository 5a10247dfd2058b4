//! Hostile paths and inputs met by the files the command writes: symbolic links where an
//! output goes, a cassette named over an input, a foreign folder given as a run folder,
//! control characters from an LLM in the human-readable files, and oversized step lists.

use std::path::{Path, PathBuf};

use crate::support::{assert_one_line_error, skill_evolve};

fn harvest_fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/fixtures/harvest")
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

#[cfg(unix)]
fn is_link(path: &Path) -> bool {
    path.symlink_metadata()
        .is_ok_and(|m| m.file_type().is_symlink())
}

#[cfg(unix)]
#[test]
fn harvest_refuses_links_where_its_outputs_go_and_writes_them_0600() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    copy_tree(&harvest_fixtures(), d);
    std::fs::write(d.join("victim.txt"), "keep me\n").unwrap();
    let harvest = |extra: &[&str]| {
        skill_evolve(d)
            .args(["harvest", "--source", "claude-code", "--from", "claude"])
            .arg("--all-projects")
            .args(extra)
            .output()
            .unwrap()
    };

    // --tasks naming a link, to a file or to nowhere: refused before anything is written.
    std::os::unix::fs::symlink("victim.txt", d.join("tasks.jsonl")).unwrap();
    std::os::unix::fs::symlink("nowhere.jsonl", d.join("dangling.jsonl")).unwrap();
    for tasks in ["tasks.jsonl", "dangling.jsonl"] {
        let out = harvest(&["--tasks", tasks, "--out", "h"]);
        assert_one_line_error(&out, &format!("{tasks}: is a symbolic link"));
        assert!(is_link(&d.join(tasks)), "{tasks}");
        assert!(!d.join("h").exists());
    }
    assert!(!d.join("nowhere.jsonl").exists());

    // A trajectory file of --out that is a link (dangling too) is never replaced.
    let id = "claude-code-11111111-1111-4111-8111-111111111111.json";
    std::fs::create_dir(d.join("h")).unwrap();
    std::os::unix::fs::symlink("../victim.txt", d.join("h").join(id)).unwrap();
    let out = harvest(&["--out", "h"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("is a symbolic link"),
        "{out:?}"
    );
    assert!(is_link(&d.join("h").join(id)));
    assert_eq!(
        std::fs::read_to_string(d.join("victim.txt")).unwrap(),
        "keep me\n"
    );
    std::fs::remove_file(d.join("h").join(id)).unwrap();
    std::os::unix::fs::symlink("../gone.json", d.join("h").join(id)).unwrap();
    let out = harvest(&["--out", "h"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(is_link(&d.join("h").join(id)));
    assert!(!d.join("gone.json").exists());

    // Plain outputs: user-only, even over a wide-open file.
    std::fs::remove_file(d.join("h").join(id)).unwrap();
    std::fs::write(d.join("h").join(id), "{}").unwrap();
    std::fs::set_permissions(d.join("h").join(id), std::fs::Permissions::from_mode(0o777)).unwrap();
    let out = harvest(&[
        "--out",
        "h",
        "--tasks",
        "mined.jsonl",
        "--min-sessions",
        "1",
    ]);
    assert!(out.status.success(), "{out:?}");
    for path in [
        d.join("h").join(id),
        d.join("mined.jsonl"),
        d.join("mined.jsonl.dropped.json"),
    ] {
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "{}", path.display());
    }
}

#[test]
fn evolve_refuses_a_run_dir_it_did_not_make_and_reuses_its_own() {
    let dir = crate::evolve::workspace(crate::evolve::SKILL);
    let d = dir.path();
    assert!(crate::evolve::record(d).status.success());
    std::fs::create_dir(d.join("site")).unwrap();
    for name in ["report.html", "report.json", "candidate-SKILL.md"] {
        std::fs::write(d.join("site").join(name), "the user's own\n").unwrap();
    }
    let before = crate::support::snapshot(d);
    let replay = |run_dir: &str| {
        crate::evolve::evolve_cmd(d)
            .args(["--provider", "replay", "--cassette", "run.cassette"])
            .args(["--run-dir", run_dir])
            .output()
            .unwrap()
    };
    let out = replay("site");
    assert_one_line_error(
        &out,
        "--run-dir site is a folder with files that evolve did not write",
    );
    assert_eq!(crate::support::snapshot(d), before);

    // A folder evolve made may take another session; an empty one is taken and marked.
    std::fs::create_dir(d.join("fresh")).unwrap();
    for _ in 0..2 {
        let out = replay("fresh");
        assert!(out.status.success(), "{out:?}");
    }
    assert!(d.join("fresh/report.json").is_file());
    assert!(d.join("fresh/.skill-evolve-session").is_file());
}

#[test]
fn record_refuses_an_input_a_non_cassette_or_a_path_in_the_state_folder_before_any_call() {
    let dir = crate::evolve::workspace(crate::evolve::SKILL);
    let d = dir.path();
    std::fs::write(d.join("questions.jsonl"), "{\"question\": \"?\"}\n").unwrap();
    std::fs::create_dir_all(d.join("skill/.skill-evolve/runs")).unwrap();
    let fake = crate::fake_llm::start();
    let before = crate::support::snapshot(d);
    let cases = [
        ("skill/SKILL.md", "an input of this command"),
        ("./skill/../skill/SKILL.md", "an input of this command"),
        ("temp/failed_trajectory_001.json", "is not a cassette"),
        ("questions.jsonl", "is not a cassette"),
        (
            "skill/.skill-evolve/runs/new.cassette",
            "a folder only skill-evolve writes",
        ),
    ];
    for (target, needle) in cases {
        let out = crate::evolve::evolve_cmd(d)
            .args(fake.provider_args())
            .args(["--record", target])
            .output()
            .unwrap();
        assert_one_line_error(&out, needle);
        assert_one_line_error(&out, "nothing was sent to the model");
        assert_eq!(crate::support::snapshot(d), before, "{target}");
    }
    assert_eq!(fake.calls.load(std::sync::atomic::Ordering::SeqCst), 0);

    // An earlier cassette may be recorded again.
    assert!(crate::evolve::record(d).status.success());
    assert!(crate::evolve::record(d).status.success());
}

/// A cassette named inside the session folder `--run-dir` names is refused even while that
/// folder does not exist yet (so it has no marker that says `evolve` writes there).
#[test]
fn record_refuses_a_file_of_a_new_run_dir_before_any_call() {
    let dir = crate::evolve::workspace(crate::evolve::SKILL);
    let d = dir.path();
    let fake = crate::fake_llm::start();
    let before = crate::support::snapshot(d);
    for (run_dir, target) in [
        ("new", "new/report.json"),
        ("new", "new/candidate-SKILL.md"),
        ("new/", "./new/calls.cassette"),
        ("deeper/new", "deeper/x/../new/report.json"),
    ] {
        let out = crate::evolve::evolve_cmd(d)
            .args(fake.provider_args())
            .args(["--run-dir", run_dir, "--record", target])
            .output()
            .unwrap();
        assert_one_line_error(&out, "--record: this lies inside the run folder");
        assert_one_line_error(&out, "nothing was sent to the model");
        assert_eq!(crate::support::snapshot(d), before, "{target}");
        assert!(!d.join("new").exists() && !d.join("deeper").exists());
    }
    assert_eq!(fake.calls.load(std::sync::atomic::Ordering::SeqCst), 0);
    // Beside the session folder is fine.
    let out = crate::evolve::evolve_cmd(d)
        .args(fake.provider_args())
        .args(["--run-dir", "new", "--record", "new.cassette"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(d.join("new/report.json").is_file() && d.join("new.cassette").is_file());
}

#[test]
fn run_refuses_to_record_over_its_configuration_or_questions() {
    let dir = crate::run::run_workspace(crate::run::CONFIG);
    let d = dir.path();
    let before = crate::support::snapshot(d);
    for (target, needle) in [
        ("evolve.toml", "an input of this command"),
        ("questions.jsonl", "is not a cassette"),
        (
            ".skill-evolve/runs/demo/calls.cassette",
            "a folder only skill-evolve writes",
        ),
    ] {
        let out = crate::support::run_config(d, &["--record", target]);
        assert_one_line_error(&out, needle);
        assert_eq!(crate::support::snapshot(d), before, "{target}");
    }
}

/// The line a hostile edit adds after the rule the run needs: ESC sequences, a bell and a
/// right-to-left override.
const HOSTILE_LINE: &str = "# seen\u{1b}[2J\u{1b}[1A\u{7}\u{202e}txt.exe";
/// How the diff shows it.
const HOSTILE_SHOWN: &str = r"# seen\x1b[2J\x1b[1A\x07\u{202e}txt.exe";

/// The whole loop's replies, the edit carrying [`HOSTILE_LINE`].
fn hostile_loop(body: &str, _auth: &str) -> (u16, String) {
    let content = if body.contains("You improve a skill document") {
        serde_json::json!({"suggestions": ["no rule answers qa questions"],
            "edits": [{"op": "append", "content": "RULE qa => yes"},
                      {"op": "append", "content": HOSTILE_LINE}]})
        .to_string()
    } else if body.contains("long-term guidance") {
        "Keep the qa rule.".to_owned()
    } else if body.contains("for confirmation bias") {
        serde_json::json!({"confirmation_bias": false}).to_string()
    } else if body.contains("explored a source") {
        serde_json::json!({"missed_nodes": []}).to_string()
    } else if body.contains("Rank them by expected benefit") {
        serde_json::json!({"ranking": [0]}).to_string()
    } else if body.contains("Decide whether the failure comes") {
        serde_json::json!({"category": "defect"}).to_string()
    } else if body.contains("Classify it with one label") {
        serde_json::json!({"type": "wrong_inference"}).to_string()
    } else {
        serde_json::json!({"evidence_sufficient": true}).to_string()
    };
    (200, crate::fake_llm::completion(&content))
}

#[test]
fn staged_diffs_show_control_characters_of_an_edit_escaped_and_keep_the_document_exact() {
    let base_url = crate::fake_llm::start_raw(hostile_loop);
    let config = crate::run::loop_config(&crate::run::rule_agent(), &base_url);
    let dir = crate::run::run_workspace_with(&config, 14);
    let d = dir.path();
    // Long enough that the two appended lines stay within the length the validator allows.
    std::fs::write(
        d.join("skills/default-strategy.md"),
        "RULE other => no\n# One rule per line, read from the top; the first that matches answers.\n",
    )
    .unwrap();
    let out = crate::support::run_config(d, &[]);
    assert!(out.status.success(), "{out:?}");
    let run = d.join(".skill-evolve/runs/demo");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("1 accepted"),
        "{}\n{}\n{:?}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        std::fs::read_to_string(run.join("report.md"))
    );
    let staged = std::fs::read_to_string(run.join("staged/files/default-strategy.md")).unwrap();
    assert!(staged.contains(HOSTILE_LINE), "{staged:?}");
    let diff = std::fs::read_to_string(run.join("staged/diffs/default-strategy.md.diff")).unwrap();
    assert!(diff.contains(&format!("+{HOSTILE_SHOWN}")), "{diff:?}");
    assert!(!diff.contains(['\u{1b}', '\u{7}', '\u{202e}']), "{diff:?}");
    let report = std::fs::read_to_string(run.join("report.md")).unwrap();
    assert!(report.contains(HOSTILE_SHOWN), "{report:?}");
    assert!(
        !report.contains(['\u{1b}', '\u{7}', '\u{202e}']),
        "{report:?}"
    );
}

#[test]
fn capture_keeps_the_first_steps_of_a_huge_step_list_and_counts_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Three million empty steps (9 MB), then one that is not an object.
    let many = 3_000_000usize;
    let mut text = String::with_capacity(many * 3 + 8);
    text.push('[');
    for i in 0..many {
        if i > 0 {
            text.push(',');
        }
        text.push_str("{}");
    }
    text.push(']');
    std::fs::write(d.join("steps.json"), &text).unwrap();
    let capture = |id: &str| {
        skill_evolve(d)
            .args([
                "capture",
                "--dir",
                "rollouts",
                "--question",
                "q",
                "--prediction",
                "p",
            ])
            .args(["--correct", "false", "--steps", "steps.json", "--id", id])
            .output()
            .unwrap()
    };
    let out = capture("huge");
    assert!(out.status.success(), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("the first 1000 are kept"), "{stderr}");
    let path = d.join("rollouts/huge.json");
    let size = std::fs::metadata(&path).unwrap().len();
    assert!(size < 1024 * 1024, "{size} bytes");
    let written: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    assert_eq!(written["steps"].as_array().map(Vec::len), Some(1000));
    assert_eq!(written["steps"][999]["step"], 1000);
    assert_eq!(written["steps_omitted"], many - 1000);

    // A bad step past the kept ones is still found, and nothing is written.
    text.insert_str(text.len() - 1, ",7");
    std::fs::write(d.join("steps.json"), &text).unwrap();
    let out = capture("bad");
    assert_one_line_error(&out, &format!("step {} is not a JSON object", many + 1));
    assert!(!d.join("rollouts/bad.json").exists());
}

#[test]
fn llm_values_no_call_could_use_are_refused_with_file_line_and_key() {
    let dir = crate::evolve::workspace(crate::evolve::SKILL);
    let d = dir.path();
    let fake = crate::fake_llm::start();
    let head = format!(
        "[llm]\nprovider = \"openai\"\n\n[llm.openai]\nbase_url = \"{}\"\nmodel = \"fake-model\"\n",
        fake.base_url
    );
    let cases = [
        (
            format!("{head}temperature = nan\n"),
            "skill-evolve.toml:7: [llm.openai] temperature must be a number from 0 to 2, got NaN",
        ),
        (
            format!("{head}temperature = 7.5\n"),
            "skill-evolve.toml:7: [llm.openai] temperature must be a number from 0 to 2",
        ),
        (
            format!("{head}max_tokens = 0\n"),
            "skill-evolve.toml:7: [llm.openai] max_tokens must be at least 1, got 0",
        ),
        (
            format!("{head}\n[llm.openai.timeouts]\ntotal_ms = 0\n"),
            "skill-evolve.toml:9: [llm.openai] timeouts.total_ms must be at least 1",
        ),
        (
            format!("{head}timeouts = {{ connect_ms = 5, total_ms = 0 }}\n"),
            "skill-evolve.toml:7: [llm.openai] timeouts.total_ms must be at least 1",
        ),
        (
            "[llm]\nprovider = \"local\"\n\n[llm.local]\nmax_tokens = 0\n".to_owned(),
            "skill-evolve.toml:5: [llm.local] max_tokens must be at least 1, got 0",
        ),
    ];
    for (config, needle) in cases {
        std::fs::write(d.join("skill-evolve.toml"), &config).unwrap();
        let before = crate::support::snapshot(d);
        let out = crate::evolve::evolve_cmd(d).output().unwrap();
        assert_one_line_error(&out, needle);
        assert_eq!(crate::support::snapshot(d), before);
    }
    assert_eq!(fake.calls.load(std::sync::atomic::Ordering::SeqCst), 0);

    // The same keys in a run configuration's [llm.openai].
    let dir = crate::run::run_workspace(
        &crate::run::CONFIG.replace("model = \"m\"\n", "model = \"m\"\ntemperature = nan\n"),
    );
    let out = crate::support::run_config(dir.path(), &["--dry-run"]);
    assert_one_line_error(
        &out,
        "evolve.toml:31: [llm.openai] temperature must be a number",
    );
}
