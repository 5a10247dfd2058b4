//! Fuzzes the Codex reader: each line of the input a rollout line. No input may panic or
//! overflow the stack.
#![no_main]

#[path = "harvest_common.rs"]
mod harvest_common;

use evolution_harvest::codex::CodexReader;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut reader = CodexReader::new("fuzz", harvest_common::policy());
    for (n, line) in text.lines().enumerate() {
        if reader.push_line(n + 1, line).is_err() {
            return;
        }
    }
    let (session, _) = reader.finish();
    harvest_common::check(&session);
});
