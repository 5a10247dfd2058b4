//! The engine of `gate_real`: a real LLM answers the suite as the agent, with a skill made of
//! the starting text and the edits committed so far, and each acceptance rule judges the same
//! candidates. Shared by the example (`main.rs`) and its smoke test (`tests/it/gate_real.rs`).
//!
//! Answers are cached by replication, question and skill text, and sampled with a seed made
//! of the replication and the question: every rule of a replication sees the same answer to
//! the same question under the same skill (common random numbers), while answers still vary
//! between questions, skills and replications as sampling at temperature > 0 makes them. A
//! rule's rollouts are the answers it asked for; its model seconds are the time those answers
//! took when they were first generated (so a cached answer costs a rule what it cost once).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use async_trait::async_trait;
use evolution_gate::{Gate, GateParams, ProbationVerdict};
use evolution_harness::{
    AgentReply, AgentRunner, Budget, Calibration, Candidate, ELond, GammaSequence, GateRecord,
    Gatekeeper, NoEvents, QuestionOutcome, RunnerError, Scoring, SubprocessRunner,
    ValidationConfig, ValidationContext, VersionedStore, Workspace, fixed_question_order,
};
use evolution_project::run::config::{DEFAULT_DISCORDANCE, POOL_LAMBDA_DIR};
use evolution_testkit::{MemoryRunLog, MemoryVersionedStore};
use evolution_types::{ChatMessage, ChatOptions, GeneratedQuestion, LlmProvider};
use serde::{Deserialize, Serialize};

#[path = "answers.rs"]
mod answers;

#[path = "rules.rs"]
mod rules;

use self::answers::Agent;
pub(crate) use self::answers::{Responder, Shared};
use self::rules::FUTILITY_RISK;
pub(crate) use self::rules::Rule;

/// The skill document's name in every workspace.
pub(crate) const SKILL_FILE: &str = "SKILL.md";
/// The suite: one JSON object a line (`id`, `family`, `question`, `expect`, `check`).
const SUITE: &str = include_str!("suite.jsonl");
/// The starting skill and the candidate edits.
const CANDIDATES: &str = include_str!("candidates.json");
/// The e-LOND level of the gated run configuration.
const FDR_ALPHA: f64 = 0.05;
/// Share of the gate questions the gated run configuration holds back for probation.
const PROBATION_SHARE: f64 = 0.25;
/// Answers generated between two progress lines on stderr.
const PROGRESS_EVERY: u64 = 10;
/// Longest reply kept, in characters (a model's text is untrusted).
const MAX_REPLY_CHARS: usize = 400;

/// How a reply is scored against `expect`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Check {
    /// The reply, trimmed of spaces, quotes, asterisks and a final full stop, is `expect`.
    Exact,
    /// The reply contains `expect` (case-sensitive).
    Contains,
    /// The reply contains `expect`, ignoring case.
    ContainsCi,
}

/// One question of the suite (its `family` field, the task family, is for people reading it).
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct SuiteQuestion {
    /// Unique id.
    pub(crate) id: String,
    /// What the agent is asked.
    pub(crate) question: String,
    /// The reference the check compares with.
    pub(crate) expect: String,
    /// How the reply is scored.
    pub(crate) check: Check,
}

/// What an edit was written to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Kind {
    /// Written against the starting skill's failures.
    Helpful,
    /// A paraphrase of what the skill says, or a rule no question touches.
    Neutral,
    /// Written to break answers the starting skill gets right.
    Harmful,
}

/// One candidate edit: a rule appended to the skill.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct Edit {
    /// Short id.
    pub(crate) id: String,
    /// What it was written to do.
    pub(crate) kind: Kind,
    /// The rule's text.
    pub(crate) rule: String,
}

#[derive(Deserialize)]
struct CandidateFile {
    skill: String,
    candidates: Vec<Edit>,
}

