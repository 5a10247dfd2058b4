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

/// Every configuration structure the program deserializes from a TOML file, with the table of
/// docs/run-config.md that documents it (`""`: a file's top level, whose keys are tables).
const CONFIG_STRUCTS: [(&str, &str, &str); 21] = [
    (
        "crates/evolution-project/src/run/config/mod.rs",
        "RunFile",
        "",
    ),
    (
        "crates/evolution-project/src/run/config/preferences.rs",
        "PreferencesSection",
        "preferences",
    ),
    (
        "crates/evolution-project/src/run/config/gating.rs",
        "GatingFile",
        "",
    ),
    (
        "crates/evolution-project/src/run/config/mod.rs",
        "RunSection",
        "run",
    ),
    (
        "crates/evolution-project/src/run/config/gating.rs",
        "GatingRun",
        "run",
    ),
    (
        "crates/evolution-project/src/run/config/agent.rs",
        "AgentOnly",
        "",
    ),
    (
        "crates/evolution-project/src/run/config/agent.rs",
        "AgentSection",
        "agent",
    ),
    (
        "crates/evolution-project/src/run/config/questions.rs",
        "QuestionsSection",
        "questions",
    ),
    (
        "crates/evolution-project/src/run/config/gate.rs",
        "GateSection",
        "gate",
    ),
    (
        "crates/evolution-project/src/run/config/evolve.rs",
        "EvolveSection",
        "evolve",
    ),
    (
        "crates/evolution-harness/src/budget.rs",
        "BudgetLimits",
        "budget",
    ),
    (
        "crates/evolution-harness/src/budget.rs",
        "Price",
        "budget.prices",
    ),
    ("crates/evolution-project/src/llm/mod.rs", "FileConfig", ""),
    (
        "crates/evolution-project/src/llm/mod.rs",
        "LlmSection",
        "llm",
    ),
    (
        "crates/evolution-llm-openai/src/config.rs",
        "OpenAiConfig",
        "llm.openai",
    ),
    (
        "crates/evolution-llm-openai/src/config.rs",
        "Timeouts",
        "llm.openai.timeouts",
    ),
    (
        "crates/evolution-llm-openai/src/config.rs",
        "RetryPolicy",
        "llm.openai.retry",
    ),
    (
        "crates/evolution-project/src/local.rs",
        "LocalSection",
        "llm.local",
    ),
    (
        "crates/evolution-project/src/profile.rs",
        "ProfileSection",
        "profile",
    ),
    (
        "crates/evolution-harvest/src/signals.rs",
        "HarvestRules",
        "harvest",
    ),
    (
        "crates/evolution-project/src/harvest/config.rs",
        "HarvestFile",
        "",
    ),
];

/// The enumerations whose values a configuration key takes (`snake_case` on the page), with
/// the table whose section must name each value.
const CONFIG_ENUMS: [(&str, &str, &str); 4] = [
    (
        "crates/evolution-project/src/run/config/agent.rs",
        "Mode",
        "agent",
    ),
    (
        "crates/evolution-project/src/run/config/agent.rs",
        "ScoringChoice",
        "agent",
    ),
    (
        "crates/evolution-project/src/run/config/gate.rs",
        "ParamsChoice",
        "gate",
    ),
    (
        "crates/evolution-harvest/src/signals.rs",
        "SignalKind",
        "harvest",
    ),
];

/// The body of `struct name {…}` or `enum name {…}` in `source`: the lines up to the closing
/// brace at the item's indentation.
fn item_body<'a>(source: &'a str, keyword: &str, name: &str) -> Option<&'a str> {
    let head = format!("{keyword} {name} {{");
    let start = source
        .match_indices(&head)
        .map(|(at, _)| at)
        .find(|&at| at == 0 || source[..at].ends_with(['\n', ' ']))?;
    let indent_start = source[..start].rfind('\n').map_or(0, |n| n + 1);
    let indent = &source[indent_start..start];
    let indent: String = indent.chars().take_while(|c| c.is_whitespace()).collect();
    let body_start = start + head.len();
    let end = source[body_start..].find(&format!("\n{indent}}}"))?;
    Some(&source[body_start..body_start + end])
}

