//! The first step of `evolve`: the failure trajectories, read by evolution-harness's
//! ingestion (a folder of JSON files, Phase 1, a SESSION-STATE.md, Phase 2,
//! or both together) and held to the command line's bad-input contract.
//!
//! The harness's ingestion partly succeeds and names every skipped input; the
//! command is stricter: an input that cannot be read as a trajectory stops the
//! run with one line naming the file (and the line when known). Files that
//! are not `.json` and sub-folders are only mentioned.

use std::path::Path;

use evolution_evolve::reflect::Failure;
use evolution_harness::{IngestDiagnostic, IngestError, Ingested, load_trajectory_dir};
use serde_json::Value;

use crate::error::bad_at;
use crate::harvest::session_state::read_session_state;
use crate::input::{InputKind, read_input_text};

/// One failed trajectory, as the prompts show it (the kernel's type).
pub type Trajectory = Failure;

/// What the loader found.
#[derive(Debug)]
pub struct Loaded {
    /// The failures, in input order.
    pub failures: Vec<Trajectory>,
    /// Trajectories that passed and were left out.
    pub passed: usize,
    /// Inputs that were not trajectory files (mentioned, not fatal).
    pub notes: Vec<String>,
    /// The id and question text of every trajectory read, failed or
    /// passed: a gate must not test on them.
    pub questions: Vec<(String, String)>,
    /// The skills each trajectory read says it used (the `harvest.skills` of a harvested
    /// session, the `skill_id` of a captured rollout), in input order; empty for one that
    /// names none.
    pub stated_skills: Vec<Vec<String>>,
}

impl Loaded {
    /// A warning when the trajectories name the skills they used and none names the skill
    /// being evolved (any of `names`: its frontmatter name, its folder, its file): the edits
    /// would then come from sessions that did not follow it.
    pub fn unused_skill_warning(&self, names: &[String]) -> Option<String> {
        let naming: Vec<&Vec<String>> = self
            .stated_skills
            .iter()
            .filter(|s| !s.is_empty())
            .collect();
        if naming.is_empty()
            || naming
                .iter()
                .any(|skills| names.iter().any(|n| crate::harvest::names_skill(skills, n)))
        {
            return None;
        }
        let mut used: Vec<&str> = naming
            .iter()
            .flat_map(|s| s.iter().map(String::as_str))
            .collect();
        used.sort_unstable();
        used.dedup();
        // Names read from sessions: a few, each cut short.
        let shown: Vec<String> = used
            .iter()
            .take(5)
            .map(|s| s.chars().take(64).collect())
            .collect();
        let more = used.len().saturating_sub(shown.len());
        Some(format!(
            "warning: {} used {} (they used: {}{}); the edits will come from sessions that did \
             not follow this skill",
            match naming.len() {
                1 => "the one trajectory that names its skills never".to_owned(),
                n => format!("none of the {n} trajectories that name their skills"),
            },
            names.first().map_or("this skill", String::as_str),
            shown.join(", "),
            if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            }
        ))
    }
}

/// Reads the trajectory folder `dir` and the SESSION-STATE.md `session_state`
/// (either or both) and puts their trajectories together, the folder's
/// first. An id found in both sources is refused: the meta-reflection names
/// failures by id, so two failures with one id could not be told apart.
pub fn load_sources(
    run_id: &str,
    dir: Option<&Path>,
    session_state: Option<&Path>,
) -> anyhow::Result<Loaded> {
    let from_dir = dir.map(|d| load_dir(run_id, d)).transpose()?;
    let from_state = session_state
        .map(|f| load_session_state(run_id, f))
        .transpose()?;
    match (from_dir, from_state) {
        (Some(mut a), Some(b)) => {
            let ids: std::collections::BTreeSet<&str> =
                a.questions.iter().map(|(id, _)| id.as_str()).collect();
            if let (Some((id, _)), Some(file)) = (
                b.questions.iter().find(|(id, _)| ids.contains(id.as_str())),
                session_state,
            ) {
                return Err(bad_at(
                    file,
                    None,
                    format!(
                        "trajectory id {id:?} is also in {}: trajectories read together need \
                         ids of their own",
                        dir.unwrap_or(Path::new("")).display()
                    ),
                ));
            }
            a.failures.extend(b.failures);
            a.passed = a.passed.saturating_add(b.passed);
            a.notes.extend(b.notes);
            a.questions.extend(b.questions);
            a.stated_skills.extend(b.stated_skills);
            Ok(a)
        }
        (Some(a), None) | (None, Some(a)) => Ok(a),
        (None, None) => Err(crate::error::bad_option(
            "give --trajectories DIR, --session-state FILE, or both",
        )),
    }
}

