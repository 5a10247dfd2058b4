//! Benchmark: the acceptance rules on a real LLM acting as the agent.
//!
//! The agent is the embedded local model (sampled at temperature > 0, so its noise is real),
//! another GGUF file with `--model-file`, or any OpenAI-compatible server with `--base-url`.
//! It answers the questions of `suite.jsonl` (reviews labelled in capitals, order numbers
//! extracted alone, weights in kg, harmful requests refused, plain questions answered) with
//! the skill of `candidates.json` as its system prompt. Each replication proposes a fixed mix
//! of the candidate edits there (written to help, neutral, written to hurt) in a shuffled
//! order, and each acceptance rule — the four gate presets alone, the e-LOND run
//! configuration as shipped and with the options that make it look more often, carry answers
//! over and stop tied candidates early, keep if higher on 10 and on 40 questions, keep if
//! higher or equal — judges them one after another against the skill it has committed so far.
//!
//! Run with `cargo xtask bench gate-real [options]`:
//! - `--replications R` (3), `--candidates N` (12), `--holdout H` (40),
//!   `--gate-questions G` (88), `--temperature T` (0.7), `--max-tokens M` (16);
//! - `--base-url URL --model NAME [--api-key-env VAR]`: an OpenAI-compatible server instead
//!   of the local model; `--agent-command PROGRAM ARGS...` (last, it takes every argument after
//!   it): a program speaking the agent protocol of `run`'s `[agent] command` instead, such as
//!   `skill-evolve host-agent claude-code --cli claude` for Claude Code (`codex` for Codex),
//!   with `--agent-timeout S` (300) seconds per question; `--model-file PATH`: another local GGUF file (`--chat-template NAME`,
//!   a llama.cpp template name such as `gemma`, for a file without its own; `cargo xtask bench
//!   gate-real --benchmark-model` fetches the benchmark's Qwen2.5-Coder-0.5B-Instruct and
//!   passes it as `--model-file`); `--threads N` (1):
//!   llama.cpp threads (one is fastest on a busy machine);
//! - `--smoke`: 2 candidates, 10 held-out and 10 gate questions, one replication;
//! - `--show-replies`: print every generated reply (escaped, cut) and whether it passed;
//! - `--effects`: also measure each edit alone against the starting skill on the held-out
//!   questions (checks that the kinds hold on the model);
//! - `--out DIR` (`target/gate-real`): where `results.md` and `false_commits.svg` are
//!   written after every replication, and each rule's tally appended to `tallies.jsonl`;
//! - `--first-replication K` (0): number the replications from K, so that several processes
//!   can share the replications; `--merge FILE...`: the table and the plot of the tallies in
//!   these `tallies.jsonl` files, written to `--out`;
//! - `--rules a,b,...` (all): only these rules, by name (`seed`, `elond`, `elond-look5-carry`,
//!   `higher-10`, ...; an unknown name lists them). Answers are shared between the rules of a
//!   process, so a rule added to a run costs only the answers no other rule asked for.

#![allow(clippy::print_stdout, clippy::print_stderr)]

mod bench;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use evolution_harness::{SubprocessConfig, SubprocessRunner};
use evolution_llm_local::{LocalConfig, LocalLlm};
use evolution_llm_openai::{OpenAiConfig, OpenAiProvider};

use crate::bench::{
    Bench, Responder, Row, Rule, Setup, Shared, mean_se, replicate, split, svg, table,
};

struct Options {
    replications: u64,
    setup: Setup,
    temperature: f32,
    max_tokens: u32,
    base_url: Option<String>,
    model: Option<String>,
    api_key_env: Option<String>,
    model_file: Option<PathBuf>,
    chat_template: Option<String>,
    agent_command: Vec<String>,
    agent_timeout: u64,
    show_replies: bool,
    effects: bool,
    threads: u32,
    first: u64,
    merge: Vec<PathBuf>,
    rules: Vec<Rule>,
    out: PathBuf,
}

