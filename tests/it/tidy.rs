//! Tidy checks: the promises the documentation makes about the repository itself.
//!
//! The code map in docs/ARCHITECTURE.md names every workspace member and nothing else; no
//! Markdown file cites a repository path that does not exist; every crate opens with a
//! crate-level doc comment.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the tests crate sits in the workspace root")
        .to_path_buf()
}

/// Workspace members as the root manifest declares them: `crates/*`, `xtask`, `tests`.
fn members() -> BTreeSet<String> {
    let root = root();
    let mut members: BTreeSet<String> = std::fs::read_dir(root.join("crates"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.join("Cargo.toml").is_file())
        .map(|path| format!("crates/{}", path.file_name().unwrap().to_string_lossy()))
        .collect();
    members.insert("xtask".to_owned());
    members.insert("tests".to_owned());
    members
}

/// Folders named by the code map's `### \`folder\`` headings.
fn code_map_entries(architecture: &str) -> BTreeSet<String> {
    architecture
        .lines()
        .filter_map(|line| line.strip_prefix("### `"))
        .filter_map(|rest| rest.split('`').next())
        .map(|folder| folder.trim_end_matches('/').to_owned())
        .collect()
}

#[test]
fn the_code_map_names_every_member_and_no_other() {
    let architecture = std::fs::read_to_string(root().join("docs/ARCHITECTURE.md")).unwrap();
    let mapped = code_map_entries(&architecture);
    let members = members();
    let unmapped: Vec<_> = members.difference(&mapped).collect();
    let stale: Vec<_> = mapped.difference(&members).collect();
    assert!(
        unmapped.is_empty() && stale.is_empty(),
        "docs/ARCHITECTURE.md's code map is out of date: members without a heading {unmapped:?}, \
         headings without a member {stale:?}"
    );
}

/// The repository's files ending in one of `extensions`, outside build output, vendored and
/// generated folders (hidden folders too, except `.ci` and `.config`).
fn repo_files(dir: &Path, extensions: &[&str], found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            let skipped = name.starts_with('.') && name != ".ci" && name != ".config"
                || matches!(
                    name.as_str(),
                    "target" | "node_modules" | "corpus" | "artifacts"
                );
            if !skipped {
                repo_files(&path, extensions, found);
            }
        } else if extensions.iter().any(|ext| name.ends_with(ext)) {
            found.push(path);
        }
    }
}

/// Repository paths a Markdown text cites: relative link targets (resolved from the file's
/// folder) and code spans that start with a top-level folder of the repository (resolved from
/// the root). Placeholders (`<name>`), globs and `path::item` suffixes are not paths.
fn cited_paths(text: &str, file_dir: &Path, root: &Path) -> Vec<(String, PathBuf)> {
    const TOP: [&str; 7] = [
        "crates/", "docs/", "xtask/", "tests/", ".ci/", ".config/", "fuzz/",
    ];
    let mut cited = Vec::new();
    let is_plain = |path: &str| {
        !path.is_empty()
            && !path.contains(['<', '>', '*', '{', '}', ' ', '$', '|'])
            && !path.contains("...")
    };
    for (index, _) in text.match_indices("](") {
        let rest = &text[index + 2..];
        let Some(end) = rest.find(')') else { continue };
        let target = rest[..end].split('#').next().unwrap_or("");
        if target.contains("://") || target.starts_with("mailto:") || !is_plain(target) {
            continue;
        }
        cited.push((target.to_owned(), file_dir.join(target)));
    }
    for span in text.split('`').skip(1).step_by(2) {
        let path = span.split("::").next().unwrap_or("");
        let path = path.split(':').next().unwrap_or("");
        if TOP.iter().any(|top| path.starts_with(top)) && is_plain(path) {
            cited.push((path.to_owned(), root.join(path)));
        }
    }
    cited
}

