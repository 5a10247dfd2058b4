//! The loop evolves prompts, not only skills: a system prompt and a tool's
//! prompt pair are proposed, gated, accepted into the store's history, and
//! their records land in the run log.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use async_trait::async_trait;
use evolution_evolve::EditBudgetSchedule;
use evolution_harness::{
    AgentReply, AgentRunner, Budget, EvolutionReport, InProcessRunner, KernelProposer, LoopConfig,
    LoopContext, NoEvents, Proposal, Proposals, ProposeError, ProposeRequest, Proposer, StopReason,
    VersionedStore, Workspace, run_evolution,
};
use evolution_runlog_sqlite::SqliteRunLog;
use evolution_store_fs::{FsStore, FsVersionedStore};
use evolution_testkit::ScriptedLlm;
use evolution_testkit::fixtures::skill_document;
use evolution_testkit::{MemoryCheckpoint, MemoryRunLog, MemoryVersionedStore};
use evolution_types::{Edit, EvolutionRecord, GeneratedQuestion, Profile, TargetType};
use serde_json::json;

use crate::support::{edits, gate, kernel_proposer, loop_config, reply, resuming, set};

const SYSTEM: &str = "system.md";
const EXTRACT: &str = "search_extract.md";
const VERIFY: &str = "search_verify.md";
const SYS_HELP: &str = "SYS: cite the evidence before answering.";
const SYS_HARM: &str = "SYS: answer at once, never look.";
const TOOL_HELP: &str = "TOOL: quote the matching span verbatim.";

/// Reads only the prompts: type `a` is right with [`SYS_HELP`] in the
/// system prompt, type `b` with [`TOOL_HELP`] in the search tool's extract
/// prompt, type `c` unless [`SYS_HARM`] is in the system prompt.
fn agent(ws: &Workspace, q: &GeneratedQuestion) -> Result<AgentReply, String> {
    let prompt = |name: &str| ws.prompts.get(name).map(String::as_str).unwrap_or_default();
    let right = match q.task_type.as_str() {
        "a" => prompt(SYSTEM).contains(SYS_HELP),
        "b" => prompt(EXTRACT).contains(TOOL_HELP),
        _ => !prompt(SYSTEM).contains(SYS_HARM),
    };
    Ok(reply(q, right))
}

/// Epoch 0: a helpful system-prompt edit and a helpful tool-prompt edit;
/// epoch 1: a harmful system-prompt edit.
struct PromptProposer;

fn append(
    ws: &Workspace,
    file: &str,
    target_type: TargetType,
    rule: &str,
) -> (EvolutionRecord, String) {
    let before = ws.prompts.get(file).cloned().unwrap_or_default();
    let after = format!("{before}\n{rule}\n");
    let mut record = EvolutionRecord::new(file, target_type, before, "");
    record.edits = vec![Edit::append(rule)];
    record.evolved_content = after.clone();
    (record, after)
}

#[async_trait]
impl Proposer for PromptProposer {
    async fn propose(&self, request: ProposeRequest<'_>) -> Result<Proposals, ProposeError> {
        let ws = request.workspace;
        let proposals = match request.epoch {
            0 => {
                let (system, system_text) = append(ws, SYSTEM, TargetType::System, SYS_HELP);
                let (tool, extract_text) = append(ws, EXTRACT, TargetType::Tool, TOOL_HELP);
                let verify_text = format!(
                    "{}\nTOOL: check the quote is in the source.\n",
                    ws.prompts.get(VERIFY).cloned().unwrap_or_default()
                );
                vec![
                    Proposal {
                        label: "system".into(),
                        writes: BTreeMap::from([(SYSTEM.to_owned(), system_text)]),
                        record: system,
                    },
                    Proposal {
                        label: "tool".into(),
                        writes: BTreeMap::from([
                            (EXTRACT.to_owned(), extract_text),
                            (VERIFY.to_owned(), verify_text),
                        ]),
                        record: tool,
                    },
                ]
            }
            1 => {
                let (harm, text) = append(ws, SYSTEM, TargetType::System, SYS_HARM);
                vec![Proposal {
                    label: "system-harm".into(),
                    writes: BTreeMap::from([(SYSTEM.to_owned(), text)]),
                    record: harm,
                }]
            }
            _ => Vec::new(),
        };
        Ok(proposals.into())
    }
}

