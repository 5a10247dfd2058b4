//! `skill-evolve evolve`: the reflect → meta-reflect loop on one skill document.
//!
//! ① load the failure trajectories → ② reflect (one LLM call per batch:
//! suggestions and edits) → ③ aggregate (`aggregate_patches`) → ④ select
//! (`rank_and_clip` to the round's budget from the schedule) → ⑤ update
//! (`apply_patch_with_report`, frontmatter and protected regions untouched) →
//! ⑥ meta-reflect (`validate_skill`, then an LLM check of which failures the
//! candidate addresses). Rounds repeat on the failures still open, up to
//! `--rounds`, and stop early when every failure is addressed, when a round
//! proposes the same edits as the one before, or when a round does not
//! improve on the previous one. Then the diff and the table of edits are
//! shown and nothing is written until the user says yes.

mod trajectories;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::Context as _;
use evolution_evolve::aggregate::{Patch, aggregate_patches};
use evolution_evolve::feedback::FEEDBACK_INVALID_JSON;
use evolution_evolve::rank::rank_and_clip;
use evolution_evolve::validate::validate_skill;
use evolution_evolve::{EditBudgetSchedule, parse_llm_json};
use evolution_harness::PromptTemplates;
use evolution_patch::apply_patch_with_report;
use evolution_types::template::render as render_template;
use evolution_types::{ChatMessage, ChatOptions, Edit, EditReport, LlmProvider};
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;
use serde_json::Value;

use crate::cli::EvolveArgs;
use crate::config::build_llm;
use crate::confirm::{Answer, ask_yes_no, stdin_is_terminal};
use crate::doctor::{read_document, region_problems};
use crate::error::{bad_at, bad_option};
use crate::render::{colour_diff, table, unified_diff};
use crate::store::{STATE_DIR, document_name, skill_dir, write_new_version};

use self::trajectories::{Trajectory, load_dir, load_session_state, render};

const REFLECT: &str = include_str!("../../templates/reflect.md");
const META: &str = include_str!("../../templates/meta_reflect.md");

/// Where human-readable output goes: stdout, or stderr when stdout carries JSON.
#[derive(Clone, Copy)]
struct Out {
    json: bool,
}

impl Out {
    fn say(self, text: &str) {
        if self.json {
            eprint!("{text}");
        } else {
            print!("{text}");
        }
    }
}

/// The meta-reflection's judgement of a candidate.
#[derive(Debug, Clone, Default, Serialize)]
struct Meta {
    /// Structural validation errors (empty: passed).
    validation_errors: Vec<String>,
    /// Ids of the failures the candidate addresses.
    addressed: Vec<String>,
    /// Failures still open, with what is missing.
    unaddressed: Vec<(String, String)>,
    /// The model's one-sentence summary.
    summary: String,
    /// False when the reply could not be read.
    judged: bool,
}

/// One round of the loop.
#[derive(Debug, Serialize)]
struct Round {
    round: u32,
    budget: Option<usize>,
    trajectories: usize,
    proposed: usize,
    selected: Vec<Edit>,
    clip: serde_json::Map<String, Value>,
    reports: Vec<EditReport>,
    meta: Meta,
    accepted: bool,
}

/// The whole run, as `--json` prints it and `report.json` keeps it.
#[derive(Debug, Serialize)]
struct Summary {
    skill: String,
    run_dir: String,
    provider: String,
    failures: usize,
    passed_trajectories: usize,
    rounds: Vec<Round>,
    stop_reason: String,
    llm_calls: u32,
    changed: bool,
    written: bool,
    version: Option<String>,
    candidate: Option<String>,
}