#[test]
fn documentation_cites_only_paths_that_exist() {
    let root = root();
    let mut files = Vec::new();
    repo_files(&root, &[".md"], &mut files);
    assert!(
        files.len() > 5,
        "expected the repository's Markdown files, found {files:?}"
    );
    let mut missing = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for (cited, path) in cited_paths(&text, file.parent().unwrap(), &root) {
            if !path.exists() {
                let shown = file
                    .strip_prefix(&root)
                    .unwrap_or(file)
                    .display()
                    .to_string();
                missing.push(format!("{shown}: {cited}"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "documentation cites paths that do not exist:\n{}",
        missing.join("\n")
    );
}

#[test]
fn every_crate_opens_with_a_crate_level_doc() {
    let root = root();
    let mut undocumented = Vec::new();
    for member in members() {
        for entry in ["src/lib.rs", "src/main.rs"] {
            let path = root.join(&member).join(entry);
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            let first = text.lines().map(str::trim).find(|line| !line.is_empty());
            if !first.is_some_and(|line| line.starts_with("//!")) {
                undocumented.push(format!("{member}/{entry}"));
            }
        }
    }
    assert!(
        undocumented.is_empty(),
        "crate roots without a `//!` crate-level doc: {undocumented:?}"
    );
}

#[test]
fn the_path_finder_sees_links_and_code_spans_but_not_placeholders() {
    let root = Path::new("/repo");
    let text = "See [the gate](docs/gate.md#e) and `crates/a/src/lib.rs::Thing`, \
                not `skills/<name>/SKILL.md`, `crates/*/Cargo.toml` or [web](https://x.org).";
    let cited: Vec<String> = cited_paths(text, Path::new("/repo/docs"), root)
        .into_iter()
        .map(|(shown, _)| shown)
        .collect();
    assert_eq!(cited, ["docs/gate.md", "crates/a/src/lib.rs"]);
}

/// The `layer` a member's manifest declares under `[package.metadata.evolution]`.
fn layer_of(member: &str) -> Option<String> {
    let manifest = std::fs::read_to_string(root().join(member).join("Cargo.toml")).ok()?;
    let line = manifest
        .lines()
        .find(|line| line.trim_start().starts_with("layer"))?;
    Some(line.split('"').nth(1)?.to_owned())
}

#[test]
fn every_kernel_crate_refuses_io_calls() {
    let kernel: Vec<String> = members()
        .into_iter()
        .filter(|member| layer_of(member).as_deref() == Some("kernel"))
        .collect();
    assert!(
        kernel.len() >= 5,
        "expected the kernel crates, found {kernel:?}"
    );
    let attribute =
        "#![cfg_attr(not(test), deny(clippy::disallowed_methods, clippy::disallowed_types))]";
    let lax: Vec<&String> = kernel
        .iter()
        .filter(|member| {
            let lib = std::fs::read_to_string(root().join(member).join("src/lib.rs"));
            !lib.is_ok_and(|text| text.contains(attribute))
        })
        .collect();
    assert!(
        lax.is_empty(),
        "kernel crates whose root does not deny clippy.toml's I/O calls: {lax:?}"
    );
}

#[test]
fn nothing_cites_documents_the_repository_does_not_have() {
    // Assembled from parts so that this file does not cite them itself.
    let forbidden = [
        ["seed", " §"].concat(),
        ["seed", " 00"].concat(),
        ["Seed", " 00"].concat(),
        ["plan", " Task"].concat(),
        ["DESIGN", " §"].concat(),
        ["DESIGN", ".md"].concat(),
        ["the seed", "'s"].concat(),
        ["The seed", "'s"].concat(),
    ];
    let root = root();
    let mut files = Vec::new();
    repo_files(&root, &[".rs", ".md", ".toml"], &mut files);
    let mut citations = Vec::new();
    for file in &files {
        let Ok(text) = std::fs::read_to_string(file) else {
            continue;
        };
        for (number, line) in text.lines().enumerate() {
            if forbidden.iter().any(|word| line.contains(word.as_str())) {
                let shown = file
                    .strip_prefix(&root)
                    .unwrap_or(file)
                    .display()
                    .to_string();
                citations.push(format!("{shown}:{}: {}", number + 1, line.trim()));
            }
        }
    }
    assert!(
        citations.is_empty(),
        "explain in place instead of citing the specification:\n{}",
        citations.join("\n")
    );
}
