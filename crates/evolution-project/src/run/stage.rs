//! Where a run's documents come from and what it gives back.
//!
//! At import, `sources.json` records every document's user file (relative to
//! the project folder) and the SHA-256 of the text imported, before the
//! run's store is made from those texts. A later run of the same name checks
//! that its documents are still the ones the store was made for. When a run
//! finishes, `staged/` holds the proposal: every document the run changed
//! (`staged/files/<document>`), its unified diff against the user's file as
//! it is then (`staged/diffs/<document>.diff`) and `staged/proposal.json`
//! (the documents, their user files and the gate's evidence). Nothing in the
//! user's folder is written here: `skill-evolve adopt` does that.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use evolution_harness::{EvolutionReport, VersionedStore as _};
use evolution_store_fs::{FsStore, FsStoreError, FsVersionedStore};
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

use super::config::RunConfig;
use super::dir::RunDir;
use super::events::decision_name;
use crate::agent_workspace::{PlannedDoc, read_planned};
use crate::error::{bad_at, bad_option};
use crate::render::{terminal_safe, unified_diff};
use crate::working_copy::write_atomically;

pub use crate::agent_workspace::DocKind;

/// One imported document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Source {
    /// The document's name in the run's store.
    pub document: String,
    /// The skill's name (the document name without `.md` for prompts).
    pub name: String,
    /// Skill or prompt.
    pub kind: DocKind,
    /// The user's file, relative to the project folder when it is inside it.
    pub path: PathBuf,
    /// SHA-256 (hex) of the text imported.
    pub sha256: String,
}

/// `sources.json`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Sources {
    /// Every imported document, sorted by document name.
    pub documents: Vec<Source>,
}

/// SHA-256 of `text`, as lower-case hex.
pub fn sha256_hex(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .fold(String::with_capacity(64), |mut hex, byte| {
            hex.push_str(&format!("{byte:02x}"));
            hex
        })
}

/// `path` relative to `project` when it lies inside it, else absolute.
fn relative_to(project: &Path, path: &Path) -> PathBuf {
    match path.strip_prefix(project) {
        Ok(rel) => rel.to_path_buf(),
        Err(_) => std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf()),
    }
}

/// The documents a configuration imports, without their texts yet: the agent's workspace
/// as both `run` and a gated `evolve` build it.
fn planned(config: &RunConfig) -> Vec<PlannedDoc> {
    crate::agent_workspace::planned(
        &config.skill_docs,
        &config.reference_docs,
        config.prompts.as_deref(),
        &config.prompt_files,
    )
}

/// Reads `sources.json` of `dir`, `None` when the run has none.
pub fn read_sources(dir: &RunDir) -> anyhow::Result<Option<Sources>> {
    let path = dir.sources();
    match std::fs::read_to_string(&path) {
        Ok(text) => serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| bad_at(&path, None, format!("not a sources record: {e}"))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(bad_at(&path, None, format!("cannot read: {e}"))),
    }
}