/// The suite and the candidates.
#[derive(Debug, Clone)]
pub(crate) struct Bench {
    /// The starting skill.
    pub(crate) skill: String,
    /// Every candidate edit.
    pub(crate) edits: Vec<Edit>,
    /// Every question, held-out ones first.
    pub(crate) suite: Vec<SuiteQuestion>,
}

impl Bench {
    /// The shipped suite and candidates.
    pub(crate) fn shipped() -> Result<Self, String> {
        let file: CandidateFile =
            serde_json::from_str(CANDIDATES).map_err(|e| format!("candidates.json: {e}"))?;
        let mut suite = Vec::new();
        for (n, line) in SUITE.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let q: SuiteQuestion =
                serde_json::from_str(line).map_err(|e| format!("suite.jsonl:{}: {e}", n + 1))?;
            suite.push(q);
        }
        let ids: HashSet<&str> = suite.iter().map(|q| q.id.as_str()).collect();
        if ids.len() != suite.len() {
            return Err("suite.jsonl: duplicate question ids".to_owned());
        }
        Ok(Bench {
            skill: file.skill,
            edits: file.candidates,
            suite,
        })
    }

    /// The skill made of the starting text and `rules`, in order.
    pub(crate) fn skill_with(&self, rules: &[&Edit]) -> String {
        let mut text = self.skill.clone();
        if !rules.is_empty() {
            text.push_str("\n## Rules\n\n");
            for edit in rules {
                text.push_str("- ");
                text.push_str(&edit.rule);
                text.push('\n');
            }
        }
        text
    }
}

/// Whether `reply` passes `question`'s check.
pub(crate) fn passes(question: &SuiteQuestion, reply: &str) -> bool {
    let reply = reply.replace(['\u{2019}', '\u{2018}'], "'");
    match question.check {
        Check::Exact => {
            let trimmed = reply
                .trim_start_matches(|c: char| c.is_whitespace() || "\"*`'".contains(c))
                .trim_end_matches(|c: char| c.is_whitespace() || "\"*`'.!".contains(c));
            trimmed == question.expect
        }
        Check::Contains => reply.contains(&question.expect),
        Check::ContainsCi => reply
            .to_lowercase()
            .contains(&question.expect.to_lowercase()),
    }
}

/// `text` cut to `max` characters with control characters escaped, for printing.
pub(crate) fn shown(text: &str, max: usize) -> String {
    let cut: String = text.chars().take(max).collect();
    let mut out: String = cut.escape_debug().collect();
    if text.chars().count() > max {
        out.push('…');
    }
    out
}

/// The size of a run.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Setup {
    /// Candidates per run, a fixed mix of the kinds (at most the edits shipped).
    pub(crate) candidates: usize,
    /// Held-out questions the skill is scored on before and after the run.
    pub(crate) holdout: usize,
    /// Questions the rules judge candidates on.
    pub(crate) gate_questions: usize,
}

/// What one rule did in one replication.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct Tally {
    /// Helpful edits committed.
    pub(crate) helpful: f64,
    /// Neutral edits committed.
    pub(crate) neutral: f64,
    /// Harmful edits committed.
    pub(crate) harmful: f64,
    /// Provisional accepts rolled back on probation.
    pub(crate) rolled_back: f64,
    /// Held-out accuracy of the starting skill.
    pub(crate) before: f64,
    /// Held-out accuracy of the skill at the end of the run.
    pub(crate) after: f64,
    /// Agent rollouts the rule asked for.
    pub(crate) rollouts: f64,
    /// Model seconds of those rollouts.
    pub(crate) seconds: f64,
    /// The edits committed, in order.
    pub(crate) committed: Vec<String>,
}

impl Tally {
    fn count(&mut self, edit: &Edit) {
        match edit.kind {
            Kind::Helpful => self.helpful += 1.0,
            Kind::Neutral => self.neutral += 1.0,
            Kind::Harmful => self.harmful += 1.0,
        }
        self.committed.push(edit.id.clone());
    }
}