#[tokio::test]
async fn a_system_prompt_and_a_tool_prompt_evolve_through_the_gate() {
    let store = MemoryVersionedStore::new(BTreeMap::from([
        ("s.md".to_owned(), "# Skill\n".to_owned()),
        (SYSTEM.to_owned(), "You answer questions.\n".to_owned()),
        (
            EXTRACT.to_owned(),
            "Extract what the query asks.\n".to_owned(),
        ),
        (VERIFY.to_owned(), "Verify the extraction.\n".to_owned()),
    ]));
    let log = MemoryRunLog::new();
    let checkpoint = MemoryCheckpoint::new();
    let llm = ScriptedLlm::new();
    let runner = InProcessRunner::new(agent);
    let budget = Budget::unlimited();
    let ctx = LoopContext {
        validation: resuming(&runner, &log, &budget, &NoEvents),
        store: &store,
        proposer: &PromptProposer,
        llm: &llm,
        checkpoint: &checkpoint,
        ledger: None,
    };
    let config = LoopConfig {
        prompt_files: BTreeSet::from([SYSTEM.to_owned(), EXTRACT.to_owned(), VERIFY.to_owned()]),
        ..loop_config("p", 2, set("t", 10))
    };
    let report = run_evolution(ctx, &config, gate("p", 5)).await.unwrap();
    assert_eq!(report.stop_reason, StopReason::MaxEpochs);
    let rows: Vec<(&str, bool)> = report
        .records
        .iter()
        .map(|r| (r.candidate.as_str(), r.accepted))
        .collect();
    assert_eq!(
        rows,
        [
            ("p_e0_system", true),
            ("p_e0_tool", true),
            ("p_e1_system-harm", false)
        ]
    );

    // Both accepts are versions in the store's history, and the final
    // documents hold the prompt edits (and not the harmful one).
    let history = history(&store);
    for record in report.records.iter().filter(|r| r.accepted) {
        assert!(history.contains(record.new_version.as_ref().unwrap()));
    }
    assert_eq!(history.last(), Some(&report.final_version));
    let docs = store.documents(&report.final_version).unwrap();
    assert!(docs[SYSTEM].contains(SYS_HELP) && !docs[SYSTEM].contains(SYS_HARM));
    assert!(docs[EXTRACT].contains(TOOL_HELP));
    assert!(docs[VERIFY].contains("check the quote"));
    assert_eq!(docs["s.md"], "# Skill\n");
    let (before, after) = (
        report.holdout_before.unwrap(),
        report.holdout_after.unwrap(),
    );
    assert!((before - 1.0 / 3.0).abs() < 1e-9, "{before}");
    assert!((after - 1.0).abs() < 1e-9, "{after}");

    // The records, with their target types and resulting versions, are in the run log.
    let stored: Vec<(TargetType, String, Option<String>)> = log
        .evolutions("p_train_e0_v1")
        .into_iter()
        .flat_map(|e| e.records)
        .map(|r| (r.target_type, r.target_file, r.result_version))
        .collect();
    assert_eq!(
        stored,
        [
            (
                TargetType::System,
                SYSTEM.to_owned(),
                report.records[0].new_version.clone()
            ),
            (
                TargetType::Tool,
                EXTRACT.to_owned(),
                report.records[1].new_version.clone()
            ),
        ]
    );
    // The harmful system edit is blacklisted against the system prompt.
    let state = evolution_harness::LoopState::load(&checkpoint)
        .unwrap()
        .unwrap();
    assert!(
        state
            .rejected
            .iter()
            .any(|r| r.target_file == SYSTEM && r.edit.content == SYS_HARM),
        "{:?}",
        state.rejected
    );
}

/// The versions of `store`'s history, oldest first.
fn history(store: &dyn VersionedStore) -> Vec<String> {
    store
        .history()
        .unwrap()
        .into_iter()
        .map(|h| h.version)
        .collect()
}

/// The candidates `report` accepted.
fn accepted(report: &EvolutionReport) -> Vec<&str> {
    report
        .records
        .iter()
        .filter(|r| r.accepted)
        .map(|r| r.candidate.as_str())
        .collect()
}

