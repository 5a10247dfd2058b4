//! The module files of one crate target, what each references and how long it is: the input
//! of `cargo xtask tidy`'s file-size and import-cycle rules.
//!
//! A target's module tree is followed from its root file through `mod name;` declarations
//! (`name.rs`, `name/mod.rs`, or a `#[path = "..."]`), inline `mod name { ... }` blocks
//! included. What counts as test code, never measured and never followed:
//! - an item under `#[cfg(test)]` (or `#[cfg(all(test, ...))]`), with its attributes and doc
//!   comments: usually the `mod tests { ... }` block at the end of a file;
//! - a file declared by such an item (`#[cfg(test)] mod tests;`), or one that opens with
//!   `#![cfg(test)]`;
//! - files under a `tests/` folder, which are integration-test targets and never reached
//!   from a module tree.
//!
//! A file references another when its non-test code names a path that starts with `crate::`
//! (or `$crate::`) or `super::` and leads into a module the other file holds (the longest
//! prefix of the path that is a module). References up the tree and across it count; those
//! of a module into its own submodules do not, whatever their spelling (`child::f()`,
//! `pub use crate::child::Item` in a crate root that gathers its public names): a parent owns
//! its children, and using them is not an import cycle. The scan goes by names, like
//! [`crate::source_scan`]: comments, doc comments and strings never count.

use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};

use proc_macro2::{Delimiter, Spacing, TokenTree};

/// One module file of a target.
#[derive(Debug)]
pub(crate) struct ModuleFile {
    /// Where it is.
    pub(crate) path: PathBuf,
    /// The module it holds, as a path from the crate root (empty for the root).
    module: Vec<String>,
    /// Lines outside test code.
    pub(crate) code_lines: usize,
    /// The files it references: index into [`Tree::files`], with the first line that does.
    pub(crate) references: BTreeMap<usize, Reference>,
}

/// The first place a file references another.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Reference {
    /// 1-based line.
    pub(crate) line: usize,
    /// The path as written, up to the module it reaches (`crate::events`, `super::replay`).
    pub(crate) path: String,
}

/// The module files of one target, in the order found (the root first, then breadth first
/// in declaration order).
#[derive(Debug, Default)]
pub(crate) struct Tree {
    pub(crate) files: Vec<ModuleFile>,
    /// Files that could not be read or tokenized, with the reason.
    pub(crate) errors: Vec<String>,
}

/// What a scan of one file found.
#[derive(Debug, Default)]
struct FileScan {
    /// The file opens with `#![cfg(test)]`.
    test_only: bool,
    /// Lines covered by `#[cfg(test)]` items.
    test_lines: usize,
    /// Out-of-line `mod` declarations outside test code.
    mods: Vec<ModDecl>,
    /// Inline modules, as paths relative to the file's module.
    inline_mods: Vec<Vec<String>>,
    /// `crate::`/`super::` paths outside test code.
    paths: Vec<RawPath>,
}

/// `mod name;`, inside the inline modules `inline` of its file.
#[derive(Debug)]
struct ModDecl {
    inline: Vec<String>,
    name: String,
    path_attr: Option<String>,
}

/// A path starting at the crate root (`supers == None`) or `supers` levels up from the inline
/// module `inline` of its file.
#[derive(Debug)]
struct RawPath {
    inline: Vec<String>,
    supers: Option<usize>,
    segments: Vec<String>,
    line: usize,
}

/// Reads the source of a file; the tree builder is given one so that tests can use fixtures.
pub(crate) type ReadSource<'a> = &'a dyn Fn(&Path) -> std::io::Result<String>;

