//! Benchmark of `apply_patch_with_report`, side by side with SkillOpt's
//! Python engine on the same documents and edits, in one run.
//!
//! `cargo run --release -p evolution-patch --example patch_bench`
//!
//! Documents of 10 KB, 100 KB and 1 MB, each with 50 protected spans
//! (frontmatter, the slow-update region, the appendix region and 47 body
//! lines), receive 10, 100 and 1 000 edits (a deterministic mix of replace,
//! insert_after, append and delete, some aimed at protected text). The Rust
//! engine finds the protected ranges in one pass and keeps them exact before
//! every edit by rescanning the window the previous edit touched.
//! SkillOpt's `apply_patch_with_report(skill, {"edits": ...})` takes no
//! protected spans (it protects its two marker regions only), so it gets the
//! same document and edits without them. The Python column is skipped with a
//! message when python3 or the `skillopt` package is missing.
#![expect(clippy::print_stdout, clippy::print_stderr)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use evolution_patch::{
    APPENDIX_END, APPENDIX_HEADING, APPENDIX_START, SLOW_UPDATE_END, SLOW_UPDATE_HEADING,
    SLOW_UPDATE_START, apply_patch_with_report,
};
use evolution_types::Edit;

const SIZES: [(&str, usize); 3] = [
    ("10 KB", 10 * 1024),
    ("100 KB", 100 * 1024),
    ("1 MB", 1024 * 1024),
];
const EDIT_COUNTS: [usize; 3] = [10, 100, 1000];
const PROTECTED_SPANS: usize = 50;
/// Each measurement repeats until at least this much time has passed and
/// keeps the fastest run (the machine may be shared).
const MIN_MEASURE: Duration = Duration::from_millis(300);

const PY_DRIVER: &str = r#"
import json, sys, time
from skillopt.optimizer.skill import apply_patch_with_report
MIN_MEASURE = 0.3
out = {}
for name in json.load(open(sys.argv[1])):
    doc = open(f"{name}.md", encoding="utf-8", newline="").read()
    edits = json.load(open(f"{name}.json", encoding="utf-8"))
    runs, total, best = 0, 0.0, float("inf")
    while total < MIN_MEASURE or runs < 3:
        start = time.perf_counter()
        apply_patch_with_report(doc, {"edits": edits})
        took = time.perf_counter() - start
        total += took
        best = min(best, took)
        runs += 1
    out[name] = best
print(json.dumps(out))
"#;

/// A small deterministic generator (64-bit LCG), so both engines see the
/// same documents and edits on every run.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

const WORDS: &[&str] = &[
    "check",
    "the",
    "evidence",
    "before",
    "answering",
    "cite",
    "sources",
    "units",
    "verify",
    "question",
    "tool",
    "output",
    "carefully",
    "每个",
    "步骤",
    "检查",
    "node",
    "frame",
    "search",
];

struct Case {
    name: String,
    doc: String,
    spans: Vec<String>,
    edits: Vec<Edit>,
}

fn build_document(size: usize, rng: &mut Lcg) -> (String, Vec<String>) {
    let mut body_lines = Vec::new();
    let mut doc = String::from(
        "---\nname: bench-skill\ndescription: Generated benchmark skill.\n---\n# Bench skill\n\n",
    );
    let frontmatter = doc[..doc.find("# Bench").unwrap_or(0)].to_owned();
    let mut section = 0;
    while doc.len() < size.saturating_sub(400) {
        if body_lines.len() % 20 == 0 {
            section += 1;
            doc.push_str(&format!("\n## Section {section}\n"));
        }
        let mut line = format!("- Step {}:", body_lines.len());
        for _ in 0..(4 + rng.below(8)) {
            line.push(' ');
            line.push_str(WORDS[rng.below(WORDS.len())]);
        }
        line.push('.');
        doc.push_str(&line);
        doc.push('\n');
        body_lines.push(line);
    }
    let slow_update = format!(
        "{SLOW_UPDATE_START}\n{SLOW_UPDATE_HEADING}\nPrefer primary evidence.\n{SLOW_UPDATE_END}"
    );
    let appendix =
        format!("{APPENDIX_START}\n{APPENDIX_HEADING}\n- Re-read the question.\n{APPENDIX_END}");
    doc.push_str(&format!("\n{slow_update}\n\n{appendix}\n"));
    let mut spans = vec![frontmatter, slow_update, appendix];
    let mut chosen = std::collections::BTreeSet::new();
    while spans.len() < PROTECTED_SPANS && chosen.len() < body_lines.len() {
        let i = rng.below(body_lines.len());
        if chosen.insert(i) {
            spans.push(body_lines[i].clone());
        }
    }
    (doc, spans)
}

fn build_edits(count: usize, doc: &str, spans: &[String], rng: &mut Lcg) -> Vec<Edit> {
    let lines: Vec<&str> = doc.lines().filter(|l| l.starts_with("- Step")).collect();
    (0..count)
        .map(|i| {
            let target = if i % 10 == 9 {
                // Aim at protected text now and then.
                spans[3 + rng.below(spans.len() - 3)].clone()
            } else {
                lines[rng.below(lines.len())].to_owned()
            };
            match i % 4 {
                0 => Edit::replace(target, format!("- Step rewritten {i}: verify each claim.")),
                1 => Edit::insert_after(target, format!("- Inserted {i}: check the tool output.")),
                2 => Edit::append(format!("## Added rule {i}\n- Keep answers short.")),
                _ => Edit::delete(target),
            }
        })
        .collect()
}

