//! The project's ledger of gate tests, one file per skill file, kept across runs and `evolve`
//! sessions: `<project>/.skill-evolve/ledger/<the skill file's path in the project>.json`.
//!
//! With `[gate] ledger = true` (and `fdr_alpha` a level) every candidate of a skill that a
//! run or a gated `evolve` tests is one test of the skill's ledger: e-LOND's level
//! `fdr_alpha` is spread over `[gate] ledger_horizon` tests of that skill, whichever runs
//! make them ([`LedgerBudget`]), instead of starting again with each run; and, unless
//! `[gate] reuse_questions = true`, the gate questions that accepted an earlier version of
//! the skill are not used to gate its successors. Each test appends one entry: its index
//! over the ledger, the run (or session) and candidate, the level it spent and the
//! threshold it needed, the e-value, the decision, the discoveries so far and the gate
//! questions it paired. The entry is written before the first rollout (so a run killed
//! during the gate has spent its level) and completed once the gate decides; a run resumed
//! from its checkpoint finds its own entry (by run and candidate label) and reuses it, so no
//! test is counted twice. Every change holds the ledger's lock and replaces the file
//! atomically.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use evolution_harness::{
    LedgerBudget, LedgerError, LedgerLevel, LedgerOutcome, LedgerSpent, LedgerTest, TestLedger,
    TestLevel,
};
use serde::{Deserialize, Serialize};

use crate::STATE_DIR;
use crate::skill_store::lock_store;
use crate::working_copy::write_atomically;

/// The folder of a project's `.skill-evolve/` that holds the ledgers.
pub const LEDGER_DIR: &str = "ledger";

/// The format of a ledger file this version writes and reads.
pub const LEDGER_FORMAT: u32 = 1;

/// The ledger file of the skill at `relative` (its path in the project `project`).
pub fn ledger_path(project: &Path, relative: &Path) -> PathBuf {
    let mut path = project.join(STATE_DIR).join(LEDGER_DIR).join(relative);
    let name = path
        .file_name()
        .map(|n| format!("{}.json", n.to_string_lossy()))
        .unwrap_or_else(|| "skill.json".to_owned());
    path.set_file_name(name);
    path
}

/// The path of `skill` in the project `project`, or its file name when it lies outside it.
pub fn path_in_project(project: &Path, skill: &Path) -> PathBuf {
    let full = crate::run::dir::resolve(skill);
    let root = crate::run::dir::resolve(project);
    match full.strip_prefix(&root) {
        Ok(relative) if !relative.as_os_str().is_empty() => relative.to_path_buf(),
        _ => skill
            .file_name()
            .map_or_else(|| PathBuf::from("skill"), PathBuf::from),
    }
}

/// One test of a ledger.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LedgerEntry {
    /// Its 1-based position over the whole ledger.
    pub index: u64,
    /// The run (or `evolve` session) that made it: its name and when it started.
    pub run: String,
    /// The candidate's label in that run.
    pub candidate: String,
    /// The level the ledger spread (`fdr_alpha` when the test was opened).
    pub alpha: f64,
    /// The tests it was spread over (`ledger_horizon` then).
    pub horizon: u64,
    /// The share of the level this test spent, `s_k`.
    pub spent: f64,
    /// The level it was tested at, `s_k · (discoveries before + 1)`.
    pub alpha_t: f64,
    /// The e-value it needed, `1/alpha_t`; absent when the level was zero.
    pub threshold: Option<f64>,
    /// Discoveries (accepts) of the ledger before it.
    pub discoveries_before: u64,
    /// Gate questions it was not gated on (they accepted an earlier version).
    #[serde(default)]
    pub excluded: Vec<String>,
    /// Whether the gate decided (an entry left open was spent by a run stopped during its
    /// gate).
    pub closed: bool,
    /// The gate's final e-value (capped at the largest finite number), when it was gated.
    pub e_value: Option<f64>,
    /// The gate's decision, `not_tested` when it was not gated, absent while open.
    pub decision: Option<String>,
    /// Whether it was accepted: a discovery.
    pub accepted: bool,
    /// Discoveries of the ledger once it closed, itself included.
    pub discoveries: u64,
    /// The gate questions it paired, in id order.
    #[serde(default)]
    pub questions: Vec<String>,
}

