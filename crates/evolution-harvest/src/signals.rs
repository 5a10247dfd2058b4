//! Failure signals: why a harvested session counts as failed or passed, from what happened in
//! it (tool errors, turns the user interrupted, tool calls the user refused), what it states
//! (an explicit outcome) and what the user said next (a request repeated after the agent's
//! answer, a reply that opens with a correction: [`crate::corrections`]; and, when asked for,
//! the follow-up judge's verdict: [`crate::followup`]), never from words found anywhere in its
//! text.
//!
//! The rules are the `[harvest]` table of the configuration; [`HarvestRules::default`] counts
//! every signal once it occurs at least once, and lets an explicit outcome decide alone.

use std::collections::BTreeSet;

use evolution_types::template::truncate_chars;
use serde::{Deserialize, Serialize};

use crate::corrections::{Correction, find_corrections};
use crate::followup::{FollowupJudgement, FollowupVerdict};
use crate::session::Session;

/// A kind of evidence that a session failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SignalKind {
    /// Tool calls whose result is an error.
    ToolError,
    /// Turns the user interrupted.
    Interrupted,
    /// Tool calls the user refused.
    RejectedToolCall,
    /// An outcome the session states (`Outcome: failed`); when counted, it decides alone.
    ExplicitOutcome,
    /// The user repeated or rephrased a request after the agent's answer.
    RepeatedRequest,
    /// The user's next message corrected the agent in words ("no, …", "still failing", "you
    /// broke it").
    CorrectionPhrase,
}

impl SignalKind {
    /// Every kind, in order.
    pub const ALL: [SignalKind; 6] = [
        SignalKind::ToolError,
        SignalKind::Interrupted,
        SignalKind::RejectedToolCall,
        SignalKind::ExplicitOutcome,
        SignalKind::RepeatedRequest,
        SignalKind::CorrectionPhrase,
    ];
}

/// Which signals count, and from how many occurrences (the `[harvest]` table).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HarvestRules {
    /// The signals that count; the others are reported but decide nothing.
    pub signals: BTreeSet<SignalKind>,
    /// Tool errors from which a session counts as failed.
    pub min_tool_errors: usize,
    /// Interrupted turns from which a session counts as failed.
    pub min_interruptions: usize,
    /// Refused tool calls from which a session counts as failed.
    pub min_rejected_calls: usize,
    /// Count every failed tool call. By default a failure counts only when the agent never
    /// got past it: the last call of that tool failed too (a missing file read, then found,
    /// is how agents work, not a failure).
    pub count_recovered_tool_errors: bool,
    /// The token-set similarity (0 to 1) from which a user turn repeats one of the user's one
    /// or two turns before it ([`crate::corrections`]).
    pub retry_similarity: f64,
    /// Ask the configured LLM whether the user's follow-up messages correct the agent
    /// ([`crate::followup`]); off by default, it costs a call per session not judged before.
    pub followup_judge: bool,
}

/// The default [`HarvestRules::retry_similarity`].
pub const DEFAULT_RETRY_SIMILARITY: f64 = 0.6;

impl Default for HarvestRules {
    fn default() -> Self {
        HarvestRules {
            signals: SignalKind::ALL.into_iter().collect(),
            min_tool_errors: 1,
            min_interruptions: 1,
            min_rejected_calls: 1,
            count_recovered_tool_errors: false,
            retry_similarity: DEFAULT_RETRY_SIMILARITY,
            followup_judge: false,
        }
    }
}

impl HarvestRules {
    /// What is wrong with the values, in words (`None` when they are usable).
    pub fn problem(&self) -> Option<String> {
        (!(0.0..=1.0).contains(&self.retry_similarity)).then(|| {
            format!(
                "retry_similarity must be between 0 and 1, not {}",
                self.retry_similarity
            )
        })
    }
}