/// Follows the module tree of the target whose root file is `root`.
pub(crate) fn build(root: &Path, read: ReadSource<'_>) -> Tree {
    let mut tree = Tree::default();
    // Module path (from the crate root) -> index of the file holding it.
    let mut modules: BTreeMap<Vec<String>, usize> = BTreeMap::new();
    let mut scans: Vec<(Vec<String>, FileScan)> = Vec::new();
    // (the places the file may be, each with the folder its child modules live in; its
    // module path)
    let mut pending = VecDeque::from([(vec![(root.to_path_buf(), parent_dir(root))], Vec::new())]);
    while let Some((places, module)) = pending.pop_front() {
        let mut found = None;
        let mut first_error = None;
        for (path, child_dir) in places {
            match read(&path) {
                Ok(source) => {
                    found = Some((path, child_dir, source));
                    break;
                }
                Err(err) => {
                    first_error.get_or_insert(format!("{}: cannot be read: {err}", path.display()));
                }
            }
        }
        let Some((path, child_dir, source)) = found else {
            tree.errors.extend(first_error);
            continue;
        };
        if tree.files.iter().any(|f| f.path == path) {
            continue;
        }
        let scan = match scan_file(&source) {
            Err(err) => {
                tree.errors
                    .push(format!("{}: cannot be tokenized: {err}", path.display()));
                continue;
            }
            Ok((_, scan)) if scan.test_only => continue,
            Ok((lines, scan)) => {
                let index = tree.files.len();
                tree.files.push(ModuleFile {
                    path: path.clone(),
                    module: module.clone(),
                    code_lines: lines.saturating_sub(scan.test_lines),
                    references: BTreeMap::new(),
                });
                modules.insert(module.clone(), index);
                for inline in &scan.inline_mods {
                    modules.insert(joined(&module, inline), index);
                }
                scan
            }
        };
        for decl in &scan.mods {
            let dir = decl.inline.iter().fold(child_dir.clone(), |d, m| d.join(m));
            let places = match &decl.path_attr {
                Some(attr) => {
                    let base = if decl.inline.is_empty() {
                        parent_dir(&path)
                    } else {
                        dir.clone()
                    };
                    let file = base.join(attr);
                    let sub_dir = parent_dir(&file);
                    vec![(file, sub_dir)]
                }
                None => vec![
                    (dir.join(format!("{}.rs", decl.name)), dir.join(&decl.name)),
                    (dir.join(&decl.name).join("mod.rs"), dir.join(&decl.name)),
                ],
            };
            let mut child = joined(&module, &decl.inline);
            child.push(decl.name.clone());
            pending.push_back((places, child));
        }
        scans.push((module, scan));
    }
    for (module, scan) in scans {
        let Some(&from) = modules.get(&module) else {
            continue;
        };
        for raw in scan.paths {
            let here = joined(&module, &raw.inline);
            let base = match raw.supers {
                None => Vec::new(),
                Some(n) => match here.len().checked_sub(n) {
                    Some(keep) => here.get(..keep).map(<[String]>::to_vec).unwrap_or_default(),
                    None => continue,
                },
            };
            let full = joined(&base, &raw.segments);
            let Some((reached, &to)) = (base.len()..=full.len())
                .rev()
                .filter_map(|len| full.get(..len))
                .find_map(|prefix| modules.get(prefix).map(|to| (prefix.len(), to)))
            else {
                continue;
            };
            let owned = match (tree.files.get(from), tree.files.get(to)) {
                (Some(parent), Some(child)) => child.module.starts_with(&parent.module),
                _ => true,
            };
            if owned {
                continue;
            }
            let head = match raw.supers {
                None => vec!["crate".to_owned()],
                Some(n) => vec!["super".to_owned(); n],
            };
            let shown = joined(&head, full.get(base.len()..reached).unwrap_or_default());
            if let Some(file) = tree.files.get_mut(from) {
                file.references.entry(to).or_insert(Reference {
                    line: raw.line,
                    path: shown.join("::"),
                });
            }
        }
    }
    tree
}

/// The folder a module file's relative paths start from.
fn parent_dir(path: &Path) -> PathBuf {
    path.parent().map_or_else(PathBuf::new, Path::to_path_buf)
}

fn joined(a: &[String], b: &[String]) -> Vec<String> {
    a.iter().chain(b).cloned().collect()
}

/// The file's line count and what its tokens say.
fn scan_file(source: &str) -> Result<(usize, FileScan), String> {
    let stream = crate::source_scan::tokenize(source)?;
    let tokens: Vec<TokenTree> = stream.into_iter().collect();
    let mut scan = FileScan::default();
    walk(&tokens, &[], true, &mut scan);
    Ok((source.lines().count(), scan))
}

/// An outer or inner attribute at `tokens[at]`: `(inner, bracket contents, tokens used)`.
fn attribute(tokens: &[TokenTree], at: usize) -> Option<(bool, Vec<TokenTree>, usize)> {
    let TokenTree::Punct(hash) = tokens.get(at)? else {
        return None;
    };
    if hash.as_char() != '#' {
        return None;
    }
    let (inner, group_at) = match tokens.get(at + 1) {
        Some(TokenTree::Punct(bang)) if bang.as_char() == '!' => (true, at + 2),
        _ => (false, at + 1),
    };
    match tokens.get(group_at) {
        Some(TokenTree::Group(group)) if group.delimiter() == Delimiter::Bracket => Some((
            inner,
            group.stream().into_iter().collect(),
            group_at + 1 - at,
        )),
        _ => None,
    }
}

