//! Budgets: caps on LLM calls, tokens, money and agent rollouts, a meter
//! shared by everything that spends, and a pre-flight estimate.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use async_trait::async_trait;
use evolution_types::{ChatMessage, ChatOptions, LlmError, LlmErrorKind, LlmProvider, LlmResponse};
use serde::{Deserialize, Serialize};

use crate::phase::Phase;

/// Price of one model, in money units per million tokens.
///
/// Deserializing refuses unknown keys and amounts that are negative or not
/// finite, so a misspelt or bad price is an error rather than a silent zero.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    /// Per million prompt tokens.
    #[serde(deserialize_with = "prompt_amount")]
    pub prompt_per_million: f64,
    /// Per million completion tokens.
    #[serde(deserialize_with = "completion_amount")]
    pub completion_per_million: f64,
}

/// A price per million prompt tokens read from a file: finite and non-negative.
fn prompt_amount<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<f64, D::Error> {
    let value = f64::deserialize(deserializer)?;
    check_amount("prompt_per_million", value).map_err(serde::de::Error::custom)
}

/// A price per million completion tokens read from a file: finite and non-negative.
fn completion_amount<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<f64, D::Error> {
    let value = f64::deserialize(deserializer)?;
    check_amount("completion_per_million", value).map_err(serde::de::Error::custom)
}

/// A money cap read from a file: absent, or finite and non-negative.
fn max_cost_amount<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<f64>, D::Error> {
    Option::<f64>::deserialize(deserializer)?
        .map(|value| check_amount("max_cost", value))
        .transpose()
        .map_err(serde::de::Error::custom)
}

/// `value` if it is finite and non-negative, else the problem, naming `key`.
fn check_amount(key: &str, value: f64) -> Result<f64, String> {
    if value.is_finite() && value >= 0.0 {
        Ok(value)
    } else {
        Err(format!(
            "{key} = {value} must be a finite, non-negative number"
        ))
    }
}

impl Price {
    /// The cost of a call with these token counts.
    pub fn cost(&self, prompt_tokens: u64, completion_tokens: u64) -> f64 {
        #[expect(
            clippy::cast_precision_loss,
            reason = "token counts stay far below 2^53, where the cast is exact"
        )]
        let (p, c) = (prompt_tokens as f64, completion_tokens as f64);
        (p * self.prompt_per_million + c * self.completion_per_million) / 1_000_000.0
    }
}

/// Caps of a run; `None` means unlimited.
///
/// Deserializing refuses unknown keys (a misspelt cap would otherwise
/// vanish) and a money cap that is negative or not finite.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BudgetLimits {
    /// Most LLM calls.
    pub max_llm_calls: Option<u64>,
    /// Most tokens, prompt and completion together.
    pub max_tokens: Option<u64>,
    /// Most money, in the price table's unit.
    #[serde(deserialize_with = "max_cost_amount")]
    pub max_cost: Option<f64>,
    /// Most agent rollouts (one question answered once by one version).
    pub max_rollouts: Option<u64>,
    /// Model name → price. Every model called must be listed when `max_cost` is set.
    pub prices: BTreeMap<String, Price>,
}

/// What a run has used so far.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Usage {
    /// LLM calls made (failed calls that may have been billed included).
    pub llm_calls: u64,
    /// Prompt tokens billed.
    pub prompt_tokens: u64,
    /// Completion tokens billed.
    pub completion_tokens: u64,
    /// Money spent, per the price table (0 for unpriced models).
    pub cost: f64,
    /// Agent rollouts run.
    pub rollouts: u64,
    /// What the providers themselves said their calls cost, in US dollars (a host such as
    /// Claude Code reports it; 0 when none did). Apart from `cost`, which is the price table's.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub host_cost_usd: f64,
}

/// Whether `value` is 0 (a usage without a reported cost serializes as before).
#[expect(
    clippy::trivially_copy_pass_by_ref,
    reason = "serde's skip_serializing_if passes a reference"
)]
fn is_zero(value: &f64) -> bool {
    *value == 0.0
}