/// The records of the first epoch's training run in `log`: each target's type and the
/// version it became.
async fn stored_records(
    log: &SqliteRunLog,
    name: &str,
    report: &EvolutionReport,
) -> Vec<(TargetType, Option<String>)> {
    let train0 = format!("{name}_train_e0_{}", report.initial_version);
    log.evolutions(&train0)
        .await
        .unwrap()
        .into_iter()
        .flat_map(|e| e.records)
        .map(|r| (r.target_type, r.result_version))
        .collect()
}

/// A store in `dir` holding a short skill document per task type (`a.md`, `b.md`, `c.md`)
/// and the prompt documents `prompts`, and an empty SQLite run log beside it.
fn kernel_store(dir: &Path, prompts: Vec<(String, String)>) -> (FsVersionedStore, SqliteRunLog) {
    let mut files: Vec<(String, String)> = ["a", "b", "c"]
        .iter()
        .map(|t| {
            let body = format!("# Answering {t}\n\n1. Read the question.\n");
            (format!("{t}.md"), skill_document(t, t, &body))
        })
        .collect();
    files.extend(prompts);
    FsStore::init(dir.join("store"), files, "initial").unwrap();
    let store = FsVersionedStore::new(FsStore::open(dir.join("store")).unwrap());
    let log = SqliteRunLog::open(dir.join("runs.sqlite")).unwrap();
    (store, log)
}

/// One object that answers every judge: steps followed, evidence sufficient, a defect. With
/// `incomplete_span`, the extraction is incomplete (a date missed); `confirmation_bias` as
/// given.
fn judged(incomplete_span: bool, confirmation_bias: bool) -> String {
    json!({
        "extraction_completeness": if incomplete_span { 0.2 } else { 1.0 },
        "hallucination_rate": 0.0,
        "missed_info_tags": if incomplete_span { vec!["date"] } else { Vec::new() },
        "hallucination_tags": [], "missed_nodes": [],
        "steps": [{"step": "read", "followed": true, "reason": "ok"}],
        "adherence_rate": 1.0, "confirmation_bias": confirmation_bias,
        "evidence_sufficient": true,
        "category": "defect", "lapse_note": "", "type": "logic_error"
    })
    .to_string()
}

const KERNEL_SYS_RULE: &str =
    "Before answering, look for evidence that contradicts your first guess.";

/// Through the kernel: the judges see confirmation bias on every question,
/// so diagnosis builds the system pack; the evolve-system reply appends
/// [`KERNEL_SYS_RULE`], which makes type `a` right for the agent. Skills get
/// no edits.
#[tokio::test]
async fn the_kernel_proposer_evolves_the_system_prompt_through_the_gate() {
    let dir = tempfile::tempdir().unwrap();
    let system = "# Agent\n\nYou answer questions about documents.\n\n## Method\n\n\
                  1. Read the question.\n2. Find the passage that answers it.\n\
                  3. Answer with the option the passage supports.\n"
        .to_owned();
    let (store, log) = kernel_store(dir.path(), vec![("system.md".to_owned(), system)]);
    let llm = ScriptedLlm::from_fn(move |request| {
        let text = request.full_text();
        if text.starts_with("You improve the system prompt") {
            return Ok(if text.contains(KERNEL_SYS_RULE) {
                edits(&[])
            } else {
                edits(&[KERNEL_SYS_RULE])
            });
        }
        if text.starts_with("You improve a skill document") {
            return Ok(edits(&[]));
        }
        Ok(judged(false, true))
    });
    let runner = InProcessRunner::new(|ws: &Workspace, q: &GeneratedQuestion| {
        let right = match q.task_type.as_str() {
            "a" => ws
                .prompts
                .get("system.md")
                .is_some_and(|s| s.contains(KERNEL_SYS_RULE)),
            "b" => q.question_id.ends_with(['0', '2', '4', '6', '8']),
            _ => false,
        };
        Ok(reply(q, right))
    });
    let report = run_kernel_loop(
        &llm,
        &log,
        &store,
        &runner,
        "ks",
        ["system.md".to_owned()],
        Profile::video_qa(),
    )
    .await;
    assert_eq!(
        accepted(&report),
        ["ks_e0_0-system.md"],
        "{:?}",
        report.records
    );
    let version = report.records[0].new_version.clone().unwrap();
    let history = history(&store);
    assert!(history.contains(&version), "{history:?}");
    let docs = store.documents(&report.final_version).unwrap();
    assert!(
        docs["system.md"].contains(KERNEL_SYS_RULE),
        "{}",
        docs["system.md"]
    );
    assert!(report.holdout_after.unwrap() > report.holdout_before.unwrap());
    // The diagnosis and the system record are in the SQLite log.
    let train0 = format!("ks_train_e0_{}", report.initial_version);
    assert_eq!(log.diagnoses(&train0).await.unwrap().len(), 1);
    assert_eq!(
        stored_records(&log, "ks", &report).await,
        [(TargetType::System, Some(version))]
    );
}

