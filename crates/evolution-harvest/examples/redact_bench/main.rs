//! Redaction quality and speed: recall on planted secrets of every shape and provider family,
//! in every place a transcript holds them (and on held-out sets of other templates, each
//! measured as first written and never edited after, the fifth with look-alikes of its own); how many look-alikes (git hashes, UUIDs, lockfile hashes, base64
//! images, lines that only name a secret) are altered; and throughput on a large mixed text.
//! The first rules, and Yelp's detect-secrets when its command is installed, are measured on
//! the same cases in the same run.
//!
//! Usage: `cargo run --release -p evolution-harvest --example redact_bench [-- --mb 16]
//! [--dump DIR] [--show-misses]` (or `cargo xtask bench redact`).
//!
//! Every corpus is generated deterministically from the code below (no file is read). A
//! planted secret counts as caught when neither it nor any 8 characters of it remain in the
//! redacted output (a tail left behind is a miss); a look-alike counts as altered when
//! redaction changes it at all. `--dump DIR`
//! writes every case as a file of its own (`DIR/secret/<family>-<n>.txt`,
//! `DIR/ordinary/<n>.txt`) so that another scanner can be measured on the same cases.
#![expect(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a bench prints its report and its usage"
)]

mod detect_secrets;
mod fifth;
mod fifth_config;
mod fifth_flags;
mod fifth_gen;
mod fifth_keys;
mod fifth_lookalike;
mod fifth_prose;
mod fourth;
mod fourth_place;
mod fourth_shapes;
mod legacy;
mod lookalike;
mod ordinary;
mod secrets;
mod shapes;
mod unseen;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use evolution_harvest::redact::Redactor;
use serde_json::Value;