/// Which cap stopped the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, thiserror::Error)]
#[serde(rename_all = "snake_case", tag = "cap")]
#[non_exhaustive]
pub enum BudgetExceeded {
    /// The LLM call cap.
    #[error("LLM call budget exhausted ({used} of {limit} calls)")]
    LlmCalls {
        /// Calls made.
        used: u64,
        /// The cap.
        limit: u64,
    },
    /// The token cap.
    #[error("token budget exhausted ({used} of {limit} tokens)")]
    Tokens {
        /// Tokens used.
        used: u64,
        /// The cap.
        limit: u64,
    },
    /// The money cap.
    #[error("money budget exhausted ({used:.4} of {limit:.4})")]
    Cost {
        /// Money spent.
        used: f64,
        /// The cap.
        limit: f64,
    },
    /// The rollout cap: `requested` more would pass it.
    #[error("rollout budget exhausted ({used} used, {requested} more requested, cap {limit})")]
    Rollouts {
        /// Rollouts run.
        used: u64,
        /// Rollouts asked for.
        requested: u64,
        /// The cap.
        limit: u64,
    },
    /// A model without a price was called while money is capped.
    #[error("model {model:?} has no price but the run has a money cap")]
    UnpricedModel {
        /// The model.
        model: String,
    },
}

/// Why a budget is unusable.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum BudgetError {
    /// A money cap or price that is negative or not finite.
    #[error("{what} = {value} must be a finite, non-negative number")]
    InvalidAmount {
        /// Which amount.
        what: String,
        /// Its value.
        value: f64,
    },
}

#[derive(Debug, Default)]
struct MeterState {
    usage: Usage,
    stopped: Option<BudgetExceeded>,
    /// The phase spending is charged to, once one was entered.
    phase: Option<Phase>,
    /// What each phase used.
    by_phase: BTreeMap<Phase, Usage>,
    /// LLM calls started and not finished: they count against the calls cap, so calls made
    /// at once cannot together pass it.
    in_flight: u64,
}

impl MeterState {
    /// Applies `spend` to the run's usage and to the current phase's.
    fn charge(&mut self, spend: impl Fn(&mut Usage)) {
        spend(&mut self.usage);
        if let Some(phase) = self.phase {
            spend(self.by_phase.entry(phase).or_default());
        }
    }
}

impl Usage {
    /// The sum of `self` and `other`, field by field.
    #[must_use]
    pub fn plus(&self, other: &Usage) -> Usage {
        Usage {
            llm_calls: self.llm_calls.saturating_add(other.llm_calls),
            prompt_tokens: self.prompt_tokens.saturating_add(other.prompt_tokens),
            completion_tokens: self
                .completion_tokens
                .saturating_add(other.completion_tokens),
            cost: self.cost + other.cost,
            rollouts: self.rollouts.saturating_add(other.rollouts),
            host_cost_usd: self.host_cost_usd + other.host_cost_usd,
        }
    }
}

/// The shared meter: checked before spending, fed after. Once a cap is hit
/// it stays stopped, so every part of the run sees the same reason.
#[derive(Debug)]
pub struct Budget {
    limits: BudgetLimits,
    state: Mutex<MeterState>,
}

impl Budget {
    /// A meter enforcing `limits`.
    ///
    /// # Errors
    /// [`BudgetError::InvalidAmount`] for a negative or non-finite cap or price.
    pub fn new(limits: BudgetLimits) -> Result<Self, BudgetError> {
        let mut amounts: Vec<(String, f64)> = limits
            .max_cost
            .map(|c| ("max_cost".to_owned(), c))
            .into_iter()
            .collect();
        for (model, price) in &limits.prices {
            amounts.push((format!("prices.{model}.prompt"), price.prompt_per_million));
            amounts.push((
                format!("prices.{model}.completion"),
                price.completion_per_million,
            ));
        }
        if let Some((what, value)) = amounts
            .into_iter()
            .find(|(_, v)| !v.is_finite() || *v < 0.0)
        {
            return Err(BudgetError::InvalidAmount { what, value });
        }
        Ok(Budget {
            limits,
            state: Mutex::new(MeterState::default()),
        })
    }

    /// A meter without caps.
    pub fn unlimited() -> Self {
        Budget {
            limits: BudgetLimits::default(),
            state: Mutex::new(MeterState::default()),
        }
    }

    /// The caps.
    pub fn limits(&self) -> &BudgetLimits {
        &self.limits
    }

    /// What has been used.
    pub fn usage(&self) -> Usage {
        self.lock().usage.clone()
    }

