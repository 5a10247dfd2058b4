//! `skill-evolve doctor`: checks a skill document (frontmatter, protected-region
//! markers, code fences) and repairs what is safe to repair; `doctor --model`
//! says where the local model was found instead.
//!
//! The region checks are evolution-patch's strict parsers, so `doctor` agrees
//! with the engine that `evolve` runs. Repairs never delete text other than a
//! marker line: duplicated markers stacked around one region collapse to one
//! pair, a reversed pair is turned round, a lone start marker gets its end
//! marker at the end of the document (where a renderer ends it anyway), a lone
//! end marker is removed, and an unclosed code fence is closed at the end of
//! the document. Markers that share their line with other text, markers of
//! two regions interleaved, and a broken frontmatter are reported, never
//! touched.

use evolution_project::error::bad_at;
use evolution_project::input::read_document;
use evolution_project::layout::read_skills;
use std::path::Path;
use std::process::ExitCode;

use evolution_patch::{
    APPENDIX_END, APPENDIX_START, RegionError, SLOW_UPDATE_END, SLOW_UPDATE_START,
    appendix_region_bounds, slow_update_region_bounds,
};
use serde::Serialize;

use crate::cli::DoctorArgs;
use crate::confirm::{Answer, ask_yes_no, stdin_is_terminal};
use crate::out::{out, outln};
use crate::render::{colour_diff, terminal_safe, unified_diff};
use evolution_project::error::line_of;
use evolution_project::working_copy::write_through;

/// One problem of a document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Problem {
    /// 1-based line.
    pub(crate) line: usize,
    /// What is wrong, one sentence.
    pub(crate) problem: String,
    /// Whether `--fix` repairs it.
    pub(crate) fixable: bool,
}

/// Every problem of `text`, in line order.
pub(crate) fn check(text: &str) -> Vec<Problem> {
    let mut problems = Vec::new();
    check_frontmatter(text, &mut problems);
    check_regions(text, &mut problems);
    check_fences(text, &mut problems);
    problems.sort_by_key(|p| p.line);
    problems
}

/// The region problems only: what `evolve` refuses.
pub(crate) fn region_problems(text: &str) -> Vec<Problem> {
    let mut problems = Vec::new();
    check_regions(text, &mut problems);
    problems
}

fn check_frontmatter(text: &str, problems: &mut Vec<Problem>) {
    let mut lines = text.split_inclusive('\n');
    let Some(first) = lines.next() else { return };
    if first.trim_start_matches('\u{feff}').trim_end() != "---" {
        return;
    }
    let mut offset = first.len();
    let mut close = None;
    for (index, line) in lines.enumerate() {
        let trimmed = line.trim_end();
        if trimmed == "---" || trimmed == "..." {
            close = Some((index, offset));
            break;
        }
        offset = offset.saturating_add(line.len());
    }
    let Some((_, close_at)) = close else {
        problems.push(Problem {
            line: 1,
            problem: "the frontmatter opened here is never closed by a `---` line".to_owned(),
            fixable: false,
        });
        return;
    };
    let inner = text.get(first.len()..close_at).unwrap_or_default();
    match serde_saphyr::from_str::<serde_json::Value>(inner) {
        Ok(serde_json::Value::Object(_)) => {}
        Ok(serde_json::Value::Null) => {}
        Ok(_) => problems.push(Problem {
            line: 2,
            problem: "the frontmatter is not a YAML mapping of `key: value` lines".to_owned(),
            fixable: false,
        }),
        Err(e) => {
            let line = e
                .location()
                .and_then(|loc| usize::try_from(loc.line()).ok())
                .filter(|&l| l > 0)
                .map_or(2, |l| l.saturating_add(1));
            let message = e.to_string();
            let first_line = message.lines().next().unwrap_or("invalid YAML");
            problems.push(Problem {
                line,
                problem: format!("the frontmatter is not valid YAML: {first_line}"),
                fixable: false,
            });
        }
    }
}

