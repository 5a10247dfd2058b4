//! Fuzzes the Claude Code reader: each line of the input a transcript line (a line after
//! `\x01` a side file's). No input may panic or overflow the stack.
#![no_main]

#[path = "harvest_common.rs"]
mod harvest_common;

use evolution_harvest::claude_code::ClaudeCodeReader;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut reader = ClaudeCodeReader::new("fuzz", harvest_common::policy());
    for (n, line) in text.lines().enumerate() {
        if let Some(agent) = line.strip_prefix('\u{1}') {
            reader.start_side_file(agent);
            continue;
        }
        if reader.push_line(n + 1, line).is_err() {
            return;
        }
    }
    let (session, _) = reader.finish();
    harvest_common::check(&session);
});
