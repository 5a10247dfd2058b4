//! Tool prompts: a tool's extract and verify prompts evolved together as one target.

use evolution_patch::apply_patch_with_report;
use evolution_types::{
    Edit, EvolutionRecord, LlmProvider, Profile, PromptStore, TargetType, ToolCasePack,
};
use serde_json::{Value, json};
use tracing::Instrument as _;

use crate::SOURCE_TAG;
use crate::error::EvolveError;
use crate::format::{budget_text, format_spans};
use crate::prompts::EvolvePrompts;
use crate::replies::{ToolEditsReply, UnreadableReply};
use crate::validate::validate_tool;

use super::EvolveOptions;
use super::patch_loop::{Applied, Proposals, Target, run_patch_loop};
use super::single_doc::{finish_patch_record, relevant_rejected, sections_protected, stats_text};

struct ToolDocs<'a> {
    extract_file: &'a str,
    verify_file: &'a str,
    extract: &'a str,
    verify: &'a str,
    pub(super) profile: &'a Profile,
}

const EXTRACT: &str = "extract";
const VERIFY: &str = "verify";

impl ToolDocs<'_> {
    fn protected(&self, doc: &str) -> Vec<String> {
        sections_protected(doc, [&self.profile.tool_output_format_section])
    }
}

impl Target for ToolDocs<'_> {
    fn proposals(&self, tag: &str, reply: &str) -> Result<Proposals, UnreadableReply> {
        let reply = ToolEditsReply::read(tag, reply)?;
        // Pool both lists under one budget, tagging each edit with its file.
        fn tag_with(src: &'static str) -> impl Fn(Edit) -> Edit {
            move |mut e: Edit| {
                e.extra.insert(SOURCE_TAG.to_owned(), json!(src));
                e
            }
        }
        let edits = reply
            .extract_edits
            .into_iter()
            .map(tag_with(EXTRACT))
            .chain(reply.verify_edits.into_iter().map(tag_with(VERIFY)))
            .collect();
        Ok(Proposals {
            edits,
            suggestions: reply.suggestions,
        })
    }
    fn rank_document(&self) -> String {
        format!(
            "=== {} (extract) ===\n{}\n\n=== {} (verify) ===\n{}",
            self.extract_file, self.extract, self.verify_file, self.verify
        )
    }
    fn originals(&self) -> Vec<&str> {
        vec![self.extract, self.verify]
    }
    fn apply(&self, edits: Vec<Edit>) -> Applied {
        // Split the pooled edits back by their tag, apply per file, and put
        // the reports back in pool order.
        let is_verify = |e: &Edit| e.extra.get(SOURCE_TAG).and_then(Value::as_str) == Some(VERIFY);
        let (verify_edits, extract_edits): (Vec<&Edit>, Vec<&Edit>) =
            edits.iter().partition(|e| is_verify(e));
        let run = |doc: &str, list: Vec<&Edit>| {
            let owned: Vec<Edit> = list.into_iter().cloned().collect();
            let spans = self.protected(doc);
            let spans: Vec<&str> = spans.iter().map(String::as_str).collect();
            apply_patch_with_report(doc, &owned, &spans)
        };
        let (extract_doc, extract_reports) = run(self.extract, extract_edits);
        let (verify_doc, verify_reports) = run(self.verify, verify_edits);
        let (mut next_extract, mut next_verify) =
            (extract_reports.into_iter(), verify_reports.into_iter());
        let reports = edits
            .iter()
            .enumerate()
            .filter_map(|(i, e)| {
                let report = if is_verify(e) {
                    next_verify.next()
                } else {
                    next_extract.next()
                };
                report.map(|mut r| {
                    r.index = i.saturating_add(1);
                    r
                })
            })
            .collect();
        Applied {
            docs: vec![extract_doc, verify_doc],
            edits,
            reports,
        }
    }
    fn validate(&self, applied: &Applied) -> Vec<String> {
        let extract = applied.docs.first().map_or("", String::as_str);
        let verify = applied.docs.get(1).map_or("", String::as_str);
        validate_tool(self.extract, extract, self.verify, verify, self.profile).errors
    }
}