fn check_regions(text: &str, problems: &mut Vec<Problem>) {
    let appendix = appendix_region_bounds(text);
    let slow_update = slow_update_region_bounds(text);
    for (result, start, end) in [
        (&appendix, APPENDIX_START, APPENDIX_END),
        (&slow_update, SLOW_UPDATE_START, SLOW_UPDATE_END),
    ] {
        if let Err(e) = result {
            problems.push(Problem {
                line: e.line(),
                problem: region_message(e),
                fixable: plan_pair(text, start, end).is_ok(),
            });
        }
    }
    if let (Ok(Some(a)), Ok(Some(m))) = (&appendix, &slow_update)
        && a.start < m.end
        && m.start < a.end
    {
        let later = a.start.max(m.start);
        problems.push(Problem {
            line: line_of(text, later),
            problem: "the appendix and slow-update regions overlap; move one region out of the \
                      other by hand"
                .to_owned(),
            fixable: false,
        });
    }
}

fn region_message(e: &RegionError) -> String {
    match e {
        RegionError::Duplicated { marker, .. } => {
            format!("marker `{marker}` is duplicated (this is its second occurrence)")
        }
        RegionError::Reversed { marker, .. } => {
            format!("end marker `{marker}` comes before its start marker (reversed)")
        }
        RegionError::Unpaired {
            marker, partner, ..
        } => format!("marker `{marker}` has no matching `{partner}`"),
        other => other.to_string(),
    }
}

/// A fence line: up to three spaces, then three or more backticks or tildes.
fn fence_of(line: &str) -> Option<(char, usize)> {
    let indent = line
        .len()
        .saturating_sub(line.trim_start_matches(' ').len());
    if indent > 3 {
        return None;
    }
    let rest = line.trim_start_matches(' ');
    let ch = rest.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let run = rest.chars().take_while(|c| *c == ch).count();
    (run >= 3).then_some((ch, run))
}

/// The opening fence left open at the end of the document: its line, character and length.
fn unclosed_fence(text: &str) -> Option<(usize, char, usize)> {
    let mut open: Option<(usize, char, usize)> = None;
    for (index, line) in text.lines().enumerate() {
        match (open, fence_of(line)) {
            (None, Some((ch, run))) => {
                // A backtick fence's info string may not contain backticks.
                let info = line.trim_start_matches(' ').get(run..).unwrap_or_default();
                if ch == '`' && info.contains('`') {
                    continue;
                }
                open = Some((index.saturating_add(1), ch, run));
            }
            (Some((_, och, orun)), Some((ch, run))) if ch == och && run >= orun => {
                let rest = line.trim_start_matches(' ').get(run..).unwrap_or_default();
                if rest.trim().is_empty() {
                    open = None;
                }
            }
            _ => {}
        }
    }
    open
}

fn check_fences(text: &str, problems: &mut Vec<Problem>) {
    if let Some((line, ch, run)) = unclosed_fence(text) {
        problems.push(Problem {
            line,
            problem: format!(
                "the code fence `{}` opened here is never closed",
                ch.to_string().repeat(run)
            ),
            fixable: true,
        });
    }
}

