//! Harvest throughput: synthetic Claude Code sessions read, redacted and judged by this crate,
//! side by side with a plain `jq -c .` pass over the same files, at a quarter, half and all of
//! the generated size, with the peak memory of each pass.
//!
//! Usage: `cargo run --release -p evolution-harvest --example harvest_bench [-- --gb 0.1]
//! [--dir DIR] [--keep]` (or `cargo xtask bench harvest [--gb 1]`).
//!
//! The sessions are generated deterministically (the same `--gb` gives the same bytes) into
//! `DIR` (default: a folder in the system's temporary directory, removed at the end unless
//! `--keep`): user and assistant turns, assistant messages split over several lines,
//! `tool_use`/`tool_result` pairs with some errors and some outputs of tens of kilobytes,
//! secrets of several kinds for the redactor to find, interruptions, `progress` and `system`
//! records, and a subagent side file in one session of ten. A session averages about 100 kB,
//! so `--gb 1` is about 10 000 sessions.
//!
//! Each measured pass runs in a child process of its own, so its peak resident memory
//! (`VmHWM`) is that pass's alone; the files are read once before the first pass so that every
//! pass reads from the page cache. The library pass does what `skill-evolve harvest` does per
//! session without writing: stream the lines, parse and redact them, judge the session and
//! build its trajectory object, serialized to nowhere. A flat "s per MB" column means linear
//! time; a flat peak memory means memory does not grow with the number of sessions.
#![expect(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a bench prints its report and its usage"
)]

use std::fmt::Write as _;
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::Instant;

use evolution_harvest::claude_code::ClaudeCodeReader;
use evolution_harvest::session::TextPolicy;
use evolution_harvest::signals::{HarvestRules, judge};
use evolution_harvest::trajectory::to_trajectory;

const MB: f64 = 1_000_000.0;
/// The middle of the range a session's main file is drawn from, in bytes: with the overshoot
/// of its last exchange and the side files, sessions average about 100 kB.
const SESSION_BYTES: u64 = 85_000;
/// Files per `jq` invocation (keeps the command line short).
const JQ_BATCH: usize = 500;
/// The fractions of the generated sessions measured.
const FRACTIONS: [(f64, &str); 3] = [(0.25, "1/4"), (0.5, "1/2"), (1.0, "1")];

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [flag, dir, count] = args.as_slice()
        && flag == "--measure"
    {
        return match measure_child(Path::new(dir), count) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("harvest_bench: {e}");
                ExitCode::FAILURE
            }
        };
    }
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("harvest_bench: {e}");
            ExitCode::from(2)
        }
    }
}

struct Options {
    gb: f64,
    dir: PathBuf,
    keep: bool,
}

fn parse(args: &[String]) -> Result<Options, String> {
    let mut options = Options {
        gb: 0.1,
        dir: std::env::temp_dir().join("evolution-harvest-bench"),
        keep: false,
    };
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--gb" => {
                let value = it.next().ok_or("--gb needs a number")?;
                options.gb = value
                    .parse()
                    .map_err(|_| format!("--gb needs a number, got {value:?}"))?;
                if !(options.gb > 0.0 && options.gb <= 64.0) {
                    return Err(format!("--gb must be in (0, 64], got {}", options.gb));
                }
            }
            "--dir" => options.dir = PathBuf::from(it.next().ok_or("--dir needs a folder")?),
            "--keep" => options.keep = true,
            other => {
                return Err(format!(
                    "unknown argument {other:?}\nusage: harvest_bench [--gb SIZE] [--dir DIR] [--keep]"
                ));
            }
        }
    }
    Ok(options)
}