/// The keys a `#[derive(Deserialize)]` struct accepts: its field names, or their
/// `#[serde(rename = "…")]`; skipped fields are left out.
fn serde_keys(body: &str) -> Vec<String> {
    let mut keys = Vec::new();
    let mut rename: Option<String> = None;
    let mut skip = false;
    for line in body.lines().map(str::trim) {
        if line.starts_with("#[serde(") {
            if let Some(at) = line.find("rename = \"") {
                let rest = &line[at + "rename = \"".len()..];
                rename = rest.split('"').next().map(str::to_owned);
            }
            skip |= line.contains("skip)")
                || line.contains("skip,")
                || line.contains("skip_deserializing");
            continue;
        }
        if line.starts_with("//") || line.starts_with("#[") || line.is_empty() {
            continue;
        }
        let field = line
            .trim_start_matches("pub(crate) ")
            .trim_start_matches("pub ");
        let Some((name, _)) = field.split_once(':') else {
            continue;
        };
        if name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') && !name.is_empty() {
            if !skip {
                keys.push(rename.take().unwrap_or_else(|| name.to_owned()));
            }
            rename = None;
            skip = false;
        }
    }
    keys
}

/// The variant names of an enum body, in `snake_case`.
fn snake_case_variants(body: &str) -> Vec<String> {
    body.lines()
        .map(str::trim)
        .filter(|line| !line.starts_with("//") && !line.starts_with("#[") && !line.is_empty())
        .filter_map(|line| line.strip_suffix(','))
        .filter(|name| name.chars().all(|c| c.is_ascii_alphanumeric()))
        .map(|name| {
            let mut out = String::new();
            for (index, c) in name.chars().enumerate() {
                if c.is_ascii_uppercase() && index > 0 {
                    out.push('_');
                }
                out.push(c.to_ascii_lowercase());
            }
            out
        })
        .collect()
}

/// The text of every section of `page` whose heading names `` `[table]` ``, each up to the
/// next heading of the same or a higher level.
fn table_sections(page: &str, table: &str) -> String {
    let marker = format!("`[{table}]`");
    let lines: Vec<&str> = page.lines().collect();
    let level = |line: &str| line.chars().take_while(|&c| c == '#').count();
    let mut text = String::new();
    for (index, line) in lines.iter().enumerate() {
        let own = level(line);
        if own == 0 || !line.contains(&marker) {
            continue;
        }
        for next in &lines[index..] {
            let next_level = level(next);
            if next_level > 0 && next_level <= own && !std::ptr::eq(*next, *line) {
                break;
            }
            text.push_str(next);
            text.push('\n');
        }
    }
    text
}

/// The `struct` names of `#[derive(…Deserialize…)]` items in `source`.
fn deserialized_structs(source: &str) -> Vec<String> {
    let lines: Vec<&str> = source.lines().collect();
    let mut found = Vec::new();
    for (index, line) in lines.iter().enumerate() {
        if !(line.trim_start().starts_with("#[derive(") && line.contains("Deserialize")) {
            continue;
        }
        let item = lines[index + 1..]
            .iter()
            .map(|l| l.trim())
            .find(|l| !l.starts_with("#[") && !l.starts_with("//"));
        if let Some(item) = item {
            let item = item
                .trim_start_matches("pub(crate) ")
                .trim_start_matches("pub ");
            if let Some(rest) = item.strip_prefix("struct ") {
                found.push(rest.split([' ', '{', '<']).next().unwrap_or("").to_owned());
            }
        }
    }
    found
}

