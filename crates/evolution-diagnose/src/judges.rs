//! Stage 1 LLM judges: prompt rendering, `call_judge`, the five judges and
//! `compute_question_metrics`.

use std::fmt::Write as _;

use evolution_types::template::{render_with, truncate_chars};
use evolution_types::{
    ChatMessage, ChatOptions, JsonMap, LlmProvider, Prediction, Profile, QuestionMetrics,
    SkillStepAdherence, SpanMetrics, TraceStep,
};
use futures_util::future::join_all;
use serde_json::Value;

use crate::error::{DiagnoseError, JudgeError};
use crate::json::extract_json_from_response;
use crate::prompts::DiagnosePrompts;
use crate::rules::{clamp01, extract_rule_metrics, number, question_soft_score};

/// Attempts [`call_judge`] makes before giving up (the reference implementation's `max_retries=2`).
pub const JUDGE_ATTEMPTS: u32 = 3;

/// Characters of a step's thought kept in the judges' trace text.
pub const JUDGE_THOUGHT_CHARS: usize = 100;
/// Characters of a step's tool output kept in the judges' trace text.
pub const JUDGE_OUTPUT_CHARS: usize = 200;

fn format_step(out: &mut String, step: &TraceStep, limits: Option<(usize, usize)>) {
    let (thought, output) = match limits {
        Some((t, o)) => (
            truncate_chars(&step.thought, t),
            truncate_chars(&step.tool_output, o),
        ),
        None => (step.thought.clone(), step.tool_output.clone()),
    };
    let tool = if step.tool_name.is_empty() {
        "-"
    } else {
        step.tool_name.as_str()
    };
    let _ = writeln!(out, "Step {} [{}]", step.step, tool);
    let _ = writeln!(out, "  thought: {thought}");
    if !step.tool_input.is_null() {
        let _ = writeln!(out, "  input: {}", step.tool_input);
    }
    let _ = writeln!(out, "  output: {output}");
}

/// The trace as the judges see it: one block per step, the thought cut to
/// [`JUDGE_THOUGHT_CHARS`] and the tool output to [`JUDGE_OUTPUT_CHARS`]
/// characters (the reference implementation's metrics version; each cut is marked `…[N more chars]`).
pub fn format_trace_for_judge(trace: &[TraceStep]) -> String {
    let mut out = String::new();
    for step in trace {
        format_step(
            &mut out,
            step,
            Some((JUDGE_THOUGHT_CHARS, JUDGE_OUTPUT_CHARS)),
        );
    }
    out
}

/// The trace untruncated (the reference implementation's diagnose version, used by the
/// defect-vs-lapse and reasoning classifiers).
pub fn format_trace_full(trace: &[TraceStep]) -> String {
    let mut out = String::new();
    for step in trace {
        format_step(&mut out, step, None);
    }
    out
}

/// Everything a judge may need to know about one question.
#[derive(Debug, Clone, Copy)]
pub struct JudgeContext<'a> {
    /// The prediction (question id, task type, answers, correctness).
    pub prediction: &'a Prediction,
    /// The question text.
    pub question: &'a str,
    /// The reference answer.
    pub answer: &'a str,
    /// The question's trace, in step order.
    pub trace: &'a [TraceStep],
    /// The text of the skill that served the question (empty when none).
    pub skill: &'a str,
    /// The source's tree (`tree_data[video_id]`), when known.
    pub tree: Option<&'a Value>,
    /// Domain constants.
    pub profile: &'a Profile,
}

