//! The reflect → meta-reflect loop on one skill document, from its failure
//! trajectories: no I/O but the LLM.
//!
//! Each round: reflect on the open failures batch by batch (one LLM call per
//! batch, `reflect` template: suggestions and edits) → aggregate
//! ([`aggregate_patches`]) → select ([`rank_and_clip`] to the round's budget
//! from the schedule) → update ([`apply_patch_with_report`], frontmatter and
//! protected regions untouched) → meta-reflect ([`validate_skill`], then an
//! LLM check, `meta_reflect` template, of which failures the candidate
//! addresses). Rounds repeat on the failures still open and stop early when
//! every failure is addressed, when a round proposes the same edits as the
//! one before, or when a round does not reduce the open failures; each way
//! of stopping is a [`StopReason`].
//!
//! # Prompt templates
//!
//! [`ReflectPrompts::builtin`] are this crate's `prompts/reflect.md` and
//! `prompts/meta_reflect.md` (`{{name}}` placeholders):
//!
//! | template | placeholders |
//! |---|---|
//! | `reflect` | `skill_content`, `n_trajectories`, `trajectories`, `preferences` |
//! | `meta_reflect` | `skill_content`, `n_trajectories`, `failure_modes`, `preferences` |
//!
//! `preferences` is the project's house rules ([`crate::preferences`]), empty without them;
//! a template that does not use it gets them appended. A round whose candidate breaks one of
//! their checks is dropped like one that fails validation ([`StopReason::BreaksPreferences`]).
//!
//! Replies: `reflect` gives `{"suggestions": [...], "edits": [edit, ...]}`
//! (an [`aggregate::Patch`](crate::aggregate::Patch)); `meta_reflect` gives
//! `{"addressed": [id, ...], "unaddressed": [{"id": ..., "why": ...}, ...],
//! "summary": "..."}`. A reply that is not a JSON object is retried once
//! with [`FEEDBACK_INVALID_JSON`].

use evolution_patch::apply_patch_with_report;
use evolution_types::template::TemplateSpec;
use evolution_types::{ChatMessage, ChatOptions, Edit, EditReport, LlmError, LlmProvider};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::aggregate::{Patch, aggregate_patches};
use crate::budget::EditBudgetSchedule;
use crate::error::BudgetError;
use crate::feedback::FEEDBACK_INVALID_JSON;
use crate::json::parse_llm_json;
use crate::preferences::{Breach, Checks, Preferences, render_with_preferences};
use crate::prompts::EvolvePrompts;
use crate::rank::rank_and_clip;
use crate::validate::{placeholder_echo, prompt_example_texts, validate_skill};

/// One failed trajectory, as the prompts show it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Failure {
    /// Unique id.
    pub id: String,
    /// What the agent was asked to do.
    pub task_description: String,
    /// The question or user message.
    pub question: String,
    /// Why it failed.
    pub fail_reason: String,
    /// What the agent answered.
    pub predicted_answer: String,
    /// The expected answer.
    pub reference_text: String,
    /// What the user said about it.
    pub feedback: String,
}

/// The loop's two templates. [`Default`] is [`ReflectPrompts::builtin`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReflectPrompts {
    /// Proposes edits from a batch of failures.
    pub reflect: String,
    /// Judges which failures a candidate addresses.
    pub meta_reflect: String,
    /// The project's house rules as both templates carry them
    /// ([`Preferences::prompt_section`], in `{{preferences}}` or appended); empty without
    /// preferences (the default).
    #[serde(default)]
    pub preferences: String,
}

impl ReflectPrompts {
    /// Both templates, in field order, with the placeholders the loop fills
    /// and their built-in text.
    pub const TEMPLATES: [TemplateSpec; 2] = [
        TemplateSpec {
            name: "reflect",
            placeholders: &[
                "skill_content",
                "n_trajectories",
                "trajectories",
                "preferences",
            ],
            builtin: include_str!("../prompts/reflect.md"),
        },
        TemplateSpec {
            name: "meta_reflect",
            placeholders: &[
                "skill_content",
                "n_trajectories",
                "failure_modes",
                "preferences",
            ],
            builtin: include_str!("../prompts/meta_reflect.md"),
        },
    ];

    /// The built-in templates (English, `{{name}}` placeholders).
    #[must_use]
    pub fn builtin() -> Self {
        let [reflect, meta_reflect] = Self::TEMPLATES.map(|t| t.builtin.to_owned());
        ReflectPrompts {
            reflect,
            meta_reflect,
            preferences: String::new(),
        }
    }

