//! Shared fixtures of the integration tests.

use evolution_testkit::{RecordedRequest, fixtures};
use evolution_types::{Prediction, Profile, TraceStep};
use serde_json::json;

use evolution_diagnose::DiagnosePrompts;

/// Templates that use every placeholder, with a JSON example kept verbatim.
pub(crate) fn prompts() -> DiagnosePrompts {
    DiagnosePrompts {
        defect_vs_lapse: "Classify [{{error_type}}] on {{question_id}}.\nEvidence: {{evidence}}\nSkill:\n{{skill}}\nTrace:\n{{trace}}\nReply {\"category\": \"defect|lapse\", \"lapse_note\": \"...\"}".into(),
        reasoning_sub: "Reasoning failure on {{question}}: {{evidence}}\nTrace:\n{{trace}}\nReply {\"type\": \"...\"}".into(),
        span_eval_system: "You judge one {{tool_name}} call. Reply {\"extraction_completeness\": 0..1}".into(),
        span_eval_user: "Question: {{question}}\nStep {{step}}: {{tool_name}}({{tool_input}})\nThought: {{thought}}\nOutput: {{tool_output}}".into(),
        missed_nodes: "Question: {{question}}\nVisited: {{visited_nodes}}\nTree: {{tree}}\nReply {\"missed_nodes\": []}".into(),
        skill_adherence: "Skill:\n{{skill}}\nTrace:\n{{trace}}\nReply {\"steps\": []}".into(),
        confirmation_bias: "Q: {{question}} A: {{prediction}} (correct: {{correct}}, reference {{answer}})\n{{trace}}".into(),
        evidence_sufficiency: "Task {{task_type}}. Q: {{question}}\nEvidence:\n{{tool_outputs}}".into(),
        rubric: "Grade {{question_id}}: {{question}}\nRubric: {{rubric}}\nAnswer: {{prediction}}\nReply {\"passed\": true}".into(),
    }
}

pub(crate) fn profile() -> Profile {
    Profile::video_qa()
}

/// A trace of five steps over the three span-judged tools and one other.
pub(crate) fn trace(run: &str, qid: &str) -> Vec<TraceStep> {
    let mut steps = vec![
        fixtures::trace_step(run, qid, 1, "view_node", "root summary: a kitchen scene"),
        fixtures::trace_step(run, qid, 2, "search_similar", "hits: seg_L2_004"),
        fixtures::trace_step(run, qid, 3, "view_node", "a man opens the fridge"),
        fixtures::trace_step(run, qid, 4, "observe_frame", "frame 120: red cup on table"),
        fixtures::trace_step(run, qid, 5, "submit", ""),
    ];
    steps[1].tool_input = json!({"query": "fridge door"});
    steps[4].tool_input = serde_json::Value::Null;
    steps[4].raw_content = r#"{"answer": "B", "reflect": {"confidence": 0.8}}"#.into();
    steps
}

pub(crate) fn prediction(run: &str, qid: &str, task: &str, correct: bool) -> Prediction {
    fixtures::prediction(run, qid, task, correct)
}

/// The judge a recorded request is for (the tag without `judge.`).
pub(crate) fn judge_of(request: &RecordedRequest) -> &str {
    request
        .options
        .tag
        .as_deref()
        .unwrap_or("")
        .trim_start_matches("judge.")
}

/// A good reply for each judge.
pub(crate) fn good_reply(judge: &str) -> String {
    match judge {
        "span" => r#"{"extraction_completeness": 0.9, "hallucination_rate": 0.0, "missed_info_tags": [], "hallucination_tags": []}"#,
        "missed_nodes" => r#"{"missed_nodes": []}"#,
        "skill_adherence" => r#"{"steps": [{"step": "scan the root", "followed": true, "reason": "did"}, {"step": "verify", "followed": false, "reason": "skipped"}]}"#,
        "confirmation_bias" => r#"{"confirmation_bias": false}"#,
        "evidence_sufficiency" => r#"{"evidence_sufficient": true}"#,
        "defect_vs_lapse" => r#"{"category": "lapse", "lapse_note": "re-check the last frame"}"#,
        "reasoning_sub" => r#"{"type": "premise_error"}"#,
        other => panic!("unknown judge {other}"),
    }
    .to_owned()
}
