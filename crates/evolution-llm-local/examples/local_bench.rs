//! Benchmark: prompt and generation tokens/s at 1 and 2 threads, the grammar's overhead, and
//! generation under JSON schemas at length.
//!
//! Run with `cargo xtask bench local [runs] [speed] [edits] [schemas]` (needs
//! `cargo xtask fetch-model`; dev profile, since llama.cpp itself is optimised in every
//! profile); without case names it runs all three.
//! - `speed`: prompt speed is prompt tokens over the time to the first token; generation speed
//!   is the tokens after the first over the time after it. The grammar overhead compares
//!   generation speed under the kernel's `evolve.skill` reply schema with free generation, in
//!   the same run (`runs` runs per figure, median; default 3).
//! - `edits`: all twenty requests for skill edits under the edits schema (the test suite sends
//!   two), counting the replies the schema admits.
//! - `schemas`: every kernel reply schema, asked about two situations each (the test suite
//!   asks one), counting the replies the kernel reads.
//!
//! Each generation case prints its prompts, valid JSON replies, seconds and completion tokens
//! per second (over the case's wall time), and the reason for each invalid reply.

#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::time::Instant;

use evolution_llm_local::{LocalConfig, LocalLlm};
use evolution_types::{ChatMessage, ChatOptions, LlmProvider, LlmResponse};

#[path = "support/replies.rs"]
mod replies;

/// Longest reply excerpt printed beside an invalid reply, in characters.
const SHOWN_CHARS: usize = 120;