/// A small deterministic generator for the candidates' order.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = (self.next() % (i as u64 + 1)) as usize;
            items.swap(i, j);
        }
    }
}

/// The candidates of replication `rep`: the kinds in turn (helpful, neutral, harmful) until
/// `n` are chosen, each kind's edits in a shuffled order, then the whole list shuffled.
pub(crate) fn candidates_of(bench: &Bench, rep: u64, n: usize) -> Vec<&Edit> {
    let mut rng = SplitMix(rep ^ 0x5EED_CAFE);
    let mut pools: Vec<Vec<&Edit>> = [Kind::Helpful, Kind::Neutral, Kind::Harmful]
        .iter()
        .map(|k| bench.edits.iter().filter(|e| e.kind == *k).collect())
        .collect();
    for pool in &mut pools {
        rng.shuffle(pool);
    }
    let mut chosen = Vec::new();
    let mut round = 0;
    while chosen.len() < n.min(bench.edits.len()) {
        for pool in &pools {
            if chosen.len() < n
                && let Some(edit) = pool.get(round)
            {
                chosen.push(*edit);
            }
        }
        round += 1;
    }
    rng.shuffle(&mut chosen);
    chosen
}

fn generated(q: &SuiteQuestion) -> GeneratedQuestion {
    GeneratedQuestion {
        question_id: q.id.clone(),
        answer: q.expect.clone(),
        ..GeneratedQuestion::default()
    }
}

/// The held-out and the gate questions of `setup`.
pub(crate) fn split(bench: &Bench, setup: Setup) -> (Vec<SuiteQuestion>, Vec<SuiteQuestion>) {
    let holdout: Vec<_> = bench.suite.iter().take(setup.holdout).cloned().collect();
    let gate: Vec<_> = bench
        .suite
        .iter()
        .skip(setup.holdout)
        .take(setup.gate_questions)
        .cloned()
        .collect();
    (holdout, gate)
}

/// One replication of `rule`.
pub(crate) async fn replicate(
    shared: &Shared,
    bench: &Bench,
    setup: Setup,
    rep: u64,
    rule: Rule,
) -> Result<Tally, String> {
    let (holdout, gate) = split(bench, setup);
    let order = candidates_of(bench, rep, setup.candidates);
    let agent = Agent::new(shared, rep);
    let mut tally = match rule {
        Rule::Preset(name) => {
            let params = GateParams::preset(name).map_err(|e| e.to_string())?;
            let how = Gating {
                params,
                run_config: None,
            };
            gated(&agent, bench, rep, &order, &gate, how).await?
        }
        Rule::ELond {
            every,
            carry_over,
            futility,
            pool,
        } => {
            let how = Gating {
                params: GateParams {
                    futility_risk: futility.then_some(FUTILITY_RISK),
                    lambda_dir: if pool {
                        POOL_LAMBDA_DIR
                    } else {
                        GateParams::default().lambda_dir
                    },
                    ..GateParams::default()
                },
                run_config: Some(RunConfig {
                    every,
                    carry_over,
                    pool,
                }),
            };
            gated(&agent, bench, rep, &order, &gate, how).await?
        }
        Rule::Greedy { batch, ties } => {
            greedy(&agent, bench, rep, &order, &gate, batch, ties).await
        }
    };
    let committed: Vec<&Edit> = tally
        .committed
        .iter()
        .filter_map(|id| bench.edits.iter().find(|e| &e.id == id))
        .collect();
    tally.before = shared.accuracy(rep, &bench.skill, &holdout).await;
    tally.after = shared
        .accuracy(rep, &bench.skill_with(&committed), &holdout)
        .await;
    (tally.rollouts, tally.seconds) = agent.spent();
    Ok(tally)
}

/// How a gated rule judges: its parameters and, for the run configuration, its options.
struct Gating {
    params: GateParams,
    run_config: Option<RunConfig>,
}