    /// The same templates, carrying the house rules `preferences` (in place of any before).
    #[must_use]
    pub fn with_preferences(mut self, preferences: &Preferences) -> Self {
        self.preferences = preferences.prompt_section();
        self
    }

    /// The text of template `name`, if the bundle has one of that name.
    #[must_use]
    pub fn get(&self, name: &str) -> Option<&str> {
        Some(match name {
            "reflect" => &self.reflect,
            "meta_reflect" => &self.meta_reflect,
            _ => return None,
        })
    }

    /// The text of template `name`, to replace it.
    pub fn get_mut(&mut self, name: &str) -> Option<&mut String> {
        Some(match name {
            "reflect" => &mut self.reflect,
            "meta_reflect" => &mut self.meta_reflect,
            _ => return None,
        })
    }
}

impl Default for ReflectPrompts {
    fn default() -> Self {
        Self::builtin()
    }
}

/// How the loop runs.
#[derive(Debug, Clone)]
pub struct ReflectOptions {
    /// Rounds at most.
    pub rounds: u32,
    /// Failures per reflect call (0 counts as 1).
    pub batch_size: usize,
    /// The edit budget over the rounds.
    pub schedule: EditBudgetSchedule,
    /// The templates of the ranking step ([`rank_and_clip`]).
    pub rank_prompts: EvolvePrompts,
    /// The project's checks: a round whose candidate breaks one (judged against the
    /// original document, what the session would offer) is dropped and the rounds stop
    /// ([`StopReason::BreaksPreferences`]). [`Checks::default`] checks nothing.
    pub checks: Checks,
}

/// Why the loop failed (content problems never fail it).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ReflectError {
    /// A reflect or meta-reflect call failed (a content failure does not count).
    #[error("LLM call failed ({tag}): {source}")]
    Llm {
        /// The request's tag.
        tag: String,
        /// The provider's error.
        #[source]
        source: LlmError,
    },
    /// The ranking call failed.
    #[error("LLM call failed while ranking edits: {0}")]
    Rank(#[source] LlmError),
    /// The schedule cannot give a round its budget.
    #[error(transparent)]
    Budget(#[from] BudgetError),
}

/// Why the rounds stopped (`round` counts from 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub enum StopReason {
    /// The reflection's replies were read and proposed no edit.
    NoEdit {
        /// The round.
        round: u32,
    },
    /// No edit was read because a reflection reply could not be read (not JSON after a
    /// retry, an object of the wrong shape, or a reply the provider reported unusable).
    UnreadableReply {
        /// The round.
        round: u32,
        /// Reflection batches whose reply could not be read.
        batches: usize,
    },
    /// The round proposed the same edits as the one before.
    SameEdits {
        /// The round.
        round: u32,
    },
    /// No proposed edit could be applied.
    NothingApplied {
        /// The round.
        round: u32,
    },
    /// Every proposed edit repeated the reply format's example text (see
    /// [`placeholder_echo`]) and was dropped.
    PlaceholderEdits {
        /// The round.
        round: u32,
        /// Edits dropped.
        dropped: usize,
    },
    /// The candidate failed structural validation and was dropped.
    FailedValidation {
        /// The round.
        round: u32,
    },
    /// The candidate broke a check of the project's preferences and was dropped (the
    /// round's [`Round::breaches`] say which).
    BreaksPreferences {
        /// The round.
        round: u32,
    },
    /// The meta-reflection's reply could not be read; the candidate is kept.
    Unjudged {
        /// The round.
        round: u32,
    },
    /// The meta-reflection finds every known failure addressed.
    AllAddressed {
        /// The round.
        round: u32,
    },
    /// The round did not reduce the open failures.
    NoProgress {
        /// The round.
        round: u32,
        /// Failures still open.
        open: usize,
    },
    /// Every round ran.
    RoundsExhausted {
        /// The rounds run.
        rounds: u32,
    },
}