/// What a repair of one marker pair does, by line index (0-based).
#[derive(Debug, Default)]
struct PairPlan {
    delete: Vec<usize>,
    set: Vec<(usize, &'static str)>,
    append: Option<&'static str>,
    notes: Vec<String>,
}

/// Plans the repair of one marker pair, or says why it is not safe.
fn plan_pair(text: &str, start: &'static str, end: &'static str) -> Result<PairPlan, String> {
    let mut starts = Vec::new();
    let mut ends = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let has_start = line.contains(start);
        let has_end = line.contains(end);
        if !has_start && !has_end {
            continue;
        }
        if line.trim() != start && line.trim() != end {
            return Err(format!(
                "line {} holds a marker together with other text",
                index.saturating_add(1)
            ));
        }
        if has_start {
            starts.push(index);
        } else {
            ends.push(index);
        }
    }
    let mut plan = PairPlan::default();
    let human = |i: &usize| i.saturating_add(1).to_string();
    match (starts.first(), starts.last(), ends.first(), ends.last()) {
        (None, None, None, None) => {}
        // Only start markers: keep the first, end the region at the end of the document.
        (Some(&first), _, None, None) => {
            plan.delete.extend(starts.iter().skip(1));
            plan.append = Some(end);
            plan.notes.push(format!(
                "added `{end}` at the end of the document to close the region opened on line {}",
                first.saturating_add(1)
            ));
        }
        // Only end markers: they protect nothing; remove them.
        (None, None, Some(_), _) => {
            plan.delete.extend(ends.iter().copied());
            plan.notes.push(format!(
                "removed the lone `{end}` on line(s) {}",
                ends.iter().map(human).collect::<Vec<_>>().join(", ")
            ));
        }
        // Starts all before ends: collapse stacked duplicates to the outer pair.
        (Some(_), Some(&last_s), Some(&first_e), Some(_)) if last_s < first_e => {
            plan.delete.extend(starts.iter().skip(1));
            plan.delete
                .extend(ends.iter().take(ends.len().saturating_sub(1)));
            if !plan.delete.is_empty() {
                let mut lines: Vec<usize> = plan.delete.clone();
                lines.sort_unstable();
                plan.notes.push(format!(
                    "removed duplicated marker line(s) {}",
                    lines.iter().map(human).collect::<Vec<_>>().join(", ")
                ));
            }
        }
        // Ends all before starts: the pair is reversed; turn it round.
        (Some(&first_s), Some(&last_s), Some(&first_e), Some(&last_e)) if last_e < first_s => {
            plan.set.push((first_e, start));
            plan.set.push((last_s, end));
            plan.delete.extend(ends.iter().skip(1));
            plan.delete
                .extend(starts.iter().take(starts.len().saturating_sub(1)));
            plan.notes.push(format!(
                "turned the reversed pair round: line {} now opens the region and line {} closes it",
                first_e.saturating_add(1),
                last_s.saturating_add(1)
            ));
        }
        _ => {
            return Err(format!(
                "`{start}` and `{end}` alternate (several regions?); fix them by hand"
            ));
        }
    }
    Ok(plan)
}

/// The repaired text and one note per repair; unchanged text when nothing is safe to repair.
pub(crate) fn repair(text: &str) -> (String, Vec<String>) {
    let mut current = text.to_owned();
    let mut notes = Vec::new();
    // The fence first: an end marker added at the end of the document must land after the
    // fence is closed, or it would sit inside the code block as literal text.
    if let Some((line, ch, run)) = unclosed_fence(&current) {
        let fence = ch.to_string().repeat(run);
        if !current.is_empty() && !current.ends_with('\n') {
            current.push('\n');
        }
        current.push_str(&fence);
        current.push('\n');
        notes.push(format!(
            "closed the code fence opened on line {line} at the end of the document"
        ));
    }
    type Parser = fn(&str) -> Result<Option<std::ops::Range<usize>>, RegionError>;
    let pairs: [(&'static str, &'static str, Parser); 2] = [
        (APPENDIX_START, APPENDIX_END, appendix_region_bounds),
        (
            SLOW_UPDATE_START,
            SLOW_UPDATE_END,
            slow_update_region_bounds,
        ),
    ];
    for (start, end, parse) in pairs {
        if parse(&current).is_ok() {
            continue;
        }
        if let Ok(plan) = plan_pair(&current, start, end) {
            current = apply_plan(&current, &plan);
            notes.extend(plan.notes);
        }
    }
    (current, notes)
}

fn apply_plan(text: &str, plan: &PairPlan) -> String {
    let newline = if text.contains("\r\n") { "\r\n" } else { "\n" };
    let mut out = String::with_capacity(text.len().saturating_add(64));
    for (index, line) in text.split_inclusive('\n').enumerate() {
        if plan.delete.contains(&index) {
            continue;
        }
        match plan.set.iter().find(|(i, _)| *i == index) {
            Some((_, marker)) => {
                let ending = &line[line.trim_end_matches(['\r', '\n']).len()..];
                let indent = &line[..line.len() - line.trim_start().len()];
                out.push_str(indent);
                out.push_str(marker);
                out.push_str(ending);
            }
            None => out.push_str(line),
        }
    }
    if let Some(marker) = plan.append {
        if !out.is_empty() && !out.ends_with('\n') {
            out.push_str(newline);
        }
        out.push_str(marker);
        out.push_str(newline);
    }
    out
}