/// The options of `skill-evolve run`'s configuration a rule sets (e-LOND and probation always).
#[derive(Clone, Copy)]
struct RunConfig {
    every: Option<usize>,
    carry_over: bool,
    pool: bool,
}

async fn gated(
    agent: &Agent<'_>,
    bench: &Bench,
    rep: u64,
    order: &[&Edit],
    gate: &[SuiteQuestion],
    how: Gating,
) -> Result<Tally, String> {
    let questions: Vec<GeneratedQuestion> = gate.iter().map(generated).collect();
    // A run calibrated for the pool holds no questions back: no accept of it is provisional.
    let held_back = if how.run_config.is_some_and(|c| !c.pool) {
        ((questions.len() as f64) * PROBATION_SHARE).round() as usize
    } else {
        0
    };
    let (gate_qs, pool) = questions.split_at(questions.len().saturating_sub(held_back));
    let store = MemoryVersionedStore::new([(SKILL_FILE.to_owned(), bench.skill.clone())].into());
    let log = MemoryRunLog::new();
    let budget = Budget::unlimited();
    let ctx = ValidationContext {
        runner: agent,
        recorder: &log,
        budget: &budget,
        events: &NoEvents,
        resume_from: None,
    };
    let mut config = ValidationConfig {
        gate_run_prefix: format!("real{rep}_gate_"),
        seed: rep,
        params: how.params,
        ..ValidationConfig::default()
    };
    if let Some(every) = how.run_config.and_then(|c| c.every) {
        config.ladder = vec![every];
    }
    if how.run_config.is_some_and(|c| c.pool) {
        config.calibration = Calibration::Pool {
            discordance: DEFAULT_DISCORDANCE,
        };
    }
    let mut keeper = Gatekeeper::new(config);
    if how.run_config.is_some_and(|c| c.carry_over) {
        keeper = keeper.with_carry_over();
    }
    if how.run_config.is_some() {
        let fdr = ELond::new(
            FDR_ALPHA,
            GammaSequence::Horizon {
                proposals: order.len().max(1) as u64,
            },
        )
        .map_err(|e| e.to_string())?;
        keeper = keeper.with_fdr(fdr);
    }
    let mut accepted: Vec<&Edit> = Vec::new();
    let mut tally = Tally::default();
    for (step, &edit) in order.iter().enumerate() {
        let mut with_edit = accepted.clone();
        with_edit.push(edit);
        let label = format!("c{step}");
        let version = store.current_version().map_err(|e| e.to_string())?;
        let baseline = Workspace::new(version).with_skill(SKILL_FILE, bench.skill_with(&accepted));
        let text = bench.skill_with(&with_edit);
        let candidate = Candidate {
            label: label.clone(),
            workspace: Workspace::new(label).with_skill(SKILL_FILE, text.clone()),
            provenance: BTreeSet::new(),
        };
        let writes = [(SKILL_FILE.to_owned(), text)].into();
        let record = keeper
            .judge(ctx, &store, &baseline, &candidate, &writes, gate_qs)
            .await
            .map_err(|e| e.to_string())?;
        let kept = match record.probation {
            Some(_) if !pool.is_empty() => {
                let before = bench.skill_with(&accepted);
                let after = bench.skill_with(&with_edit);
                let verdict = probation(ctx, &keeper, &store, record, before, after, pool).await?;
                if verdict == ProbationVerdict::Rollback {
                    tally.rolled_back += 1.0;
                }
                verdict != ProbationVerdict::Rollback
            }
            _ => record.accepted,
        };
        if kept {
            accepted.push(edit);
            tally.count(edit);
        }
    }
    Ok(tally)
}