pub(crate) fn run(args: &EvolveArgs) -> anyhow::Result<ExitCode> {
    let out = Out { json: args.json };
    // Every input is checked before the first LLM call.
    let skill = &args.skill;
    let original = read_document(skill)?;
    if let Some(p) = region_problems(&original).first() {
        return Err(bad_at(
            skill,
            Some(p.line),
            format!(
                "{}; this skill cannot be evolved safely until it is repaired: run \
                 `skill-evolve doctor --fix {}`",
                p.problem,
                skill.display()
            ),
        ));
    }
    let name = document_name(skill)?;
    let run_dir = args
        .run_dir
        .clone()
        .unwrap_or_else(|| default_run_dir(skill));
    let run_id = run_dir
        .file_name()
        .map_or_else(|| "run".to_owned(), |n| n.to_string_lossy().into_owned());
    let loaded = match (&args.trajectories, &args.session_state) {
        (Some(dir), _) => load_dir(&run_id, dir)?,
        (None, Some(file)) => load_session_state(&run_id, file)?,
        (None, None) => {
            return Err(bad_option(
                "give --trajectories DIR or --session-state FILE",
            ));
        }
    };
    if loaded.failures.is_empty() {
        let source = args
            .trajectories
            .as_deref()
            .or(args.session_state.as_deref())
            .unwrap_or(Path::new(""));
        return Err(bad_at(
            source,
            None,
            format!(
                "all {} trajectories passed: there is no failure to learn from",
                loaded.passed
            ),
        ));
    }
    let schedule = schedule_of(args);
    let total_steps = u64::from(args.rounds.saturating_sub(1));
    schedule
        .budget_at(0, total_steps)
        .map_err(|e| bad_option(format!("--max-edits/--min-edits: {e}")))?;

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let llm = runtime.block_on(build_llm(&args.llm))?;
    for note in &loaded.notes {
        out.say(&format!("skipped {note}\n"));
    }
    out.say(&format!(
        "evolving {} from {} failure trajectories (passing ones left out: {}) with {}\n",
        skill.display(),
        loaded.failures.len(),
        loaded.passed,
        llm.description
    ));

    let mut summary = Summary {
        skill: skill.display().to_string(),
        run_dir: run_dir.display().to_string(),
        provider: llm.description.clone(),
        failures: loaded.failures.len(),
        passed_trajectories: loaded.passed,
        rounds: Vec::new(),
        stop_reason: String::new(),
        llm_calls: 0,
        changed: false,
        written: false,
        version: None,
        candidate: None,
    };
    let candidate = runtime.block_on(evolve_loop(
        llm.provider.as_ref(),
        &original,
        &loaded.failures,
        args,
        &schedule,
        &mut summary,
    ))?;
    summary.changed = candidate != original;

    std::fs::create_dir_all(&run_dir)
        .with_context(|| format!("cannot create the run folder {}", run_dir.display()))?;
    let candidate_path = run_dir.join(&name);
    if summary.changed {
        std::fs::write(&candidate_path, &candidate).with_context(|| {
            format!("cannot save the candidate to {}", candidate_path.display())
        })?;
        summary.candidate = Some(candidate_path.display().to_string());
    }

    if !summary.changed {
        out.say(&format!(
            "no change to propose ({}); {} is unchanged\n",
            summary.stop_reason,
            skill.display()
        ));
        return finish(out, &run_dir, &summary);
    }

    show_candidate(out, &name, &original, &candidate, &summary);
    let approved = if args.yes {
        true
    } else if stdin_is_terminal() {
        ask_yes_no(&format!("Write this version of {name}?"))? == Answer::Yes
    } else {
        out.say(&format!(
            "not written: no terminal to confirm on and no --yes. The candidate is at {}\n",
            candidate_path.display()
        ));
        return finish(out, &run_dir, &summary);
    };
    if !approved {
        out.say(&format!(
            "discarded: {} is unchanged (the candidate stays at {})\n",
            skill.display(),
            candidate_path.display()
        ));
        return finish(out, &run_dir, &summary);
    }
    // The skill must not have changed while the LLM was thinking.
    let now = read_document(skill)?;
    if now != original {
        anyhow::bail!(
            "{} changed while evolving; nothing written (the candidate is at {})",
            skill.display(),
            candidate_path.display()
        );
    }
    let applied: usize = summary
        .rounds
        .iter()
        .filter(|r| r.accepted)
        .map(|r| r.reports.iter().filter(|x| x.status.is_applied()).count())
        .sum();
    let message = format!(
        "skill-evolve evolve: {applied} edits from {} failure trajectories (run {})",
        summary.failures,
        run_dir.display()
    );
    let version = write_new_version(
        skill,
        args.store.as_deref(),
        &original,
        &candidate,
        &message,
    )?;
    summary.written = true;
    summary.version = Some(version.to_string());
    out.say(&format!("wrote {} as {version}\n", skill.display()));
    finish(out, &run_dir, &summary)
}

