//! One proposal after another: FDR level → block validation → accept
//! (advance the store, start probation if provisional) or reject (with the
//! evidence the blacklist needs).

use std::collections::BTreeMap;

use evolution_types::{EvolutionRecord, GeneratedQuestion, RejectedEdit};
use serde::{Deserialize, Serialize};

use crate::events::HarnessEvent;
use crate::fdr::{ELond, FdrDecision, TestLevel};
use crate::ledger::{LedgerOutcome, TestLedger};
use crate::probation::Probation;
use crate::runner::Workspace;
use crate::validate::{
    BaselineCache, Candidate, ValidationConfig, ValidationContext, ValidationError,
    ValidationOutcome, params_for_level, validate_candidate,
};
use evolution_types::VersionedStore;

/// What happened to one proposal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GateRecord {
    /// The candidate's label.
    pub candidate: String,
    /// The level e-LOND gave it (`None` without FDR control).
    pub level: Option<TestLevel>,
    /// The validation, or `None` when the FDR level was zero and no rollout was spent.
    pub validation: Option<ValidationOutcome>,
    /// The FDR test of its final e-value.
    pub fdr: Option<FdrDecision>,
    /// Whether it was accepted (confirmed or provisionally).
    pub accepted: bool,
    /// The store version it became.
    pub new_version: Option<String>,
    /// The watch started for a provisional accept.
    pub probation: Option<Probation>,
    /// The level the ledger kept beyond the run gave it (its `index` counted over the
    /// ledger), when one was used: the candidate needed this threshold too.
    #[serde(default)]
    pub ledger: Option<TestLevel>,
}

impl GateRecord {
    /// The blacklist entries for a rejected candidate: each edit of `record`
    /// with the gate's W, L, E and δ̂. Empty for an accepted candidate.
    pub fn rejected_edits(&self, record: &EvolutionRecord) -> Vec<RejectedEdit> {
        if self.accepted {
            return Vec::new();
        }
        let reason = match &self.validation {
            Some(v) => format!(
                "gate: {} (W={}, L={}, E={:.3})",
                v.verdict.decision, v.w, v.l, v.verdict.e_value
            ),
            None => "gate: not tested (the run's error budget is spent)".to_owned(),
        };
        record
            .edits
            .iter()
            .map(|edit| RejectedEdit {
                target_file: record.target_file.clone(),
                edit: edit.clone(),
                reason: reason.clone(),
                source_version: record.source_version.clone(),
                gate_w: self.validation.as_ref().map(|v| v.w),
                gate_l: self.validation.as_ref().map(|v| v.l),
                gate_e: self.validation.as_ref().map(|v| v.verdict.e_value),
                gate_delta_hat: self.validation.as_ref().map(|v| v.verdict.delta_hat),
            })
            .collect()
    }
}

/// Gates a run's proposals in order, with the baseline cache and (optionally)
/// e-LOND error control carried from one to the next. Serializable, so a
/// run can save it and resume.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Gatekeeper {
    config: ValidationConfig,
    fdr: Option<ELond>,
    cache: BaselineCache,
}

impl Gatekeeper {
    /// Gates each proposal on its own at `config.params`.
    pub fn new(config: ValidationConfig) -> Self {
        Gatekeeper {
            config,
            fdr: None,
            cache: BaselineCache::new(),
        }
    }

    /// Controls the false discovery rate over the proposals with `fdr`: each
    /// proposal's `e_confirm` and `e_provisional` become at least its e-LOND
    /// threshold, so every accept, provisional ones included, is a discovery.
    pub fn with_fdr(mut self, fdr: ELond) -> Self {
        self.fdr = Some(fdr);
        self
    }

    /// The e-LOND state, when enabled.
    pub fn fdr(&self) -> Option<&ELond> {
        self.fdr.as_ref()
    }

    /// The validation settings (probation uses their prefix, order and ladder).
    pub fn config(&self) -> &ValidationConfig {
        &self.config
    }

    /// The gate parameters before any FDR adjustment (probation uses them).
    pub fn params(&self) -> &evolution_gate::GateParams {
        &self.config.params
    }