pub(crate) fn run(args: &DoctorArgs) -> anyhow::Result<ExitCode> {
    let path = match &args.file {
        Some(path) if !args.model => path,
        _ => return report_model(),
    };
    if !path.is_dir() {
        return doctor_one(path, args);
    }
    // A skills folder: every skill document in it, in the layouts `run` reads.
    let documents = read_skills(path).map_err(|problem| bad_at(path, None, problem))?;
    if args.json {
        let mut reports = Vec::new();
        let mut clean = true;
        for doc in &documents {
            let problems = check(&read_document(&doc.path)?);
            clean &= problems.is_empty();
            reports.push(Report {
                file: doc.path.display().to_string(),
                problems,
            });
        }
        outln!("{}", serde_json::to_string_pretty(&reports)?);
        return Ok(if clean {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        });
    }
    let mut worst = ExitCode::SUCCESS;
    for doc in &documents {
        let code = doctor_one(&doc.path, args)?;
        if code != ExitCode::SUCCESS {
            worst = code;
        }
    }
    outln!(
        "checked {} skill document(s) in {}",
        documents.len(),
        path.display()
    );
    Ok(worst)
}

/// The problems of one document, as `--json` prints them.
#[derive(Serialize)]
struct Report {
    file: String,
    problems: Vec<Problem>,
}

/// `doctor` on one document: its problems, and with `--fix` its repair.
fn doctor_one(path: &Path, args: &DoctorArgs) -> anyhow::Result<ExitCode> {
    let text = read_document(path)?;
    let problems = check(&text);
    if args.json {
        let report = Report {
            file: path.display().to_string(),
            problems,
        };
        outln!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(exit_for(&report.problems));
    }
    for p in &problems {
        outln!(
            "{}:{}: {}{}",
            path.display(),
            p.line,
            terminal_safe(&p.problem),
            if p.fixable {
                " [fixable with --fix]"
            } else {
                ""
            }
        );
    }
    if problems.is_empty() {
        outln!("{}: no problems found", path.display());
        return Ok(ExitCode::SUCCESS);
    }
    if !args.fix {
        return Ok(exit_for(&problems));
    }
    let (fixed, notes) = repair(&text);
    if fixed == text {
        outln!("nothing here is safe to repair automatically; fix the lines above by hand");
        return Ok(exit_for(&problems));
    }
    let name = path.display().to_string();
    out!(
        "{}",
        colour_diff(&unified_diff(
            &text,
            &fixed,
            &name,
            &format!("{name} (repaired)")
        ))
    );
    for note in &notes {
        outln!("repair: {}", terminal_safe(note));
    }
    let remaining = check(&fixed);
    let approved = if args.yes {
        true
    } else if stdin_is_terminal() {
        ask_yes_no("Write the repaired document?")? == Answer::Yes
    } else {
        outln!("not written: no terminal to confirm on; run again with --yes to write the repair");
        return Ok(exit_for(&problems));
    };
    if !approved {
        outln!("discarded: {} is unchanged", path.display());
        return Ok(exit_for(&problems));
    }
    write_through(path, &fixed)?;
    outln!("repaired {}", path.display());
    for p in &remaining {
        outln!(
            "{}:{}: {} (still to fix by hand)",
            path.display(),
            p.line,
            terminal_safe(&p.problem)
        );
    }
    Ok(exit_for(&remaining))
}

/// 0 when the document is clean, 1 when problems remain (like a linter).
/// `doctor --model`: where the local model is, and whether it is intact.
#[cfg(feature = "local")]
fn report_model() -> anyhow::Result<ExitCode> {
    Ok(crate::fetch_model::report_model())
}

/// `doctor --model` in a program built without the local model.
#[cfg(not(feature = "local"))]
fn report_model() -> anyhow::Result<ExitCode> {
    Err(evolution_project::error::bad_option(
        "this skill-evolve was built without the local model (its `local` feature), so there \
         is no model to check",
    ))
}