fn finish(out: Out, run_dir: &Path, summary: &Summary) -> anyhow::Result<ExitCode> {
    let report = serde_json::to_string_pretty(summary)?;
    let path = run_dir.join("report.json");
    std::fs::create_dir_all(run_dir)
        .with_context(|| format!("cannot create the run folder {}", run_dir.display()))?;
    std::fs::write(&path, format!("{report}\n"))
        .with_context(|| format!("cannot write {}", path.display()))?;
    if out.json {
        println!("{report}");
    } else {
        out.say(&format!("run report: {}\n", path.display()));
    }
    Ok(ExitCode::SUCCESS)
}

fn schedule_of(args: &EvolveArgs) -> EditBudgetSchedule {
    args.schedule.schedule(args.max_edits, args.min_edits)
}

fn default_run_dir(skill: &Path) -> PathBuf {
    let ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO)
        .as_millis();
    skill_dir(skill)
        .join(STATE_DIR)
        .join("runs")
        .join(format!("run-{ms}-{}", std::process::id()))
}

fn spinner() -> ProgressBar {
    let bar = ProgressBar::new_spinner().with_message("starting");
    if let Ok(style) = ProgressStyle::with_template("{spinner} {msg} [{elapsed}]") {
        bar.set_style(style);
    }
    bar.enable_steady_tick(Duration::from_millis(120));
    bar
}

