//! Redaction quality and speed: recall on planted secrets of every shape and provider family,
//! in every place a transcript holds them; the false-positive rate on ordinary text that looks
//! like a secret; and throughput on a large mixed text, side by side with the former rules.
//!
//! Usage: `cargo run --release -p evolution-harvest --example redact_bench [-- --mb 16]
//! [--dump DIR] [--show-misses]` (or `cargo xtask bench redact`).
//!
//! Every corpus is generated deterministically from the code below (no file is read). A
//! planted secret counts as caught when its text no longer occurs in the redacted output; an
//! ordinary line counts as a false positive when redaction changes it at all. `--dump DIR`
//! writes every case as a file of its own (`DIR/secret/<family>-<n>.txt`,
//! `DIR/ordinary/<n>.txt`) so that another scanner can be measured on the same cases.
#![expect(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a bench prints its report and its usage"
)]

mod legacy;
mod ordinary;
mod secrets;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use evolution_harvest::redact::Redactor;
use serde_json::Value;

use crate::ordinary::{mixed_text, ordinary_lines};
use crate::secrets::{Case, Rng, secret_cases};

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("redact_bench: {e}");
            ExitCode::from(2)
        }
    }
}

struct Options {
    mb: f64,
    dump: Option<PathBuf>,
    show_misses: bool,
}

fn parse() -> Result<Options, String> {
    let mut options = Options {
        mb: 16.0,
        dump: None,
        show_misses: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--mb" => {
                let v = args.next().ok_or("--mb needs a number")?;
                options.mb = v
                    .parse()
                    .map_err(|_| format!("--mb needs a number, got {v:?}"))?;
                if !(options.mb > 0.0 && options.mb <= 1024.0) {
                    return Err("--mb must be in (0, 1024]".into());
                }
            }
            "--dump" => {
                options.dump = Some(PathBuf::from(args.next().ok_or("--dump needs a folder")?))
            }
            "--show-misses" => options.show_misses = true,
            other => {
                return Err(format!(
                    "unknown argument {other:?}\nusage: redact_bench [--mb SIZE] [--dump DIR] [--show-misses]"
                ));
            }
        }
    }
    Ok(options)
}

