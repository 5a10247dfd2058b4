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

mod rounds;
mod run_dir;
mod trajectories;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::Context as _;
use evolution_evolve::EditBudgetSchedule;
use evolution_evolve::reflect::Round;
use serde::Serialize;
use serde_json::Value;

use self::rounds::evolve_loop;
use self::run_dir::{candidate_file_name, check_run_dir, check_run_dir_writable};
use self::trajectories::{load_dir, load_session_state};
use crate::cli::EvolveArgs;
use crate::config::build_llm;
use crate::confirm::{Answer, ask_yes_no, stdin_is_terminal};
use crate::doctor::{read_document, region_problems};
use crate::error::{bad_at, bad_option};
use crate::out::{out, outln};
use crate::render::{colour_diff, table, terminal_safe, unified_diff};
use crate::store::{STATE_DIR, document_name, skill_dir, store_root, write_new_version};
use crate::working_copy::writable_target;

/// Where human-readable output goes: stdout, or stderr when stdout carries JSON.
#[derive(Clone, Copy)]
struct Out {
    json: bool,
}

impl Out {
    /// Prints `text` with control characters escaped: much of it (edit
    /// reasons, summaries, file notes) comes from an LLM or from files.
    fn say(self, text: &str) {
        self.say_styled(&terminal_safe(text));
    }

    /// Prints text this program styled itself (a coloured diff, whose lines
    /// `colour_diff` escaped before colouring).
    fn say_styled(self, text: &str) {
        if self.json {
            eprint!("{text}");
        } else {
            out!("{text}");
        }
    }
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

/// `skill-evolve evolve`: check every input, run the rounds, show the
/// candidate, and write it only once the user agrees.
pub(crate) fn run(args: &EvolveArgs) -> anyhow::Result<ExitCode> {
    let out = Out { json: args.json };
    // Every input is checked before the first LLM call.
    let skill = &args.skill;
    let original = read_document(skill)?;
    if let Some(p) = region_problems(&original).first() {
        // Point at `doctor --fix` only when its repair leaves the regions sound.
        let repairable = region_problems(&crate::doctor::repair(&original).0).is_empty();
        let remedy = if repairable {
            format!("run `skill-evolve doctor --fix {}`", skill.display())
        } else {
            "fix the markers by hand (`skill-evolve doctor` cannot repair this case)".to_owned()
        };
        return Err(bad_at(
            skill,
            Some(p.line),
            format!(
                "{}; this skill cannot be evolved safely until it is repaired: {remedy}",
                p.problem
            ),
        ));
    }
    let name = document_name(skill)?;
    // A skill that could not be written is refused before the LLM is paid.
    if args.yes || stdin_is_terminal() {
        writable_target(skill)?;
    }
    let run_dir = args
        .run_dir
        .clone()
        .unwrap_or_else(|| default_run_dir(skill));
    check_run_dir(
        &run_dir,
        &skill_dir(skill),
        &store_root(skill, args.store.as_deref()),
    )?;
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
    check_run_dir_writable(&run_dir)?;
    let llm = runtime.block_on(build_llm(&args.llm, &[&args.skill]))?;
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

    let (candidate, outcome) = runtime.block_on(evolve_loop(
        llm.provider.as_ref(),
        &original,
        &loaded.failures,
        args,
        &schedule,
    ))?;
    let mut summary = Summary {
        skill: skill.display().to_string(),
        run_dir: run_dir.display().to_string(),
        provider: llm.description.clone(),
        failures: loaded.failures.len(),
        passed_trajectories: loaded.passed,
        rounds: outcome.rounds,
        stop_reason: outcome.stop_reason,
        llm_calls: outcome.llm_calls,
        changed: candidate != original,
        written: false,
        version: None,
        candidate: None,
    };

    std::fs::create_dir_all(&run_dir)
        .with_context(|| format!("cannot create the run folder {}", run_dir.display()))?;
    let candidate_path = run_dir.join(candidate_file_name(&name));
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
        ask_yes_no(&format!("Write this version of {}?", terminal_safe(&name)))? == Answer::Yes
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
        outln!("{report}");
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

/// The coloured diff, the table of edits and the meta-reflection's verdict.
fn show_candidate(out: Out, name: &str, original: &str, candidate: &str, summary: &Summary) {
    let diff = unified_diff(original, candidate, name, &format!("{name} (candidate)"));
    out.say_styled(&colour_diff(&diff));
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

    use super::rounds::Outcome;
    use super::trajectories::Trajectory;
    use super::*;
    use crate::cli::{Cli, Command};
    use evolution_evolve::feedback::FEEDBACK_INVALID_JSON;

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

    fn run_loop(llm: &ScriptedLlm, extra: &[&str]) -> (String, Outcome) {
        let a = args(extra);
        let failures = failures();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(evolve_loop(llm, DOC, &failures, &a, &schedule_of(&a)))
            .unwrap()
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
            s.stop_reason
                .contains("the reflection's reply could not be read"),
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
}
