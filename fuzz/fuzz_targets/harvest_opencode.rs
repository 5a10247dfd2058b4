//! Fuzzes the OpenCode reader. Messages are separated by blank lines; in each, the first line
//! is the message's `data`, each later line a part's. No input may panic or overflow the stack.
#![no_main]

#[path = "harvest_common.rs"]
mod harvest_common;

use evolution_harvest::opencode::{OpenCodeMessageRows, OpenCodeSessionRow, read_opencode_session};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let messages: Vec<OpenCodeMessageRows> = text
        .split("\n\n")
        .map(|block| {
            let mut lines = block.lines();
            OpenCodeMessageRows {
                time_created: Some(1_762_074_000_000),
                data: lines.next().unwrap_or_default().to_owned(),
                parts: lines.map(str::to_owned).collect(),
            }
        })
        .collect();
    let row = OpenCodeSessionRow {
        id: "fuzz".to_owned(),
        directory: "/w".to_owned(),
        time_created: Some(0),
        time_updated: None,
    };
    if let Ok((session, _)) = read_opencode_session(&row, &messages, harvest_common::policy()) {
        harvest_common::check(&session);
    }
});
