//! `cargo xtask check-deps`: the layer rules of the workspace.
//!
//! Rules (as docs/ARCHITECTURE.md's "Layers" states them):
//! 1. every member declares `[package.metadata.evolution] layer`, one of kernel, adapter, app,
//!    tooling;
//! 2. a kernel crate reaches, through normal and build dependencies at any depth, workspace
//!    members of the kernel layer only; an adapter likewise; an app that declares
//!    `adapters = false` beside its layer (a library app others build on, such as the harness)
//!    likewise, so that the adapters are wired by the program that uses it; other apps and
//!    tooling may use anything; `adapters` is a boolean;
//! 3. a kernel crate's dependency closure contains none of the I/O crates in [`FORBIDDEN_CRATES`],
//!    and no `tokio` with features beyond `sync`, `time`, `macros`, `rt`;
//! 4. a kernel crate's `src/**/*.rs` names none of `std::fs`, `std::net`, `std::process`,
//!    `tokio::fs` (see [`crate::source_scan`]).
//!
//! How closures are computed. `cargo metadata` resolves features once for the whole workspace,
//! so its resolve graph can show a kernel crate "using" `tokio/fs` merely because an app in the
//! same workspace asked for it. Instead, each kernel and adapter crate gets its own closure,
//! computed the way cargo would if that crate were built alone:
//! - the walk starts at the crate with *all* of its own features on (a user may enable any of
//!   them, so none may pull in I/O);
//! - it follows only the edges of the resolve graph that are normal or build dependencies
//!   (dev-dependencies never count, at any depth);
//! - an optional dependency is followed only once a feature of its dependent activates it
//!   (`dep:x`, `x/f`, or the implicit feature `x`);
//! - the features a package gets are those the edges into it declare (`features = [...]`,
//!   `default` unless `default-features = false`), those forwarded by its dependents' feature
//!   tables (`x/f`, `x?/f`), and everything those features imply in its own feature table.
//!
//! Target-specific dependencies count on every platform. An edge of the resolve graph that
//! matches no declared dependency is followed anyway, without features, so a mismatch can only
//! make the check stricter. The walk does not go past a violation (a non-kernel member or a
//! forbidden crate): that edge is the one to fix.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde::Deserialize;

use crate::source_scan;

/// External crates that do I/O and must never be in a kernel crate's closure: the four named by
/// the design, plus the engines beneath `rusqlite` and `sqlx`, which could be used directly.
const FORBIDDEN_CRATES: [&str; 6] = [
    "reqwest",
    "hyper",
    "rusqlite",
    "sqlx",
    "libsqlite3-sys",
    "sqlx-core",
];

/// The tokio features a kernel closure may enable (and whatever they imply in tokio itself).
const ALLOWED_TOKIO_FEATURES: [&str; 5] = ["default", "sync", "time", "macros", "rt"];

/// The layers a member can declare.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Layer {
    Kernel,
    Adapter,
    App,
    Tooling,
}

impl Layer {
    fn parse(name: &str) -> Option<Self> {
        match name {
            "kernel" => Some(Self::Kernel),
            "adapter" => Some(Self::Adapter),
            "app" => Some(Self::App),
            "tooling" => Some(Self::Tooling),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::Kernel => "kernel",
            Self::Adapter => "adapter",
            Self::App => "app",
            Self::Tooling => "tooling",
        }
    }
}

/// What a member's manifest says about its layer.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Declared {
    Layer(Layer),
    Missing,
    Unknown(String),
}

impl fmt::Display for Declared {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Layer(layer) => f.write_str(layer.name()),
            Self::Missing => f.write_str("no layer"),
            Self::Unknown(value) => write!(f, "unknown layer {value}"),
        }
    }
}

/// The outcome of a check: one line per violation, sorted, plus counts for the summary.
#[derive(Debug)]
pub(crate) struct Report {
    pub(crate) violations: Vec<String>,
    members: usize,
    per_layer: BTreeMap<&'static str, usize>,
}

impl Report {
    pub(crate) fn is_ok(&self) -> bool {
        self.violations.is_empty()
    }

    /// The closing line: `check-deps: OK (...)` or `check-deps: N violation(s) ...`.
    pub(crate) fn summary(&self) -> String {
        if self.is_ok() {
            let layers: Vec<String> = ["kernel", "adapter", "app", "tooling"]
                .iter()
                .map(|layer| format!("{} {layer}", self.per_layer.get(layer).unwrap_or(&0)))
                .collect();
            format!(
                "check-deps: OK ({} members: {})",
                self.members,
                layers.join(", ")
            )
        } else {
            let n = self.violations.len();
            format!(
                "check-deps: {n} violation{} in a workspace of {} members",
                if n == 1 { "" } else { "s" },
                self.members
            )
        }
    }
}

