//! The LLM calls of `skill-evolve evolve`: reflect (edits proposed from a
//! batch of failures) and meta-reflect (which failures a candidate
//! addresses), with their prompt templates and one retry on a reply that is
//! not a JSON object.

use evolution_evolve::aggregate::Patch;
use evolution_evolve::feedback::FEEDBACK_INVALID_JSON;
use evolution_evolve::parse_llm_json;
use evolution_types::template::render as render_template;
use evolution_types::{ChatMessage, ChatOptions, LlmProvider};
use serde_json::Value;

use super::rounds::Meta;
use super::trajectories::{Trajectory, render};

const REFLECT: &str = include_str!("../../templates/reflect.md");
const META: &str = include_str!("../../templates/meta_reflect.md");

/// Asks for a JSON object; one retry with feedback when the reply is not one.
/// `None` when both replies were unusable (or the provider reported a content failure).
async fn ask_json(
    llm: &dyn LlmProvider,
    prompt: String,
    tag: &str,
    calls: &mut u32,
) -> anyhow::Result<Option<serde_json::Map<String, Value>>> {
    let options = ChatOptions::json().with_temperature(0.0).with_tag(tag);
    let mut messages = vec![ChatMessage::user(prompt)];
    for _ in 0..2 {
        *calls = calls.saturating_add(1);
        let reply = match llm.chat(&messages, &options).await {
            Ok(reply) => reply,
            Err(e) if e.is_content() => return Ok(None),
            Err(e) => return Err(anyhow::anyhow!("LLM call failed ({tag}): {e}")),
        };
        if let Some(map) = parse_llm_json(&reply.content) {
            return Ok(Some(map));
        }
        messages.push(ChatMessage::assistant(reply.content));
        messages.push(ChatMessage::user(FEEDBACK_INVALID_JSON));
    }
    Ok(None)
}

/// ② Reflect: one LLM call (and at most one retry) on a batch of failures;
/// the edits it proposes, or `None` when the reply is unusable or of the
/// wrong shape.
pub(super) async fn reflect(
    llm: &dyn LlmProvider,
    doc: &str,
    batch: &[&Trajectory],
    calls: &mut u32,
) -> anyhow::Result<Option<Patch>> {
    let n = batch.len().to_string();
    let rendered = render(batch);
    let prompt = render_template(
        REFLECT,
        &[
            ("skill_content", doc),
            ("n_trajectories", &n),
            ("trajectories", &rendered),
        ],
    );
    let Some(map) = ask_json(llm, prompt, "skill_evolve.reflect", calls).await? else {
        return Ok(None);
    };
    // A reply of the wrong shape counts as no proposal for this batch.
    Ok(serde_json::from_value::<Patch>(Value::Object(map)).ok())
}

/// ⑥ Meta-reflect: which of the `pending` failures the candidate addresses,
/// in the model's judgement (only known ids count; an id named nowhere stays
/// open). An unreadable reply gives `Meta::default()` (not judged).
pub(super) async fn meta_reflect(
    llm: &dyn LlmProvider,
    candidate: &str,
    pending: &[&Trajectory],
    calls: &mut u32,
) -> anyhow::Result<Meta> {
    let n = pending.len().to_string();
    let modes = render(pending);
    let prompt = render_template(
        META,
        &[
            ("skill_content", candidate),
            ("n_trajectories", &n),
            ("failure_modes", &modes),
        ],
    );
    let Some(map) = ask_json(llm, prompt, "skill_evolve.meta_reflect", calls).await? else {
        return Ok(Meta::default());
    };
    let known: Vec<&str> = pending.iter().map(|t| t.id.as_str()).collect();
    let addressed: Vec<String> = map
        .get("addressed")
        .and_then(Value::as_array)
        .map(|ids| {
            ids.iter()
                .filter_map(Value::as_str)
                .filter(|id| known.contains(id))
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    let mut unaddressed: Vec<(String, String)> = map
        .get("unaddressed")
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(|item| {
                    let id = item.get("id").and_then(Value::as_str).or(item.as_str())?;
                    let why = item.get("why").and_then(Value::as_str).unwrap_or_default();
                    known.contains(&id).then(|| (id.to_owned(), why.to_owned()))
                })
                .collect()
        })
        .unwrap_or_default();
    // A failure the model named in neither list is still open.
    for id in &known {
        if !addressed.iter().any(|a| a == id) && !unaddressed.iter().any(|(u, _)| u == id) {
            unaddressed.push(((*id).to_owned(), "not judged".to_owned()));
        }
    }
    let summary_text = map
        .get("summary")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    Ok(Meta {
        validation_errors: Vec::new(),
        addressed,
        unaddressed,
        summary: summary_text,
        judged: true,
    })
}
