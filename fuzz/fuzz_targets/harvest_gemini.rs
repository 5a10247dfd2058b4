//! Fuzzes the Gemini CLI reader: the input a chat file. No input may panic or overflow the
//! stack.
#![no_main]

#[path = "harvest_common.rs"]
mod harvest_common;

use evolution_harvest::gemini::read_gemini_session;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok((session, _)) = read_gemini_session(&text, "fuzz", harvest_common::policy()) {
        harvest_common::check(&session);
    }
});