fn exit_for(problems: &[Problem]) -> ExitCode {
    if problems.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(lines: &[&str]) -> String {
        let mut s = lines.join("\n");
        s.push('\n');
        s
    }

    #[test]
    fn stacked_duplicates_collapse_to_one_pair() {
        let text = doc(&[
            "# Skill",
            "",
            SLOW_UPDATE_START,
            SLOW_UPDATE_START,
            "guide",
            SLOW_UPDATE_END,
            SLOW_UPDATE_END,
        ]);
        let problems = check(&text);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(problems[0].line, 4);
        assert!(problems[0].fixable);
        let (fixed, notes) = repair(&text);
        assert_eq!(
            fixed,
            doc(&["# Skill", "", SLOW_UPDATE_START, "guide", SLOW_UPDATE_END])
        );
        assert_eq!(notes.len(), 1);
        assert!(check(&fixed).is_empty());
    }

    #[test]
    fn reversed_pair_is_turned_round() {
        let text = doc(&["a", APPENDIX_END, "- note", APPENDIX_START, "b"]);
        assert_eq!(check(&text)[0].line, 2);
        let (fixed, _) = repair(&text);
        assert_eq!(
            fixed,
            doc(&["a", APPENDIX_START, "- note", APPENDIX_END, "b"])
        );
    }

    #[test]
    fn lone_markers() {
        let (fixed, _) = repair(&doc(&["a", SLOW_UPDATE_START, "g"]));
        assert_eq!(fixed, doc(&["a", SLOW_UPDATE_START, "g", SLOW_UPDATE_END]));
        let (fixed, _) = repair(&doc(&["a", APPENDIX_END, "b"]));
        assert_eq!(fixed, doc(&["a", "b"]));
    }

    #[test]
    fn alternating_markers_and_inline_markers_are_not_touched() {
        let text = doc(&[
            APPENDIX_START,
            "x",
            APPENDIX_END,
            APPENDIX_START,
            "y",
            APPENDIX_END,
        ]);
        assert!(!check(&text)[0].fixable);
        assert_eq!(repair(&text).0, text);
        let inline = format!("a {APPENDIX_START} b\n{APPENDIX_START}\n");
        assert_eq!(repair(&inline).0, inline);
    }

    #[test]
    fn unclosed_fence_is_closed_at_the_end() {
        let text = "# T\n````python\ncode\n```\nmore";
        let problems = check(text);
        assert_eq!(problems[0].line, 2);
        let (fixed, _) = repair(text);
        assert_eq!(fixed, "# T\n````python\ncode\n```\nmore\n````\n");
        assert!(check(&fixed).is_empty());
        assert!(check("```\na\n```\n~~~\nb\n~~~\n").is_empty());
    }

    #[test]
    fn a_region_left_open_inside_an_unclosed_fence_ends_after_the_fence() {
        let text = doc(&["# T", SLOW_UPDATE_START, "guide", "```sh", "run it"]);
        let (fixed, notes) = repair(&text);
        assert_eq!(
            fixed,
            doc(&[
                "# T",
                SLOW_UPDATE_START,
                "guide",
                "```sh",
                "run it",
                "```",
                SLOW_UPDATE_END
            ])
        );
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(check(&fixed).is_empty());
    }

    #[test]
    fn frontmatter_problems_are_reported_with_their_line() {
        let problems = check("---\nname: x\n");
        assert_eq!((problems[0].line, problems[0].fixable), (1, false));
        let problems = check("---\nname: x\ndescription: [unclosed\n---\nbody\n");
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].problem.contains("YAML"));
        assert!(check("---\nname: x\ndescription: y\n---\nbody\n").is_empty());
    }

    #[test]
    fn crlf_documents_keep_their_line_endings() {
        let text = format!(
            "a\r\n{SLOW_UPDATE_START}\r\n{SLOW_UPDATE_START}\r\ng\r\n{SLOW_UPDATE_END}\r\n"
        );
        let (fixed, _) = repair(&text);
        assert_eq!(
            fixed,
            format!("a\r\n{SLOW_UPDATE_START}\r\ng\r\n{SLOW_UPDATE_END}\r\n")
        );
    }
}