/// A ledger file: one skill's tests, in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ledger {
    /// [`LEDGER_FORMAT`].
    pub format: u32,
    /// The skill file's path in the project.
    pub skill: String,
    /// Every test, in order.
    pub tests: Vec<LedgerEntry>,
}

impl Ledger {
    /// An empty ledger of the skill at `skill` (its path in the project).
    pub fn new(skill: &str) -> Self {
        Ledger {
            format: LEDGER_FORMAT,
            skill: skill.to_owned(),
            tests: Vec::new(),
        }
    }

    /// What the tests so far have spent.
    pub fn spent(&self) -> LedgerSpent {
        LedgerSpent {
            tests: u64::try_from(self.tests.len()).unwrap_or(u64::MAX),
            spent: self.tests.iter().map(|t| t.spent).sum(),
            discoveries: self.accepts(),
        }
    }

    /// Accepted tests so far.
    pub fn accepts(&self) -> u64 {
        u64::try_from(self.tests.iter().filter(|t| t.accepted).count()).unwrap_or(u64::MAX)
    }

    /// The gate questions that accepted a version, sorted.
    pub fn used_questions(&self) -> BTreeSet<String> {
        self.tests
            .iter()
            .filter(|t| t.accepted)
            .flat_map(|t| t.questions.iter().cloned())
            .collect()
    }

    /// The level the next test would get under `budget`, and the questions it would not be
    /// gated on (none when `reuse`).
    pub fn next(&self, budget: &LedgerBudget, reuse: bool) -> (LedgerLevel, BTreeSet<String>) {
        let excluded = if reuse {
            BTreeSet::new()
        } else {
            self.used_questions()
        };
        (budget.next(&self.spent()), excluded)
    }

    /// The test of `candidate` of `run`: the one opened before when there is one, else a
    /// new entry at the ledger's next level. Returns the test and whether the ledger
    /// changed.
    pub fn open(
        &mut self,
        run: &str,
        candidate: &str,
        budget: &LedgerBudget,
        reuse: bool,
    ) -> (LedgerTest, bool) {
        if let Some(entry) = self.find(run, candidate) {
            return (test_of(entry), false);
        }
        let (next, excluded) = self.next(budget, reuse);
        let entry = LedgerEntry {
            index: next.level.index,
            run: run.to_owned(),
            candidate: candidate.to_owned(),
            alpha: budget.alpha,
            horizon: budget.horizon,
            spent: next.spend,
            alpha_t: next.level.alpha_t,
            threshold: next
                .level
                .threshold
                .is_finite()
                .then_some(next.level.threshold),
            discoveries_before: next.level.discoveries_before,
            excluded: excluded.into_iter().collect(),
            closed: false,
            e_value: None,
            decision: None,
            accepted: false,
            discoveries: next.level.discoveries_before,
            questions: Vec::new(),
        };
        let test = test_of(&entry);
        self.tests.push(entry);
        (test, true)
    }

    /// Records how the test of `candidate` of `run` ended; `false` when it was never opened.
    pub fn close(&mut self, run: &str, candidate: &str, outcome: &LedgerOutcome) -> bool {
        let Some(position) = self
            .tests
            .iter()
            .position(|t| t.run == run && t.candidate == candidate)
        else {
            return false;
        };
        let others = self
            .tests
            .iter()
            .enumerate()
            .filter(|(i, t)| *i != position && t.accepted)
            .count();
        let Some(entry) = self.tests.get_mut(position) else {
            return false;
        };
        entry.closed = true;
        entry.e_value = outcome
            .e_value
            .map(|e| if e.is_finite() { e } else { f64::MAX });
        entry.decision = Some(
            outcome
                .decision
                .map_or("not_tested", |d| d.as_str())
                .to_owned(),
        );
        entry.accepted = outcome.accepted;
        entry.questions.clone_from(&outcome.questions);
        entry.discoveries = u64::try_from(others)
            .unwrap_or(u64::MAX)
            .saturating_add(u64::from(outcome.accepted));
        true
    }

