//! `skill-evolve run --config`: the run configuration is checked in full
//! (one line, exit 2, nothing written) and the pre-flight estimate printed.

use crate::resume::history;
use crate::support::{assert_one_line_error, run_config, skill_evolve, snapshot};
#[cfg(unix)]
use crate::support::{interrupt, spawn_run};

/// A run configuration whose agent is the shell (always on PATH).
pub(crate) const CONFIG: &str = r#"[run]
name = "demo"
skills = "skills"
max_epochs = 2

[agent]
command = ["sh", "agent.sh"]
concurrency = 1
timeout_secs = 30

[questions]
file = "questions.jsonl"
train = 0.5
gate = 0.5
seed = 3

[gate]
params = "calibrated"
ladder = [2, 4]
calibration = "e-process"

[budget]
max_llm_calls = 10

[llm]
provider = "openai"

[llm.openai]
base_url = "http://127.0.0.1:9/v1"
model = "m"
api_key_env = "SKILL_EVOLVE_TEST_KEY"
"#;

pub(crate) fn run_workspace(config: &str) -> tempfile::TempDir {
    run_workspace_with(config, 18)
}

/// A workspace with `n` qa questions whose answer is `yes`, and a skill
/// with no rule for them (so the reference agent answers `unknown`).
pub(crate) fn run_workspace_with(config: &str, n: usize) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir_all(d.join("skills")).unwrap();
    std::fs::write(d.join("skills/default-strategy.md"), "RULE other => no\n").unwrap();
    let questions: String = (0..n)
        .map(|i| format!("{{\"question_id\": \"q{i}\", \"task_type\": \"qa\", \"question\": \"?\", \"answer\": \"yes\"}}\n"))
        .collect();
    std::fs::write(d.join("questions.jsonl"), questions).unwrap();
    std::fs::write(d.join("evolve.toml"), config).unwrap();
    dir
}

/// Asserts that `config` is refused by a dry run with one line containing
/// `needle` (exit 2), and that nothing in its workspace changed.
pub(crate) fn assert_config_refused(config: &str, needle: &str) {
    let dir = run_workspace(config);
    let d = dir.path();
    let before = snapshot(d);
    let out = run_config(d, &["--dry-run"]);
    assert_one_line_error(&out, needle);
    assert_eq!(snapshot(d), before, "{needle}");
}

#[test]
fn every_gate_preset_is_accepted_by_the_run_config() {
    for name in evolution_gate::PRESET_NAMES {
        let config = CONFIG.replace(r#"params = "calibrated""#, &format!("params = \"{name}\""));
        // 32 questions, 16 gate: the most any preset's first test needs
        // (`thorough`'s); fewer are refused by the reach check.
        let dir = run_workspace_with(&config, 32);
        let out = run_config(dir.path(), &["--dry-run"]);
        assert!(out.status.success(), "{name}: {out:?}");
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(text.contains(&format!("gate: {name} parameters")), "{text}");
    }
}

#[test]
fn dry_run_prints_the_plan_and_the_estimate() {
    let dir = run_workspace(CONFIG);
    let d = dir.path();
    let before = snapshot(d);
    let out = run_config(d, &["--dry-run"]);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("questions: 9 train, 9 gate, 0 holdout"),
        "{text}"
    );
    assert!(
        text.contains("gate: calibrated parameters, blocks [2, 4]"),
        "{text}"
    );
    // 2 epochs × (9 questions × 6 judge calls + 1 candidate × 3 + 1 slow update).
    assert!(text.contains("2 epoch(s)): 116 LLM calls"), "{text}");
    // 2 epochs × (9 training + (1 candidate + 1 slow update) × 9 gate
    // questions × 2 arms) rollouts.
    assert!(text.contains("90 agent rollouts"), "{text}");
    assert!(text.contains("note: "), "the 10-call cap is passed: {text}");
    // No earlier run measured the model: its speed, and so the wall time, is unknown.
    assert!(
        text.contains(
            "wall time: unknown (no earlier run of this project called m; the first run's \
             journal measures it); the 90 agent rollouts add their own time, not known before \
             they run\n"
        ),
        "{text}"
    );
    assert!(text.contains("nothing was run or written"), "{text}");
    assert_eq!(snapshot(d), before);
}