fn run(args: &[String]) -> Result<(), String> {
    let options = parse(args)?;
    let target = (options.gb * 1e9) as u64;
    if options.dir.exists() {
        std::fs::remove_dir_all(&options.dir)
            .map_err(|e| format!("cannot clear {}: {e}", options.dir.display()))?;
    }
    std::fs::create_dir_all(&options.dir)
        .map_err(|e| format!("cannot create {}: {e}", options.dir.display()))?;
    let started = Instant::now();
    let sessions = generate(&options.dir, target)?;
    let total: u64 = sessions.iter().map(|s| s.bytes).sum();
    println!(
        "generated {} sessions, {:.1} MB, in {} ({:.1} s)",
        sessions.len(),
        total as f64 / MB,
        options.dir.display(),
        started.elapsed().as_secs_f64()
    );
    // Warm the page cache, so the first pass does not pay for the disk alone.
    let mut sink = Vec::new();
    for session in &sessions {
        for path in session.files() {
            sink.clear();
            std::fs::File::open(path)
                .and_then(|mut f| f.read_to_end(&mut sink))
                .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        }
    }
    let jq = jq_version();
    if jq.is_none() {
        eprintln!(
            "harvest_bench: `jq` not found, the jq column is skipped (cargo xtask install-prereqs installs it)"
        );
    }
    let mut rows = Vec::new();
    for (fraction, label) in FRACTIONS {
        let count = ((sessions.len() as f64 * fraction).ceil() as usize).clamp(1, sessions.len());
        let part = sessions.get(..count).unwrap_or(sessions.as_slice());
        let bytes: u64 = part.iter().map(|s| s.bytes).sum();
        let library = measure_library(&options.dir, count)?;
        let jq_seconds = match &jq {
            Some(_) => Some(measure_jq(part)?),
            None => None,
        };
        rows.push(Row {
            label,
            sessions: count,
            bytes,
            library,
            jq_seconds,
        });
    }
    print_table(&rows, jq.as_deref());
    if !options.keep {
        std::fs::remove_dir_all(&options.dir)
            .map_err(|e| format!("cannot remove {}: {e}", options.dir.display()))?;
    }
    Ok(())
}

/// One generated session: its main file, its side file if any, and their size together.
struct SessionFile {
    main: PathBuf,
    side: Option<(String, PathBuf)>,
    bytes: u64,
}

impl SessionFile {
    fn files(&self) -> impl Iterator<Item = &Path> {
        std::iter::once(self.main.as_path()).chain(self.side.as_ref().map(|(_, p)| p.as_path()))
    }
}

/// The sessions of `dir` in generation order (the same order the parent generated them).
fn list_sessions(dir: &Path) -> Result<Vec<SessionFile>, String> {
    let mut mains: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("cannot list {}: {e}", dir.display()))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    mains.sort();
    let mut out = Vec::with_capacity(mains.len());
    for main in mains {
        let stem = main
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let side_path = dir.join(&stem).join("subagents").join("agent-a1.jsonl");
        let side = side_path
            .is_file()
            .then(|| ("agent-a1".to_owned(), side_path));
        let bytes = file_len(&main) + side.as_ref().map_or(0, |(_, p)| file_len(p));
        out.push(SessionFile { main, side, bytes });
    }
    Ok(out)
}

fn file_len(path: &Path) -> u64 {
    std::fs::metadata(path).map_or(0, |m| m.len())
}

/// What one library pass found and how long it took.
struct LibraryPass {
    seconds: f64,
    peak_rss_kb: u64,
    turns: u64,
    tool_calls: u64,
    tool_errors: u64,
    redactions: u64,
    failed: u64,
}

struct Row {
    label: &'static str,
    sessions: usize,
    bytes: u64,
    library: LibraryPass,
    jq_seconds: Option<f64>,
}

/// Runs the library pass over the first `count` sessions of `dir` in a child process.
fn measure_library(dir: &Path, count: usize) -> Result<LibraryPass, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
    let out = Command::new(exe)
        .arg("--measure")
        .arg(dir)
        .arg(count.to_string())
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot start the measuring pass: {e}"))?;
    if !out.status.success() {
        return Err(format!("the measuring pass failed ({})", out.status));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let v: Vec<f64> = text
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    let [seconds, peak, turns, calls, errors, redactions, failed] = v.as_slice() else {
        return Err(format!("the measuring pass printed {text:?}"));
    };
    Ok(LibraryPass {
        seconds: *seconds,
        peak_rss_kb: *peak as u64,
        turns: *turns as u64,
        tool_calls: *calls as u64,
        tool_errors: *errors as u64,
        redactions: *redactions as u64,
        failed: *failed as u64,
    })
}