    fn find(&self, run: &str, candidate: &str) -> Option<&LedgerEntry> {
        self.tests
            .iter()
            .find(|t| t.run == run && t.candidate == candidate)
    }
}

/// The test an entry hands out.
fn test_of(entry: &LedgerEntry) -> LedgerTest {
    LedgerTest {
        level: TestLevel {
            index: entry.index,
            alpha_t: entry.alpha_t,
            threshold: entry.threshold.unwrap_or(f64::INFINITY),
            discoveries_before: entry.discoveries_before,
        },
        excluded: entry.excluded.iter().cloned().collect(),
    }
}

/// Reads the ledger at `path`, `None` when there is none.
///
/// # Errors
/// A file that cannot be read or is not a ledger.
pub fn read_ledger(path: &Path) -> Result<Option<Ledger>, LedgerError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(error(path, &format!("cannot read it: {e}"))),
    };
    let ledger: Ledger = serde_json::from_str(&text)
        .map_err(|e| error(path, &format!("not a ledger of gate tests: {e}")))?;
    if ledger.format != LEDGER_FORMAT {
        return Err(error(
            path,
            &format!(
                "in format {}, which this version ({LEDGER_FORMAT}) does not read",
                ledger.format
            ),
        ));
    }
    Ok(Some(ledger))
}

fn error(path: &Path, problem: &str) -> LedgerError {
    LedgerError {
        message: format!("{}: {problem}", path.display()),
    }
}

/// One skill's ledger file.
#[derive(Debug, Clone, PartialEq)]
pub struct LedgerFile {
    /// The ledger's file.
    pub path: PathBuf,
    /// The skill file's path in the project.
    pub skill: String,
}

impl LedgerFile {
    /// The ledger of the skill `skill` in the project `project`.
    pub fn of(project: &Path, skill: &Path) -> Self {
        let relative = path_in_project(project, skill);
        LedgerFile {
            path: ledger_path(project, &relative),
            skill: relative.to_string_lossy().into_owned(),
        }
    }

    /// The ledger as it is now (empty when there is no file yet).
    ///
    /// # Errors
    /// As [`read_ledger`].
    pub fn read(&self) -> Result<Ledger, LedgerError> {
        Ok(read_ledger(&self.path)?.unwrap_or_else(|| Ledger::new(&self.skill)))
    }

    /// Applies `change` to the ledger under its lock and writes it back atomically when
    /// `change` says it changed it.
    fn update<T>(&self, change: impl FnOnce(&mut Ledger) -> (T, bool)) -> Result<T, LedgerError> {
        let _lock = lock_store(&self.path).map_err(|e| error(&self.path, &e.to_string()))?;
        let mut ledger = self.read()?;
        let (out, changed) = change(&mut ledger);
        if changed {
            if let Some(parent) = self.path.parent() {
                std::fs::create_dir_all(parent)
                    .map_err(|e| error(parent, &format!("cannot create it: {e}")))?;
            }
            let text = serde_json::to_string_pretty(&ledger)
                .map_err(|e| error(&self.path, &e.to_string()))?;
            write_atomically(&self.path, &text).map_err(|e| error(&self.path, &e.to_string()))?;
        }
        Ok(out)
    }
}

/// The ledgers a run or a session tests its candidates with: the ledger file of each skill
/// document (by document name), the run's name for the entries, the budget and whether
/// questions that accepted may be reused.
#[derive(Debug, Clone)]
pub struct ProjectLedger {
    /// Document name → its skill's ledger. A document without one (a prompt) is not
    /// tested by a ledger.
    pub files: BTreeMap<String, LedgerFile>,
    /// The run (or session) as the entries name it.
    pub run: String,
    /// The level and the tests it is spread over.
    pub budget: LedgerBudget,
    /// Whether gate questions that accepted a version may gate its successors.
    pub reuse_questions: bool,
}