    /// The baseline cache.
    pub fn cache(&self) -> &BaselineCache {
        &self.cache
    }

    /// Gates `candidate` against `baseline`, which must be the store's
    /// current version; on accept writes `writes` as a new store version:
    /// [`Gatekeeper::decide`], then [`Gatekeeper::commit`].
    ///
    /// Idempotent across a crash: when the store's current version was
    /// written by accepting this same candidate label (its record lost), the
    /// candidate is validated again against that version's parent (from the
    /// run log, no rollouts when resuming); an accept keeps the version, not
    /// written twice, and a reject rolls the store back to the parent, so no
    /// version stays current without a recorded accept.
    ///
    /// A confirmed accept needs `E ≥ max(e_confirm, 1/α_t)`; a provisional
    /// accept (at exhaustion) needs `E ≥ max(e_provisional, 1/α_t)` and is put
    /// on [`Probation`]. Every
    /// proposal's final e-value is fed to e-LOND, whatever the decision.
    ///
    /// A caller that must survive a kill between the decision and the store
    /// write (the loop) calls the two halves itself and saves the decision
    /// in between.
    ///
    /// # Errors
    /// [`ValidationError::StaleBaseline`] when `baseline` is not current,
    /// every validation error, and the store's errors.
    pub async fn judge(
        &mut self,
        ctx: ValidationContext<'_>,
        store: &dyn VersionedStore,
        baseline: &Workspace,
        candidate: &Candidate,
        writes: &BTreeMap<String, String>,
        questions: &[GeneratedQuestion],
    ) -> Result<GateRecord, ValidationError> {
        self.judge_with(ctx, None, store, baseline, candidate, writes, questions)
            .await
    }

