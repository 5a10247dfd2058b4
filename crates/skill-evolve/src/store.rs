//! `history`, `diff` and `rollback`, and the one place `evolve` writes a new
//! version: a versioned store (evolution-store-fs) beside the skill, plus the
//! working copy the user edits.
//!
//! The store is the history; the skill file is the working copy. A new
//! version is written to the store first and only then to the working copy,
//! so an interruption leaves the store at a consistent version. A working
//! copy edited by hand since the last version is recorded as its own version
//! before the evolved one, so no edit of the user's is lost from history.
//! The working copy is written through its symbolic link and never when it
//! is read-only (checked before the store moves); when writing it fails
//! after the store moved (a full disk), the error says so and how `rollback`
//! brings the two together again, which it can because a working copy whose
//! text is a stored version holds nothing the store would lose.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use evolution_store_fs::{
    Change, FsStore, FsStoreError, HistoryEntry, HistoryKind, Opened, VersionId,
};
use serde::Serialize;

use crate::cli::{DiffArgs, HistoryArgs, RollbackArgs, StoreArgs};
use crate::confirm::{Answer, ask_yes_no, stdin_is_terminal};
use crate::doctor::read_document;
use crate::error::{bad_at, bad_option};
use crate::render::{colour_diff, terminal_safe, unified_diff};
use crate::working_copy::{writable_target, write_through};

/// The folder beside a skill that holds its store and its runs.
pub(crate) const STATE_DIR: &str = ".skill-evolve";

/// The skill's file name, which is its document name in the store.
pub(crate) fn document_name(skill: &Path) -> anyhow::Result<String> {
    skill
        .file_name()
        .and_then(|n| n.to_str())
        .map(str::to_owned)
        .ok_or_else(|| bad_at(skill, None, "not a file name this tool can store"))
}

/// The folder the skill lives in (`.` for a bare file name).
pub(crate) fn skill_dir(skill: &Path) -> PathBuf {
    match skill.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// The store root: `--store`, else `.skill-evolve/store` beside the skill.
pub(crate) fn store_root(skill: &Path, explicit: Option<&Path>) -> PathBuf {
    explicit.map_or_else(
        || skill_dir(skill).join(STATE_DIR).join("store"),
        Path::to_path_buf,
    )
}

fn open_existing(target: &StoreArgs) -> anyhow::Result<(FsStore, String)> {
    let name = document_name(&target.skill)?;
    let root = store_root(&target.skill, target.store.as_deref());
    let store = FsStore::open(&root).map_err(|e| match e {
        FsStoreError::NotAStore { .. } => bad_at(
            &root,
            None,
            format!(
                "no version history here yet: `skill-evolve evolve {}` creates it when it \
                 writes its first version",
                target.skill.display()
            ),
        ),
        other => store_error(&root, other),
    })?;
    Ok((store, name))
}

fn store_error(root: &Path, e: FsStoreError) -> anyhow::Error {
    match e {
        FsStoreError::Corrupt { message } => {
            bad_at(root, None, format!("store is corrupt: {message}"))
        }
        FsStoreError::UnknownVersion { version } => {
            bad_option(format!("version {version} is not in this store's history"))
        }
        other => anyhow::Error::new(other).context(format!("store {}", root.display())),
    }
}

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

/// Records `candidate` as a new version of the skill and then writes it to
/// the working copy. Returns the new version.
pub(crate) fn write_new_version(
    skill: &Path,
    explicit_store: Option<&Path>,
    working: &str,
    candidate: &str,
    message: &str,
) -> anyhow::Result<VersionId> {
    record_and_write(
        skill,
        explicit_store,
        working,
        candidate,
        message,
        write_through,
    )
}

/// [`write_new_version`] with the working copy written by `write`.
fn record_and_write(
    skill: &Path,
    explicit_store: Option<&Path>,
    working: &str,
    candidate: &str,
    message: &str,
    write: impl FnOnce(&Path, &str) -> anyhow::Result<()>,
) -> anyhow::Result<VersionId> {
    // A working copy that cannot be written is refused before the store moves.
    writable_target(skill)?;
    let name = document_name(skill)?;
    let root = store_root(skill, explicit_store);
    // `open_or_init`: evolves started at once on a new skill share the store one of them creates.
    let (store, opened) = FsStore::open_or_init(
        &root,
        [(name.clone(), working.to_owned())],
        "imported working copy",
    )
    .map_err(|e| store_error(&root, e))?;
    if opened == Opened::Existing && store.read(&name).ok().as_deref() != Some(working) {
        store
            .advance_version(
                &[Change::write(name.clone(), working)],
                "working copy as found before evolving",
            )
            .map_err(|e| store_error(&root, e))?;
    }
    let previous = store.current_version().map_err(|e| store_error(&root, e))?;
    let version = store
        .advance_version(&[Change::write(name, candidate)], message)
        .map_err(|e| store_error(&root, e))?;
    write(skill, candidate)
        .map_err(|e| store_ahead(e, skill, explicit_store, previous, version))?;
    Ok(version)
}

/// The error of a working copy that could not be written after the store
/// moved from `file_holds` to `store_holds`, with the ways back.
fn store_ahead(
    e: anyhow::Error,
    skill: &Path,
    explicit_store: Option<&Path>,
    file_holds: VersionId,
    store_holds: VersionId,
) -> anyhow::Error {
    let store = explicit_store
        .map(|s| format!(" --store {}", s.display()))
        .unwrap_or_default();
    let rollback = format!("skill-evolve rollback {}{store}", skill.display());
    anyhow::anyhow!(
        "{e:#}. The store is ahead of the file: it is at {store_holds} but {} still holds \
         {file_holds}. Once the disk has room, `{rollback} --to {store_holds} --yes` writes \
         {store_holds} to the file, or `{rollback} --to {file_holds} --yes` takes the store \
         back to the file; running the same command again works too",
        skill.display()
    )
}

/// The latest version of `store` in which `name` has the text `text`: a
/// working copy holding it has nothing the store would lose.
fn stored_version(store: &FsStore, name: &str, text: &str) -> anyhow::Result<Option<VersionId>> {
    let root = store.root().to_path_buf();
    let entries = store.history().map_err(|e| store_error(&root, e))?;
    let mut versions: Vec<VersionId> = entries.iter().map(|e| e.version).collect();
    versions.sort_unstable();
    versions.dedup();
    for version in versions.into_iter().rev() {
        if store.read_at(version, name).ok().as_deref() == Some(text) {
            return Ok(Some(version));
        }
    }
    Ok(None)
}

#[derive(Serialize)]
struct HistoryJson<'a> {
    store: String,
    current: VersionId,
    history: &'a [HistoryEntry],
}

