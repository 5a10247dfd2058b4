//! The adaptive proposer: each candidate of a run may refine an earlier rejected one, and
//! which one it refines depends on what it was told about the rejected candidates.
//!
//! Every candidate of a run is tested on the same gate questions. A proposer told how close
//! each rejected candidate came (the W, L and E the blacklist used to carry) and refining the
//! closest climbs the noise of those questions: its refinement keeps most of its parent's
//! luck on them. A proposer told only "rejected by the gate" (what the blacklist now says,
//! rendered by the real prompt path, `GateRecord::rejected_edits` then
//! `format_rejected_edits`) has nothing to rank by and refines the latest rejected edit.
//!
//! A refinement of rule `r` is a new rule with `r`'s win probability that behaves like `r`
//! on a share [`Refine::keep`] of questions (gate or not) and is drawn afresh on the others,
//! so on fresh questions it is exactly as good as `r`: a refinement of a neutral rule is
//! neutral, however lucky its parent was on the gate questions.
//!
//! Two tables: (1) every idea neutral, the run's default gate (`seed`, the tie-aware
//! futility exit at 0.05, a look every 5 questions, carry-over, e-LOND at 0.05 over the run),
//! the run-wide false-accept rate: the share of runs with at least one accept, which is the
//! false-discovery rate when every candidate is null; (2) the arena's proposals (20 helpful,
//! 20 harmful, 20 neutral) with the shipped pooled gate, half the candidates refinements.

use std::collections::BTreeSet;
use std::sync::RwLock;
use std::sync::atomic::{AtomicU64, Ordering};

use evolution_evolve::format::format_rejected_edits;
use evolution_gate::GateParams;
use evolution_harness::{
    AgentReply, Budget, Calibration, Candidate, ELond, GammaSequence, GateRecord, Gatekeeper,
    InProcessRunner, NoEvents, ValidationConfig, ValidationContext, VersionedStore, Workspace,
};
use evolution_testkit::{MemoryRunLog, MemoryVersionedStore};
use evolution_types::{Edit, EvolutionRecord, GeneratedQuestion, TargetType};

use crate::gated::{question, rules_of, text_of};
use crate::world::{TIE_RATE, World, uniform};

/// What the proposer is told about the rejected candidates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Told {
    /// Fresh ideas only, never a refinement: the non-adaptive reference.
    Nothing,
    /// The blacklist as it was: each rejected edit with the gate's `W`, `L`, `E`, `δ̂`.
    GateCounts,
    /// The blacklist as the prompts now carry it.
    Blind,
}

/// How refinements are made.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Refine {
    /// Share of questions on which a refinement behaves like its parent.
    pub(crate) keep: f64,
}

/// One rule of an adaptive run: its win probability and where its effects come from.
#[derive(Debug, Clone, Copy)]
struct Rule {
    p: f64,
    /// For a refinement, the rule it refines.
    parent: Option<usize>,
    /// For a fresh idea of the arena's world, its rule there (same effects on every question).
    idea: Option<usize>,
}

/// The rules of one adaptive run, growing as the proposer refines; shared with the agent.
struct Rules {
    world: World,
    seed: u64,
    keep: f64,
    rules: RwLock<Vec<Rule>>,
}

/// Salts of the draws, apart from the ones of `World`.
const FRESH_SALT: u64 = 0x5EED_F00D;
const KEEP_SALT: u64 = 0xC0FF_EE11;

impl Rules {
    fn new(seed: u64, keep: f64) -> Self {
        Rules {
            world: World::new(seed),
            seed,
            keep,
            rules: RwLock::new(Vec::new()),
        }
    }

    /// Adds a rule; returns its id.
    fn push(&self, rule: Rule) -> usize {
        let mut rules = self.rules.write().unwrap_or_else(|e| e.into_inner());
        rules.push(rule);
        rules.len() - 1
    }

    /// A fresh neutral rule of its own.
    fn neutral(&self) -> usize {
        self.push(Rule {
            p: 0.5,
            parent: None,
            idea: None,
        })
    }

    /// The arena world's rule `idea`.
    fn idea(&self, idea: usize) -> usize {
        self.push(Rule {
            p: self.world.p[idea],
            parent: None,
            idea: Some(idea),
        })
    }

    /// A refinement of `parent`.
    fn refinement(&self, parent: usize) -> usize {
        self.push(Rule {
            p: self.p(parent),
            parent: Some(parent),
            idea: None,
        })
    }

    fn p(&self, rule: usize) -> f64 {
        self.rules.read().unwrap_or_else(|e| e.into_inner())[rule].p
    }

