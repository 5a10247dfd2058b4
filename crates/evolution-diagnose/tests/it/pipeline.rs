use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use evolution_diagnose::DiagnosePrompts;
use evolution_diagnose::{
    DiagnoseError, DiagnoseOptions, DiagnosePass, DiagnoseProgress, Diagnoser,
};
use evolution_testkit::{MemoryRunLog, MemoryStore, RecordedRequest, ScriptedLlm, fixtures};
use evolution_types::{
    CauseCategory, ErrorType, GeneratedQuestion, LlmError, LlmErrorKind, Prediction, RunLogError,
};
use serde_json::{Value, json};

use crate::common::{good_reply, judge_of, profile, trace};

const RUN: &str = "run-1";

/// Templates that name the question (and the step, for spans) so the script can answer per question.
fn prompts() -> DiagnosePrompts {
    let mut p = crate::common::prompts();
    for t in [
        &mut p.defect_vs_lapse,
        &mut p.reasoning_sub,
        &mut p.missed_nodes,
        &mut p.skill_adherence,
        &mut p.confirmation_bias,
        &mut p.evidence_sufficiency,
    ] {
        t.insert_str(0, "QID={{question_id}}\n");
    }
    p.span_eval_user
        .insert_str(0, "QID={{question_id}} STEP={{step}}\n");
    p
}

fn qid_of(req: &RecordedRequest) -> String {
    let text = req.full_text();
    let start = text.find("QID=").map_or(0, |i| i + 4);
    text[start..]
        .split([' ', '\n'])
        .next()
        .unwrap_or("")
        .to_owned()
}

fn step_of(req: &RecordedRequest) -> u32 {
    let text = req.full_text();
    text.find("STEP=")
        .and_then(|i| text[i + 5..].split('\n').next()?.parse().ok())
        .unwrap_or(0)
}

/// q01–q10 over three task types: q04 an INFRA error, q07's bias judge
/// always replies broken JSON (degraded), q08's sufficiency judge replies
/// JSON that needs repair.
fn fixture_reply(req: &RecordedRequest) -> Result<String, LlmError> {
    let qid = qid_of(req);
    let judge = judge_of(req);
    let reply = match (qid.as_str(), judge) {
        ("q02", "span") if step_of(req) == 1 => {
            r#"{"extraction_completeness": 0.2, "hallucination_rate": 0.1, "missed_info_tags": ["fridge contents"], "hallucination_tags": []}"#.to_owned()
        }
        ("q03", "missed_nodes") => r#"{"missed_nodes": ["seg_L2_004", "seg_L3_001"]}"#.to_owned(),
        ("q03", "evidence_sufficiency") | ("q09", "evidence_sufficiency") => {
            r#"{"evidence_sufficient": false}"#.to_owned()
        }
        ("q06", "defect_vs_lapse") => r#"{"category": "lapse", "lapse_note": "count the objects twice"}"#.to_owned(),
        ("q02" | "q03" | "q09", "defect_vs_lapse") => r#"{"category": "defect", "lapse_note": ""}"#.to_owned(),
        ("q07", "confirmation_bias") => r#"{"confirmation_bias": tru"#.replace("tru", "maybe, ###").to_owned(),
        ("q08", "evidence_sufficiency") => "<think>let me see</think>Sure:\n```json\n{'evidence_sufficient': True, 'reason': '证据充分：看到了杯子',}\n```".to_owned(),
        ("q10", "span") => r#"{"extraction_completeness": 1.0, "hallucination_rate": 0.0}"#.to_owned(),
        _ => good_reply(judge),
    };
    Ok(reply)
}

struct Fixture {
    questions: Vec<GeneratedQuestion>,
    log: MemoryRunLog,
    store: MemoryStore,
    tree: BTreeMap<String, Value>,
}

