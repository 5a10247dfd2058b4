//! The follow-up judge: an LLM reads the user's follow-up messages of a session (each after the
//! end of the agent's answer before it) and says whether the user was correcting the agent —
//! `correction`, `satisfied` or `unclear` — quoting the words that decide it.
//!
//! The prompt is the built-in template [`FOLLOWUP_JUDGE`] (`prompts/followup_judge.md`), filled
//! with the session's first request and its follow-ups, each cut to a size
//! ([`MAX_REQUEST_CHARS`], [`MAX_ANSWER_CHARS`], [`MAX_FOLLOWUP_CHARS`], the last
//! [`MAX_FOLLOWUPS`] follow-ups). Every text comes from a [`Session`], already redacted by its
//! reader. The reply is asked for as one JSON object under [`reply_schema`]
//! (`{"verdict": "correction" | "satisfied" | "unclear", "evidence": "…"}`) and treated as
//! untrusted: cut to [`MAX_REPLY_CHARS`] before it is read, read leniently (a fenced block,
//! the outermost braces or a repaired object; a verdict in any case, with spaces), and a
//! reply that cannot be read, or names no known verdict, is `unclear`. The evidence is
//! redacted again, put on one line without control characters, and cut to
//! [`MAX_EVIDENCE_CHARS`].
//!
//! Nothing here calls a model on its own or remembers a verdict: the caller passes the
//! provider ([`judge_followups`]) and keeps the verdicts (the `harvest` command caches them by
//! [`cache_key`]).

use evolution_diagnose::json::extract_json_from_response;
use evolution_types::template::{TemplateSpec, render, truncate_chars};
use evolution_types::{ChatMessage, ChatOptions, LlmError, LlmProvider};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::Digest as _;

use crate::redact::Redactor;
use crate::session::{Role, Session};

/// The judge's built-in prompt: `{{request}}` is the first request, `{{followups}}` the
/// follow-ups with the end of the answer before each.
pub const FOLLOWUP_JUDGE: TemplateSpec = TemplateSpec {
    name: "followup_judge",
    placeholders: &["request", "followups"],
    builtin: include_str!("../prompts/followup_judge.md"),
};

/// Most characters of the first request shown to the judge.
pub const MAX_REQUEST_CHARS: usize = 1_000;
/// Most characters of the end of an answer shown before a follow-up.
pub const MAX_ANSWER_CHARS: usize = 500;
/// Most characters of one follow-up shown to the judge.
pub const MAX_FOLLOWUP_CHARS: usize = 1_000;
/// Most follow-ups shown (the last ones).
pub const MAX_FOLLOWUPS: usize = 20;
/// Most characters of a reply read.
pub const MAX_REPLY_CHARS: usize = 20_000;
/// Most characters of the evidence kept.
pub const MAX_EVIDENCE_CHARS: usize = 200;
/// Most tokens the judge may reply with.
pub const MAX_REPLY_TOKENS: u32 = 400;

/// What the judge read in the follow-ups.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FollowupVerdict {
    /// The user corrected the agent: the session failed from the user's point of view.
    Correction,
    /// The user accepted the work or moved on.
    Satisfied,
    /// Neither could be told (or the reply could not be read).
    Unclear,
}

impl FollowupVerdict {
    /// The verdict's name, as the judge writes it.
    pub fn name(self) -> &'static str {
        match self {
            FollowupVerdict::Correction => "correction",
            FollowupVerdict::Satisfied => "satisfied",
            FollowupVerdict::Unclear => "unclear",
        }
    }
}

/// The judge's verdict on one session, with its quote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FollowupJudgement {
    /// What it read.
    pub verdict: FollowupVerdict,
    /// The user's words that decide it (redacted, one line, capped; may be empty).
    pub evidence: String,
}

impl FollowupJudgement {
    /// An `unclear` verdict without evidence (what an unreadable reply gives).
    pub fn unclear() -> Self {
        FollowupJudgement {
            verdict: FollowupVerdict::Unclear,
            evidence: String::new(),
        }
    }
}

