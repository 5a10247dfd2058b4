//! Document names that could leave the store are refused on every path in.

use evolution_store_fs::{Change, FsStore, FsStoreError, VersionId};
use evolution_types::{SkillStore, StoreError};

use crate::{entries, two_skill_store};

const BAD_NAMES: &[&str] = &[
    "",
    ".",
    "..",
    "../escape.md",
    "sub/../../escape.md",
    "/etc/passwd",
    "sub/file.md",
    "sub\\file.md",
    "C:evil.md",
    "nul\0.md",
];

#[test]
fn bad_names_are_refused_by_reads_writes_and_init() {
    let (dir, store) = two_skill_store();
    for &name in BAD_NAMES {
        assert!(
            matches!(store.read(name), Err(FsStoreError::InvalidName { .. })),
            "read {name:?}"
        );
        assert!(
            matches!(
                store.read_at(VersionId::new(1), name),
                Err(FsStoreError::InvalidName { .. })
            ),
            "read_at {name:?}"
        );
        assert!(
            matches!(store.read_skill(name), Err(StoreError::InvalidName { .. })),
            "read_skill {name:?}"
        );
        assert!(
            matches!(
                store.advance_version(&[Change::write(name, "x")], "bad"),
                Err(FsStoreError::InvalidName { .. })
            ),
            "write {name:?}"
        );
        assert!(
            matches!(
                store.advance_version(&[Change::delete(name)], "bad"),
                Err(FsStoreError::InvalidName { .. })
            ),
            "delete {name:?}"
        );
        assert!(
            matches!(
                FsStore::init(dir.path().join("fresh"), [(name, "x")], "bad"),
                Err(FsStoreError::InvalidName { .. })
            ),
            "init {name:?}"
        );
    }
    // Nothing was written anywhere: no new version, no file outside the store.
    assert_eq!(store.history().unwrap().len(), 1);
    assert_eq!(entries(dir.path()), ["skills"]);
}

#[test]
fn a_bad_name_among_good_changes_rejects_the_whole_advance() {
    let (_dir, store) = two_skill_store();
    let result = store.advance_version(
        &[
            Change::write("good.md", "g"),
            Change::write("../bad.md", "b"),
        ],
        "mixed",
    );
    assert!(matches!(result, Err(FsStoreError::InvalidName { name, .. }) if name == "../bad.md"));
    assert!(matches!(
        store.read("good.md"),
        Err(FsStoreError::NotFound { .. })
    ));
}