fn fixture() -> Fixture {
    let spec = [
        ("q01", "temporal", true),
        ("q02", "temporal", false),
        ("q03", "temporal", false),
        ("q04", "temporal", false),
        ("q05", "counting", true),
        ("q06", "counting", false),
        ("q07", "counting", false),
        ("q08", "spatial", true),
        ("q09", "spatial", false),
        ("q10", "spatial", true),
    ];
    let log = MemoryRunLog::new();
    let mut questions = Vec::new();
    for (i, (qid, task, correct)) in spec.into_iter().enumerate() {
        questions.push(fixtures::question(qid, task, "video-1"));
        let mut p: Prediction = fixtures::prediction(RUN, qid, task, correct);
        p.steps_used = 3 + i as u32;
        if qid == "q04" {
            p.stop_reason = "error".into();
            p.error = Some("sandbox crashed".into());
        }
        log.insert_predictions([p]);
        log.insert_traces(trace(RUN, qid));
    }
    let store = MemoryStore::new()
        .with(
            "temporal.md",
            "---\nname: temporal\n---\n1. scan the root\n2. verify",
        )
        .with("default-strategy.md", "---\nname: default\n---\n1. look");
    let tree = BTreeMap::from([("video-1".to_owned(), json!({"id": "root"}))]);
    Fixture {
        questions,
        log,
        store,
        tree,
    }
}

async fn diagnose(
    f: &Fixture,
    llm: &ScriptedLlm,
    options: &DiagnoseOptions,
) -> Result<evolution_types::DiagnosisResult, DiagnoseError> {
    Diagnoser::new(llm, &f.log, &f.store)
        .with_prompts(prompts())
        .with_profile(profile())
        .with_options(options.clone())
        .run(RUN, &f.questions, &f.tree)
        .await
}

