//! Integration tests of `evolution-store-fs` through its public API, on a real file system.

mod basics;
mod crash;
mod damage;
mod foreign;
mod lock;
mod model;
mod names;

use std::path::Path;

use evolution_store_fs::FsStore;

/// A store with two skills, in a fresh temporary directory.
pub(crate) fn two_skill_store() -> (tempfile::TempDir, FsStore) {
    let dir = tempfile::tempdir().unwrap();
    let store = FsStore::init(
        dir.path().join("skills"),
        [
            (
                "action-reasoning.md",
                "---\nname: action\n---\nLook twice.\n",
            ),
            (
                "default-strategy.md",
                "---\nname: default\n---\nBe careful.\n",
            ),
        ],
        "initial skills",
    )
    .unwrap();
    (dir, store)
}

/// Names of the entries directly inside `dir`, sorted.
pub(crate) fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.map(|e| e.unwrap().file_name().into_string().unwrap())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}