/// The rounds; returns the last accepted candidate (the original when none).
async fn evolve_loop(
    llm: &dyn LlmProvider,
    original: &str,
    failures: &[Trajectory],
    args: &EvolveArgs,
    schedule: &EditBudgetSchedule,
    summary: &mut Summary,
) -> anyhow::Result<String> {
    // The ranking prompt is the harness's default template; reflect and
    // meta-reflect are this command's own (the reflect and meta-reflect steps).
    let prompts = PromptTemplates::default().evolve;
    let progress = spinner();
    let mut doc = original.to_owned();
    let mut pending: Vec<&Trajectory> = failures.iter().collect();
    let mut previous_edits: Option<Vec<(String, String, String)>> = None;
    let mut previous_open = usize::MAX;
    let total_steps = u64::from(args.rounds.saturating_sub(1));
    let batch = usize::from(args.batch_size).max(1);
    let mut stop = None;
    for round in 0..u32::from(args.rounds) {
        let number = round.saturating_add(1);
        let budget = schedule
            .budget_at(u64::from(round), total_steps)
            .map_err(|e| bad_option(e.to_string()))?;
        // ② Reflect, batch by batch.
        let mut patches = Vec::new();
        let n_batches = pending.len().div_ceil(batch);
        for (i, chunk) in pending.chunks(batch).enumerate() {
            progress.set_message(format!(
                "round {number}: reflecting on batch {}/{n_batches}",
                i.saturating_add(1)
            ));
            if let Some(patch) = reflect(llm, &doc, chunk, summary).await? {
                patches.push(patch);
            }
        }
        // ③ Aggregate.
        let merged = aggregate_patches(&patches);
        let proposed = merged.edits.len();
        if proposed == 0 {
            stop = Some(format!("round {number}: the reflection proposed no edit"));
            break;
        }
        let key: Vec<(String, String, String)> = merged
            .edits
            .iter()
            .map(|e| {
                (
                    e.op.to_string(),
                    e.target.clone(),
                    e.content.trim().to_owned(),
                )
            })
            .collect();
        if previous_edits.as_ref() == Some(&key) {
            stop = Some(format!(
                "round {number} proposed the same edits as round {round}"
            ));
            break;
        }
        // ④ Select.
        progress.set_message(format!("round {number}: selecting edits"));
        let clip = rank_and_clip(
            llm,
            &prompts,
            &doc,
            merged.edits,
            budget.unwrap_or(usize::MAX),
        )
        .await
        .map_err(|e| anyhow::anyhow!("LLM call failed while ranking edits: {e}"))?;
        summary.llm_calls = summary.llm_calls.saturating_add(clip.llm_calls);
        // ⑤ Update, with the frontmatter protected as well as the regions.
        let front = frontmatter_block(&doc);
        let spans: Vec<&str> = front.into_iter().collect();
        let (candidate, reports) = apply_patch_with_report(&doc, &clip.edits, &spans);
        let mut record = Round {
            round: number,
            budget,
            trajectories: pending.len(),
            proposed,
            selected: clip.edits,
            clip: clip.info,
            reports,
            meta: Meta::default(),
            accepted: false,
        };
        if candidate == doc {
            summary.rounds.push(record);
            stop = Some(format!("round {number}: no proposed edit could be applied"));
            break;
        }
        // ⑥ Meta-reflect: structure first, then the LLM's judgement.
        let validation = validate_skill(original, &candidate);
        if !validation.passed() {
            record.meta.validation_errors = validation.errors;
            summary.rounds.push(record);
            stop = Some(format!(
                "round {number}: the candidate failed structural validation and was dropped"
            ));
            break;
        }
        progress.set_message(format!("round {number}: meta-reflecting"));
        record.meta = meta_reflect(llm, &candidate, &pending, summary).await?;
        record.accepted = true;
        doc = candidate;
        let open = record.meta.unaddressed.len();
        let judged = record.meta.judged;
        let open_ids: Vec<String> = record
            .meta
            .unaddressed
            .iter()
            .map(|(id, _)| id.clone())
            .collect();
        summary.rounds.push(record);
        if !judged {
            stop = Some(format!(
                "round {number}: the meta-reflection reply could not be read; stopping with \
                 this candidate"
            ));
            break;
        }
        if open == 0 {
            stop = Some(format!(
                "round {number}: the meta-reflection finds every known failure addressed"
            ));
            break;
        }
        if open >= previous_open {
            stop = Some(format!(
                "round {number} did not reduce the open failures ({open} still open)"
            ));
            break;
        }
        previous_open = open;
        previous_edits = Some(key);
        let still: Vec<&Trajectory> = pending
            .iter()
            .copied()
            .filter(|t| open_ids.contains(&t.id))
            .collect();
        if !still.is_empty() {
            pending = still;
        }
    }
    progress.finish_and_clear();
    summary.stop_reason = stop.unwrap_or_else(|| format!("reached --rounds {}", args.rounds));
    Ok(doc)
}

/// The frontmatter block (`---` … `---`) at the start of `doc`, if any.
fn frontmatter_block(doc: &str) -> Option<&str> {
    let first_break = doc.find('\n')?;
    if doc.get(..first_break)?.trim_end_matches('\r') != "---" {
        return None;
    }
    let mut offset = first_break.saturating_add(1);
    for line in doc.get(offset..)?.split_inclusive('\n') {
        let bare = line.trim_end_matches(['\r', '\n']);
        if bare == "---" {
            return doc.get(..offset.saturating_add(bare.len()));
        }
        offset = offset.saturating_add(line.len());
    }
    None
}

/// Asks for a JSON object; one retry with feedback when the reply is not one.
/// `None` when both replies were unusable (or the provider reported a content failure).
async fn ask_json(
    llm: &dyn LlmProvider,
    prompt: String,
    tag: &str,
    summary: &mut Summary,
) -> anyhow::Result<Option<serde_json::Map<String, Value>>> {
    let options = ChatOptions::json().with_temperature(0.0).with_tag(tag);
    let mut messages = vec![ChatMessage::user(prompt)];
    for _ in 0..2 {
        summary.llm_calls = summary.llm_calls.saturating_add(1);
        let reply = match llm.chat(&messages, &options).await {
            Ok(reply) => reply,
            Err(e) if e.is_content() => return Ok(None),
            Err(e) => return Err(anyhow::anyhow!("LLM call failed ({tag}): {e}")),
        };
        if let Some(map) = parse_llm_json(&reply.content) {
            return Ok(Some(map));
        }
        messages.push(ChatMessage::assistant(reply.content));
        messages.push(ChatMessage::user(FEEDBACK_INVALID_JSON));
    }
    Ok(None)
}

