//! `report.html`: every finished run writes one beside `report.md` (a chart
//! per gated candidate, the lineage, diffs, nothing fetched), `skill-evolve
//! report <run-dir>` rebuilds it byte for byte, and text from the run comes
//! out escaped.

use std::path::{Path, PathBuf};

use crate::evolve_gated::{SKILL, agent_config, evolve, json_of, workspace};
use crate::fake_llm::{QA_RULE, start_evolve_gain};
use crate::run::{CONFIG, rule_agent, run_workspace_with};
use crate::support::{assert_one_line_error, skill_evolve};

/// Text no report may show raw.
const HOSTILE: &str =
    "<script>alert(1)</script>\"><img src=x onerror=alert(2)>\u{1b}[2J\u{202e}evil\u{0}end";

/// Two epochs, fourteen questions (train, gate, holdout), the calibrated gate
/// without e-LOND: the reference agent with the proposed rule wins every gate
/// question, so the first proposal is accepted; the holdout is scored before
/// and after.
fn config(agent: &Path, base_url: &str) -> String {
    CONFIG
        .replace(
            r#"["sh", "agent.sh"]"#,
            &format!("[{:?}]", agent.display().to_string()),
        )
        .replace("max_llm_calls = 10", "max_llm_calls = 500")
        .replace("train = 0.5", "train = 0.15")
        .replace("gate = 0.5", "gate = 0.6\nholdout = 0.25")
        .replace("ladder = [2, 4]", "ladder = [4, 8]\nfdr_alpha = \"off\"")
        .replace("http://127.0.0.1:9/v1", base_url)
}

/// A finished demo run in a fresh folder (its skill carrying `skill_extra`);
/// returns the folder and the run's folder.
fn finished_run(skill_extra: &str) -> (tempfile::TempDir, PathBuf) {
    finished_run_with(skill_extra, "calibrated")
}