/// The child's side of [`measure_library`]: reads, redacts and judges `count` sessions and
/// prints `seconds peak_rss_kb turns tool_calls tool_errors redactions failed`.
fn measure_child(dir: &Path, count: &str) -> Result<(), String> {
    let count: usize = count.parse().map_err(|_| format!("bad count {count:?}"))?;
    let sessions = list_sessions(dir)?;
    let sessions = sessions.get(..count.min(sessions.len())).unwrap_or(&[]);
    let rules = HarvestRules::default();
    let (mut turns, mut calls, mut errors, mut redactions, mut failed) =
        (0u64, 0u64, 0u64, 0u64, 0u64);
    let mut out = std::io::sink();
    let mut buffer = Vec::new();
    let started = Instant::now();
    for session in sessions {
        let id = session
            .main
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut reader = ClaudeCodeReader::new(&id, TextPolicy::default());
        read_lines(&session.main, &mut buffer, |n, line| {
            reader.push_line(n, line).is_ok()
        })?;
        if let Some((agent, path)) = &session.side {
            reader.start_side_file(agent);
            read_lines(path, &mut buffer, |n, line| {
                reader.push_line(n, line).is_ok()
            })?;
        }
        let (session, policy) = reader.finish();
        let verdict = judge(&session, &rules);
        let trajectory = to_trajectory(&session, &verdict);
        serde_json::to_writer(&mut out, &trajectory).map_err(|e| e.to_string())?;
        turns += session.turns.len() as u64;
        calls += session.tool_calls.len() as u64;
        errors += session.tool_errors() as u64;
        redactions += policy.redactions() as u64;
        failed += u64::from(!verdict.passed);
    }
    let seconds = started.elapsed().as_secs_f64();
    println!(
        "{seconds} {} {turns} {calls} {errors} {redactions} {failed}",
        peak_rss_kb()
    );
    Ok(())
}

/// Streams `path` line by line as the command does; stops at the first line `on_line` refuses.
fn read_lines(
    path: &Path,
    buffer: &mut Vec<u8>,
    mut on_line: impl FnMut(usize, &str) -> bool,
) -> Result<(), String> {
    let file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut reader = BufReader::with_capacity(1 << 16, file);
    let mut line_no = 0usize;
    loop {
        buffer.clear();
        let read = reader
            .read_until(b'\n', buffer)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        if read == 0 {
            return Ok(());
        }
        line_no += 1;
        let line = std::str::from_utf8(buffer.as_slice())
            .map_err(|_| format!("{}: not UTF-8", path.display()))?;
        if !on_line(line_no, line.trim_end_matches(['\n', '\r'])) {
            return Err(format!("{}: line {line_no} was refused", path.display()));
        }
    }
}

/// This process's peak resident memory in kB (`VmHWM`), 0 where `/proc` has no such line.
fn peak_rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