/// Judges a provisional accept at once on the held-back pool; a rollback restores the
/// version it replaced.
async fn probation(
    ctx: ValidationContext<'_>,
    keeper: &Gatekeeper,
    store: &MemoryVersionedStore,
    record: GateRecord,
    before: String,
    after: String,
    pool: &[GeneratedQuestion],
) -> Result<ProbationVerdict, String> {
    let Some(mut watch) = record.probation else {
        return Ok(ProbationVerdict::Unverified);
    };
    let previous = Workspace::new(watch.previous_version.clone()).with_skill(SKILL_FILE, before);
    let watched = Workspace::new(watch.version.clone()).with_skill(SKILL_FILE, after);
    let verdict = watch
        .judge(
            ctx,
            keeper.config(),
            &previous,
            &watched,
            &BTreeSet::new(),
            pool,
        )
        .await
        .map_err(|e| e.to_string())?;
    if verdict == ProbationVerdict::Rollback {
        let gate = Gate::new(*keeper.params()).map_err(|e| e.to_string())?;
        watch.settle(store, &gate).map_err(|e| e.to_string())?;
    }
    Ok(verdict)
}

async fn greedy(
    agent: &Agent<'_>,
    bench: &Bench,
    rep: u64,
    order: &[&Edit],
    gate: &[SuiteQuestion],
    batch: usize,
    ties: bool,
) -> Tally {
    let questions: Vec<GeneratedQuestion> = gate.iter().map(generated).collect();
    // Answers of the current skill already known: each is asked once per skill.
    let mut known: BTreeMap<(String, String), bool> = BTreeMap::new();
    let mut accepted: Vec<&Edit> = Vec::new();
    let mut tally = Tally::default();
    for (step, &edit) in order.iter().enumerate() {
        let base = bench.skill_with(&accepted);
        let mut with_edit = accepted.clone();
        with_edit.push(edit);
        let cand = bench.skill_with(&with_edit);
        let drawn: Vec<GeneratedQuestion> =
            fixed_question_order(&questions, rep ^ ((step as u64 + 1) << 32))
                .into_iter()
                .take(batch)
                .collect();
        let missing: Vec<GeneratedQuestion> = drawn
            .iter()
            .filter(|q| !known.contains_key(&(base.clone(), q.question_id.clone())))
            .cloned()
            .collect();
        let base_ws = Workspace::new("base").with_skill(SKILL_FILE, base.clone());
        for o in agent
            .run("greedy_base", &base_ws, &missing)
            .await
            .unwrap_or_default()
        {
            known.insert(
                (base.clone(), o.prediction.question_id.clone()),
                o.prediction.correct,
            );
        }
        let base_right = drawn
            .iter()
            .filter(|q| {
                known
                    .get(&(base.clone(), q.question_id.clone()))
                    .copied()
                    .unwrap_or(false)
            })
            .count();
        let cand_ws = Workspace::new("cand").with_skill(SKILL_FILE, cand);
        let cand_right = agent
            .run("greedy_cand", &cand_ws, &drawn)
            .await
            .unwrap_or_default()
            .iter()
            .filter(|o| o.prediction.correct)
            .count();
        if cand_right > base_right || (ties && cand_right == base_right) {
            accepted.push(edit);
            tally.count(edit);
        }
    }
    tally
}

/// Each edit alone against the starting skill on `questions`: the accuracy difference, for
/// checking that the kinds hold on this model.
pub(crate) async fn edit_effects(
    shared: &Shared,
    bench: &Bench,
    rep: u64,
    questions: &[SuiteQuestion],
) -> Vec<(String, Kind, f64)> {
    let base = shared.accuracy(rep, &bench.skill, questions).await;
    let mut out = Vec::new();
    for edit in &bench.edits {
        let with = shared
            .accuracy(rep, &bench.skill_with(&[edit]), questions)
            .await;
        out.push((edit.id.clone(), edit.kind, with - base));
    }
    out
}

/// Mean and standard error of the mean (NaN with fewer than two values).
pub(crate) fn mean_se(values: &[f64]) -> (f64, f64) {
    let n = values.len() as f64;
    if values.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    let mean = values.iter().sum::<f64>() / n;
    if values.len() < 2 {
        return (mean, f64::NAN);
    }
    let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, (var / n).sqrt())
}

