//! The run's LLM journal: every finished LLM call of a run, kept in the
//! run's directory, so that a resumed run answers the calls it already made
//! from disk instead of asking (and paying) again.

use std::path::{Path, PathBuf};

use crate::replay::{CassetteError, CassetteMode, Recorder};
use async_trait::async_trait;
use evolution_types::{ChatMessage, ChatOptions, LlmError, LlmProvider, LlmResponse};

/// The journal's file name inside a run's directory.
pub const LLM_JOURNAL_FILE: &str = "llm-journal.jsonl";

/// An [`LlmProvider`] that journals every finished call of a run in the
/// run's directory and answers a call it already holds from the journal.
///
/// Calls are keyed by their content (a SHA-256 of `model`, the messages and
/// the options, tag and timeout left out), so the journal needs no notion
/// of where in the run a call was made: a run killed in the middle of a
/// proposal — after some of the diagnosis judges or evolve calls finished —
/// and started again over the same store, run log and checkpoint makes the
/// same requests again, and each one that finished before the kill is
/// answered from the journal (`cache_hit = true`) without reaching the
/// wrapped provider. A request repeated within a run is answered from the
/// journal too, so a run — killed or not — sends each distinct request to
/// the provider once.
///
/// Each call is appended as one JSON line, flushed and synced to disk before
/// its answer is returned; a line torn by a kill is dropped when the journal
/// is reopened. Failed calls are not journaled. The journal is a
/// [`Recorder`] in [`CassetteMode::RecordIfMissing`], so the file is also a
/// cassette a later run can replay offline.
///
/// In an evolution run, give both the proposer and the loop's own LLM (the
/// harness's `KernelProposer` and `LoopContext`) the same journal. To cap
/// spending, wrap the provider in the harness's `MeteredLlm` *inside* the
/// journal: answers from the journal are then free.
///
/// ```no_run
/// # use evolution_llm_cassette::{CassetteError, LlmJournal};
/// # use evolution_types::LlmProvider;
/// # async fn demo(provider: impl LlmProvider) -> Result<(), CassetteError> {
/// let llm = LlmJournal::open(provider, ".skill-evolve/runs/my-run", "deepseek-chat").await?;
/// // Every call through `llm` is answered from the journal when it holds it.
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct LlmJournal<P> {
    recorder: Recorder<P>,
}

impl<P: LlmProvider> LlmJournal<P> {
    /// Opens (or starts) the journal [`LLM_JOURNAL_FILE`] in `run_dir`,
    /// creating the directory if needed, in front of `inner`. `model` names
    /// the model `inner` calls and is part of every key: a journal written
    /// with another model answers nothing.
    ///
    /// # Errors
    /// [`CassetteError`] when the directory or the file cannot be created or
    /// read, or a line other than a torn last one is not a journal entry.
    pub async fn open(
        inner: P,
        run_dir: impl AsRef<Path>,
        model: impl Into<String>,
    ) -> Result<Self, CassetteError> {
        let dir = run_dir.as_ref();
        let path = dir.join(LLM_JOURNAL_FILE);
        crate::private::create_dir(dir).map_err(|source| CassetteError::Io {
            path: dir.to_path_buf(),
            source,
        })?;
        let recorder = Recorder::open(inner, &path, CassetteMode::RecordIfMissing, model).await?;
        Ok(LlmJournal { recorder })
    }

    /// The journal file.
    pub fn path(&self) -> PathBuf {
        self.recorder.path().to_path_buf()
    }

    /// The wrapped provider.
    pub fn inner(&self) -> &P {
        self.recorder.inner()
    }
}

#[async_trait]
impl<P: LlmProvider> LlmProvider for LlmJournal<P> {
    async fn chat(
        &self,
        messages: &[ChatMessage],
        options: &ChatOptions,
    ) -> Result<LlmResponse, LlmError> {
        self.recorder.chat(messages, options).await
    }
}
