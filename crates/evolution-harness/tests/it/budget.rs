use std::collections::BTreeMap;
use std::sync::Arc;

use evolution_harness::{
    Budget, BudgetError, BudgetExceeded, BudgetLimits, Estimate, MeteredLlm, Price, RunPlan,
};
use evolution_testkit::ScriptedLlm;
use evolution_types::{ChatMessage, ChatOptions, LlmErrorKind, LlmProvider, LlmResponse};

fn response(model: &str, prompt: u64, completion: u64) -> LlmResponse {
    LlmResponse {
        content: "ok".into(),
        model: model.into(),
        provider: "test".into(),
        prompt_tokens: prompt,
        completion_tokens: completion,
        ..LlmResponse::default()
    }
}

fn prices() -> BTreeMap<String, Price> {
    BTreeMap::from([(
        "m".to_owned(),
        Price {
            prompt_per_million: 1.0,
            completion_per_million: 2.0,
        },
    )])
}

#[test]
fn call_cap_stops_after_the_limit_and_stays_stopped() {
    let budget = Budget::new(BudgetLimits {
        max_llm_calls: Some(2),
        ..BudgetLimits::default()
    })
    .unwrap();
    for _ in 0..2 {
        budget.check_llm_call().unwrap();
        budget.record_llm_call(&response("any", 10, 5)).unwrap();
    }
    let stop = budget.check_llm_call().unwrap_err();
    assert_eq!(stop, BudgetExceeded::LlmCalls { used: 2, limit: 2 });
    assert_eq!(budget.stopped(), Some(stop.clone()));
    // Rollouts are refused too once the run is stopped.
    assert_eq!(budget.reserve_rollouts(1), Err(stop));
    assert_eq!(budget.usage().prompt_tokens, 20);
}

#[test]
fn money_is_priced_per_model_and_unpriced_models_stop_a_capped_run() {
    let budget = Budget::new(BudgetLimits {
        max_cost: Some(0.01),
        prices: prices(),
        ..BudgetLimits::default()
    })
    .unwrap();
    budget
        .record_llm_call(&response("m", 2_000, 1_000))
        .unwrap();
    assert!((budget.usage().cost - 0.004).abs() < 1e-12);
    budget.check_llm_call().unwrap();
    budget
        .record_llm_call(&response("m", 4_000, 1_000))
        .unwrap();
    assert!(matches!(
        budget.check_llm_call(),
        Err(BudgetExceeded::Cost { .. })
    ));

    let capped = Budget::new(BudgetLimits {
        max_cost: Some(1.0),
        ..BudgetLimits::default()
    })
    .unwrap();
    assert_eq!(
        capped.record_llm_call(&response("mystery", 1, 1)),
        Err(BudgetExceeded::UnpricedModel {
            model: "mystery".into()
        })
    );
    assert_eq!(capped.usage().llm_calls, 1);
    // Without a money cap an unpriced model is fine.
    Budget::unlimited()
        .record_llm_call(&response("mystery", 1, 1))
        .unwrap();
}

#[test]
fn token_cap_and_rollout_reservations_are_all_or_nothing() {
    let budget = Budget::new(BudgetLimits {
        max_tokens: Some(100),
        max_rollouts: Some(10),
        ..BudgetLimits::default()
    })
    .unwrap();
    budget.record_llm_call(&response("x", 60, 40)).unwrap();
    assert_eq!(
        budget.check_llm_call(),
        Err(BudgetExceeded::Tokens {
            used: 100,
            limit: 100
        })
    );
    let fresh = Budget::new(BudgetLimits {
        max_rollouts: Some(10),
        ..BudgetLimits::default()
    })
    .unwrap();
    fresh.reserve_rollouts(6).unwrap();
    assert_eq!(
        fresh.reserve_rollouts(5),
        Err(BudgetExceeded::Rollouts {
            used: 6,
            requested: 5,
            limit: 10
        })
    );
    assert_eq!(fresh.usage().rollouts, 6);
}

