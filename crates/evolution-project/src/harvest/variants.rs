//! `harvest --tasks FILE --variants N`: after the mined tasks are merged, the `[llm]` provider
//! of the configuration file writes up to `N` variants of each reviewed task of the file
//! (`evolution_harvest::variants`), appended unreviewed and marked `variant_of` their source,
//! for the person to review as they reviewed the source.
//!
//! A task is varied once: a reviewed task that already has a variant in the file (or had
//! one a person deleted since) is not asked again, and a variant is never varied itself. One
//! call per task varied; a call that fails is said and that task is left for the next
//! harvest; a permanent provider error stops the calls of this harvest.

use std::path::Path;

use evolution_harvest::task_file::merge_lines;
use evolution_harvest::variants::{
    MAX_VARIANTS, VARIANT_OF, is_variant_id, variant_lines, write_variants,
};
use evolution_types::LlmProvider;
use serde_json::Value;

use super::HarvestNote;
use super::config::HarvestConfig;
use super::output::{read_task_file, write_merged};
use crate::error::{bad_at, bad_option};
use crate::llm::{Llm, LlmOptions, LlmSource, build_llm_from};
use crate::render::terminal_safe;

/// What the variants step did in one harvest.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VariantCounts {
    /// The model that wrote them (as its calls are recorded).
    pub model: String,
    /// Reviewed tasks asked for variants.
    pub asked: usize,
    /// Reviewed tasks not asked: they have variants already (or had, deleted since).
    pub varied_before: usize,
    /// Variants appended to the file, unreviewed.
    pub written: usize,
    /// Items of the replies left out (past the count, too long, empty, a repeat, a control
    /// character).
    pub left_out: usize,
    /// Calls that failed (their tasks are asked again next time).
    pub failed: usize,
}

impl VariantCounts {
    /// The summary line.
    pub fn line(&self) -> String {
        format!(
            "variants ({}): {} reviewed task{} asked, {} written unreviewed (marked \
             variant_of their task; review them), {} left out of the replies, {} call{} \
             failed, {} task{} varied before",
            terminal_safe(&self.model),
            self.asked,
            if self.asked == 1 { "" } else { "s" },
            self.written,
            self.left_out,
            self.failed,
            if self.failed == 1 { "" } else { "s" },
            self.varied_before,
            if self.varied_before == 1 { "" } else { "s" },
        )
    }
}

/// The variants step of one harvest: its provider, built before anything is written.
pub(super) struct VariantWriter {
    llm: Llm,
    count: usize,
}

impl VariantWriter {
    /// Checks `count` and builds `config`'s `[llm]` provider; every problem is bad input.
    pub(super) fn start(config: &HarvestConfig, count: usize) -> anyhow::Result<Self> {
        check_count(count)?;
        let runtime = runtime()?;
        let llm = runtime.block_on(build_llm_from(
            &LlmOptions::default(),
            &config.llm,
            config.path.clone(),
            LlmSource::RunConfig,
        ))?;
        Ok(VariantWriter { llm, count })
    }

    /// [`add_variants`] with this harvest's provider.
    pub(super) fn vary(
        self,
        path: &Path,
        notes: &mut dyn FnMut(HarvestNote),
    ) -> anyhow::Result<VariantCounts> {
        add_variants(
            path,
            self.llm.provider.as_ref(),
            &self.llm.model,
            self.count,
            notes,
        )
    }
}

/// `count` variants per task: from 1 to [`MAX_VARIANTS`].
fn check_count(count: usize) -> anyhow::Result<()> {
    if (1..=MAX_VARIANTS).contains(&count) {
        Ok(())
    } else {
        Err(bad_option(format!(
            "--variants {count}: from 1 to {MAX_VARIANTS} variants per task"
        )))
    }
}

/// The runtime the provider's calls run on, one at a time.
fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| anyhow::anyhow!("cannot start the variants' provider: {e}"))
}