impl TestLedger for ProjectLedger {
    fn open(
        &self,
        candidate: &str,
        documents: &[String],
    ) -> Result<Option<LedgerTest>, LedgerError> {
        let mut combined: Option<LedgerTest> = None;
        for file in documents.iter().filter_map(|d| self.files.get(d)) {
            let test = file.update(|ledger| {
                ledger.open(&self.run, candidate, &self.budget, self.reuse_questions)
            })?;
            combined = Some(match combined {
                None => test,
                Some(mut both) => {
                    if test.level.threshold > both.level.threshold {
                        both.level = test.level;
                    }
                    both.excluded.extend(test.excluded);
                    both
                }
            });
        }
        Ok(combined)
    }

    fn close(
        &self,
        candidate: &str,
        documents: &[String],
        outcome: &LedgerOutcome,
    ) -> Result<(), LedgerError> {
        for file in documents.iter().filter_map(|d| self.files.get(d)) {
            file.update(|ledger| ((), ledger.close(&self.run, candidate, outcome)))?;
        }
        Ok(())
    }
}

/// What `status` shows of one skill's ledger.
#[derive(Debug, Clone, PartialEq)]
pub struct LedgerSummary {
    /// The skill file's path in the project.
    pub skill: String,
    /// Tests so far.
    pub tests: u64,
    /// Accepts among them.
    pub accepts: u64,
    /// Tests whose gate never decided (their run stopped during it).
    pub open: u64,
    /// The level they spent.
    pub spent: f64,
    /// The level left: the last test's `fdr_alpha` minus what was spent.
    pub left: f64,
    /// The last test's `fdr_alpha` and `ledger_horizon`.
    pub budget: Option<(f64, u64)>,
    /// Gate questions that accepted a version (not reused unless `reuse_questions`).
    pub used_questions: usize,
}

impl LedgerSummary {
    /// The summary of `ledger`.
    pub fn of(ledger: &Ledger) -> Self {
        let spent = ledger.spent();
        let budget = ledger.tests.last().map(|t| (t.alpha, t.horizon));
        LedgerSummary {
            skill: ledger.skill.clone(),
            tests: spent.tests,
            accepts: spent.discoveries,
            open: u64::try_from(ledger.tests.iter().filter(|t| !t.closed).count())
                .unwrap_or(u64::MAX),
            spent: spent.spent,
            left: budget.map_or(0.0, |(alpha, _)| (alpha - spent.spent).max(0.0)),
            budget,
            used_questions: ledger.used_questions().len(),
        }
    }

    /// One line for `status`.
    pub fn line(&self) -> String {
        let budget = self
            .budget
            .map(|(alpha, horizon)| format!(" of fdr_alpha {alpha} over {horizon} tests"))
            .unwrap_or_default();
        let open = if self.open > 0 {
            format!(" ({} stopped before the gate decided)", self.open)
        } else {
            String::new()
        };
        format!(
            "ledger {}: {} test(s){open}, {} accept(s), level spent {:.6}{budget}, {:.6} left, \
             {} gate question(s) used by accepts",
            crate::render::terminal_safe(&self.skill),
            self.tests,
            self.accepts,
            self.spent,
            self.left,
            self.used_questions
        )
    }
}

/// The ledgers of the project `project`, by skill path.
///
/// # Errors
/// A ledger file that cannot be read or is not a ledger.
pub fn project_ledgers(project: &Path) -> Result<Vec<LedgerSummary>, LedgerError> {
    let root = project.join(STATE_DIR).join(LEDGER_DIR);
    let mut files = Vec::new();
    collect_json(&root, &mut files);
    files.sort();
    let mut out = Vec::new();
    for path in files {
        if let Some(ledger) = read_ledger(&path)? {
            out.push(LedgerSummary::of(&ledger));
        }
    }
    Ok(out)
}

