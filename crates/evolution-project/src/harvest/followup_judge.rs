//! The follow-up judge as `harvest` runs it: the `[llm]` provider of the configuration file,
//! one call per session whose follow-ups it has not judged before, and a cache of its verdicts
//! so that a nightly harvest does not pay twice.
//!
//! The cache is `.skill-evolve/followup-judge.jsonl` in the project (the nearest folder with a
//! `.skill-evolve` folder or an `evolve.toml`, at or above `--project`, else at or above the
//! current folder): one JSON line per verdict, `{"key", "model", "verdict", "evidence"}`, the
//! key the SHA-256 of the model and the prompt (`evolution_harvest::followup::cache_key`),
//! written 0600. Outside a project the verdicts are not cached, and the summary says so. A
//! line the cache cannot read is ignored (that session is judged again).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use evolution_harvest::followup::{
    FollowupJudgement, FollowupVerdict, cache_key, clean_evidence, followup_messages,
    judge_followups, quotes_a_followup,
};
use evolution_harvest::session::Session;
use serde::{Deserialize, Serialize};

use super::HarvestNote;
use super::config::HarvestConfig;
use crate::llm::{Llm, LlmOptions, LlmSource, build_llm_from};
use crate::render::terminal_safe;

/// The cache file's name, in the project's state folder.
pub const CACHE_FILE: &str = "followup-judge.jsonl";

/// Largest cache file read, in bytes; a larger one is left unread (every session is judged
/// again) and said so.
const MAX_CACHE_BYTES: u64 = 64 * 1024 * 1024;

/// What the follow-up judge did in one harvest.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FollowupCounts {
    /// The model that judged (as its calls are recorded).
    pub model: String,
    /// Sessions given a verdict (called or cached).
    pub judged: usize,
    /// Of those, verdicts taken from the cache.
    pub cached: usize,
    /// Verdicts that read a correction.
    pub corrections: usize,
    /// Calls that failed (the session has no verdict).
    pub failed: usize,
    /// Verdicts set aside as `unclear` because their quote is not the user's words in a
    /// follow-up (`evolution_harvest::followup::quotes_a_followup`).
    pub set_aside: usize,
    /// The cache file; `None` outside a project.
    pub cache: Option<PathBuf>,
}

/// One cached verdict.
#[derive(Debug, Serialize, Deserialize)]
struct CacheLine {
    key: String,
    model: String,
    verdict: FollowupVerdict,
    evidence: String,
}

/// The judge of one harvest.
pub(super) struct FollowupJudge {
    runtime: tokio::runtime::Runtime,
    llm: Llm,
    cache: HashMap<String, FollowupJudgement>,
    /// True once a permanent provider error stopped the calls of this harvest.
    stopped: bool,
    pub(super) counts: FollowupCounts,
}

