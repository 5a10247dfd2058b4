//! [`RunDir`]: every path of a run's folder, joined here and nowhere else.

use std::path::{Path, PathBuf};

/// The folder of one run, `<config dir>/.skill-evolve/runs/<name>/`, and the
/// files in it: `store/` (the versions), `runlog.sqlite`, `checkpoint.json`,
/// `llm-journal.jsonl` (every finished LLM call), `workspaces/` (the agent's),
/// `sources.json` (which user file each document came from, and its hash)
/// and, at the end, `report.md`, `report.json`, `report.html` and `staged/` (the proposal
/// `adopt` writes back).
pub(crate) struct RunDir {
    /// `<config dir>/.skill-evolve/runs/<name>`.
    root: PathBuf,
}

/// The runs folder of a project: `<project>/.skill-evolve/runs`.
pub(crate) fn runs_of(project: &Path) -> PathBuf {
    project.join(crate::store::STATE_DIR).join("runs")
}

impl RunDir {
    /// The run folder `root` itself (for commands that find runs by listing).
    pub(crate) fn at(root: PathBuf) -> Self {
        RunDir { root }
    }

    /// The folder of the run `name` configured by the file `config_path`.
    pub(crate) fn of(config_path: &Path, name: &str) -> Self {
        let base = config_path
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default();
        RunDir {
            root: runs_of(&base).join(name),
        }
    }

    /// The run's folder itself. The LLM journal is opened here and names its
    /// own file (`evolution_llm_cassette::LLM_JOURNAL_FILE`).
    pub(crate) fn root(&self) -> &Path {
        &self.root
    }

    /// The versioned store of the run's documents.
    pub(crate) fn store(&self) -> PathBuf {
        self.root.join("store")
    }

    /// The SQLite run log.
    pub(crate) fn runlog(&self) -> PathBuf {
        self.root.join("runlog.sqlite")
    }

    /// The checkpoint a rerun resumes from.
    pub(crate) fn checkpoint(&self) -> PathBuf {
        self.root.join("checkpoint.json")
    }

    /// The agent's working folders.
    pub(crate) fn workspaces(&self) -> PathBuf {
        self.root.join("workspaces")
    }

    /// The human-readable report.
    pub(crate) fn report_md(&self) -> PathBuf {
        self.root.join("report.md")
    }

    /// The machine-readable report.
    pub(crate) fn report_json(&self) -> PathBuf {
        self.root.join("report.json")
    }

    /// The self-contained HTML report (charts, lineage, diffs).
    pub(crate) fn report_html(&self) -> PathBuf {
        self.root.join("report.html")
    }

    /// The project folder the run belongs to (the configuration's folder);
    /// the user paths of `sources.json` are relative to it.
    pub(crate) fn project(&self) -> PathBuf {
        self.root
            .ancestors()
            .nth(3)
            .map(Path::to_path_buf)
            .unwrap_or_default()
    }

    /// Which user file each stored document came from.
    pub(crate) fn sources(&self) -> PathBuf {
        self.root.join("sources.json")
    }

    /// The staged proposal's folder.
    pub(crate) fn staged(&self) -> PathBuf {
        self.root.join("staged")
    }

    /// The staged proposal's manifest.
    pub(crate) fn proposal(&self) -> PathBuf {
        self.staged().join("proposal.json")
    }
}