fn run() -> Result<(), String> {
    let options = parse()?;
    let mut rng = Rng(0x005E_C2E7_u64);
    let cases = secret_cases(&mut rng);
    let ordinary = ordinary_lines();
    if let Some(dir) = &options.dump {
        dump(dir, &cases, &ordinary)?;
    }

    // Recall, per family and overall.
    let mut per_family: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    let mut misses = Vec::new();
    for case in &cases {
        let out = match &case.json {
            Some(value) => {
                let mut value = value.clone();
                Redactor::default().redact_json(&mut value);
                value.to_string()
            }
            None => Redactor::default().redact(&case.text).into_owned(),
        };
        let caught = !out.contains(&case.secret);
        let entry = per_family.entry(case.family).or_insert((0, 0));
        entry.0 += usize::from(caught);
        entry.1 += 1;
        if !caught {
            misses.push((case.family, case.place, out));
        }
    }
    let mut report = String::new();
    let _ = writeln!(report, "recall per family (caught / planted):");
    let (mut caught, mut planted) = (0usize, 0usize);
    for (family, (c, n)) in &per_family {
        caught += c;
        planted += n;
        let _ = writeln!(
            report,
            "  {family:<22} {c:>4} / {n:<4} {:>6.1}%",
            100.0 * *c as f64 / *n as f64
        );
    }
    let _ = writeln!(
        report,
        "recall overall: {caught} / {planted} = {:.2}% ({} families)",
        100.0 * caught as f64 / planted as f64,
        per_family.len()
    );

    // False positives.
    let mut changed = Vec::new();
    for line in &ordinary {
        let out = Redactor::default().redact(line).into_owned();
        if out != *line {
            changed.push((line.clone(), out));
        }
    }
    let _ = writeln!(
        report,
        "false positives: {} / {} ordinary lines = {:.2}%",
        changed.len(),
        ordinary.len(),
        100.0 * changed.len() as f64 / ordinary.len() as f64
    );
    // The former rules on the same cases.
    let legacy_caught = cases
        .iter()
        .filter(|case| {
            let out = match &case.json {
                Some(value) => {
                    let mut value = value.clone();
                    legacy_json(&mut value);
                    value.to_string()
                }
                None => legacy::redact(&case.text),
            };
            !out.contains(&case.secret)
        })
        .count();
    let legacy_changed = ordinary
        .iter()
        .filter(|line| legacy::redact(line) != **line)
        .count();
    let _ = writeln!(
        report,
        "former rules on the same cases: recall {legacy_caught} / {planted} = {:.2}%, \
         false positives {legacy_changed} / {} = {:.2}%",
        100.0 * legacy_caught as f64 / planted as f64,
        ordinary.len(),
        100.0 * legacy_changed as f64 / ordinary.len() as f64
    );
    print!("{report}");
    if options.show_misses {
        for (family, place, out) in &misses {
            println!("  missed {family} in {place}: {}", shorten(out));
        }
    }
    for (line, out) in &changed {
        println!("  changed: {}  ->  {}", shorten(line), shorten(out));
    }

    // Throughput on a large mixed text, cut into messages as a transcript is.
    let messages = mixed_text(&mut rng, (options.mb * 1e6) as usize);
    let bytes: usize = messages.iter().map(String::len).sum();
    let mb = bytes as f64 / 1e6;
    let started = Instant::now();
    let mut redactor = Redactor::default();
    let mut kept = 0usize;
    for m in &messages {
        kept += redactor.redact(m).len();
    }
    let new_s = started.elapsed().as_secs_f64();
    let started = Instant::now();
    let mut kept_legacy = 0usize;
    for m in &messages {
        kept_legacy += legacy::redact(m).len();
    }
    let old_s = started.elapsed().as_secs_f64();
    println!(
        "throughput on {mb:.1} MB of mixed transcript text in {} messages:\n  \
         current rules: {:.1} MB/s ({} redactions, {kept} bytes out)\n  \
         former rules:  {:.1} MB/s ({kept_legacy} bytes out)",
        messages.len(),
        mb / new_s,
        redactor.total(),
        mb / old_s
    );
    Ok(())
}

/// What the former `redact_json` did: every string redacted on its own, keys kept.
fn legacy_json(value: &mut Value) {
    match value {
        Value::String(s) => *s = legacy::redact(s),
        Value::Array(items) => items.iter_mut().for_each(legacy_json),
        Value::Object(map) => map.values_mut().for_each(legacy_json),
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

fn shorten(text: &str) -> String {
    let flat = text.replace('\n', "\\n");
    match flat.char_indices().nth(160) {
        Some((cut, _)) => format!("{}…", flat.get(..cut).unwrap_or_default()),
        None => flat,
    }
}

fn dump(dir: &std::path::Path, cases: &[Case], ordinary: &[String]) -> Result<(), String> {
    let secret_dir = dir.join("secret");
    let ordinary_dir = dir.join("ordinary");
    for d in [&secret_dir, &ordinary_dir] {
        std::fs::create_dir_all(d).map_err(|e| format!("cannot create {}: {e}", d.display()))?;
    }
    for (i, case) in cases.iter().enumerate() {
        let text = case
            .json
            .as_ref()
            .map_or_else(|| case.text.clone(), Value::to_string);
        let path = secret_dir.join(format!("{}-{i}.txt", case.family));
        std::fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    for (i, line) in ordinary.iter().enumerate() {
        let path = ordinary_dir.join(format!("{i}.txt"));
        std::fs::write(&path, line).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    println!(
        "wrote {} secret and {} ordinary cases under {}",
        cases.len(),
        ordinary.len(),
        dir.display()
    );
    Ok(())
}