// ---- the subset of `cargo metadata --format-version 1` that the rules read ----

#[derive(Debug, Deserialize)]
struct Metadata {
    packages: Vec<Package>,
    workspace_members: Vec<String>,
    resolve: Option<Resolve>,
}

#[derive(Debug, Deserialize)]
struct Package {
    id: String,
    name: String,
    manifest_path: PathBuf,
    #[serde(default)]
    dependencies: Vec<Dependency>,
    #[serde(default)]
    features: BTreeMap<String, Vec<String>>,
    #[serde(default)]
    metadata: Option<serde_json::Value>,
}

#[derive(Debug, Deserialize)]
struct Dependency {
    /// The package name (not the rename).
    name: String,
    rename: Option<String>,
    /// `null` for normal, `"dev"` or `"build"`.
    kind: Option<String>,
    #[serde(default)]
    optional: bool,
    #[serde(default = "yes")]
    uses_default_features: bool,
    #[serde(default)]
    features: Vec<String>,
}

fn yes() -> bool {
    true
}

impl Dependency {
    fn is_dev(&self) -> bool {
        self.kind.as_deref() == Some("dev")
    }

    /// The name the dependent uses for it in its feature table (`x` in `dep:x`, `x/f`).
    fn feature_name(&self) -> &str {
        self.rename.as_deref().unwrap_or(&self.name)
    }
}

#[derive(Debug, Deserialize)]
struct Resolve {
    nodes: Vec<Node>,
}

#[derive(Debug, Deserialize)]
struct Node {
    id: String,
    #[serde(default)]
    deps: Vec<NodeDep>,
}

#[derive(Debug, Deserialize)]
struct NodeDep {
    /// The extern crate name: the library name, or the rename, with `-` as `_`.
    name: String,
    pkg: String,
    #[serde(default)]
    dep_kinds: Vec<DepKind>,
}

#[derive(Debug, Deserialize)]
struct DepKind {
    kind: Option<String>,
}

impl NodeDep {
    /// A resolved edge counts unless it exists only as a dev-dependency.
    fn counts(&self) -> bool {
        self.dep_kinds.is_empty()
            || self
                .dep_kinds
                .iter()
                .any(|k| k.kind.as_deref() != Some("dev"))
    }
}

/// Runs every rule on the workspace of `manifest_path`.
pub(crate) fn check(manifest_path: &Path) -> Result<Report> {
    let metadata = cargo_metadata(manifest_path)?;
    Ok(check_metadata(&metadata))
}

fn cargo_metadata(manifest_path: &Path) -> Result<Metadata> {
    let output = crate::cargo()
        // All features, so that the resolve graph holds every edge that any feature of any
        // member can turn on; the per-crate walk then decides which of them a crate uses.
        .args([
            "metadata",
            "--format-version",
            "1",
            "--all-features",
            "--manifest-path",
        ])
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
    serde_json::from_slice(&output.stdout).context("cannot read the output of `cargo metadata`")
}

/// The workspace as the rules see it: packages by id, members with their declared layers.
struct Workspace<'a> {
    packages: HashMap<&'a str, &'a Package>,
    nodes: HashMap<&'a str, &'a Node>,
    layers: HashMap<&'a str, Declared>,
}

impl<'a> Workspace<'a> {
    fn new(metadata: &'a Metadata) -> Self {
        let packages: HashMap<&str, &Package> = metadata
            .packages
            .iter()
            .map(|p| (p.id.as_str(), p))
            .collect();
        let nodes = metadata
            .resolve
            .iter()
            .flat_map(|r| &r.nodes)
            .map(|n| (n.id.as_str(), n))
            .collect();
        let layers = metadata
            .workspace_members
            .iter()
            .filter_map(|id| {
                packages
                    .get(id.as_str())
                    .map(|p| (id.as_str(), declared(p)))
            })
            .collect();
        Self {
            packages,
            nodes,
            layers,
        }
    }

    fn name(&self, id: &str) -> &'a str {
        self.packages.get(id).map_or("?", |p| p.name.as_str())
    }

    /// `name (layer)` for a member, `name` for an external package.
    fn label(&self, id: &str) -> String {
        match self.layers.get(id) {
            Some(declared) => format!("{} ({declared})", self.name(id)),
            None => self.name(id).to_owned(),
        }
    }

    fn render_path(&self, path: &[&str]) -> String {
        let labels: Vec<String> = path.iter().map(|id| self.label(id)).collect();
        labels.join(" -> ")
    }
}

