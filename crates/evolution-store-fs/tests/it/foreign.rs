//! The store deletes only what it created: never through a symbolic link, never a file it
//! did not name, never someone else's `staging/` or `versions/`.

use std::path::Path;

use evolution_store_fs::{Change, FsStore, FsStoreError};
use proptest::prelude::*;

use crate::{entries, two_skill_store};

fn advance(store: &FsStore) -> Result<(), FsStoreError> {
    store
        .advance_version(&[Change::write("new.md", "text\n")], "round")
        .map(|_| ())
}

#[test]
fn a_staging_folder_that_is_a_symlink_is_refused_and_its_target_kept() {
    let (dir, store) = two_skill_store();
    let precious = dir.path().join("precious");
    std::fs::create_dir(&precious).unwrap();
    std::fs::write(precious.join("thesis.md"), "years of work").unwrap();
    let staging = store.root().join("staging");
    std::fs::remove_dir(&staging).unwrap();
    std::os::unix::fs::symlink(&precious, &staging).unwrap();

    let err = advance(&store).unwrap_err();
    assert!(matches!(err, FsStoreError::NotOurs { .. }), "{err}");
    assert!(err.to_string().contains("symbolic link"), "{err}");
    assert_eq!(
        std::fs::read_to_string(precious.join("thesis.md")).unwrap(),
        "years of work"
    );
}

#[test]
fn entries_the_store_did_not_name_are_left_alone() {
    let (_dir, store) = two_skill_store();
    let staging = store.root().join("staging");
    std::fs::write(staging.join("notes.txt"), "mine").unwrap();
    std::fs::create_dir(staging.join("drafts")).unwrap();
    std::fs::write(staging.join("drafts/a.md"), "mine too").unwrap();
    // A leftover the store did name is cleaned up.
    std::fs::create_dir(staging.join("v000009")).unwrap();
    advance(&store).unwrap();
    assert_eq!(entries(&staging), ["drafts", "notes.txt"]);
    assert_eq!(
        std::fs::read_to_string(staging.join("drafts/a.md")).unwrap(),
        "mine too"
    );
}

#[test]
fn init_refuses_someone_elses_staging_or_versions_folder() {
    for folder in ["staging", "versions"] {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("store");
        std::fs::create_dir_all(root.join(folder)).unwrap();
        std::fs::write(root.join(folder).join("report.pdf"), "theirs").unwrap();
        let err = FsStore::init(&root, [("a.md", "x\n")], "first").unwrap_err();
        assert!(matches!(err, FsStoreError::AlreadyExists { .. }), "{err}");
        assert_eq!(
            std::fs::read_to_string(root.join(folder).join("report.pdf")).unwrap(),
            "theirs"
        );
    }
    // A symlinked staging folder is refused before anything is created through it.
    let dir = tempfile::tempdir().unwrap();
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let root = dir.path().join("store");
    std::fs::create_dir(&root).unwrap();
    std::os::unix::fs::symlink(&elsewhere, root.join("staging")).unwrap();
    let err = FsStore::init(&root, [("a.md", "x\n")], "first").unwrap_err();
    assert!(matches!(err, FsStoreError::NotOurs { .. }), "{err}");
    assert!(entries(&elsewhere).is_empty());
}

/// Whether the store names its versions this way: `v` and the number, at least six digits.
fn store_named(name: &str) -> bool {
    name.strip_prefix('v')
        .and_then(|digits| digits.parse::<u64>().ok())
        .is_some_and(|n| format!("v{n:06}") == name)
}

/// Every path under `dir`, relative, sorted.
fn tree(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(next) = stack.pop() {
        for entry in std::fs::read_dir(&next).unwrap() {
            let path = entry.unwrap().path();
            found.push(path.strip_prefix(dir).unwrap().display().to_string());
            if path.is_dir() && !path.is_symlink() {
                stack.push(path);
            }
        }
    }
    found.sort();
    found
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Whatever a user leaves inside the store's folders, a write removes none of it: only
    /// version-named leftovers go.
    #[test]
    fn a_write_never_removes_a_path_the_store_did_not_create(
        names in proptest::collection::btree_set("(v[0-9]{0,7}|[a-z][a-z0-9_.-]{0,11})", 1..6),
        in_versions in proptest::bool::ANY,
    ) {
        let (_dir, store) = two_skill_store();
        let folder = store.root().join(if in_versions { "versions" } else { "staging" });
        // Names the store gives its own versions are its own; everything else is the user's.
        let names: std::collections::BTreeSet<String> = names
            .into_iter()
            .filter(|n| !store_named(n))
            .collect();
        for name in &names {
            std::fs::write(folder.join(name), "user data").unwrap();
        }
        let before: Vec<String> = tree(&folder)
            .into_iter()
            .filter(|p| names.contains(p))
            .collect();
        advance(&store).unwrap();
        let after = tree(&folder);
        for path in &before {
            prop_assert!(after.contains(path), "{path} was removed");
        }
    }
}
