//! Session readers on hostile stores: for each agent's format (and a folder of this project's
//! trajectory files, the `dir` source), `harvest` on a normal store and
//! on stores of the same size built to hurt it — sessions nesting deeper than any session
//! (`deep`), tool inputs with tens of thousands of keys (`wide`), arrays of millions of items
//! (`huge-array`), rows that are corrupt (`corrupt`: truncated lines, values that are not
//! JSON, OpenCode rows with a NULL folder, trajectory files cut short) and, for Cursor, a composer whose every header names
//! one large bubble (`amplified`) — with the time and peak memory of each, and their ratio to
//! the normal store's.
//!
//! Usage: `cargo run --release -p evolution-project --no-default-features --example
//! readers_bench [-- --mb 40] [--only FORMAT]` (or `cargo xtask bench readers [--mb 40]`).
//!
//! Each store holds four sessions, `--mb` megabytes together (default 40), generated into a
//! folder of the system's temporary directory and removed when measured. Each harvest runs in a
//! child process of its own, so its peak resident memory (`VmHWM`, Linux) is that harvest's
//! alone; it reads, redacts, judges and builds every trajectory, writing none.
#![expect(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a bench prints its report and its usage"
)]

use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufWriter, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

use evolution_project::harvest::{HarvestNote, HarvestOptions, HarvestSource, harvest};

/// Sessions per store.
const SESSIONS: usize = 4;
/// The formats measured: name on the command line, harvest source.
const FORMATS: [(&str, HarvestSource); 7] = [
    ("claude-code", HarvestSource::ClaudeCode),
    ("codex", HarvestSource::Codex),
    ("gemini", HarvestSource::Gemini),
    ("copilot", HarvestSource::Copilot),
    ("opencode", HarvestSource::OpenCode),
    ("cursor", HarvestSource::Cursor),
    ("dir", HarvestSource::Dir),
];

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Variant {
    Normal,
    Deep,
    Wide,
    HugeArray,
    Corrupt,
    Amplified,
}

impl Variant {
    fn name(self) -> &'static str {
        match self {
            Variant::Normal => "normal",
            Variant::Deep => "deep",
            Variant::Wide => "wide",
            Variant::HugeArray => "huge-array",
            Variant::Corrupt => "corrupt",
            Variant::Amplified => "amplified",
        }
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [flag, format, from] = args.as_slice()
        && flag == "--measure"
    {
        return measure_child(format, Path::new(from));
    }
    let mut mb = 40.0_f64;
    let mut only: Option<String> = None;
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        match (arg.as_str(), rest.next()) {
            ("--mb", Some(v)) => match v.parse() {
                Ok(v) if v > 0.0 => mb = v,
                _ => return usage(),
            },
            ("--only", Some(v)) => only = Some(v.clone()),
            _ => return usage(),
        }
    }
    match run(mb, only.as_deref()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("readers_bench: {e}");
            ExitCode::FAILURE
        }
    }
}

fn usage() -> ExitCode {
    eprintln!("usage: readers_bench [--mb MEGABYTES] [--only FORMAT]");
    ExitCode::from(2)
}

/// One measured harvest.
struct Measured {
    seconds: f64,
    peak_mb: f64,
    sessions: usize,
    skipped: usize,
}

fn run(mb: f64, only: Option<&str>) -> Result<(), String> {
    let bytes = (mb * 1_000_000.0) as usize;
    let session_bytes = bytes / SESSIONS;
    let me = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut report = String::new();
    let _ = writeln!(
        report,
        "{:<12} {:<11} {:>8} {:>9} {:>9} {:>8} {:>8} {:>7}",
        "format", "store", "MB", "seconds", "peak MB", "x time", "x memory", "skipped"
    );
    for (format, _) in FORMATS {
        if only.is_some_and(|o| o != format) {
            continue;
        }
        let mut variants = vec![
            Variant::Normal,
            Variant::Deep,
            Variant::Wide,
            Variant::HugeArray,
            Variant::Corrupt,
        ];
        if format == "cursor" {
            variants.push(Variant::Amplified);
        }
        let mut normal: Option<Measured> = None;
        for variant in variants {
            let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
            let from = build(format, variant, dir.path(), session_bytes)
                .map_err(|e| format!("{format} {}: {e}", variant.name()))?;
            let size = du(dir.path());
            let measured = measure(&me, format, &from)?;
            let (time_ratio, memory_ratio) = match &normal {
                Some(n) => (
                    format!("{:.2}", measured.seconds / n.seconds.max(1e-6)),
                    format!("{:.2}", measured.peak_mb / n.peak_mb.max(1e-6)),
                ),
                None => ("1".to_owned(), "1".to_owned()),
            };
            let line = format!(
                "{format:<12} {:<11} {:>8.1} {:>9.2} {:>9.1} {:>8} {:>8} {:>4}/{}",
                variant.name(),
                size as f64 / 1_000_000.0,
                measured.seconds,
                measured.peak_mb,
                time_ratio,
                memory_ratio,
                measured.skipped,
                measured.skipped + measured.sessions,
            );
            println!("{line}");
            let _ = writeln!(report, "{line}");
            if variant == Variant::Normal {
                normal = Some(measured);
            }
        }
    }
    println!("\n{report}");
    Ok(())
}

