//! `report.html`: every finished run writes one beside `report.md` (a chart
//! per gated candidate, the lineage, diffs, nothing fetched), `skill-evolve
//! report <run-dir>` rebuilds it byte for byte, and text from the run comes
//! out escaped.

use std::path::{Path, PathBuf};

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
    let agent = rule_agent();
    let fake = crate::fake_llm::start_loop();
    let dir = run_workspace_with(&config(&agent, &fake.base_url), 14);
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

/// The report as a browser sees it: headless Chromium parses the page and
/// every chart element is in its DOM. Skipped, with the reason printed,
/// where Chromium is not installed.
#[test]
#[expect(clippy::print_stderr, reason = "a skipped test says why")]
fn chromium_renders_every_chart() {
    let chromium = Path::new("/usr/bin/chromium");
    if !chromium.exists() {
        eprintln!("skipped: /usr/bin/chromium is not installed");
        return;
    }
    let (_dir, run) = finished_run("");
    let out = std::process::Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--no-first-run",
            "--dump-dom",
        ])
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
}