/// The judge's prompt for `session`, or `None` when the user wrote nothing after the first
/// request (there is nothing to judge, and no call to pay for).
///
/// ```
/// use evolution_harvest::followup::followup_messages;
/// use evolution_harvest::session::{Role, Session, SourceKind, Turn};
///
/// let mut session = Session::new(SourceKind::ClaudeCode, "s");
/// let turn = |role, text: &str| Turn { role, text: text.into(), timestamp: None, subagent: None };
/// session.turns.push(turn(Role::User, "rename the crate"));
/// session.turns.push(turn(Role::Assistant, "Renamed it to `core`."));
/// assert!(followup_messages(&session).is_none());
/// session.turns.push(turn(Role::User, "I meant the other crate"));
/// let messages = followup_messages(&session).unwrap();
/// assert!(messages[0].content.contains("rename the crate"));
/// assert!(messages[0].content.contains("Renamed it to `core`."));
/// assert!(messages[0].content.contains("I meant the other crate"));
/// ```
pub fn followup_messages(session: &Session) -> Option<Vec<ChatMessage>> {
    let mut request: Option<&str> = None;
    let mut last_answer = "";
    let mut followups: Vec<(&str, &str)> = Vec::new();
    for turn in session.turns.iter().filter(|t| t.subagent.is_none()) {
        match turn.role {
            Role::Assistant => {
                if !turn.text.trim().is_empty() {
                    last_answer = &turn.text;
                }
            }
            Role::User if request.is_none() => request = Some(&turn.text),
            Role::User => {
                followups.push((last_answer, &turn.text));
                last_answer = "";
            }
        }
    }
    let request = request?;
    if followups.is_empty() {
        return None;
    }
    let skipped = followups.len().saturating_sub(MAX_FOLLOWUPS);
    let mut shown = String::new();
    if skipped > 0 {
        shown.push_str(&format!("({skipped} earlier follow-ups left out)\n\n"));
    }
    for (n, (answer, message)) in followups.iter().skip(skipped).enumerate() {
        let answer = if answer.trim().is_empty() {
            "(no text)".to_owned()
        } else {
            tail_chars(answer.trim(), MAX_ANSWER_CHARS)
        };
        shown.push_str(&format!(
            "### Follow-up {}\nThe assistant's answer ended:\n<answer>\n{answer}\n</answer>\nThe user wrote:\n<message>\n{}\n</message>\n\n",
            n.saturating_add(skipped).saturating_add(1),
            truncate_chars(message.trim(), MAX_FOLLOWUP_CHARS)
        ));
    }
    let request = truncate_chars(request.trim(), MAX_REQUEST_CHARS);
    let prompt = render(
        FOLLOWUP_JUDGE.builtin,
        &[("request", &request), ("followups", shown.trim_end())],
    );
    Some(vec![ChatMessage::user(prompt)])
}

/// The last `max` characters of `text`, with a marker saying how many came before.
fn tail_chars(text: &str, max: usize) -> String {
    let total = text.chars().count();
    if total <= max {
        return text.to_owned();
    }
    let cut = total.saturating_sub(max);
    let kept: String = text.chars().skip(cut).collect();
    format!("[{cut} chars before]…{kept}")
}

/// Whether `evidence` is the user's own words in a follow-up of `session`: each part of it (a
/// quote may leave text out with `...` or `…`) is found in one of the user's messages after the
/// first request, ignoring case, runs of whitespace, surrounding quotation marks and curly
/// quotes. A verdict whose quote fails this (a small model repeating the prompt's example, or
/// any invented quote) should be set aside: it is not evidence.
///
/// ```
/// use evolution_harvest::followup::quotes_a_followup;
/// use evolution_harvest::session::{Role, Session, SourceKind, Turn};
///
/// let mut session = Session::new(SourceKind::ClaudeCode, "s");
/// let turn = |role, text: &str| Turn { role, text: text.into(), timestamp: None, subagent: None };
/// session.turns.push(turn(Role::User, "fix the build"));
/// session.turns.push(turn(Role::Assistant, "Fixed."));
/// session.turns.push(turn(Role::User, "It still fails on\n  CI, see the log"));
/// assert!(quotes_a_followup(&session, "\u{201c}it still FAILS on CI\u{201d}"));
/// assert!(quotes_a_followup(&session, "still fails ... see the log"));
/// assert!(!quotes_a_followup(&session, "no, that's the wrong file"));
/// assert!(!quotes_a_followup(&session, "fix the build"), "the first request is no follow-up");
/// assert!(!quotes_a_followup(&session, ""));
/// ```
pub fn quotes_a_followup(session: &Session, evidence: &str) -> bool {
    session
        .turns
        .iter()
        .filter(|t| t.subagent.is_none() && t.role == Role::User)
        .skip(1)
        .any(|t| quotes(&t.text, evidence))
}

/// Whether `evidence` quotes `message`, as [`quotes_a_followup`] reads a quote.
pub(crate) fn quotes(message: &str, evidence: &str) -> bool {
    let message = normalise_quote(message);
    let parts: Vec<String> = evidence
        .split("...")
        .flat_map(|part| part.split('…'))
        .map(normalise_quote)
        .filter(|part| !part.is_empty())
        .collect();
    !parts.is_empty() && parts.iter().all(|part| message.contains(part.as_str()))
}