/// Bytes of the files under `dir`.
fn du(dir: &Path) -> u64 {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(Result::ok)
        .filter_map(|e| e.metadata().ok())
        .filter(std::fs::Metadata::is_file)
        .map(|m| m.len())
        .sum()
}

fn measure(me: &Path, format: &str, from: &Path) -> Result<Measured, String> {
    let out = Command::new(me)
        .args(["--measure", format])
        .arg(from)
        .output()
        .map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&out.stdout);
    let fields: Vec<f64> = text
        .split_whitespace()
        .filter_map(|f| f.parse().ok())
        .collect();
    match (out.status.success(), fields.as_slice()) {
        (true, [seconds, peak_mb, sessions, skipped]) => Ok(Measured {
            seconds: *seconds,
            peak_mb: *peak_mb,
            sessions: *sessions as usize,
            skipped: *skipped as usize,
        }),
        _ => Err(format!(
            "the {format} harvest of {} failed ({}): {}",
            from.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        )),
    }
}

/// The child: one harvest, then `seconds peak_mb sessions skipped` on one line.
fn measure_child(format: &str, from: &Path) -> ExitCode {
    let Some((_, source)) = FORMATS.iter().find(|(name, _)| *name == format) else {
        return usage();
    };
    let options = HarvestOptions {
        source: *source,
        from: Some(from.to_path_buf()),
        project: None,
        since: None,
        skill: None,
        out: None,
        tasks: None,
        min_sessions: 2,
        no_redact: false,
        config: None,
        recorded: false,
        judge_followups: false,
        variants: None,
    };
    let start = Instant::now();
    let mut skipped = 0usize;
    let result = harvest(&options, &mut |note| {
        if matches!(note, HarvestNote::Skipped(_)) {
            skipped += 1;
        }
    });
    let seconds = start.elapsed().as_secs_f64();
    match result {
        Ok(summary) => {
            println!(
                "{seconds:.3} {:.1} {} {skipped}",
                peak_mb(),
                summary.counts.sessions
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{e:#}");
            ExitCode::FAILURE
        }
    }
}

/// This process's peak resident memory in MB (`VmHWM`), 0 where `/proc` has none.
fn peak_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

// ---------------------------------------------------------------------------------------------
// Generating the stores
// ---------------------------------------------------------------------------------------------

/// About 1 kB of prose.
fn prose(n: usize) -> String {
    let words = [
        "the", "build", "fails", "when", "tests", "run", "in", "parallel", "so", "check", "the",
        "lock", "file", "and", "retry", "after", "cleaning", "cache", "of", "crates",
    ];
    let mut s = String::with_capacity(1100);
    let mut i = n;
    while s.len() < 1000 {
        s.push_str(words[i % words.len()]);
        s.push(' ');
        i = i.wrapping_mul(31).wrapping_add(7);
    }
    s
}

/// A tool's output, about 4 kB.
fn output(n: usize) -> String {
    (0..40)
        .map(|i| {
            format!(
                "test module_{n}::case_{i} ... ok (took {} ms)\n",
                (n * 7 + i) % 97
            )
            .repeat(2)
        })
        .collect()
}

/// The hostile value of `variant`, about `bytes` long (`None` for the variants that have none).
fn hostile(variant: Variant, bytes: usize) -> Option<String> {
    let mut s = String::with_capacity(bytes + 16);
    match variant {
        Variant::Deep => {
            s.push_str(&"[".repeat(bytes / 2));
            s.push_str(&"]".repeat(bytes / 2));
        }
        Variant::Wide => {
            s.push('{');
            let mut i = 0usize;
            while s.len() < bytes {
                if i > 0 {
                    s.push(',');
                }
                let _ = write!(s, "\"key_{i}\":{i}");
                i += 1;
            }
            s.push('}');
        }
        Variant::HugeArray => {
            s.push('[');
            while s.len() < bytes {
                s.push_str("0,");
            }
            s.push_str("0]");
        }
        Variant::Normal | Variant::Corrupt | Variant::Amplified => return None,
    }
    Some(s)
}

fn json(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

fn create(path: &Path) -> Result<BufWriter<File>, String> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| e.to_string())?;
    }
    File::create(path)
        .map(BufWriter::new)
        .map_err(|e| e.to_string())
}