/// Once a phase is entered, every call, failed call and rollout is charged
/// to it as well as to the run; what came before counts for the run only.
#[test]
fn usage_is_charged_to_the_phase_in_progress() {
    use evolution_harness::{Phase, Usage};
    let budget = Budget::new(BudgetLimits {
        prices: prices(),
        ..BudgetLimits::default()
    })
    .unwrap();
    budget.record_llm_call(&response("m", 1, 1)).unwrap();
    assert!(budget.usage_by_phase().is_empty());
    assert_eq!(budget.phase(), None);
    budget.enter_phase(Phase::Rollout);
    budget.reserve_rollouts(4).unwrap();
    budget.enter_phase(Phase::Diagnose);
    budget.record_llm_call(&response("m", 1_000, 500)).unwrap();
    budget.record_failed_call();
    budget.enter_phase(Phase::Rollout);
    budget.reserve_rollouts(2).unwrap();
    let by_phase = budget.usage_by_phase();
    assert_eq!(
        by_phase.keys().copied().collect::<Vec<_>>(),
        [Phase::Rollout, Phase::Diagnose]
    );
    assert_eq!(
        by_phase[&Phase::Rollout],
        Usage {
            rollouts: 6,
            ..Usage::default()
        }
    );
    let diagnose = &by_phase[&Phase::Diagnose];
    assert_eq!(
        (
            diagnose.llm_calls,
            diagnose.prompt_tokens,
            diagnose.completion_tokens
        ),
        (2, 1_000, 500)
    );
    assert!((diagnose.cost - 0.002).abs() < 1e-15);
    // The call before the first phase is the difference.
    let total = budget.usage();
    let phased = by_phase
        .values()
        .fold(Usage::default(), |sum, u| sum.plus(u));
    assert_eq!(total.llm_calls, phased.llm_calls + 1);
    assert_eq!(total.rollouts, phased.rollouts);
    assert_eq!(Phase::SlowUpdate.as_str(), "slow_update");
    assert_eq!(Phase::SlowUpdate.label(), "slow update");
    assert_eq!(
        serde_json::to_value(Phase::SlowUpdate).unwrap(),
        "slow_update"
    );
}

#[test]
fn invalid_amounts_are_refused() {
    let err = Budget::new(BudgetLimits {
        max_cost: Some(-1.0),
        ..BudgetLimits::default()
    })
    .unwrap_err();
    assert!(matches!(err, BudgetError::InvalidAmount { ref what, .. } if what == "max_cost"));
    let mut bad = prices();
    bad.insert(
        "n".into(),
        Price {
            prompt_per_million: f64::NAN,
            completion_per_million: 0.0,
        },
    );
    let err = Budget::new(BudgetLimits {
        prices: bad,
        ..BudgetLimits::default()
    })
    .unwrap_err();
    assert!(
        matches!(err, BudgetError::InvalidAmount { ref what, .. } if what == "prices.n.prompt")
    );
}

#[tokio::test]
async fn metered_llm_refuses_calls_past_the_cap() {
    let llm = ScriptedLlm::with_replies(["one", "two", "three"]);
    let budget = Arc::new(
        Budget::new(BudgetLimits {
            max_llm_calls: Some(2),
            ..BudgetLimits::default()
        })
        .unwrap(),
    );
    let metered = MeteredLlm::new(llm, Arc::clone(&budget));
    let msgs = [ChatMessage::user("hi")];
    assert_eq!(
        metered
            .chat(&msgs, &ChatOptions::default())
            .await
            .unwrap()
            .content,
        "one"
    );
    assert_eq!(
        metered
            .chat(&msgs, &ChatOptions::default())
            .await
            .unwrap()
            .content,
        "two"
    );
    let err = metered
        .chat(&msgs, &ChatOptions::default())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), LlmErrorKind::Cancelled);
    assert!(err.message().contains("LLM call budget exhausted"), "{err}");
    assert_eq!(budget.usage().llm_calls, 2);
}