    /// Effect of `rule` on question `q`: its parent's where it keeps it, else a fresh
    /// draw with its own win probability (ties at the world's rate); an idea of the world
    /// has the world's effects.
    fn effect(&self, rules: &[Rule], rule: usize, q: u64) -> i32 {
        let (seed, keep) = (self.seed, self.keep);
        let mut at = rule;
        loop {
            let r = rules[at];
            match (r.parent, r.idea) {
                (Some(parent), _) if uniform(seed ^ KEEP_SALT, at as u64 + 1, q) < keep => {
                    at = parent;
                }
                (None, Some(idea)) => return self.world.effect(idea, q),
                _ => {
                    let u = uniform(seed ^ FRESH_SALT, at as u64 + 1, q);
                    return if u < TIE_RATE {
                        0
                    } else if (u - TIE_RATE) / (1.0 - TIE_RATE) < r.p {
                        1
                    } else {
                        -1
                    };
                }
            }
        }
    }

    /// Whether a skill made of `skill` answers question `q` right (base as in `World`).
    fn correct(&self, skill: &[usize], q: u64) -> bool {
        let rules = self.rules.read().unwrap_or_else(|e| e.into_inner());
        let base = i32::from(uniform(self.seed, 0, q) < 0.5);
        let score: i32 = skill.iter().map(|&r| self.effect(&rules, r, q)).sum();
        base + score >= 1
    }

    /// Share of `questions` a skill made of `skill` answers right.
    fn accuracy(&self, skill: &[usize], questions: std::ops::Range<u64>) -> f64 {
        let n = questions.end - questions.start;
        questions.filter(|&q| self.correct(skill, q)).count() as f64 / n as f64
    }
}

/// The blacklist line of rejected rule `rule` as the prompts carried it before they went
/// blind: the gate's decision, `W`, `L` and `E` in the reason, then the evidence.
fn told_with_counts(record: &GateRecord, rule: usize) -> String {
    let content = edit_text(rule);
    match &record.validation {
        Some(v) => format!(
            "- [append] target: \"\" content: {content:?} — gate: {} (W={}, L={}, E={:.3}) \
             (W={} L={} E={:.2} δ̂={:+.3})\n",
            v.verdict.decision,
            v.w,
            v.l,
            v.verdict.e_value,
            v.w,
            v.l,
            v.verdict.e_value,
            v.verdict.delta_hat
        ),
        None => format!("- [append] target: \"\" content: {content:?} — gate: not tested\n"),
    }
}

/// The blacklist line of rejected rule `rule` as the prompts carry it now: the real path.
fn told_blind(record: &GateRecord, rule: usize, source_version: &str) -> String {
    let mut evolution =
        EvolutionRecord::new("s.md", TargetType::Skill, String::new(), source_version);
    evolution.edits = vec![Edit::append(edit_text(rule))];
    format_rejected_edits(&record.rejected_edits(&evolution))
}

/// The text of the edit that adds `rule`.
fn edit_text(rule: usize) -> String {
    format!("rule {rule}")
}

/// The rule a blacklist line is about.
fn rule_of(line: &str) -> Option<usize> {
    let rest = line.split("content: \"rule ").nth(1)?;
    rest.split('"').next()?.parse().ok()
}

/// The first `E=` a blacklist line tells, if any.
fn e_of(line: &str) -> Option<f64> {
    let rest = line.split("E=").nth(1)?;
    let number: String = rest
        .chars()
        .take_while(|c| c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '+' | '-'))
        .collect();
    number.parse().ok()
}

/// The rejected rule the proposer refines after reading `blacklist`: the one told the
/// highest `E` (the latest among equals); when no line tells an `E`, nothing ranks them and
/// it takes the latest.
pub(crate) fn closest(blacklist: &str) -> Option<usize> {
    let mut best: Option<(f64, usize)> = None;
    let mut latest = None;
    for line in blacklist.lines() {
        let Some(rule) = rule_of(line) else {
            continue;
        };
        latest = Some(rule);
        if let Some(e) = e_of(line)
            && best.is_none_or(|(b, _)| e >= b)
        {
            best = Some((e, rule));
        }
    }
    best.map(|(_, rule)| rule).or(latest)
}

/// A run of the adaptive proposer.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Scenario {
    /// Candidates in the run (e-LOND's horizon).
    pub(crate) candidates: usize,
    /// Gate questions every candidate is tested on (the pool it draws from).
    pub(crate) questions: usize,
    /// The gate's parameters.
    pub(crate) params: GateParams,
    /// What the proposer is told.
    pub(crate) told: Told,
    /// How refinements are made.
    pub(crate) refine: Refine,
    /// `None`: every idea is neutral and every candidate after the first refines. `Some`:
    /// fresh ideas come from the arena's world in this replication's order, and every
    /// second candidate refines.
    pub(crate) arena_ideas: bool,
    /// How the gate's accepts are calibrated; carry-over is on with the e-process (as `run`
    /// had it) and off with the pool calibration (`run`'s defaults now).
    pub(crate) calibration: Calibration,
}