fn tool_contents(extract: &str, verify: &str) -> String {
    json!({ EXTRACT: extract, VERIFY: verify }).to_string()
}

/// One extract prompt and the verify prompt that checks its output: the unit a tool's
/// prompts are evolved in.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ToolPromptPair {
    /// The extract prompt file (`…_extract.md`).
    pub extract: String,
    /// The verify prompt file (`…_verify.md`).
    pub verify: String,
}

const EXTRACT_SUFFIX: &str = "_extract.md";
const VERIFY_SUFFIX: &str = "_verify.md";

/// Every extract/verify pair among a tool's prompt files, in the order of the pack's
/// `target_files` (the profile's `tool_target_files` for the tool); never empty.
///
/// `<stem>_extract.md` pairs with `<stem>_verify.md` when both are listed; the extract and
/// verify files left over pair in the order listed; a file left without a partner pairs with
/// its own stem's (`a_extract.md` with `a_verify.md`). Files with neither suffix are not
/// tool prompts and are ignored. Without any, the pair is `<tool>_extract.md` /
/// `<tool>_verify.md`.
///
/// ```
/// use evolution_evolve::{ToolPromptPair, tool_prompt_pairs};
/// let pack = evolution_types::ToolCasePack {
///     tool_name: "search".to_owned(),
///     target_files: ["search_extract.md", "rerank_extract.md", "rerank_verify.md", "search_verify.md"]
///         .map(String::from)
///         .to_vec(),
///     ..Default::default()
/// };
/// let pairs: Vec<(String, String)> = tool_prompt_pairs(&pack)
///     .into_iter()
///     .map(|ToolPromptPair { extract, verify }| (extract, verify))
///     .collect();
/// assert_eq!(pairs, [
///     ("search_extract.md".to_owned(), "search_verify.md".to_owned()),
///     ("rerank_extract.md".to_owned(), "rerank_verify.md".to_owned()),
/// ]);
/// ```
pub fn tool_prompt_pairs(pack: &ToolCasePack) -> Vec<ToolPromptPair> {
    let mut extracts: Vec<&str> = Vec::new();
    let mut verifies: Vec<&str> = Vec::new();
    for file in &pack.target_files {
        let list = if file.ends_with(EXTRACT_SUFFIX) {
            &mut extracts
        } else if file.ends_with(VERIFY_SUFFIX) {
            &mut verifies
        } else {
            continue;
        };
        if !list.contains(&file.as_str()) {
            list.push(file);
        }
    }
    let stem = |file: &str, suffix: &str| file.strip_suffix(suffix).unwrap_or(file).to_owned();
    let mut pairs = Vec::new();
    let mut lone_extracts = Vec::new();
    for extract in extracts {
        let verify = format!("{}{VERIFY_SUFFIX}", stem(extract, EXTRACT_SUFFIX));
        if let Some(at) = verifies.iter().position(|v| *v == verify) {
            verifies.remove(at);
            pairs.push(ToolPromptPair {
                extract: extract.to_owned(),
                verify,
            });
        } else {
            lone_extracts.push(extract);
        }
    }
    let mut lone_verifies = verifies.into_iter();
    for extract in lone_extracts {
        let verify = lone_verifies.next().map_or_else(
            || format!("{}{VERIFY_SUFFIX}", stem(extract, EXTRACT_SUFFIX)),
            str::to_owned,
        );
        pairs.push(ToolPromptPair {
            extract: extract.to_owned(),
            verify,
        });
    }
    for verify in lone_verifies {
        pairs.push(ToolPromptPair {
            extract: format!("{}{EXTRACT_SUFFIX}", stem(verify, VERIFY_SUFFIX)),
            verify: verify.to_owned(),
        });
    }
    if pairs.is_empty() {
        pairs.push(ToolPromptPair {
            extract: format!("{}{EXTRACT_SUFFIX}", pack.tool_name),
            verify: format!("{}{VERIFY_SUFFIX}", pack.tool_name),
        });
    }
    pairs
}

