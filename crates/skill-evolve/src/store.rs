//! `history`, `diff` and `rollback` of a skill file's version store (its project's, or one
//! an earlier version kept beside it; the library's `skill_store` finds it and writes new
//! versions).

use std::process::ExitCode;

use evolution_store_fs::{HistoryEntry, HistoryKind, VersionId};
use serde::Serialize;

use crate::cli::{DiffArgs, HistoryArgs, RollbackArgs};
use crate::confirm::{Answer, ask_yes_no, stdin_is_terminal};
use crate::out::{out, outln};
use crate::render::{colour_diff, terminal_safe, unified_diff};
use evolution_project::error::{bad_at, bad_option};
use evolution_project::input::read_document;
use evolution_project::working_copy::{writable_target, write_through};

pub(crate) use evolution_project::skill_store::{
    document_name, skill_dir, store_root, write_new_version,
};
use evolution_project::skill_store::{
    lock_store, open_existing, store_ahead, store_error, stored_version,
};

/// `YYYY-MM-DD HH:MM:SS UTC` of a Unix time in milliseconds (civil-from-days).
fn format_time(unix_ms: u64) -> String {
    let secs = unix_ms / 1000;
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let rem = secs % 86_400;
    let (h, m, s) = (rem / 3600, rem % 3600 / 60, rem % 60);
    // Howard Hinnant's days-to-civil algorithm.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{d:02} {h:02}:{m:02}:{s:02} UTC")
}

fn parse_version(text: &str) -> anyhow::Result<VersionId> {
    let t = text.trim();
    let digits = t.strip_prefix('v').unwrap_or(t);
    digits
        .parse::<u64>()
        .ok()
        .filter(|n| *n > 0)
        .map(VersionId::new)
        .ok_or_else(|| bad_option(format!("{text:?} is not a version: write v3 or 3")))
}

#[derive(Serialize)]
struct HistoryJson<'a> {
    store: String,
    current: VersionId,
    history: &'a [HistoryEntry],
}

pub(crate) fn history(args: &HistoryArgs) -> anyhow::Result<ExitCode> {
    let target = &args.target.skill;
    if args.target.store.is_none() && target.join(evolution_project::layout::SKILL_MD).is_file() {
        return package_history(target, args.json);
    }
    let (store, _) = open_existing(&args.target.skill, args.target.store.as_deref())?;
    let root = store.root().to_path_buf();
    let entries = store.history().map_err(|e| store_error(&root, e))?;
    let current = store.current_version().map_err(|e| store_error(&root, e))?;
    if args.json {
        let json = HistoryJson {
            store: root.display().to_string(),
            current,
            history: &entries,
        };
        outln!("{}", serde_json::to_string_pretty(&json)?);
        return Ok(ExitCode::SUCCESS);
    }
    print_entries(&entries, current);
    Ok(ExitCode::SUCCESS)
}

/// One line per entry of a store's history, the current version marked.
fn print_entries(entries: &[HistoryEntry], current: VersionId) {
    // The last move of the pointer is the one that made the current version current.
    let last = entries.len().saturating_sub(1);
    for (index, entry) in entries.iter().enumerate() {
        let kind = match entry.kind {
            HistoryKind::Init => "init",
            HistoryKind::Advance => "advance",
            HistoryKind::Rollback => "rollback",
            _ => "other",
        };
        let from = entry
            .previous
            .map(|p| format!("from {p}"))
            .unwrap_or_default();
        let mark = if index == last && entry.version == current {
            "  (current)"
        } else {
            ""
        };
        outln!(
            "{} {kind:<8} {from:<12} {}  {}{mark}",
            entry.version,
            format_time(entry.unix_ms),
            terminal_safe(&entry.message)
        );
    }
}