/// One row of the results: a rule and its replications.
pub(crate) struct Row {
    /// The rule.
    pub(crate) rule: Rule,
    /// One tally per replication.
    pub(crate) tallies: Vec<Tally>,
}

impl Row {
    fn field(&self, f: impl Fn(&Tally) -> f64) -> (f64, f64) {
        mean_se(&self.tallies.iter().map(f).collect::<Vec<_>>())
    }

    /// Mean and standard error of the false commits (neutral and harmful) per 100 candidates.
    pub(crate) fn false_per_100(&self, candidates: usize) -> (f64, f64) {
        let per = 100.0 / candidates.max(1) as f64;
        self.field(|t| (t.neutral + t.harmful) * per)
    }

    /// Mean and standard error of the rollouts.
    pub(crate) fn rollouts(&self) -> (f64, f64) {
        self.field(|t| t.rollouts)
    }
}

fn pm(value: (f64, f64), decimals: usize) -> String {
    if value.1.is_nan() {
        format!("{:.*}", decimals, value.0)
    } else {
        format!("{:.*} ± {:.*}", decimals, value.0, decimals, value.1)
    }
}

/// The results table (Markdown).
pub(crate) fn table(rows: &[Row], candidates: usize) -> String {
    let per = 100.0 / candidates.max(1) as f64;
    let mut out = String::from(
        "| rule | helpful commits / 100 | neutral / 100 | harmful / 100 | held-out before | held-out after | rollouts | model seconds |\n|---|---|---|---|---|---|---|---|\n",
    );
    for row in rows {
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} |\n",
            row.rule.label(),
            pm(row.field(|t| t.helpful * per), 1),
            pm(row.field(|t| t.neutral * per), 1),
            pm(row.field(|t| t.harmful * per), 1),
            pm(row.field(|t| t.before), 3),
            pm(row.field(|t| t.after), 3),
            pm(row.field(|t| t.rollouts), 0),
            pm(row.field(|t| t.seconds), 0),
        ));
    }
    out
}

fn xml_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// A mean and its standard error.
type MeanSe = (f64, f64);

/// Space between a point and its label, in pixels.
const LABEL_GAP: f64 = 6.0;
/// Height of a label's line, in pixels.
const LABEL_LINE: f64 = 14.0;
/// Width of a label's character, in pixels (an estimate for 12 px sans-serif).
const LABEL_CHAR: f64 = 7.0;

/// The baseline of each point's label: just above and right of its point, lifted a line at a
/// time until it overlaps no label placed before it (points taken left to right).
fn label_baselines(centres: &[(f64, f64)], widths: &[usize]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..centres.len()).collect();
    order.sort_by(|&a, &b| centres[a].0.total_cmp(&centres[b].0));
    let mut placed: Vec<(f64, f64, f64)> = Vec::new(); // (left, right, baseline)
    let mut baselines = vec![0.0; centres.len()];
    for i in order {
        let (cx, cy) = centres[i];
        let (left, right) = (
            cx + LABEL_GAP,
            cx + LABEL_GAP + LABEL_CHAR * widths[i] as f64,
        );
        let mut base = cy - LABEL_GAP;
        while placed
            .iter()
            .any(|&(l, r, b)| l < right && left < r && (b - base).abs() < LABEL_LINE)
        {
            base -= LABEL_LINE;
        }
        placed.push((left, right, base));
        baselines[i] = base;
    }
    baselines
}