/// [`finished_run`] with the gate's parameters `preset`.
fn finished_run_with(skill_extra: &str, preset: &str) -> (tempfile::TempDir, PathBuf) {
    let agent = rule_agent();
    let fake = crate::fake_llm::start_loop();
    let config = config(&agent, &fake.base_url)
        .replace("params = \"calibrated\"", &format!("params = \"{preset}\""));
    let dir = run_workspace_with(&config, 14);
    let d = dir.path();
    std::fs::write(
        d.join("skills/default-strategy.md"),
        format!("RULE other => no\n{skill_extra}"),
    )
    .unwrap();
    let out = skill_evolve(d)
        .env("SKILL_EVOLVE_TEST_KEY", "k")
        .args(["run", "--config", "evolve.toml"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run = d.join(".skill-evolve/runs/demo");
    assert!(
        stdout.contains("html report: .skill-evolve/runs/demo/report.html\n"),
        "{stdout}"
    );
    (dir, run)
}

fn report_json(run: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(run.join("report.json")).unwrap()).unwrap()
}

/// Runs `skill-evolve report <run>` and returns its stdout.
fn rebuild(cwd: &Path, run: &Path) -> String {
    let out = skill_evolve(cwd)
        .args(["report", &run.display().to_string()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn a_run_writes_a_self_contained_report_that_report_rebuilds_byte_for_byte() {
    let (dir, run) = finished_run("");
    let html = std::fs::read_to_string(run.join("report.html")).unwrap();
    let json = report_json(&run);
    let records = json["records"].as_array().unwrap();
    let gated = records
        .iter()
        .filter(|r| !r["validation"].is_null())
        .count();
    assert!(gated >= 1, "{json:#}");
    assert!(records.iter().any(|r| r["accepted"] == true), "{json:#}");
    // One evidence chart per gated candidate, each drawn from per-block points.
    assert_eq!(html.matches("<svg class=\"gate-chart\"").count(), gated);
    for r in records.iter().filter(|r| !r["validation"].is_null()) {
        let points = r["validation"]["trajectory"].as_array().unwrap();
        assert_eq!(
            points.len() as u64,
            r["validation"]["blocks_used"].as_u64().unwrap()
        );
    }
    // The lineage, every candidate linked to its section and diff.
    assert!(html.contains("<h2 id=\"lineage\">Version lineage</h2>"));
    for i in 0..records.len() {
        assert!(html.contains(&format!("<a href=\"#cand-{i}\">")), "{i}");
        assert!(html.contains(&format!("id=\"cand-{i}\"")), "{i}");
    }
    assert!(
        html.contains("<span class=\"add\">+RULE qa =&gt; yes</span>"),
        "{html}"
    );
    // Holdout before and after with their intervals; usage against the budget.
    assert!(html.contains("0.0% (0 of "), "{html}");
    assert!(html.contains("100.0% ("), "{html}");
    assert!(html.contains("95% interval"));
    assert!(
        html.contains("<strong>Budget:</strong> LLM calls "),
        "{html}"
    );
    assert!(html.contains(" of 500 · tokens "), "{html}");
    // Self-contained: nothing is fetched, nothing runs.
    for needle in [
        "http://", "https://", "<script", "<link", "src=", "@import", "url(",
    ] {
        assert!(!html.contains(needle), "{needle} in the report");
    }

    // Rebuilt from the run folder: the same bytes, from another folder too.
    let before = std::fs::read(run.join("report.html")).unwrap();
    let printed = rebuild(dir.path(), &run);
    assert_eq!(
        printed.trim(),
        run.join("report.html").display().to_string()
    );
    assert_eq!(std::fs::read(run.join("report.html")).unwrap(), before);
    std::fs::remove_file(run.join("report.html")).unwrap();
    rebuild(&std::env::temp_dir(), &run);
    assert_eq!(std::fs::read(run.join("report.html")).unwrap(), before);
}

#[test]
fn without_e_lond_the_chart_draws_the_provisional_accepts_line() {
    // `seed` parameters: a provisional accept needs E ≥ 3, a confirmed one E ≥ 20; the run
    // has `fdr_alpha = "off"`.
    let (_dir, run) = finished_run_with("", "seed");
    let html = std::fs::read_to_string(run.join("report.html")).unwrap();
    let gated = report_json(&run)["records"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| !r["validation"].is_null())
        .count();
    assert!(gated >= 1);
    assert!(
        html.contains("provisional accept when the questions run out: ln 3.00 = 1.099"),
        "{html}"
    );
    assert!(html.contains("accept: ln E ≥ ln 20.00 = 2.996"), "{html}");
}

#[test]
fn hostile_text_from_the_run_comes_out_escaped() {
    // The skill's own lines reach the diffs; the report's fields are edited
    // afterwards, as a damaged or forged report.json would be.
    let (dir, run) = finished_run(&format!("{HOSTILE}\n"));
    let mut json = report_json(&run);
    let record = &mut json["records"][0];
    record["candidate"] = serde_json::Value::from(format!("label {HOSTILE}"));
    if !record["validation"].is_null() {
        record["validation"]["observed"] = serde_json::json!({ HOSTILE: [false, true] });
    }
    std::fs::write(run.join("report.json"), json.to_string()).unwrap();
    rebuild(dir.path(), &run);
    let html = std::fs::read_to_string(run.join("report.html")).unwrap();
    for raw in ["<script", "<img", "\u{1b}", "\u{0}", "\u{202e}", "\"><img"] {
        assert!(!html.contains(raw), "{raw:?} came out raw");
    }
    assert!(html.contains("label &lt;script&gt;alert(1)&lt;/script&gt;&quot;&gt;&lt;img src=x onerror=alert(2)&gt;\\x1b[2J\\u{202e}evil\\x00end"), "{html}");
    // The hostile skill line is context of the accepted diff.
    assert!(
        html.contains("<span class=\"ctx\"> &lt;script&gt;")
            || html.contains("<span class=\"del\">-&lt;script&gt;")
            || html.contains("<span class=\"add\">+&lt;script&gt;"),
        "{html}"
    );
}

#[test]
fn report_refuses_a_folder_that_is_not_a_finished_run() {
    let dir = tempfile::tempdir().unwrap();
    let out = skill_evolve(dir.path())
        .args(["report", "nowhere"])
        .output()
        .unwrap();
    assert_one_line_error(&out, "no runs here");
    std::fs::create_dir_all(dir.path().join(".skill-evolve/runs/started")).unwrap();
    let out = skill_evolve(dir.path())
        .args(["report", "nowhere"])
        .output()
        .unwrap();
    assert_one_line_error(&out, "no run named \"nowhere\"");
    let out = skill_evolve(dir.path())
        .args(["report", "started"])
        .output()
        .unwrap();
    assert_one_line_error(&out, "is not a finished run's folder");
    std::fs::write(dir.path().join("report.json"), "{\"records\": 3}").unwrap();
    let out = skill_evolve(dir.path())
        .args(["report", "."])
        .output()
        .unwrap();
    assert_one_line_error(&out, "not a run's report");
    assert!(!dir.path().join("report.html").exists());
}

#[test]
fn report_takes_the_run_name_as_adopt_does() {
    let (dir, run) = finished_run("");
    let html = std::fs::read(run.join("report.html")).unwrap();
    std::fs::remove_file(run.join("report.html")).unwrap();
    let sub = dir.path().join("skills");
    let out = skill_evolve(&sub)
        .args(["report", "demo"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(std::fs::read(run.join("report.html")).unwrap(), html);
    let elsewhere = tempfile::tempdir().unwrap();
    let out = skill_evolve(elsewhere.path())
        .args(["report", "demo", "--dir", &dir.path().display().to_string()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
}

#[test]
fn open_without_a_display_prints_the_path() {
    let (dir, run) = finished_run("");
    let out = skill_evolve(dir.path())
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .args(["report", &run.display().to_string(), "--open"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.starts_with(&run.join("report.html").display().to_string()),
        "{text}"
    );
    assert!(text.contains("no display"), "{text}");
}

/// The run folder an `evolve --json` summary names, from the workspace `d`.
fn evolve_run_dir(d: &Path, summary: &serde_json::Value) -> PathBuf {
    let run = Path::new(summary["run_dir"].as_str().unwrap());
    if run.is_absolute() {
        run.to_path_buf()
    } else {
        d.join(run)
    }
}

#[test]
fn a_gated_evolve_writes_a_report_with_a_chart_per_gated_candidate() {
    let agent = rule_agent();
    let fake = start_evolve_gain();
    let dir = workspace(SKILL, 14, &agent_config(&agent, "0.85", ""));
    let d = dir.path();
    let args = [
        "--agent-config",
        "evolve.toml",
        "--slow-update",
        "--yes",
        "--json",
    ];
    let summary = json_of(&evolve(d, &fake.base_url, &args));
    let run = evolve_run_dir(d, &summary);
    let html = std::fs::read_to_string(run.join("report.html")).unwrap();
    // The candidate and the slow update's result were both gated: two charts,
    // each drawn from the per-block points the summary now keeps.
    let verdicts = summary["gate"]["verdicts"].as_array().unwrap();
    assert_eq!(verdicts.len(), 2, "{summary:#}");
    for v in verdicts {
        let validation = &v["validation"];
        assert_eq!(
            validation["trajectory"].as_array().unwrap().len() as u64,
            validation["blocks_used"].as_u64().unwrap(),
            "{v:#}"
        );
    }
    assert_eq!(html.matches("<svg class=\"gate-chart\"").count(), 2);
    assert!(html.contains("<polyline class=\"s-lne\""), "{html}");
    assert!(!html.contains("banner ungated"), "{html}");
    assert!(html.contains("fixed: 12"), "{html}");
    assert!(html.contains("<h2 id=\"rounds\">Reflection rounds</h2>"));
    assert!(html.contains("<h2 id=\"slow-update\">Slow update</h2>"));
    let added = format!(
        "<span class=\"add\">+{}</span>",
        QA_RULE.replace('>', "&gt;")
    );
    assert!(html.contains(&added), "{html}");
    // Nothing fetched (the proposer's address is shown as text only).
    for needle in ["href=\"http", "<script", "<link", "src=", "url("] {
        assert!(!html.contains(needle), "{needle} in the report");
    }
    // `report` rebuilds it byte for byte.
    let before = std::fs::read(run.join("report.html")).unwrap();
    std::fs::remove_file(run.join("report.html")).unwrap();
    let printed = rebuild(&std::env::temp_dir(), &run);
    assert_eq!(
        printed.trim(),
        run.join("report.html").display().to_string()
    );
    assert_eq!(std::fs::read(run.join("report.html")).unwrap(), before);
}

#[test]
fn an_ungated_evolve_report_says_so_and_escapes_hostile_text() {
    let fake = start_evolve_gain();
    let dir = workspace(SKILL, 1, "");
    let d = dir.path();
    let summary = json_of(&evolve(d, &fake.base_url, &["--json"]));
    let run = evolve_run_dir(d, &summary);
    let html = std::fs::read_to_string(run.join("report.html")).unwrap();
    assert!(
        html.contains("<p class=\"banner ungated\">Ungated: "),
        "{html}"
    );
    assert!(!html.contains("<svg"), "{html}");
    assert!(
        html.contains("Round 1 <span class=\"badge accepted\">kept</span>"),
        "{html}"
    );

    // Every text field a model or a file wrote, made hostile afterwards.
    let mut json = report_json(&run);
    json["skill"] = serde_json::Value::from(format!("skill {HOSTILE}"));
    json["stop_reason"] = serde_json::Value::from(format!("stop {HOSTILE}"));
    json["diff"] = serde_json::Value::from(format!("+added {HOSTILE}\n"));
    json["rounds"][0]["meta"]["summary"] = serde_json::Value::from(HOSTILE);
    json["rounds"][0]["selected"][0]["content"] = serde_json::Value::from(HOSTILE);
    json["gate"]["note"] = serde_json::Value::from(HOSTILE);
    std::fs::write(run.join("report.json"), json.to_string()).unwrap();
    rebuild(d, &run);
    let html = std::fs::read_to_string(run.join("report.html")).unwrap();
    for raw in ["<script", "<img", "\u{1b}", "\u{0}", "\u{202e}", "\"><img"] {
        assert!(!html.contains(raw), "{raw:?} came out raw");
    }
    let escaped = "&lt;script&gt;alert(1)&lt;/script&gt;&quot;&gt;&lt;img src=x \
                   onerror=alert(2)&gt;\\x1b[2J\\u{202e}evil\\x00end";
    assert!(
        html.contains(&format!("<title>Evolve report: skill {escaped}")),
        "{html}"
    );
    assert!(html.contains(&format!("stop {escaped}")), "{html}");
    assert!(
        html.contains(&format!("<span class=\"add\">+added {escaped}</span>")),
        "{html}"
    );
    assert!(html.matches(escaped).count() >= 6, "{html}");
}

/// Headless Chromium, as the tests run it: no sandbox, GPU, network
/// services or first-run dialogs, and a fresh profile in `profile`.
pub(crate) fn chromium_command(chromium: &Path, profile: &Path) -> std::process::Command {
    let mut cmd = std::process::Command::new(chromium);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
    ])
    .arg(format!("--user-data-dir={}", profile.display()));
    cmd
}

/// The report as a browser sees it: headless Chromium parses the page,
/// every chart element is in its DOM, and its screenshot is not blank. Skipped, with the reason printed,
/// where Chromium is not installed — unless `EVOLUTION_REQUIRE_CHROMIUM=1`
/// (set by `cargo xtask ci`), where a missing Chromium fails the test.
#[test]
#[expect(clippy::print_stderr, reason = "a skipped test says why")]
fn chromium_renders_every_chart() {
    let chromium = Path::new("/usr/bin/chromium");
    if !chromium.exists() {
        assert!(
            std::env::var_os("EVOLUTION_REQUIRE_CHROMIUM").is_none_or(|v| v != "1"),
            "/usr/bin/chromium is not installed and EVOLUTION_REQUIRE_CHROMIUM=1 requires it: \
             run `cargo xtask install-prereqs`"
        );
        eprintln!("skipped: /usr/bin/chromium is not installed");
        return;
    }
    let (_dir, run) = finished_run("");
    let profile = tempfile::tempdir().unwrap();
    let out = chromium_command(chromium, profile.path())
        .arg("--dump-dom")
        .arg(format!("file://{}", run.join("report.html").display()))
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let dom = String::from_utf8_lossy(&out.stdout);
    let gated = report_json(&run)["records"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| !r["validation"].is_null())
        .count();
    assert_eq!(
        dom.matches("<svg class=\"gate-chart\"").count(),
        gated,
        "{dom}"
    );
    assert!(dom.contains("<polyline class=\"s-lne\""), "{dom}");

    // A screenshot of the page is not blank: PNG compresses a uniform page to
    // almost nothing, so the report's picture must be far larger than that of
    // an empty page of the same size.
    let shot = |target: &str, name: &str| -> u64 {
        let path = profile.path().join(name);
        let out = chromium_command(chromium, profile.path())
            .arg("--window-size=1100,1400")
            .arg(format!("--screenshot={}", path.display()))
            .arg(target)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        let bytes = std::fs::read(&path).unwrap();
        assert!(
            bytes.starts_with(b"\x89PNG\r\n\x1a\n"),
            "{name} is not a PNG"
        );
        bytes.len() as u64
    };
    let blank = shot("about:blank", "blank.png");
    let report = shot(
        &format!("file://{}", run.join("report.html").display()),
        "report.png",
    );
    assert!(
        report > 10 * blank,
        "the report's screenshot ({report} bytes) is hardly larger than a blank page's ({blank} bytes)"
    );
}