#[test]
fn the_configuration_page_documents_every_key_the_program_accepts() {
    let root = root();
    let page = std::fs::read_to_string(root.join("docs/run-config.md")).unwrap();
    let mut missing = Vec::new();
    for (file, name, table) in CONFIG_STRUCTS {
        let source = std::fs::read_to_string(root.join(file)).unwrap();
        let body = item_body(&source, "struct", name).unwrap_or_else(|| {
            panic!("{file} no longer defines struct {name}: update CONFIG_STRUCTS")
        });
        let keys = serde_keys(body);
        assert!(!keys.is_empty(), "no keys read from {file}'s {name}");
        let section = table_sections(&page, table);
        for key in keys {
            let sub_table = if table.is_empty() {
                key.clone()
            } else {
                format!("{table}.{key}")
            };
            let as_table = page
                .lines()
                .any(|line| line.starts_with('#') && line.contains(&format!("`[{sub_table}]`")));
            let as_key = !table.is_empty() && section.contains(&format!("`{key}`"));
            if !(as_table || as_key) {
                missing.push(format!("[{table}] {key} ({file}'s {name})"));
            }
        }
    }
    for (file, name, table) in CONFIG_ENUMS {
        let source = std::fs::read_to_string(root.join(file)).unwrap();
        let body = item_body(&source, "enum", name)
            .unwrap_or_else(|| panic!("{file} no longer defines enum {name}: update CONFIG_ENUMS"));
        let section = table_sections(&page, table);
        for value in snake_case_variants(body) {
            if !section.contains(&format!("\"{value}\"")) {
                missing.push(format!("[{table}] value \"{value}\" ({file}'s {name})"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "docs/run-config.md does not document these configuration keys:\n{}",
        missing.join("\n")
    );
    // A configuration struct added to the program's configuration files must be listed above.
    let files: BTreeSet<&str> = CONFIG_STRUCTS
        .iter()
        .map(|(file, _, _)| *file)
        .filter(|file| file.starts_with("crates/evolution-project/"))
        .collect();
    for file in files {
        let source = std::fs::read_to_string(root.join(file)).unwrap();
        for name in deserialized_structs(&source) {
            assert!(
                CONFIG_STRUCTS
                    .iter()
                    .any(|(f, n, _)| *f == file && *n == name),
                "{file} deserializes struct {name}, which CONFIG_STRUCTS does not map to a table \
                 of docs/run-config.md"
            );
        }
    }
}

#[test]
fn the_configuration_key_reader_reads_fields_renames_and_variants() {
    let body = "\n    /// Doc.\n    pub name: String,\n    #[serde(default, rename = \"run\")]\n    \
                _run: Option<u8>,\n    #[serde(skip)]\n    hidden: u8,\n    pub(crate) x_y: Vec<u8>,\n";
    assert_eq!(serde_keys(body), ["name", "run", "x_y"]);
    let source = "enum Mode {\n    #[default]\n    PerQuestion,\n    Worker,\n}\n";
    let body = item_body(source, "enum", "Mode").unwrap();
    assert_eq!(snake_case_variants(body), ["per_question", "worker"]);
    let page = "# A\n## `[llm]`\nkey `model`\n### `[llm.x]`\n`deep`\n## `[other]`\n`no`\n";
    let section = table_sections(page, "llm");
    assert!(section.contains("`model`") && section.contains("`deep`") && !section.contains("`no`"));
    assert_eq!(
        deserialized_structs(
            "#[derive(Debug, Deserialize)]\n#[serde(x)]\npub(crate) struct A {\n}\n"
        ),
        ["A"]
    );
}

/// The user's documentation: the guides a person who installed the program reads.
const USER_DOCS: [&str; 6] = [
    "README.md",
    "crates/skill-evolve/README.md",
    "docs/run-config.md",
    "docs/trajectories.md",
    "docs/skill-layouts.md",
    "docs/agent-protocol.md",
];

/// Pages written for someone who has the program but not its sources: no build commands.
const BINARY_USER_DOCS: [&str; 3] = [
    "docs/run-config.md",
    "docs/trajectories.md",
    "docs/skill-layouts.md",
];

/// The string literals and `///` comments (clap turns the latter into `--help` texts) of a
/// Rust file, each with the line it starts on; a literal keeps its quotes, so a literal that
/// is a bare name reads as quoted. Ordinary `//` comments are left out: no user sees them.
fn user_visible_rust_text(source: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    let mut literal: Option<(usize, String)> = None;
    let mut escaped = false;
    for (number, line) in source.lines().enumerate() {
        let number = number + 1;
        if literal.is_none()
            && let Some(doc) = line.trim_start().strip_prefix("///")
        {
            found.push((number, doc.to_owned()));
            continue;
        }
        let chars: Vec<char> = line.chars().collect();
        let mut index = 0;
        while index < chars.len() {
            let c = chars[index];
            if let Some((_, text)) = literal.as_mut() {
                text.push(c);
                if escaped {
                    escaped = false;
                } else if c == '\\' {
                    escaped = true;
                } else if c == '"' {
                    found.extend(literal.take());
                }
            } else if c == '/' && chars.get(index + 1) == Some(&'/') {
                break;
            } else if c == '\'' && chars.get(index + 1) == Some(&'"') {
                index += 2; // the character literal '"'
            } else if c == '"' {
                literal = Some((number, "\"".to_owned()));
            }
            index += 1;
        }
        if let Some((_, text)) = literal.as_mut() {
            text.push('\n');
        }
    }
    found
}

/// Whether `text` holds a word only this project's authors know, and which.
///
/// `seed` is allowed where it is a name (the gate's `seed` preset, quoted, in a list of
/// choices or as `run` prints it, `seed parameters`; a `seed` key, `--seed`) or a random seed
/// (`seed of`, `seed 2026…`), never as the name of a planning document.
/// `video_id` is allowed where it is explained as a field's name, and on the agent protocol's
/// page, which describes that field.
fn private_words(text: &str, binary_user: bool, protocol_page: bool) -> Vec<&'static str> {
    let mut words = Vec::new();
    let lower = text.to_lowercase();
    // Assembled from parts so that the repository-wide citation check above does not flag
    // this list itself.
    if text.contains("DESIGN") {
        words.push("DESIGN");
    }
    let plan = ["plan", " task"].concat();
    for (needle, word) in [
        (plan.as_str(), "a planning task"),
        ("§", "§"),
        ("issue 0", "issue N"),
        ("phase 1", "Phase N"),
    ] {
        if lower.contains(needle) {
            words.push(word);
        }
    }
    let is_word_char = |c: char| c.is_alphanumeric() || c == '_';
    for (at, _) in lower.match_indices("004") {
        let before = lower[..at].chars().next_back();
        let after = lower[at + 3..].chars().next();
        // A number's digits (`10040`, or a decimal such as `0.004`) are not the file's name.
        let numeric = before.is_some_and(|c| c.is_ascii_digit() || c == '.');
        if !numeric && !after.is_some_and(|c| c.is_ascii_digit()) {
            words.push("004");
        }
    }
    for (at, _) in lower.match_indices("seed") {
        let before = lower[..at].chars().next_back();
        let rest = &lower[at + 4..];
        if before.is_some_and(is_word_char) || rest.starts_with(|c: char| is_word_char(c)) {
            continue; // part of another word: `seeded`, `gate_seed`
        }
        let named = before.is_some_and(|c| matches!(c, '`' | '"' | '-' | '\'' | '['))
            || [
                " =",
                ":",
                "`",
                "\"",
                "\\",
                ")",
                " of ",
                " (",
                " |",
                " parameters",
            ]
            .iter()
            .any(|follow| rest.starts_with(follow))
            || rest
                .strip_prefix(' ')
                .is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit()));
        if !named {
            words.push("seed");
        }
    }
    if !protocol_page && lower.contains("video_id") && !lower.contains("field named `video_id`") {
        words.push("video_id");
    }
    if binary_user && lower.contains("cargo xtask") {
        words.push("cargo xtask");
    }
    words
}

#[test]
fn users_see_no_word_only_the_authors_know() {
    let root = root();
    let mut found = Vec::new();
    for doc in USER_DOCS {
        let text = std::fs::read_to_string(root.join(doc)).unwrap();
        let binary_user = BINARY_USER_DOCS.contains(&doc);
        let protocol = doc == "docs/agent-protocol.md";
        for (number, line) in text.lines().enumerate() {
            for word in private_words(line, binary_user, protocol) {
                found.push(format!("{doc}:{}: {word}: {}", number + 1, line.trim()));
            }
        }
    }
    let mut sources = Vec::new();
    for crate_src in ["crates/skill-evolve/src", "crates/evolution-project/src"] {
        repo_files(&root.join(crate_src), &[".rs"], &mut sources);
    }
    assert!(
        sources.len() > 10,
        "expected the sources of skill-evolve and evolution-project, found {sources:?}"
    );
    for file in &sources {
        let source = std::fs::read_to_string(file).unwrap();
        // Unit tests are not user-facing.
        let source = source.split("#[cfg(test)]").next().unwrap_or(&source);
        let shown = file
            .strip_prefix(&root)
            .unwrap_or(file)
            .display()
            .to_string();
        for (number, text) in user_visible_rust_text(source) {
            for word in private_words(&text, true, false) {
                found.push(format!("{shown}:{number}: {word}: {}", text.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "explain these in plain words for users (and say what to do instead of a build \
         command):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_vocabulary_check_tells_names_from_private_words() {
    assert!(private_words("params = \"seed\"", true, false).is_empty());
    assert!(
        private_words(
            "the seed of the shuffle, seed 20261129, `seed`",
            true,
            false
        )
        .is_empty()
    );
    assert_eq!(private_words("as the seed says", true, false), ["seed"]);
    assert_eq!(
        private_words("run cargo xtask fetch-model", true, false),
        ["cargo xtask"]
    );
    assert!(private_words("run cargo xtask demo", false, false).is_empty());
    assert_eq!(
        private_words("keyed by video_id", false, false),
        ["video_id"]
    );
    assert!(private_words("the field named `video_id`", false, false).is_empty());
    assert!(private_words("keyed by video_id", false, true).is_empty());
    assert_eq!(private_words("see DESIGN", false, false), ["DESIGN"]);
    assert!(private_words("id 10040", false, false).is_empty());
    assert!(private_words("power: 0.004 at", false, false).is_empty());
    assert_eq!(
        user_visible_rust_text(
            "    /// Help.\n    // \"note\"\n    let a = \"x \\\"y\\\"\"; f('\"', \"z\n  w\");\n"
        ),
        [
            (1, " Help.".to_owned()),
            (3, "\"x \\\"y\\\"\"".to_owned()),
            (3, "\"z\n  w\"".to_owned()),
        ]
    );
    assert!(private_words("\"seed\"", true, false).is_empty());
}
