//! Random sequences of advances and rollbacks agree with a plain in-memory model.

use std::collections::BTreeMap;

use evolution_store_fs::{Change, FsStore, FsStoreError, VersionId};
use proptest::prelude::*;

const NAMES: &[&str] = &["a.md", "b.md", "c.md"];

#[derive(Debug, Clone)]
enum Op {
    Write(usize, String),
    Delete(usize),
    Rollback(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0..NAMES.len(), "[a-z\n]{0,12}").prop_map(|(i, s)| Op::Write(i, s)),
        1 => (0..NAMES.len()).prop_map(Op::Delete),
        1 => (0..8_usize).prop_map(Op::Rollback),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    #[test]
    fn store_matches_model(ops in proptest::collection::vec(op(), 1..8)) {
        let dir = tempfile::tempdir().unwrap();
        let store = FsStore::init(dir.path(), [("a.md", "start\n")], "init").unwrap();
        // Every version ever written, and which one is current.
        let mut versions: Vec<BTreeMap<String, String>> =
            vec![BTreeMap::from([("a.md".to_owned(), "start\n".to_owned())])];
        let mut current = 0_usize;
        for op in ops {
            match op {
                Op::Write(i, text) => {
                    let id = store.advance_version(&[Change::write(NAMES[i], text.clone())], "w").unwrap();
                    let mut next = versions[current].clone();
                    next.insert(NAMES[i].to_owned(), text);
                    versions.push(next);
                    current = versions.len() - 1;
                    prop_assert_eq!(id.number(), versions.len() as u64);
                }
                Op::Delete(i) => {
                    let result = store.advance_version(&[Change::delete(NAMES[i])], "d");
                    if versions[current].contains_key(NAMES[i]) {
                        result.unwrap();
                        let mut next = versions[current].clone();
                        next.remove(NAMES[i]);
                        versions.push(next);
                        current = versions.len() - 1;
                    } else {
                        let refused = matches!(result, Err(FsStoreError::NotFound { .. }));
                        prop_assert!(refused);
                    }
                }
                Op::Rollback(k) => {
                    let target = VersionId::new(k as u64 + 1);
                    let result = store.rollback(target);
                    if k < versions.len() {
                        result.unwrap();
                        current = k;
                    } else {
                        let refused = matches!(result, Err(FsStoreError::UnknownVersion { .. }));
                        prop_assert!(refused);
                    }
                }
            }
            // The current version and every older one read back exactly as modelled.
            prop_assert_eq!(store.current_version().unwrap().number(), current as u64 + 1);
            for (i, model) in versions.iter().enumerate() {
                let id = VersionId::new(i as u64 + 1);
                let names: Vec<String> = model.keys().cloned().collect();
                prop_assert_eq!(store.list_at(id).unwrap(), names);
                for (name, text) in model {
                    prop_assert_eq!(&store.read_at(id, name).unwrap(), text);
                }
            }
        }
    }
}