/// Builds the store of `format` in `dir`; returns the path to harvest.
fn build(format: &str, variant: Variant, dir: &Path, size: usize) -> Result<PathBuf, String> {
    // A hostile session: normal exchanges for half its size, then the hostile value.
    let normal_part = if hostile(variant, 0).is_some() || variant == Variant::Amplified {
        size / 2
    } else {
        size
    };
    let bad = hostile(variant, size / 2);
    let io = |e: std::io::Error| e.to_string();
    match format {
        "claude-code" | "codex" => {
            let root = dir.join("sessions");
            for s in 0..SESSIONS {
                let mut w = create(&root.join(format!("p/session-{s}.jsonl")))?;
                let mut written = 0usize;
                let mut n = 0usize;
                while written < normal_part {
                    for line in jsonl_exchange(format, s, n) {
                        written += line.len() + 1;
                        writeln!(w, "{line}").map_err(io)?;
                    }
                    n += 1;
                }
                if let Some(bad) = &bad {
                    let line = jsonl_call(format, "bad", bad);
                    writeln!(w, "{line}").map_err(io)?;
                }
                if variant == Variant::Corrupt {
                    // A line cut short, and bytes that are not UTF-8.
                    let line = jsonl_exchange(format, s, n).remove(0);
                    w.write_all(&line.as_bytes()[..line.len() / 2])
                        .map_err(io)?;
                    w.write_all(b"\n\xff\xfe\n").map_err(io)?;
                }
                w.flush().map_err(io)?;
            }
            Ok(root)
        }
        "gemini" => {
            let root = dir.join("tmp");
            for s in 0..SESSIONS {
                let mut w = create(&root.join(format!("h{s}/chats/session-{s}.json")))?;
                let mut doc = format!(r#"{{"sessionId":"g{s}","messages":["#);
                let mut n = 0usize;
                while doc.len() < normal_part {
                    let _ = write!(
                        doc,
                        r#"{{"type":"user","content":{}}},{{"type":"gemini","content":{},"toolCalls":[{{"id":"c{n}","name":"run_shell_command","args":{{"command":"cargo test"}},"status":"success","result":[{{"functionResponse":{{"response":{{"output":{}}}}}}}]}}]}},"#,
                        json(&prose(n)),
                        json(&prose(n + 1)),
                        json(&output(n))
                    );
                    n += 1;
                }
                if let Some(bad) = &bad {
                    let _ = write!(
                        doc,
                        r#"{{"type":"gemini","content":"x","toolCalls":[{{"id":"bad","name":"x","args":{bad}}}]}},"#
                    );
                }
                doc.pop();
                doc.push_str("]}");
                if variant == Variant::Corrupt {
                    doc.truncate(doc.len() - 3);
                }
                w.write_all(doc.as_bytes()).map_err(io)?;
                w.flush().map_err(io)?;
            }
            Ok(root)
        }
        "copilot" => {
            let root = dir.join("User");
            for s in 0..SESSIONS {
                let storage = root.join(format!("workspaceStorage/w{s}"));
                let mut w = create(&storage.join(format!("chatSessions/s{s}.jsonl")))?;
                writeln!(
                    w,
                    r#"{{"kind":0,"v":{{"version":3,"sessionId":"s{s}","creationDate":1762074000000,"requests":[]}}}}"#
                )
                .map_err(io)?;
                let mut written = 0usize;
                let mut n = 0usize;
                while written < normal_part {
                    let line = format!(
                        r#"{{"kind":2,"k":["requests"],"v":[{{"message":{{"text":{}}},"timestamp":1762074000000,"response":[{{"value":{}}},{{"kind":"toolInvocationSerialized","toolId":"run_in_terminal","toolCallId":"c{n}","isComplete":true,"resultDetails":{{"input":"{{\"command\":\"cargo test\"}}","output":[{{"value":{}}}]}}}}]}}]}}"#,
                        json(&prose(n)),
                        json(&prose(n + 1)),
                        json(&output(n))
                    );
                    written += line.len() + 1;
                    writeln!(w, "{line}").map_err(io)?;
                    n += 1;
                }
                if variant == Variant::Deep {
                    // Each change one level below the last: no line is deep, the session is.
                    writeln!(w, r#"{{"kind":1,"k":["a"],"v":{{}}}}"#).map_err(io)?;
                    let mut path = String::from(r#""a""#);
                    let mut levels = 0usize;
                    while written < size && levels < 10_000 {
                        path.push_str(r#","a""#);
                        let line = format!(r#"{{"kind":1,"k":[{path}],"v":{{}}}}"#);
                        written += line.len() + 1;
                        writeln!(w, "{line}").map_err(io)?;
                        levels += 1;
                    }
                } else if let Some(bad) = &bad {
                    writeln!(
                        w,
                        r#"{{"kind":2,"k":["requests"],"v":[{{"message":{{"text":"x"}},"extra":{bad}}}]}}"#
                    )
                    .map_err(io)?;
                }
                if variant == Variant::Corrupt {
                    writeln!(w, r#"{{"kind":2,"k":["requests"],"v":[{{"mess"#).map_err(io)?;
                }
                w.flush().map_err(io)?;
            }
            Ok(root)
        }
        "dir" => {
            // A folder of trajectory files, each an array of trajectories; the hostile value
            // is one more element's field, and a corrupt file is cut short.
            let root = dir.join("trajectories");
            std::fs::create_dir_all(&root).map_err(io)?;
            for s in 0..SESSIONS {
                let mut doc = String::from("[");
                let mut n = 0usize;
                while doc.len() < normal_part {
                    let _ = write!(
                        doc,
                        r#"{{"id":"t{s}-{n}","task_description":{},"question":{},"fail_reason":"","predicted_answer":{},"reference_text":"ok","hard":1}},"#,
                        json(&prose(n)),
                        json(&prose(n + 1)),
                        json(&output(n))
                    );
                    n += 1;
                }
                if let Some(bad) = &bad {
                    let _ = write!(
                        doc,
                        r#"{{"id":"bad{s}","task_description":"x","question":"x","fail_reason":"","predicted_answer":"x","reference_text":"x","extra":{bad}}},"#
                    );
                }
                doc.pop();
                doc.push(']');
                if variant == Variant::Corrupt && s % 2 == 1 {
                    doc.truncate(doc.len() / 2);
                }
                std::fs::write(root.join(format!("t{s}.json")), doc).map_err(io)?;
            }
            Ok(root)
        }
        "opencode" => build_opencode(variant, dir, normal_part, bad.as_deref()),
        "cursor" => build_cursor(variant, dir, size, normal_part, bad.as_deref()),
        other => Err(format!("unknown format {other}")),
    }
}

/// One exchange of a JSON-lines transcript: the user's request, the agent's answer with a
/// tool call, the call's result.
fn jsonl_exchange(format: &str, s: usize, n: usize) -> Vec<String> {
    let ts = format!(
        "2026-03-0{}T10:{:02}:{:02}.000Z",
        s % 9 + 1,
        n / 60 % 60,
        n % 60
    );
    if format == "codex" {
        vec![
            format!(
                r#"{{"timestamp":"{ts}","type":"response_item","payload":{{"type":"message","role":"user","content":[{{"type":"input_text","text":{}}}]}}}}"#,
                json(&prose(n))
            ),
            format!(
                r#"{{"timestamp":"{ts}","type":"response_item","payload":{{"type":"message","role":"assistant","content":[{{"type":"output_text","text":{}}}]}}}}"#,
                json(&prose(n + 1))
            ),
            jsonl_call(format, &format!("c{n}"), r#"{"command":["cargo","test"]}"#),
            format!(
                r#"{{"timestamp":"{ts}","type":"response_item","payload":{{"type":"function_call_output","call_id":"c{n}","output":{}}}}}"#,
                json(&output(n))
            ),
        ]
    } else {
        vec![
            format!(
                r#"{{"type":"user","sessionId":"s{s}","cwd":"/w/app","timestamp":"{ts}","message":{{"role":"user","content":{}}}}}"#,
                json(&prose(n))
            ),
            format!(
                r#"{{"type":"assistant","sessionId":"s{s}","timestamp":"{ts}","message":{{"id":"m{n}","role":"assistant","content":[{{"type":"text","text":{}}},{{"type":"tool_use","id":"c{n}","name":"Bash","input":{{"command":"cargo test"}}}}]}}}}"#,
                json(&prose(n + 1))
            ),
            format!(
                r#"{{"type":"user","sessionId":"s{s}","timestamp":"{ts}","message":{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"c{n}","content":{}}}]}}}}"#,
                json(&output(n))
            ),
        ]
    }
}

/// A tool call whose input is `input` (raw JSON).
fn jsonl_call(format: &str, id: &str, input: &str) -> String {
    if format == "codex" {
        format!(
            r#"{{"type":"response_item","payload":{{"type":"custom_tool_call","call_id":"{id}","name":"shell","input":{input}}}}}"#
        )
    } else {
        format!(
            r#"{{"type":"assistant","message":{{"id":"m-{id}","role":"assistant","content":[{{"type":"tool_use","id":"{id}","name":"Bash","input":{input}}}]}}}}"#
        )
    }
}

fn sql(e: rusqlite::Error) -> String {
    e.to_string()
}

fn build_opencode(
    variant: Variant,
    dir: &Path,
    normal_part: usize,
    bad: Option<&str>,
) -> Result<PathBuf, String> {
    let path = dir.join("opencode.db");
    let mut db = rusqlite::Connection::open(&path).map_err(sql)?;
    db.execute_batch(
        "CREATE TABLE session (id TEXT PRIMARY KEY, parent_id TEXT, directory TEXT,
             time_created INTEGER, time_updated INTEGER);
         CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT, time_created INTEGER, data);
         CREATE TABLE part (id TEXT PRIMARY KEY, message_id TEXT, data);
         CREATE INDEX message_session ON message (session_id);
         CREATE INDEX part_message ON part (message_id);",
    )
    .map_err(sql)?;
    let tx = db.transaction().map_err(sql)?;
    for s in 0..SESSIONS {
        let id = format!("ses_{s}");
        let directory = (variant != Variant::Corrupt || s % 2 == 0).then_some("/w/app");
        tx.execute(
            "INSERT INTO session VALUES (?1, NULL, ?2, ?3, ?3)",
            rusqlite::params![id, directory, 1_762_074_000_000_i64 + s as i64],
        )
        .map_err(sql)?;
        let mut written = 0usize;
        let mut n = 0usize;
        let part = |message: &str, n: usize, data: &str| {
            tx.execute(
                "INSERT INTO part VALUES (?1, ?2, ?3)",
                rusqlite::params![format!("{message}-{n}"), message, data],
            )
        };
        while written < normal_part {
            for (role, text) in [("user", prose(n)), ("assistant", prose(n + 1))] {
                let message = format!("{id}-m{n}-{role}");
                let data = if variant == Variant::Corrupt && n % 10 == 9 {
                    "{\"role\":".to_owned()
                } else {
                    format!(r#"{{"role":"{role}"}}"#)
                };
                tx.execute(
                    "INSERT INTO message VALUES (?1, ?2, ?3, ?4)",
                    rusqlite::params![message, id, n as i64, data],
                )
                .map_err(sql)?;
                let text = format!(r#"{{"type":"text","text":{}}}"#, json(&text));
                written += text.len();
                part(&message, 0, &text).map_err(sql)?;
                if role == "assistant" {
                    let tool = format!(
                        r#"{{"type":"tool","tool":"bash","callID":"c{n}","state":{{"status":"completed","input":{{"command":"cargo test"}},"output":{}}}}}"#,
                        json(&output(n))
                    );
                    written += tool.len();
                    part(&message, 1, &tool).map_err(sql)?;
                }
            }
            n += 1;
        }
        if let Some(bad) = bad {
            let message = format!("{id}-bad");
            tx.execute(
                "INSERT INTO message VALUES (?1, ?2, ?3, '{\"role\":\"assistant\"}')",
                rusqlite::params![message, id, n as i64],
            )
            .map_err(sql)?;
            let tool = format!(
                r#"{{"type":"tool","tool":"bash","callID":"bad","state":{{"status":"completed","input":{bad}}}}}"#
            );
            part(&message, 0, &tool).map_err(sql)?;
        }
    }
    tx.commit().map_err(sql)?;
    Ok(path)
}

fn build_cursor(
    variant: Variant,
    dir: &Path,
    size: usize,
    normal_part: usize,
    bad: Option<&str>,
) -> Result<PathBuf, String> {
    let user = dir.join("User");
    let global = user.join("globalStorage");
    std::fs::create_dir_all(&global).map_err(|e| e.to_string())?;
    let mut db = rusqlite::Connection::open(global.join("state.vscdb")).map_err(sql)?;
    db.execute_batch("CREATE TABLE cursorDiskKV (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)")
        .map_err(sql)?;
    let tx = db.transaction().map_err(sql)?;
    let put = |key: String, value: String| {
        tx.execute(
            "INSERT INTO cursorDiskKV VALUES (?1, ?2)",
            rusqlite::params![key, value],
        )
    };
    for s in 0..SESSIONS {
        let composer = format!("comp-{s}");
        let mut headers = Vec::new();
        let mut written = 0usize;
        let mut n = 0usize;
        while written < normal_part {
            let user_bubble = format!(
                r#"{{"_v":3,"type":1,"text":{},"createdAt":"2026-03-10T09:00:01.000Z"}}"#,
                json(&prose(n))
            );
            let agent_bubble = format!(
                r#"{{"_v":3,"type":2,"text":{},"toolFormerData":{{"name":"run_terminal_cmd","toolCallId":"t{n}","status":"completed","rawArgs":"{{\"command\":\"cargo test\"}}","result":{}}}}}"#,
                json(&prose(n + 1)),
                json(&format!(
                    r#"{{"output":{},"exitCodeV2":0}}"#,
                    json(&output(n))
                ))
            );
            for (id, bubble, kind) in [
                (format!("u{n}"), user_bubble, 1),
                (format!("a{n}"), agent_bubble, 2),
            ] {
                written += bubble.len();
                let bubble = if variant == Variant::Corrupt && n % 10 == 9 {
                    "\u{fffd}not json".to_owned()
                } else {
                    bubble
                };
                put(format!("bubbleId:{composer}:{id}"), bubble).map_err(sql)?;
                headers.push(format!(r#"{{"bubbleId":"{id}","type":{kind}}}"#));
            }
            n += 1;
        }
        if let Some(bad) = bad {
            let bubble = format!(
                r#"{{"_v":3,"type":2,"text":"x","toolFormerData":{{"name":"x","toolCallId":"bad","status":"completed","rawArgs":{bad}}}}}"#
            );
            put(format!("bubbleId:{composer}:bad"), bubble).map_err(sql)?;
            headers.push(r#"{"bubbleId":"bad","type":2}"#.to_owned());
        }
        if variant == Variant::Amplified {
            // Headers that all name one bubble of a tenth of the session, filling the rest.
            let big = format!(
                r#"{{"_v":3,"type":2,"text":{}}}"#,
                json(&prose(1).repeat(size / 10_000))
            );
            put(format!("bubbleId:{composer}:big"), big).map_err(sql)?;
            let header = r#"{"bubbleId":"big","type":2}"#;
            let count = (size - normal_part).saturating_sub(size / 10) / (header.len() + 1);
            headers.extend(std::iter::repeat_n(header.to_owned(), count));
        }
        let data = format!(
            r#"{{"_v":10,"composerId":"{composer}","createdAt":1773133200000,"fullConversationHeadersOnly":[{}]}}"#,
            headers.join(",")
        );
        let data = if variant == Variant::Corrupt && s % 2 == 1 {
            data[..data.len() / 2].to_owned()
        } else {
            data
        };
        put(format!("composerData:{composer}"), data).map_err(sql)?;
    }

    tx.commit().map_err(sql)?;
    Ok(user)
}
