//! Tool prompts: a tool's extract and verify prompts evolved together as one target.

use evolution_patch::apply_patch_with_report;
use evolution_types::template::render as render_template;
use evolution_types::{
    Edit, EvolutionRecord, JsonMap, LlmProvider, Profile, PromptStore, TargetType, ToolCasePack,
};
use serde_json::{Value, json};
use tracing::Instrument as _;

use crate::SOURCE_TAG;
use crate::error::EvolveError;
use crate::format::{budget_text, format_spans};
use crate::prompts::EvolvePrompts;
use crate::validate::validate_tool;

use super::EvolveOptions;
use super::patch_loop::{Applied, Target, edits_at, run_patch_loop};
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
    fn proposals(&self, reply: &JsonMap) -> Result<Vec<Edit>, String> {
        let extract = edits_at(reply, "extract_edits")?;
        let verify = edits_at(reply, "verify_edits")?;
        if extract.is_none() && verify.is_none() {
            return Err("the reply has neither `extract_edits` nor `verify_edits`".to_owned());
        }
        // Pool both lists under one budget, tagging each edit with its file.
        fn tag(src: &'static str) -> impl Fn(Edit) -> Edit {
            move |mut e: Edit| {
                e.extra.insert(SOURCE_TAG.to_owned(), json!(src));
                e
            }
        }
        Ok(extract
            .unwrap_or_default()
            .into_iter()
            .map(tag(EXTRACT))
            .chain(verify.unwrap_or_default().into_iter().map(tag(VERIFY)))
            .collect())
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

/// The extract and verify prompt files of a tool: the first of the pack's
/// `target_files` ending in `_extract.md` / `_verify.md`, else
/// `<tool>_extract.md` / `<tool>_verify.md`.
pub fn tool_prompt_files(pack: &ToolCasePack) -> (String, String) {
    let find = |suffix: &str| {
        pack.target_files
            .iter()
            .find(|f| f.ends_with(suffix))
            .cloned()
            .unwrap_or_else(|| format!("{}{suffix}", pack.tool_name))
    };
    (find("_extract.md"), find("_verify.md"))
}

/// Evolves a tool's extract and verify prompts together.
///
/// The `evolve_tool` reply's `extract_edits` and `verify_edits` are pooled
/// (each tagged in `extra["_src"]`) so that one budget and one ranking cover
/// both, then split back by the tag and applied per file with the
/// output-format section and the appendix protected; [`validate_tool`]
/// checks both. `original_content` and `evolved_content` are JSON
/// `{"extract": …, "verify": …}`; `target_file` is the extract file. A pack
/// without failure spans is `Skipped` without a call.
pub(crate) async fn evolve_single_tool(
    llm: &dyn LlmProvider,
    pack: &ToolCasePack,
    store: &dyn PromptStore,
    prompts: &EvolvePrompts,
    options: &EvolveOptions,
) -> Result<EvolutionRecord, EvolveError> {
    let span = tracing::info_span!("evolve_tool", tool = %pack.tool_name);
    let record = tool_inner(llm, pack, store, prompts, options)
        .instrument(span)
        .await?;
    tracing::info!(file = %record.target_file, status = ?record.status, calls = record.llm_calls, reason = %record.reason, "tool prompts evolved");
    Ok(record)
}

async fn tool_inner(
    llm: &dyn LlmProvider,
    pack: &ToolCasePack,
    store: &dyn PromptStore,
    prompts: &EvolvePrompts,
    options: &EvolveOptions,
) -> Result<EvolutionRecord, EvolveError> {
    let (extract_file, verify_file) = tool_prompt_files(pack);
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
    let prompt = render_template(
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