fn jq_version() -> Option<String> {
    let out = Command::new("jq").arg("--version").output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// `jq -c .` over every file of `sessions`, output discarded, in batches of [`JQ_BATCH`]
/// files; the wall time of all batches.
fn measure_jq(sessions: &[SessionFile]) -> Result<f64, String> {
    let files: Vec<&Path> = sessions.iter().flat_map(SessionFile::files).collect();
    let started = Instant::now();
    for batch in files.chunks(JQ_BATCH) {
        let status = Command::new("jq")
            .arg("-c")
            .arg(".")
            .args(batch)
            .stdout(Stdio::null())
            .status()
            .map_err(|e| format!("cannot start jq: {e}"))?;
        if !status.success() {
            return Err(format!("jq failed ({status})"));
        }
    }
    Ok(started.elapsed().as_secs_f64())
}

fn print_table(rows: &[Row], jq: Option<&str>) {
    let mut table = String::new();
    let _ = writeln!(
        table,
        "\n{:<5} {:>8} {:>9} {:>9} {:>9} {:>10} {:>9} {:>9} {:>9} {:>8}",
        "part",
        "sessions",
        "MB",
        "lib s",
        "lib MB/s",
        "lib s/MB",
        "peak MB",
        "jq s",
        "jq MB/s",
        "lib/jq"
    );
    for row in rows {
        let mb = row.bytes as f64 / MB;
        let lib = &row.library;
        let (jq_s, jq_rate, ratio) = match row.jq_seconds {
            Some(s) => (
                format!("{s:.2}"),
                format!("{:.1}", mb / s),
                format!("{:.2}", (mb / lib.seconds) / (mb / s)),
            ),
            None => ("-".into(), "-".into(), "-".into()),
        };
        let _ = writeln!(
            table,
            "{:<5} {:>8} {:>9.1} {:>9.2} {:>9.1} {:>10.5} {:>9.1} {:>9} {:>9} {:>8}",
            row.label,
            row.sessions,
            mb,
            lib.seconds,
            mb / lib.seconds,
            lib.seconds / mb,
            lib.peak_rss_kb as f64 / 1024.0,
            jq_s,
            jq_rate,
            ratio
        );
    }
    if let (Some(first), Some(last)) = (rows.first(), rows.last()) {
        let per_mb = |r: &Row| r.library.seconds / (r.bytes as f64 / MB);
        let _ = writeln!(
            table,
            "\nlinearity: s per MB at all of it / at a quarter = {:.2} (1.00 is linear)",
            per_mb(last) / per_mb(first)
        );
        let lib = &last.library;
        let _ = writeln!(
            table,
            "found (all): {} turns, {} tool calls, {} tool errors, {} redactions, {} sessions judged failed",
            lib.turns, lib.tool_calls, lib.tool_errors, lib.redactions, lib.failed
        );
    }
    let _ = writeln!(
        table,
        "lib: read + parse + redact + judge + trajectory object per session, one thread; \
         jq: {} -c . over the same files, output discarded; peak MB: the library pass's VmHWM",
        jq.unwrap_or("jq")
    );
    print!("{table}");
}

/// A small deterministic generator (SplitMix64), so the same size gives the same files.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`).
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        let i = self.below(items.len() as u64) as usize;
        items.get(i).copied().unwrap_or_default()
    }
}

const PROMPTS: [&str; 8] = [
    "Fix the failing test in the parser module",
    "Add a --dry-run flag to the deploy script",
    "Why does the build break on CI but not locally?",
    "Refactor the config loader to read TOML",
    "Write a migration that adds an index on users.email",
    "Summarize the open issues labelled bug",
    "Rotate the staging database credentials",
    "Update the README with the new install steps",
];

const TOOLS: [&str; 5] = ["Bash", "Read", "Edit", "Grep", "Write"];

const SECRETS: [&str; 8] = [
    "export ANTHROPIC_API_KEY=sk-ant-api03-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1HgFeDcBa",
    "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dBjftJeZ4CVPmB92K27uhbUJU1p1r_wW1gFWFOEjXk",
    "aws_access_key_id = AKIAIOSFODNN7EXAMPLE",
    "token: ghp_16C7e42F292c6912E7710c838347Ae178B4a",
    "DATABASE_URL=postgres://admin:hunter2secret@db.internal:5432/app",
    "OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD",
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7bq98Hz2kq\n-----END RSA PRIVATE KEY-----",
    "slack: xoxb-1234567890-0987654321-AbCdEfGhIjKlMnOpQrStUvWx",
];

const WORDS: [&str; 24] = [
    "fn", "let", "match", "return", "config", "parser", "error", "value", "struct", "impl", "test",
    "assert", "build", "path", "string", "result", "option", "token", "index", "line", "module",
    "crate", "async", "await",
];