use crate::fifth::fifth;
use crate::fifth_lookalike::fifth_lookalikes;
use crate::fourth::fourth;
use crate::lookalike::{generated_lookalikes, shape_lookalikes};
use crate::ordinary::{mixed_text, ordinary_lines};
use crate::secrets::{Case, Rng, secret_cases, token_places};
use crate::shapes::{held_out, more_token_families, shape_cases};
use crate::unseen::{configs, unseen};

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
    let mut cases = secret_cases(&mut rng);
    for (family, make) in more_token_families() {
        for _ in 0..2 {
            let t = make(&mut rng);
            cases.extend(token_places(family, &t, &mut rng));
        }
    }
    cases.extend(shape_cases(&mut rng));
    let held = held_out(&mut Rng(0x0140_1D0F_u64));
    let second = unseen(&mut Rng(0x5EC0_17D5_u64));
    let third = configs(&mut Rng(0x7E1D_C0F6_u64));
    let fourth = fourth(&mut Rng(0x4F0A_7E57_u64));
    let fifth = fifth(&mut Rng(0x5F1F_7E55_u64));
    let fifth_alike = fifth_lookalikes(&mut Rng(0x5A1E_CA5E_u64));
    // A case whose secret is not in its text would count as caught whatever the rules do.
    if let Some(case) = fifth
        .iter()
        .find(|case| !case_text(case).contains(&case.secret))
    {
        return Err(format!(
            "fifth held-out case {} in {} does not hold its secret",
            case.family, case.place
        ));
    }
    let mut ordinary = ordinary_lines();
    ordinary.extend(shape_lookalikes());
    let generated = generated_lookalikes(&mut Rng(0x1001_CA5E_u64), 20);
    ordinary.extend(generated.iter().map(|(_, text)| text.clone()));
    if let Some(dir) = &options.dump {
        dump(dir, &cases, &ordinary)?;
    }

    // Recall, per family and overall.
    let mut per_family: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    let mut misses = Vec::new();
    for case in &cases {
        let out = redact_case(case);
        let caught = is_removed(&out, &case_text(case), &case.secret);
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
            "  {family:<24} {c:>4} / {n:<4} {:>6.1}%",
            100.0 * *c as f64 / *n as f64
        );
    }
    let caught_of = |list: &[Case]| {
        list.iter()
            .filter(|case| is_removed(&redact_case(case), &case_text(case), &case.secret))
            .count()
    };
    let held_caught = caught_of(&held);
    let second_caught = caught_of(&second);
    let third_caught = caught_of(&third);
    let fourth_caught = caught_of(&fourth);
    let fifth_caught = caught_of(&fifth);

    // Look-alikes altered.
    let mut changed = Vec::new();
    for line in &ordinary {
        let out = Redactor::default().redact(line).into_owned();
        if out != *line {
            changed.push((line.clone(), out));
        }
    }
    let mut fifth_changed = Vec::new();
    for line in &fifth_alike {
        let out = Redactor::default().redact(line).into_owned();
        if out != *line {
            fifth_changed.push((line.clone(), out));
        }
    }
    let _ = writeln!(
        report,
        "\n{:<34} {:>22} {:>20} {:>20} {:>20} {:>20} {:>20} {:>20} {:>22}",
        "",
        "recall: tuned cases",
        "held out, first",
        "held out, second",
        "held out, third",
        "held out, fourth",
        "held out, fifth",
        "look-alikes altered",
        "fifth look-alikes"
    );
    let _ = writeln!(
        report,
        "{:<34} {:>22} {:>20} {:>20} {:>20} {:>20} {:>20} {:>20} {:>22}",
        "this redactor",
        ratio(caught, planted),
        ratio(held_caught, held.len()),
        ratio(second_caught, second.len()),
        ratio(third_caught, third.len()),
        ratio(fourth_caught, fourth.len()),
        ratio(fifth_caught, fifth.len()),
        ratio(changed.len(), ordinary.len()),
        ratio(fifth_changed.len(), fifth_alike.len())
    );
    // The former rules on the same cases.
    let legacy_caught = |cases: &[Case]| {
        cases
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
                is_removed(&out, &case_text(case), &case.secret)
            })
            .count()
    };
    let legacy_changed = ordinary
        .iter()
        .filter(|line| legacy::redact(line) != **line)
        .count();
    let legacy_fifth_changed = fifth_alike
        .iter()
        .filter(|line| legacy::redact(line) != **line)
        .count();
    let _ = writeln!(
        report,
        "{:<34} {:>22} {:>20} {:>20} {:>20} {:>20} {:>20} {:>20} {:>22}",
        "first rules (kept for comparison)",
        ratio(legacy_caught(&cases), planted),
        ratio(legacy_caught(&held), held.len()),
        ratio(legacy_caught(&second), second.len()),
        ratio(legacy_caught(&third), third.len()),
        ratio(legacy_caught(&fourth), fourth.len()),
        ratio(legacy_caught(&fifth), fifth.len()),
        ratio(legacy_changed, ordinary.len()),
        ratio(legacy_fifth_changed, fifth_alike.len())
    );
    let _ = writeln!(
        report,
        "{}",
        detect_secrets_row(
            &[&cases, &held, &second, &third, &fourth, &fifth],
            &ordinary
        )
    );
    let _ = writeln!(
        report,
        "({} families; a secret is caught when neither it nor any {WINDOW} characters of it \
         remain; {} look-alikes: {} written lines and {} generated ones)",
        per_family.len(),
        ordinary.len(),
        ordinary.len() - generated.len(),
        generated.len()
    );
    let _ = writeln!(
        report,
        "(fifth held-out set: {} cases, {} look-alikes of its own)",
        fifth.len(),
        fifth_alike.len()
    );
    print!("{report}");
    if options.show_misses {
        for (family, place, out) in &misses {
            println!("  missed {family} in {place}: {}", shorten(out));
        }
        let sets = [
            ("first held-out", &held),
            ("second held-out", &second),
            ("third held-out", &third),
            ("fourth held-out", &fourth),
            ("fifth held-out", &fifth),
        ];
        for (set, list) in sets {
            for case in list.iter() {
                let out = redact_case(case);
                if !is_removed(&out, &case_text(case), &case.secret) {
                    println!(
                        "  missed ({set}) {} in {}: {}",
                        case.family,
                        case.place,
                        shorten(&out)
                    );
                }
            }
        }
    }
    for (line, out) in &changed {
        println!("  changed: {}  ->  {}", shorten(line), shorten(out));
    }
    for (line, out) in &fifth_changed {
        println!("  changed (fifth): {}  ->  {}", shorten(line), shorten(out));
    }

    // Throughput on a large mixed text, cut into messages as a transcript is.
    let messages = mixed_text(&mut rng, (options.mb * 1e6) as usize);
    let bytes: usize = messages.iter().map(String::len).sum();
    let mb = bytes as f64 / 1e6;
    // Each pass is timed three times and the fastest kept: the machine may be shared.
    let best_of = |pass: &mut dyn FnMut() -> usize| {
        let mut best = f64::INFINITY;
        let mut out = 0usize;
        for _ in 0..3 {
            let started = Instant::now();
            out = pass();
            best = best.min(started.elapsed().as_secs_f64());
        }
        (best, out)
    };
    let mut redactions = 0usize;
    let (new_s, kept) = best_of(&mut || {
        let mut redactor = Redactor::default();
        let kept = messages.iter().map(|m| redactor.redact(m).len()).sum();
        redactions = redactor.total();
        kept
    });
    let (old_s, kept_legacy) =
        best_of(&mut || messages.iter().map(|m| legacy::redact(m).len()).sum());
    println!(
        "throughput on {mb:.1} MB of mixed transcript text in {} messages (best of 3):\n  \
         current rules: {:.1} MB/s ({} redactions, {kept} bytes out)\n  \
         former rules:  {:.1} MB/s ({kept_legacy} bytes out)",
        messages.len(),
        mb / new_s,
        redactions,
        mb / old_s
    );
    Ok(())
}

