//! Probation: a provisionally accepted version is judged on fresh
//! questions — disjoint from the questions it was written from and from
//! the gate's — until the evidence confirms it or calls for a rollback.

use std::collections::{BTreeMap, BTreeSet};

use evolution_gate::{Gate, ProbationVerdict, scored_pair};
use evolution_types::{GeneratedQuestion, Prediction, StoreError};
use serde::{Deserialize, Serialize};

use evolution_types::VersionedStore;

use crate::events::{Arm, HarnessEvent};
use crate::failures::FailureCount;
use crate::runner::Workspace;
use crate::validate::{
    ValidationConfig, ValidationContext, ValidationError, arm_result, check_split,
    fixed_question_order, run_arm,
};

/// The watch over one provisionally accepted version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Probation {
    /// The version on probation.
    pub version: String,
    /// The version it replaced, restored on rollback.
    pub previous_version: String,
    /// Questions the previous version got wrong and this one right (or only
    /// the previous version failed on), so far.
    pub w: u64,
    /// Questions the previous version got right and this one wrong (or only
    /// this version failed on), so far.
    pub l: u64,
    /// Questions already counted, as (previous counted right, this counted
    /// right), so a question seen again is not counted twice.
    pub seen: BTreeMap<String, (bool, bool)>,
    /// The verdict, once the watch has ended (`None` while it runs).
    #[serde(default)]
    pub verdict: Option<ProbationVerdict>,
}

/// What settling a probation did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProbationOutcome {
    /// The verdict.
    pub verdict: ProbationVerdict,
    /// The version current after settling.
    pub current_version: String,
}

impl Probation {
    /// Starts watching `version`, which replaced `previous_version`.
    pub fn new(version: impl Into<String>, previous_version: impl Into<String>) -> Self {
        Probation {
            version: version.into(),
            previous_version: previous_version.into(),
            w: 0,
            l: 0,
            seen: BTreeMap::new(),
            verdict: None,
        }
    }