fn cases() -> Vec<Case> {
    let mut rng = Lcg(0x5EED_2026);
    let mut out = Vec::new();
    for (label, size) in SIZES {
        let (doc, spans) = build_document(size, &mut rng);
        for count in EDIT_COUNTS {
            let edits = build_edits(count, &doc, &spans, &mut rng);
            let name = format!("{}_{count}", label.replace(' ', ""));
            out.push(Case {
                name,
                doc: doc.clone(),
                spans: spans.clone(),
                edits,
            });
        }
    }
    out
}

fn time_rust(case: &Case) -> (Duration, usize) {
    let spans: Vec<&str> = case.spans.iter().map(String::as_str).collect();
    let (mut runs, mut total, mut best, mut applied) = (0u32, Duration::ZERO, Duration::MAX, 0);
    while total < MIN_MEASURE || runs < 3 {
        let start = Instant::now();
        let (out, reports) = apply_patch_with_report(&case.doc, &case.edits, &spans);
        let took = start.elapsed();
        total += took;
        best = best.min(took);
        runs += 1;
        applied = reports.iter().filter(|r| r.status.is_applied()).count();
        std::hint::black_box(out);
    }
    (best, applied)
}

fn python() -> Option<String> {
    for candidate in ["python3", "python"] {
        let ok = Command::new(candidate)
            .args(["-c", "import skillopt.optimizer.skill"])
            .output()
            .is_ok_and(|o| o.status.success());
        if ok {
            return Some(candidate.to_owned());
        }
    }
    None
}

fn time_python(py: &str, dir: &Path, cases: &[Case]) -> Result<serde_json::Value, String> {
    std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    let names: Vec<&str> = cases.iter().map(|c| c.name.as_str()).collect();
    let write =
        |name: &str, text: &str| std::fs::write(dir.join(name), text).map_err(|e| e.to_string());
    for case in cases {
        write(&format!("{}.md", case.name), &case.doc)?;
        let edits = serde_json::to_string(&case.edits).map_err(|e| e.to_string())?;
        write(&format!("{}.json", case.name), &edits)?;
    }
    write(
        "cases.json",
        &serde_json::to_string(&names).map_err(|e| e.to_string())?,
    )?;
    write("driver.py", PY_DRIVER)?;
    let output = Command::new(py)
        .current_dir(dir)
        .args(["driver.py", "cases.json"])
        .output()
        .map_err(|e| e.to_string())?;
    if !output.status.success() {
        return Err(String::from_utf8_lossy(&output.stderr).into_owned());
    }
    serde_json::from_slice(&output.stdout).map_err(|e| e.to_string())
}

fn main() {
    let cases = cases();
    let py = python();
    let dir: PathBuf =
        std::env::temp_dir().join(format!("evolution-patch-bench-{}", std::process::id()));
    let py_times = match &py {
        Some(py) => match time_python(py, &dir, &cases) {
            Ok(times) => Some(times),
            Err(err) => {
                eprintln!("SkillOpt column skipped: the Python driver failed: {err}");
                None
            }
        },
        None => {
            eprintln!(
                "SkillOpt column skipped: python3 with the `skillopt` package not found (pip install skillopt)"
            );
            None
        }
    };
    let _ = std::fs::remove_dir_all(&dir);

    println!(
        "apply_patch_with_report: {PROTECTED_SPANS} protected spans, exact protected ranges before every edit \
         (SkillOpt: same documents and edits; its API takes no spans); best of repeated runs"
    );
    println!(
        "{:<8} {:>6} {:>8} {:>12} {:>12} {:>14} {:>14} {:>8}",
        "doc", "edits", "applied", "rust ms", "rust µs/edit", "rust edits/s", "py edits/s", "ratio"
    );
    let mut worst: Option<f64> = None;
    for case in &cases {
        let (time, applied) = time_rust(case);
        let n = case.edits.len() as f64;
        let rust_rate = n / time.as_secs_f64();
        let py_secs = py_times
            .as_ref()
            .and_then(|t| t.get(&case.name))
            .and_then(serde_json::Value::as_f64);
        let (py_col, ratio_col) = match py_secs {
            Some(secs) => {
                let py_rate = n / secs;
                let ratio = rust_rate / py_rate;
                worst = Some(worst.map_or(ratio, |w: f64| w.min(ratio)));
                (format!("{py_rate:.0}"), format!("{ratio:.1}×"))
            }
            None => ("-".to_owned(), "-".to_owned()),
        };
        println!(
            "{:<8} {:>6} {:>8} {:>12.3} {:>12.2} {:>14.0} {:>14} {:>8}",
            case.name.split('_').next().unwrap_or(""),
            case.edits.len(),
            applied,
            time.as_secs_f64() * 1e3,
            time.as_secs_f64() * 1e6 / n,
            rust_rate,
            py_col,
            ratio_col
        );
    }
    if let Some(worst) = worst {
        println!("smallest ratio (Rust / SkillOpt edits per second): {worst:.1}× (target ≥ 5×)");
    }
}