impl FollowupJudge {
    /// Builds the provider of `config`'s `[llm]` table and reads the cache of the project
    /// `project` lies in (else the current folder's). Every problem with the provider is bad
    /// input, before anything is written.
    pub(super) fn start(
        config: &HarvestConfig,
        project: Option<&Path>,
        notes: &mut dyn FnMut(HarvestNote),
    ) -> anyhow::Result<Self> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| anyhow::anyhow!("cannot start the follow-up judge: {e}"))?;
        let llm = runtime.block_on(build_llm_from(
            &LlmOptions::default(),
            &config.llm,
            config.path.clone(),
            LlmSource::RunConfig,
        ))?;
        let here = std::env::current_dir().ok();
        let cache_path = project
            .and_then(crate::session_log::project_of)
            .or_else(|| here.as_deref().and_then(crate::session_log::project_of))
            .map(|dir| dir.join(crate::STATE_DIR).join(CACHE_FILE));
        let cache = match &cache_path {
            Some(path) => read_cache(path, &llm.model, notes),
            None => HashMap::new(),
        };
        Ok(FollowupJudge {
            runtime,
            counts: FollowupCounts {
                model: llm.model.clone(),
                cache: cache_path,
                ..FollowupCounts::default()
            },
            llm,
            cache,
            stopped: false,
        })
    }

    /// The verdict on `session`: from the cache, else from one call (remembered in the cache);
    /// `None` when the user wrote no follow-up, or the call failed (said in a note).
    pub(super) fn judge(
        &mut self,
        session: &Session,
        notes: &mut dyn FnMut(HarvestNote),
    ) -> Option<FollowupJudgement> {
        let messages = followup_messages(session)?;
        let key = cache_key(&self.llm.model, &messages);
        if let Some(known) = self.cache.get(&key) {
            self.counts.judged = self.counts.judged.saturating_add(1);
            self.counts.cached = self.counts.cached.saturating_add(1);
            if known.verdict == FollowupVerdict::Correction {
                self.counts.corrections = self.counts.corrections.saturating_add(1);
            }
            return Some(known.clone());
        }
        if self.stopped {
            return None;
        }
        let read = match self
            .runtime
            .block_on(judge_followups(self.llm.provider.as_ref(), &messages))
        {
            Ok(read) => read,
            Err(e) => {
                self.counts.failed = self.counts.failed.saturating_add(1);
                let permanent = e.is_permanent();
                notes(HarvestNote::Warning(format!(
                    "warning: the follow-up judge failed on session {}: {}{}",
                    terminal_safe(&session.id),
                    terminal_safe(&e.to_string()),
                    if permanent {
                        "; it is not called again in this harvest"
                    } else {
                        ""
                    }
                )));
                self.stopped = permanent;
                return None;
            }
        };
        // A verdict is only as good as its quote: one the user never wrote is set aside.
        let read = if read.verdict != FollowupVerdict::Unclear
            && !quotes_a_followup(session, &read.evidence)
        {
            self.counts.set_aside = self.counts.set_aside.saturating_add(1);
            FollowupJudgement::unclear()
        } else {
            read
        };
        self.counts.judged = self.counts.judged.saturating_add(1);
        if read.verdict == FollowupVerdict::Correction {
            self.counts.corrections = self.counts.corrections.saturating_add(1);
        }
        if let Some(path) = &self.counts.cache {
            let line = CacheLine {
                key: key.clone(),
                model: self.llm.model.clone(),
                verdict: read.verdict,
                evidence: read.evidence.clone(),
            };
            let written = serde_json::to_string(&line)
                .map_err(anyhow::Error::from)
                .and_then(|text| crate::session_log::append(path, &format!("{text}\n")));
            if let Err(e) = written {
                notes(HarvestNote::Warning(format!(
                    "warning: the follow-up judge's verdicts are not cached: {}",
                    terminal_safe(&e.to_string())
                )));
                self.counts.cache = None;
            }
        }
        self.cache.insert(key, read.clone());
        Some(read)
    }
}

impl FollowupCounts {
    /// The summary line.
    pub fn line(&self) -> String {
        let called = self.judged.saturating_sub(self.cached);
        let mut line = format!(
            "follow-up judge ({}): {} judged ({} called, {} from the cache), {} correction{}",
            terminal_safe(&self.model),
            self.judged,
            called,
            self.cached,
            self.corrections,
            if self.corrections == 1 { "" } else { "s" }
        );
        if self.set_aside > 0 {
            line.push_str(&format!(
                ", {} verdict(s) set aside as unclear (their quote is not in the user's follow-ups)",
                self.set_aside
            ));
        }
        if self.failed > 0 {
            line.push_str(&format!(", {} call(s) failed", self.failed));
        }
        match &self.cache {
            Some(path) => line.push_str(&format!(
                "; cache {}",
                terminal_safe(&path.display().to_string())
            )),
            None => line
                .push_str("; not cached (no project here: no .skill-evolve folder or evolve.toml)"),
        }
        line
    }
}

/// The verdicts of `model` in the cache file `path` (none when it does not exist yet).
fn read_cache(
    path: &Path,
    model: &str,
    notes: &mut dyn FnMut(HarvestNote),
) -> HashMap<String, FollowupJudgement> {
    let mut cache = HashMap::new();
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return cache;
    };
    let problem = if !meta.is_file() {
        Some("not a plain file".to_owned())
    } else if meta.len() > MAX_CACHE_BYTES {
        Some(format!("over {MAX_CACHE_BYTES} bytes"))
    } else {
        None
    };
    let text = match problem {
        Some(problem) => Err(problem),
        None => std::fs::read(path)
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
            .map_err(|e| e.to_string()),
    };
    match text {
        Ok(text) => {
            for line in text.lines() {
                if let Ok(entry) = serde_json::from_str::<CacheLine>(line)
                    && entry.model == model
                {
                    cache.insert(
                        entry.key,
                        FollowupJudgement {
                            verdict: entry.verdict,
                            evidence: clean_evidence(&entry.evidence),
                        },
                    );
                }
            }
        }
        Err(problem) => notes(HarvestNote::Warning(format!(
            "warning: the follow-up judge's cache {} is not read ({}): every session is judged \
             again",
            terminal_safe(&path.display().to_string()),
            terminal_safe(&problem)
        ))),
    }
    cache
}
