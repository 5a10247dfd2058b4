//! Benchmark: prompt and generation tokens/s at 1 and 2 threads, and the grammar's overhead.
//!
//! Run with `cargo xtask bench local [runs]` (needs `cargo xtask fetch-model`; dev profile,
//! since llama.cpp itself is optimised in every profile).
//! Prompt speed is prompt tokens over the time to the first token; generation speed is the
//! tokens after the first over the time after it. The grammar overhead compares generation
//! speed under the kernel's `evolve.skill` reply schema with free generation, in the same run.

#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::time::Instant;

use evolution_llm_local::{LocalConfig, LocalLlm};
use evolution_types::{ChatMessage, ChatOptions, LlmProvider, LlmResponse};

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

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let runs: usize = std::env::args().nth(1).map_or(Ok(3), |a| a.parse())?;
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
        let started = Instant::now();
        let config = LocalConfig::default_model()?.with_threads(threads);
        let llm = tokio::task::spawn_blocking(move || LocalLlm::load(config)).await??;
        let load = started.elapsed();
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