impl JudgeContext<'_> {
    /// Outputs of every span-judged tool call, untruncated, one block each.
    fn tool_outputs(&self) -> String {
        let mut out = String::new();
        for step in self
            .trace
            .iter()
            .filter(|s| self.profile.span_eval_tools.contains(&s.tool_name))
        {
            let _ = writeln!(
                out,
                "[step {} {}] {}",
                step.step, step.tool_name, step.tool_input
            );
            let _ = writeln!(out, "{}", step.tool_output);
        }
        out
    }

    fn visited_nodes(&self) -> String {
        self.trace
            .iter()
            .filter(|s| self.profile.visit_tool.as_ref() == Some(&s.tool_name))
            .filter_map(|s| crate::rules::input_field(s, "node_id"))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The value of a placeholder shared by every question-level judge.
    fn value(&self, name: &str, full_trace: bool) -> Option<String> {
        let p = self.prediction;
        Some(match name {
            "question_id" => p.question_id.clone(),
            "task_type" => p.task_type.clone(),
            "question" => self.question.to_owned(),
            "answer" => self.answer.to_owned(),
            "prediction" => p.prediction.clone(),
            "correct" => if p.correct { "true" } else { "false" }.to_owned(),
            "trace" if full_trace => format_trace_full(self.trace),
            "trace" => format_trace_for_judge(self.trace),
            "tool_outputs" => self.tool_outputs(),
            "visited_nodes" => self.visited_nodes(),
            "tree" => self
                .tree
                .map(|t| serde_json::to_string_pretty(t).unwrap_or_default())
                .unwrap_or_default(),
            "skill" => self.skill.to_owned(),
            _ => return None,
        })
    }

    /// Renders a question-level judge template (judge trace format).
    pub fn render(&self, template: &str) -> String {
        render_with(template, |name| self.value(name, false))
    }

    /// Renders a template with the full trace and extra placeholders.
    pub(crate) fn render_full(&self, template: &str, extra: &[(&'static str, String)]) -> String {
        render_with(template, |name| {
            extra
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.clone())
                .or_else(|| self.value(name, true))
        })
    }

    /// Renders the span judge's system and user prompts for one step.
    pub fn render_span(&self, prompts: &DiagnosePrompts, step: &TraceStep) -> [ChatMessage; 2] {
        let resolve = |name: &str| match name {
            "step" => Some(step.step.to_string()),
            "tool_name" => Some(step.tool_name.clone()),
            "tool_input" => Some(step.tool_input.to_string()),
            "tool_output" => Some(step.tool_output.clone()),
            "thought" => Some(step.thought.clone()),
            other => self.value(other, false),
        };
        [
            ChatMessage::system(render_with(&prompts.span_eval_system, &resolve)),
            ChatMessage::user(render_with(&prompts.span_eval_user, &resolve)),
        ]
    }
}

/// Options of every judge call: JSON mode, temperature 0, tagged `judge.<name>`.
pub fn judge_options(name: &str) -> ChatOptions {
    ChatOptions::json()
        .with_temperature(0.0)
        .with_tag(format!("judge.{name}"))
}

/// Calls a judge and reads its verdict, retrying unusable replies.
///
/// Makes up to [`JUDGE_ATTEMPTS`] calls. A reply with no JSON object, or
/// one that `interpret` rejects, or an [`evolution_types::LlmError`] of
/// class `Content`, is retried; any other provider error is returned at once
/// as [`JudgeError::Provider`] (the adapters already retried transient ones).
pub async fn call_judge<T>(
    llm: &dyn LlmProvider,
    messages: &[ChatMessage],
    options: &ChatOptions,
    interpret: impl Fn(&JsonMap) -> Result<T, String>,
) -> Result<T, JudgeError> {
    let mut last = String::new();
    for attempt in 1..=JUDGE_ATTEMPTS {
        match llm.chat(messages, options).await {
            Ok(response) => match extract_json_from_response(&response.content) {
                Ok(object) => match interpret(&object) {
                    Ok(verdict) => return Ok(verdict),
                    Err(why) => last = why,
                },
                Err(e) => last = e.to_string(),
            },
            Err(e) if e.is_content() => last = e.to_string(),
            Err(e) => return Err(JudgeError::Provider(e)),
        }
        tracing::debug!(attempt, tag = ?options.tag, reason = %last, "judge reply unusable");
    }
    Err(JudgeError::Unparseable {
        tag: options.tag.clone().unwrap_or_default(),
        attempts: JUDGE_ATTEMPTS,
        last,
    })
}

/// A list of strings from a JSON value: strings kept, other scalars
/// rendered, anything but an array gives an empty list.
fn string_list(value: Option<&Value>) -> Vec<String> {
    match value {
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(|v| match v {
                Value::String(s) => Some(s.clone()),
                Value::Null => None,
                other => Some(other.to_string()),
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// A boolean from `true`/`false`, `"yes"`/`"no"`, `"true"`/`"false"` or 1/0.
pub(crate) fn boolean(value: &Value) -> Option<bool> {
    match value {
        Value::Bool(b) => Some(*b),
        Value::Number(n) => n.as_f64().map(|x| x != 0.0),
        Value::String(s) => match s.trim().to_lowercase().as_str() {
            "true" | "yes" | "y" | "1" | "是" => Some(true),
            "false" | "no" | "n" | "0" | "否" => Some(false),
            _ => None,
        },
        _ => None,
    }
}

fn required_bool(object: &JsonMap, key: &str) -> Result<bool, String> {
    object
        .get(key)
        .and_then(boolean)
        .ok_or_else(|| format!("reply lacks a boolean `{key}`"))
}

/// Span judge: how completely and faithfully the agent used one tool output.
///
/// Missing scores default to 0.0 and are clamped to `[0, 1]`; tags that are
/// not a list become empty lists.
pub async fn evaluate_span(
    llm: &dyn LlmProvider,
    prompts: &DiagnosePrompts,
    ctx: &JudgeContext<'_>,
    step: &TraceStep,
) -> Result<SpanMetrics, JudgeError> {
    let messages = ctx.render_span(prompts, step);
    call_judge(llm, &messages, &judge_options("span"), |o| {
        Ok(SpanMetrics {
            step: step.step,
            tool_name: step.tool_name.clone(),
            extraction_completeness: clamp01(
                o.get("extraction_completeness")
                    .and_then(number)
                    .unwrap_or(0.0),
            ),
            hallucination_rate: clamp01(
                o.get("hallucination_rate").and_then(number).unwrap_or(0.0),
            ),
            missed_info_tags: string_list(o.get("missed_info_tags")),
            hallucination_tags: string_list(o.get("hallucination_tags")),
        })
    })
    .await
}

/// Missed-nodes judge: nodes the agent should have visited (`[]` when the
/// reply's `missed_nodes` is not a list).
pub async fn judge_missed_nodes(
    llm: &dyn LlmProvider,
    prompts: &DiagnosePrompts,
    ctx: &JudgeContext<'_>,
) -> Result<Vec<String>, JudgeError> {
    let messages = [ChatMessage::user(ctx.render(&prompts.missed_nodes))];
    call_judge(llm, &messages, &judge_options("missed_nodes"), |o| {
        Ok(string_list(o.get("missed_nodes")))
    })
    .await
}

/// Skill-adherence judge: per-step adherence and the share followed.
///
/// The rate is computed from `steps` when the reply lists any, else taken
/// from a numeric `adherence_rate`, else `None`.
pub async fn judge_skill_adherence(
    llm: &dyn LlmProvider,
    prompts: &DiagnosePrompts,
    ctx: &JudgeContext<'_>,
) -> Result<(Vec<SkillStepAdherence>, Option<f64>), JudgeError> {
    let messages = [ChatMessage::user(ctx.render(&prompts.skill_adherence))];
    call_judge(llm, &messages, &judge_options("skill_adherence"), |o| {
        let steps: Vec<SkillStepAdherence> = match o.get("steps") {
            Some(Value::Array(items)) => items
                .iter()
                .filter_map(|item| {
                    let item = item.as_object()?;
                    Some(SkillStepAdherence {
                        step: match item.get("step") {
                            Some(Value::String(s)) => s.clone(),
                            Some(other) => other.to_string(),
                            None => String::new(),
                        },
                        followed: item.get("followed").and_then(boolean)?,
                        reason: item
                            .get("reason")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_owned(),
                    })
                })
                .collect(),
            _ => Vec::new(),
        };
        let rate = if steps.is_empty() {
            o.get("adherence_rate").and_then(number).map(clamp01)
        } else {
            Some(crate::rules::ratio(
                steps.iter().filter(|s| s.followed).count(),
                steps.len(),
            ))
        };
        Ok((steps, rate))
    })
    .await
}

/// Confirmation-bias judge: `{"confirmation_bias": bool}` (a missing or
/// non-boolean field is an unusable reply).
pub async fn judge_confirmation_bias(
    llm: &dyn LlmProvider,
    prompts: &DiagnosePrompts,
    ctx: &JudgeContext<'_>,
) -> Result<bool, JudgeError> {
    let messages = [ChatMessage::user(ctx.render(&prompts.confirmation_bias))];
    call_judge(llm, &messages, &judge_options("confirmation_bias"), |o| {
        required_bool(o, "confirmation_bias")
    })
    .await
}

/// Evidence-sufficiency judge: `{"evidence_sufficient": bool}`.
pub async fn judge_evidence_sufficiency(
    llm: &dyn LlmProvider,
    prompts: &DiagnosePrompts,
    ctx: &JudgeContext<'_>,
) -> Result<bool, JudgeError> {
    let messages = [ChatMessage::user(ctx.render(&prompts.evidence_sufficiency))];
    call_judge(
        llm,
        &messages,
        &judge_options("evidence_sufficiency"),
        |o| required_bool(o, "evidence_sufficient"),
    )
    .await
}

/// Which of the question-level judges run on one answer (a judge left out leaves its
/// metric unjudged: `None`, or an empty list).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JudgeSet {
    /// One span judge per call of a span-judged tool.
    pub spans: bool,
    /// The missed-nodes judge (it also needs a visit tool or a known tree).
    pub missed_nodes: bool,
    /// The skill-adherence judge.
    pub skill_adherence: bool,
    /// The confirmation-bias judge.
    pub confirmation_bias: bool,
    /// The evidence-sufficiency judge.
    pub evidence_sufficiency: bool,
}

impl JudgeSet {
    /// Every judge.
    pub const ALL: JudgeSet = JudgeSet {
        spans: true,
        missed_nodes: true,
        skill_adherence: true,
        confirmation_bias: true,
        evidence_sufficiency: true,
    };
}

/// All Stage-1 metrics of one question: the rule metrics plus the five judges
/// ([`compute_question_metrics_with`] every judge of [`JudgeSet::ALL`]).
pub async fn compute_question_metrics(
    llm: &dyn LlmProvider,
    prompts: &DiagnosePrompts,
    ctx: &JudgeContext<'_>,
) -> Result<QuestionMetrics, DiagnoseError> {
    compute_question_metrics_with(llm, prompts, ctx, JudgeSet::ALL).await
}

/// The Stage-1 metrics of one question: the rule metrics plus the judges of `judges`.
///
/// The judges run concurrently (one span judge per call of a span-judged
/// tool; the missed-nodes judge only when the profile names a visit tool or
/// the source's tree is known). If any judge's replies stay unusable, the question is degraded:
/// rule metrics kept, judge fields empty, `degraded = true`. A provider
/// error is returned as [`DiagnoseError::Llm`].
pub async fn compute_question_metrics_with(
    llm: &dyn LlmProvider,
    prompts: &DiagnosePrompts,
    ctx: &JudgeContext<'_>,
    judges: JudgeSet,
) -> Result<QuestionMetrics, DiagnoseError> {
    let rules = extract_rule_metrics(ctx.prediction, ctx.trace, ctx.profile)?;
    let spans = join_all(
        ctx.trace
            .iter()
            .filter(|s| judges.spans && ctx.profile.span_eval_tools.contains(&s.tool_name))
            .map(|s| evaluate_span(llm, prompts, ctx, s)),
    );
    // Which nodes were missed means something only for an agent that visits
    // nodes, or a source whose tree is known.
    let missed = async {
        if judges.missed_nodes && (ctx.profile.visit_tool.is_some() || ctx.tree.is_some()) {
            judge_missed_nodes(llm, prompts, ctx).await
        } else {
            Ok(Vec::new())
        }
    };
    let adherence = async {
        if judges.skill_adherence {
            judge_skill_adherence(llm, prompts, ctx).await
        } else {
            Ok((Vec::new(), None))
        }
    };
    let bias = async {
        if judges.confirmation_bias {
            judge_confirmation_bias(llm, prompts, ctx).await.map(Some)
        } else {
            Ok(None)
        }
    };
    let sufficient = async {
        if judges.evidence_sufficiency {
            judge_evidence_sufficiency(llm, prompts, ctx)
                .await
                .map(Some)
        } else {
            Ok(None)
        }
    };
    let (spans, missed, adherence, bias, sufficient) =
        futures_util::future::join5(spans, missed, adherence, bias, sufficient).await;
    // A provider error wins over unusable replies: it aborts rather than degrades.
    let provider_error = spans
        .iter()
        .filter_map(|r| r.as_ref().err())
        .chain(missed.as_ref().err())
        .chain(adherence.as_ref().err())
        .chain(bias.as_ref().err())
        .chain(sufficient.as_ref().err())
        .find_map(|e| match e {
            JudgeError::Provider(e) => Some(e.clone()),
            JudgeError::Unparseable { .. } => None,
        });
    if let Some(e) = provider_error {
        return Err(DiagnoseError::Llm(e));
    }
    let spans: Result<Vec<SpanMetrics>, JudgeError> = spans.into_iter().collect();
    let verdicts = (|| Ok::<_, JudgeError>((spans?, missed?, adherence?, bias?, sufficient?)))();
    match verdicts {
        Ok((span_metrics, missed_nodes, (skill_adherence, adherence_rate), bias, sufficient)) => {
            let mut metrics = rules;
            metrics.soft_score = question_soft_score(&span_metrics);
            metrics.span_metrics = span_metrics;
            metrics.missed_nodes = missed_nodes;
            metrics.skill_adherence = skill_adherence;
            metrics.adherence_rate = adherence_rate;
            metrics.confirmation_bias = bias;
            metrics.evidence_sufficient = sufficient;
            Ok(metrics)
        }
        Err(JudgeError::Provider(e)) => Err(DiagnoseError::Llm(e)),
        Err(e @ JudgeError::Unparseable { .. }) => {
            tracing::warn!(question_id = %ctx.prediction.question_id, error = %e, "judges failed; degraded metrics");
            Ok(QuestionMetrics {
                degraded: true,
                ..rules
            })
        }
    }
}