#[test]
fn preflight_estimate_is_the_worst_case_and_names_the_caps_it_passes() {
    let plan = RunPlan {
        epochs: 3,
        diagnosis_questions: 20,
        candidates_per_epoch: 4,
        gate_questions: 50,
        diagnosis_calls_per_epoch: 30,
        calls_per_candidate: 3,
        slow_update_calls_per_epoch: 1,
        slow_update_candidates_per_epoch: 0,
        probation_questions: 0,
        judged_diagnosis_questions: 0,
        judged_gate_questions: 0,
        prompt_tokens_per_call: 2_000,
        completion_tokens_per_call: 500,
        model: "m".into(),
    };
    let limits = BudgetLimits {
        max_rollouts: Some(1_000),
        max_cost: Some(1.0),
        prices: prices(),
        ..BudgetLimits::default()
    };
    let estimate = Estimate::of(&plan, &limits);
    assert_eq!(estimate.llm_calls, 3 * (30 + 12 + 1));
    assert_eq!(estimate.tokens, 129 * 2_500);
    assert_eq!(estimate.rollouts, 3 * (20 + 4 * 50 * 2));
    // The slow update's candidates are gated, and each candidate may be
    // watched on the probation pool: both cost rollouts, no LLM call.
    let gated = RunPlan {
        slow_update_candidates_per_epoch: 2,
        probation_questions: 10,
        ..plan.clone()
    };
    let more = Estimate::of(&gated, &limits);
    assert_eq!(more.rollouts, 3 * (20 + (4 + 2) * (50 + 10) * 2));
    assert_eq!(more.llm_calls, estimate.llm_calls);
    // A rubric question costs one judge call per answer: in diagnosis, and from both
    // versions of each gated candidate (gate and probation questions alike).
    let judged = RunPlan {
        judged_diagnosis_questions: 5,
        judged_gate_questions: 7,
        ..gated.clone()
    };
    let judged = Estimate::of(&judged, &limits);
    assert_eq!(judged.llm_calls, more.llm_calls + 3 * (5 + (4 + 2) * 7 * 2));
    assert_eq!(judged.rollouts, more.rollouts);
    let cost = estimate.cost.unwrap();
    assert!((cost - (129.0 * 2_000.0 + 129.0 * 1_000.0) / 1e6).abs() < 1e-12);
    assert_eq!(estimate.over_limits, ["rollouts 1260 > cap 1000"]);
    insta::assert_snapshot!(estimate.to_string(), @r"
    pre-flight estimate (worst case):
      LLM calls: 129
      tokens:    322500
      cost:      0.3870
      rollouts:  1260
      over caps (the run will stop early): rollouts 1260 > cap 1000
    ");
}

/// Answers after a pause, so calls made at once overlap.
struct Slow;

#[async_trait::async_trait]
impl LlmProvider for Slow {
    async fn chat(
        &self,
        _messages: &[ChatMessage],
        _options: &ChatOptions,
    ) -> Result<LlmResponse, evolution_types::LlmError> {
        tokio::time::sleep(std::time::Duration::from_millis(30)).await;
        Ok(response("any", 1, 1))
    }
}

#[tokio::test]
async fn calls_made_at_once_never_pass_the_call_cap_together() {
    let budget = Arc::new(
        Budget::new(BudgetLimits {
            max_llm_calls: Some(2),
            ..BudgetLimits::default()
        })
        .unwrap(),
    );
    let metered = MeteredLlm::new(Slow, Arc::clone(&budget));
    let msgs = [ChatMessage::user("hi")];
    let opts = ChatOptions::default();
    let (a, b, c, d, e) = tokio::join!(
        metered.chat(&msgs, &opts),
        metered.chat(&msgs, &opts),
        metered.chat(&msgs, &opts),
        metered.chat(&msgs, &opts),
        metered.chat(&msgs, &opts),
    );
    let answered = [a, b, c, d, e].iter().filter(|r| r.is_ok()).count();
    assert_eq!(answered, 2);
    assert_eq!(budget.usage().llm_calls, 2);
    // Once those finished the cap is reached, and stays so.
    let err = metered.chat(&msgs, &opts).await.unwrap_err();
    assert_eq!(err.kind(), LlmErrorKind::Cancelled);
    assert_eq!(budget.usage().llm_calls, 2);
}

#[test]
fn the_cost_a_provider_reports_is_summed_apart_from_the_price_table() {
    use evolution_harness::Phase;
    let budget = Budget::new(BudgetLimits {
        prices: prices(),
        ..BudgetLimits::default()
    })
    .unwrap();
    budget.enter_phase(Phase::Diagnose);
    let reported = |cost: Option<f64>| LlmResponse {
        cost_usd: cost,
        ..response("m", 1_000, 0)
    };
    budget.record_llm_call(&reported(Some(0.25))).unwrap();
    budget.record_llm_call(&reported(None)).unwrap();
    // Not a cost: ignored, never summed into a NaN.
    budget.record_llm_call(&reported(Some(f64::NAN))).unwrap();
    budget.record_llm_call(&reported(Some(-3.0))).unwrap();
    budget.enter_phase(Phase::Propose);
    budget.record_llm_call(&reported(Some(0.5))).unwrap();
    let total = budget.usage();
    assert_eq!(total.llm_calls, 5);
    assert!((total.host_cost_usd - 0.75).abs() < 1e-12);
    // The price table's money is its own: 1 000 prompt tokens at 1 per million, five times.
    assert!((total.cost - 0.005).abs() < 1e-12);
    let by_phase = budget.usage_by_phase();
    assert!((by_phase[&Phase::Diagnose].host_cost_usd - 0.25).abs() < 1e-12);
    assert!((by_phase[&Phase::Propose].host_cost_usd - 0.5).abs() < 1e-12);
    // Serialized only when something was reported.
    let json = serde_json::to_value(&total).unwrap();
    assert_eq!(json["host_cost_usd"], 0.75);
    let none = serde_json::to_value(evolution_harness::Usage::default()).unwrap();
    assert!(none.get("host_cost_usd").is_none(), "{none}");
}
