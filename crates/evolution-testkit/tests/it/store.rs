use evolution_testkit::{MemoryStore, fixtures};
use evolution_types::{PromptStore, SkillStore, StoreError, resolve_skill_file};

#[test]
fn memory_store_serves_both_ports_sorted() {
    let store = MemoryStore::new()
        .with("b.md", fixtures::skill_document("b", "B", "body"))
        .with("a.md", "A");
    assert_eq!(store.list_skill_files().unwrap(), ["a.md", "b.md"]);
    assert_eq!(store.list_prompt_files().unwrap(), ["a.md", "b.md"]);
    assert_eq!(store.read_prompt("a.md").unwrap(), "A");
    assert!(
        store
            .read_skill("b.md")
            .unwrap()
            .starts_with("---\nname: b\n")
    );
    assert_eq!(
        store.read_skill("c.md"),
        Err(StoreError::NotFound {
            name: "c.md".into()
        })
    );
    assert_eq!(resolve_skill_file(&store, "B").unwrap(), "b.md");
    assert_eq!(
        resolve_skill_file(&store, "C").unwrap(),
        "default-strategy.md"
    );
    store.remove("a.md");
    assert_eq!(store.snapshot().len(), 1);
}
