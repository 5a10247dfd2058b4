//! Targets made of one document and one edit list (a skill, the system prompt), and the
//! record a patch round leaves.

use evolution_patch::{appendix_region_bounds, apply_patch_with_report, slow_update_region_bounds};
use evolution_types::{Edit, EvolutionRecord, EvolutionStatus, JsonMap, RejectedEdit};

use crate::format::format_rejected_edits;
use crate::replies::{EditsReply, UnreadableReply};
use crate::validate::{extract_section, frontmatter_range};

use super::PATCH_ROUNDS;
use super::patch_loop::{Applied, LoopOutcome, LoopResult, Proposals, Target, region_text};

/// Checks a candidate against its original, returning every failed check.
type Validator<'a> = Box<dyn Fn(&str, &str) -> Vec<String> + Send + Sync + 'a>;

pub(super) struct SingleDoc<'a> {
    pub(super) original: &'a str,
    pub(super) protected: Vec<String>,
    pub(super) validate: Validator<'a>,
}

impl Target for SingleDoc<'_> {
    fn proposals(&self, tag: &str, reply: &str) -> Result<Proposals, UnreadableReply> {
        let reply = EditsReply::read(tag, reply)?;
        Ok(Proposals {
            edits: reply.edits,
            suggestions: reply.suggestions,
        })
    }
    fn rank_document(&self) -> String {
        self.original.to_owned()
    }
    fn originals(&self) -> Vec<&str> {
        vec![self.original]
    }
    fn apply(&self, edits: Vec<Edit>) -> Applied {
        let spans: Vec<&str> = self.protected.iter().map(String::as_str).collect();
        let (doc, reports) = apply_patch_with_report(self.original, &edits, &spans);
        Applied {
            docs: vec![doc],
            edits,
            reports,
        }
    }
    fn validate(&self, applied: &Applied) -> Vec<String> {
        let candidate = applied.docs.first().map_or("", String::as_str);
        (self.validate)(self.original, candidate)
    }
}

pub(super) fn skill_protected(doc: &str) -> Vec<String> {
    let mut spans = Vec::new();
    if let Some(front) = frontmatter_range(doc).and_then(|r| doc.get(r)) {
        spans.push(front.to_owned());
    }
    spans.extend(region_text(doc, appendix_region_bounds(doc)).map(str::to_owned));
    spans.extend(region_text(doc, slow_update_region_bounds(doc)).map(str::to_owned));
    spans
}

pub(super) fn sections_protected<'a>(
    doc: &str,
    titles: impl IntoIterator<Item = &'a String>,
) -> Vec<String> {
    let mut spans: Vec<String> = titles
        .into_iter()
        .filter_map(|title| extract_section(doc, title))
        .map(str::to_owned)
        .collect();
    spans.extend(region_text(doc, appendix_region_bounds(doc)).map(str::to_owned));
    spans
}

pub(super) fn relevant_rejected(rejected: &[RejectedEdit], files: &[&str]) -> String {
    let relevant: Vec<RejectedEdit> = rejected
        .iter()
        .filter(|r| files.contains(&r.target_file.as_str()))
        .cloned()
        .collect();
    format_rejected_edits(&relevant)
}

pub(super) fn stats_text(stats: &JsonMap) -> String {
    serde_json::to_string_pretty(stats).unwrap_or_default()
}

/// Records a patch loop's outcome for the system and tool targets; `evolved` renders the
/// accepted documents as the record's `evolved_content`.
pub(super) fn finish_patch_record(
    record: &mut EvolutionRecord,
    result: LoopResult,
    evolved: impl FnOnce(&[String]) -> String,
) {
    record.llm_calls = result.llm_calls;
    record.suggestions = result.suggestions;
    match result.outcome {
        LoopOutcome::Success { applied, clip_info } => {
            record.status = EvolutionStatus::Accepted;
            record.evolved_content = evolved(&applied.docs);
            record.reason = "patch applied and validated".to_owned();
            fill_from_attempt(record, applied, clip_info);
        }
        LoopOutcome::NoEdits => record.reason = "the LLM proposed no edits".to_owned(),
        LoopOutcome::Failed {
            reason,
            errors,
            last,
        } => {
            record.status = EvolutionStatus::Rejected;
            record.reason = format!("rejected after {PATCH_ROUNDS} rounds ({reason})");
            record.validation_errors = errors;
            if let Some((applied, clip_info)) = last {
                fill_from_attempt(record, applied, clip_info);
            }
        }
    }
}

pub(super) fn fill_from_attempt(
    record: &mut EvolutionRecord,
    applied: Applied,
    clip_info: JsonMap,
) {
    record.edits = applied.edits;
    record.apply_report = applied.reports;
    record.clip_info = clip_info;
}