/// Reads every `.json` file directly in `dir` (sorted by name).
pub fn load_dir(run_id: &str, dir: &Path) -> anyhow::Result<Loaded> {
    let ingested = load_trajectory_dir(run_id, dir).map_err(|e| match e {
        IngestError::Empty(_) => bad_at(
            dir,
            None,
            "no .json trajectory files here: put failed trajectories (failed_trajectory_*.json \
             with id, task_description, question, fail_reason, predicted_answer, \
             reference_text) in this folder first",
        ),
        other => bad_at(dir, None, other.to_string()),
    })?;
    convert(ingested, |d| {
        // Sources are file names, or `name[index]` for an array element.
        let file = d.source.split('[').next().unwrap_or(&d.source);
        (dir.join(file), element_note(&d.source))
    })
}

/// Reads the `## Outcomes` sections of a SESSION-STATE.md, each judged by its explicit
/// outcome fields (`hard_success`, `outcome`/`结果`/`status`…, a tool error field), never
/// by words found in its text (see `harvest::session_state`).
pub fn load_session_state(run_id: &str, path: &Path) -> anyhow::Result<Loaded> {
    let text = read_input_text(path, InputKind::SessionState)?;
    let source = path.display().to_string();
    let (ingested, _) = read_session_state(run_id, &source, &text);
    convert(ingested, |d| {
        // Sources are `path:line` of the section heading, or the path itself.
        let line = d
            .source
            .strip_prefix(source.as_str())
            .and_then(|rest| rest.strip_prefix(':'))
            .and_then(|n| n.parse::<usize>().ok());
        (path.to_path_buf(), line.map(|l| format!("@{l}")))
    })
}

/// `item 2: ` for `name[1]`.
fn element_note(source: &str) -> Option<String> {
    let index = source.split_once('[')?.1.strip_suffix(']')?;
    let n: usize = index.parse().ok()?;
    Some(format!("item {}", n.saturating_add(1)))
}

/// The line a serde_json message names (`… at line 3 column 5`).
fn json_line(reason: &str) -> Option<usize> {
    let rest = reason.rsplit_once(" at line ")?.1;
    rest.split_whitespace().next()?.parse().ok()
}