async fn reflect(
    llm: &dyn LlmProvider,
    doc: &str,
    batch: &[&Trajectory],
    summary: &mut Summary,
) -> anyhow::Result<Option<Patch>> {
    let n = batch.len().to_string();
    let rendered = render(batch);
    let prompt = render_template(
        REFLECT,
        &[
            ("skill_content", doc),
            ("n_trajectories", &n),
            ("trajectories", &rendered),
        ],
    );
    let Some(map) = ask_json(llm, prompt, "skill_evolve.reflect", summary).await? else {
        return Ok(None);
    };
    // A reply of the wrong shape counts as no proposal for this batch.
    Ok(serde_json::from_value::<Patch>(Value::Object(map)).ok())
}

async fn meta_reflect(
    llm: &dyn LlmProvider,
    candidate: &str,
    pending: &[&Trajectory],
    summary: &mut Summary,
) -> anyhow::Result<Meta> {
    let n = pending.len().to_string();
    let modes = render(pending);
    let prompt = render_template(
        META,
        &[
            ("skill_content", candidate),
            ("n_trajectories", &n),
            ("failure_modes", &modes),
        ],
    );
    let Some(map) = ask_json(llm, prompt, "skill_evolve.meta_reflect", summary).await? else {
        return Ok(Meta::default());
    };
    let known: Vec<&str> = pending.iter().map(|t| t.id.as_str()).collect();
    let addressed: Vec<String> = map
        .get("addressed")
        .and_then(Value::as_array)
        .map(|ids| {
            ids.iter()
                .filter_map(Value::as_str)
                .filter(|id| known.contains(id))
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    let mut unaddressed: Vec<(String, String)> = map
        .get("unaddressed")
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(|item| {
                    let id = item.get("id").and_then(Value::as_str).or(item.as_str())?;
                    let why = item.get("why").and_then(Value::as_str).unwrap_or_default();
                    known.contains(&id).then(|| (id.to_owned(), why.to_owned()))
                })
                .collect()
        })
        .unwrap_or_default();
    // A failure the model named in neither list is still open.
    for id in &known {
        if !addressed.iter().any(|a| a == id) && !unaddressed.iter().any(|(u, _)| u == id) {
            unaddressed.push(((*id).to_owned(), "not judged".to_owned()));
        }
    }
    let summary_text = map
        .get("summary")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    Ok(Meta {
        validation_errors: Vec::new(),
        addressed,
        unaddressed,
        summary: summary_text,
        judged: true,
    })
}

/// The coloured diff, the table of edits and the meta-reflection's verdict.
fn show_candidate(out: Out, name: &str, original: &str, candidate: &str, summary: &Summary) {
    let diff = unified_diff(original, candidate, name, &format!("{name} (candidate)"));
    out.say(&colour_diff(&diff));
    let mut rows = Vec::new();
    for round in summary.rounds.iter().filter(|r| r.accepted) {
        for (edit, report) in round.selected.iter().zip(&round.reports) {
            let why = ["reason", "why"]
                .iter()
                .find_map(|k| edit.extra.get(*k).and_then(Value::as_str))
                .unwrap_or("");
            let target = if edit.target.is_empty() {
                "(end of document)".to_owned()
            } else {
                edit.target.clone()
            };
            rows.push(vec![
                round.round.to_string(),
                edit.op.to_string(),
                target,
                why.to_owned(),
                edit.support_count.unwrap_or(1).to_string(),
                report.status.to_string(),
            ]);
        }
    }
    out.say("\n");
    out.say(&table(
        &["round", "op", "target", "why", "support", "status"],
        &rows,
        36,
    ));
    for round in summary.rounds.iter().filter(|r| r.accepted) {
        let m = &round.meta;
        out.say(&format!(
            "round {}: structural validation passed; {} of {} failures addressed{}\n",
            round.round,
            m.addressed.len(),
            round.trajectories,
            if m.summary.is_empty() {
                String::new()
            } else {
                format!(" — {}", m.summary)
            }
        ));
        for (id, why) in &m.unaddressed {
            out.say(&format!("  still open: {id}: {why}\n"));
        }
    }
    out.say(&format!("stopped: {}\n", summary.stop_reason));
}

