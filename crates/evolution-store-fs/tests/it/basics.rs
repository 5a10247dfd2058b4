//! Reading, advancing, history, rollback, diff, snapshots and the two ports.

use evolution_store_fs::{Change, FileChange, FsStore, FsStoreError, HistoryKind, VersionId};
use evolution_types::{PromptStore, SkillStore, StoreError, resolve_skill_file};

use crate::two_skill_store;

#[test]
fn init_creates_first_version_readable_through_both_ports() {
    let (_dir, store) = two_skill_store();
    assert_eq!(store.current_version().unwrap(), VersionId::new(1));
    assert_eq!(
        store.list_skill_files().unwrap(),
        ["action-reasoning.md", "default-strategy.md"]
    );
    assert_eq!(
        store.read_skill("default-strategy.md").unwrap(),
        "---\nname: default\n---\nBe careful.\n"
    );
    assert_eq!(store.list_prompt_files().unwrap(), store.list().unwrap());
    assert_eq!(
        store.read_prompt("action-reasoning.md").unwrap(),
        store.read("action-reasoning.md").unwrap()
    );
    // The kernel's helper works over the store as a `&dyn SkillStore`.
    let dyn_store: &dyn SkillStore = &store;
    assert_eq!(
        resolve_skill_file(dyn_store, "Action Reasoning").unwrap(),
        "action-reasoning.md"
    );
}

#[test]
fn advance_creates_modifies_and_deletes_in_a_new_version() {
    let (_dir, store) = two_skill_store();
    let v2 = store
        .advance_version(
            &[
                Change::write(
                    "action-reasoning.md",
                    "---\nname: action\n---\nLook three times.\n",
                ),
                Change::write("counting.md", "Count twice.\n"),
                Change::delete("default-strategy.md"),
            ],
            "round 1",
        )
        .unwrap();
    assert_eq!(v2, VersionId::new(2));
    assert_eq!(store.current_version().unwrap(), v2);
    assert_eq!(
        store.list().unwrap(),
        ["action-reasoning.md", "counting.md"]
    );
    assert_eq!(
        store.read("action-reasoning.md").unwrap(),
        "---\nname: action\n---\nLook three times.\n"
    );
    // The old version is untouched.
    let v1 = VersionId::new(1);
    assert_eq!(
        store.list_at(v1).unwrap(),
        ["action-reasoning.md", "default-strategy.md"]
    );
    assert_eq!(
        store.read_at(v1, "action-reasoning.md").unwrap(),
        "---\nname: action\n---\nLook twice.\n"
    );
    assert!(matches!(
        store.read("default-strategy.md"),
        Err(FsStoreError::NotFound { version, .. }) if version == v2
    ));
    assert!(matches!(
        store.read_skill("default-strategy.md"),
        Err(StoreError::NotFound { name }) if name == "default-strategy.md"
    ));
}

#[test]
fn unchanged_documents_are_carried_over_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let text = "第一行\r\nno newline at end, tabs\tand emoji 🙂";
    let store = FsStore::init(dir.path(), [("a.md", text), ("b.md", "b")], "init").unwrap();
    store
        .advance_version(&[Change::write("b.md", "b2")], "touch b")
        .unwrap();
    assert_eq!(store.read("a.md").unwrap(), text);
}

#[test]
fn history_records_every_pointer_move_and_rollback_restores_content() {
    let (_dir, store) = two_skill_store();
    let v1 = store.current_version().unwrap();
    let v2 = store
        .advance_version(&[Change::write("default-strategy.md", "v2\n")], "second")
        .unwrap();
    let v3 = store
        .advance_version(&[Change::write("default-strategy.md", "v3\n")], "third")
        .unwrap();
    store.rollback(v1).unwrap();
    assert_eq!(store.current_version().unwrap(), v1);
    assert_eq!(
        store.read("default-strategy.md").unwrap(),
        "---\nname: default\n---\nBe careful.\n"
    );
    // Rolling back to the current version changes nothing.
    store.rollback(v1).unwrap();
    // Advancing after a rollback starts from the rolled-back content with a fresh number.
    let v4 = store
        .advance_version(&[Change::write("new.md", "n\n")], "after rollback")
        .unwrap();
    assert_eq!(v4, VersionId::new(4));
    assert_eq!(
        store.read("default-strategy.md").unwrap(),
        "---\nname: default\n---\nBe careful.\n"
    );

    let history = store.history().unwrap();
    let summary: Vec<_> = history
        .iter()
        .map(|e| (e.version, e.previous, e.kind, e.message.as_str()))
        .collect();
    assert_eq!(
        summary,
        [
            (v1, None, HistoryKind::Init, "initial skills"),
            (v2, Some(v1), HistoryKind::Advance, "second"),
            (v3, Some(v2), HistoryKind::Advance, "third"),
            (
                v1,
                Some(v3),
                HistoryKind::Rollback,
                "rollback from v000003 to v000001"
            ),
            (v4, Some(v1), HistoryKind::Advance, "after rollback"),
        ]
    );
    assert!(history.windows(2).all(|w| w[0].unix_ms <= w[1].unix_ms));
    // Roll forward again.
    store.rollback(v3).unwrap();
    assert_eq!(store.read("default-strategy.md").unwrap(), "v3\n");
}