/// The `.json` files under `dir` (links not followed).
fn collect_json(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let path = entry.path();
        if kind.is_dir() {
            collect_json(&path, out);
        } else if kind.is_file() && path.extension().is_some_and(|e| e == "json") {
            out.push(path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use evolution_gate::GateDecision;

    fn accept(questions: &[&str]) -> LedgerOutcome {
        LedgerOutcome {
            e_value: Some(8000.0),
            decision: Some(GateDecision::AcceptConfirmed),
            accepted: true,
            questions: questions.iter().map(|q| (*q).to_owned()).collect(),
        }
    }

    #[test]
    fn tests_continue_across_runs_and_reopen_idempotently() {
        let budget = LedgerBudget::new(0.05, 365).unwrap();
        let mut ledger = Ledger::new("skills/refunds/SKILL.md");
        let (first, changed) = ledger.open("night-1", "c1", &budget, false);
        assert!(changed);
        assert_eq!(first.level.index, 1);
        assert!((first.level.threshold - 7300.0).abs() < 1e-6);
        // Opened again (a resumed run): the same test, nothing appended.
        let (again, changed) = ledger.open("night-1", "c1", &budget, false);
        assert!(!changed);
        assert_eq!(again, first);
        assert!(ledger.close("night-1", "c1", &accept(&["q1", "q2"])));
        assert!(ledger.close("night-1", "c1", &accept(&["q1", "q2"])));
        assert_eq!(ledger.tests.len(), 1);
        assert_eq!(ledger.tests[0].discoveries, 1);
        // The next night's first candidate is the ledger's second test, at the level
        // one discovery earns, and is not gated on the questions that accepted.
        let (second, _) = ledger.open("night-2", "c1", &budget, false);
        assert_eq!(second.level.index, 2);
        assert!((second.level.threshold - 3650.0).abs() < 1e-6);
        assert_eq!(
            second.excluded,
            BTreeSet::from(["q1".to_owned(), "q2".to_owned()])
        );
        let (reused, _) = ledger.open("night-2", "c2", &budget, true);
        assert!(reused.excluded.is_empty());
        assert_eq!(reused.level.index, 3);
        let summary = LedgerSummary::of(&ledger);
        assert_eq!((summary.tests, summary.accepts, summary.open), (3, 1, 2));
        assert!((summary.spent - 3.0 * 0.05 / 365.0).abs() < 1e-15);
        assert!((summary.left - (0.05 - 3.0 * 0.05 / 365.0)).abs() < 1e-15);
        assert_eq!(summary.used_questions, 2);
        assert!(!ledger.close("night-3", "c9", &accept(&[])));
    }

    #[test]
    fn ledger_files_round_trip_under_the_project() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path();
        let skill = project.join("skills").join("refunds").join("SKILL.md");
        let file = LedgerFile::of(project, &skill);
        assert_eq!(file.skill, "skills/refunds/SKILL.md");
        assert!(
            file.path
                .ends_with(".skill-evolve/ledger/skills/refunds/SKILL.md.json")
        );
        let ledger = ProjectLedger {
            files: BTreeMap::from([("refunds.md".to_owned(), file.clone())]),
            run: "demo@1".to_owned(),
            budget: LedgerBudget::new(0.05, 10).unwrap(),
            reuse_questions: false,
        };
        let docs = ["refunds.md".to_owned()];
        assert_eq!(ledger.open("p", &["system.md".to_owned()]).unwrap(), None);
        let test = ledger.open("c", &docs).unwrap().unwrap();
        assert!((test.level.threshold - 200.0).abs() < 1e-9);
        ledger.close("c", &docs, &accept(&["g1"])).unwrap();
        let read = file.read().unwrap();
        assert_eq!(read.tests.len(), 1);
        assert_eq!(read.tests[0].decision.as_deref(), Some("accept_confirmed"));
        let summaries = project_ledgers(project).unwrap();
        assert_eq!(summaries.len(), 1);
        assert!(
            summaries[0]
                .line()
                .starts_with("ledger skills/refunds/SKILL.md: 1 test(s), 1 accept(s)"),
            "{}",
            summaries[0].line()
        );
        std::fs::write(&file.path, "{").unwrap();
        assert!(project_ledgers(project).is_err());
    }
}