/// `history <skill folder>`: the history of each file of the skill's package that can be
/// evolved (its `SKILL.md` and its `references/**/*.md`), each from its own store; a file
/// with no version yet says so.
fn package_history(folder: &std::path::Path, json: bool) -> anyhow::Result<ExitCode> {
    let skill_md = folder.join(evolution_project::layout::SKILL_MD);
    let skill = evolution_project::layout::SkillDoc {
        skill: String::new(),
        document: String::new(),
        path: skill_md.clone(),
    };
    let mut files = vec![skill_md];
    files.extend(
        evolution_project::skill_package::references(&skill)?
            .into_iter()
            .map(|r| r.path),
    );
    let mut listed = Vec::new();
    for file in files {
        let shown = file.display().to_string();
        if !store_root(&file, None).is_dir() {
            listed.push((shown, None));
            continue;
        }
        let (store, _) = open_existing(&file, None)?;
        let root = store.root().to_path_buf();
        let entries = store.history().map_err(|e| store_error(&root, e))?;
        let current = store.current_version().map_err(|e| store_error(&root, e))?;
        listed.push((shown, Some((root.display().to_string(), current, entries))));
    }
    if json {
        let files: Vec<serde_json::Value> = listed
            .iter()
            .map(|(file, versions)| match versions {
                Some((store, current, history)) => serde_json::json!({
                    "file": file, "store": store, "current": current, "history": history,
                }),
                None => serde_json::json!({ "file": file, "store": null }),
            })
            .collect();
        outln!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({ "files": files }))?
        );
        return Ok(ExitCode::SUCCESS);
    }
    for (file, versions) in &listed {
        outln!("{}", terminal_safe(file));
        match versions {
            Some((_, current, entries)) => print_entries(entries, *current),
            None => outln!("  no versions yet"),
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn diff(args: &DiffArgs) -> anyhow::Result<ExitCode> {
    let (store, name) = open_existing(&args.target.skill, args.target.store.as_deref())?;
    let root = store.root().to_path_buf();
    let current = store.current_version().map_err(|e| store_error(&root, e))?;
    let to = match &args.to {
        Some(v) => parse_version(v)?,
        None => current,
    };
    let from = match &args.from {
        Some(v) => parse_version(v)?,
        None => {
            let entries = store.history().map_err(|e| store_error(&root, e))?;
            entries
                .iter()
                .rev()
                .find(|e| e.version == to)
                .and_then(|e| e.previous)
                .ok_or_else(|| bad_option(format!("{to} has no earlier version to compare with")))?
        }
    };
    let old = store
        .read_at(from, &name)
        .map_err(|e| store_error(&root, e))?;
    let new = store
        .read_at(to, &name)
        .map_err(|e| store_error(&root, e))?;
    let text = unified_diff(
        &old,
        &new,
        &format!("{name}@{from}"),
        &format!("{name}@{to}"),
    );
    if text.is_empty() {
        outln!("{name}: {from} and {to} are identical");
    } else {
        out!("{}", colour_diff(&text));
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn rollback(args: &RollbackArgs) -> anyhow::Result<ExitCode> {
    let (store, name) = open_existing(&args.target.skill, args.target.store.as_deref())?;
    let root = store.root().to_path_buf();
    // Held from reading the working copy to writing it: no adopt or evolve of this file
    // writes in between.
    let _lock = lock_store(&root)?;
    let to = parse_version(&args.to)?;
    let target_text = store
        .read_at(to, &name)
        .map_err(|e| store_error(&root, e))?;
    let skill = &args.target.skill;
    let working = read_document(skill)?;
    // Refused before the diff is shown and the user asked.
    writable_target(skill)?;
    let stored = store.read(&name).map_err(|e| store_error(&root, e))?;
    let current = store.current_version().map_err(|e| store_error(&root, e))?;
    // A working copy whose text is in the store loses nothing (it is where a
    // failed write left the file, behind or ahead of the store).
    let file_holds = if working == stored {
        Some(current)
    } else {
        stored_version(&store, &name, &working)?
    };
    let Some(file_holds) = file_holds else {
        return Err(bad_at(
            skill,
            None,
            "the working copy was edited since its last version; save those edits (or discard \
             them) before rolling back",
        ));
    };
    let text = unified_diff(&working, &target_text, &name, &format!("{name}@{to}"));
    if text.is_empty() {
        outln!("{name} already has the text of {to}");
    } else {
        out!("{}", colour_diff(&text));
    }
    let approved = if args.yes {
        true
    } else if stdin_is_terminal() {
        ask_yes_no(&format!("Roll {name} back to {to}?"))? == Answer::Yes
    } else {
        return Err(bad_option(
            "not rolled back: there is no terminal to confirm on; review the diff above and run \
             again with --yes (nothing was changed)",
        ));
    };
    if !approved {
        outln!("discarded: nothing changed");
        return Ok(ExitCode::SUCCESS);
    }
    store.rollback(to).map_err(|e| store_error(&root, e))?;
    write_through(skill, &target_text)
        .map_err(|e| store_ahead(e, skill, args.target.store.as_deref(), file_holds, to))?;
    outln!("rolled back {} to {to}", skill.display());
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use clap::Parser as _;
    use evolution_store_fs::{Change, FsStore};

    use super::*;

    #[test]
    fn versions_parse_with_or_without_v() {
        assert_eq!(parse_version("v3").unwrap(), VersionId::new(3));
        assert_eq!(parse_version("12").unwrap(), VersionId::new(12));
        assert!(parse_version("v0").is_err());
        assert!(parse_version("latest").is_err());
    }

    #[test]
    fn times_render_as_utc_dates() {
        assert_eq!(format_time(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(format_time(951_782_400_000), "2000-02-29 00:00:00 UTC");
        assert_eq!(format_time(1_795_997_959_375), "2026-11-30 00:19:19 UTC");
    }

    #[test]
    fn each_way_back_from_a_store_ahead_of_its_file_brings_them_together() {
        let dir = tempfile::tempdir().unwrap();
        let skill = dir.path().join("SKILL.md");
        std::fs::write(&skill, "v1\n").unwrap();
        // What a write that failed after the store moved leaves: the store at v2, the file at v1.
        let store = FsStore::init(
            store_root(&skill, None),
            [("SKILL.md".to_owned(), "v1\n".to_owned())],
            "imported",
        )
        .unwrap();
        store
            .advance_version(&[Change::write("SKILL.md".to_owned(), "v2\n")], "evolved")
            .unwrap();
        for (to, text) in [("v000002", "v2\n"), ("v000001", "v1\n")] {
            let cli = crate::cli::Cli::try_parse_from([
                "skill-evolve",
                "rollback",
                skill.to_str().unwrap(),
                "--to",
                to,
                "--yes",
            ])
            .unwrap();
            let crate::cli::Command::Rollback(args) = cli.command else {
                unreachable!()
            };
            rollback(&args).unwrap();
            assert_eq!(std::fs::read_to_string(&skill).unwrap(), text);
            assert_eq!(store.read("SKILL.md").unwrap(), text);
        }
    }
}