/// One reason for a verdict.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "signal", rename_all = "snake_case")]
pub enum Reason {
    /// Tool calls failed.
    ToolErrors {
        /// How many.
        count: usize,
        /// True when only failures the agent never got past were counted.
        unrecovered: bool,
        /// The tools that failed, first failure first, each once.
        tools: Vec<String>,
    },
    /// The user interrupted turns.
    Interrupted {
        /// How many.
        count: usize,
    },
    /// The user refused tool calls.
    RejectedToolCalls {
        /// How many.
        count: usize,
    },
    /// The session states its outcome.
    ExplicitOutcome {
        /// True for a positive outcome.
        passed: bool,
        /// The field that states it.
        field: String,
        /// Its value.
        value: String,
    },
    /// The user repeated or rephrased a request after the agent's answer.
    RepeatedRequest {
        /// How many turns did.
        count: usize,
        /// The first such turn (quoted, redacted, capped).
        evidence: String,
        /// The earlier request it repeats (quoted).
        earlier: String,
    },
    /// The user's next message corrected the agent in words.
    CorrectionPhrase {
        /// How many turns did.
        count: usize,
        /// The phrase of the first one.
        phrase: String,
        /// The first such turn (quoted, redacted, capped).
        evidence: String,
    },
    /// The follow-up judge read the user's follow-up messages as a correction.
    FollowupJudge {
        /// Its quote of the follow-up (capped, redacted, on one line).
        evidence: String,
    },
    /// No counted signal fired.
    NoFailureSignal,
}

impl Reason {
    /// The reason in words, for `fail_reason` and the terminal.
    pub fn describe(&self) -> String {
        match self {
            Reason::ToolErrors {
                count,
                unrecovered,
                tools,
            } => {
                let names = if tools.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", tools.join(", "))
                };
                let tail = match (*unrecovered, *count) {
                    (false, _) => "",
                    (true, 1) => " and was not retried successfully",
                    (true, _) => " and were not retried successfully",
                };
                format!("{count} tool call{} failed{tail}{names}", plural(*count))
            }
            Reason::Interrupted { count } => {
                format!("the user interrupted {count} turn{}", plural(*count))
            }
            Reason::RejectedToolCalls { count } => {
                format!("the user refused {count} tool call{}", plural(*count))
            }
            Reason::ExplicitOutcome {
                passed,
                field,
                value,
            } => format!(
                "the session states {field}: {value} ({})",
                if *passed { "passed" } else { "failed" }
            ),
            Reason::RepeatedRequest {
                count,
                evidence,
                earlier,
            } => format!(
                "the user repeated a request after the agent's answer ({count} time{}): \"{evidence}\" (earlier: \"{earlier}\")",
                plural(*count)
            ),
            Reason::CorrectionPhrase {
                count,
                phrase,
                evidence,
            } => format!(
                "the user corrected the agent in words ({count} time{}, \"{phrase}\"): \"{evidence}\"",
                plural(*count)
            ),
            Reason::FollowupJudge { evidence } => {
                format!("the follow-up judge read a correction: \"{evidence}\"")
            }
            Reason::NoFailureSignal => "no failure signal".to_owned(),
        }
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// Whether a session passed, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verdict {
    /// True when the session counts as passed.
    pub passed: bool,
    /// The reasons: for a failure, every counted signal that fired; for a pass, the explicit
    /// outcome or [`Reason::NoFailureSignal`].
    pub reasons: Vec<Reason>,
}

/// Most characters of a user's correction kept with the answer it corrected.
pub const MAX_CORRECTION_CHARS: usize = 2_000;

/// A user's correction of the agent, with the answer it corrected.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CorrectedAnswer {
    /// The user's words, as the reader kept them (redacted), cut to
    /// [`MAX_CORRECTION_CHARS`] with a marker.
    pub said: String,
    /// The agent's last answer before them, as the reader kept it (empty when it wrote none).
    pub answer: String,
}