impl std::fmt::Display for StopReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            StopReason::NoEdit { round } => {
                write!(f, "round {round}: the reflection proposed no edit")
            }
            StopReason::UnreadableReply { round, batches } => write!(
                f,
                "round {round}: the reflection's reply could not be read \
                 (skill_evolve.reflect, {batches} batch(es)); no edit was taken from it"
            ),
            StopReason::SameEdits { round } => write!(
                f,
                "round {round} proposed the same edits as round {}",
                round.saturating_sub(1)
            ),
            StopReason::NothingApplied { round } => {
                write!(f, "round {round}: no proposed edit could be applied")
            }
            StopReason::PlaceholderEdits { round, dropped } => write!(
                f,
                "round {round}: all {dropped} proposed edit(s) repeated the prompt's example \
                 text instead of changing the skill, so none was used"
            ),
            StopReason::FailedValidation { round } => write!(
                f,
                "round {round}: the candidate failed structural validation and was dropped"
            ),
            StopReason::BreaksPreferences { round } => write!(
                f,
                "round {round}: the candidate breaks the project's preferences and was dropped"
            ),
            StopReason::Unjudged { round } => write!(
                f,
                "round {round}: the meta-reflection reply could not be read; stopping with \
                 this candidate"
            ),
            StopReason::AllAddressed { round } => write!(
                f,
                "round {round}: the meta-reflection finds every known failure addressed"
            ),
            StopReason::NoProgress { round, open } => write!(
                f,
                "round {round} did not reduce the open failures ({open} still open)"
            ),
            StopReason::RoundsExhausted { rounds } => write!(f, "ran all {rounds} rounds"),
        }
    }
}

/// The trajectories as the prompts show them, long fields cut visibly.
pub fn render_failures(trajectories: &[&Failure]) -> String {
    const MAX: usize = 1500;
    let cut = |text: &str| -> String {
        let text = text.trim();
        let n = text.chars().count();
        if n > MAX {
            let head: String = text.chars().take(MAX).collect();
            format!("{head} […{} more characters]", n.saturating_sub(MAX))
        } else {
            text.to_owned()
        }
    };
    let mut out = String::new();
    for t in trajectories {
        out.push_str(&format!("### Trajectory `{}`\n", t.id));
        for (label, value) in [
            ("task", &t.task_description),
            ("question", &t.question),
            ("agent answered", &t.predicted_answer),
            ("expected", &t.reference_text),
            ("why it failed", &t.fail_reason),
            ("user feedback", &t.feedback),
        ] {
            if !value.trim().is_empty() {
                out.push_str(&format!("- {label}: {}\n", cut(value)));
            }
        }
        out.push('\n');
    }
    out
}

/// The meta-reflection's judgement of a candidate.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Meta {
    /// Structural validation errors (empty: passed).
    pub validation_errors: Vec<String>,
    /// Ids of the failures the candidate addresses.
    pub addressed: Vec<String>,
    /// Failures still open, with what is missing.
    pub unaddressed: Vec<(String, String)>,
    /// The model's one-sentence summary.
    pub summary: String,
    /// False when the reply could not be read.
    pub judged: bool,
}

/// One round of the loop.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Round {
    /// The round, from 1.
    pub round: u32,
    /// Its edit budget (`None`: no limit).
    pub budget: Option<usize>,
    /// Failures it reflected on.
    pub trajectories: usize,
    /// Edits proposed after aggregation.
    pub proposed: usize,
    /// Proposed edits dropped before selection, one sentence each on why (an edit that
    /// repeats the prompt's example text, see [`placeholder_echo`]).
    pub dropped: Vec<String>,
    /// Edits kept by ranking and clipping.
    pub selected: Vec<Edit>,
    /// How they were selected.
    pub clip: serde_json::Map<String, Value>,
    /// What applying each selected edit did.
    pub reports: Vec<EditReport>,
    /// The meta-reflection's judgement.
    pub meta: Meta,
    /// The checks of the project's preferences the candidate broke (empty: none; the
    /// candidate was then dropped).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub breaches: Vec<Breach>,
    /// Whether the candidate became the next round's document.
    pub accepted: bool,
}

/// What the loop did.
#[derive(Debug, Clone, PartialEq)]
pub struct Reflection {
    /// The last accepted candidate (the original when none).
    pub document: String,
    /// The rounds, in order.
    pub rounds: Vec<Round>,
    /// Why they stopped.
    pub stop: StopReason,
    /// LLM calls made (retries included).
    pub llm_calls: u32,
}