fn parse() -> Result<Options, String> {
    let mut o = Options {
        replications: 3,
        setup: Setup {
            candidates: 12,
            holdout: 40,
            gate_questions: 88,
        },
        temperature: 0.7,
        max_tokens: 16,
        base_url: None,
        model: None,
        api_key_env: None,
        model_file: None,
        chat_template: None,
        agent_command: Vec::new(),
        agent_timeout: 300,
        show_replies: false,
        effects: false,
        threads: 1,
        first: 0,
        merge: Vec::new(),
        rules: Rule::all(),
        out: PathBuf::from("target/gate-real"),
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or(format!("{flag} needs a value"));
        let number = |v: String| v.parse::<u64>().map_err(|e| format!("{v}: {e}"));
        match flag.as_str() {
            "--replications" => o.replications = number(value()?)?.max(1),
            "--candidates" => o.setup.candidates = number(value()?)? as usize,
            "--holdout" => o.setup.holdout = number(value()?)? as usize,
            "--gate-questions" => o.setup.gate_questions = number(value()?)? as usize,
            "--max-tokens" => o.max_tokens = number(value()?)?.clamp(1, 4096) as u32,
            "--temperature" => {
                let v = value()?;
                o.temperature = v.parse().map_err(|e| format!("{v}: {e}"))?;
            }
            "--base-url" => o.base_url = Some(value()?),
            "--model" => o.model = Some(value()?),
            "--api-key-env" => o.api_key_env = Some(value()?),
            "--model-file" => o.model_file = Some(PathBuf::from(value()?)),
            "--chat-template" => o.chat_template = Some(value()?),
            "--out" => o.out = PathBuf::from(value()?),
            "--effects" => o.effects = true,
            "--show-replies" => o.show_replies = true,
            "--first-replication" => o.first = number(value()?)?,
            "--rules" => o.rules = rules(&value()?)?,
            "--merge" => {
                o.merge.push(PathBuf::from(value()?));
                o.merge.extend(args.by_ref().map(PathBuf::from));
            }
            "--agent-command" => {
                o.agent_command.push(value()?);
                o.agent_command.extend(args.by_ref());
            }
            "--agent-timeout" => o.agent_timeout = number(value()?)?.max(1),
            "--threads" => o.threads = number(value()?)?.clamp(1, 64) as u32,
            "--smoke" => {
                o.replications = 1;
                o.setup = Setup {
                    candidates: 2,
                    holdout: 10,
                    gate_questions: 10,
                };
            }
            other => return Err(format!("unknown option {other}")),
        }
    }
    if o.setup.candidates == 0 || o.setup.holdout == 0 || o.setup.gate_questions == 0 {
        return Err("--candidates, --holdout and --gate-questions must be at least 1".into());
    }
    if !o.temperature.is_finite() || o.temperature < 0.0 {
        return Err("--temperature must be a number >= 0".into());
    }
    Ok(o)
}

fn responder(o: &Options) -> Result<(Responder, String), String> {
    if let Some((program, args)) = o.agent_command.split_first() {
        let mut config = SubprocessConfig::new(program);
        config.args = args.to_vec();
        config.question_timeout = std::time::Duration::from_secs(o.agent_timeout);
        let runner = SubprocessRunner::new(config).map_err(|e| e.to_string())?;
        let shown = o.agent_command.join(" ");
        return Ok((Responder::Program(runner), format!("the program `{shown}`")));
    }
    if let Some(url) = &o.base_url {
        let model = o.model.clone().ok_or("--base-url needs --model NAME")?;
        let mut config = OpenAiConfig::new(url.clone(), model.clone());
        config.api_key_env = o.api_key_env.clone();
        config.max_concurrency = 1;
        let llm = OpenAiProvider::new(config).map_err(|e| e.to_string())?;
        return Ok((Responder::Model(Arc::new(llm)), format!("{model} at {url}")));
    }
    let config = match &o.model_file {
        Some(path) => LocalConfig::new(path.clone()),
        None => LocalConfig::default_model().map_err(|e| e.to_string())?,
    }
    .with_slots(1)
    .with_threads(o.threads);
    let config = match &o.chat_template {
        Some(name) => config.with_chat_template(name.clone()),
        None => config,
    };
    let llm = LocalLlm::load(config)
        .map_err(|e| format!("{e} (fetch the default model with `cargo xtask fetch-model`)"))?;
    let name = llm.model_name().to_owned();
    Ok((
        Responder::Model(Arc::new(llm)),
        format!("{name} (embedded llama.cpp)"),
    ))
}