    /// Adds what earlier legs of a resumed run used (saved in its checkpoint), so the caps
    /// count them and [`Budget::usage`] covers the whole run.
    pub fn add_earlier(&self, usage: &Usage, by_phase: &BTreeMap<Phase, Usage>) {
        let mut state = self.lock();
        state.usage = state.usage.plus(usage);
        for (phase, used) in by_phase {
            let entry = state.by_phase.entry(*phase).or_default();
            *entry = entry.plus(used);
        }
    }

    /// Charges what is metered from now on to `phase` (until the next
    /// phase is entered); [`crate::Phases::start`] calls it.
    pub fn enter_phase(&self, phase: Phase) {
        self.lock().phase = Some(phase);
    }

    /// The phase spending is charged to, once one was entered.
    pub fn phase(&self) -> Option<Phase> {
        self.lock().phase
    }

    /// What each phase used, for the phases that used anything. Spending
    /// before the first phase was entered counts in [`Budget::usage`] only;
    /// once a phase is entered, the phases' usage sums to the run's.
    pub fn usage_by_phase(&self) -> BTreeMap<Phase, Usage> {
        self.lock().by_phase.clone()
    }

    /// The cap that stopped the run, if one did.
    pub fn stopped(&self) -> Option<BudgetExceeded> {
        self.lock().stopped.clone()
    }

    fn lock(&self) -> MutexGuard<'_, MeterState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn stop(state: &mut MeterState, reason: BudgetExceeded) -> BudgetExceeded {
        state.stopped.get_or_insert(reason).clone()
    }

    /// May one more LLM call be made?
    ///
    /// # Errors
    /// The cap already reached.
    pub fn check_llm_call(&self) -> Result<(), BudgetExceeded> {
        let mut state = self.lock();
        Budget::check_call(&self.limits, &mut state)
    }

    /// Reserves one LLM call under the caps: the call counts against the calls cap from now
    /// until the returned slot is dropped (after [`Budget::record_llm_call`] or
    /// [`Budget::record_failed_call`], or without either when the call was not billed).
    fn reserve_llm_call(&self) -> Result<CallSlot<'_>, BudgetExceeded> {
        let mut state = self.lock();
        Budget::check_call(&self.limits, &mut state)?;
        state.in_flight = state.in_flight.saturating_add(1);
        Ok(CallSlot { budget: self })
    }

    /// [`Budget::check_llm_call`] on a locked state.
    fn check_call(limits: &BudgetLimits, state: &mut MeterState) -> Result<(), BudgetExceeded> {
        if let Some(reason) = &state.stopped {
            return Err(reason.clone());
        }
        let usage = &state.usage;
        let tokens = usage.prompt_tokens.saturating_add(usage.completion_tokens);
        let calls = usage.llm_calls.saturating_add(state.in_flight);
        let reason = match (&limits.max_llm_calls, &limits.max_tokens, &limits.max_cost) {
            // Calls still running count as used: they will be recorded when they finish.
            (Some(limit), _, _) if calls >= *limit => Some(BudgetExceeded::LlmCalls {
                used: calls,
                limit: *limit,
            }),
            (_, Some(limit), _) if tokens >= *limit => Some(BudgetExceeded::Tokens {
                used: tokens,
                limit: *limit,
            }),
            (_, _, Some(limit)) if usage.cost >= *limit => Some(BudgetExceeded::Cost {
                used: usage.cost,
                limit: *limit,
            }),
            _ => None,
        };
        match reason {
            Some(reason) => Err(Budget::stop(state, reason)),
            None => Ok(()),
        }
    }

    /// Records a finished LLM call.
    ///
    /// # Errors
    /// [`BudgetExceeded::UnpricedModel`] when money is capped and the model
    /// has no price (the call is still counted, and the run stops).
    pub fn record_llm_call(&self, response: &LlmResponse) -> Result<(), BudgetExceeded> {
        let mut state = self.lock();
        let price = self.limits.prices.get(&response.model);
        let cost = price.map_or(0.0, |p| {
            p.cost(response.prompt_tokens, response.completion_tokens)
        });
        let reported = response
            .cost_usd
            .filter(|c| c.is_finite() && *c >= 0.0)
            .unwrap_or(0.0);
        state.charge(|usage| {
            usage.llm_calls = usage.llm_calls.saturating_add(1);
            usage.prompt_tokens = usage.prompt_tokens.saturating_add(response.prompt_tokens);
            usage.completion_tokens = usage
                .completion_tokens
                .saturating_add(response.completion_tokens);
            usage.cost += cost;
            usage.host_cost_usd += reported;
        });
        match price {
            Some(_) => Ok(()),
            None if self.limits.max_cost.is_some() => {
                let reason = BudgetExceeded::UnpricedModel {
                    model: response.model.clone(),
                };
                Err(Budget::stop(&mut state, reason))
            }
            None => Ok(()),
        }
    }

    /// Records a failed LLM call that may have been billed (no token counts known).
    pub fn record_failed_call(&self) {
        self.lock()
            .charge(|usage| usage.llm_calls = usage.llm_calls.saturating_add(1));
    }

    /// Reserves `n` rollouts before running them: all or none.
    ///
    /// # Errors
    /// [`BudgetExceeded::Rollouts`] when `n` more would pass the cap (nothing is reserved).
    pub fn reserve_rollouts(&self, n: u64) -> Result<(), BudgetExceeded> {
        let mut state = self.lock();
        if let Some(reason) = &state.stopped {
            return Err(reason.clone());
        }
        let used = state.usage.rollouts;
        let after = used.saturating_add(n);
        if let Some(limit) = self.limits.max_rollouts
            && after > limit
        {
            let reason = BudgetExceeded::Rollouts {
                used,
                requested: n,
                limit,
            };
            return Err(Budget::stop(&mut state, reason));
        }
        state.charge(|usage| usage.rollouts = usage.rollouts.saturating_add(n));
        Ok(())
    }
}