const KERNEL_TOOL_RULE: &str = "Copy every date in the passage into the extraction.";

/// The model of the tool-prompt tests: the evolve-tool reply appends [`KERNEL_TOOL_RULE`] to
/// the extract prompt of a pair whose request `improves` picks (by its text) until the rule is
/// there; skills get no edits; the span judge finds every extraction incomplete.
fn tool_llm(improves: fn(&str) -> bool) -> ScriptedLlm {
    ScriptedLlm::from_fn(move |request| {
        let text = request.full_text();
        if text.starts_with("You improve the two prompts") {
            let extract: Vec<_> = if improves(&text) && !text.contains(KERNEL_TOOL_RULE) {
                vec![json!({"op": "append", "target": "", "content": KERNEL_TOOL_RULE})]
            } else {
                Vec::new()
            };
            return Ok(
                json!({"suggestions": [], "extract_edits": extract, "verify_edits": []})
                    .to_string(),
            );
        }
        if text.starts_with("You improve a skill document") {
            return Ok(json!({"suggestions": [], "edits": []}).to_string());
        }
        let span = request.options.tag.as_deref() == Some("judge.span");
        Ok(judged(span, false))
    })
}

/// The agent of the tool-prompt tests: type `a` is right on even questions; type `b` calls
/// the `search_similar` tool and is right only when the prompt document `extract` holds
/// [`KERNEL_TOOL_RULE`]; type `c` is always wrong.
fn tool_agent(extract: &'static str) -> impl AgentRunner {
    InProcessRunner::new(move |ws: &Workspace, q: &GeneratedQuestion| {
        let mut steps = Vec::new();
        let right = match q.task_type.as_str() {
            "a" => q.question_id.ends_with(['0', '2', '4', '6', '8']),
            "b" => {
                let step = json!({"tool_name": "search_similar", "tool_input": {"query": "when"},
                                  "tool_output": "Released on 2024-05-01.", "thought": "search"});
                if let serde_json::Value::Object(map) = step {
                    steps.push(map);
                }
                ws.prompts
                    .get(extract)
                    .is_some_and(|s| s.contains(KERNEL_TOOL_RULE))
            }
            _ => false,
        };
        Ok(AgentReply {
            steps,
            ..reply(q, right)
        })
    })
}

/// Through the kernel: type `b` answers call the `search_similar` tool; the
/// span judge finds its extraction incomplete, so diagnosis builds the
/// tool's pack; the evolve-tool reply appends [`KERNEL_TOOL_RULE`] to the
/// extract prompt, which makes type `b` right for the agent.
#[tokio::test]
async fn the_kernel_proposer_evolves_a_tool_prompt_through_the_gate() {
    const TOOL_EXTRACT: &str = "search_similar_extract.md";
    const TOOL_VERIFY: &str = "search_similar_verify.md";
    let dir = tempfile::tempdir().unwrap();
    let (store, log) = kernel_store(
        dir.path(),
        vec![
            (
                TOOL_EXTRACT.to_owned(),
                "# Extract\n\nPull out of the passage what the query asks for.\nKeep names exact.\n"
                    .to_owned(),
            ),
            (
                TOOL_VERIFY.to_owned(),
                "# Verify\n\nCheck each extracted item against the passage.\nDrop what is not there.\n"
                    .to_owned(),
            ),
        ],
    );
    let llm = tool_llm(|_| true);
    let report = run_kernel_loop(
        &llm,
        &log,
        &store,
        &tool_agent(TOOL_EXTRACT),
        "kt",
        [TOOL_EXTRACT.to_owned(), TOOL_VERIFY.to_owned()],
        Profile::video_qa(),
    )
    .await;
    assert_eq!(accepted(&report).len(), 1, "{:?}", report.records);
    let version = report
        .records
        .iter()
        .find(|r| r.accepted)
        .and_then(|r| r.new_version.clone())
        .unwrap();
    let history = history(&store);
    assert!(history.contains(&version), "{history:?}");
    let docs = store.documents(&report.final_version).unwrap();
    assert!(
        docs[TOOL_EXTRACT].contains(KERNEL_TOOL_RULE),
        "{}",
        docs[TOOL_EXTRACT]
    );
    assert!(report.holdout_after.unwrap() > report.holdout_before.unwrap());
    assert_eq!(
        stored_records(&log, "kt", &report).await,
        [(TargetType::Tool, Some(version))]
    );
}