/// Appends one rule's tally of replication `rep` to `tallies.jsonl`.
fn append_tally(o: &Options, rep: u64, rule: Rule, tally: &bench::Tally) -> std::io::Result<()> {
    use std::io::Write as _;
    std::fs::create_dir_all(&o.out)?;
    let line = serde_json::json!({"rep": rep, "rule": rule.label(), "tally": tally});
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(o.out.join("tallies.jsonl"))?;
    writeln!(file, "{line}")
}

/// `--rules a,b,...`: the rules named, by [`Rule::id`], in the order of [`Rule::all`].
fn rules(names: &str) -> Result<Vec<Rule>, String> {
    let all = Rule::all();
    let mut wanted: BTreeSet<&str> = names.split(',').map(str::trim).collect();
    let chosen: Vec<Rule> = all
        .iter()
        .copied()
        .filter(|rule| wanted.remove(rule.id().as_str()))
        .collect();
    if let Some(unknown) = wanted.first() {
        let known: Vec<String> = all.iter().map(|r| r.id()).collect();
        return Err(format!(
            "--rules: unknown rule {unknown:?} (one of {})",
            known.join(", ")
        ));
    }
    if chosen.is_empty() {
        return Err("--rules needs at least one rule".into());
    }
    Ok(chosen)
}

/// `--merge`: the table and the plot of the tallies in `o.merge`, one per rule and
/// replication (a replication seen twice counts once; one that not every rule finished, as a
/// process stopped mid-replication leaves it, is left out and named).
fn merge(o: &Options) -> Result<(), String> {
    let mut rows: Vec<Row> = Rule::all()
        .into_iter()
        .map(|rule| Row {
            rule,
            tallies: Vec::new(),
        })
        .collect();
    let mut lines: Vec<(String, u64, bench::Tally)> = Vec::new();
    for path in &o.merge {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        for (n, line) in text.lines().enumerate() {
            let value: serde_json::Value = serde_json::from_str(line)
                .map_err(|e| format!("{}:{}: {e}", path.display(), n + 1))?;
            let label = value["rule"].as_str().unwrap_or_default().to_owned();
            let rep = value["rep"].as_u64().unwrap_or_default();
            let rule = Rule::by_label(&label).ok_or(format!(
                "{}:{}: unknown rule {label:?}",
                path.display(),
                n + 1
            ))?;
            let tally: bench::Tally = serde_json::from_value(value["tally"].clone())
                .map_err(|e| format!("{}:{}: {e}", path.display(), n + 1))?;
            lines.push((rule.label(), rep, tally));
        }
    }
    let labels: BTreeSet<&str> = lines.iter().map(|(label, _, _)| label.as_str()).collect();
    let mut rules_of: BTreeMap<u64, BTreeSet<&str>> = BTreeMap::new();
    for (label, rep, _) in &lines {
        rules_of.entry(*rep).or_default().insert(label.as_str());
    }
    let (reps, unfinished): (BTreeSet<u64>, BTreeSet<u64>) =
        rules_of.keys().partition(|rep| rules_of[*rep] == labels);
    let mut seen = BTreeSet::new();
    for (label, rep, tally) in &lines {
        if reps.contains(rep)
            && seen.insert((label.as_str(), *rep))
            && let Some(row) = rows.iter_mut().find(|r| r.rule.label() == *label)
        {
            row.tallies.push(tally.clone());
        }
    }
    rows.retain(|r| !r.tallies.is_empty());
    let mut header = format!(
        "{} candidates per run; replications {reps:?} merged from {} file(s).\n",
        o.setup.candidates,
        o.merge.len()
    );
    if !unfinished.is_empty() {
        header.push_str(&format!(
            "Left out, not finished by every rule: replications {unfinished:?}.\n"
        ));
    }
    write_outputs(o, &header, &rows, "").map_err(|e| e.to_string())?;
    println!("{header}\n{}", table(&rows, o.setup.candidates));
    Ok(())
}