/// The shortest part of a secret whose survival counts as a tail left behind.
const WINDOW: usize = 8;

/// True when no part of `secret` of [`WINDOW`] characters (or the whole of a shorter one)
/// is left in `out` beyond what the text around the secret (`text`) holds of it.
fn is_removed(out: &str, text: &str, secret: &str) -> bool {
    let chars: Vec<char> = secret.chars().collect();
    if chars.len() <= WINDOW {
        return !out.contains(secret);
    }
    let around = text.replace(secret, " ");
    chars.windows(WINDOW).all(|w| {
        let part: String = w.iter().collect();
        out.matches(&part).count() <= around.matches(&part).count()
    })
}

fn redact_case(case: &Case) -> String {
    match &case.json {
        Some(value) => {
            let mut value = value.clone();
            Redactor::default().redact_json(&mut value);
            value.to_string()
        }
        None => Redactor::default().redact(&case.text).into_owned(),
    }
}

fn case_text(case: &Case) -> String {
    case.json
        .as_ref()
        .map_or_else(|| case.text.clone(), Value::to_string)
}

fn ratio(n: usize, of: usize) -> String {
    format!("{n} / {of} = {:.2}%", 100.0 * n as f64 / of.max(1) as f64)
}

/// detect-secrets' row of the table, or why there is none.
fn detect_secrets_row(sets: &[&[Case]], ordinary: &[String]) -> String {
    if detect_secrets::version().is_none() {
        return "detect-secrets: not installed (`pip install detect-secrets` adds it to this table)"
            .to_owned();
    }
    let mut texts: Vec<String> = sets.iter().flat_map(|s| s.iter()).map(case_text).collect();
    let cases_len = texts.len();
    texts.extend(ordinary.iter().cloned());
    let scan = match detect_secrets::scan(&texts) {
        Ok(scan) => scan,
        Err(e) => return format!("detect-secrets: {e}"),
    };
    let mut cells = Vec::new();
    let mut from = 0usize;
    for set in sets {
        let caught = set
            .iter()
            .enumerate()
            .filter(|(i, case)| {
                let index = from + i;
                texts
                    .get(index)
                    .is_some_and(|text| scan.caught(index, text, &case.secret))
            })
            .count();
        cells.push(ratio(caught, set.len()));
        from += set.len();
    }
    let flagged = (0..ordinary.len())
        .filter(|i| scan.flagged(cases_len + i))
        .count();
    format!(
        "{:<34} {:>22} {:>20} {:>20} {:>20} {:>20} {:>20} {:>20}\n  (detect-secrets {}: {} files scanned in {:.1} s)",
        "detect-secrets (lines flagged)",
        cells.first().cloned().unwrap_or_default(),
        cells.get(1).cloned().unwrap_or_default(),
        cells.get(2).cloned().unwrap_or_default(),
        cells.get(3).cloned().unwrap_or_default(),
        cells.get(4).cloned().unwrap_or_default(),
        cells.get(5).cloned().unwrap_or_default(),
        ratio(flagged, ordinary.len()),
        scan.version,
        texts.len(),
        scan.seconds
    )
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
        let text = case_text(case);
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
