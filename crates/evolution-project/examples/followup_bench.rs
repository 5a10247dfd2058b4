//! Benchmark: how well corrections are recognised in a user's follow-up, by the heuristics that
//! need no model and by the follow-up judge.
//!
//! The corpus is `crates/evolution-harvest/tests/data/followups.jsonl`: follow-ups written for
//! this project, each a session of three turns (a request, the agent's answer, the user's
//! follow-up) labelled `correction` or `other`, in a `tune` part (read while the heuristics'
//! cues were chosen) and a `held-out` part (written after they were fixed, never read to change
//! them). For each part and for the whole corpus it prints precision and recall of:
//!
//! - the heuristics (`evolution_harvest::corrections::find_corrections`, as `harvest` runs
//!   them by default);
//! - the follow-up judge (`evolution_harvest::followup`, its prompt, reply reading and quote
//!   check as `harvest --judge-followups` runs them) with a scripted capable model: a provider
//!   that answers from the corpus's labels, quoting the follow-up. It measures the pipeline
//!   around the model (prompt building, reading the reply, setting aside a quote the user never
//!   wrote), not a model;
//! - the follow-up judge with the embedded local model, when its file is present (the default
//!   model in the model cache, or `--model-file PATH`), on the held-out part (`--local-all`: on
//!   the whole corpus; `--local-limit N`: on its first N sessions). `--no-local` skips it.
//!
//! Run with `cargo xtask bench followups [--show-misses] [--no-local] [--local-all]
//! [--local-limit N] [--model-file PATH] [--threads N]`.

#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Instant;

use evolution_harvest::corrections::find_corrections;
use evolution_harvest::followup::{
    FollowupVerdict, followup_messages, judge_followups, quotes_a_followup,
};
use evolution_harvest::session::{Role, Session, SourceKind, Turn};
use evolution_harvest::signals::DEFAULT_RETRY_SIMILARITY;
#[cfg(feature = "local")]
use evolution_llm_local::{LocalConfig, LocalLlm};
use evolution_testkit::ScriptedLlm;
use evolution_types::LlmProvider;
use serde::Deserialize;

const CORPUS: &str = include_str!("../../evolution-harvest/tests/data/followups.jsonl");

#[derive(Debug, Deserialize)]
struct Item {
    id: String,
    label: String,
    split: String,
    request: String,
    answer: String,
    followup: String,
}

impl Item {
    fn is_correction(&self) -> bool {
        self.label == "correction"
    }

    fn session(&self) -> Session {
        let mut session = Session::new(SourceKind::ClaudeCode, &self.id);
        for (role, text) in [
            (Role::User, &self.request),
            (Role::Assistant, &self.answer),
            (Role::User, &self.followup),
        ] {
            session.turns.push(Turn {
                role,
                text: text.clone(),
                timestamp: None,
                subagent: None,
            });
        }
        session
    }
}

/// True and false positives and negatives.
#[derive(Debug, Default, Clone, Copy)]
struct Tally {
    tp: u32,
    fp: u32,
    fn_: u32,
    tn: u32,
}

impl Tally {
    fn add(&mut self, found: bool, truth: bool) {
        match (found, truth) {
            (true, true) => self.tp += 1,
            (true, false) => self.fp += 1,
            (false, true) => self.fn_ += 1,
            (false, false) => self.tn += 1,
        }
    }

    fn line(&self, name: &str) -> String {
        let ratio = |a: u32, b: u32| {
            if b == 0 {
                "-".to_owned()
            } else {
                format!("{:.3}", f64::from(a) / f64::from(b))
            }
        };
        format!(
            "| {name} | {} | {} | {} | {} | {} | {} |",
            self.tp + self.fp + self.fn_ + self.tn,
            ratio(self.tp, self.tp + self.fp),
            ratio(self.tp, self.tp + self.fn_),
            self.tp,
            self.fp,
            self.fn_
        )
    }
}