/// Fails when the run of this name already has a store made for other
/// documents (or other user files) than `config` gives now.
pub fn check_same_documents(config: &RunConfig, dir: &RunDir) -> anyhow::Result<()> {
    let project = dir.project();
    let now: Vec<(String, PathBuf)> = planned(config)
        .into_iter()
        .map(|d| (d.document, relative_to(&project, &d.path)))
        .collect();
    let before: Vec<(String, PathBuf)> = match read_sources(dir)? {
        Some(sources) => sources
            .documents
            .into_iter()
            .map(|s| (s.document, s.path))
            .collect(),
        None => match FsStore::open(dir.store()) {
            // A store from before sources were recorded: compare the names only.
            Ok(store) => {
                let first = store
                    .history()
                    .ok()
                    .and_then(|h| h.first().map(|e| e.version));
                let names = first
                    .and_then(|v| store.list_at(v).ok())
                    .unwrap_or_default();
                let now_names: Vec<&String> = now.iter().map(|(d, _)| d).collect();
                if names.iter().collect::<Vec<_>>() == now_names {
                    return Ok(());
                }
                names.into_iter().map(|n| (n, PathBuf::new())).collect()
            }
            Err(FsStoreError::NotAStore { .. }) => return Ok(()),
            Err(e) => {
                return Err(anyhow::anyhow!(
                    "cannot open the store {}: {e}",
                    dir.store().display()
                ));
            }
        },
    };
    if before == now {
        return Ok(());
    }
    let list = |docs: &[(String, PathBuf)]| {
        docs.iter()
            .map(|(d, p)| {
                if p.as_os_str().is_empty() {
                    d.clone()
                } else {
                    format!("{d} from {}", p.display())
                }
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    Err(bad_option(format!(
        "run {:?} was started with other documents ({}; the configuration now gives {}): \
         run again with --fresh to start it over, or give [run] name a new value",
        config.name,
        list(&before),
        list(&now)
    )))
}

/// Opens the run's store, or imports the user's documents into a new one,
/// recording `sources.json` first.
pub fn open_or_import(config: &RunConfig, dir: &RunDir) -> anyhow::Result<FsStore> {
    let root = dir.store();
    match FsStore::open(&root) {
        Ok(store) => return Ok(store),
        Err(FsStoreError::NotAStore { .. }) => {}
        Err(e) => {
            return Err(anyhow::anyhow!(
                "cannot open the store {}: {e}",
                root.display()
            ));
        }
    }
    let project = dir.project();
    let mut files = Vec::new();
    let mut sources = Sources::default();
    for doc in planned(config) {
        let text = read_planned(&doc)?;
        sources.documents.push(Source {
            document: doc.document.clone(),
            name: doc.name,
            kind: doc.kind,
            path: relative_to(&project, &doc.path),
            sha256: sha256_hex(&text),
        });
        files.push((doc.document, text));
    }
    write_atomically(&dir.sources(), &serde_json::to_string_pretty(&sources)?)?;
    FsStore::init(&root, files, "the skills the run started from")
        .map_err(|e| anyhow::anyhow!("cannot create the store {}: {e}", root.display()))
}

/// The gate's evidence for one candidate.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Evidence {
    /// The candidate's label (`<index>-<document>`).
    pub candidate: String,
    /// Whether the gate accepted it.
    pub accepted: bool,
    /// The decision's name, or why it was not gated.
    pub decision: String,
    /// Discordant pairs won.
    pub w: u64,
    /// Discordant pairs lost.
    pub l: u64,
    /// Questions paired.
    pub paired: u64,
    /// The e-value.
    pub e_value: f64,
    /// The estimated improvement.
    pub delta_hat: f64,
    /// The store version it became.
    pub new_version: Option<String>,
}

/// One staged document.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StagedDoc {
    /// The imported document (its user file and hash at import).
    #[serde(flatten)]
    pub source: Source,
    /// The staged text, relative to the run folder.
    pub staged_file: PathBuf,
    /// Its diff against the user's file when staged, relative to the run folder.
    pub diff_file: PathBuf,
    /// The accepted candidates that changed it.
    pub candidates: Vec<String>,
    /// The user file's version in its own store once adopted.
    #[serde(default)]
    pub adopted_as: Option<String>,
}

/// `staged/proposal.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Proposal {
    /// The run's name.
    pub run: String,
    /// The store version the run started from.
    pub initial_version: String,
    /// The store version the run ended with.
    pub final_version: String,
    /// Every document the run changed.
    pub documents: Vec<StagedDoc>,
    /// The gate's evidence for every candidate.
    pub evidence: Vec<Evidence>,
}

/// Reads `staged/proposal.json` of `dir`, `None` when the run staged nothing yet.
pub fn read_proposal(dir: &RunDir) -> anyhow::Result<Option<Proposal>> {
    let path = dir.proposal();
    match std::fs::read_to_string(&path) {
        Ok(text) => serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| bad_at(&path, None, format!("not a staged proposal: {e}"))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(bad_at(&path, None, format!("cannot read: {e}"))),
    }
}

/// Writes `staged/proposal.json` atomically.
pub fn write_proposal(dir: &RunDir, proposal: &Proposal) -> anyhow::Result<()> {
    crate::run::private::create_private_dir(&dir.staged())
        .with_context(|| format!("cannot create {}", dir.staged().display()))?;
    write_atomically(&dir.proposal(), &serde_json::to_string_pretty(proposal)?)
}

/// The gate evidence of a finished run's candidates.
fn evidence(report: &EvolutionReport) -> Vec<Evidence> {
    report
        .records
        .iter()
        .map(|r| match &r.validation {
            Some(v) => Evidence {
                candidate: r.candidate.clone(),
                accepted: r.accepted,
                decision: decision_name(v.verdict.decision),
                w: v.w,
                l: v.l,
                paired: v.n_used,
                e_value: v.verdict.e_value,
                delta_hat: v.verdict.delta_hat,
                new_version: r.new_version.clone(),
            },
            None => Evidence {
                candidate: r.candidate.clone(),
                accepted: false,
                decision: "not gated (FDR level 0)".to_owned(),
                w: 0,
                l: 0,
                paired: 0,
                e_value: 0.0,
                delta_hat: 0.0,
                new_version: None,
            },
        })
        .collect()
}

