//! Fuzzes the JSON extraction of LLM replies: no input may panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(object) = evolution_diagnose::json::extract_json_from_response(&text) {
        // Whatever was read is an object; an empty one only from strict parsing.
        let _ = object.len();
    }
    let _ = evolution_diagnose::json::parse_json_object(&text);
    let _ = evolution_diagnose::json::strip_think_blocks(&text);
});