/// `cfg(test)` or `cfg(all(test, ...))`: code that exists only in test builds.
fn is_cfg_test(attr: &[TokenTree]) -> bool {
    let [TokenTree::Ident(cfg), TokenTree::Group(args)] = attr else {
        return false;
    };
    if cfg != "cfg" {
        return false;
    }
    let args: Vec<TokenTree> = args.stream().into_iter().collect();
    match args.as_slice() {
        [TokenTree::Ident(test)] => test == "test",
        [TokenTree::Ident(all), TokenTree::Group(inner)] if all == "all" => inner
            .stream()
            .into_iter()
            .any(|t| matches!(t, TokenTree::Ident(i) if i == "test")),
        _ => false,
    }
}

/// `path = "file.rs"`: the file.
fn path_attr(attr: &[TokenTree]) -> Option<String> {
    let [
        TokenTree::Ident(path),
        TokenTree::Punct(eq),
        TokenTree::Literal(lit),
    ] = attr
    else {
        return None;
    };
    if path != "path" || eq.as_char() != '=' {
        return None;
    }
    let text = lit.to_string();
    text.strip_prefix('"')?.strip_suffix('"').map(str::to_owned)
}

/// True when `tokens[at..]` starts with `::`.
fn is_path_sep(tokens: &[TokenTree], at: usize) -> bool {
    matches!(
        (tokens.get(at), tokens.get(at + 1)),
        (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b)))
            if a.as_char() == ':' && a.spacing() == Spacing::Joint && b.as_char() == ':'
    )
}

fn is_item_end(token: &TokenTree) -> bool {
    match token {
        TokenTree::Punct(p) => p.as_char() == ';',
        TokenTree::Group(g) => g.delimiter() == Delimiter::Brace,
        TokenTree::Ident(_) | TokenTree::Literal(_) => false,
    }
}

/// Scans one level of tokens inside the inline modules `inline`. An item under attributes
/// ends at its first `;` or `{ ... }` at this level.
fn walk(tokens: &[TokenTree], inline: &[String], file_level: bool, scan: &mut FileScan) {
    let mut i = 0;
    // The first attribute of the current run, whether one says cfg(test), and its #[path].
    let mut run_start: Option<usize> = None;
    let mut test = false;
    let mut path: Option<String> = None;
    while let Some(token) = tokens.get(i) {
        if let Some((inner, attr, used)) = attribute(tokens, i) {
            if inner {
                scan.test_only |= file_level && inline.is_empty() && is_cfg_test(&attr);
            } else {
                run_start.get_or_insert(i);
                test |= is_cfg_test(&attr);
                if let Some(file) = path_attr(&attr) {
                    path = Some(file);
                }
            }
            i += used;
            continue;
        }
        if test {
            let start = run_start.and_then(|s| tokens.get(s)).unwrap_or(token);
            let end_at = (i..tokens.len())
                .find(|&j| tokens.get(j).is_some_and(is_item_end))
                .unwrap_or(tokens.len().saturating_sub(1));
            let end = tokens.get(end_at).unwrap_or(token);
            let (first, last) = (start.span().start().line, end.span().end().line);
            scan.test_lines += last.saturating_sub(first) + 1;
            (run_start, test, path) = (None, false, None);
            i = end_at + 1;
            continue;
        }
        match token {
            TokenTree::Ident(ident) if ident == "mod" => {
                if let Some(TokenTree::Ident(name)) = tokens.get(i + 1) {
                    let name = name.to_string();
                    match tokens.get(i + 2) {
                        Some(TokenTree::Group(body)) if body.delimiter() == Delimiter::Brace => {
                            let mut nested = inline.to_vec();
                            nested.push(name);
                            scan.inline_mods.push(nested.clone());
                            let inner: Vec<TokenTree> = body.stream().into_iter().collect();
                            walk(&inner, &nested, false, scan);
                        }
                        _ => scan.mods.push(ModDecl {
                            inline: inline.to_vec(),
                            name,
                            path_attr: path.take(),
                        }),
                    }
                    (run_start, path) = (None, None);
                    i += 3;
                    continue;
                }
            }
            TokenTree::Ident(ident) if (ident == "crate" || ident == "super") => {
                if is_path_sep(tokens, i + 1) {
                    let line = ident.span().start().line;
                    let mut supers = None;
                    let mut at = i;
                    if ident == "super" {
                        let mut n = 0;
                        while matches!(tokens.get(at), Some(TokenTree::Ident(s)) if s == "super")
                            && is_path_sep(tokens, at + 1)
                        {
                            n += 1;
                            at += 3;
                        }
                        supers = Some(n);
                    } else {
                        at += 3;
                    }
                    let mut leaves = Vec::new();
                    follow(tokens, at, &[], &mut leaves);
                    for segments in leaves {
                        scan.paths.push(RawPath {
                            inline: inline.to_vec(),
                            supers,
                            segments,
                            line,
                        });
                    }
                    i = at;
                    continue;
                }
            }
            TokenTree::Group(group) => {
                let inner: Vec<TokenTree> = group.stream().into_iter().collect();
                walk(&inner, inline, false, scan);
            }
            TokenTree::Ident(_) | TokenTree::Punct(_) | TokenTree::Literal(_) => {}
        }
        if is_item_end(token) {
            (run_start, path) = (None, None);
        }
        i += 1;
    }
}