/// One recorded call of `model` (a cassette or journal line): 1 000 prompt tokens read in
/// 1 s, 100 completion tokens generated in 2 s.
fn timed_call(model: &str, answered_by: &str, n: usize) -> String {
    let messages = [evolution_types::ChatMessage::user(format!("request {n}"))];
    let options = evolution_types::ChatOptions::default();
    serde_json::json!({
        "key": evolution_project::llm::cassette_key(model, &messages, &options),
        "model": model,
        "messages": messages,
        "options": options,
        "response": {
            "content": "{}", "model": answered_by, "provider": "openai",
            "prompt_tokens": 1000, "completion_tokens": 100,
            "latency_ms": 3000, "ttft_ms": 1000,
        },
    })
    .to_string()
        + "\n"
}

#[test]
fn the_dry_run_estimates_wall_time_from_the_measured_speed_of_the_model() {
    let dir = run_workspace(CONFIG);
    let d = dir.path();
    // An earlier run's journal (keyed by the run, each response naming its model) holds two
    // calls of model `m` and one of another model, which does not count.
    let earlier = d.join(".skill-evolve/runs/earlier");
    std::fs::create_dir_all(&earlier).unwrap();
    let journal = [
        timed_call("run", "m", 1),
        timed_call("run", "m-2026-01-01", 2),
    ]
    .concat()
        + &timed_call("run", "other", 3).replace("\"latency_ms\":3000", "\"latency_ms\":9");
    std::fs::write(earlier.join("llm-journal.jsonl"), journal).unwrap();
    let before = snapshot(d);
    let out = run_config(d, &["--dry-run"]);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    // 116 calls × (3 000 prompt tokens at 1 000/s + 600 completion tokens at 50/s) = 1 740 s.
    assert!(
        text.contains(
            "wall time (worst case): the LLM calls take about 29 min one at a time, at 1000 \
             prompt and 50.0 completion tokens/s (the speed of m measured over 2 calls of 1 \
             earlier run of this project); the 90 agent rollouts add their own time"
        ),
        "{text}"
    );
    assert_eq!(snapshot(d), before);

    // A replay answers at once; its cassette says how fast the recorded model was.
    std::fs::write(d.join("rec.cassette"), timed_call("m", "m", 1)).unwrap();
    let replay = CONFIG.replace(
        "[llm]\nprovider = \"openai\"",
        "[llm]\nprovider = \"replay\"\ncassette = \"rec.cassette\"",
    );
    std::fs::write(d.join("evolve.toml"), replay).unwrap();
    let out = run_config(d, &["--dry-run"]);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains(
            "wall time (worst case): the LLM calls are answered from the cassette at once (m ran \
             at 1000 prompt and 50.0 completion tokens/s when the cassette was recorded: about \
             29 min live); the 90 agent rollouts"
        ),
        "{text}"
    );
}