/// `text` lower-cased, on one line with single spaces, curly quotes made straight and the
/// quotation marks and spaces around it taken off.
fn normalise_quote(text: &str) -> String {
    let straight: String = text
        .chars()
        .map(|c| match c {
            '\u{2018}' | '\u{2019}' => '\'',
            '\u{201c}' | '\u{201d}' => '"',
            c => c,
        })
        .collect();
    let spaced = straight.split_whitespace().collect::<Vec<_>>().join(" ");
    spaced
        .trim_matches(|c: char| c == '"' || c == '\'' || c == '`' || c.is_whitespace())
        .to_lowercase()
}

/// The JSON Schema of the judge's reply.
pub fn reply_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "verdict": {"type": "string", "enum": ["correction", "satisfied", "unclear"]},
            "evidence": {"type": "string", "maxLength": MAX_EVIDENCE_CHARS}
        },
        "required": ["verdict", "evidence"],
        "additionalProperties": false
    })
}

/// The options of the judge's call: the reply's schema, temperature 0, a token limit, tagged
/// `judge.followup`.
pub fn followup_options() -> ChatOptions {
    ChatOptions::json()
        .with_json_schema(reply_schema())
        .with_temperature(0.0)
        .with_max_tokens(MAX_REPLY_TOKENS)
        .with_tag("judge.followup")
}

/// Reads a reply leniently; anything that names no known verdict is `unclear`.
///
/// ```
/// use evolution_harvest::followup::{FollowupVerdict, read_reply};
///
/// let read = read_reply("```json\n{\"verdict\": \" Correction \", \"evidence\": \"still failing\"}\n```");
/// assert_eq!(read.verdict, FollowupVerdict::Correction);
/// assert_eq!(read.evidence, "still failing");
/// assert_eq!(read_reply("I think the user was happy").verdict, FollowupVerdict::Unclear);
/// assert_eq!(read_reply(r#"{"verdict": "maybe"}"#).verdict, FollowupVerdict::Unclear);
/// ```
pub fn read_reply(reply: &str) -> FollowupJudgement {
    let reply: String = reply.chars().take(MAX_REPLY_CHARS).collect();
    let Ok(object) = extract_json_from_response(&reply) else {
        return FollowupJudgement::unclear();
    };
    let verdict = object
        .get("verdict")
        .and_then(Value::as_str)
        .map(|v| v.trim().to_lowercase());
    let verdict = match verdict.as_deref() {
        Some("correction" | "corrected" | "correcting") => FollowupVerdict::Correction,
        Some("satisfied") => FollowupVerdict::Satisfied,
        _ => return FollowupJudgement::unclear(),
    };
    let evidence = match object.get("evidence") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    };
    FollowupJudgement {
        verdict,
        evidence: clean_evidence(&evidence),
    }
}

/// Evidence as kept: redacted, control characters made spaces, on one line, cut to
/// [`MAX_EVIDENCE_CHARS`].
///
/// ```
/// use evolution_harvest::followup::clean_evidence;
/// assert_eq!(clean_evidence("no,\u{1b}[2J\n wrong file"), "no, [2J wrong file");
/// ```
pub fn clean_evidence(raw: &str) -> String {
    let capped: String = raw
        .chars()
        .take(MAX_EVIDENCE_CHARS.saturating_mul(4))
        .collect();
    let mut redactor = Redactor::default();
    let redacted = redactor.redact(&capped);
    let spaced: String = redacted
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let one_line = spaced.split_whitespace().collect::<Vec<_>>().join(" ");
    truncate_chars(&one_line, MAX_EVIDENCE_CHARS)
}

/// Asks `llm` for the verdict on `messages` (from [`followup_messages`]). An unusable reply
/// (an error of class `Content`, or a reply that cannot be read) is `unclear`.
///
/// # Errors
/// Any other error of the provider, as it returned it.
pub async fn judge_followups(
    llm: &dyn LlmProvider,
    messages: &[ChatMessage],
) -> Result<FollowupJudgement, LlmError> {
    match llm.chat(messages, &followup_options()).await {
        Ok(response) => Ok(read_reply(&response.content)),
        Err(e) if e.is_content() => Ok(FollowupJudgement::unclear()),
        Err(e) => Err(e),
    }
}

