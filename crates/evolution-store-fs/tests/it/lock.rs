//! Two writers never interleave: every advance starts from the version the previous one wrote.

use std::thread;

use evolution_store_fs::{Change, FsStore};

const WRITERS: usize = 3;
const ADVANCES_EACH: usize = 12;

#[test]
fn concurrent_writers_on_separate_handles_form_one_linear_history() {
    let (_dir, store) = crate::two_skill_store();
    let root = store.root().to_path_buf();
    thread::scope(|scope| {
        for w in 0..WRITERS {
            let root = root.clone();
            scope.spawn(move || {
                // Each writer has its own handle, hence its own lock file descriptor.
                let own = FsStore::open(&root).unwrap();
                for k in 1..=ADVANCES_EACH {
                    own.advance_version(
                        &[Change::write(format!("writer-{w}.txt"), k.to_string())],
                        &format!("writer {w} step {k}"),
                    )
                    .unwrap();
                }
            });
        }
    });

    // No update was lost: every writer's last value is in the final version.
    for w in 0..WRITERS {
        assert_eq!(
            store.read(&format!("writer-{w}.txt")).unwrap(),
            ADVANCES_EACH.to_string()
        );
    }
    // The history is one chain: each advance's parent is the version written just before it.
    let history = store.history().unwrap();
    assert_eq!(history.len(), 1 + WRITERS * ADVANCES_EACH);
    for pair in history.windows(2) {
        assert_eq!(pair[1].previous, Some(pair[0].version));
        assert_eq!(pair[1].version.number(), pair[0].version.number() + 1);
    }
    // Each version holds exactly the values written up to it, so no two writers interleaved.
    for entry in &history[1..] {
        let files = store.list_at(entry.version).unwrap();
        let prev_files = store.list_at(entry.previous.unwrap()).unwrap();
        assert!(files.len() == prev_files.len() || files.len() == prev_files.len() + 1);
    }
}

#[test]
fn processes_starting_on_a_new_root_at_once_share_one_store() {
    use evolution_store_fs::Opened;
    const STARTERS: usize = 4;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("store");
    let outcomes: Vec<Opened> = thread::scope(|scope| {
        let handles: Vec<_> = (0..STARTERS)
            .map(|_| {
                let root = root.clone();
                scope.spawn(move || {
                    let (store, opened) =
                        FsStore::open_or_init(&root, [("SKILL.md", "1. start")], "import").unwrap();
                    assert_eq!(store.read("SKILL.md").unwrap(), "1. start");
                    opened
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let created = outcomes.iter().filter(|o| **o == Opened::Created).count();
    assert_eq!(created, 1, "{outcomes:?}");
    assert_eq!(FsStore::open(&root).unwrap().history().unwrap().len(), 1);
}

#[test]
fn open_or_init_still_refuses_a_folder_of_someone_elses_files() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "mine").unwrap();
    let err = FsStore::open_or_init(dir.path(), [("SKILL.md", "x")], "import").unwrap_err();
    assert!(
        matches!(err, evolution_store_fs::FsStoreError::AlreadyExists { .. }),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("notes.txt")).unwrap(),
        "mine"
    );
}
