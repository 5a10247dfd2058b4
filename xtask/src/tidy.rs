//! `cargo xtask tidy`: two house rules over the Rust sources of every workspace member.
//!
//! 1. No module file has more than [`MAX_CODE_LINES`] lines of non-test code. Test code is
//!    not counted: `#[cfg(test)]` items (the `mod tests { ... }` block), files only test
//!    builds compile, and integration tests under `tests/` (see [`crate::module_graph`]).
//! 2. No import cycle between the files of one crate target: the graph whose edges are the
//!    `crate::...` and `super::...` paths from one module file into another has no strongly
//!    connected component of more than one file. Each such component is reported as a cycle
//!    through its files, `crate: a.rs -> b.rs -> a.rs`, with the line that makes each step.
//!
//! The targets are those `cargo metadata` lists for each member (library, binaries, examples,
//! benchmarks, build script), integration tests excepted.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde::Deserialize;

use crate::module_graph::{self, Tree};

/// The most lines of non-test code one module file may have.
pub(crate) const MAX_CODE_LINES: usize = 800;

/// The outcome: one line per violation, plus counts for the summary.
#[derive(Debug)]
pub(crate) struct Report {
    pub(crate) violations: Vec<String>,
    files: usize,
    members: usize,
}

impl Report {
    pub(crate) fn is_ok(&self) -> bool {
        self.violations.is_empty()
    }

    /// The closing line: `tidy: OK (...)` or `tidy: N violation(s) ...`.
    pub(crate) fn summary(&self) -> String {
        let scope = format!("{} module files of {} members", self.files, self.members);
        if self.is_ok() {
            format!("tidy: OK ({scope}: none over {MAX_CODE_LINES} lines, no import cycle)")
        } else {
            let n = self.violations.len();
            let plural = if n == 1 { "" } else { "s" };
            format!("tidy: {n} violation{plural} in {scope}")
        }
    }
}

#[derive(Debug, Deserialize)]
struct Metadata {
    packages: Vec<Package>,
    workspace_members: Vec<String>,
}

#[derive(Debug, Deserialize)]
struct Package {
    id: String,
    name: String,
    manifest_path: PathBuf,
    targets: Vec<Target>,
}

#[derive(Debug, Deserialize)]
struct Target {
    kind: Vec<String>,
    src_path: PathBuf,
}