impl Verdict {
    /// The first user turn this verdict counts as a correction (a correction in words, a
    /// repeated request, or the follow-up judge's quote), with the agent's answer before it;
    /// `None` when no correction failed the session.
    ///
    /// ```
    /// use evolution_harvest::session::{Role, Session, SourceKind, Turn};
    /// use evolution_harvest::signals::{HarvestRules, judge};
    ///
    /// let mut session = Session::new(SourceKind::ClaudeCode, "s");
    /// for (role, text) in [
    ///     (Role::User, "write the migration"),
    ///     (Role::Assistant, "Ran alembic revision --autogenerate."),
    ///     (Role::User, "No, that's wrong, use `make migration`"),
    ///     (Role::Assistant, "Sorry! Ran make migration."),
    ///     (Role::User, "thanks"),
    ///     (Role::Assistant, "Glad it helps."),
    /// ] {
    ///     session.turns.push(Turn { role, text: text.into(), timestamp: None, subagent: None });
    /// }
    /// let verdict = judge(&session, &HarvestRules::default());
    /// let corrected = verdict.corrected_answer(&session).unwrap();
    /// assert_eq!(corrected.said, "No, that's wrong, use `make migration`");
    /// assert_eq!(corrected.answer, "Ran alembic revision --autogenerate.");
    /// ```
    pub fn corrected_answer(&self, session: &Session) -> Option<CorrectedAnswer> {
        let quotes: Vec<(&str, bool)> = self
            .reasons
            .iter()
            .filter_map(|reason| match reason {
                Reason::RepeatedRequest { evidence, .. }
                | Reason::CorrectionPhrase { evidence, .. } => Some((evidence.as_str(), false)),
                Reason::FollowupJudge { evidence } => Some((evidence.as_str(), true)),
                _ => None,
            })
            .collect();
        if quotes.is_empty() || self.passed {
            return None;
        }
        let mut answer = "";
        let mut first = true;
        for turn in session.turns.iter().filter(|t| t.subagent.is_none()) {
            match turn.role {
                crate::session::Role::Assistant => {
                    if !turn.text.trim().is_empty() {
                        answer = &turn.text;
                    }
                }
                crate::session::Role::User if first => first = false,
                crate::session::Role::User => {
                    let corrects = quotes.iter().any(|(quote, judged)| {
                        if *judged {
                            crate::followup::quotes(&turn.text, quote)
                        } else {
                            crate::corrections::quote(&turn.text) == *quote
                        }
                    });
                    if corrects {
                        return Some(CorrectedAnswer {
                            said: truncate_chars(&turn.text, MAX_CORRECTION_CHARS),
                            answer: answer.to_owned(),
                        });
                    }
                }
            }
        }
        None
    }