/// Stages what a finished run changed: every document whose final text
/// differs from the imported one, its diff against the user's file, and the
/// gate's evidence. Returns the proposal (with no documents when nothing
/// was accepted).
pub fn stage(
    dir: &RunDir,
    store: &FsVersionedStore,
    report: &EvolutionReport,
) -> anyhow::Result<Proposal> {
    let sources = read_sources(dir)?.unwrap_or_default();
    // A finished run reported again (the same command, resumed) keeps what was adopted.
    let adopted: BTreeMap<String, String> = read_proposal(dir)?
        .filter(|p| p.final_version == report.final_version)
        .map(|p| {
            p.documents
                .into_iter()
                .filter_map(|d| d.adopted_as.map(|v| (d.source.document, v)))
                .collect()
        })
        .unwrap_or_default();
    let before = store.documents(&report.initial_version).unwrap_or_default();
    let after = store.documents(&report.final_version).unwrap_or_default();
    let evidence = evidence(report);
    let project = dir.project();
    let mut documents = Vec::new();
    let files = dir.staged().join("files");
    let diffs = dir.staged().join("diffs");
    for source in sources.documents {
        let (Some(old), Some(new)) = (before.get(&source.document), after.get(&source.document))
        else {
            continue;
        };
        if old == new {
            continue;
        }
        crate::run::private::create_private_dir(&files)
            .context("cannot create the staged folder")?;
        crate::run::private::create_private_dir(&diffs)
            .context("cannot create the staged folder")?;
        let user_file = project.join(&source.path);
        let current = std::fs::read_to_string(&user_file).unwrap_or_default();
        let shown = source.path.display().to_string();
        // The diff is for reading: an edit's control characters (ESC, BEL, a bidirectional
        // override) are shown escaped there; the staged file itself stays byte-exact.
        let diff = unified_diff(&current, new, &format!("a/{shown}"), &format!("b/{shown}"));
        let diff = terminal_safe(&diff);
        let staged_file = PathBuf::from("staged/files").join(&source.document);
        let diff_file = PathBuf::from("staged/diffs").join(format!("{}.diff", source.document));
        write_atomically(&dir.root().join(&staged_file), new)?;
        write_atomically(&dir.root().join(&diff_file), &diff)?;
        let suffix = format!("-{}", source.document);
        let candidates = evidence
            .iter()
            .filter(|e| e.accepted && e.candidate.ends_with(&suffix))
            .map(|e| e.candidate.clone())
            .collect();
        let adopted_as = adopted.get(&source.document).cloned();
        documents.push(StagedDoc {
            source,
            staged_file,
            diff_file,
            candidates,
            adopted_as,
        });
    }
    let proposal = Proposal {
        run: dir
            .root()
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        initial_version: report.initial_version.clone(),
        final_version: report.final_version.clone(),
        documents,
        evidence,
    };
    write_proposal(dir, &proposal)?;
    evolution_harness::failpoint::failpoint(evolution_harness::failpoint::STAGED);
    Ok(proposal)
}

/// The `report.md` section on the staged proposal: where the files are and
/// the command that adopts them.
pub fn report_section(dir: &RunDir, proposal: &Proposal) -> String {
    let mut md = String::from("\n## Staged for adoption\n\n");
    if proposal.documents.is_empty() {
        let accepted = proposal.evidence.iter().any(|e| e.accepted);
        if accepted && dir.sources().is_file() {
            md.push_str(
                "Nothing is staged: the run's final documents are the texts it started from \
                 (its accepted changes were undone before it ended).\n",
            );
        } else if accepted {
            md.push_str(
                "Nothing is staged: this run began without a record of which files its documents \
                 came from, so its accepted changes stay in its store. Run it again with `--fresh` \
                 to get a proposal you can adopt.\n",
            );
        } else {
            md.push_str(
                "Nothing is staged: no candidate was accepted, so your files stay as they are.\n",
            );
        }
        return md;
    }
    md.push_str(
        "Your files have not been changed. The evolved documents are staged in this run's folder:\n\n\
         | document | your file | staged file | diff |\n|---|---|---|---|\n",
    );
    for d in &proposal.documents {
        md.push_str(&format!(
            "| {} | {} | {} | {} |\n",
            terminal_safe(&d.source.document),
            terminal_safe(&d.source.path.display().to_string()),
            terminal_safe(&dir.root().join(&d.staged_file).display().to_string()),
            terminal_safe(&dir.root().join(&d.diff_file).display().to_string()),
        ));
    }
    md.push_str(&format!(
        "\nReview the diffs, then write them to your files with\n`skill-evolve adopt {}` \
         (it shows each diff and asks; `--skill NAME` picks documents, `--yes` skips the \
         question).\n",
        proposal.run
    ));
    md
}

/// The staged documents (their indices) by skill name and by document name: a skill's name
/// names its `SKILL.md` and every reference evolved with it.
pub fn by_name(proposal: &Proposal) -> BTreeMap<String, Vec<usize>> {
    let mut names: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, d) in proposal.documents.iter().enumerate() {
        for name in [&d.source.name, &d.source.document] {
            let indices = names.entry(name.clone()).or_default();
            if !indices.contains(&i) {
                indices.push(i);
            }
        }
    }
    names
}
