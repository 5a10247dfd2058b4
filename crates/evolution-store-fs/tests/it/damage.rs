//! A damaged store is reported as corrupt, never read as if it were fine.

use evolution_store_fs::{FsStore, FsStoreError};
use evolution_types::{SkillStore, StoreError};

use crate::two_skill_store;

#[test]
fn unreadable_manifest_is_corrupt() {
    let (_dir, store) = two_skill_store();
    std::fs::write(store.root().join("manifest.json"), "{ not json").unwrap();
    assert!(matches!(
        FsStore::open(store.root()),
        Err(FsStoreError::Corrupt { .. })
    ));
    assert!(matches!(
        store.list_skill_files(),
        Err(StoreError::Corrupt { .. })
    ));
}

#[test]
fn missing_version_directory_is_corrupt() {
    let (_dir, store) = two_skill_store();
    std::fs::remove_dir_all(store.root().join("versions").join("v000001")).unwrap();
    assert!(matches!(store.list(), Err(FsStoreError::Corrupt { .. })));
    assert!(matches!(
        store.read("action-reasoning.md"),
        Err(FsStoreError::Corrupt { .. })
    ));
}

#[test]
fn non_utf8_document_is_corrupt() {
    let (_dir, store) = two_skill_store();
    let path = store.root().join("versions/v000001/action-reasoning.md");
    std::fs::write(path, [0xff, 0xfe, 0x00]).unwrap();
    assert!(matches!(
        store.read_skill("action-reasoning.md"),
        Err(StoreError::Corrupt { .. })
    ));
}

#[cfg(unix)]
#[test]
fn symlink_inside_a_version_is_not_followed() {
    let (dir, store) = two_skill_store();
    std::fs::write(dir.path().join("secret.txt"), "secret").unwrap();
    std::os::unix::fs::symlink(
        dir.path().join("secret.txt"),
        store.root().join("versions/v000001/link.md"),
    )
    .unwrap();
    assert!(matches!(
        store.read("link.md"),
        Err(FsStoreError::Corrupt { .. })
    ));
    assert!(matches!(store.list(), Err(FsStoreError::Corrupt { .. })));
}