/// A tool steered by two extract/verify pairs: the kernel evolves each as a candidate of its
/// own. Only the second pair's extract prompt can fix type `b`; the evolve reply changes that
/// pair and leaves the first alone, and the gate accepts it.
#[tokio::test]
async fn the_kernel_proposer_evolves_every_prompt_pair_of_a_tool() {
    const PAIRS: [&str; 4] = [
        "search_similar_extract.md",
        "search_similar_verify.md",
        "rerank_extract.md",
        "rerank_verify.md",
    ];
    let dir = tempfile::tempdir().unwrap();
    let prompts = PAIRS
        .iter()
        .map(|file| {
            (
                (*file).to_owned(),
                format!(
                    "# {file}\n\nRead the passage the search returned, line by line.\n\
                     Keep names, numbers and quotes exactly as written.\n"
                ),
            )
        })
        .collect();
    let (store, log) = kernel_store(dir.path(), prompts);
    let llm = tool_llm(|text| text.contains("rerank_extract.md"));
    let mut profile = Profile::video_qa();
    profile.tool_target_files.insert(
        "search_similar".to_owned(),
        PAIRS.iter().map(|f| (*f).to_owned()).collect(),
    );
    let report = run_kernel_loop(
        &llm,
        &log,
        &store,
        &tool_agent("rerank_extract.md"),
        "kp",
        PAIRS.map(str::to_owned),
        profile,
    )
    .await;
    // Both pairs were shown to the model, each in its own evolve call.
    let asked: Vec<String> = llm
        .requests()
        .iter()
        .filter(|r| r.options.tag.as_deref() == Some("evolve.tool"))
        .map(|r| r.full_text())
        .collect();
    assert!(
        asked
            .iter()
            .any(|t| t.contains("search_similar_extract.md") && !t.contains("rerank_extract.md"))
    );
    assert!(
        asked
            .iter()
            .any(|t| t.contains("rerank_extract.md") && !t.contains("search_similar_extract.md"))
    );
    let accepted = accepted(&report);
    assert_eq!(accepted.len(), 1, "{:?}", report.records);
    assert!(accepted[0].ends_with("rerank_extract.md"), "{accepted:?}");
    let docs = store.documents(&report.final_version).unwrap();
    assert!(docs["rerank_extract.md"].contains(KERNEL_TOOL_RULE));
    assert!(!docs["search_similar_extract.md"].contains(KERNEL_TOOL_RULE));
}

/// Two epochs of the loop with the real `KernelProposer` over `llm`: 10 training, 30 gate and
/// 10 holdout questions per task type, the reference implementation's gate on blocks of 10 and 20.
async fn run_kernel_loop<const N: usize>(
    llm: &ScriptedLlm,
    log: &SqliteRunLog,
    store: &dyn VersionedStore,
    runner: &dyn AgentRunner,
    name: &str,
    prompt_files: [String; N],
    profile: Profile,
) -> EvolutionReport {
    let train = set("t", 10);
    let schedule = EditBudgetSchedule::Constant { max_edits: 3 };
    let proposer = KernelProposer {
        profile,
        ..kernel_proposer(llm, log, train.clone(), schedule)
    };
    let budget = Budget::unlimited();
    let checkpoint = MemoryCheckpoint::new();
    let ctx = LoopContext {
        validation: resuming(runner, log, &budget, &NoEvents),
        store,
        proposer: &proposer,
        llm,
        checkpoint: &checkpoint,
        ledger: None,
    };
    let config = LoopConfig {
        prompt_files: BTreeSet::from(prompt_files),
        ..loop_config(name, 2, train)
    };
    run_evolution(ctx, &config, gate(name, 3)).await.unwrap()
}