fn declared(package: &Package) -> Declared {
    let layer = package
        .metadata
        .as_ref()
        .and_then(|m| m.get("evolution"))
        .and_then(|e| e.get("layer"));
    match layer {
        None | Some(serde_json::Value::Null) => Declared::Missing,
        Some(serde_json::Value::String(name)) => match Layer::parse(name) {
            Some(layer) => Declared::Layer(layer),
            None => Declared::Unknown(format!("{name:?}")),
        },
        Some(other) => Declared::Unknown(other.to_string()),
    }
}

/// Whether a member may depend on adapters (and apps): `adapters = false` in its
/// `[package.metadata.evolution]` says no; absent means yes. `Err` holds a non-boolean value.
fn adapters_allowed(package: Option<&Package>) -> Result<bool, String> {
    let value = package
        .and_then(|p| p.metadata.as_ref())
        .and_then(|m| m.get("evolution"))
        .and_then(|e| e.get("adapters"));
    match value {
        None | Some(serde_json::Value::Null) => Ok(true),
        Some(serde_json::Value::Bool(allowed)) => Ok(*allowed),
        Some(other) => Err(other.to_string()),
    }
}

fn check_metadata(metadata: &Metadata) -> Report {
    let ws = Workspace::new(metadata);
    // Members in name order; each member's lines in the order the rules find them.
    let mut violations = Vec::new();
    let mut per_layer = BTreeMap::new();

    let mut members: Vec<&str> = ws.layers.keys().copied().collect();
    members.sort_by_key(|id| ws.name(id));
    for &id in &members {
        let name = ws.name(id);
        match &ws.layers[id] {
            Declared::Missing => {
                violations.push(format!(
                    "{name}: no layer declared (add [package.metadata.evolution] layer = \
                     \"kernel\" | \"adapter\" | \"app\" | \"tooling\")"
                ));
            }
            Declared::Unknown(value) => {
                violations.push(format!(
                    "{name}: unknown layer {value} (expected kernel, adapter, app or tooling)"
                ));
            }
            Declared::Layer(layer) => {
                *per_layer.entry(layer.name()).or_insert(0) += 1;
                if matches!(layer, Layer::Kernel | Layer::Adapter) {
                    let closure = Closure::walk(&ws, id);
                    let mut found = closure.violations(&ws, *layer);
                    found.sort();
                    violations.extend(found);
                }
                match adapters_allowed(ws.packages.get(id).copied()) {
                    Ok(true) => {}
                    Ok(false) => {
                        let closure = Closure::walk(&ws, id);
                        let mut found: Vec<String> = closure
                            .violations(&ws, *layer)
                            .into_iter()
                            .map(|path| format!("{path} (adapters = false)"))
                            .collect();
                        found.sort();
                        violations.extend(found);
                    }
                    Err(value) => violations.push(format!(
                        "{name}: [package.metadata.evolution] adapters = {value} is not a boolean"
                    )),
                }
                if *layer == Layer::Kernel {
                    violations.extend(scan_sources(&ws, id));
                }
            }
        }
    }

    let mut seen = HashSet::new();
    violations.retain(|line| seen.insert(line.clone()));
    Report {
        violations,
        members: members.len(),
        per_layer,
    }
}

/// A dependency closure computed for one root crate, with feature resolution of its own.
struct Closure<'a> {
    root: &'a str,
    /// Packages reached, in the order found (breadth first).
    order: Vec<&'a str>,
    /// The package through which each reached package was first found.
    parent: HashMap<&'a str, &'a str>,
    /// Features on for each reached package, each with the dependent whose edge asked for it
    /// (directly, by forwarding, or through a feature that implies it), so that a report can
    /// name a real path to the package.
    features: HashMap<&'a str, BTreeMap<String, &'a str>>,
    /// Optional dependencies (by feature name) that a package's features have activated.
    activated: HashMap<&'a str, HashSet<String>>,
    /// Non-kernel members and forbidden crates reached: the walk does not go past them.
    stops: Vec<&'a str>,
}

impl<'a> Closure<'a> {
    fn walk(ws: &Workspace<'a>, root: &'a str) -> Self {
        let mut closure = Closure {
            root,
            order: vec![root],
            parent: HashMap::new(),
            features: HashMap::new(),
            activated: HashMap::new(),
            stops: Vec::new(),
        };
        if let Some(package) = ws.packages.get(root) {
            for feature in package.features.keys() {
                closure.enable(root, feature, root);
            }
        }
        // Features only grow, so repeating the pass until nothing changes reaches the fixpoint.
        loop {
            let before = closure.size();
            let mut queue: VecDeque<&str> = closure.order.iter().copied().collect();
            while let Some(id) = queue.pop_front() {
                if closure.stops.contains(&id) {
                    continue;
                }
                for reached in closure.expand(ws, id) {
                    queue.push_back(reached);
                }
            }
            if closure.size() == before {
                break;
            }
        }
        closure
    }

