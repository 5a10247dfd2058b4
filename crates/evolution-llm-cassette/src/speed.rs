//! How fast a model answered: the token counts and times of finished calls, read from the
//! responses of a cassette or a run's journal, turned into an estimate of how long other calls
//! take.

use std::io::{BufRead as _, Read as _};
use std::path::Path;

use evolution_types::LlmResponse;
use serde::Deserialize;

/// Most bytes of a cassette [`MeasuredSpeed::of_file`] reads (16 MiB): the speed of the first
/// calls is the speed of the model.
const READ_LIMIT: u64 = 16 * 1024 * 1024;

/// The measured calls of one model: token counts and times summed over the calls that took a
/// measurable time (answers from a recording, and calls that report no time, are left out).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MeasuredSpeed {
    /// Calls measured.
    pub calls: u64,
    /// Their prompt tokens.
    pub prompt_tokens: u64,
    /// Their completion tokens.
    pub completion_tokens: u64,
    /// Their wall time, in milliseconds.
    pub latency_ms: u64,
    /// Of these, the calls that also report a time to the first token (streaming servers, the
    /// embedded model), which splits prompt reading from generation.
    pub split_calls: u64,
    /// The prompt tokens of the split calls.
    pub split_prompt_tokens: u64,
    /// The completion tokens of the split calls.
    pub split_completion_tokens: u64,
    /// The split calls' time to the first token, in milliseconds.
    pub split_ttft_ms: u64,
    /// The split calls' wall time, in milliseconds.
    pub split_latency_ms: u64,
}

impl MeasuredSpeed {
    /// Counts `response` when it took a measurable time: not answered from a recording, with
    /// a wall time and some tokens.
    pub fn add(&mut self, response: &LlmResponse) {
        let tokens = response
            .prompt_tokens
            .saturating_add(response.completion_tokens);
        if response.cache_hit || response.latency_ms == 0 || tokens == 0 {
            return;
        }
        self.calls = self.calls.saturating_add(1);
        self.prompt_tokens = self.prompt_tokens.saturating_add(response.prompt_tokens);
        self.completion_tokens = self
            .completion_tokens
            .saturating_add(response.completion_tokens);
        self.latency_ms = self.latency_ms.saturating_add(response.latency_ms);
        if let Some(ttft) = response
            .ttft_ms
            .filter(|t| *t > 0 && *t < response.latency_ms)
        {
            self.split_calls = self.split_calls.saturating_add(1);
            self.split_prompt_tokens = self
                .split_prompt_tokens
                .saturating_add(response.prompt_tokens);
            self.split_completion_tokens = self
                .split_completion_tokens
                .saturating_add(response.completion_tokens);
            self.split_ttft_ms = self.split_ttft_ms.saturating_add(ttft);
            self.split_latency_ms = self.split_latency_ms.saturating_add(response.latency_ms);
        }
    }

    /// Both sets of calls counted together.
    pub fn merge(&mut self, other: &MeasuredSpeed) {
        let sum = |a: &mut u64, b: u64| *a = a.saturating_add(b);
        sum(&mut self.calls, other.calls);
        sum(&mut self.prompt_tokens, other.prompt_tokens);
        sum(&mut self.completion_tokens, other.completion_tokens);
        sum(&mut self.latency_ms, other.latency_ms);
        sum(&mut self.split_calls, other.split_calls);
        sum(&mut self.split_prompt_tokens, other.split_prompt_tokens);
        sum(
            &mut self.split_completion_tokens,
            other.split_completion_tokens,
        );
        sum(&mut self.split_ttft_ms, other.split_ttft_ms);
        sum(&mut self.split_latency_ms, other.split_latency_ms);
    }

    /// Prompt plus completion tokens per second over all measured calls; `None` before any.
    pub fn tokens_per_second(&self) -> Option<f64> {
        per_second(
            self.prompt_tokens.saturating_add(self.completion_tokens),
            self.latency_ms,
        )
    }

    /// Prompt tokens read per second and completion tokens generated per second, from the
    /// calls that report a time to the first token; `None` without such calls.
    pub fn split_per_second(&self) -> Option<(f64, f64)> {
        let prompt = per_second(self.split_prompt_tokens, self.split_ttft_ms)?;
        let generation = per_second(
            self.split_completion_tokens,
            self.split_latency_ms.saturating_sub(self.split_ttft_ms),
        )?;
        Some((prompt, generation))
    }

