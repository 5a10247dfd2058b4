//! [`RunDir`]: every path of a run's folder, joined here and nowhere else.

use std::path::{Path, PathBuf};

/// The folder of one run, `<config dir>/.skill-evolve/runs/<name>/`, and the
/// files in it: `store/` (the versions), `runlog.sqlite`, `checkpoint.json`,
/// `llm-journal.jsonl` (every finished LLM call), `workspaces/` (the agent's)
/// and, at the end, `report.md` and `report.json`.
pub(crate) struct RunDir {
    /// `<config dir>/.skill-evolve/runs/<name>`.
    root: PathBuf,
}

impl RunDir {
    /// The folder of the run `name` configured by the file `config_path`.
    pub(crate) fn of(config_path: &Path, name: &str) -> Self {
        let base = config_path
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default();
        RunDir {
            root: base.join(".skill-evolve").join("runs").join(name),
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
}