/// Asks `llm` (whose calls are recorded as `model`) for up to `count` variants of each
/// reviewed task of the tasks file at `path` not varied before, and appends them unreviewed,
/// marked `variant_of` their task, as a harvest appends mined tasks (the file replaced
/// atomically, then its state). Not to be called from inside an async runtime (it runs the
/// calls on one of its own).
///
/// # Errors
/// A count out of range (bad input), a tasks file that cannot be read or written.
pub fn add_variants(
    path: &Path,
    llm: &dyn LlmProvider,
    model: &str,
    count: usize,
    notes: &mut dyn FnMut(HarvestNote),
) -> anyhow::Result<VariantCounts> {
    check_count(count)?;
    let runtime = runtime()?;
    let mut counts = VariantCounts {
        model: model.to_owned(),
        ..VariantCounts::default()
    };
    crate::working_copy::refuse_link(path)?;
    let before = read_task_file(path)?;
    let lines: Vec<serde_json::Map<String, Value>> = before
        .text()
        .lines()
        .filter_map(|line| match serde_json::from_str(line) {
            Ok(Value::Object(object)) => Some(object),
            _ => None,
        })
        .collect();
    let ids: Vec<&str> = lines
        .iter()
        .filter_map(|l| l.get("question_id").and_then(Value::as_str))
        .chain(before.remembered_ids())
        .collect();
    let mut new: Vec<(String, String)> = Vec::new();
    for source in &lines {
        let reviewed = source.get("reviewed") == Some(&Value::Bool(true));
        let (Some(id), Some(_)) = (
            source.get("question_id").and_then(Value::as_str),
            source.get("question").and_then(Value::as_str),
        ) else {
            continue;
        };
        if !reviewed || source.contains_key(VARIANT_OF) {
            continue;
        }
        if ids.iter().any(|other| is_variant_id(id, other)) {
            counts.varied_before = counts.varied_before.saturating_add(1);
            continue;
        }
        counts.asked = counts.asked.saturating_add(1);
        match runtime.block_on(write_variants(llm, source, count)) {
            Ok(read) => {
                counts.left_out = counts.left_out.saturating_add(read.left_out);
                for line in variant_lines(source, &read.variants) {
                    if let Some(variant) = line.get("question_id").and_then(Value::as_str) {
                        new.push((variant.to_owned(), line.to_string()));
                    }
                }
            }
            Err(e) => {
                counts.failed = counts.failed.saturating_add(1);
                let permanent = e.is_permanent();
                notes(HarvestNote::Warning(format!(
                    "warning: no variants of task {}: {}{}",
                    terminal_safe(id),
                    terminal_safe(&e.to_string()),
                    if permanent {
                        "; the provider is not called again in this harvest"
                    } else {
                        ""
                    }
                )));
                if permanent {
                    break;
                }
            }
        }
    }
    if !new.is_empty() {
        let merged = merge_lines(Some(before.text()), before.state(), &new)
            .map_err(|e| bad_at(path, Some(e.line), e.problem))?;
        counts.written = merged.added;
        write_merged(path, &before, &merged)?;
    }
    Ok(counts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use evolution_testkit::ScriptedLlm;
    use evolution_types::{LlmError, LlmErrorKind};
    use serde_json::json;

    fn lines(path: &Path) -> Vec<Value> {
        std::fs::read_to_string(path)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    fn write(path: &Path, tasks: &[Value]) {
        let text: String = tasks.iter().map(|t| format!("{t}\n")).collect();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn reviewed_tasks_get_unreviewed_variants_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tasks.jsonl");
        write(
            &path,
            &[
                json!({"question_id": "a", "task_type": "qa", "question": "Is ticket 1 open?",
                       "check": {"kind": "contains", "value": "yes"}, "sessions": ["s1", "s2"],
                       "reviewed": true}),
                json!({"question_id": "b", "task_type": "qa", "question": "Unread task",
                       "check": {"kind": "rubric", "text": "x"}, "reviewed": false}),
            ],
        );
        let llm = ScriptedLlm::with_replies([
            // Three asked for, four given: one is a repeat, one past the count.
            r#"{"variants": ["Is ticket 7 open?", "is TICKET 7  open?", "Is ticket 9 open?",
                "Is ticket 3 open?"]}"#,
        ]);
        let mut notes = Vec::new();
        let counts = add_variants(&path, &llm, "scripted", 2, &mut |n| notes.push(n)).unwrap();
        assert_eq!(
            (counts.asked, counts.written, counts.left_out, counts.failed),
            (1, 2, 2, 0)
        );
        assert!(notes.is_empty(), "{notes:?}");
        // Only the reviewed task was asked about, with its question and its check.
        let requests = llm.requests();
        assert_eq!(requests.len(), 1);
        assert!(requests[0].full_text().contains("Is ticket 1 open?"));
        assert!(
            requests[0]
                .full_text()
                .contains(r#"{"kind":"contains","value":"yes"}"#)
        );
        let tasks = lines(&path);
        assert_eq!(tasks.len(), 4);
        assert_eq!(
            tasks[2],
            json!({"question_id": "a-variant-1", "task_type": "qa",
                   "question": "Is ticket 7 open?", "check": {"kind": "contains", "value": "yes"},
                   "variant_of": "a", "reviewed": false})
        );
        assert_eq!(tasks[3]["question"], "Is ticket 9 open?");
        // Varied once: again, no call; a variant deleted by the person stays deleted.
        let text = std::fs::read_to_string(&path).unwrap();
        let without: String = text.lines().take(3).map(|l| format!("{l}\n")).collect();
        std::fs::write(&path, &without).unwrap();
        // The person reviews the remaining variant: a variant is never varied itself.
        let mut kept = lines(&path);
        kept[2]["reviewed"] = json!(true);
        write(&path, &kept);
        let reviewed = std::fs::read_to_string(&path).unwrap();
        let again = add_variants(&path, &llm, "scripted", 2, &mut |_| {}).unwrap();
        assert_eq!((again.asked, again.varied_before, again.written), (0, 1, 0));
        assert_eq!(llm.requests().len(), 1);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), reviewed);
    }

    #[test]
    fn a_failed_call_is_said_and_a_permanent_one_stops_the_calls() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tasks.jsonl");
        let task = |id: &str| {
            json!({"question_id": id, "task_type": "qa", "question": format!("do {id}"),
                   "check": null, "reviewed": true})
        };
        write(&path, &[task("a"), task("b"), task("c")]);
        let before = std::fs::read_to_string(&path).unwrap();
        let llm = ScriptedLlm::new();
        llm.push_error(LlmError::new(LlmErrorKind::Timeout, "slow"));
        llm.push_error(LlmError::new(LlmErrorKind::Auth, "refused"));
        let mut notes = Vec::new();
        let counts = add_variants(&path, &llm, "m", 3, &mut |n| notes.push(n)).unwrap();
        assert_eq!((counts.asked, counts.failed, counts.written), (2, 2, 0));
        assert_eq!(llm.requests().len(), 2);
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(format!("{:?}", notes[1]).contains("not called again"));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), before);
    }

    #[test]
    fn a_count_out_of_range_is_refused_before_any_call() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tasks.jsonl");
        let llm = ScriptedLlm::new();
        for count in [0, MAX_VARIANTS + 1] {
            let err = add_variants(&path, &llm, "m", count, &mut |_| {}).unwrap_err();
            assert!(err.to_string().contains("from 1 to 20"), "{err}");
        }
        assert_eq!(llm.requests().len(), 0);
        assert!(!path.exists());
    }
}