pub(crate) fn history(args: &HistoryArgs) -> anyhow::Result<ExitCode> {
    let (store, _) = open_existing(&args.target)?;
    let root = store.root().to_path_buf();
    let entries = store.history().map_err(|e| store_error(&root, e))?;
    let current = store.current_version().map_err(|e| store_error(&root, e))?;
    if args.json {
        let json = HistoryJson {
            store: root.display().to_string(),
            current,
            history: &entries,
        };
        println!("{}", serde_json::to_string_pretty(&json)?);
        return Ok(ExitCode::SUCCESS);
    }
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
        println!(
            "{} {kind:<8} {from:<12} {}  {}{mark}",
            entry.version,
            format_time(entry.unix_ms),
            terminal_safe(&entry.message)
        );
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn diff(args: &DiffArgs) -> anyhow::Result<ExitCode> {
    let (store, name) = open_existing(&args.target)?;
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
        println!("{name}: {from} and {to} are identical");
    } else {
        print!("{}", colour_diff(&text));
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn rollback(args: &RollbackArgs) -> anyhow::Result<ExitCode> {
    let (store, name) = open_existing(&args.target)?;
    let root = store.root().to_path_buf();
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
        println!("{name} already has the text of {to}");
    } else {
        print!("{}", colour_diff(&text));
    }
    let approved = if args.yes {
        true
    } else if stdin_is_terminal() {
        ask_yes_no(&format!("Roll {name} back to {to}?"))? == Answer::Yes
    } else {
        println!("not rolled back: no terminal to confirm on; run again with --yes");
        return Ok(ExitCode::SUCCESS);
    };
    if !approved {
        println!("discarded: nothing changed");
        return Ok(ExitCode::SUCCESS);
    }
    store.rollback(to).map_err(|e| store_error(&root, e))?;
    write_through(skill, &target_text)
        .map_err(|e| store_ahead(e, skill, args.target.store.as_deref(), file_holds, to))?;
    println!("rolled back {} to {to}", skill.display());
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use clap::Parser as _;

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
    fn a_failed_write_after_the_store_moved_says_how_to_recover() {
        let dir = tempfile::tempdir().unwrap();
        let skill = dir.path().join("SKILL.md");
        std::fs::write(&skill, "v1\n").unwrap();
        let full = |_: &Path, _: &str| -> anyhow::Result<()> {
            Err(std::io::Error::from(std::io::ErrorKind::StorageFull).into())
        };
        let err = record_and_write(&skill, None, "v1\n", "v2\n", "evolved", full).unwrap_err();
        let text = format!("{err:#}");
        assert!(text.contains("The store is ahead of the file"), "{text}");
        assert!(text.contains("it is at v000002 but"), "{text}");
        assert!(text.contains("still holds v000001"), "{text}");
        assert!(
            text.contains("--to v000002 --yes` writes v000002 to the file"),
            "{text}"
        );
        assert!(
            text.contains("--to v000001 --yes` takes the store back"),
            "{text}"
        );
        assert!(
            text.starts_with("no storage space. The store is ahead"),
            "{text}"
        );
        // The store moved, the file did not.
        let store = FsStore::open(store_root(&skill, None)).unwrap();
        assert_eq!(store.current_version().unwrap(), VersionId::new(2));
        assert_eq!(std::fs::read_to_string(&skill).unwrap(), "v1\n");
        // Each suggested rollback brings them together again.
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

    #[test]
    fn default_store_is_beside_the_skill() {
        assert_eq!(
            store_root(Path::new("skills/a/SKILL.md"), None),
            Path::new("skills/a/.skill-evolve/store")
        );
        assert_eq!(
            store_root(Path::new("SKILL.md"), None),
            Path::new("./.skill-evolve/store")
        );
    }
}
