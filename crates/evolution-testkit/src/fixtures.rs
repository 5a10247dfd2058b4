//! Builders of records with sensible defaults, for tests.

use evolution_types::{GeneratedQuestion, Prediction, TraceStep};

/// A question of `task_type` about source `video_id`.
pub fn question(question_id: &str, task_type: &str, video_id: &str) -> GeneratedQuestion {
    GeneratedQuestion {
        question_id: question_id.to_owned(),
        task_type: task_type.to_owned(),
        video_id: video_id.to_owned(),
        question: format!("question {question_id}?"),
        answer: "A".to_owned(),
        ..GeneratedQuestion::default()
    }
}

/// A prediction that stopped by submitting, after 5 of 15 steps, with confidence 0.6.
pub fn prediction(run_id: &str, question_id: &str, task_type: &str, correct: bool) -> Prediction {
    Prediction {
        run_id: run_id.to_owned(),
        question_id: question_id.to_owned(),
        task_type: task_type.to_owned(),
        video_id: "video-1".to_owned(),
        prediction: if correct { "A" } else { "B" }.to_owned(),
        answer: "A".to_owned(),
        correct,
        answer_confidence: Some(0.6),
        steps_used: 5,
        max_steps: 15,
        stop_reason: "submit".to_owned(),
        ..Prediction::default()
    }
}

/// A trace step calling `tool_name` with `tool_output`.
pub fn trace_step(
    run_id: &str,
    question_id: &str,
    step: u32,
    tool_name: &str,
    tool_output: &str,
) -> TraceStep {
    TraceStep {
        run_id: run_id.to_owned(),
        question_id: question_id.to_owned(),
        step,
        tool_name: tool_name.to_owned(),
        tool_input: serde_json::json!({ "node_id": format!("seg_L{step}_000") }),
        tool_output: tool_output.to_owned(),
        thought: format!("step {step}: look closer"),
        raw_content: String::new(),
        ..TraceStep::default()
    }
}

/// A skill document with the three frontmatter fields and `body`.
pub fn skill_document(name: &str, task_type: &str, body: &str) -> String {
    format!(
        "---\nname: {name}\ndescription: How to answer {task_type} questions.\ntask_type: {task_type}\n---\n{body}"
    )
}