/// Evolves one extract/verify pair of a tool.
///
/// The `evolve_tool` reply's `extract_edits` and `verify_edits` are pooled
/// (each tagged in `extra["_src"]`) so that one budget and one ranking cover
/// both, then split back by the tag and applied per file with the
/// output-format section and the appendix protected; [`validate_tool`]
/// checks both. `original_content` and `evolved_content` are JSON
/// `{"extract": …, "verify": …}`; `target_file` is the extract file. A pack
/// without failure spans is `Skipped` without a call.
pub(crate) async fn evolve_tool_pair(
    llm: &dyn LlmProvider,
    pack: &ToolCasePack,
    pair: &ToolPromptPair,
    store: &dyn PromptStore,
    prompts: &EvolvePrompts,
    options: &EvolveOptions,
) -> Result<EvolutionRecord, EvolveError> {
    let span = tracing::info_span!("evolve_tool", tool = %pack.tool_name, extract = %pair.extract);
    let record = tool_inner(llm, pack, pair, store, prompts, options)
        .instrument(span)
        .await?;
    tracing::info!(file = %record.target_file, status = ?record.status, calls = record.llm_calls, reason = %record.reason, "tool prompts evolved");
    Ok(record)
}

async fn tool_inner(
    llm: &dyn LlmProvider,
    pack: &ToolCasePack,
    pair: &ToolPromptPair,
    store: &dyn PromptStore,
    prompts: &EvolvePrompts,
    options: &EvolveOptions,
) -> Result<EvolutionRecord, EvolveError> {
    let (extract_file, verify_file) = (pair.extract.clone(), pair.verify.clone());
    let read = |file: &str| {
        store
            .read_prompt(file)
            .map_err(|source| EvolveError::Store {
                file: file.to_owned(),
                source,
            })
    };
    let extract = read(&extract_file)?;
    let verify = read(&verify_file)?;
    let mut record = EvolutionRecord::new(
        extract_file.clone(),
        TargetType::Tool,
        tool_contents(&extract, &verify),
        options.source_version.clone(),
    );
    if pack.failure_spans.is_empty() {
        record.reason = "no failure spans: nothing to evolve".to_owned();
        return Ok(record);
    }
    let profile = &options.profile;
    let frozen = format!("## {}", profile.tool_output_format_section);
    let prompt = prompts.render(
        &prompts.evolve_tool,
        &[
            ("tool_name", &pack.tool_name),
            ("extract_file", &extract_file),
            ("extract_prompt", &extract),
            ("verify_file", &verify_file),
            ("verify_prompt", &verify),
            ("frozen_section", &frozen),
            ("stats", &stats_text(&pack.stats)),
            ("failure_spans", &format_spans(&pack.failure_spans)),
            ("success_spans", &format_spans(&pack.success_spans)),
            (
                "rejected_edits",
                &relevant_rejected(&options.rejected, &[&extract_file, &verify_file]),
            ),
            ("edit_budget", &budget_text(options.edit_budget)),
        ],
    );
    let target = ToolDocs {
        extract_file: &extract_file,
        verify_file: &verify_file,
        extract: &extract,
        verify: &verify,
        profile,
    };
    let result = run_patch_loop(
        llm,
        prompts,
        &target,
        prompt,
        "evolve.tool",
        options.edit_budget,
    )
    .await?;
    finish_patch_record(&mut record, result, |docs| {
        let doc = |i: usize| docs.get(i).map_or("", String::as_str);
        tool_contents(doc(0), doc(1))
    });
    Ok(record)
}