fn rates(r: &LlmResponse) -> (f64, f64) {
    let ttft = r.ttft_ms.unwrap_or(0).max(1) as f64 / 1000.0;
    let gen_time = (r.latency_ms.saturating_sub(r.ttft_ms.unwrap_or(0))).max(1) as f64 / 1000.0;
    (
        r.prompt_tokens as f64 / ttft,
        r.completion_tokens.saturating_sub(1) as f64 / gen_time,
    )
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

/// What one generation case did: prompts sent, replies valid, wall time, tokens generated,
/// and why each invalid reply was refused.
#[derive(Default)]
struct Tally {
    prompts: usize,
    valid: usize,
    seconds: f64,
    tokens: u64,
    problems: Vec<String>,
}

impl Tally {
    /// Sends one request and checks its reply with `check` (`None` when valid).
    async fn ask(
        &mut self,
        llm: &LocalLlm,
        label: &str,
        messages: &[ChatMessage],
        options: &ChatOptions,
        check: impl Fn(&str) -> Option<String>,
    ) {
        let started = Instant::now();
        let result = llm.chat(messages, options).await;
        self.seconds += started.elapsed().as_secs_f64();
        self.prompts += 1;
        match result {
            Ok(reply) => {
                self.tokens += reply.completion_tokens;
                match check(&reply.content) {
                    None => self.valid += 1,
                    Some(problem) => {
                        let shown: String = reply
                            .content
                            .chars()
                            .take(SHOWN_CHARS)
                            .flat_map(char::escape_default)
                            .collect();
                        self.problems.push(format!("{label}: {problem}: {shown}"));
                    }
                }
            }
            Err(err) => self.problems.push(format!("{label}: {err}")),
        }
    }

    fn print(&self, case: &str) {
        println!(
            "{case}: {} prompts, {} valid JSON, {:.1} s, {} tokens, {:.1} tokens/s",
            self.prompts,
            self.valid,
            self.seconds,
            self.tokens,
            self.tokens as f64 / self.seconds.max(f64::MIN_POSITIVE)
        );
        for problem in &self.problems {
            println!("  invalid: {problem}");
        }
    }
}

/// All twenty edits requests under the edits schema.
async fn edits_case(llm: &LocalLlm) {
    let mut tally = Tally::default();
    for prompt in replies::EDIT_PROMPTS {
        let (messages, options) = replies::edits_request(prompt);
        tally
            .ask(llm, prompt, &messages, &options, replies::edits_reply_error)
            .await;
    }
    tally.print("edits schema");
}

/// Every kernel schema, each asked about every situation; one line per family of tags.
async fn schemas_case(llm: &LocalLlm) {
    let schemas = replies::kernel_schemas();
    for family in ["evolve.", "judge."] {
        let mut tally = Tally::default();
        for (tag, schema) in schemas.iter().filter(|(tag, _)| tag.starts_with(family)) {
            for case in replies::KERNEL_CASES {
                let (messages, options) = replies::kernel_request(tag, schema, case);
                let check = |reply: &str| replies::kernel_reply_error(schema, reply);
                tally.ask(llm, tag, &messages, &options, check).await;
            }
        }
        tally.print(&format!("kernel schemas {family}*"));
    }
}

async fn load(threads: u32) -> Result<(LocalLlm, std::time::Duration), Box<dyn std::error::Error>> {
    let started = Instant::now();
    let config = LocalConfig::default_model()?.with_threads(threads);
    let llm = tokio::task::spawn_blocking(move || LocalLlm::load(config)).await??;
    Ok((llm, started.elapsed()))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut runs = 3;
    let mut cases: Vec<String> = Vec::new();
    for arg in std::env::args().skip(1) {
        match arg.as_str() {
            "speed" | "edits" | "schemas" => cases.push(arg),
            number => {
                runs = number.parse().map_err(|_| {
                    format!("expected a number of runs or a case (speed, edits, schemas), got {number:?}")
                })?;
            }
        }
    }
    let wants = |case: &str| cases.is_empty() || cases.iter().any(|c| c == case);
    if wants("speed") {
        speed(runs).await?;
    }
    if wants("edits") || wants("schemas") {
        let (llm, _) = load(2).await?;
        if wants("edits") {
            edits_case(&llm).await;
        }
        if wants("schemas") {
            schemas_case(&llm).await;
        }
    }
    Ok(())
}

/// Prompt and generation speed at 1 and 2 threads, free and under the JSON grammar.
async fn speed(runs: usize) -> Result<(), Box<dyn std::error::Error>> {
    let context = "The skill file describes how an agent writes release notes. ".repeat(30);
    let messages = [
        ChatMessage::system("You improve agent skill files."),
        ChatMessage::user(format!(
            "{context}\nPropose edits that make the release notes shorter."
        )),
    ];
    // The schema the kernel attaches to its skill-evolve calls.
    let schema = evolution_evolve::reply_schema("evolve.skill").ok_or("no evolve.skill schema")?;
    let free = ChatOptions::default().with_max_tokens(96);
    let constrained = ChatOptions::default()
        .with_json_schema(schema)
        .with_max_tokens(1024);
    println!("runs per figure: {runs} (median)");
    let mut plain_two = 0.0;
    for threads in [1u32, 2] {
        let (llm, load) = load(threads).await?;
        let (mut pp, mut tg, mut tg_json) = (Vec::new(), Vec::new(), Vec::new());
        let mut prompt_tokens = 0;
        for _ in 0..runs {
            let r = llm.chat(&messages, &free).await?;
            prompt_tokens = r.prompt_tokens;
            let (p, g) = rates(&r);
            pp.push(p);
            tg.push(g);
            let r = llm.chat(&messages, &constrained).await?;
            tg_json.push(rates(&r).1);
        }
        let (pp, tg, tg_json) = (median(pp), median(tg), median(tg_json));
        if threads == 2 {
            plain_two = tg;
        }
        println!(
            "threads={threads}: load {:.0} ms; prompt ({prompt_tokens} tokens) {pp:.0} tok/s; \
             generation {tg:.1} tok/s; generation under the JSON grammar {tg_json:.1} tok/s \
             (grammar overhead {:+.0}%)",
            load.as_secs_f64() * 1000.0,
            (tg / tg_json.max(f64::MIN_POSITIVE) - 1.0) * 100.0
        );
    }
    println!("generation speed at 2 threads: {plain_two:.1} tok/s");
    Ok(())
}