    fn size(&self) -> usize {
        self.order.len()
            + self.features.values().map(BTreeMap::len).sum::<usize>()
            + self.activated.values().map(HashSet::len).sum::<usize>()
    }

    /// Turns `feature` on for `id`; returns whether it was off.
    fn enable(&mut self, id: &'a str, feature: &str, requester: &'a str) -> bool {
        let features = self.features.entry(id).or_default();
        if features.contains_key(feature) {
            return false;
        }
        features.insert(feature.to_owned(), requester);
        true
    }

    /// Applies `id`'s feature table and follows its edges; returns packages newly reached.
    fn expand(&mut self, ws: &Workspace<'a>, id: &'a str) -> Vec<&'a str> {
        let Some(package) = ws.packages.get(id) else {
            return Vec::new();
        };
        // Requests this package forwards to its dependencies: feature name of dep -> features.
        let mut forwarded: HashMap<String, Vec<(String, &'a str)>> = HashMap::new();
        let mut weak: HashMap<String, Vec<(String, &'a str)>> = HashMap::new();

        // Expand the package's own feature table until it implies nothing new.
        let mut pending: Vec<(String, &'a str)> = self
            .features
            .get(id)
            .map(|f| f.iter().map(|(k, v)| (k.clone(), *v)).collect())
            .unwrap_or_default();
        let mut seen: HashSet<String> = HashSet::new();
        while let Some((feature, requester)) = pending.pop() {
            if !seen.insert(feature.clone()) {
                continue;
            }
            for entry in package.features.get(&feature).into_iter().flatten() {
                if let Some(dep) = entry.strip_prefix("dep:") {
                    self.activated.entry(id).or_default().insert(dep.to_owned());
                } else if let Some((dep, dep_feature)) = entry.split_once('/') {
                    if let Some(dep) = dep.strip_suffix('?') {
                        weak.entry(dep.to_owned())
                            .or_default()
                            .push((dep_feature.to_owned(), id));
                    } else {
                        self.activated.entry(id).or_default().insert(dep.to_owned());
                        if package.features.contains_key(dep) {
                            self.enable(id, dep, requester);
                            pending.push((dep.to_owned(), requester));
                        }
                        forwarded
                            .entry(dep.to_owned())
                            .or_default()
                            .push((dep_feature.to_owned(), id));
                    }
                } else {
                    self.enable(id, entry, requester);
                    pending.push((entry.clone(), requester));
                }
            }
        }

        let Some(node) = ws.nodes.get(id) else {
            return Vec::new();
        };
        let mut newly_reached = Vec::new();
        for edge in node.deps.iter().filter(|e| e.counts()) {
            let Some(target) = ws.packages.get(edge.pkg.as_str()) else {
                continue;
            };
            let target_id = target.id.as_str();
            let declared: Vec<&Dependency> = package
                .dependencies
                .iter()
                .filter(|d| !d.is_dev() && matches_edge(d, edge, target))
                .collect();
            let activated = self.activated.get(id);
            let active: Vec<&Dependency> = declared
                .iter()
                .copied()
                .filter(|d| !d.optional || activated.is_some_and(|a| a.contains(d.feature_name())))
                .collect();
            if !declared.is_empty() && active.is_empty() {
                continue; // An optional dependency nothing turned on.
            }

            if !self.parent.contains_key(target_id) && target_id != self.root {
                self.parent.insert(target_id, id);
                self.order.push(target_id);
                newly_reached.push(target_id);
                if self.is_stop(ws, target_id) {
                    self.stops.push(target_id);
                }
            }
            let mut requests: Vec<(String, &'a str)> = Vec::new();
            for dep in &active {
                requests.extend(dep.features.iter().map(|f| (f.clone(), id)));
                if dep.uses_default_features {
                    requests.push(("default".to_owned(), id));
                }
                for key in [dep.feature_name(), dep.name.as_str()] {
                    requests.extend(forwarded.get(key).into_iter().flatten().cloned());
                    requests.extend(weak.get(key).into_iter().flatten().cloned());
                }
            }
            for (feature, requester) in requests {
                if feature == "default" && !target.features.contains_key("default") {
                    continue;
                }
                if self.enable(target_id, &feature, requester)
                    && !newly_reached.contains(&target_id)
                {
                    newly_reached.push(target_id);
                }
            }
        }
        newly_reached
    }

    /// The walk stops at a non-kernel member and at a forbidden crate.
    fn is_stop(&self, ws: &Workspace<'a>, id: &str) -> bool {
        match ws.layers.get(id) {
            Some(declared) => *declared != Declared::Layer(Layer::Kernel),
            None => FORBIDDEN_CRATES.contains(&ws.name(id)),
        }
    }

    /// The path from the root to `id`, following first discoveries.
    fn path_to(&self, id: &'a str) -> Vec<&'a str> {
        let mut path = vec![id];
        let mut current = id;
        while let Some(&parent) = self.parent.get(current) {
            if path.contains(&parent) {
                break;
            }
            path.push(parent);
            current = parent;
        }
        path.reverse();
        path
    }

    fn violations(&self, ws: &Workspace<'a>, root_layer: Layer) -> Vec<String> {
        let mut out = Vec::new();
        for &id in &self.stops {
            if ws.layers.contains_key(id) {
                out.push(ws.render_path(&self.path_to(id)));
            } else if root_layer == Layer::Kernel {
                out.push(format!(
                    "{} (forbidden I/O crate)",
                    ws.render_path(&self.path_to(id))
                ));
            }
        }
        if root_layer == Layer::Kernel {
            for &id in &self.order {
                if ws.name(id) == "tokio" && !ws.layers.contains_key(id) {
                    out.extend(self.tokio_violation(ws, id));
                }
            }
        }
        out
    }

    /// Reports the tokio features on in this closure beyond those allowed (and their implications).
    fn tokio_violation(&self, ws: &Workspace<'a>, id: &'a str) -> Option<String> {
        let package = ws.packages.get(id)?;
        let enabled = self.features.get(id)?;
        let mut allowed: HashSet<&str> = HashSet::new();
        let mut pending: Vec<&str> = ALLOWED_TOKIO_FEATURES.to_vec();
        while let Some(feature) = pending.pop() {
            if allowed.insert(feature) {
                pending.extend(
                    package
                        .features
                        .get(feature)
                        .into_iter()
                        .flatten()
                        .filter(|e| !e.contains(':') && !e.contains('/'))
                        .map(String::as_str),
                );
            }
        }
        let beyond: Vec<(&String, &&str)> = enabled
            .iter()
            .filter(|(feature, _)| !allowed.contains(feature.as_str()))
            .collect();
        let &(_, requester) = beyond.first()?;
        let mut path = self.path_to(requester);
        path.push(id);
        let names: Vec<&str> = beyond.iter().map(|(f, _)| f.as_str()).collect();
        Some(format!(
            "{} (features beyond sync/time/macros/rt: {})",
            ws.render_path(&path),
            names.join(", ")
        ))
    }
}

/// Whether a declared dependency is the one a resolved edge stands for.
fn matches_edge(dep: &Dependency, edge: &NodeDep, target: &Package) -> bool {
    if dep.name != target.name {
        return false;
    }
    match &dep.rename {
        Some(rename) => rename.replace('-', "_") == edge.name,
        None => true,
    }
}

/// Rule 4: I/O modules named in a kernel crate's `src/`.
fn scan_sources(ws: &Workspace<'_>, id: &str) -> Vec<String> {
    let Some(package) = ws.packages.get(id) else {
        return Vec::new();
    };
    let Some(crate_dir) = package.manifest_path.parent() else {
        return Vec::new();
    };
    let label = ws.label(id);
    let mut files = Vec::new();
    let mut out = Vec::new();
    if let Err(err) = collect_rust_files(&crate_dir.join("src"), &mut files) {
        out.push(format!("{label}: cannot read src/: {err}"));
    }
    files.sort();
    for file in files {
        let shown = file
            .strip_prefix(crate_dir)
            .unwrap_or(&file)
            .display()
            .to_string();
        match std::fs::read_to_string(&file) {
            Err(err) => out.push(format!("{label}: {shown}: cannot be read: {err}")),
            Ok(source) => match source_scan::scan(&source) {
                Err(err) => out.push(format!("{label}: {shown}: cannot be tokenized: {err}")),
                Ok(hits) => out.extend(
                    hits.into_iter()
                        .map(|hit| format!("{label}: {shown}:{} uses {}", hit.line, hit.path)),
                ),
            },
        }
    }
    out
}

fn collect_rust_files(dir: &Path, files: &mut Vec<PathBuf>) -> std::io::Result<()> {
    if !dir.is_dir() {
        return Ok(());
    }
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            collect_rust_files(&path, files)?;
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            files.push(path);
        }
    }
    Ok(())
}