/// An [`LlmProvider`] that checks the budget before each call and records it
/// after. A call refused by the budget fails with [`LlmErrorKind::Cancelled`]
/// and the message of the cap; [`Budget::stopped`] tells the loop why.
#[derive(Debug, Clone)]
pub struct MeteredLlm<P> {
    inner: P,
    budget: Arc<Budget>,
}

impl<P: LlmProvider> MeteredLlm<P> {
    /// Wraps `inner`, charging `budget`.
    pub fn new(inner: P, budget: Arc<Budget>) -> Self {
        MeteredLlm { inner, budget }
    }
}

/// An LLM call reserved under the calls cap, released when dropped (the call recorded, or
/// given up, or its future cancelled).
struct CallSlot<'a> {
    budget: &'a Budget,
}

impl Drop for CallSlot<'_> {
    fn drop(&mut self) {
        let mut state = self.budget.lock();
        state.in_flight = state.in_flight.saturating_sub(1);
    }
}

#[async_trait]
impl<P: LlmProvider> LlmProvider for MeteredLlm<P> {
    async fn chat(
        &self,
        messages: &[ChatMessage],
        options: &ChatOptions,
    ) -> Result<LlmResponse, LlmError> {
        let _slot = self
            .budget
            .reserve_llm_call()
            .map_err(|e| LlmError::new(LlmErrorKind::Cancelled, e.to_string()))?;
        match self.inner.chat(messages, options).await {
            Ok(response) => {
                self.budget
                    .record_llm_call(&response)
                    .map_err(|e| LlmError::new(LlmErrorKind::Cancelled, e.to_string()))?;
                Ok(response)
            }
            Err(error) => {
                if error.possibly_billed() {
                    self.budget.record_failed_call();
                }
                Err(error)
            }
        }
    }
}

/// The shape of a planned run, for the pre-flight estimate.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct RunPlan {
    /// Epochs at most.
    pub epochs: u64,
    /// Questions rolled out per epoch to collect evidence for diagnosis.
    pub diagnosis_questions: u64,
    /// Candidates (targets evolved) per epoch at most.
    pub candidates_per_epoch: u64,
    /// Questions a candidate's gate may use at most.
    pub gate_questions: u64,
    /// LLM calls of diagnosis per epoch.
    pub diagnosis_calls_per_epoch: u64,
    /// LLM calls per candidate (evolve attempts, ranking, consolidation).
    pub calls_per_candidate: u64,
    /// LLM calls of the slow update per epoch.
    pub slow_update_calls_per_epoch: u64,
    /// Candidates the slow update adds per epoch at most (one per skill
    /// document); they are gated like the others.
    pub slow_update_candidates_per_epoch: u64,
    /// Questions of the probation pool, on which both versions of a
    /// provisional accept answer.
    pub probation_questions: u64,
    /// Of `diagnosis_questions`, those an LLM judge scores (a rubric check):
    /// one LLM call per answer.
    pub judged_diagnosis_questions: u64,
    /// Of `gate_questions` and `probation_questions` together, those an LLM
    /// judge scores: one LLM call per answer of either version.
    pub judged_gate_questions: u64,
    /// Average prompt tokens per call.
    pub prompt_tokens_per_call: u64,
    /// Average completion tokens per call.
    pub completion_tokens_per_call: u64,
    /// The model, for the price.
    pub model: String,
}