fn convert(
    ingested: Ingested,
    locate: impl Fn(&IngestDiagnostic) -> (std::path::PathBuf, Option<String>),
) -> anyhow::Result<Loaded> {
    let mut notes = Vec::new();
    for d in &ingested.diagnostics {
        if d.reason == "not a .json file" || d.reason.starts_with("a folder") {
            notes.push(format!("{}: {}", d.source, d.reason));
            continue;
        }
        let (file, where_) = locate(d);
        let (line, prefix) = match where_ {
            Some(at) if at.starts_with('@') => (at[1..].parse().ok(), String::new()),
            Some(item) => (json_line(&d.reason), format!("{item}: ")),
            None => (json_line(&d.reason), String::new()),
        };
        return Err(bad_at(&file, line, format!("{prefix}{}", d.reason)));
    }
    let mut failures = Vec::new();
    let mut passed = 0usize;
    let mut questions = Vec::new();
    let mut stated_skills = Vec::new();
    for (question, prediction) in ingested.questions.iter().zip(&ingested.predictions) {
        questions.push((prediction.question_id.clone(), question.question.clone()));
        // A task type is no skill: only what a session or rollout says it loaded counts.
        stated_skills.push(crate::harvest::stated_skills(None, &prediction.extra));
        if prediction.correct {
            passed = passed.saturating_add(1);
            continue;
        }
        let text = |key: &str| {
            prediction
                .extra
                .get(key)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        let mut fail_reason = text("fail_reason");
        if fail_reason.trim().is_empty()
            && let Some(signals) = prediction
                .extra
                .get("failure_signals")
                .and_then(Value::as_array)
            && !signals.is_empty()
        {
            let names: Vec<&str> = signals.iter().filter_map(Value::as_str).collect();
            fail_reason = format!(
                "marked as failed by the session state ({})",
                names.join(", ")
            );
        }
        failures.push(Trajectory {
            id: prediction.question_id.clone(),
            task_description: text("task_description"),
            question: question.question.clone(),
            fail_reason,
            predicted_answer: prediction.prediction.clone(),
            reference_text: prediction.answer.clone(),
            feedback: text("feedback"),
        });
    }
    Ok(Loaded {
        failures,
        passed,
        notes,
        questions,
        stated_skills,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_and_a_session_state_load_together_with_ids_of_their_own() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join("t");
        std::fs::create_dir(&folder).unwrap();
        std::fs::write(
            folder.join("a.json"),
            format!(r#"{{"id": "t1", "fail_reason": "x", {FULL}}}"#),
        )
        .unwrap();
        let state = dir.path().join("S.md");
        std::fs::write(
            &state,
            "# S\n## Outcomes\n- hard_success: false\n- fail_reason: \"late\"\n",
        )
        .unwrap();
        let both = load_sources("r", Some(&folder), Some(&state)).unwrap();
        assert_eq!(both.failures.len(), 2);
        assert_eq!(both.failures[0].id, "t1");
        assert_eq!(both.failures[1].fail_reason, "late");
        assert_eq!(both.questions.len(), 2);
        let state_id = both.failures[1].id.clone();
        std::fs::write(
            folder.join("a.json"),
            format!(r#"{{"id": "{state_id}", "fail_reason": "x", {FULL}}}"#),
        )
        .unwrap();
        let err = load_sources("r", Some(&folder), Some(&state))
            .unwrap_err()
            .to_string();
        assert!(err.contains("ids of their own"), "{err}");
    }

    const FULL: &str = r#""task_description": "d", "question": "q", "predicted_answer": "p", "reference_text": "r""#;

    #[test]
    fn session_state_outcomes_become_failures() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("SESSION-STATE.md");
        std::fs::write(
            &path,
            "# Session\n\n## Outcomes\n- hard_success: true\n- soft_score: 0.9\n- fail_reason: \"\"\n\
             - task_description: \"write the blueprint\"\n\n## Outcomes\n- hard_success: false\n\
             - soft_score: 0.4\n- fail_reason: \"wrong chip model\"\n- task_description: \"spec\"\n\n\
             ## Outcomes\n- status: ❌ tool call\n",
        )
        .unwrap();
        let loaded = load_session_state("r", &path).unwrap();
        assert_eq!(loaded.passed, 1);
        assert_eq!(loaded.failures.len(), 2);
        assert_eq!(loaded.failures[0].fail_reason, "wrong chip model");
        assert_eq!(loaded.failures[0].task_description, "spec");
        assert_eq!(
            loaded.failures[1].fail_reason,
            "the session states status: ❌ tool call (failed)"
        );
    }

    #[test]
    fn a_successful_session_that_mentions_errors_is_not_a_failure() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("SESSION-STATE.md");
        std::fs::write(
            &path,
            "# Session\n\n## Outcomes\n- id: fix-parser\n- hard_success: true\n\
             - task_description: 修复错误 in the parser (the old build failed, wrong output)\n\
             - feedback: 不对的地方都修好了\n- 结果: 成功\n\n## Outcomes\n- id: chip\n\
             - 结果: 失败，芯片型号错了\n",
        )
        .unwrap();
        let loaded = load_session_state("r", &path).unwrap();
        assert_eq!(loaded.passed, 1);
        let ids: Vec<&str> = loaded.failures.iter().map(|t| t.id.as_str()).collect();
        assert_eq!(ids, ["chip"]);
        assert_eq!(
            loaded.failures[0].fail_reason,
            "the session states 结果: 失败，芯片型号错了 (failed)"
        );
    }

    #[test]
    fn session_state_bad_values_name_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("S.md");
        std::fs::write(&path, "# S\n## Outcomes\n- hard_success: maybe\n").unwrap();
        let err = load_session_state("r", &path).unwrap_err().to_string();
        assert!(
            err.ends_with("S.md:2: hard_success must be true or false, found \"maybe\""),
            "{err}"
        );
        std::fs::write(&path, "# nothing\n").unwrap();
        let err = load_session_state("r", &path).unwrap_err().to_string();
        assert!(err.contains("S.md: no \"## Outcomes\" section"), "{err}");
    }

    #[test]
    fn json_folder_keeps_failures_and_names_bad_files() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("a.json"),
            format!(r#"[{{"id": "t1", "fail_reason": "x", {FULL}}}, {{"id": "ok", "fail_reason": "", "hard": 1.0, {FULL}}}]"#),
        )
        .unwrap();
        std::fs::write(dir.path().join("notes.txt"), "not a trajectory").unwrap();
        let loaded = load_dir("r", dir.path()).unwrap();
        let ids: Vec<&str> = loaded.failures.iter().map(|t| t.id.as_str()).collect();
        assert_eq!(ids, ["t1"]);
        assert_eq!(loaded.passed, 1);
        assert_eq!(loaded.notes, ["notes.txt: not a .json file"]);
        std::fs::write(dir.path().join("c.json"), "{\n  \"id\": \"x\",\n  oops\n}").unwrap();
        let err = load_dir("r", dir.path()).unwrap_err().to_string();
        assert!(err.contains("c.json:3: invalid JSON"), "{err}");
        std::fs::write(dir.path().join("c.json"), r#"[{"id": "y"}]"#).unwrap();
        let err = load_dir("r", dir.path()).unwrap_err().to_string();
        assert!(
            err.contains("c.json: item 1: missing required fields"),
            "{err}"
        );
    }
}