/// Appends about `bytes` of code-like text.
fn filler(rng: &mut Rng, bytes: usize, out: &mut String) {
    let start = out.len();
    let mut column = 0;
    while out.len() - start < bytes {
        let word = rng.pick(&WORDS);
        out.push_str(word);
        column += word.len() + 1;
        if column > 80 {
            out.push('\n');
            column = 0;
        } else {
            out.push(' ');
        }
    }
}

fn json_string(text: &str) -> String {
    serde_json::Value::String(text.to_owned()).to_string()
}

/// Writes sessions into `dir` until their size reaches `target` bytes.
fn generate(dir: &Path, target: u64) -> Result<Vec<SessionFile>, String> {
    let mut sessions = Vec::new();
    let mut total = 0u64;
    let mut index = 0u64;
    while total < target {
        let mut rng = Rng(index.wrapping_mul(0x2545_F491_4F6C_DD1D) ^ 0x5EED);
        let id = format!("{index:06}-4d5611e5-241a-462a-8d15");
        let size = SESSION_BYTES / 5 + rng.below(SESSION_BYTES * 8 / 5);
        let main = dir.join(format!("{id}.jsonl"));
        let text = session_text(&mut rng, &id, size as usize, None);
        write_file(&main, &text)?;
        let mut bytes = text.len() as u64;
        let side = if index % 10 == 3 {
            let folder = dir.join(&id).join("subagents");
            std::fs::create_dir_all(&folder)
                .map_err(|e| format!("cannot create {}: {e}", folder.display()))?;
            let path = folder.join("agent-a1.jsonl");
            let text = session_text(&mut rng, &id, (size / 3) as usize, Some("a1"));
            write_file(&path, &text)?;
            bytes += text.len() as u64;
            Some(("agent-a1".to_owned(), path))
        } else {
            None
        };
        total += bytes;
        sessions.push(SessionFile { main, side, bytes });
        index += 1;
    }
    Ok(sessions)
}

