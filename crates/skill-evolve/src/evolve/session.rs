//! After the rounds: the candidate gated against the agent (and the slow update's result on
//! top of it), or, ungated, the slow update alone; what is offered to the user. A slow
//! update that breaks the project's house rules is dropped before it is gated or offered.

use std::collections::BTreeSet;
use std::sync::Arc;

use evolution_harness::{Budget, Phase, slow_update};
use evolution_project::evolve::gating::GateSession;
use evolution_project::evolve::slow::{SlowReport, gated_pairs, ungated_pairs};
use evolution_project::evolve::trajectories::Loaded;
use evolution_project::run::config::GatingConfig;
use evolution_project::run::dir::RunDir;
use evolution_types::LlmProvider;

use evolution_evolve::reflect::Round;
use serde::Serialize;

use super::{Gating, Out, Summary};

/// What the steps after the rounds share.
pub(super) struct Session<'a> {
    pub(super) original: &'a str,
    pub(super) candidate: &'a str,
    pub(super) loaded: &'a Loaded,
    pub(super) llm: &'a dyn LlmProvider,
    /// The meter of the session, told each phase as it begins.
    pub(super) budget: &'a Budget,
    pub(super) slow_update: bool,
    /// The slow update's prompt (built in, or `--prompts DIR`'s override).
    pub(super) slow_update_template: &'a str,
    /// The prompts of the gate's rubric judge (built in, or `--prompts DIR`'s overrides).
    pub(super) judge_prompts: &'a evolution_diagnose::DiagnosePrompts,
    /// The project's house rules: the slow update's prompt carries them, and its result
    /// is held to their checks.
    pub(super) preferences: &'a evolution_evolve::preferences::Preferences,
}

impl Session<'_> {
    /// Gates the candidate and, when asked and it passed, the slow update's
    /// result on top of it; returns the document to offer, `None` when the
    /// candidate failed the gate.
    pub(super) async fn gated(
        &self,
        gating: &Gating,
        run_dir: &RunDir,
        budget: Arc<evolution_harness::Budget>,
        candidates: u64,
        summary: &mut Summary,
    ) -> anyhow::Result<Option<String>> {
        let provenance: BTreeSet<String> = self
            .loaded
            .questions
            .iter()
            .map(|(id, _)| id.clone())
            .collect();
        let progress = crate::run::progress::Progress::new();
        let config = &gating.config;
        let mut gate = GateSession::open(
            config,
            self.llm,
            self.judge_prompts,
            run_dir,
            gating.target.clone(),
            provenance,
            budget,
            candidates,
            &progress,
        )?;
        let result = self.gate_all(&mut gate, config, summary).await;
        gate.close().await;
        progress.finish();
        result
    }

    async fn gate_all(
        &self,
        gate: &mut GateSession<'_>,
        config: &GatingConfig,
        summary: &mut Summary,
    ) -> anyhow::Result<Option<String>> {
        self.budget.enter_phase(Phase::Gate);
        let first = gate
            .gate("evolve", self.candidate, &BTreeSet::new())
            .await?;
        let passed = first.passed;
        summary.gate.verdicts.push(first);
        if !passed {
            if self.slow_update {
                summary.slow_update = Some(SlowReport::skipped(
                    "the candidate did not pass the gate: there is no change to consolidate",
                ));
            }
            return Ok(None);
        }
        let mut offered = gate.current_text()?;
        if self.slow_update {
            self.budget.enter_phase(Phase::Rollout);
            let (questions, [before, after]) =
                gate.training_answers(self.original, &offered).await?;
            let pairs = gated_pairs(&questions, &before, &after);
            self.budget.enter_phase(Phase::SlowUpdate);
            let update = slow_update(
                self.llm,
                self.slow_update_template,
                self.preferences,
                self.original,
                &offered,
                &pairs,
            )
            .await?;
            summary.llm_calls = summary.llm_calls.saturating_add(1);
            summary.slow_update = Some(SlowReport::of(
                &update,
                format!(
                    "the agent's answers on {} training question(s) of {} under the original \
                     and under the candidate",
                    pairs.len(),
                    config.questions_file.display()
                ),
            ));
            if update.updated && update.content != offered && self.keeps_rules(&update, summary) {
                let train: BTreeSet<String> =
                    questions.iter().map(|q| q.question_id.clone()).collect();
                self.budget.enter_phase(Phase::Gate);
                let verdict = gate.gate("slow-update", &update.content, &train).await?;
                if verdict.passed {
                    offered = update.content;
                }
                summary.gate.verdicts.push(verdict);
            }
        }
        Ok(Some(offered))
    }

    /// The candidate, with the slow update's guidance when asked; never
    /// tested against an agent.
    pub(super) async fn ungated(&self, summary: &mut Summary) -> anyhow::Result<String> {
        if !self.slow_update {
            return Ok(self.candidate.to_owned());
        }
        let pairs = ungated_pairs(&self.loaded.failures, &summary.rounds);
        self.budget.enter_phase(Phase::SlowUpdate);
        let update = slow_update(
            self.llm,
            self.slow_update_template,
            self.preferences,
            self.original,
            self.candidate,
            &pairs,
        )
        .await?;
        summary.llm_calls = summary.llm_calls.saturating_add(1);
        summary.slow_update = Some(SlowReport::of(
            &update,
            "ungated: the trajectories and the meta-reflection's verdicts; no agent was run"
                .to_owned(),
        ));
        if !self.keeps_rules(&update, summary) {
            return Ok(self.candidate.to_owned());
        }
        Ok(update.content)
    }

    /// Whether the slow update's result keeps the house rules (judged against the original,
    /// what the session would offer instead); when it does not, it is dropped: the summary
    /// says why and its slow-update report that no guidance was written.
    fn keeps_rules(&self, update: &evolution_harness::SlowUpdate, summary: &mut Summary) -> bool {
        if !update.updated {
            return true;
        }
        let reasons: Vec<String> = self
            .preferences
            .checks
            .evaluate(self.original, &update.content)
            .iter()
            .map(ToString::to_string)
            .collect();
        if reasons.is_empty() {
            return true;
        }
        if let Some(report) = summary.slow_update.as_mut() {
            report.updated = false;
            report.note = Some(format!(
                "dropped: the guidance breaks the project's house rules ({})",
                reasons.join("; ")
            ));
        }
        summary.dropped.push(Dropped {
            candidate: "slow-update".to_owned(),
            reasons,
        });
        false
    }
}

/// A candidate dropped for breaking the project's house rules.
#[derive(Debug, Serialize)]
pub(super) struct Dropped {
    /// Which: `round 2`, `slow-update`.
    candidate: String,
    /// Every check it broke, in words.
    reasons: Vec<String>,
}

impl Dropped {
    /// The rounds whose candidate broke the house rules.
    pub(super) fn of_rounds(rounds: &[Round]) -> Vec<Dropped> {
        rounds
            .iter()
            .filter(|r| !r.breaches.is_empty())
            .map(|r| Dropped {
                candidate: format!("round {}", r.round),
                reasons: r.breaches.iter().map(ToString::to_string).collect(),
            })
            .collect()
    }

    /// A line per check a dropped candidate broke: `dropped (round 2): breaks preference
    /// 'max_lines = 120': 134 lines`.
    pub(super) fn say(out: Out, dropped: &[Dropped]) {
        for d in dropped {
            for reason in &d.reasons {
                out.say(&format!("dropped ({}): {reason}\n", d.candidate));
            }
        }
    }
}