/// The key a verdict is remembered by: the SHA-256 (hex) of the model's name and the prompt
/// (which holds the session's follow-up text), so a session whose follow-ups did not change
/// is not judged twice by the same model, and a new prompt or model judges again.
///
/// ```
/// use evolution_harvest::followup::cache_key;
/// use evolution_types::ChatMessage;
///
/// let prompt = [ChatMessage::user("follow-ups")];
/// assert_eq!(cache_key("m", &prompt), cache_key("m", &prompt));
/// assert_ne!(cache_key("m", &prompt), cache_key("other", &prompt));
/// assert_eq!(cache_key("m", &prompt).len(), 64);
/// ```
pub fn cache_key(model: &str, messages: &[ChatMessage]) -> String {
    use std::fmt::Write as _;
    let mut hasher = sha2::Sha256::new();
    // Version 2: verdicts are cached once their quote is checked (`quotes_a_followup`).
    hasher.update(b"followup-judge/2\0");
    hasher.update(model.as_bytes());
    for message in messages {
        hasher.update(b"\0");
        hasher.update(format!("{:?}", message.role).as_bytes());
        hasher.update(b"\0");
        hasher.update(message.content.as_bytes());
    }
    let mut hex = String::with_capacity(64);
    for byte in hasher.finalize().iter() {
        let _ = write!(hex, "{byte:02x}");
    }
    hex
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::{SourceKind, Turn};
    use evolution_types::{LlmErrorKind, LlmResponse};

    fn session(turns: &[(Role, &str)]) -> Session {
        let mut s = Session::new(SourceKind::ClaudeCode, "s");
        for (role, text) in turns {
            s.turns.push(Turn {
                role: *role,
                text: (*text).to_owned(),
                timestamp: None,
                subagent: None,
            });
        }
        s
    }

    #[test]
    fn replies_are_read_leniently_and_untrusted() {
        let read = read_reply(
            "<think>hmm</think>Here: {\"verdict\": \"correction\", \"evidence\": \"no,\\u001b[31m wrong\\nfile sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWx\"}",
        );
        assert_eq!(read.verdict, FollowupVerdict::Correction);
        assert!(!read.evidence.contains('\u{1b}'), "{:?}", read.evidence);
        assert!(!read.evidence.contains('\n'));
        assert!(!read.evidence.contains("sk-ant"), "{}", read.evidence);
        let long = format!(
            "{{\"verdict\": \"satisfied\", \"evidence\": \"{}\"}}",
            "x".repeat(5_000)
        );
        let read = read_reply(&long);
        assert_eq!(read.verdict, FollowupVerdict::Satisfied);
        assert!(read.evidence.chars().count() < MAX_EVIDENCE_CHARS + 30);
        for unreadable in ["", "[1, 2]", "{\"evidence\": \"x\"}", "{\"verdict\": 3}"] {
            assert_eq!(read_reply(unreadable), FollowupJudgement::unclear());
        }
        let huge = "{".repeat(MAX_REPLY_CHARS * 3);
        assert_eq!(read_reply(&huge), FollowupJudgement::unclear());
    }

    #[test]
    fn the_prompt_keeps_the_last_followups_with_the_answer_before_each() {
        let mut turns = vec![(Role::User, "first request".to_owned())];
        for n in 0..25 {
            turns.push((Role::Assistant, format!("answer {n} {}", "a".repeat(900))));
            turns.push((Role::User, format!("follow-up {n}")));
        }
        let turns: Vec<(Role, &str)> = turns.iter().map(|(r, t)| (*r, t.as_str())).collect();
        let messages = followup_messages(&session(&turns)).unwrap();
        let prompt = &messages[0].content;
        assert!(prompt.contains("(5 earlier follow-ups left out)"));
        assert!(!prompt.contains("follow-up 4\n"));
        assert!(prompt.contains("### Follow-up 25\n"));
        assert!(prompt.contains("follow-up 24"));
        assert!(prompt.contains("chars before]…"));
        assert!(!prompt.contains("{{"), "every placeholder is filled");
        // A subagent's turns are not the user's follow-ups.
        let mut s = session(&[(Role::User, "go"), (Role::Assistant, "done")]);
        s.turns.push(Turn {
            role: Role::User,
            text: "subagent prompt".to_owned(),
            timestamp: None,
            subagent: Some("a".to_owned()),
        });
        assert!(followup_messages(&s).is_none());
    }

    struct Fixed(Result<&'static str, LlmErrorKind>);

    #[async_trait::async_trait]
    impl LlmProvider for Fixed {
        async fn chat(
            &self,
            _: &[ChatMessage],
            options: &ChatOptions,
        ) -> Result<LlmResponse, LlmError> {
            assert!(options.json_schema.is_some());
            match self.0 {
                Ok(content) => Ok(LlmResponse {
                    content: content.to_owned(),
                    ..LlmResponse::default()
                }),
                Err(kind) => Err(LlmError::new(kind, "no")),
            }
        }
    }

    #[tokio::test]
    async fn provider_errors_are_returned_unusable_replies_are_unclear() {
        let prompt = [ChatMessage::user("x")];
        let ok = Fixed(Ok(r#"{"verdict":"satisfied","evidence":"thanks"}"#));
        assert_eq!(
            judge_followups(&ok, &prompt).await.unwrap().verdict,
            FollowupVerdict::Satisfied
        );
        let empty = Fixed(Err(LlmErrorKind::EmptyContent));
        assert_eq!(
            judge_followups(&empty, &prompt).await.unwrap(),
            FollowupJudgement::unclear()
        );
        let auth = Fixed(Err(LlmErrorKind::Auth));
        assert!(judge_followups(&auth, &prompt).await.is_err());
    }
}