struct Options {
    show_misses: bool,
    local: bool,
    local_all: bool,
    local_limit: Option<usize>,
    model_file: Option<PathBuf>,
    threads: u32,
}

fn parse() -> Result<Options, String> {
    let mut o = Options {
        show_misses: false,
        local: true,
        local_all: false,
        local_limit: None,
        model_file: None,
        threads: 1,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or(format!("{arg} needs a value"));
        match arg.as_str() {
            "--show-misses" => o.show_misses = true,
            "--no-local" => o.local = false,
            "--local-all" => o.local_all = true,
            "--local-limit" => {
                o.local_limit = Some(value()?.parse().map_err(|e| format!("{e}"))?);
            }
            "--model-file" => o.model_file = Some(PathBuf::from(value()?)),
            "--threads" => o.threads = value()?.parse().map_err(|e| format!("{e}"))?,
            other => return Err(format!("unknown option {other:?}")),
        }
    }
    Ok(o)
}

/// The parts reported: each split, then the whole corpus.
const PARTS: [&str; 3] = ["tune", "held-out", "all"];

fn in_part(item: &Item, part: &str) -> bool {
    part == "all" || item.split == part
}

/// Whether the judge's verdict on `item` is a correction, as `harvest` reads it: a
/// `correction` whose quote the user wrote.
async fn judged(llm: &dyn LlmProvider, item: &Item) -> Result<bool, String> {
    let session = item.session();
    let Some(messages) = followup_messages(&session) else {
        return Ok(false);
    };
    let read = judge_followups(llm, &messages)
        .await
        .map_err(|e| e.to_string())?;
    Ok(read.verdict == FollowupVerdict::Correction && quotes_a_followup(&session, &read.evidence))
}

/// A provider that answers the judge from the corpus's labels, quoting the follow-up.
fn scripted(items: &[Item]) -> ScriptedLlm {
    let labels: HashMap<String, bool> = items
        .iter()
        .map(|i| (i.followup.trim().to_owned(), i.is_correction()))
        .collect();
    ScriptedLlm::from_fn(move |request| {
        let prompt = request.last_user();
        let followup = prompt
            .rsplit("<message>\n")
            .next()
            .and_then(|rest| rest.split("\n</message>").next())
            .unwrap_or_default()
            .trim()
            .to_owned();
        let verdict = match labels.get(&followup) {
            Some(true) => "correction",
            Some(false) => "satisfied",
            None => "unclear",
        };
        Ok(serde_json::json!({"verdict": verdict, "evidence": followup}).to_string())
    })
}