/// The plot: false commits per 100 candidates against rollouts, one point per rule with
/// its standard errors as bars (plain SVG).
pub(crate) fn svg(rows: &[Row], candidates: usize, title: &str) -> String {
    let (w, h, left, right, top, bottom) = (720.0, 440.0, 70.0, 170.0, 40.0, 60.0);
    let points: Vec<(String, MeanSe, MeanSe)> = rows
        .iter()
        .map(|r| (r.rule.short(), r.rollouts(), r.false_per_100(candidates)))
        .collect();
    let finite = |v: f64| if v.is_finite() { v } else { 0.0 };
    let x_max = points
        .iter()
        .map(|(_, x, _)| finite(x.0) + finite(x.1))
        .fold(1.0_f64, f64::max)
        * 1.1;
    let y_max = points
        .iter()
        .map(|(_, _, y)| finite(y.0) + finite(y.1))
        .fold(10.0_f64, f64::max)
        * 1.1;
    let px = |x: f64| left + (w - left - right) * x / x_max;
    let py = |y: f64| h - bottom - (h - top - bottom) * y / y_max;
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n<text x=\"{left}\" y=\"22\" font-size=\"14\">{}</text>\n",
        xml_escape(title)
    );
    let (x0, y0, x1, y1) = (px(0.0), py(0.0), px(x_max), py(y_max));
    out.push_str(&format!(
        "<line x1=\"{x0:.1}\" y1=\"{y0:.1}\" x2=\"{x1:.1}\" y2=\"{y0:.1}\" stroke=\"black\"/>\n<line x1=\"{x0:.1}\" y1=\"{y0:.1}\" x2=\"{x0:.1}\" y2=\"{y1:.1}\" stroke=\"black\"/>\n"
    ));
    for i in 0..=5 {
        let xv = x_max * f64::from(i) / 5.0;
        let yv = y_max * f64::from(i) / 5.0;
        out.push_str(&format!(
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{xv:.0}</text>\n<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{yv:.0}</text>\n",
            px(xv),
            y0 + 18.0,
            x0 - 6.0,
            py(yv) + 4.0
        ));
    }
    out.push_str(&format!(
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">agent rollouts per run</text>\n<text x=\"18\" y=\"{:.1}\" transform=\"rotate(-90 18 {:.1})\" text-anchor=\"middle\">false commits per 100 candidates</text>\n",
        (x0 + x1) / 2.0,
        h - 18.0,
        (y0 + y1) / 2.0,
        (y0 + y1) / 2.0
    ));
    let centres: Vec<(f64, f64)> = points
        .iter()
        .map(|(_, x, y)| (px(finite(x.0)), py(finite(y.0))))
        .collect();
    let widths: Vec<usize> = points.iter().map(|(l, _, _)| l.chars().count()).collect();
    let baselines = label_baselines(&centres, &widths);
    for (((label, x, y), &(cx, cy)), &base) in points.iter().zip(&centres).zip(&baselines) {
        let (dx, dy) = (finite(x.1), finite(y.1));
        out.push_str(&format!(
            "<line x1=\"{:.1}\" y1=\"{cy:.1}\" x2=\"{:.1}\" y2=\"{cy:.1}\" stroke=\"grey\"/>\n<line x1=\"{cx:.1}\" y1=\"{:.1}\" x2=\"{cx:.1}\" y2=\"{:.1}\" stroke=\"grey\"/>\n<circle cx=\"{cx:.1}\" cy=\"{cy:.1}\" r=\"4\" fill=\"steelblue\"/>\n",
            px(finite(x.0) - dx),
            px(finite(x.0) + dx),
            py(finite(y.0) - dy),
            py(finite(y.0) + dy),
        ));
        if base < cy - LABEL_GAP - 1.0 {
            // A label lifted above its neighbours' gets a leader line back to its point.
            out.push_str(&format!(
                "<line x1=\"{cx:.1}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" stroke=\"lightgrey\"/>\n",
                cy - 4.0,
                cx + LABEL_GAP,
                base + 2.0
            ));
        }
        out.push_str(&format!(
            "<text x=\"{:.1}\" y=\"{base:.1}\">{}</text>\n",
            cx + LABEL_GAP,
            xml_escape(label)
        ));
    }
    out.push_str("</svg>\n");
    out
}