#[cfg(test)]
mod tests {
    use clap::Parser as _;
    use evolution_testkit::ScriptedLlm;
    use serde_json::json;

    use super::*;
    use crate::cli::{Cli, Command};

    const DOC: &str = "---\nname: notes\ndescription: Release notes.\n---\n\n# Notes\n\n\
                       1. Group changes by area.\n2. Lead with what users notice.\n\
                       3. Name breaking changes.\n\n<!-- SLOW_UPDATE_START -->\nkeep\n\
                       <!-- SLOW_UPDATE_END -->\n";

    fn args(extra: &[&str]) -> EvolveArgs {
        let mut argv = vec!["skill-evolve", "evolve", "SKILL.md", "--trajectories", "t"];
        argv.extend_from_slice(extra);
        match Cli::try_parse_from(argv).unwrap().command {
            Command::Evolve(a) => a,
            _ => unreachable!(),
        }
    }

    fn failures() -> Vec<Trajectory> {
        ["t1", "t2"]
            .iter()
            .map(|id| Trajectory {
                id: (*id).to_owned(),
                task_description: String::new(),
                question: format!("question {id}"),
                fail_reason: format!("{id} failed"),
                predicted_answer: String::new(),
                reference_text: String::new(),
                feedback: String::new(),
            })
            .collect()
    }

    fn summary() -> Summary {
        Summary {
            skill: String::new(),
            run_dir: String::new(),
            provider: String::new(),
            failures: 2,
            passed_trajectories: 0,
            rounds: Vec::new(),
            stop_reason: String::new(),
            llm_calls: 0,
            changed: false,
            written: false,
            version: None,
            candidate: None,
        }
    }

    fn reflect_with(edits: Value) -> String {
        json!({"suggestions": [], "edits": edits, "reasoning": "r"}).to_string()
    }

    fn meta(addressed: &[&str], open: &[&str]) -> String {
        let open: Vec<Value> = open
            .iter()
            .map(|id| json!({"id": id, "why": "w"}))
            .collect();
        json!({"addressed": addressed, "unaddressed": open, "summary": "s"}).to_string()
    }

    fn run_loop(llm: &ScriptedLlm, extra: &[&str]) -> (String, Summary) {
        let a = args(extra);
        let mut s = summary();
        let failures = failures();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let doc = rt
            .block_on(evolve_loop(
                llm,
                DOC,
                &failures,
                &a,
                &schedule_of(&a),
                &mut s,
            ))
            .unwrap();
        (doc, s)
    }

    #[test]
    fn a_round_that_does_not_reduce_the_open_failures_stops_the_loop() {
        let llm = ScriptedLlm::with_replies([
            reflect_with(
                json!([{"op": "replace", "target": "2. Lead with what users notice.",
                                 "content": "2. Lead with user-reported fixes."}]),
            ),
            meta(&["t1"], &["t2"]),
            reflect_with(
                json!([{"op": "insert_after", "target": "3. Name breaking changes.",
                                 "content": "4. List each change once."}]),
            ),
            meta(&[], &["t2"]),
        ]);
        let (doc, s) = run_loop(&llm, &["--rounds", "5"]);
        assert_eq!(s.rounds.len(), 2);
        assert!(
            s.stop_reason.contains("round 2 did not reduce"),
            "{}",
            s.stop_reason
        );
        assert!(doc.contains("2. Lead with user-reported fixes.") && doc.contains("4. List each"));
        assert_eq!(llm.call_count(), 4);
        assert_eq!(s.llm_calls, 4);
        // Round 2 reflects on the open failure only, against the round-1 candidate.
        let second = llm.requests()[2].full_text();
        assert!(
            second.contains("`t2`") && !second.contains("`t1`"),
            "{second}"
        );
        assert!(second.contains("user-reported fixes"));
    }