#[test]
fn rollback_to_unknown_version_is_an_error_and_changes_nothing() {
    let (_dir, store) = two_skill_store();
    let before = store.history().unwrap();
    assert!(matches!(
        store.rollback(VersionId::new(9)),
        Err(FsStoreError::UnknownVersion { version }) if version == VersionId::new(9)
    ));
    assert!(matches!(
        store.read_at(VersionId::new(0), "action-reasoning.md"),
        Err(FsStoreError::UnknownVersion { .. })
    ));
    assert_eq!(store.history().unwrap(), before);
}

#[test]
fn diff_is_a_unified_diff_per_changed_document() {
    let (_dir, store) = two_skill_store();
    let v1 = store.current_version().unwrap();
    let v2 = store
        .advance_version(
            &[
                Change::write(
                    "action-reasoning.md",
                    "---\nname: action\n---\nLook three times.\n",
                ),
                Change::write("counting.md", "Count twice.\n"),
                Change::delete("default-strategy.md"),
            ],
            "round 1",
        )
        .unwrap();
    let diff = store.diff(v1, v2).unwrap();
    let kinds: Vec<_> = diff
        .files
        .iter()
        .map(|f| (f.name.as_str(), f.change))
        .collect();
    assert_eq!(
        kinds,
        [
            ("action-reasoning.md", FileChange::Modified),
            ("counting.md", FileChange::Added),
            ("default-strategy.md", FileChange::Removed),
        ]
    );
    let expected = "\
--- a/action-reasoning.md
+++ b/action-reasoning.md
@@ -1,4 +1,4 @@
 ---
 name: action
 ---
-Look twice.
+Look three times.
--- /dev/null
+++ b/counting.md
@@ -0,0 +1 @@
+Count twice.
--- a/default-strategy.md
+++ /dev/null
@@ -1,4 +0,0 @@
----
-name: default
----
-Be careful.
";
    assert_eq!(diff.to_string(), expected);
    assert!(store.diff(v2, v2).unwrap().is_empty());
    let back = store.diff(v2, v1).unwrap();
    assert_eq!(back.files[1].change, FileChange::Removed);
}

#[test]
fn snapshot_stays_on_its_version_while_the_store_moves() {
    let (_dir, store) = two_skill_store();
    let snap = store.snapshot().unwrap();
    store
        .advance_version(&[Change::delete("action-reasoning.md")], "drop")
        .unwrap();
    assert_eq!(snap.version(), VersionId::new(1));
    assert_eq!(snap.list_skill_files().unwrap().len(), 2);
    assert!(snap.read_prompt("action-reasoning.md").is_ok());
    assert_eq!(store.list().unwrap(), ["default-strategy.md"]);
}

#[test]
fn a_second_handle_sees_advances_of_the_first() {
    let (_dir, store) = two_skill_store();
    let other = FsStore::open(store.root()).unwrap();
    store
        .advance_version(&[Change::write("x.md", "x")], "add x")
        .unwrap();
    assert_eq!(other.read("x.md").unwrap(), "x");
}

#[test]
fn empty_and_duplicate_changes_and_missing_deletes_are_refused() {
    let (_dir, store) = two_skill_store();
    assert!(matches!(
        store.advance_version(&[], "nothing"),
        Err(FsStoreError::NoChanges)
    ));
    assert!(matches!(
        store.advance_version(&[Change::write("a.md", "1"), Change::delete("a.md")], "twice"),
        Err(FsStoreError::DuplicateChange { name }) if name == "a.md"
    ));
    assert!(matches!(
        store.advance_version(&[Change::delete("ghost.md")], "ghost"),
        Err(FsStoreError::NotFound { name, .. }) if name == "ghost.md"
    ));
    // None of the refused calls left a version behind.
    assert_eq!(store.history().unwrap().len(), 1);
    assert_eq!(store.current_version().unwrap(), VersionId::new(1));
    let after = store
        .advance_version(&[Change::write("a.md", "1")], "fine")
        .unwrap();
    assert_eq!(after, VersionId::new(2));
}

