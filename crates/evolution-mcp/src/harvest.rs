//! The `harvest` tool runs `skill-evolve harvest` as a child process: it reads stores other
//! programs wrote, and whatever one of them does to the reader (a crash, an abort, memory
//! it cannot get) ends the child, never the server or its background runs.

use std::path::Path;

use serde_json::json;

use super::inputs::{HarvestInput, SourceInput};
use super::paths::Project;

/// Most notes (per-session verdicts, skipped files, warnings) the tool returns.
const MAX_NOTES: usize = 200;

/// The child's arguments for the tool's inputs; paths the child writes to must lie inside
/// the project.
pub(super) fn arguments(input: &HarvestInput, project: &Project) -> Result<Vec<String>, String> {
    let source = match input.source {
        SourceInput::ClaudeCode => "claude-code",
        SourceInput::Codex => "codex",
        SourceInput::Gemini => "gemini",
        SourceInput::Opencode => "opencode",
        SourceInput::Cursor => "cursor",
        SourceInput::Copilot => "copilot",
        SourceInput::SessionState => "session-state",
        SourceInput::Dir => "dir",
    };
    let per_project = !matches!(input.source, SourceInput::SessionState | SourceInput::Dir);
    // `--flag=value`: a value that starts with `-` stays a value.
    let flag = |name: &str, value: &Path| format!("--{name}={}", value.display());
    let mut args = vec!["harvest".to_owned(), format!("--source={source}")];
    if let Some(from) = &input.from {
        args.push(flag("from", &project.root().join(from)));
    }
    if per_project && !input.all_projects {
        args.push(flag("project", project.root()));
    }
    if let Some(since) = &input.since {
        args.push(format!("--since={since}"));
    }
    if let Some(skill) = &input.skill {
        args.push(format!("--skill={skill}"));
    }
    if let Some(out) = &input.out {
        args.push(flag("out", &project.inside("out", out)?));
    }
    if let Some(tasks) = &input.tasks {
        args.push(flag("tasks", &project.inside("tasks", tasks)?));
        args.push(format!(
            "--min-sessions={}",
            input.min_sessions.unwrap_or(2)
        ));
    }
    let config = project.root().join("skill-evolve.toml");
    if config.is_file() {
        args.push(flag("config", &config));
    }
    if input.recorded {
        args.push("--recorded".to_owned());
    }
    Ok(args)
}

/// The tool's reply from what the child printed: `lines`, the counts, and `notes`, each
/// session's verdict (`id: failed (reasons)`) and each skipped file or warning.
pub(super) fn reply(stdout: &str, stderr: &str) -> String {
    let mut lines = Vec::new();
    let mut notes = Vec::new();
    for line in stdout.lines().filter(|l| !l.trim().is_empty()) {
        let verdict = ["passed", "failed"]
            .into_iter()
            .find_map(|v| line.strip_prefix(v).map(|rest| (v, rest)))
            .and_then(|(v, rest)| rest.strip_prefix("  ").map(|rest| (v, rest)));
        match verdict {
            Some((verdict, rest)) => {
                let (id, reasons) = rest.split_once("  ").unwrap_or((rest, ""));
                notes.push(format!("{id}: {verdict} ({reasons})"));
            }
            None => lines.push(line.to_owned()),
        }
    }
    notes.extend(
        stderr
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(str::to_owned),
    );
    notes.truncate(MAX_NOTES);
    json!({ "lines": lines, "notes": notes }).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_childs_output_becomes_counts_and_notes() {
        let stdout = "failed  s1  2 tool errors\npassed  s2  \n\n3 session(s) read\n";
        let reply: serde_json::Value =
            serde_json::from_str(&reply(stdout, "skipped: a.jsonl: too deep\n")).unwrap();
        assert_eq!(reply["lines"], json!(["3 session(s) read"]));
        assert_eq!(
            reply["notes"],
            json!([
                "s1: failed (2 tool errors)",
                "s2: passed ()",
                "skipped: a.jsonl: too deep"
            ])
        );
    }

    #[test]
    fn inputs_become_flags_and_outputs_stay_in_the_project() {
        let dir = tempfile::tempdir().unwrap();
        let project = Project::at(dir.path()).unwrap();
        let input: HarvestInput = serde_json::from_value(json!({
            "source": "codex", "from": "-odd", "since": "2026-01-01", "tasks": "t.jsonl",
        }))
        .unwrap();
        let args = arguments(&input, &project).unwrap();
        let root = project.root().display();
        assert_eq!(
            args,
            [
                "harvest".to_owned(),
                "--source=codex".to_owned(),
                format!("--from={root}/-odd"),
                format!("--project={root}"),
                "--since=2026-01-01".to_owned(),
                format!("--tasks={root}/t.jsonl"),
                "--min-sessions=2".to_owned(),
            ]
        );
        let outside: HarvestInput =
            serde_json::from_value(json!({ "source": "dir", "out": "../elsewhere" })).unwrap();
        assert!(arguments(&outside, &project).is_err());
    }
}
