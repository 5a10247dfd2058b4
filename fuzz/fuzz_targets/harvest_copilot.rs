//! Fuzzes GitHub Copilot's readers on the same input: as a VS Code chat session log (each line a
//! change), as a flat VS Code session, as `copilot` CLI events and as an older CLI session. No
//! input may panic or overflow the stack, and a replayed log never nests past the bound.
#![no_main]

#[path = "harvest_common.rs"]
mod harvest_common;

use evolution_harvest::copilot::{
    CopilotCliReader, VsCodeChatLog, read_copilot_history, read_vscode_chat, vscode_chat_from_json,
};
use evolution_harvest::limits::{Budget, depth_of};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let limits = harvest_common::limits();

    let mut log = VsCodeChatLog::with_budget(Budget::new(limits));
    let replayed = text
        .lines()
        .enumerate()
        .try_for_each(|(n, line)| log.push_line(n + 1, line))
        .and_then(|()| log.finish());
    if let Ok(value) = replayed {
        assert!(depth_of(&value) <= limits.max_depth);
        if let Ok((session, _)) = read_vscode_chat(&value, "fuzz", None, harvest_common::policy()) {
            harvest_common::check(&session);
        }
    }

    if let Ok(value) = vscode_chat_from_json(&mut Budget::new(limits), &text)
        && let Ok((session, _)) =
            read_vscode_chat(&value, "fuzz", Some("/w"), harvest_common::policy())
    {
        harvest_common::check(&session);
    }

    let mut cli = CopilotCliReader::new("fuzz", harvest_common::policy());
    if text
        .lines()
        .enumerate()
        .all(|(n, line)| cli.push_line(n + 1, line).is_ok())
    {
        harvest_common::check(&cli.finish().0);
    }

    if let Ok((session, _)) = read_copilot_history(&text, "fuzz", harvest_common::policy()) {
        harvest_common::check(&session);
    }
});
