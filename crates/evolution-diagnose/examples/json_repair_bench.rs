//! JSON extraction side by side: this crate, the `jsonrepair` 0.1 crate and
//! Python's `json_repair` package, on a file of cases. Reports cases passed
//! and cases per second, measured in one run.
//!
//! Usage: `cargo run --release -p evolution-diagnose --example json_repair_bench [-- CASES.json]`
//! (or `cargo xtask bench json [CASES.json]`).
//!
//! `CASES.json` is a JSON array of `{"input": "<reply text>", "expect": {...}}`
//! objects (an optional `"name"` is ignored); a case passes when the reply
//! text reads as exactly the expected object. Without an argument the bench
//! runs on this crate's own corpus, `tests/data/malformed_llm_outputs.json`.
//! To compare on another project's cases (for example the object cases of
//! Python json_repair's test suite, exported in that shape), pass their path:
//! they are not shipped with this repository.
//!
//! The Python column needs `python3` with `json_repair` (`pip install
//! json_repair`); without it the column is skipped with a message.
#![expect(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a bench prints its report and its warnings"
)]

use std::io::Write;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use evolution_diagnose::json::extract_json_from_response;
use serde_json::Value;

/// The corpus used when no path is given: this crate's own cases.
const OWN_CORPUS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/malformed_llm_outputs.json"
);
const BUDGET: Duration = Duration::from_secs(2);

/// Python side: same cases, same rule (the result must equal the expected
/// object), timed over the same budget.
const PYTHON: &str = r#"
import json, sys, time
try:
    import json_repair
except ImportError:
    print(json.dumps({"missing": True})); sys.exit(0)
cases = json.load(sys.stdin)
def run(text):
    try:
        return json_repair.loads(text)
    except Exception:
        return None
passed = sum(1 for c in cases if run(c["input"]) == c["expect"])
n = 0; start = time.perf_counter()
while time.perf_counter() - start < float(sys.argv[1]):
    for c in cases:
        run(c["input"])
    n += len(cases)
elapsed = time.perf_counter() - start
try:
    from importlib.metadata import version
    v = version("json_repair")
except Exception:
    v = "?"
print(json.dumps({"passed": passed, "rate": n / elapsed, "version": v}))
"#;

fn jsonrepair_crate(text: &str) -> Option<Value> {
    let repaired = catch_unwind(AssertUnwindSafe(|| {
        jsonrepair::repair_to_string(text, &jsonrepair::Options::default())
    }));
    match repaired {
        Ok(Ok(json)) => serde_json::from_str(&json).ok(),
        _ => None,
    }
}

fn measure(cases: &[(String, Value)], f: &dyn Fn(&str) -> Option<Value>) -> (usize, f64) {
    let passed = cases
        .iter()
        .filter(|(input, expect)| f(input).as_ref() == Some(expect))
        .count();
    let start = Instant::now();
    let mut n = 0usize;
    while start.elapsed() < BUDGET {
        for (input, _) in cases {
            std::hint::black_box(f(std::hint::black_box(input)));
        }
        n += cases.len();
    }
    (passed, n as f64 / start.elapsed().as_secs_f64())
}

fn python(cases_json: &str) -> Result<Value, String> {
    let mut child = Command::new("python3")
        .arg("-c")
        .arg(PYTHON)
        .arg(BUDGET.as_secs_f64().to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("python3 not runnable: {e}"))?;
    child
        .stdin
        .take()
        .ok_or("no stdin")?
        .write_all(cases_json.as_bytes())
        .map_err(|e| e.to_string())?;
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    serde_json::from_slice(&out.stdout).map_err(|e| format!("bad python output: {e}"))
}

fn main() -> std::process::ExitCode {
    let path = std::env::args_os()
        .nth(1)
        .map_or_else(|| OWN_CORPUS.into(), std::path::PathBuf::from);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) => {
            eprintln!(
                "json_repair_bench: cannot read {}: {e}\nusage: json_repair_bench [CASES.json]",
                path.display()
            );
            return std::process::ExitCode::from(2);
        }
    };
    let raw: Vec<Value> = match serde_json::from_str(&text) {
        Ok(raw) => raw,
        Err(e) => {
            eprintln!(
                "json_repair_bench: {} is not a JSON array of {{\"input\", \"expect\"}} cases: {e}",
                path.display()
            );
            return std::process::ExitCode::from(2);
        }
    };
    let cases: Vec<(String, Value)> = raw
        .iter()
        .map(|c| {
            (
                c["input"].as_str().unwrap_or_default().to_owned(),
                c["expect"].clone(),
            )
        })
        .collect();
    println!(
        "{} object cases from {}, {:?} per column\n",
        cases.len(),
        path.display(),
        BUDGET
    );
    println!(
        "{:<38} {:>8} {:>14} {:>10}",
        "implementation", "passed", "cases/s", "vs python"
    );

    // Silence the panic messages of the jsonrepair crate (caught per case).
    std::panic::set_hook(Box::new(|_| {}));
    let ours = measure(&cases, &|t| {
        extract_json_from_response(t).ok().map(Value::Object)
    });
    let theirs = measure(&cases, &jsonrepair_crate);
    let panics = cases
        .iter()
        .filter(|(t, _)| {
            catch_unwind(|| jsonrepair::repair_to_string(t, &jsonrepair::Options::default()))
                .is_err()
        })
        .count();
    let _ = std::panic::take_hook();

    let py = python(&text);
    let py_rate = match &py {
        Ok(v) if v.get("missing").is_none() => v["rate"].as_f64(),
        _ => None,
    };
    let ratio = |rate: f64| py_rate.map_or("-".to_owned(), |p| format!("{:.1}x", rate / p));
    println!(
        "{:<38} {:>8} {:>14.0} {:>10}",
        "evolution-diagnose (extract_json)",
        ours.0,
        ours.1,
        ratio(ours.1)
    );
    println!(
        "{:<38} {:>8} {:>14.0} {:>10}",
        format!("jsonrepair 0.1 crate ({panics} panics)"),
        theirs.0,
        theirs.1,
        ratio(theirs.1)
    );
    match py {
        Ok(v) if v.get("missing").is_none() => println!(
            "{:<38} {:>8} {:>14.0} {:>10}",
            format!(
                "python json_repair {}",
                v["version"].as_str().unwrap_or("?")
            ),
            v["passed"].as_u64().unwrap_or(0),
            v["rate"].as_f64().unwrap_or(0.0),
            "1.0x"
        ),
        Ok(_) => println!("python json_repair: skipped (pip install json_repair)"),
        Err(e) => println!("python json_repair: skipped ({e})"),
    }
    std::process::ExitCode::SUCCESS
}