/// Runs both rules on the workspace of `manifest_path`.
pub(crate) fn check(manifest_path: &Path) -> Result<Report> {
    let output = crate::cargo()
        .args(["metadata", "--format-version", "1", "--no-deps"])
        .arg("--manifest-path")
        .arg(manifest_path)
        .output()
        .context("cannot run `cargo metadata`")?;
    if !output.status.success() {
        bail!(
            "`cargo metadata --manifest-path {}` failed ({}):\n{}",
            manifest_path.display(),
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let metadata: Metadata = serde_json::from_slice(&output.stdout)
        .context("cannot read the output of `cargo metadata`")?;
    let mut members: Vec<&Package> = metadata
        .packages
        .iter()
        .filter(|p| metadata.workspace_members.contains(&p.id))
        .collect();
    members.sort_by(|a, b| a.name.cmp(&b.name));
    let read = |path: &Path| std::fs::read_to_string(path);
    let mut violations = Vec::new();
    let mut measured = BTreeSet::new();
    for package in &members {
        let crate_dir = package.manifest_path.parent().unwrap_or(Path::new(""));
        for target in &package.targets {
            if target.kind.iter().any(|k| k == "test") {
                continue;
            }
            let tree = module_graph::build(&target.src_path, &read);
            violations.extend(check_tree(&package.name, crate_dir, &tree, &mut measured));
        }
    }
    Ok(Report {
        violations,
        files: measured.len(),
        members: members.len(),
    })
}

/// The violations of one target's tree. `measured` holds the files already measured by an
/// earlier target (a file shared through `#[path]` is reported once).
fn check_tree(
    package: &str,
    crate_dir: &Path,
    tree: &Tree,
    measured: &mut BTreeSet<PathBuf>,
) -> Vec<String> {
    let shown = |index: usize| {
        tree.files
            .get(index)
            .map_or_else(String::new, |f| show(crate_dir, &f.path))
    };
    let mut out: Vec<String> = tree
        .errors
        .iter()
        .map(|err| format!("{package}: {err}"))
        .collect();
    for file in &tree.files {
        if measured.insert(file.path.clone()) && file.code_lines > MAX_CODE_LINES {
            out.push(format!(
                "{package}: {} has {} lines of non-test code (at most {MAX_CODE_LINES}; split \
                 a concern into a module of its own)",
                show(crate_dir, &file.path),
                file.code_lines
            ));
        }
    }
    for component in module_graph::cycles(tree) {
        let cycle = module_graph::cycle_through(tree, &component);
        let names: Vec<String> = cycle.iter().map(|&i| shown(i)).collect();
        let steps: Vec<String> = cycle
            .windows(2)
            .filter_map(|pair| match pair {
                &[from, to] => {
                    let reference = tree.files.get(from)?.references.get(&to)?;
                    Some(format!(
                        "{}:{} {}",
                        shown(from),
                        reference.line,
                        reference.path
                    ))
                }
                _ => None,
            })
            .collect();
        let mut line = format!(
            "{package}: import cycle {} ({})",
            names.join(" -> "),
            steps.join(", ")
        );
        if component.len() + 1 > cycle.len() {
            let all: Vec<String> = component.iter().map(|&i| shown(i)).collect();
            line.push_str(&format!("; the cycle's component: {}", all.join(", ")));
        }
        out.push(line);
    }
    out
}

/// A file as reports name it: relative to the crate's `src/` when inside it, else to the
/// crate's folder, else as it is.
fn show(crate_dir: &Path, path: &Path) -> String {
    let relative = path
        .strip_prefix(crate_dir.join("src"))
        .or_else(|_| path.strip_prefix(crate_dir))
        .unwrap_or(path);
    relative.display().to_string()
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};
    use std::path::{Path, PathBuf};

    use super::{MAX_CODE_LINES, check_tree};
    use crate::module_graph::{self, Tree};

    /// A crate made of `files` (path under `/c/src` -> source), followed from `lib.rs`.
    fn tree(files: &[(&str, &str)]) -> Tree {
        let files: BTreeMap<PathBuf, String> = files
            .iter()
            .map(|(path, source)| (Path::new("/c/src").join(path), (*source).to_owned()))
            .collect();
        let read = move |path: &Path| {
            files.get(path).cloned().ok_or_else(|| {
                std::io::Error::new(std::io::ErrorKind::NotFound, "no such fixture file")
            })
        };
        module_graph::build(Path::new("/c/src/lib.rs"), &read)
    }

    fn violations(files: &[(&str, &str)]) -> Vec<String> {
        check_tree("c", Path::new("/c"), &tree(files), &mut BTreeSet::new())
    }

    fn lines(n: usize) -> String {
        (0..n)
            .map(|i| format!("pub const C{i}: u8 = 0;\n"))
            .collect()
    }

    #[test]
    fn a_file_over_the_limit_is_reported_and_its_tests_do_not_count() {
        let long = lines(MAX_CODE_LINES + 1);
        let at_limit = format!(
            "{}/// Tests.\n#[cfg(test)]\nmod tests {{\n{}}}\n",
            lines(MAX_CODE_LINES),
            lines(50)
        );
        let test_only = format!("#![cfg(test)]\n{}", lines(900));
        let declared_for_tests = lines(900);
        assert_eq!(
            violations(&[
                ("lib.rs", "mod long;\nmod at_limit;\nmod test_only;\n"),
                ("long.rs", &long),
                (
                    "at_limit.rs",
                    &format!("#[cfg(test)]\nmod helpers;\n{at_limit}")
                ),
                ("at_limit/helpers.rs", &declared_for_tests),
                ("test_only.rs", &test_only),
            ]),
            [format!(
                "c: long.rs has {} lines of non-test code (at most 800; split a concern into a \
                 module of its own)",
                MAX_CODE_LINES + 1
            )]
        );
        let measured = tree(&[
            ("lib.rs", "#[cfg(test)]\nmod t;\nmod a;\n"),
            ("a.rs", &at_limit),
        ]);
        let counts: Vec<(String, usize)> = measured
            .files
            .iter()
            .map(|f| (f.path.display().to_string(), f.code_lines))
            .collect();
        assert_eq!(
            counts,
            [
                ("/c/src/lib.rs".to_owned(), 1),
                ("/c/src/a.rs".to_owned(), MAX_CODE_LINES)
            ]
        );
    }

    #[test]
    fn a_two_file_cycle_names_both_references() {
        assert_eq!(
            violations(&[
                ("lib.rs", "mod a;\nmod b;\npub use a::A;\n"),
                ("a.rs", "use crate::b::B;\npub struct A(B);\n"),
                (
                    "b.rs",
                    "//! B.\n\npub struct B;\nimpl B { fn a() -> crate::a::A { todo() } }\n"
                ),
            ]),
            ["c: import cycle a.rs -> b.rs -> a.rs (a.rs:1 crate::b, b.rs:4 crate::a)"]
        );
    }

    #[test]
    fn super_paths_groups_and_nested_folders_count() {
        // config -> state through `super`, state -> config through `super::super` and a
        // group; the parent's use of its children and state's use of its parent are no cycle.
        assert_eq!(
            violations(&[
                ("lib.rs", "pub mod run;\n"),
                (
                    "run/mod.rs",
                    "mod config;\nmod state;\nuse crate::run::{config::Config};\n"
                ),
                ("run/config.rs", "pub struct Config(super::state::State);\n"),
                (
                    "run/state.rs",
                    "use super::super::run::{self, config::{Config}};\npub struct State;\n"
                ),
            ]),
            [
                "c: import cycle run/config.rs -> run/state.rs -> run/config.rs \
                 (run/config.rs:1 super::state, run/state.rs:1 super::super::run::config)"
            ]
        );
    }

    #[test]
    fn a_component_larger_than_its_shortest_cycle_lists_every_file() {
        let found = violations(&[
            ("lib.rs", "mod a;\nmod b;\nmod c;\n"),
            ("a.rs", "use crate::b::X;\n"),
            ("b.rs", "use crate::a::X;\nuse crate::c::Y;\n"),
            ("c.rs", "use crate::b::Z;\n"),
        ]);
        assert_eq!(
            found,
            [
                "c: import cycle a.rs -> b.rs -> a.rs (a.rs:1 crate::b, b.rs:1 crate::a); the \
              cycle's component: a.rs, b.rs, c.rs"
            ]
        );
    }

    #[test]
    fn references_that_are_not_imports_between_files_do_not_count() {
        let found = violations(&[
            (
                "lib.rs",
                "mod a;\nmod b;\nmod inner { pub(crate) fn f() { super::root(); } }\n\
                 pub use crate::b::h;\n\
                 pub(crate) fn root() { a::g(); crate::a::k(); }\n",
            ),
            // Down the tree by plain name, to the crate root's items, within the file, in
            // comments, strings and tests, and `pub(crate)`/`pub(super)` visibilities.
            (
                "a.rs",
                "//! Unlike crate::b, this module ...\n\
                 pub(crate) fn g() { crate::root(); let _ = \"crate::b::h\"; self::k(); }\n\
                 pub(super) fn k() {}\n\
                 mod deep { fn d() { super::k(); crate::a::k(); } }\n\
                 #[cfg(test)]\nmod tests { use crate::b::h; }\n",
            ),
            (
                "b.rs",
                "/// Calls [`crate::a::g`].\npub(crate) fn h() { crate::inner::f(); }\n",
            ),
        ]);
        // b -> lib (crate::inner) and a -> lib (crate::root); lib reaches a and b, its own
        // submodules, which is ownership.
        assert_eq!(found, Vec::<String>::new());
    }

    #[test]
    fn inline_modules_and_path_attributes_are_followed() {
        let found = violations(&[
            (
                "lib.rs",
                "mod outer {\n    pub mod x;\n}\n#[path = \"other/y.rs\"]\nmod y;\n",
            ),
            ("outer/x.rs", "pub fn f() { crate::y::g(); }\n"),
            ("other/y.rs", "pub fn g() { crate::outer::x::f(); }\n"),
        ]);
        assert_eq!(
            found,
            [
                "c: import cycle outer/x.rs -> other/y.rs -> outer/x.rs (outer/x.rs:1 crate::y, \
              other/y.rs:1 crate::outer::x)"
            ]
        );
    }

    #[test]
    fn unreadable_and_invalid_files_are_reported() {
        let found = violations(&[
            ("lib.rs", "mod gone;\nmod broken;\n"),
            ("broken.rs", "fn ("),
        ]);
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(
            found
                .iter()
                .any(|l| l.starts_with("c: /c/src/gone.rs: cannot be read"))
        );
        assert!(
            found
                .iter()
                .any(|l| l.starts_with("c: /c/src/broken.rs: cannot be tokenized"))
        );
    }
}