#[tokio::test]
async fn full_diagnosis_snapshot() {
    let f = fixture();
    let llm = ScriptedLlm::from_fn(fixture_reply);
    let result = diagnose(
        &f,
        &llm,
        &DiagnoseOptions {
            concurrency: 4,
            ..DiagnoseOptions::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(
        (
            result.n_questions,
            result.n_diagnosed,
            result.n_infra_errors,
            result.n_degraded
        ),
        (10, 9, 1, 1)
    );
    assert_eq!(result.infra_error_rate, Some(0.1));
    assert!(
        result
            .question_metrics
            .iter()
            .all(|m| m.question_id != "q04")
    );
    let q07 = result
        .question_metrics
        .iter()
        .find(|m| m.question_id == "q07")
        .unwrap();
    assert!(q07.degraded);
    let q08 = result
        .question_metrics
        .iter()
        .find(|m| m.question_id == "q08")
        .unwrap();
    assert_eq!(
        q08.evidence_sufficient,
        Some(true),
        "repaired reply was read"
    );
    let by_id = |id: &str| {
        result
            .attributions
            .iter()
            .find(|a| a.question_id == id)
            .unwrap()
    };
    assert_eq!(by_id("q02").error_type, ErrorType::ExtractionFailure);
    assert_eq!(by_id("q03").error_type, ErrorType::SearchFailure);
    assert_eq!(by_id("q06").error_type, ErrorType::ReasoningFailure);
    assert_eq!(
        by_id("q06").reasoning_failure_type.as_deref(),
        Some("premise_error")
    );
    assert_eq!(
        by_id("q07").cause_category,
        None,
        "degraded: never classified"
    );
    assert_eq!(by_id("q09").cause_category, Some(CauseCategory::Defect));
    // Result order follows the run log, whatever the completion order.
    let ids: Vec<_> = result
        .question_metrics
        .iter()
        .map(|m| m.question_id.as_str())
        .collect();
    assert_eq!(
        ids,
        [
            "q01", "q02", "q03", "q05", "q06", "q07", "q08", "q09", "q10"
        ]
    );
    assert!(llm.max_in_flight() <= 4);
    insta::assert_json_snapshot!(result);
}

/// Everything an observer heard, in order.
#[derive(Default)]
struct Heard(std::sync::Mutex<Vec<(&'static str, DiagnosePass, String)>>);

impl Heard {
    fn push(&self, what: &'static str, pass: DiagnosePass, detail: String) {
        self.0.lock().unwrap().push((what, pass, detail));
    }
    fn all(&self) -> Vec<(&'static str, DiagnosePass, String)> {
        self.0.lock().unwrap().clone()
    }
}

impl DiagnoseProgress for Heard {
    fn pass_started(&self, pass: DiagnosePass, total: usize) {
        self.push("pass", pass, total.to_string());
    }
    fn item_started(&self, pass: DiagnosePass, question_id: &str) {
        self.push("start", pass, question_id.to_owned());
    }
    fn item_finished(&self, pass: DiagnosePass, question_id: &str) {
        self.push("finish", pass, question_id.to_owned());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_observer_hears_each_pass_and_every_judged_item_once() {
    // (only wrong answers, questions judged in Stage 1)
    let cases: [(bool, &[&str]); 2] = [
        (
            false,
            &[
                "q01", "q02", "q03", "q05", "q06", "q07", "q08", "q09", "q10",
            ],
        ),
        (true, &["q02", "q03", "q06", "q07", "q09"]),
    ];
    for (only_incorrect, judged) in cases {
        let f = fixture();
        let llm = ScriptedLlm::from_fn(fixture_reply);
        let heard = Heard::default();
        let result = Diagnoser::new(&llm, &f.log, &f.store)
            .with_prompts(prompts())
            .with_profile(profile())
            .with_options(DiagnoseOptions {
                concurrency: 3,
                only_incorrect,
                ..DiagnoseOptions::default()
            })
            .with_progress(&heard)
            .run(RUN, &f.questions, &f.tree)
            .await
            .unwrap();
        let heard = heard.all();
        let reasoning = result
            .attributions
            .iter()
            .filter(|a| a.error_type == ErrorType::ReasoningFailure)
            .count();
        assert!(reasoning > 0, "the fixture has a reasoning failure");
        // Sub-classified within Stage 1, beside the defect-vs-lapse call: no pass of its own.
        assert!(
            result
                .attributions
                .iter()
                .filter(|a| a.error_type == ErrorType::ReasoningFailure)
                .all(|a| a.reasoning_failure_type.is_some()),
            "{:?}",
            result.attributions
        );
        let passes: Vec<(DiagnosePass, String)> = heard
            .iter()
            .filter(|(what, _, _)| *what == "pass")
            .map(|(_, pass, total)| (*pass, total.clone()))
            .collect();
        assert_eq!(
            passes,
            [(DiagnosePass::Questions, judged.len().to_string())]
        );
        let at = |what: &str, id: &str| {
            let found: Vec<usize> = heard
                .iter()
                .enumerate()
                .filter(|(_, (w, _, q))| *w == what && q == id)
                .map(|(i, _)| i)
                .collect();
            assert_eq!(found.len(), 1, "{what} {id}: {heard:?}");
            found[0]
        };
        for id in judged {
            assert!(at("start", id) < at("finish", id));
        }
        let items = heard.iter().filter(|(w, _, _)| *w != "pass").count();
        assert_eq!(items, 2 * judged.len(), "no item outside the scope");
    }
}

#[tokio::test]
async fn empty_scope_gives_an_empty_result() {
    let f = fixture();
    let llm = ScriptedLlm::new();
    let options = DiagnoseOptions {
        question_ids: Some(vec!["nope".into()]),
        ..DiagnoseOptions::default()
    };
    let result = diagnose(&f, &llm, &options).await.unwrap();
    assert_eq!((result.n_questions, result.n_diagnosed), (0, 0));
    assert_eq!((result.accuracy, result.infra_error_rate), (None, None));
    assert!(
        result.skill_packs.is_empty()
            && result.system_pack.is_none()
            && result.tool_packs.is_empty()
    );
    assert_eq!(result.behavior_stats["early_submit_rate"], 0.0);
    assert_eq!(llm.call_count(), 0);
}

#[tokio::test]
async fn filters_and_infra_statistics() {
    let f = fixture();
    let llm = ScriptedLlm::from_fn(fixture_reply);
    let options = DiagnoseOptions {
        task_types: Some(vec!["temporal".into()]),
        only_incorrect: true,
        ..DiagnoseOptions::default()
    };
    let result = diagnose(&f, &llm, &options).await.unwrap();
    // Scope: temporal (4 questions, q04 INFRA); diagnosed: the wrong non-INFRA ones.
    assert_eq!(
        (
            result.n_questions,
            result.n_infra_errors,
            result.n_diagnosed
        ),
        (4, 1, 2)
    );
    assert_eq!(result.infra_error_rate, Some(0.25));
    assert!(
        result
            .question_metrics
            .iter()
            .all(|m| !m.correct && m.task_type == "temporal")
    );

    let options = DiagnoseOptions {
        question_ids: Some(vec!["q01".into(), "q04".into()]),
        ..DiagnoseOptions::default()
    };
    let result = diagnose(&f, &llm, &options).await.unwrap();
    assert_eq!(
        (
            result.n_questions,
            result.n_infra_errors,
            result.n_diagnosed,
            result.n_correct
        ),
        (2, 1, 1, 1)
    );
    assert_eq!(result.accuracy, Some(1.0));
}

#[tokio::test]
async fn errors() {
    let f = fixture();
    let llm = ScriptedLlm::from_fn(fixture_reply);
    let zero = DiagnoseOptions {
        concurrency: 0,
        ..DiagnoseOptions::default()
    };
    assert!(matches!(
        diagnose(&f, &llm, &zero).await,
        Err(DiagnoseError::InvalidOptions(_))
    ));

    let err = Diagnoser::new(&llm, &f.log, &f.store)
        .with_prompts(prompts())
        .with_profile(profile())
        .run("other", &f.questions, &f.tree)
        .await
        .unwrap_err();
    assert!(
        matches!(err, DiagnoseError::RunLog(RunLogError::RunNotFound { .. })),
        "{err}"
    );

    let failing = ScriptedLlm::from_fn(|req| {
        if qid_of(req) == "q05" {
            Err(LlmError::new(LlmErrorKind::Auth, "bad key"))
        } else {
            fixture_reply(req)
        }
    });
    let err = diagnose(&f, &failing, &DiagnoseOptions::default())
        .await
        .unwrap_err();
    assert!(
        matches!(err, DiagnoseError::Llm(ref e) if e.kind() == LlmErrorKind::Auth),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrency_is_bounded_and_used() {
    let f = fixture();
    for concurrency in [1, 3, 16] {
        let llm =
            Arc::new(ScriptedLlm::from_fn(fixture_reply).with_latency(Duration::from_millis(5)));
        let options = DiagnoseOptions {
            concurrency,
            ..DiagnoseOptions::default()
        };
        let result = Diagnoser::new(llm.as_ref(), &f.log, &f.store)
            .with_prompts(prompts())
            .with_profile(profile())
            .with_options(options.clone())
            .run(RUN, &f.questions, &f.tree)
            .await
            .unwrap();
        assert_eq!(result.n_diagnosed, 9);
        assert!(
            llm.max_in_flight() <= concurrency,
            "{} > {concurrency}",
            llm.max_in_flight()
        );
        assert_eq!(llm.max_in_flight(), concurrency, "the limit is reached");
    }
}

/// The reference implementation's test: a run log with no predictions gives an empty result.
struct EmptyLog;

#[async_trait::async_trait]
impl evolution_types::RunLog for EmptyLog {
    async fn get_predictions(
        &self,
        _: &str,
        _: Option<&[String]>,
    ) -> Result<Vec<Prediction>, RunLogError> {
        Ok(Vec::new())
    }
    async fn get_traces(
        &self,
        _: &str,
        _: Option<&[String]>,
    ) -> Result<Vec<evolution_types::TraceStep>, RunLogError> {
        Ok(Vec::new())
    }
}

#[tokio::test]
async fn empty_run_log_gives_an_empty_result() {
    let llm = ScriptedLlm::new();
    let store = MemoryStore::new();
    let prompts = DiagnosePrompts::default();
    let options = DiagnoseOptions {
        concurrency: 1,
        ..DiagnoseOptions::default()
    };
    let result = Diagnoser::new(&llm, &EmptyLog, &store)
        .with_prompts(prompts.clone())
        .with_profile(profile())
        .with_options(options.clone())
        .run("run1", &[], &BTreeMap::new())
        .await
        .unwrap();
    assert_eq!(result.run_id, "run1");
    assert_eq!(result.n_questions, 0);
    assert!(result.question_metrics.is_empty());
}

#[tokio::test]
async fn dropping_the_diagnosis_midway_is_clean() {
    let f = fixture();
    let llm = ScriptedLlm::from_fn(fixture_reply).with_latency(Duration::from_millis(50));
    let options = DiagnoseOptions {
        concurrency: 2,
        ..DiagnoseOptions::default()
    };
    let cut = tokio::time::timeout(Duration::from_millis(120), diagnose(&f, &llm, &options)).await;
    assert!(cut.is_err(), "timed out before finishing");
    let started = llm.call_count();
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(llm.call_count(), started, "no call starts after the drop");
    // The same provider serves a full run afterwards.
    let result = diagnose(&f, &llm, &options).await.unwrap();
    assert_eq!(result.n_diagnosed, 9);
}

/// The judge calls of one diagnosis, by judge, and the diagnosis.
async fn judge_calls(
    f: &Fixture,
    judges: evolution_diagnose::JudgeScope,
) -> (BTreeMap<String, usize>, evolution_types::DiagnosisResult) {
    let llm = ScriptedLlm::from_fn(fixture_reply);
    let options = DiagnoseOptions {
        judges,
        ..DiagnoseOptions::default()
    };
    let result = diagnose(f, &llm, &options).await.unwrap();
    let mut calls = BTreeMap::new();
    for request in llm.requests() {
        *calls.entry(judge_of(&request).to_owned()).or_insert(0) += 1;
    }
    (calls, result)
}

/// The skill packs with the metrics a right answer may be left unjudged on blanked in
/// their success examples (the prompt shows them as unknown).
fn skill_packs_without_failure_only_metrics(
    result: &evolution_types::DiagnosisResult,
) -> Vec<evolution_types::SkillCasePack> {
    let mut packs = result.skill_packs.clone();
    for case in packs.iter_mut().flat_map(|p| &mut p.success_cases) {
        case.metrics.evidence_sufficient = None;
        case.metrics.missed_nodes.clear();
        case.metrics.confirmation_bias = None;
    }
    packs
}

#[tokio::test]
async fn judging_for_a_proposal_skips_judges_whose_verdict_on_a_right_answer_changes_no_pack() {
    use evolution_diagnose::JudgeScope;
    let f = fixture();
    // A task type whose answers are all right: it gets no skill pack.
    for qid in ["q11", "q12"] {
        f.log
            .insert_predictions([fixtures::prediction(RUN, qid, "ordering", true)]);
        f.log.insert_traces(trace(RUN, qid));
    }
    let (every, full) = judge_calls(&f, JudgeScope::Every).await;
    let (with_system, lean) = judge_calls(&f, JudgeScope::ForProposal { system_pack: true }).await;
    let (without_system, leaner) =
        judge_calls(&f, JudgeScope::ForProposal { system_pack: false }).await;
    let total = |calls: &BTreeMap<String, usize>| calls.values().sum::<usize>();
    // 11 answers judged, 6 of them right (q01, q05, q08, q10 and the two `ordering` ones);
    // q07's broken bias judge is tried three times.
    assert_eq!(
        (total(&every), total(&with_system), total(&without_system)),
        (95, 81, 75),
        "{every:?} / {with_system:?} / {without_system:?}"
    );
    // Right answers get no evidence or missed-nodes judge, …
    assert_eq!(every["evidence_sufficiency"], 11);
    assert_eq!(with_system["evidence_sufficiency"], 5);
    assert_eq!(with_system["missed_nodes"], 5);
    // … adherence only where their task type has a wrong answer, …
    assert_eq!(every["skill_adherence"], 11);
    assert_eq!(with_system["skill_adherence"], 9);
    // … bias only for the system-prompt pack; spans always.
    assert_eq!(with_system["confirmation_bias"], every["confirmation_bias"]);
    assert_eq!(
        without_system["confirmation_bias"],
        every["confirmation_bias"] - 6
    );
    assert_eq!(with_system["span"], every["span"]);
    // What the proposal is made from is the same.
    assert_eq!(
        skill_packs_without_failure_only_metrics(&lean),
        skill_packs_without_failure_only_metrics(&full)
    );
    assert_eq!(
        skill_packs_without_failure_only_metrics(&leaner),
        skill_packs_without_failure_only_metrics(&full)
    );
    assert_eq!(lean.tool_packs, full.tool_packs);
    assert_eq!(lean.attributions, full.attributions);
    let without_metrics = |p: Option<evolution_types::SystemCasePack>| {
        p.map(|mut p| {
            for case in &mut p.success_cases {
                case.metrics.evidence_sufficient = None;
                case.metrics.missed_nodes.clear();
            }
            p
        })
    };
    assert_eq!(
        without_metrics(lean.system_pack.clone()),
        without_metrics(full.system_pack.clone())
    );
}
