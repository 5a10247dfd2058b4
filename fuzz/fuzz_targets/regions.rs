//! Fuzzes the region parsers and writers: no panic, and every `Ok` result
//! is consistent with the markers of the text.
#![no_main]

mod common;

use evolution_patch::{
    APPENDIX_END, APPENDIX_START, SLOW_UPDATE_END, SLOW_UPDATE_START, append_to_appendix,
    appendix_region_bounds, extract_appendix_notes, replace_appendix_notes, replace_slow_update,
    slow_update_inner, slow_update_region_bounds,
};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: (String, String, Vec<String>)| {
    let doc = common::expand(&input.0);
    let guidance = common::expand(&input.1);
    let notes: Vec<String> = input.2.iter().take(16).map(|n| common::expand(n)).collect();

    for (bounds, start, end) in [
        (appendix_region_bounds(&doc), APPENDIX_START, APPENDIX_END),
        (
            slow_update_region_bounds(&doc),
            SLOW_UPDATE_START,
            SLOW_UPDATE_END,
        ),
    ] {
        match bounds {
            Ok(Some(range)) => {
                let region = &doc[range];
                assert!(region.starts_with(start) && region.ends_with(end));
                assert_eq!(doc.matches(start).count(), 1);
                assert_eq!(doc.matches(end).count(), 1);
            }
            Ok(None) => assert!(!doc.contains(start) && !doc.contains(end)),
            Err(err) => assert!(err.line() >= 1 && (err.marker() == start || err.marker() == end)),
        }
    }
    let _ = slow_update_inner(&doc);
    let _ = extract_appendix_notes(&doc);
    if let Ok(out) = replace_slow_update(&doc, &guidance) {
        assert_eq!(out.matches(SLOW_UPDATE_START).count(), 1);
        assert!(slow_update_inner(&out).is_ok());
    }
    if let Ok(out) = append_to_appendix(&doc, &notes) {
        assert!(extract_appendix_notes(&out).is_ok());
    }
    if let Ok(out) = replace_appendix_notes(&doc, &notes) {
        let read = extract_appendix_notes(&out).unwrap_or_default();
        assert!(read.len() <= notes.len());
    }
});