    /// [`Gatekeeper::judge`], the candidate also tested by `ledger` (see
    /// [`Gatekeeper::decide_with`]) for the documents it writes.
    ///
    /// # Errors
    /// As [`Gatekeeper::judge`], and the ledger's errors.
    #[expect(
        clippy::too_many_arguments,
        reason = "judge's arguments and the ledger, each distinct"
    )]
    pub async fn judge_with(
        &mut self,
        ctx: ValidationContext<'_>,
        ledger: Option<&dyn TestLedger>,
        store: &dyn VersionedStore,
        baseline: &Workspace,
        candidate: &Candidate,
        writes: &BTreeMap<String, String>,
        questions: &[GeneratedQuestion],
    ) -> Result<GateRecord, ValidationError> {
        let written: Vec<String> = writes.keys().cloned().collect();
        let current = store.current_version()?;
        if let Some(parent) = accepted_earlier(store, &current, &candidate.label)? {
            // A previous attempt accepted this candidate and wrote the store,
            // but its record was lost (the run was killed before saving it).
            // Validate again against the parent — the run log answers every
            // question — and keep the version already written, or undo it.
            let mut parent_ws = baseline.clone();
            parent_ws.version.clone_from(&parent);
            for (name, text) in store.documents(&parent)? {
                if baseline.prompts.contains_key(&name) {
                    parent_ws.prompts.insert(name, text);
                } else {
                    parent_ws.skills.insert(name, text);
                }
            }
            let record = self
                .decide_with(ctx, ledger, &written, &parent_ws, candidate, questions)
                .await?;
            return Self::commit(ctx, store, &parent, record, writes);
        }
        if current != baseline.version {
            return Err(ValidationError::StaleBaseline {
                baseline: baseline.version.clone(),
                current,
            });
        }
        let record = self
            .decide_with(ctx, ledger, &written, baseline, candidate, questions)
            .await?;
        Self::commit(ctx, store, &baseline.version, record, writes)
    }

    /// Validates `candidate` against `baseline` at the level e-LOND gives
    /// it and feeds its final e-value to e-LOND: the gate's decision, with
    /// nothing written to the store yet (`new_version` and `probation` are
    /// set by [`Gatekeeper::commit`]). This gatekeeper's state (e-LOND, baseline cache)
    /// then holds the decision: save it together with the returned record,
    /// so that a resumed run neither loses nor repeats the e-LOND test.
    ///
    /// # Errors
    /// Every validation error.
    pub async fn decide(
        &mut self,
        ctx: ValidationContext<'_>,
        baseline: &Workspace,
        candidate: &Candidate,
        questions: &[GeneratedQuestion],
    ) -> Result<GateRecord, ValidationError> {
        self.decide_with(ctx, None, &[], baseline, candidate, questions)
            .await
    }

    /// [`Gatekeeper::decide`], the candidate (writing the documents `written`) also
    /// tested by `ledger`, a record of tests kept beyond the run
    /// ([`TestLedger`]): before any rollout the ledger gives its level and the
    /// gate questions it must not use; the candidate is gated on the others
    /// and needs the higher of the two thresholds, the run's and the
    /// ledger's, so that the false-discovery-rate bound of each holds; the
    /// outcome is then recorded in the ledger. A candidate the ledger gives
    /// level zero, or that has no gate question left, is not gated (no
    /// rollout) and is recorded as such.
    ///
    /// # Errors
    /// As [`Gatekeeper::decide`], and the ledger's errors.
    pub async fn decide_with(
        &mut self,
        ctx: ValidationContext<'_>,
        ledger: Option<&dyn TestLedger>,
        written: &[String],
        baseline: &Workspace,
        candidate: &Candidate,
        questions: &[GeneratedQuestion],
    ) -> Result<GateRecord, ValidationError> {
        let level = self.fdr.as_ref().map(ELond::next_level);
        let test = match ledger {
            Some(ledger) => ledger.open(&candidate.label, written)?,
            None => None,
        };
        let questions: Vec<GeneratedQuestion> = match &test {
            Some(test) => questions
                .iter()
                .filter(|q| !test.excluded.contains(&q.question_id))
                .cloned()
                .collect(),
            None => questions.to_vec(),
        };
        // The stricter of the run's level and the ledger's decides the thresholds.
        let strictest = [level, test.as_ref().map(|t| t.level)]
            .into_iter()
            .flatten()
            .max_by(|a, b| a.threshold.total_cmp(&b.threshold));
        let mut config = self.config.clone();
        let params = match &strictest {
            Some(strictest) => params_for_level(&self.config.params, strictest),
            None => Some(self.config.params),
        };
        let ledger_level = test.as_ref().map(|t| t.level);
        // Every gate question already accepted an earlier version: nothing is left to test on.
        let used_up = questions.is_empty() && test.as_ref().is_some_and(|t| !t.excluded.is_empty());
        let Some(params) = params.filter(|_| !used_up) else {
            if let Some(ledger) = ledger.filter(|_| test.is_some()) {
                ledger.close(
                    &candidate.label,
                    written,
                    &LedgerOutcome {
                        e_value: None,
                        decision: None,
                        accepted: false,
                        questions: Vec::new(),
                    },
                )?;
            }
            return Ok(GateRecord {
                candidate: candidate.label.clone(),
                level,
                validation: None,
                fdr: None,
                accepted: false,
                new_version: None,
                probation: None,
                ledger: ledger_level,
            });
        };
        config.params = params;
        let outcome = validate_candidate(
            ctx,
            &config,
            baseline,
            candidate,
            &questions,
            &mut self.cache,
        )
        .await?;
        let decision = outcome.decision();
        let e_value = outcome.verdict.e_value;
        // Under e-LOND an accept is a discovery: the gate accepts and the
        // e-value reaches the level's threshold (the raised parameters make
        // the first imply the second; checking both keeps it so), the
        // ledger's threshold included.
        let ledger_ok = ledger_level.is_none_or(|l| l.alpha_t > 0.0 && e_value >= l.threshold);
        let fdr = match self.fdr.as_mut() {
            Some(fdr) => Some(fdr.record(e_value, decision.is_accept() && ledger_ok)?),
            None => None,
        };
        let accepted = decision.is_accept() && ledger_ok && fdr.is_none_or(|d| d.discovery);
        if let Some(ledger) = ledger.filter(|_| test.is_some()) {
            ledger.close(
                &candidate.label,
                written,
                &LedgerOutcome {
                    e_value: Some(e_value),
                    decision: Some(decision),
                    accepted,
                    questions: outcome.observed.keys().cloned().collect(),
                },
            )?;
        }
        Ok(GateRecord {
            candidate: candidate.label.clone(),
            level,
            accepted,
            validation: Some(outcome),
            fdr,
            new_version: None,
            probation: None,
            ledger: ledger_level,
        })
    }

    /// Carries out a decided gate `record` ([`Gatekeeper::decide`]) on the
    /// store, whose current version must be `baseline_version`, the version
    /// the candidate was gated against.
    ///
    /// An accept writes `writes` as a new version — or keeps the current
    /// version when a previous attempt already wrote it for this candidate
    /// (killed before the record was saved) — sets `new_version`, and starts
    /// the [`Probation`] of a provisional accept. A reject writes nothing;
    /// when the current version was written by accepting this candidate
    /// before a kill, the store is rolled back to `baseline_version`, so that
    /// only an accept leaves a version of the candidate current. Either way
    /// the decision is announced ([`HarnessEvent::CandidateAccepted`] or
    /// [`HarnessEvent::CandidateRejected`]).
    ///
    /// # Errors
    /// [`ValidationError::StaleBaseline`] when the store is at another
    /// version, and the store's errors.
    pub fn commit(
        ctx: ValidationContext<'_>,
        store: &dyn VersionedStore,
        baseline_version: &str,
        mut record: GateRecord,
        writes: &BTreeMap<String, String>,
    ) -> Result<GateRecord, ValidationError> {
        let current = store.current_version()?;
        let written_before = accepted_earlier(store, &current, &record.candidate)?;
        let stale = || ValidationError::StaleBaseline {
            baseline: baseline_version.to_owned(),
            current: current.clone(),
        };
        let Some(outcome) = record.validation.clone() else {
            // Not gated (e-LOND's level was zero): nothing to write.
            return Ok(record);
        };
        let decision = outcome.decision();
        if record.accepted {
            let version = match written_before {
                Some(parent) if parent == baseline_version => current.clone(),
                Some(_) => return Err(stale()),
                None if current == baseline_version => {
                    let message = format!(
                        "{}: {} (W={}, L={}, E={:.3}, e_confirm={:.3})",
                        record.candidate,
                        decision,
                        outcome.w,
                        outcome.l,
                        outcome.verdict.e_value,
                        outcome.e_confirm
                    );
                    let version = store.advance(writes, &message)?;
                    crate::failpoint::failpoint(crate::failpoint::HEAD_MOVED);
                    version
                }
                None => return Err(stale()),
            };
            ctx.events.emit(&HarnessEvent::CandidateAccepted {
                candidate: record.candidate.clone(),
                decision,
                e_value: outcome.verdict.e_value,
                version: Some(version.clone()),
            });
            if decision == evolution_gate::GateDecision::AcceptProvisional {
                record.probation = Some(Probation::new(&version, baseline_version));
            }
            record.new_version = Some(version);
        } else {
            match written_before {
                Some(parent) if parent == baseline_version => store.rollback(&parent)?,
                Some(_) => return Err(stale()),
                None if current != baseline_version => return Err(stale()),
                None => {}
            }
            ctx.events.emit(&HarnessEvent::CandidateRejected {
                candidate: record.candidate.clone(),
                decision,
                e_value: outcome.verdict.e_value,
            });
        }
        Ok(record)
    }
}

/// The prefix of the store message an accept of `label` writes.
pub(crate) fn accept_message_prefix(label: &str) -> String {
    format!("{label}: accept")
}

/// The parent of `current` when `current` was written by accepting `label`.
pub(crate) fn accepted_earlier(
    store: &dyn VersionedStore,
    current: &str,
    label: &str,
) -> Result<Option<String>, evolution_types::StoreError> {
    let prefix = accept_message_prefix(label);
    Ok(store
        .history()?
        .into_iter()
        .find(|h| h.version == current)
        .filter(|h| h.message.starts_with(&prefix))
        .and_then(|h| h.parent))
}