/// What one adaptive run did.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Outcome {
    /// Accepted candidates no better than their baseline (`p ≤ 1/2`).
    pub(crate) false_accepts: f64,
    /// Accepted helpful candidates.
    pub(crate) helpful: f64,
    /// Held-out accuracy of the final skill.
    pub(crate) holdout: f64,
    /// Agent rollouts.
    pub(crate) rollouts: f64,
    /// The highest `E` any candidate reached.
    pub(crate) max_e: f64,
}

/// The run's earlier default gate: `seed` with the tie-aware futility exit at 0.05.
pub(crate) fn run_defaults() -> GateParams {
    GateParams {
        futility_risk: Some(0.05),
        ..GateParams::preset("seed").unwrap_or_else(|e| panic!("{e}"))
    }
}

/// The run's default gate under the pool calibration: the directional exit at `λ ≤ −3`.
pub(crate) fn pool_defaults() -> GateParams {
    GateParams {
        lambda_dir: -3.0,
        ..run_defaults()
    }
}

/// The pool calibration as `run` sets it by default.
pub(crate) const POOL: Calibration = Calibration::Pool { discordance: 0.5 };

/// One replication of `scenario`; fresh ideas come from `order` over `world` when the
/// scenario uses the arena's ideas. Also returns the blacklist as the proposer last read it.
pub(crate) async fn adaptive_run(
    seed: u64,
    order: &[usize],
    scenario: Scenario,
) -> (Outcome, String) {
    let rules = Rules::new(seed, scenario.refine.keep);
    let rollouts = AtomicU64::new(0);
    let runner = InProcessRunner::new(|ws: &Workspace, q: &GeneratedQuestion| {
        rollouts.fetch_add(1, Ordering::Relaxed);
        let n = q
            .extra
            .get("n")
            .and_then(serde_json::Value::as_u64)
            .unwrap_or(0);
        let right = rules.correct(&rules_of(ws), n);
        Ok::<_, String>(AgentReply {
            prediction: if right { "right" } else { "wrong" }.into(),
            ..AgentReply::default()
        })
    });
    let gate: Vec<GeneratedQuestion> = (0..scenario.questions as u64).map(question).collect();
    let store = MemoryVersionedStore::new([("s.md".to_owned(), String::new())].into());
    let log = MemoryRunLog::new();
    let budget = Budget::unlimited();
    let ctx = ValidationContext {
        runner: &runner,
        recorder: &log,
        budget: &budget,
        events: &NoEvents,
        resume_from: None,
    };
    let config = ValidationConfig {
        gate_run_prefix: format!("adaptive{seed}_gate_"),
        seed,
        params: scenario.params,
        ladder: vec![crate::LOOK],
        calibration: scenario.calibration,
        ..ValidationConfig::default()
    };
    let fdr = ELond::new(
        crate::FDR_ALPHA,
        GammaSequence::Horizon {
            proposals: scenario.candidates as u64,
        },
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let mut keeper = Gatekeeper::new(config).with_fdr(fdr);
    if scenario.calibration == Calibration::EProcess {
        keeper = keeper.with_carry_over();
    }
    let mut blacklist = String::new();
    let mut ideas = order.iter();
    let mut accepted: Vec<usize> = Vec::new();
    let mut outcome = Outcome::default();
    for step in 0..scenario.candidates {
        let refines = scenario.told != Told::Nothing
            && (!scenario.arena_ideas || step % 2 == 1)
            && !blacklist.is_empty();
        let rule = match closest(&blacklist).filter(|_| refines) {
            Some(parent) => rules.refinement(parent),
            None if scenario.arena_ideas => rules.idea(ideas.next().copied().unwrap_or(0)),
            None => rules.neutral(),
        };
        let mut with_rule = accepted.clone();
        with_rule.push(rule);
        let version = store.current_version().unwrap_or_default();
        let baseline = Workspace::new(version.clone()).with_skill("s.md", text_of(&accepted));
        let label = format!("c{step}");
        let candidate = Candidate {
            label: label.clone(),
            workspace: Workspace::new(label).with_skill("s.md", text_of(&with_rule)),
            provenance: BTreeSet::new(),
        };
        let writes = [("s.md".to_owned(), text_of(&with_rule))].into();
        let record = keeper
            .judge(ctx, &store, &baseline, &candidate, &writes, &gate)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        if let Some(v) = &record.validation {
            outcome.max_e = outcome.max_e.max(v.verdict.e_value);
        }
        if record.accepted {
            accepted.push(rule);
            let p = rules.p(rule);
            if p > 0.5 {
                outcome.helpful += 1.0;
            } else {
                outcome.false_accepts += 1.0;
            }
        } else {
            blacklist.push_str(&match scenario.told {
                Told::GateCounts => told_with_counts(&record, rule),
                Told::Blind | Told::Nothing => told_blind(&record, rule, &version),
            });
        }
    }
    outcome.holdout = rules.accuracy(
        &accepted,
        crate::HOLDOUT_START..crate::HOLDOUT_START + crate::HOLDOUT_QUESTIONS,
    );
    outcome.rollouts = rollouts.load(Ordering::Relaxed) as f64;
    (outcome, blacklist)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_proposer_refines_the_edit_told_closest_and_the_latest_when_told_nothing() {
        let counts = "- [append] target: \"\" content: \"rule 3\" — gate: reject_futility (W=2, L=1, E=1.500)\n\
                      - [append] target: \"\" content: \"rule 7\" — gate: reject_inertia (W=9, L=3, E=41.250)\n\
                      - [append] target: \"\" content: \"rule 8\" — gate: reject_futility (W=0, L=2, E=0.333)\n";
        assert_eq!(closest(counts), Some(7));
        let blind = "- [append] target: \"\" content: \"rule 3\" — rejected by the gate\n\
                     - [append] target: \"\" content: \"rule 7\" — rejected by the gate\n";
        assert_eq!(closest(blind), Some(7));
        assert_eq!(closest(""), None);
        assert_eq!(e_of("x E=1.2e3 y"), Some(1200.0));
    }

    #[test]
    fn a_refinement_keeps_its_parents_effects_on_about_the_kept_share() {
        let rules = Rules::new(3, 0.8);
        let parent = rules.neutral();
        let child = rules.refinement(parent);
        let idea = rules.idea(0);
        let all = rules.rules.read().unwrap().clone();
        let same = (0..20_000)
            .filter(|&q| rules.effect(&all, parent, q) == rules.effect(&all, child, q))
            .count() as f64
            / 20_000.0;
        // Kept on 80 %; on the rest a fresh draw agrees with probability
        // 0.7² + 2 · 0.15² = 0.535.
        let expect = 0.8 + 0.2 * 0.535;
        assert!((same - expect).abs() < 0.01, "{same} vs {expect}");
        // An idea of the world acts as the world's rule.
        let world = World::new(3);
        assert!((0..500).all(|q| rules.effect(&all, idea, q) == world.effect(0, q)));
    }

    #[tokio::test(flavor = "current_thread")]
    async fn told_counts_rank_the_rejected_and_the_blind_blacklist_cannot() {
        let scenario = |told| Scenario {
            candidates: 6,
            questions: 40,
            params: run_defaults(),
            told,
            refine: Refine { keep: 0.8 },
            arena_ideas: false,
            calibration: Calibration::EProcess,
        };
        let (out, counts) = adaptive_run(1, &[], scenario(Told::GateCounts)).await;
        assert!(out.rollouts > 0.0);
        assert!(counts.lines().count() >= 5, "{counts}");
        assert!(counts.lines().all(|l| e_of(l).is_some()), "{counts}");
        // The real path: every rejected candidate's rule, no figure of its gate.
        let (_, blind) = adaptive_run(1, &[], scenario(Told::Blind)).await;
        assert!(blind.lines().count() >= 5, "{blind}");
        for line in blind.lines() {
            assert!(rule_of(line).is_some(), "{line}");
            assert!(line.ends_with("rejected by the gate"), "{line}");
            assert_eq!(e_of(line), None, "{line}");
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn told_counts_the_proposer_climbs_the_gate_questions_and_blind_it_does_not() {
        // 60 neutral candidates on the same 80 gate questions: the highest E a run reaches.
        let mean_max_e = async |told| {
            let scenario = Scenario {
                candidates: 60,
                questions: 80,
                params: run_defaults(),
                told,
                refine: Refine { keep: 0.8 },
                arena_ideas: false,
                calibration: Calibration::EProcess,
            };
            let mut sum = 0.0;
            for seed in 0..20 {
                sum += adaptive_run(seed, &[], scenario).await.0.max_e;
            }
            sum / 20.0
        };
        let told = mean_max_e(Told::GateCounts).await;
        let blind = mean_max_e(Told::Blind).await;
        let fresh = mean_max_e(Told::Nothing).await;
        // The highest E is heavy-tailed: over 20 runs the blind and the fresh proposer
        // differ by chance (16 and 6 here; 1000 runs in docs/arena.md), the told one by far.
        assert!(told > 4.0 * blind.max(fresh), "{told} {blind} {fresh}");
    }
}