/// The rounds on `original`: returns the last accepted candidate (the
/// original when none) and what the rounds did. `progress` hears a short
/// line at each step (which round, which batch).
///
/// # Errors
///
/// [`ReflectError`] when the provider fails (not for a content failure or
/// an unreadable reply: those count as no proposal, or an unjudged
/// candidate) or the schedule cannot give a round its budget.
pub async fn reflect_loop(
    llm: &dyn LlmProvider,
    prompts: &ReflectPrompts,
    original: &str,
    failures: &[Failure],
    options: &ReflectOptions,
    progress: &(dyn Fn(&str) + Send + Sync),
) -> Result<Reflection, ReflectError> {
    let mut llm_calls = 0_u32;
    let mut rounds = Vec::new();
    let mut doc = original.to_owned();
    let mut pending: Vec<&Failure> = failures.iter().collect();
    let mut previous_edits: Option<Vec<(String, String, String)>> = None;
    let mut previous_open = usize::MAX;
    let total_steps = u64::from(options.rounds.saturating_sub(1));
    let batch = options.batch_size.max(1);
    let examples = prompt_example_texts(&prompts.reflect);
    let mut stop = None;
    for round in 0..options.rounds {
        let number = round.saturating_add(1);
        let budget = options.schedule.budget_at(u64::from(round), total_steps)?;
        // ② Reflect, batch by batch.
        let mut patches = Vec::new();
        let mut unreadable = 0_usize;
        let n_batches = pending.len().div_ceil(batch);
        for (i, chunk) in pending.chunks(batch).enumerate() {
            progress(&format!(
                "round {number}: reflecting on batch {}/{n_batches}",
                i.saturating_add(1)
            ));
            match reflect(llm, &doc, prompts, chunk, &mut llm_calls).await? {
                Some(patch) => patches.push(patch),
                None => unreadable = unreadable.saturating_add(1),
            }
        }
        // ③ Aggregate.
        let mut merged = aggregate_patches(&patches);
        let proposed = merged.edits.len();
        // An edit that copies the reply format's example text is no edit.
        let mut dropped = Vec::new();
        merged
            .edits
            .retain(|edit| match placeholder_echo(edit, &examples) {
                Some(why) => {
                    dropped.push(why);
                    false
                }
                None => true,
            });
        if proposed > 0 && merged.edits.is_empty() {
            rounds.push(Round {
                round: number,
                budget,
                trajectories: pending.len(),
                proposed,
                dropped,
                selected: Vec::new(),
                clip: serde_json::Map::new(),
                reports: Vec::new(),
                meta: Meta::default(),
                breaches: Vec::new(),
                accepted: false,
            });
            stop = Some(StopReason::PlaceholderEdits {
                round: number,
                dropped: proposed,
            });
            break;
        }
        if proposed == 0 {
            // Say "no edit" only when every reply was read: an unreadable one may have held some.
            stop = Some(if unreadable > 0 {
                StopReason::UnreadableReply {
                    round: number,
                    batches: unreadable,
                }
            } else {
                StopReason::NoEdit { round: number }
            });
            break;
        }
        let key: Vec<(String, String, String)> = merged
            .edits
            .iter()
            .map(|e| {
                (
                    e.op.to_string(),
                    e.target.clone(),
                    e.content.trim().to_owned(),
                )
            })
            .collect();
        if previous_edits.as_ref() == Some(&key) {
            stop = Some(StopReason::SameEdits { round: number });
            break;
        }
        // ④ Select.
        progress(&format!("round {number}: selecting edits"));
        let clip = rank_and_clip(
            llm,
            &options.rank_prompts,
            &doc,
            merged.edits,
            budget.unwrap_or(usize::MAX),
        )
        .await
        .map_err(ReflectError::Rank)?;
        llm_calls = llm_calls.saturating_add(clip.llm_calls);
        // ⑤ Update, with the frontmatter protected as well as the regions.
        let front = frontmatter_block(&doc);
        let spans: Vec<&str> = front.into_iter().collect();
        let (candidate, reports) = apply_patch_with_report(&doc, &clip.edits, &spans);
        let mut record = Round {
            round: number,
            budget,
            trajectories: pending.len(),
            proposed,
            dropped,
            selected: clip.edits,
            clip: clip.info,
            reports,
            meta: Meta::default(),
            breaches: Vec::new(),
            accepted: false,
        };
        if candidate == doc {
            rounds.push(record);
            stop = Some(StopReason::NothingApplied { round: number });
            break;
        }
        // ⑥ Meta-reflect: structure first, then the LLM's judgement.
        let validation = validate_skill(original, &candidate);
        if !validation.passed() {
            record.meta.validation_errors = validation.errors;
            rounds.push(record);
            stop = Some(StopReason::FailedValidation { round: number });
            break;
        }
        // The house rules, on what the session would offer: the original against this
        // candidate, so growth is counted over every round.
        let breaches = options.checks.evaluate(original, &candidate);
        if !breaches.is_empty() {
            record.breaches = breaches;
            rounds.push(record);
            stop = Some(StopReason::BreaksPreferences { round: number });
            break;
        }
        progress(&format!("round {number}: meta-reflecting"));
        record.meta = meta_reflect(llm, &candidate, prompts, &pending, &mut llm_calls).await?;
        record.accepted = true;
        doc = candidate;
        let open = record.meta.unaddressed.len();
        let judged = record.meta.judged;
        let open_ids: Vec<String> = record
            .meta
            .unaddressed
            .iter()
            .map(|(id, _)| id.clone())
            .collect();
        rounds.push(record);
        if !judged {
            stop = Some(StopReason::Unjudged { round: number });
            break;
        }
        if open == 0 {
            stop = Some(StopReason::AllAddressed { round: number });
            break;
        }
        if open >= previous_open {
            stop = Some(StopReason::NoProgress {
                round: number,
                open,
            });
            break;
        }
        previous_open = open;
        previous_edits = Some(key);
        let still: Vec<&Failure> = pending
            .iter()
            .copied()
            .filter(|t| open_ids.contains(&t.id))
            .collect();
        if !still.is_empty() {
            pending = still;
        }
    }
    Ok(Reflection {
        document: doc,
        rounds,
        stop: stop.unwrap_or(StopReason::RoundsExhausted {
            rounds: options.rounds,
        }),
        llm_calls,
    })
}