#[test]
fn init_refuses_an_existing_store_or_a_foreign_directory() {
    let (dir, store) = two_skill_store();
    assert!(matches!(
        FsStore::init(store.root(), [("a.md", "a")], "again"),
        Err(FsStoreError::AlreadyExists { .. })
    ));
    let foreign = dir.path().join("foreign");
    std::fs::create_dir(&foreign).unwrap();
    std::fs::write(foreign.join("notes.txt"), "mine").unwrap();
    assert!(matches!(
        FsStore::init(&foreign, [("a.md", "a")], "init"),
        Err(FsStoreError::AlreadyExists { .. })
    ));
    assert_eq!(
        std::fs::read_to_string(foreign.join("notes.txt")).unwrap(),
        "mine"
    );
}

#[test]
fn open_of_a_plain_directory_is_not_a_store() {
    let dir = tempfile::tempdir().unwrap();
    assert!(matches!(
        FsStore::open(dir.path()),
        Err(FsStoreError::NotAStore { .. })
    ));
}

#[test]
fn import_dir_takes_plain_files_and_refuses_subdirectories() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    std::fs::create_dir(&src).unwrap();
    std::fs::write(src.join("system.md"), "You are an agent.\n").unwrap();
    std::fs::write(src.join("view_node_extract.md"), "Extract.\n").unwrap();
    let store = FsStore::import_dir(dir.path().join("prompts"), &src, "import").unwrap();
    assert_eq!(
        store.list_prompt_files().unwrap(),
        ["system.md", "view_node_extract.md"]
    );
    assert_eq!(
        store.read_prompt("system.md").unwrap(),
        "You are an agent.\n"
    );

    std::fs::create_dir(src.join("references")).unwrap();
    assert!(matches!(
        FsStore::import_dir(dir.path().join("prompts2"), &src, "import"),
        Err(FsStoreError::InvalidName { name, .. }) if name == "references"
    ));
}

/// Every file under `dir` with its mode, and every folder the store made (all but `dir`).
#[cfg(unix)]
fn modes(dir: &std::path::Path, out: &mut Vec<(std::path::PathBuf, u32)>) {
    use std::os::unix::fs::PermissionsExt as _;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let meta = std::fs::symlink_metadata(&path).unwrap();
        out.push((path.clone(), meta.permissions().mode() & 0o777));
        if meta.is_dir() {
            modes(&path, out);
        }
    }
}

#[cfg(unix)]
#[test]
fn every_file_the_store_writes_is_private_whatever_the_folder_and_umask() {
    use std::os::unix::fs::PermissionsExt as _;

    use evolution_store_fs::FileCheckpoint;
    use evolution_types::Checkpoint as _;

    let (dir, store) = two_skill_store();
    // An open folder above the store: the store does not rely on it.
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    // A file left readable by a store written before files were private is copied forward
    // private.
    let v1 = store.root().join("versions/v000001/default-strategy.md");
    std::fs::set_permissions(&v1, std::fs::Permissions::from_mode(0o644)).unwrap();
    store
        .advance_version(
            &[Change::write("action-reasoning.md", "Look three times.\n")],
            "edit",
        )
        .unwrap();
    let checkpoint = FileCheckpoint::new(dir.path().join("skills/checkpoint.json"));
    checkpoint.save(&serde_json::json!({"step": 1})).unwrap();
    let mut found = Vec::new();
    modes(store.root(), &mut found);
    let v2 = store.root().join("versions/v000002");
    assert!(found.iter().any(|(p, _)| p.starts_with(&v2)), "{found:?}");
    for (path, mode) in found {
        // The old version is never rewritten.
        if path == v1 {
            continue;
        }
        let want = if path.is_dir() { 0o700 } else { 0o600 };
        assert_eq!(mode, want, "{} is {mode:o}", path.display());
    }
}

#[cfg(unix)]
#[test]
fn the_writers_lock_file_is_private_under_an_open_folder_and_umask() {
    use std::os::unix::fs::PermissionsExt as _;

    use nix::sys::stat::{Mode, umask};

    // The usual umask, which leaves new files 0644 and folders 0755 unless the store says
    // otherwise (set here so that the test does not depend on the shell that runs it).
    let before = umask(Mode::from_bits_truncate(0o022));
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let root = dir.path().join("skills");
    let store = FsStore::init(&root, [("a.md", "A.\n")], "initial").unwrap();
    let lock = root.join(".lock");
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&lock), 0o600, "a new store's lock file");

    // A lock file an older store left 0644 is closed to others by the next writer.
    std::fs::set_permissions(&lock, std::fs::Permissions::from_mode(0o644)).unwrap();
    store
        .advance_version(&[Change::write("a.md", "B.\n")], "edit")
        .unwrap();
    assert_eq!(mode(&lock), 0o600, "an old lock file after a write");

    // A store opened afresh that finds no lock file creates it private too.
    std::fs::remove_file(&lock).unwrap();
    let again = FsStore::open(&root).unwrap();
    again
        .advance_version(&[Change::write("a.md", "C.\n")], "edit")
        .unwrap();
    assert_eq!(mode(&lock), 0o600, "a lock file created by a later writer");
    umask(before);
}