fn write_file(path: &Path, text: &str) -> Result<(), String> {
    let mut file =
        std::fs::File::create(path).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    file.write_all(text.as_bytes())
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// One session's JSON lines, about `size` bytes.
fn session_text(rng: &mut Rng, id: &str, size: usize, agent: Option<&str>) -> String {
    let mut out = String::with_capacity(size + 4096);
    let cwd = format!("/home/dev/projects/app-{}", rng.below(50));
    let mut second = 0u64;
    let mut stamp = |rng: &mut Rng| {
        second += 1 + rng.below(20);
        format!(
            "2026-0{}-{:02}T{:02}:{:02}:{:02}.000Z",
            1 + second / 2_000_000 % 9,
            1 + second / 86_400 % 28,
            second / 3600 % 24,
            second / 60 % 60,
            second % 60
        )
    };
    let common = |ts: &str, uuid: u64| {
        format!(
            "\"sessionId\":\"{id}\",\"cwd\":\"{cwd}\",\"timestamp\":\"{ts}\",\"uuid\":\"u-{uuid}\",\
             \"version\":\"2.1.3\",\"gitBranch\":\"main\",\"isSidechain\":{}",
            agent.is_some()
        )
    };
    let mut uuid = 0u64;
    if agent.is_none() {
        let _ = writeln!(
            out,
            "{{\"type\":\"file-history-snapshot\",\"messageId\":\"m0\",\"snapshot\":{{\"trackedFileBackups\":{{}}}}}}"
        );
    }
    let prompt = rng.pick(&PROMPTS);
    let ts = stamp(&mut *rng);
    uuid += 1;
    let _ = writeln!(
        out,
        "{{\"type\":\"user\",{},\"message\":{{\"role\":\"user\",\"content\":{}}}}}",
        common(&ts, uuid),
        json_string(prompt)
    );
    let mut message = 0u64;
    let mut text = String::new();
    while out.len() < size {
        message += 1;
        let ts = stamp(&mut *rng);
        uuid += 1;
        text.clear();
        let length = 80 + rng.below(400) as usize;
        filler(rng, length, &mut text);
        let usage = format!(
            "\"usage\":{{\"input_tokens\":{},\"output_tokens\":{},\"cache_read_input_tokens\":{}}}",
            rng.below(5000),
            rng.below(2000),
            rng.below(90_000)
        );
        let _ = writeln!(
            out,
            "{{\"type\":\"assistant\",{},\"message\":{{\"id\":\"msg_{message}\",\"role\":\"assistant\",\
             \"model\":\"claude-sonnet-4-5\",\"content\":[{{\"type\":\"text\",\"text\":{}}}],{usage}}}}}",
            common(&ts, uuid),
            json_string(&text)
        );
        let tool = rng.pick(&TOOLS);
        let input = match tool {
            "Bash" => format!("{{\"command\":\"cargo test -p mod{}\"}}", rng.below(30)),
            "Read" | "Write" | "Edit" => {
                format!("{{\"file_path\":\"{cwd}/src/mod{}.rs\"}}", rng.below(30))
            }
            _ => format!("{{\"pattern\":\"fn {}\"}}", rng.pick(&WORDS)),
        };
        uuid += 1;
        let _ = writeln!(
            out,
            "{{\"type\":\"assistant\",{},\"message\":{{\"id\":\"msg_{message}\",\"role\":\"assistant\",\
             \"content\":[{{\"type\":\"tool_use\",\"id\":\"toolu_{message}\",\"name\":\"{tool}\",\"input\":{input}}}],{usage}}}}}",
            common(&ts, uuid)
        );
        let _ = writeln!(
            out,
            "{{\"type\":\"progress\",\"data\":{{\"type\":\"hook_progress\",\"hookEvent\":\"PostToolUse\"}},\"timestamp\":\"{ts}\"}}"
        );
        // Tool output: mostly short, one in eight large (10-60 kB), some with a secret.
        text.clear();
        let large = rng.below(8) == 0;
        let length = if large {
            10_000 + rng.below(50_000) as usize
        } else {
            100 + rng.below(1500) as usize
        };
        filler(rng, length, &mut text);
        if rng.below(12) == 0 {
            text.push('\n');
            text.push_str(rng.pick(&SECRETS));
            text.push('\n');
        }
        let is_error = rng.below(10) == 0;
        let ts = stamp(&mut *rng);
        uuid += 1;
        let _ = writeln!(
            out,
            "{{\"type\":\"user\",{},\"message\":{{\"role\":\"user\",\"content\":[{{\"type\":\"tool_result\",\
             \"tool_use_id\":\"toolu_{message}\",\"content\":{},\"is_error\":{is_error}}}]}},\"toolUseResult\":{{\"stdout\":\"\",\"interrupted\":false}}}}",
            common(&ts, uuid),
            json_string(&text)
        );
        match rng.below(40) {
            0 => {
                uuid += 1;
                let _ = writeln!(
                    out,
                    "{{\"type\":\"user\",{},\"message\":{{\"role\":\"user\",\"content\":[{{\"type\":\"text\",\"text\":\"[Request interrupted by user]\"}}]}}}}",
                    common(&ts, uuid)
                );
            }
            1 | 2 => {
                uuid += 1;
                let _ = writeln!(
                    out,
                    "{{\"type\":\"user\",{},\"message\":{{\"role\":\"user\",\"content\":{}}}}}",
                    common(&ts, uuid),
                    json_string(&format!("Also use {} for this", rng.pick(&SECRETS)))
                );
            }
            3 => {
                let _ = writeln!(
                    out,
                    "{{\"type\":\"system\",\"subtype\":\"compact_boundary\",\"content\":\"Conversation compacted\",\"timestamp\":\"{ts}\"}}"
                );
            }
            _ => {}
        }
    }
    out
}