/// The frontmatter block (`---` … `---`) at the start of `doc`, if any.
fn frontmatter_block(doc: &str) -> Option<&str> {
    let first_break = doc.find('\n')?;
    if doc.get(..first_break)?.trim_end_matches('\r') != "---" {
        return None;
    }
    let mut offset = first_break.saturating_add(1);
    for line in doc.get(offset..)?.split_inclusive('\n') {
        let bare = line.trim_end_matches(['\r', '\n']);
        if bare == "---" {
            return doc.get(..offset.saturating_add(bare.len()));
        }
        offset = offset.saturating_add(line.len());
    }
    None
}

/// Asks for a JSON object; one retry with feedback when the reply is not one.
/// `None` when both replies were unusable (or the provider reported a content failure).
async fn ask_json(
    llm: &dyn LlmProvider,
    prompt: String,
    tag: &str,
    calls: &mut u32,
) -> Result<Option<serde_json::Map<String, Value>>, ReflectError> {
    let options = ChatOptions::json().with_temperature(0.0).with_tag(tag);
    let mut messages = vec![ChatMessage::user(prompt)];
    for _ in 0..2 {
        *calls = calls.saturating_add(1);
        let reply = match llm.chat(&messages, &options).await {
            Ok(reply) => reply,
            Err(e) if e.is_content() => return Ok(None),
            Err(source) => {
                return Err(ReflectError::Llm {
                    tag: tag.to_owned(),
                    source,
                });
            }
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
async fn reflect(
    llm: &dyn LlmProvider,
    doc: &str,
    prompts: &ReflectPrompts,
    batch: &[&Failure],
    calls: &mut u32,
) -> Result<Option<Patch>, ReflectError> {
    let n = batch.len().to_string();
    let rendered = render_failures(batch);
    let prompt = render_with_preferences(
        &prompts.reflect,
        &[
            ("skill_content", doc),
            ("n_trajectories", &n),
            ("trajectories", &rendered),
        ],
        &prompts.preferences,
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
async fn meta_reflect(
    llm: &dyn LlmProvider,
    candidate: &str,
    prompts: &ReflectPrompts,
    pending: &[&Failure],
    calls: &mut u32,
) -> Result<Meta, ReflectError> {
    let n = pending.len().to_string();
    let modes = render_failures(pending);
    let prompt = render_with_preferences(
        &prompts.meta_reflect,
        &[
            ("skill_content", candidate),
            ("n_trajectories", &n),
            ("failure_modes", &modes),
        ],
        &prompts.preferences,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frontmatter_block_is_found_only_at_the_start() {
        assert_eq!(
            frontmatter_block("---\nname: notes\ndescription: Release notes.\n---\n\n# Notes\n"),
            Some("---\nname: notes\ndescription: Release notes.\n---")
        );
        assert_eq!(frontmatter_block("# T\n---\na\n---\n"), None);
        assert_eq!(frontmatter_block("---\nunclosed\n"), None);
    }

    #[test]
    fn builtin_prompts_use_exactly_their_declared_placeholders() {
        use evolution_types::template::{check, placeholders};
        assert_eq!(ReflectPrompts::default(), ReflectPrompts::builtin());
        for spec in ReflectPrompts::TEMPLATES {
            assert_eq!(
                check(spec.builtin, spec.placeholders),
                Ok(()),
                "{}",
                spec.name
            );
            assert_eq!(
                placeholders(spec.builtin).len(),
                spec.placeholders.len(),
                "{}",
                spec.name
            );
        }
    }
}