/// The paths that continue at `tokens[at]` after `prefix::`, a `{a, b::c}` group giving one
/// path per element (`self` in a group adds nothing).
fn follow(tokens: &[TokenTree], at: usize, prefix: &[String], leaves: &mut Vec<Vec<String>>) {
    match tokens.get(at) {
        Some(TokenTree::Ident(ident)) => {
            let mut path = prefix.to_vec();
            if ident != "self" {
                path.push(ident.to_string());
            }
            if is_path_sep(tokens, at + 1) {
                follow(tokens, at + 3, &path, leaves);
            } else {
                leaves.push(path);
            }
        }
        Some(TokenTree::Group(group)) if group.delimiter() == Delimiter::Brace => {
            let inner: Vec<TokenTree> = group.stream().into_iter().collect();
            for element in inner.split(|t| matches!(t, TokenTree::Punct(p) if p.as_char() == ',')) {
                if !element.is_empty() {
                    follow(element, 0, prefix, leaves);
                }
            }
        }
        _ => leaves.push(prefix.to_vec()),
    }
}

/// The strongly connected components of more than one file in the reference graph, each
/// sorted by file index, in order of their first file (Tarjan's algorithm, iterative).
pub(crate) fn cycles(tree: &Tree) -> Vec<Vec<usize>> {
    let n = tree.files.len();
    let edges: Vec<Vec<usize>> = tree
        .files
        .iter()
        .map(|f| f.references.keys().copied().filter(|&t| t < n).collect())
        .collect();
    let mut index = vec![usize::MAX; n];
    let mut low = vec![0; n];
    let mut on_stack = vec![false; n];
    let mut stack = Vec::new();
    let mut next = 0;
    let mut components = Vec::new();
    for start in 0..n {
        if index.get(start) != Some(&usize::MAX) {
            continue;
        }
        // (node, position in its edge list)
        let mut work = vec![(start, 0usize)];
        while let Some(&mut (node, ref mut edge)) = work.last_mut() {
            if *edge == 0 && index[node] == usize::MAX {
                index[node] = next;
                low[node] = next;
                next += 1;
                stack.push(node);
                on_stack[node] = true;
            }
            if let Some(&to) = edges[node].get(*edge) {
                *edge += 1;
                if index[to] == usize::MAX {
                    work.push((to, 0));
                } else if on_stack[to] {
                    low[node] = low[node].min(index[to]);
                }
                continue;
            }
            work.pop();
            if let Some(&(parent, _)) = work.last() {
                low[parent] = low[parent].min(low[node]);
            }
            if low[node] == index[node] {
                let mut component = Vec::new();
                while let Some(member) = stack.pop() {
                    on_stack[member] = false;
                    component.push(member);
                    if member == node {
                        break;
                    }
                }
                if component.len() > 1 {
                    component.sort_unstable();
                    components.push(component);
                }
            }
        }
    }
    components.sort();
    components
}

/// A shortest cycle through the first file of `component`, within it: the files in order,
/// the first repeated at the end.
pub(crate) fn cycle_through(tree: &Tree, component: &[usize]) -> Vec<usize> {
    let Some(&start) = component.first() else {
        return Vec::new();
    };
    let mut came_from: BTreeMap<usize, usize> = BTreeMap::new();
    let mut queue = VecDeque::from([start]);
    while let Some(node) = queue.pop_front() {
        let targets = tree.files.get(node).map(|f| f.references.keys());
        for &to in targets.into_iter().flatten() {
            if !component.contains(&to) {
                continue;
            }
            if to == start {
                let mut path = vec![start, node];
                let mut at = node;
                while let Some(&prev) = came_from.get(&at) {
                    path.push(prev);
                    at = prev;
                }
                // Built backwards from the closing step: start, node, ..., start.
                path.reverse();
                return path;
            }
            if to != start && !came_from.contains_key(&to) {
                came_from.insert(to, node);
                queue.push_back(to);
            }
        }
    }
    Vec::new()
}