    /// The reasons in words, joined with `; `.
    pub fn describe(&self) -> String {
        self.reasons
            .iter()
            .map(Reason::describe)
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// Judges a session by `rules`.
///
/// ```
/// use evolution_harvest::session::{Session, SourceKind};
/// use evolution_harvest::signals::{HarvestRules, judge};
///
/// let mut session = Session::new(SourceKind::Codex, "s");
/// session.interruptions = 1;
/// let verdict = judge(&session, &HarvestRules::default());
/// assert!(!verdict.passed);
/// assert_eq!(verdict.describe(), "the user interrupted 1 turn");
/// ```
pub fn judge(session: &Session, rules: &HarvestRules) -> Verdict {
    judge_with_followup(session, rules, None)
}

/// [`judge`], with the follow-up judge's verdict on the session when it was asked
/// ([`crate::followup`]): a `correction` fails the session (unless an explicit outcome decides).
///
/// ```
/// use evolution_harvest::followup::{FollowupJudgement, FollowupVerdict};
/// use evolution_harvest::session::{Session, SourceKind};
/// use evolution_harvest::signals::{HarvestRules, judge_with_followup};
///
/// let session = Session::new(SourceKind::Codex, "s");
/// let read = FollowupJudgement {
///     verdict: FollowupVerdict::Correction,
///     evidence: "that is the wrong branch".into(),
/// };
/// let verdict = judge_with_followup(&session, &HarvestRules::default(), Some(&read));
/// assert!(!verdict.passed);
/// assert_eq!(
///     verdict.describe(),
///     "the follow-up judge read a correction: \"that is the wrong branch\""
/// );
/// ```
pub fn judge_with_followup(
    session: &Session,
    rules: &HarvestRules,
    followup: Option<&FollowupJudgement>,
) -> Verdict {
    let counts = |kind| rules.signals.contains(&kind);
    if counts(SignalKind::ExplicitOutcome)
        && let Some(outcome) = &session.outcome
    {
        return Verdict {
            passed: outcome.passed,
            reasons: vec![Reason::ExplicitOutcome {
                passed: outcome.passed,
                field: outcome.field.clone(),
                value: outcome.value.clone(),
            }],
        };
    }
    let mut reasons = Vec::new();
    let failed: Vec<&crate::session::ToolCall> = if rules.count_recovered_tool_errors {
        session
            .tool_calls
            .iter()
            .filter(|c| c.is_error && !c.rejected)
            .collect()
    } else {
        session.unrecovered_tool_errors()
    };
    let errors = failed.len();
    if counts(SignalKind::ToolError) && errors > 0 && errors >= rules.min_tool_errors {
        let mut tools: Vec<String> = Vec::new();
        for call in failed {
            let name = if call.name.is_empty() {
                "unknown tool"
            } else {
                call.name.as_str()
            };
            if !tools.iter().any(|t| t == name) {
                tools.push(name.to_owned());
            }
        }
        reasons.push(Reason::ToolErrors {
            count: errors,
            unrecovered: !rules.count_recovered_tool_errors,
            tools,
        });
    }
    let interrupted = session.interruptions;
    if counts(SignalKind::Interrupted) && interrupted > 0 && interrupted >= rules.min_interruptions
    {
        reasons.push(Reason::Interrupted { count: interrupted });
    }
    let rejected = session.rejected_calls();
    if counts(SignalKind::RejectedToolCall) && rejected > 0 && rejected >= rules.min_rejected_calls
    {
        reasons.push(Reason::RejectedToolCalls { count: rejected });
    }
    if counts(SignalKind::RepeatedRequest) || counts(SignalKind::CorrectionPhrase) {
        let corrections = find_corrections(session, rules.retry_similarity);
        let mut repeated: Option<Reason> = None;
        let mut phrased: Option<Reason> = None;
        for correction in corrections {
            match correction {
                Correction::Repeated {
                    evidence, earlier, ..
                } if counts(SignalKind::RepeatedRequest) => match &mut repeated {
                    Some(Reason::RepeatedRequest { count, .. }) => *count = count.saturating_add(1),
                    _ => {
                        repeated = Some(Reason::RepeatedRequest {
                            count: 1,
                            evidence,
                            earlier,
                        });
                    }
                },
                Correction::Phrase { phrase, evidence } if counts(SignalKind::CorrectionPhrase) => {
                    match &mut phrased {
                        Some(Reason::CorrectionPhrase { count, .. }) => {
                            *count = count.saturating_add(1);
                        }
                        _ => {
                            phrased = Some(Reason::CorrectionPhrase {
                                count: 1,
                                phrase,
                                evidence,
                            });
                        }
                    }
                }
                _ => {}
            }
        }
        reasons.extend(repeated);
        reasons.extend(phrased);
    }
    if let Some(read) = followup
        && read.verdict == FollowupVerdict::Correction
    {
        reasons.push(Reason::FollowupJudge {
            evidence: read.evidence.clone(),
        });
    }
    if reasons.is_empty() {
        Verdict {
            passed: true,
            reasons: vec![Reason::NoFailureSignal],
        }
    } else {
        Verdict {
            passed: false,
            reasons,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::Outcome;
    use crate::session::{Role, SourceKind, ToolCall, Turn};

    fn call(name: &str, is_error: bool, rejected: bool) -> ToolCall {
        ToolCall {
            id: String::new(),
            name: name.to_owned(),
            input: serde_json::Value::Null,
            output: Some("error: nope".to_owned()),
            is_error,
            rejected,
            thought: String::new(),
            subagent: None,
        }
    }

    #[test]
    fn words_in_the_text_decide_nothing() {
        let mut s = Session::new(SourceKind::ClaudeCode, "s");
        s.turns.push(Turn {
            role: Role::User,
            text: "修复错误 in the parser: the test failed, wrong output, error everywhere".into(),
            timestamp: None,
            subagent: None,
        });
        s.tool_calls.push(call("Bash", false, false));
        let v = judge(&s, &HarvestRules::default());
        assert!(v.passed);
        assert_eq!(v.reasons, [Reason::NoFailureSignal]);
    }

    #[test]
    fn thresholds_and_switches_apply() {
        let mut s = Session::new(SourceKind::ClaudeCode, "s");
        s.tool_calls.push(call("Bash", true, false));
        s.tool_calls.push(call("Edit", true, true));
        let v = judge(&s, &HarvestRules::default());
        assert!(!v.passed);
        assert_eq!(
            v.describe(),
            "1 tool call failed and was not retried successfully (Bash); the user refused 1 tool call"
        );
        // A later successful call of the same tool recovers from the failure.
        let mut recovered = s.clone();
        recovered.tool_calls.push(call("Bash", false, false));
        let rules = HarvestRules {
            signals: [SignalKind::ToolError].into_iter().collect(),
            ..HarvestRules::default()
        };
        assert!(judge(&recovered, &rules).passed);
        let strict = HarvestRules {
            count_recovered_tool_errors: true,
            ..rules
        };
        assert_eq!(
            judge(&recovered, &strict).describe(),
            "1 tool call failed (Bash)"
        );
        let lenient = HarvestRules {
            min_tool_errors: 2,
            signals: [SignalKind::ToolError].into_iter().collect(),
            ..HarvestRules::default()
        };
        assert!(judge(&s, &lenient).passed);
    }

    #[test]
    fn what_the_user_said_next_fails_a_session_without_tool_errors() {
        let mut s = Session::new(SourceKind::ClaudeCode, "s");
        for (role, text) in [
            (Role::User, "Fix the failing login test in the auth module"),
            (Role::Assistant, "Fixed: the test passes now."),
            (
                Role::User,
                "still failing, the login test in the auth module is red",
            ),
            (Role::Assistant, "Fixed the fixture."),
            (Role::User, "No, revert the fixture change"),
        ] {
            s.turns.push(Turn {
                role,
                text: text.into(),
                timestamp: None,
                subagent: None,
            });
        }
        let v = judge(&s, &HarvestRules::default());
        assert!(!v.passed);
        assert_eq!(
            v.describe(),
            "the user repeated a request after the agent's answer (1 time): \"still failing, the \
             login test in the auth module is red\" (earlier: \"Fix the failing login test in the \
             auth module\"); the user corrected the agent in words (2 times, \"still \
             failing\"): \"still failing, the login test in the auth module is red\""
        );
        let mut rules = HarvestRules::default();
        rules.signals.remove(&SignalKind::RepeatedRequest);
        assert!(matches!(
            judge(&s, &rules).reasons[..],
            [Reason::CorrectionPhrase { count: 2, .. }]
        ));
        rules.signals.remove(&SignalKind::CorrectionPhrase);
        assert!(judge(&s, &rules).passed);
        // An explicit outcome still decides alone.
        s.outcome = Some(Outcome {
            passed: true,
            field: "outcome".into(),
            value: "passed".into(),
        });
        assert!(judge(&s, &HarvestRules::default()).passed);
        let parsed: HarvestRules = serde_json::from_str(r#"{"retry_similarity": 1.5}"#).unwrap();
        assert_eq!(
            parsed.problem().as_deref(),
            Some("retry_similarity must be between 0 and 1, not 1.5")
        );
    }

    #[test]
    fn an_explicit_outcome_decides_alone_when_counted() {
        let mut s = Session::new(SourceKind::Codex, "s");
        s.interruptions = 2;
        s.outcome = Some(Outcome {
            passed: true,
            field: "outcome".into(),
            value: "passed".into(),
        });
        assert!(judge(&s, &HarvestRules::default()).passed);
        let mut rules = HarvestRules::default();
        rules.signals.remove(&SignalKind::ExplicitOutcome);
        let v = judge(&s, &rules);
        assert!(!v.passed);
        assert_eq!(v.describe(), "the user interrupted 2 turns");
        let parsed: HarvestRules =
            serde_json::from_str(r#"{"signals": ["interrupted"], "min_interruptions": 3}"#)
                .unwrap();
        assert!(judge(&s, &parsed).passed, "2 interruptions are under 3");
        s.interruptions = 3;
        assert!(!judge(&s, &parsed).passed);
    }
}