fn write_outputs(o: &Options, header: &str, rows: &[Row], extra: &str) -> std::io::Result<()> {
    std::fs::create_dir_all(&o.out)?;
    let md = format!("{header}\n{}\n{extra}", table(rows, o.setup.candidates));
    std::fs::write(o.out.join("results.md"), md)?;
    let title = format!(
        "False commits against rollouts ({} candidates per run)",
        o.setup.candidates
    );
    std::fs::write(
        o.out.join("false_commits.svg"),
        svg(rows, o.setup.candidates, &title),
    )
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::process::ExitCode {
    let o = match parse() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("gate_real: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    let bench = match Bench::shipped() {
        Ok(b) => b,
        Err(e) => {
            eprintln!("gate_real: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    if !o.merge.is_empty() {
        return match merge(&o) {
            Ok(()) => std::process::ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("gate_real: {e}");
                std::process::ExitCode::FAILURE
            }
        };
    }
    let (responder, name) = match responder(&o) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("gate_real: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let shared = Shared::new(responder, &bench, o.temperature, o.max_tokens);
    let shared = if o.show_replies {
        shared.showing_replies()
    } else {
        shared
    };
    let command: Vec<String> = std::env::args().skip(1).collect();
    let started = Instant::now();
    let mut rows: Vec<Row> = o
        .rules
        .iter()
        .map(|&rule| Row {
            rule,
            tallies: Vec::new(),
        })
        .collect();
    let (holdout, _) = split(&bench, o.setup);
    let mut effects: Vec<Vec<(String, bench::Kind, f64)>> = Vec::new();
    let mut done = 0;
    for rep in o.first..o.first.saturating_add(o.replications) {
        done += 1;
        if o.effects {
            effects.push(bench::edit_effects(&shared, &bench, rep, &holdout).await);
        }
        for row in &mut rows {
            match replicate(&shared, &bench, o.setup, rep, row.rule).await {
                Ok(t) => {
                    println!(
                        "rep {rep} | {} | committed [{}] | held-out {:.3} -> {:.3} | {} rollouts",
                        row.rule.label(),
                        t.committed.join(", "),
                        t.before,
                        t.after,
                        t.rollouts
                    );
                    if let Err(e) = append_tally(&o, rep, row.rule, &t) {
                        eprintln!("gate_real: cannot write to {}: {e}", o.out.display());
                        return std::process::ExitCode::FAILURE;
                    }
                    row.tallies.push(t);
                }
                Err(e) => {
                    eprintln!("gate_real: {}: {e}", row.rule.label());
                    if let Some(error) = shared.last_error() {
                        eprintln!("gate_real: the last failed answer: {error}");
                    }
                    return std::process::ExitCode::FAILURE;
                }
            }
        }
        let (generated, seconds, errors) = shared.generated();
        let header = format!(
            "Agent: {name}, temperature {}, at most {} reply tokens. {} candidates per run, \
             {} held-out and {} gate questions, {} replication(s) done. {generated} answers \
             generated in {seconds:.0} model seconds ({errors} errors), {:.0} s wall time.\n\
             Command: `cargo xtask bench gate-real {}`\n",
            o.temperature,
            o.max_tokens,
            o.setup.candidates,
            o.setup.holdout,
            o.setup.gate_questions,
            done,
            started.elapsed().as_secs_f64(),
            command.join(" ")
        );
        let mut extra = String::new();
        if let Some(first) = effects.first() {
            extra.push_str(
                "Each edit alone against the starting skill, held-out accuracy difference:\n\n| edit | kind | effect |\n|---|---|---|\n",
            );
            for (i, (id, kind, _)) in first.iter().enumerate() {
                let values: Vec<f64> = effects
                    .iter()
                    .filter_map(|e| e.get(i))
                    .map(|e| e.2)
                    .collect();
                let (m, se) = mean_se(&values);
                // One replication has no spread to show.
                let spread = if values.len() > 1 {
                    format!(" ± {se:.3}")
                } else {
                    String::new()
                };
                extra.push_str(&format!("| {id} | {kind:?} | {m:+.3}{spread} |\n"));
            }
        }
        if let Err(e) = write_outputs(&o, &header, &rows, &extra) {
            eprintln!("gate_real: cannot write to {}: {e}", o.out.display());
            return std::process::ExitCode::FAILURE;
        }
        println!("\n{header}\n{}\n{extra}", table(&rows, o.setup.candidates));
    }
    std::process::ExitCode::SUCCESS
}