fn print_table(title: &str, tallies: &[(String, Tally)]) {
    println!("\n{title}\n");
    println!(
        "| part | sessions | precision | recall | true corrections | false corrections | missed |"
    );
    println!("|---|---|---|---|---|---|---|");
    for (part, tally) in tallies {
        println!("{}", tally.line(part));
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::process::ExitCode {
    let o = match parse() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("followup_bench: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    let items: Vec<Item> = match CORPUS.lines().map(serde_json::from_str).collect() {
        Ok(items) => items,
        Err(e) => {
            eprintln!("followup_bench: the corpus does not read: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let corrections = items.iter().filter(|i| i.is_correction()).count();
    println!(
        "corpus: {} follow-ups ({corrections} corrections, {} others); tune {}, held-out {}",
        items.len(),
        items.len() - corrections,
        items.iter().filter(|i| i.split == "tune").count(),
        items.iter().filter(|i| i.split == "held-out").count(),
    );

    // The heuristics.
    let started = Instant::now();
    let found: Vec<bool> = items
        .iter()
        .map(|i| !find_corrections(&i.session(), DEFAULT_RETRY_SIMILARITY).is_empty())
        .collect();
    let per_session = started.elapsed() / u32::try_from(items.len().max(1)).unwrap_or(1);
    let tallies: Vec<(String, Tally)> = PARTS
        .iter()
        .map(|part| {
            let mut tally = Tally::default();
            for (item, found) in items.iter().zip(&found) {
                if in_part(item, part) {
                    tally.add(*found, item.is_correction());
                }
            }
            ((*part).to_owned(), tally)
        })
        .collect();
    print_table(
        &format!("Heuristics (no model; {per_session:?} a session)"),
        &tallies,
    );
    if o.show_misses {
        for (item, found) in items.iter().zip(&found) {
            if *found != item.is_correction() {
                let what = if *found { "false correction" } else { "missed" };
                println!(
                    "  {what} [{}] {}: {}",
                    item.split,
                    item.id,
                    item.followup.escape_debug()
                );
            }
        }
    }

    // The judge, with a scripted capable model.
    let llm = scripted(&items);
    let mut tallies: Vec<(String, Tally)> = PARTS
        .iter()
        .map(|p| ((*p).to_owned(), Tally::default()))
        .collect();
    for item in &items {
        let found = match judged(&llm, item).await {
            Ok(found) => found,
            Err(e) => {
                eprintln!("followup_bench: the scripted judge failed: {e}");
                return std::process::ExitCode::FAILURE;
            }
        };
        for (part, tally) in &mut tallies {
            if in_part(item, part) {
                tally.add(found, item.is_correction());
            }
        }
    }
    print_table(
        "Follow-up judge, scripted capable model (answers from the labels: measures the pipeline)",
        &tallies,
    );

    // The judge, with the embedded local model.
    if !o.local {
        return std::process::ExitCode::SUCCESS;
    }
    local_judge(&o, &items).await
}

/// The judge with the embedded local model, on the held-out part (or as `o` says).
#[cfg(feature = "local")]
async fn local_judge(o: &Options, items: &[Item]) -> std::process::ExitCode {
    let config = match &o.model_file {
        Some(path) => LocalConfig::new(path.clone()),
        None => match LocalConfig::default_model() {
            Ok(config) => config,
            Err(e) => {
                println!("\nFollow-up judge, local model: skipped ({e})");
                return std::process::ExitCode::SUCCESS;
            }
        },
    };
    if !config.model_path.is_file() {
        println!(
            "\nFollow-up judge, local model: skipped (no model file at {}; `cargo xtask \
             fetch-model` fetches the default one)",
            config.model_path.display()
        );
        return std::process::ExitCode::SUCCESS;
    }
    let llm = match LocalLlm::load(config.with_slots(1).with_threads(o.threads)) {
        Ok(llm) => llm,
        Err(e) => {
            eprintln!("followup_bench: the local model does not load: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let chosen: Vec<&Item> = items
        .iter()
        .filter(|i| o.local_all || i.split == "held-out")
        .take(o.local_limit.unwrap_or(usize::MAX))
        .collect();
    let started = Instant::now();
    let mut tally = Tally::default();
    let mut errors = 0u32;
    for item in &chosen {
        match judged(&llm, item).await {
            Ok(found) => tally.add(found, item.is_correction()),
            Err(e) => {
                errors += 1;
                eprintln!("followup_bench: {}: {e}", item.id);
            }
        }
    }
    let per_session = started.elapsed() / u32::try_from(chosen.len().max(1)).unwrap_or(1);
    let part = if o.local_all { "all" } else { "held-out" };
    print_table(
        &format!(
            "Follow-up judge, local model {} ({per_session:?} a session, {errors} errors)",
            llm.model_name()
        ),
        &[(format!("{part} ({} sessions)", chosen.len()), tally)],
    );
    std::process::ExitCode::SUCCESS
}

/// Without the `local` feature there is no embedded model to ask.
#[cfg(not(feature = "local"))]
async fn local_judge(_: &Options, _: &[Item]) -> std::process::ExitCode {
    println!("\nFollow-up judge, local model: skipped (built without the `local` feature)");
    std::process::ExitCode::SUCCESS
}