    #[test]
    fn two_rounds_with_the_same_edits_stop_the_loop() {
        let edits = json!([{"op": "append", "target": "", "content": "- Check twice."}]);
        let llm = ScriptedLlm::with_replies([
            reflect_with(edits.clone()),
            meta(&["t1"], &["t2"]),
            reflect_with(edits),
        ]);
        let (doc, s) = run_loop(&llm, &["--rounds", "3"]);
        assert_eq!(s.rounds.len(), 1);
        assert!(
            s.stop_reason.contains("same edits as round 1"),
            "{}",
            s.stop_reason
        );
        assert_eq!(doc.matches("- Check twice.").count(), 1);
        // Appended before the protected region, which is untouched.
        assert!(doc.find("- Check twice.").unwrap() < doc.find("<!-- SLOW_UPDATE_START").unwrap());
    }

    #[test]
    fn a_candidate_failing_validation_is_dropped() {
        let llm = ScriptedLlm::with_replies([reflect_with(json!([
            {"op": "replace", "target": "3. Name breaking changes.",
             "content": "3. Name breaking changes:\n```text\n## Breaking"}
        ]))]);
        let (doc, s) = run_loop(&llm, &[]);
        assert_eq!(doc, DOC);
        assert!(
            s.stop_reason.contains("failed structural validation"),
            "{}",
            s.stop_reason
        );
        assert!(!s.rounds[0].meta.validation_errors.is_empty());
        assert_eq!(
            llm.call_count(),
            1,
            "no meta-reflection for a dropped candidate"
        );
    }

    #[test]
    fn over_budget_edits_are_ranked_and_clipped() {
        let llm = ScriptedLlm::with_replies([
            reflect_with(json!([
                {"op": "append", "target": "", "content": "- First."},
                {"op": "append", "target": "", "content": "- Second."}
            ])),
            json!({"ranking": [1]}).to_string(),
            meta(&["t1", "t2"], &[]),
        ]);
        let (doc, s) = run_loop(&llm, &["--max-edits", "1"]);
        assert!(doc.contains("- Second.") && !doc.contains("- First."));
        assert_eq!(s.rounds[0].budget, Some(1));
        assert_eq!(s.rounds[0].clip["method"], "llm_rank");
        assert_eq!(s.llm_calls, 3);
        assert!(s.stop_reason.contains("every known failure addressed"));
    }

    #[test]
    fn unreadable_reflections_are_retried_once_then_give_up() {
        let llm = ScriptedLlm::with_replies(["not json", "still not json"]);
        let (doc, s) = run_loop(&llm, &[]);
        assert_eq!(doc, DOC);
        assert!(
            s.stop_reason.contains("proposed no edit"),
            "{}",
            s.stop_reason
        );
        assert_eq!(llm.call_count(), 2);
        assert!(
            llm.requests()[1]
                .full_text()
                .contains(FEEDBACK_INVALID_JSON)
        );
    }

    #[test]
    fn decaying_schedules_shrink_the_budget_per_round() {
        let a = args(&[
            "--schedule",
            "linear",
            "--max-edits",
            "8",
            "--min-edits",
            "2",
            "--rounds",
            "4",
        ]);
        let s = schedule_of(&a);
        let budgets: Vec<Option<usize>> = (0..4).map(|r| s.budget_at(r, 3).unwrap()).collect();
        assert_eq!(budgets, [Some(8), Some(6), Some(4), Some(2)]);
        let a = args(&["--schedule", "autonomous"]);
        assert_eq!(schedule_of(&a).budget_at(0, 0).unwrap(), None);
    }

    #[test]
    fn frontmatter_block_is_found_only_at_the_start() {
        assert_eq!(
            frontmatter_block(DOC),
            Some("---\nname: notes\ndescription: Release notes.\n---")
        );
        assert_eq!(frontmatter_block("# T\n---\na\n---\n"), None);
        assert_eq!(frontmatter_block("---\nunclosed\n"), None);
    }
}