impl RunPlan {
    /// Candidates gated per epoch: the evolved targets and the slow update's.
    fn gated_candidates_per_epoch(&self) -> u64 {
        self.candidates_per_epoch
            .saturating_add(self.slow_update_candidates_per_epoch)
    }

    /// LLM judge calls per epoch: one per answer to a judged question, in diagnosis and
    /// from both versions of every gated candidate.
    fn judge_calls_per_epoch(&self) -> u64 {
        self.gated_candidates_per_epoch()
            .saturating_mul(self.judged_gate_questions)
            .saturating_mul(2)
            .saturating_add(self.judged_diagnosis_questions)
    }
}

/// Worst-case spending of a [`RunPlan`].
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Estimate {
    /// LLM calls.
    pub llm_calls: u64,
    /// Prompt plus completion tokens.
    pub tokens: u64,
    /// Money, when the model has a price.
    pub cost: Option<f64>,
    /// Agent rollouts (both gate arms at full length, no cache hits, every
    /// candidate watched on the whole probation pool).
    pub rollouts: u64,
    /// Caps the estimate passes, readable.
    pub over_limits: Vec<String>,
}

impl Estimate {
    /// The worst case of `plan` against `limits`.
    pub fn of(plan: &RunPlan, limits: &BudgetLimits) -> Estimate {
        let per_epoch_calls = plan
            .diagnosis_calls_per_epoch
            .saturating_add(
                plan.candidates_per_epoch
                    .saturating_mul(plan.calls_per_candidate),
            )
            .saturating_add(plan.slow_update_calls_per_epoch)
            .saturating_add(plan.judge_calls_per_epoch());
        let llm_calls = plan.epochs.saturating_mul(per_epoch_calls);
        let prompt = llm_calls.saturating_mul(plan.prompt_tokens_per_call);
        let completion = llm_calls.saturating_mul(plan.completion_tokens_per_call);
        let tokens = prompt.saturating_add(completion);
        let cost = limits
            .prices
            .get(&plan.model)
            .map(|p| p.cost(prompt, completion));
        let gate = plan
            .gated_candidates_per_epoch()
            .saturating_mul(plan.gate_questions.saturating_add(plan.probation_questions))
            .saturating_mul(2);
        let rollouts = plan
            .epochs
            .saturating_mul(plan.diagnosis_questions.saturating_add(gate));
        let mut over_limits = Vec::new();
        if let Some(limit) = limits.max_llm_calls
            && llm_calls > limit
        {
            over_limits.push(format!("LLM calls {llm_calls} > cap {limit}"));
        }
        if let Some(limit) = limits.max_tokens
            && tokens > limit
        {
            over_limits.push(format!("tokens {tokens} > cap {limit}"));
        }
        match (limits.max_cost, cost) {
            (Some(limit), Some(cost)) if cost > limit => {
                over_limits.push(format!("cost {cost:.4} > cap {limit:.4}"));
            }
            (Some(_), None) => over_limits.push(format!(
                "model {:?} has no price but the run has a money cap",
                plan.model
            )),
            _ => {}
        }
        if let Some(limit) = limits.max_rollouts
            && rollouts > limit
        {
            over_limits.push(format!("rollouts {rollouts} > cap {limit}"));
        }
        Estimate {
            llm_calls,
            tokens,
            cost,
            rollouts,
            over_limits,
        }
    }
}

impl fmt::Display for Estimate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "pre-flight estimate (worst case):")?;
        writeln!(f, "  LLM calls: {}", self.llm_calls)?;
        writeln!(f, "  tokens:    {}", self.tokens)?;
        match self.cost {
            Some(cost) => writeln!(f, "  cost:      {cost:.4}")?,
            None => writeln!(f, "  cost:      unknown (model has no price)")?,
        }
        writeln!(f, "  rollouts:  {}", self.rollouts)?;
        if self.over_limits.is_empty() {
            write!(f, "  within every cap")
        } else {
            write!(
                f,
                "  over caps (the run will stop early): {}",
                self.over_limits.join("; ")
            )
        }
    }
}