    /// Seconds that calls of `prompt_tokens` and `completion_tokens` in all take one at a time
    /// at this speed: prompt and generation apart when the calls split them, else at the
    /// blended [`tokens_per_second`](Self::tokens_per_second). `None` when nothing was
    /// measured.
    pub fn seconds_for(&self, prompt_tokens: u64, completion_tokens: u64) -> Option<f64> {
        let as_f64 = |n: u64| n as f64;
        if let Some((prompt, generation)) = self.split_per_second() {
            return Some(as_f64(prompt_tokens) / prompt + as_f64(completion_tokens) / generation);
        }
        let blended = self.tokens_per_second()?;
        Some(as_f64(prompt_tokens.saturating_add(completion_tokens)) / blended)
    }

    /// The measured calls of `model` in the cassette or journal at `path` (its first 16 MiB;
    /// lines that are not entries are skipped, as a torn last line is): the calls recorded for
    /// `model`, or answered by it ([`answered_by`]). `None` when the file cannot be read.
    pub fn of_file(path: &Path, model: &str) -> Option<MeasuredSpeed> {
        #[derive(Deserialize)]
        struct Line {
            model: String,
            response: LlmResponse,
        }
        let file = std::fs::File::open(path).ok()?;
        let mut reader = std::io::BufReader::new(file.take(READ_LIMIT));
        let mut speed = MeasuredSpeed::default();
        let mut line = Vec::new();
        loop {
            line.clear();
            match reader.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            if let Ok(entry) = serde_json::from_slice::<Line>(&line)
                && (entry.model == model || answered_by(&entry.response.model, model))
            {
                speed.add(&entry.response);
            }
        }
        Some(speed)
    }
}

/// Whether the model a response names, `answered`, is the configured `model`: the same name,
/// or the name followed by a dated version (`gpt-4o-2024-08-06` for `gpt-4o`, not
/// `gpt-4o-mini`).
///
/// ```
/// use evolution_llm_cassette::answered_by;
/// assert!(answered_by("gpt-4o-2024-08-06", "gpt-4o"));
/// assert!(!answered_by("gpt-4o-mini", "gpt-4o"));
/// assert!(!answered_by("", ""));
/// ```
pub fn answered_by(answered: &str, model: &str) -> bool {
    if model.is_empty() {
        return false;
    }
    match answered.strip_prefix(model) {
        Some("") => true,
        Some(rest) => rest
            .strip_prefix('-')
            .is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit())),
        None => false,
    }
}

/// `count` per second of `ms` milliseconds; `None` when either is 0.
fn per_second(count: u64, ms: u64) -> Option<f64> {
    (count > 0 && ms > 0).then(|| count as f64 * 1000.0 / ms as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn response(prompt: u64, completion: u64, latency: u64, ttft: Option<u64>) -> LlmResponse {
        LlmResponse {
            prompt_tokens: prompt,
            completion_tokens: completion,
            latency_ms: latency,
            ttft_ms: ttft,
            ..LlmResponse::default()
        }
    }

    #[test]
    fn calls_with_a_first_token_time_split_prompt_from_generation() {
        let mut speed = MeasuredSpeed::default();
        // 1000 prompt tokens in 1 s, 100 completion tokens in 2 s.
        speed.add(&response(1000, 100, 3000, Some(1000)));
        assert_eq!(speed.split_per_second(), Some((1000.0, 50.0)));
        assert_eq!(speed.seconds_for(3000, 600), Some(15.0));
        // Replays, calls without a time or tokens are no measurement.
        let before = speed;
        speed.add(&LlmResponse {
            cache_hit: true,
            ..response(10, 10, 10, None)
        });
        speed.add(&response(10, 10, 0, None));
        speed.add(&response(0, 0, 10, None));
        assert_eq!(speed, before);
    }

    #[test]
    fn calls_without_a_first_token_time_give_a_blended_speed() {
        let mut speed = MeasuredSpeed::default();
        assert_eq!(speed.seconds_for(10, 10), None);
        speed.add(&response(900, 100, 2000, None));
        assert_eq!(speed.split_per_second(), None);
        assert_eq!(speed.tokens_per_second(), Some(500.0));
        assert_eq!(speed.seconds_for(3000, 600), Some(7.2));
        let mut twice = speed;
        twice.merge(&speed);
        assert_eq!(twice.calls, 2);
        assert_eq!(twice.tokens_per_second(), Some(500.0));
    }
}
