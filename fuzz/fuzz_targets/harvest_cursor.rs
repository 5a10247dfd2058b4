//! Fuzzes the Cursor readers. The input's first line is a composer's `composerData`, each later
//! line `<bubbleId>\t<bubble JSON>`; the whole input is also read as a chat panel's value. No
//! input may panic or overflow the stack, and no bubble gives two turns.
#![no_main]

#[path = "harvest_common.rs"]
mod harvest_common;

use evolution_harvest::cursor::{CursorComposerRows, read_cursor_chat_panel, read_cursor_composer};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut lines = text.lines();
    let composer_data = lines.next().unwrap_or_default().to_owned();
    let bubbles: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once('\t'))
        .map(|(id, v)| (id.to_owned(), v.to_owned()))
        .collect();
    let rows = CursorComposerRows {
        composer_id: "fuzz".to_owned(),
        composer_data,
        bubbles,
        project: Some("/w".to_owned()),
    };
    if let Ok((session, _)) = read_cursor_composer(&rows, harvest_common::policy()) {
        // Each bubble is read once: it gives at most one turn, however many headers name it.
        assert!(session.turns.len() <= rows.bubbles.len().max(inline(&rows)));
        harvest_common::check(&session);
    }
    if let Ok(sessions) = read_cursor_chat_panel(&text, Some("/w"), harvest_common::policy) {
        for (session, _) in &sessions {
            harvest_common::check(session);
        }
    }
});

/// An upper bound on the inline bubbles of an older composer (read when there is no list of
/// headers): the objects its value holds.
fn inline(rows: &CursorComposerRows) -> usize {
    rows.composer_data.matches('{').count()
}