#[test]
fn every_bad_run_configuration_is_one_line_exit_2() {
    let cases: [(&str, &str, &str); 14] = [
        (
            r#"name = "demo""#,
            r#"name = "..""#,
            "evolve.toml:2: [run] name must start with a letter or digit",
        ),
        (
            r#"name = "demo""#,
            r#"name = ".""#,
            "evolve.toml:2: [run] name must start with a letter or digit",
        ),
        (
            "max_epochs = 2",
            "max_epoch = 2",
            "evolve.toml:4: unknown field `max_epoch`",
        ),
        (
            "max_epochs = 2",
            "max_epochs = 0",
            "evolve.toml:4: [run] max_epochs must be 1 to 100",
        ),
        (
            "gate = 0.5",
            "gate = 0.4",
            "train + gate + holdout must be 1",
        ),
        (
            "train = 0.5",
            "train = 1.5",
            "evolve.toml:13: [questions] train must be a share",
        ),
        (
            r#"["sh", "agent.sh"]"#,
            r#"["./no-such-agent"]"#,
            "evolve.toml:7: [agent] command: program \"./no-such-agent\" not found",
        ),
        (
            "concurrency = 1",
            "concurrency = 0",
            "evolve.toml:8: [agent] concurrency must be 1 to 64",
        ),
        (
            "ladder = [2, 4]",
            "ladder = []",
            "evolve.toml:19: [gate] ladder",
        ),
        (
            r#"params = "calibrated""#,
            r#"params = "tuned""#,
            "evolve.toml:18: unknown variant `tuned`",
        ),
        (
            r#"skills = "skills""#,
            r#"skills = "nowhere""#,
            "evolve.toml:3: [run] skills",
        ),
        (
            "max_llm_calls = 10",
            "max_llm_cals = 10",
            "evolve.toml:23: unknown field `max_llm_cals`",
        ),
        (
            "max_llm_calls = 10",
            "max_llm_calls = 10\nmax_cost = 1.0\n\n[budget.prices]\n\
             m = { prompt_per_million = -1.0, completion_per_million = 2.0 }",
            "evolve.toml:27: prompt_per_million = -1 must be a finite, non-negative number",
        ),
        (
            "max_llm_calls = 10",
            "max_llm_calls = 10\nmax_cost = nan",
            "evolve.toml:24: max_cost = NaN must be a finite, non-negative number",
        ),
    ];
    for (from, to, needle) in cases {
        let config = CONFIG.replace(from, to);
        assert_ne!(config, CONFIG, "{from}");
        assert_config_refused(&config, needle);
    }
    // The question set's own problems name its file and line.
    let dir = run_workspace(CONFIG);
    std::fs::write(
        dir.path().join("questions.jsonl"),
        "{\"question_id\": \"a\"}\n{\n",
    )
    .unwrap();
    let out = run_config(dir.path(), &["--dry-run"]);
    assert_one_line_error(&out, "questions.jsonl:2: not a question");
    // A missing API key is found before anything runs.
    let out = skill_evolve(dir.path())
        .env_remove("SKILL_EVOLVE_TEST_KEY")
        .args(["run", "--config", "evolve.toml", "--dry-run"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// The reference agent of evolution-harness, built next to this binary.
pub(crate) fn rule_agent() -> std::path::PathBuf {
    let bin = assert_cmd::cargo::cargo_bin("skill-evolve");
    let debug_dir = bin.parent().unwrap().to_path_buf();
    let target = debug_dir.parent().unwrap();
    let status = std::process::Command::new(env!("CARGO"))
        .args([
            "build",
            "-q",
            "-p",
            "evolution-harness",
            "--bin",
            "rule-agent",
        ])
        .env("CARGO_TARGET_DIR", target)
        .status()
        .unwrap();
    assert!(status.success());
    debug_dir.join("rule-agent")
}

/// [`CONFIG`] for a whole run against the fake LLM at `base_url`: room for
/// 500 LLM calls, gate blocks of 6 and 12 questions.
pub(crate) fn live_config(base_url: &str) -> String {
    CONFIG
        .replace("max_llm_calls = 10", "max_llm_calls = 500")
        .replace("ladder = [2, 4]", "ladder = [6, 12]")
        .replace("http://127.0.0.1:9/v1", base_url)
}

/// `config` with one epoch, 15% of the questions to train on and 85% to gate.
pub(crate) fn one_epoch(config: &str) -> String {
    config
        .replace("train = 0.5", "train = 0.15")
        .replace("gate = 0.5", "gate = 0.85")
        .replace("max_epochs = 2", "max_epochs = 1")
}

/// `config` with `agent` as the agent's command.
pub(crate) fn with_agent(config: &str, agent: &std::path::Path) -> String {
    config.replace(
        r#"["sh", "agent.sh"]"#,
        &format!("[{:?}]", agent.display().to_string()),
    )
}

/// One epoch of `agent` against the fake LLM at `base_url`.
pub(crate) fn loop_config(agent: &std::path::Path, base_url: &str) -> String {
    one_epoch(&with_agent(&live_config(base_url), agent))
}

/// What a run that ended well printed, and its report.
pub(crate) struct Finished {
    /// Its standard output.
    pub(crate) stdout: String,
    /// Its standard error (progress and events).
    pub(crate) stderr: String,
    /// `report.md` of the run `demo`.
    pub(crate) report: String,
}

impl Finished {
    /// Asserts that the run's closing summary says `summary`
    /// (`1 candidate(s), 1 accepted`).
    pub(crate) fn assert_summary(&self, summary: &str) {
        assert!(
            self.stdout.contains(summary),
            "{}\n{}",
            self.stdout,
            self.stderr
        );
    }
}

/// Runs the configuration of `d` to its end, asserting that it succeeds.
pub(crate) fn run_to_end(d: &std::path::Path) -> Finished {
    let out = run_config(d, &[]);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let report = std::fs::read_to_string(d.join(".skill-evolve/runs/demo/report.md")).unwrap();
    Finished {
        stdout,
        stderr,
        report,
    }
}

/// Every table of `markdown` (a run of lines that start with `|`) is parsed as a table by a
/// CommonMark parser with tables, and no `|` line ends up in a code block.
fn assert_tables_render_as_tables(markdown: &str) {
    use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
    let mut tables = 0;
    let mut in_code = false;
    for event in Parser::new_ext(markdown, Options::ENABLE_TABLES) {
        match event {
            Event::Start(Tag::Table(_)) => tables += 1,
            Event::Start(Tag::CodeBlock(_)) => in_code = true,
            Event::End(TagEnd::CodeBlock) => in_code = false,
            Event::Text(text) if in_code => assert!(
                !text.lines().any(|l| l.trim_start().starts_with('|')),
                "a table renders as code:\n{text}\n---\n{markdown}"
            ),
            _ => {}
        }
    }
    let mut written = 0;
    let mut previous_was_row = false;
    for line in markdown.lines() {
        let row = line.trim_start().starts_with('|');
        if row && !previous_was_row {
            written += 1;
        }
        previous_was_row = row;
    }
    assert_eq!(tables, written, "tables parsed vs written in:\n{markdown}");
    assert!(tables > 0, "{markdown}");
}

/// The run's usage per phase in all three reports: `report.json`'s phases
/// add up to its usage, `report.md` and `report.html` show them as a table.
fn assert_usage_by_phase(d: &std::path::Path, report_md: &str) {
    let run = d.join(".skill-evolve/runs/demo");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("report.json")).unwrap()).unwrap();
    let phases = json["usage_by_phase"].as_object().unwrap();
    let names: Vec<&str> = phases.keys().map(String::as_str).collect();
    for phase in ["rollout", "diagnose", "propose", "gate"] {
        assert!(names.contains(&phase), "{phase} missing from {names:?}");
    }
    for field in [
        "llm_calls",
        "prompt_tokens",
        "completion_tokens",
        "rollouts",
    ] {
        let sum: u64 = phases.values().map(|u| u[field].as_u64().unwrap()).sum();
        assert_eq!(sum, json["usage"][field].as_u64().unwrap(), "{field}");
    }
    let cost: f64 = phases.values().map(|u| u["cost"].as_f64().unwrap()).sum();
    assert!((cost - json["usage"]["cost"].as_f64().unwrap()).abs() < 1e-9);
    // The judges and the edits call the model; gates only run the agent.
    assert!(
        phases["diagnose"]["llm_calls"].as_u64().unwrap() > 0,
        "{phases:?}"
    );
    assert!(
        phases["propose"]["llm_calls"].as_u64().unwrap() > 0,
        "{phases:?}"
    );
    assert_eq!(phases["gate"]["llm_calls"], 0, "{phases:?}");
    assert!(
        phases["gate"]["rollouts"].as_u64().unwrap() > 0,
        "{phases:?}"
    );
    let row = |name: &str| {
        let u = &phases[name];
        format!(
            "| {} | {} | {} | {} |",
            name.replace('_', " "),
            u["llm_calls"],
            u["prompt_tokens"],
            u["completion_tokens"]
        )
    };
    assert!(report_md.contains("## Usage by phase"), "{report_md}");
    for name in &names {
        assert!(
            report_md.contains(&row(name)),
            "{} in {report_md}",
            row(name)
        );
    }
    assert_tables_render_as_tables(report_md);
    let html = std::fs::read_to_string(run.join("report.html")).unwrap();
    for name in ["rollout", "diagnose", "propose", "gate", "whole run"] {
        assert!(html.contains(&format!("<tr><td>{name}</td>")), "{name}");
    }
}

#[test]
fn the_loop_evolves_gates_and_accepts_with_the_reference_agent() {
    let agent = rule_agent();
    let fake = crate::fake_llm::start_loop();
    // 2 training and 12 gate questions: 12 wins confirm (E ≥ 20). Two
    // failures stay under the system pack's pattern threshold (3): the
    // workspace has no system prompt to evolve.
    let dir = run_workspace_with(&loop_config(&agent, &fake.base_url), 14);
    let d = dir.path();
    let finished = run_to_end(d);
    finished.assert_summary("1 candidate(s), 1 accepted");
    let (report, stderr) = (&finished.report, &finished.stderr);
    assert!(report.contains("+RULE qa => yes"), "{report}");
    assert!(report.contains("accept_confirmed"), "{report}");
    assert!(stderr.contains("gate "), "{stderr}");
    assert_usage_by_phase(d, report);
    // The same command again resumes: the loop is done, nothing is rerun.
    let calls = fake.calls.load(std::sync::atomic::Ordering::SeqCst);
    let again = run_config(d, &[]);
    assert!(again.status.success(), "{again:?}");
    assert!(String::from_utf8_lossy(&again.stderr).contains("resuming from"));
    assert_eq!(fake.calls.load(std::sync::atomic::Ordering::SeqCst), calls);
}

/// Ctrl-C (SIGINT) stops the run cleanly: exit code 130, a pointer to the
/// checkpoint, the store at its first version (the hanging agent is killed
/// with the runner).
#[cfg(unix)]
#[test]
fn ctrl_c_stops_cleanly_and_says_how_to_resume() {
    let agent = rule_agent();
    let fake = crate::fake_llm::start_loop();
    let dir = run_workspace_with(&loop_config(&agent, &fake.base_url), 14);
    let d = dir.path();
    // Every question makes the reference agent hang.
    let questions: String = (0..14)
        .map(|i| format!("{{\"question_id\": \"q{i}\", \"task_type\": \"qa\", \"question\": \"hang\", \"answer\": \"yes\"}}\n"))
        .collect();
    std::fs::write(d.join("questions.jsonl"), questions).unwrap();
    let child = spawn_run(d);
    // Wait until the first rollout's workspace exists, then interrupt.
    let workspaces = d.join(".skill-evolve/runs/demo/workspaces");
    for _ in 0..200 {
        if std::fs::read_dir(&workspaces).is_ok_and(|mut e| e.next().is_some()) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    let stdout = interrupt(child);
    assert!(
        stdout.contains("interrupted: the store is at a consistent version"),
        "{stdout}"
    );
    assert!(!d.join(".skill-evolve/runs/demo/report.md").exists());
    let history = history(d);
    assert_eq!(history["current"], "v000001", "{history}");
    assert_eq!(
        history["history"].as_array().map(Vec::len),
        Some(1),
        "{history}"
    );
}

/// Ctrl-C stops the agent with what it started, even a process that left the agent's process
/// group and session (`setsid`): on Linux the token in its environment finds it.
#[cfg(target_os = "linux")]
#[test]
fn ctrl_c_stops_a_grandchild_of_the_agent_in_its_own_session() {
    let fake = crate::fake_llm::start_loop();
    let dir = run_workspace_with(&one_epoch(&live_config(&fake.base_url)), 14);
    let d = dir.path();
    std::fs::write(
        d.join("agent.sh"),
        "read -r request\nsetsid sleep 300 </dev/null >/dev/null 2>&1 &\n\
         echo $! > grandchild.pid\nsleep 60\n",
    )
    .unwrap();
    let child = spawn_run(d);
    let pid_file = d.join("grandchild.pid");
    let written = || std::fs::read_to_string(&pid_file).is_ok_and(|t| t.ends_with('\n'));
    for _ in 0..400 {
        if written() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(written(), "the agent never started its grandchild");
    let grandchild = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .to_owned();
    interrupt(child);
    let stat = format!("/proc/{grandchild}/stat");
    let gone = || {
        std::fs::read_to_string(&stat).map_or(true, |stat| {
            stat.rsplit_once(')')
                .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
        })
    };
    for _ in 0..100 {
        if gone() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(
        gone(),
        "the agent's grandchild {grandchild} outlived Ctrl-C"
    );
}

/// The shipped offline demo (`examples/rule-agent-demo`) replays from its
/// cassette with the reference agent: one candidate, confirmed by the gate.
#[test]
fn the_shipped_demo_replays_offline() {
    let agent = rule_agent();
    let example = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/rule-agent-demo");
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir_all(d.join("skills")).unwrap();
    for name in [
        "evolve.toml",
        "questions.jsonl",
        "demo.cassette",
        "skills/default-strategy.md",
    ] {
        std::fs::copy(example.join(name), d.join(name)).unwrap();
    }
    let path = std::env::join_paths(
        std::iter::once(agent.parent().unwrap().to_path_buf()).chain(std::env::split_paths(
            &std::env::var_os("PATH").unwrap_or_default(),
        )),
    )
    .unwrap();
    let out = skill_evolve(d)
        .env("PATH", path)
        .args(["run", "--config", "evolve.toml"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("1 candidate(s), 1 accepted"), "{stdout}");
    let report = std::fs::read_to_string(d.join(".skill-evolve/runs/demo/report.md")).unwrap();
    assert!(
        report.contains("| yes | 9 | 0 | 14 | 0 | 102.30 |"),
        "{report}"
    );
    assert!(report.contains("+RULE qa => yes"), "{report}");
}

/// `--prompts`, `--tree` and `--schedule` (and their `[run]`/`[evolve]`
/// keys) reach the pre-flight plan; their problems are one line, exit 2.
#[test]
fn prompts_tree_and_schedule_options_are_checked_and_shown() {
    let dir = run_workspace(CONFIG);
    let d = dir.path();
    std::fs::create_dir_all(d.join("prompts")).unwrap();
    std::fs::write(d.join("prompts/system.md"), "You answer questions.\n").unwrap();
    std::fs::write(d.join("trees.json"), r#"{"s1": {"id": "root"}}"#).unwrap();
    let dry_run = |extra: &[&str]| run_config(d, &[&["--dry-run"], extra].concat());
    let help = skill_evolve(d).args(["run", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    for option in [
        "--prompts <DIR>",
        "--tree <FILE>",
        "--schedule <SCHEDULE>",
        "--max-edits",
        "--min-edits",
    ] {
        assert!(help.contains(option), "{option} not in {help}");
    }
    let out = dry_run(&[]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("evolve: skills only; edit budget constant, 8 edits per candidate"),
        "{text}"
    );
    let out = dry_run(&[
        "--prompts",
        "prompts",
        "--tree",
        "trees.json",
        "--schedule",
        "cosine",
        "--max-edits",
        "6",
        "--min-edits",
        "1",
    ]);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(
            "evolve: skills and 1 prompt document(s) in prompts (system prompt system.md); \
             edit budget cosine, 6 → 1 edits per candidate"
        ),
        "{text}"
    );
    // One more candidate per epoch: 2 epochs × (9 × 6 + 2 × 3 + 1) calls.
    assert!(text.contains("2 epoch(s)): 122 LLM calls"), "{text}");
    // The same from the configuration's keys; flags win over them.
    let keyed = CONFIG.replace(
        "max_epochs = 2\n",
        "max_epochs = 2\nprompts = \"prompts\"\n\n[evolve]\nschedule = \"autonomous\"\nsystem_prompt = \"system.md\"\n",
    );
    std::fs::write(d.join("evolve.toml"), &keyed).unwrap();
    let text = String::from_utf8_lossy(&dry_run(&[]).stdout).into_owned();
    assert!(
        text.contains("(system prompt system.md); edit budget autonomous, no edit limit"),
        "{text}"
    );
    let text = String::from_utf8_lossy(&dry_run(&["--schedule", "linear"]).stdout).into_owned();
    assert!(
        text.contains("edit budget linear, 8 → 2 edits per candidate"),
        "{text}"
    );

    let misnamed = keyed.replace(
        "system_prompt = \"system.md\"",
        "system_prompt = \"sys.md\"",
    );
    std::fs::write(d.join("evolve.toml"), &misnamed).unwrap();
    assert_one_line_error(
        &dry_run(&[]),
        "evolve.toml:9: [evolve] system_prompt \"sys.md\" is not in the prompts folder (it holds system.md)",
    );
    std::fs::write(d.join("evolve.toml"), CONFIG).unwrap();
    std::fs::write(d.join("bad-tree.json"), "{\n  \"s1\": [\n").unwrap();
    std::fs::create_dir_all(d.join("clash")).unwrap();
    std::fs::write(d.join("clash/default-strategy.md"), "x\n").unwrap();
    std::fs::create_dir_all(d.join("empty")).unwrap();
    let before = snapshot(d);
    for (extra, needle) in [
        (
            &["--prompts", "nowhere"][..],
            "--prompts nowhere: cannot read the folder",
        ),
        (
            &["--prompts", "empty"][..],
            "--prompts empty: holds no prompt document",
        ),
        (
            &["--prompts", "clash"][..],
            "default-strategy.md is also a skill document",
        ),
        (
            &["--tree", "bad-tree.json"][..],
            "bad-tree.json:3: not a JSON object",
        ),
        (
            &[
                "--schedule",
                "linear",
                "--max-edits",
                "1",
                "--min-edits",
                "3",
            ][..],
            "max_edits/min_edits",
        ),
        (&["--schedule", "sideways"][..], "--schedule"),
    ] {
        assert_one_line_error(&dry_run(extra), needle);
    }
    assert_eq!(snapshot(d), before);
}

/// A real loop with `--prompts`, `--tree` and `--schedule`: the system
/// prompt is stored, its case pack reaches the system prompt's evolve call
/// and its candidate is gated; the missed-nodes judge sees the tree; the
/// skill's evolve call carries the schedule's budget. The recorded
/// cassette holds every prompt sent.
#[test]
fn the_loop_evolves_the_system_prompt_with_the_chosen_schedule() {
    let agent = rule_agent();
    let fake = crate::fake_llm::start_loop_system();
    let config = loop_config(&agent, &fake.base_url)
        .replace("train = 0.15", "train = 0.3")
        .replace("gate = 0.85", "gate = 0.7");
    let dir = run_workspace_with(&config, 18);
    let d = dir.path();
    let questions: String = (0..18)
        .map(|i| format!("{{\"question_id\": \"q{i}\", \"task_type\": \"qa\", \"video_id\": \"s1\", \"question\": \"?\", \"answer\": \"yes\"}}\n"))
        .collect();
    std::fs::write(d.join("questions.jsonl"), questions).unwrap();
    std::fs::create_dir_all(d.join("prompts")).unwrap();
    // Long enough that one appended line stays within the length check.
    let system_md = format!(
        "# System\n\nYou answer support questions.\n\n{}",
        "Answer in one word, from the rules of your skills; say unknown when no rule applies.\n"
            .repeat(4)
    );
    std::fs::write(d.join("prompts/system.md"), &system_md).unwrap();
    std::fs::write(
        d.join("trees.json"),
        r#"{"s1": {"id": "root", "children": [{"id": "region-table"}]}}"#,
    )
    .unwrap();
    let out = skill_evolve(d)
        .env("SKILL_EVOLVE_TEST_KEY", "k")
        .args([
            "run",
            "--config",
            "evolve.toml",
            "--prompts",
            "prompts",
            "--tree",
            "trees.json",
            "--schedule",
            "cosine",
            "--max-edits",
            "3",
            "--record",
            "rec.cassette",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let cassette = std::fs::read_to_string(d.join("rec.cassette")).unwrap();
    let prompts: Vec<String> = cassette
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            v["messages"][0]["content"].as_str().unwrap().to_owned()
        })
        .collect();
    let openings: Vec<(&str, &str)> = cassette
        .lines()
        .zip(&prompts)
        .map(|(l, p)| {
            (
                p.get(..50).unwrap_or(p),
                l.get(l.len().saturating_sub(400)..).unwrap_or(l),
            )
        })
        .collect();
    assert!(
        stdout.contains("2 candidate(s)"),
        "{stdout}\n{stderr}\n{openings:#?}"
    );
    let find = |opening: &str| {
        prompts
            .iter()
            .find(|p| p.contains(opening))
            .unwrap_or_else(|| panic!("no {opening:?} call"))
    };
    // Cosine from 3 over one epoch: the first (only) epoch's budget is 3.
    assert!(
        find("You improve a skill document").contains("At most 3 edits."),
        "{prompts:?}"
    );
    let system = find("You improve the system prompt");
    assert!(system.contains("You answer support questions."), "{system}");
    assert!(system.contains("At most 3 edits."), "{system}");
    assert!(
        find("explored a source").contains("region-table"),
        "the tree reaches the missed-nodes judge"
    );
    let report = std::fs::read_to_string(d.join(".skill-evolve/runs/demo/report.md")).unwrap();
    assert!(report.contains("system.md"), "{report}");
    // The system prompt is a document of the run's first stored version.
    let mut stack = vec![d.join(".skill-evolve/runs/demo/store")];
    let mut stored = Vec::new();
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.file_name().is_some_and(|n| n == "system.md") {
                stored.push(std::fs::read_to_string(path).unwrap());
            }
        }
    }
    assert!(stored.contains(&system_md), "{stored:?}");
}

#[test]
fn a_budget_capped_run_says_so_in_words_and_its_rerun_stays_under_the_cap() {
    use std::sync::atomic::Ordering;
    let agent = rule_agent();
    let fake = crate::fake_llm::start_loop();
    let config =
        loop_config(&agent, &fake.base_url).replace("max_llm_calls = 500", "max_llm_calls = 2");
    assert!(config.contains("max_llm_calls = 2\n"), "{config}");
    let dir = run_workspace_with(&config, 14);
    let d = dir.path();
    let out = run_config(d, &[]);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{out:?}");
    assert!(
        stdout.contains("finished (LLM call budget exhausted ("),
        "{stdout}"
    );
    assert!(!stdout.contains("Budget("), "{stdout}");
    let calls = fake.calls.load(Ordering::SeqCst);
    let first = report_json_of(d);
    let used = first["usage"]["llm_calls"].as_u64().unwrap();
    assert!(used >= 2, "{first}");
    let rollouts = first["usage"]["rollouts"].as_u64().unwrap();
    assert!(rollouts > 0, "{first}");

    // The same command again: no call past the cap, and the report counts both legs.
    let again = run_config(d, &[]);
    let stdout = String::from_utf8_lossy(&again.stdout).into_owned();
    assert!(again.status.success(), "{again:?}");
    assert!(
        stdout.contains("finished (LLM call budget exhausted ("),
        "{stdout}"
    );
    assert_eq!(fake.calls.load(Ordering::SeqCst), calls);
    let second = report_json_of(d);
    assert_eq!(
        second["usage"]["llm_calls"].as_u64(),
        Some(used),
        "{second}"
    );
    assert_eq!(
        second["usage"]["rollouts"].as_u64(),
        Some(rollouts),
        "{second}"
    );
}

#[test]
fn a_resumed_run_reports_the_events_of_every_leg() {
    let agent = rule_agent();
    let fake = crate::fake_llm::start_loop();
    // Training takes two rollouts; the gate's first block (six pairs) passes the cap.
    let config = loop_config(&agent, &fake.base_url).replace(
        "max_llm_calls = 500",
        "max_llm_calls = 500\nmax_rollouts = 6",
    );
    let dir = run_workspace_with(&config, 14);
    let d = dir.path();
    let events = || -> Vec<String> {
        let report = std::fs::read_to_string(d.join(".skill-evolve/runs/demo/report.md")).unwrap();
        let at = report.find("## Events").expect("an events section");
        report[at..]
            .lines()
            .filter_map(|l| l.strip_prefix("- "))
            .map(str::to_owned)
            .collect()
    };
    let out = run_config(d, &[]);
    assert!(out.status.success(), "{out:?}");
    let first = events();
    assert!(
        first
            .iter()
            .any(|l| l.starts_with("budget cap reached: rollout budget exhausted")),
        "{first:?}"
    );
    let again = run_config(d, &[]);
    assert!(again.status.success(), "{again:?}");
    let second = events();
    assert!(second.len() > first.len(), "{second:?}");
    assert_eq!(second[..first.len()], first[..], "{second:?}");
}

/// The `report.json` of the run `demo` in `d`.
fn report_json_of(d: &std::path::Path) -> serde_json::Value {
    serde_json::from_str(
        &std::fs::read_to_string(d.join(".skill-evolve/runs/demo/report.json")).unwrap(),
    )
    .unwrap()
}