    /// Judges the version on probation (`watched`) against the version it
    /// replaced (`previous`) on `questions`, the probation pool.
    ///
    /// Before any rollout no question of the pool may be in `provenance`
    /// (the questions the change was written from): probation evidence must
    /// be fresh, as the gate's is. Then, block by block in the fixed order
    /// of [`fixed_question_order`] with `config`'s seed and ladder, both
    /// versions answer (run ids `<prefix>probation_<watched>_base_<previous>`
    /// and `<prefix>probation_<watched>`, so a resumed run reuses the
    /// answers its run log holds), each question is scored as the gate scores
    /// it ([`evolution_gate::score_pair`]: a failure in one arm only counts
    /// against that arm; a question both failed, or one the agent never
    /// started on, is left out), and [`Gate::probation`] judges the
    /// pairs so far; the watch stops at `confirmed` or `rollback`. A pool
    /// that runs out first leaves it `unverified`. Looking after every
    /// block is allowed: both verdicts compare an e-process with a fixed
    /// threshold. The verdict is kept in [`Probation::verdict`] and emitted
    /// as [`HarnessEvent::ProbationSettled`]; nothing is written to a store
    /// (see [`Probation::settle`]).
    ///
    /// # Errors
    /// [`ValidationError::SplitOverlap`] for a pool question in
    /// `provenance`, [`ValidationError::DuplicateQuestion`], a bad `config`
    /// or gate parameters, and the errors of the rollouts (budget, runner,
    /// run log).
    pub async fn judge(
        &mut self,
        ctx: ValidationContext<'_>,
        config: &ValidationConfig,
        previous: &Workspace,
        watched: &Workspace,
        provenance: &BTreeSet<String>,
        questions: &[GeneratedQuestion],
    ) -> Result<ProbationVerdict, ValidationError> {
        let gate = Gate::new(config.params)?;
        if config.ladder.is_empty() {
            return Err(ValidationError::EmptyLadder);
        }
        if config.ladder.contains(&0) {
            return Err(ValidationError::ZeroBlock);
        }
        let mut ids = BTreeSet::new();
        if let Some(dup) = questions
            .iter()
            .find(|q| !ids.insert(q.question_id.as_str()))
        {
            return Err(ValidationError::DuplicateQuestion(dup.question_id.clone()));
        }
        check_split(ids.iter().copied(), provenance)?;
        let base_id = format!(
            "{}probation_{}_base_{}",
            config.gate_run_prefix, watched.version, previous.version
        );
        let watched_id = format!("{}probation_{}", config.gate_run_prefix, watched.version);
        let order = fixed_question_order(questions, config.seed);
        let mut verdict = self.verdict(&gate);
        let (mut start, mut block) = (0_usize, 0_usize);
        // The previous version's answers: when most fail, the agent is broken (see
        // `validate_candidate`) and the run stops.
        let mut previous_failures = FailureCount::default();
        while start < order.len() && verdict == ProbationVerdict::Unverified {
            let size = config
                .ladder
                .get(block)
                .or(config.ladder.last())
                .copied()
                .unwrap_or(1);
            let end = start.saturating_add(size).min(order.len());
            let items = order.get(start..end).unwrap_or_default();
            let (before, _) = run_arm(ctx, &base_id, previous, items, Arm::Baseline).await?;
            for p in before.values() {
                previous_failures.add(p);
            }
            if previous_failures.stops_a_phase_under_way() {
                return Err(crate::validate::too_many_failures(
                    crate::phase::Phase::Probation,
                    &base_id,
                    previous_failures,
                ));
            }
            let (now, _) = run_arm(ctx, &watched_id, watched, items, Arm::Candidate).await?;
            let pairs: BTreeMap<String, (bool, bool)> = items
                .iter()
                .filter_map(|q| {
                    let b: &Prediction = before.get(&q.question_id)?;
                    let n: &Prediction = now.get(&q.question_id)?;
                    let pair = scored_pair(arm_result(b), arm_result(n))?;
                    Some((q.question_id.clone(), pair))
                })
                .collect();
            self.observe(&pairs);
            verdict = self.verdict(&gate);
            start = end;
            block = block.saturating_add(1);
        }
        self.verdict = Some(verdict);
        ctx.events.emit(&HarnessEvent::ProbationSettled {
            version: self.version.clone(),
            verdict,
            w: self.w,
            l: self.l,
        });
        Ok(verdict)
    }

    /// Adds the pairs of a later run: question id → (previous version
    /// correct, this version correct). Questions already counted are skipped;
    /// returns how many were new.
    pub fn observe(&mut self, observed: &BTreeMap<String, (bool, bool)>) -> usize {
        let mut added = 0_usize;
        for (id, &(before, now)) in observed {
            if self.seen.contains_key(id) {
                continue;
            }
            self.seen.insert(id.clone(), (before, now));
            match (before, now) {
                (false, true) => self.w = self.w.saturating_add(1),
                (true, false) => self.l = self.l.saturating_add(1),
                _ => {}
            }
            added = added.saturating_add(1);
        }
        added
    }

    /// The verdict of `gate` on the evidence so far.
    pub fn verdict(&self, gate: &Gate) -> ProbationVerdict {
        gate.probation(self.w, self.l)
    }

    /// Decides, and on [`ProbationVerdict::Rollback`] makes the previous
    /// version current again through `store` (when the version on probation
    /// is still current; a later accept is never undone behind its back).
    ///
    /// # Errors
    /// The store's error; the probation is unchanged then.
    pub fn settle(
        &self,
        store: &dyn VersionedStore,
        gate: &Gate,
    ) -> Result<ProbationOutcome, StoreError> {
        let verdict = self.verdict(gate);
        let current = store.current_version()?;
        if verdict == ProbationVerdict::Rollback && current == self.version {
            store.rollback(&self.previous_version)?;
            return Ok(ProbationOutcome {
                verdict,
                current_version: self.previous_version.clone(),
            });
        }
        Ok(ProbationOutcome {
            verdict,
            current_version: current,
        })
    }
}
