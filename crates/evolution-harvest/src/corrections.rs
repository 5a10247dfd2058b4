//! What the user said next: the retry chain. In a coding-assistant session the strongest sign
//! that an answer failed is the user's next message — a request repeated in other words after
//! the agent answered, or a reply that opens with a correction ("no, …", "still failing"). This
//! module finds both without an LLM; `followup` asks one.
//!
//! Only the main conversation's user turns that come after an agent's answer are read (a
//! subagent's turns are not the user's). Short acknowledgements ("thanks", "ok, great",
//! "continue") never count as either.
//!
//! **A repeated request** ([`Correction::Repeated`]): a user turn whose key terms (words of three
//! or more letters, lower case, a plural or `-ing`/`-ed` ending cut, common words such as
//! "the", "please", "again" left out; runs of Chinese, Japanese or Korean characters as pairs of
//! characters) have a token-set similarity (Jaccard: shared terms over all terms) of at least
//! [`HarvestRules::retry_similarity`](crate::signals::HarvestRules::retry_similarity) with one of
//! the user's one or two turns before it, sharing at least [`MIN_SHARED_TERMS`] terms, when the
//! agent answered in between. "Fix the login bug" and later "the login bug is still there, fix
//! it" is one; "now add a test for the parser" after "refactor the parser" is not.
//!
//! **A correction in words** ([`Correction::Phrase`]): a user turn that opens with "no" (not
//! "no, thanks"), or holds one of the cues of this crate's `correction_cues` module — "did not fix",
//! "still fails", "you broke", "why did you", "revert that", "wrong file", "no, use X", "X,
//! not Y", and their commonest forms in nine other languages — where a weak cue ("revert",
//! "wrong") does not count in a question or a next step ("How do I revert this?"). Their
//! precision and recall are measured on a labelled corpus (`cargo xtask bench followups`); the
//! follow-up judge reads what they miss.
//!
//! Every quote is the turn's text as the reader kept it (already redacted), on one line and cut
//! to [`MAX_EVIDENCE_CHARS`].

use std::collections::BTreeSet;

use evolution_types::template::truncate_chars;
use serde::{Deserialize, Serialize};

use crate::session::{Role, Session};

/// The answers that open with "no" and correct: `no,`, `no.`, `no!`, `nope`, `nah` at the start
/// of a turn, when something other than an acknowledgement follows ("no, thanks" and a bare
/// "No." answer a question, they do not correct).
const NO_OPENERS: [&str; 5] = ["no,", "no.", "no!", "nope", "nah"];

/// Sounds a "no" may follow ("hmm, no, …").
const INTERJECTIONS: [&str; 9] = ["hmm", "hm", "um", "uh", "ugh", "well", "oh", "ah", "sorry"];

/// Fewest key terms a repeated request shares with the earlier one.
pub const MIN_SHARED_TERMS: usize = 2;

/// How many earlier user turns a turn is compared with.
pub const RETRY_WINDOW: usize = 2;

/// Most characters of a quoted turn.
pub const MAX_EVIDENCE_CHARS: usize = 160;

/// Most words an acknowledgement has.
const MAX_ACK_WORDS: usize = 8;

/// Words an acknowledgement is made of ("ok thanks", "great, that works", "continue").
const ACK_WORDS: [&str; 56] = [
    "ok",
    "okay",
    "k",
    "kk",
    "thanks",
    "thank",
    "thx",
    "ty",
    "you",
    "great",
    "perfect",
    "nice",
    "cool",
    "good",
    "awesome",
    "excellent",
    "fine",
    "lgtm",
    "looks",
    "look",
    "sounds",
    "yes",
    "yep",
    "yeah",
    "yup",
    "sure",
    "alright",
    "right",
    "got",
    "it",
    "that's",
    "thats",
    "that",
    "is",
    "all",
    "works",
    "worked",
    "now",
    "done",
    "continue",
    "proceed",
    "go",
    "ahead",
    "on",
    "please",
    "so",
    "much",
    "very",
    "a",
    "lot",
    "for",
    "worries",
    "problem",
    "else",
    "好的",
    "谢谢",
];

/// Common words that say nothing about what was asked.
const STOP_WORDS: [&str; 101] = [
    "the", "and", "but", "for", "nor", "yet", "then", "else", "than", "with", "from", "into",
    "onto", "about", "over", "under", "after", "before", "are", "was", "were", "been", "being",
    "does", "did", "done", "have", "has", "had", "its", "it's", "this", "that", "these", "those",
    "there", "here", "our", "you", "your", "yours", "she", "they", "them", "their", "can", "could",
    "would", "should", "will", "shall", "may", "might", "must", "please", "pls", "just", "also",
    "now", "again", "too", "very", "what", "which", "who", "whom", "how", "why", "when", "where",
    "not", "yes", "okay", "let", "let's", "want", "need", "some", "any", "all", "more", "most",
    "other", "such", "only", "own", "same", "both", "each", "few", "like", "one", "thanks",
    "thank", "i'm", "don't", "continue", "proceed", "keep", "going", "ahead",
];

/// One turn read as a correction.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Correction {
    /// The user repeated or rephrased an earlier request after the agent answered it.
    Repeated {
        /// The later turn (quoted).
        evidence: String,
        /// The earlier request it repeats (quoted).
        earlier: String,
        /// Their token-set similarity, 0 to 1.
        similarity: f64,
    },
    /// The user's turn corrects the agent in words ([`correction_phrase`]).
    Phrase {
        /// The words that correct, as [`correction_phrase`] found them.
        phrase: String,
        /// The turn (quoted).
        evidence: String,
    },
}

/// The corrections of a session, in the order of their turns: at most one of each kind per
/// user turn. `min_similarity` is the token-set similarity from which a turn repeats an earlier
/// one (values outside 0 to 1 are clamped).
///
/// ```
/// use evolution_harvest::corrections::{Correction, find_corrections};
/// use evolution_harvest::session::{Role, Session, SourceKind, Turn};
///
/// let mut session = Session::new(SourceKind::ClaudeCode, "s");
/// for (role, text) in [
///     (Role::User, "Fix the login bug on the settings page"),
///     (Role::Assistant, "Fixed."),
///     (Role::User, "the login bug is still there on the settings page"),
///     (Role::Assistant, "Sorry, fixed now."),
///     (Role::User, "No, it still crashes when I log in"),
///     (Role::Assistant, "Looking."),
///     (Role::User, "thanks!"),
/// ] {
///     session.turns.push(Turn { role, text: text.into(), timestamp: None, subagent: None });
/// }
/// let found = find_corrections(&session, 0.6);
/// assert_eq!(found.len(), 3);
/// assert!(matches!(&found[0], Correction::Phrase { phrase, .. } if phrase == "still there"));
/// assert!(matches!(&found[1], Correction::Repeated { .. }));
/// assert!(matches!(&found[2], Correction::Phrase { phrase, .. } if phrase == "no,"));
/// ```
pub fn find_corrections(session: &Session, min_similarity: f64) -> Vec<Correction> {
    let min_similarity = if min_similarity.is_nan() {
        1.0
    } else {
        min_similarity.clamp(0.0, 1.0)
    };
    // The user turns of the main conversation, each with whether the agent answered before it.
    let mut users: Vec<(&str, bool)> = Vec::new();
    let mut answered = false;
    for turn in session.turns.iter().filter(|t| t.subagent.is_none()) {
        match turn.role {
            Role::Assistant => answered = true,
            Role::User => {
                users.push((turn.text.as_str(), answered));
                answered = false;
            }
        }
    }
    let terms: Vec<BTreeSet<String>> = users.iter().map(|(t, _)| key_terms(t)).collect();
    let mut found = Vec::new();
    for (k, (text, after_answer)) in users.iter().enumerate() {
        if k == 0 || !after_answer || is_acknowledgement(text) {
            continue;
        }
        if let Some(phrase) = correction_phrase(text) {
            found.push(Correction::Phrase {
                phrase,
                evidence: quote(text),
            });
        }
        let Some(later) = terms.get(k) else {
            continue;
        };
        let mut best: Option<(usize, f64)> = None;
        for j in k.saturating_sub(RETRY_WINDOW)..k {
            let (Some(earlier), Some((earlier_text, _))) = (terms.get(j), users.get(j)) else {
                continue;
            };
            if is_acknowledgement(earlier_text) {
                continue;
            }
            let shared = later.intersection(earlier).count();
            let union = later.union(earlier).count();
            if shared < MIN_SHARED_TERMS || union == 0 {
                continue;
            }
            let similarity = shared as f64 / union as f64;
            if similarity >= min_similarity && best.is_none_or(|(_, s)| similarity > s) {
                best = Some((j, similarity));
            }
        }
        if let Some((j, similarity)) = best
            && let Some((earlier_text, _)) = users.get(j)
        {
            found.push(Correction::Repeated {
                evidence: quote(text),
                earlier: quote(earlier_text),
                similarity: (similarity * 100.0).round() / 100.0,
            });
        }
    }
    found
}

/// The words by which `text` corrects the agent, if any: an opening "no" that is not an
/// acknowledgement ("no, use the v2 API"; not "no, thanks"), else the first cue of
/// this crate's `correction_cues` module found in it ("did not fix", "still fails", "you broke", "why did
/// you", "revert", "wrong file", "X, not Y", and their commonest forms in other languages),
/// lower case, as they stand in the text.
///
/// ```
/// use evolution_harvest::corrections::correction_phrase;
/// assert_eq!(correction_phrase("No, use the v2 API").as_deref(), Some("no,"));
/// assert_eq!(correction_phrase("It’s still failing on CI").as_deref(), Some("still failing"));
/// assert_eq!(correction_phrase("That's not what I asked for").as_deref(), Some("not what i asked"));
/// assert_eq!(
///     correction_phrase("That did not fix it, payments still fail.").as_deref(),
///     Some("did not fix")
/// );
/// assert_eq!(correction_phrase("the build still fails").as_deref(), Some("still fails"));
/// assert_eq!(correction_phrase("no, thanks"), None);
/// assert_eq!(correction_phrase("Now add a test"), None);
/// assert_eq!(correction_phrase("How do I revert this if needed?"), None);
/// ```
pub fn correction_phrase(text: &str) -> Option<String> {
    let normal = crate::correction_cues::normalise(text);
    // "Hmm, no, …" opens with "no" too.
    let after_interjection = INTERJECTIONS
        .iter()
        .find_map(|i| {
            normal
                .strip_prefix(i)
                .filter(|rest| rest.starts_with([' ', ',', '.']))
        })
        .map_or(normal.as_str(), |rest| {
            rest.trim_start_matches([' ', ',', '.'])
        });
    for opener in NO_OPENERS {
        let Some(rest) = after_interjection.strip_prefix(opener) else {
            continue;
        };
        let ends_word = opener.ends_with(|c: char| !c.is_alphanumeric())
            || rest.chars().next().is_none_or(|c| !c.is_alphanumeric());
        if ends_word && !is_acknowledgement(rest) {
            return Some(opener.to_owned());
        }
    }
    if is_acknowledgement(&normal) {
        return None;
    }
    crate::correction_cues::find_cue(&normal)
}

/// True for a short acknowledgement ("thanks", "ok, great", "continue", "👍"): at most a few
/// words, every one of them an acknowledging word.
///
/// ```
/// use evolution_harvest::corrections::is_acknowledgement;
/// assert!(is_acknowledgement("Thanks!"));
/// assert!(is_acknowledgement("ok, looks good 👍"));
/// assert!(!is_acknowledgement("ok, now add the tests"));
/// ```
pub fn is_acknowledgement(text: &str) -> bool {
    let words: Vec<String> = text
        .split_whitespace()
        .map(|w| {
            w.trim_matches(|c: char| !c.is_alphanumeric() && c != '\'' && c != '’')
                .replace('’', "'")
                .to_lowercase()
        })
        .filter(|w| !w.is_empty())
        .collect();
    words.len() <= MAX_ACK_WORDS && words.iter().all(|w| ACK_WORDS.contains(&w.as_str()))
}

/// The key terms of a text: lower-case words of three or more letters or digits, stemmed
/// lightly, common words left out; runs of CJK characters as overlapping pairs.
///
/// ```
/// use evolution_harvest::corrections::key_terms;
/// let terms: Vec<String> = key_terms("Please fix the failing tests again").into_iter().collect();
/// assert_eq!(terms, ["fail", "fix", "test"]);
/// ```
pub fn key_terms(text: &str) -> BTreeSet<String> {
    let mut terms = BTreeSet::new();
    let mut word = String::new();
    let mut cjk: Vec<char> = Vec::new();
    for c in text.chars().flat_map(char::to_lowercase) {
        if is_cjk(c) {
            flush_word(&mut word, &mut terms);
            cjk.push(c);
        } else if c.is_alphanumeric() || c == '\'' {
            flush_cjk(&mut cjk, &mut terms);
            word.push(c);
        } else {
            flush_word(&mut word, &mut terms);
            flush_cjk(&mut cjk, &mut terms);
        }
    }
    flush_word(&mut word, &mut terms);
    flush_cjk(&mut cjk, &mut terms);
    terms
}

/// Adds `word` (then cleared) to `terms` when it is a key term.
fn flush_word(word: &mut String, terms: &mut BTreeSet<String>) {
    let trimmed = word.trim_matches('\'');
    if trimmed.chars().count() >= 3 && !STOP_WORDS.contains(&trimmed) {
        terms.insert(stem(trimmed));
    }
    word.clear();
}

/// Adds the pairs of a run of CJK characters (then cleared) to `terms`.
fn flush_cjk(cjk: &mut Vec<char>, terms: &mut BTreeSet<String>) {
    for pair in cjk.windows(2) {
        terms.insert(pair.iter().collect());
    }
    cjk.clear();
}

/// A word without its plural or `-ing`/`-ed` endings, while at least three letters are left
/// ("settings" and "setting" both give "sett").
fn stem(word: &str) -> String {
    let mut word = word.to_owned();
    'strip: for _ in 0..3 {
        for suffix in ["ing", "ed", "es", "s"] {
            if let Some(root) = word.strip_suffix(suffix)
                && root.chars().count() >= 3
                && !word.ends_with("ss")
            {
                word = root.to_owned();
                continue 'strip;
            }
        }
        break;
    }
    word
}

/// Chinese, Japanese and Korean characters, whose words are not separated by spaces.
fn is_cjk(c: char) -> bool {
    matches!(c,
        '\u{3040}'..='\u{30ff}' | '\u{3400}'..='\u{4dbf}' | '\u{4e00}'..='\u{9fff}'
        | '\u{ac00}'..='\u{d7af}' | '\u{f900}'..='\u{faff}')
}

/// A turn as quoted in a reason: on one line, cut to [`MAX_EVIDENCE_CHARS`].
pub fn quote(text: &str) -> String {
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    truncate_chars(&one_line, MAX_EVIDENCE_CHARS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::{SourceKind, Turn};

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

    fn kinds(found: &[Correction]) -> Vec<&'static str> {
        found
            .iter()
            .map(|c| match c {
                Correction::Repeated { .. } => "repeated",
                Correction::Phrase { .. } => "phrase",
            })
            .collect()
    }

    use Role::{Assistant as A, User as U};

    #[test]
    fn a_repeated_request_after_an_answer_counts() {
        let s = session(&[
            (U, "Add a dark mode toggle to the settings page"),
            (A, "Done: I added a theme option."),
            (U, "I asked for a dark mode toggle on the settings page"),
        ]);
        let found = find_corrections(&s, 0.6);
        // "I asked for" corrects in words too.
        assert_eq!(kinds(&found), ["phrase", "repeated"], "{found:?}");
        let Correction::Repeated {
            evidence,
            earlier,
            similarity,
        } = &found[1]
        else {
            unreachable!()
        };
        assert_eq!(
            evidence,
            "I asked for a dark mode toggle on the settings page"
        );
        assert_eq!(earlier, "Add a dark mode toggle to the settings page");
        assert!(*similarity >= 0.6, "{similarity}");
    }

    #[test]
    fn a_repeat_two_turns_later_counts_three_does_not() {
        let two = session(&[
            (U, "run the database migration script"),
            (A, "Ran it."),
            (U, "what does it change?"),
            (A, "It adds a column."),
            (U, "run the database migration script again"),
        ]);
        assert_eq!(kinds(&find_corrections(&two, 0.6)), ["repeated"]);
        let three = session(&[
            (U, "run the database migration script"),
            (A, "Ran it."),
            (U, "what does it change?"),
            (A, "It adds a column."),
            (U, "show me the schema"),
            (A, "Here."),
            (U, "run the database migration script again"),
        ]);
        assert!(find_corrections(&three, 0.6).is_empty());
    }

    #[test]
    fn correction_phrases_open_the_turn() {
        for (text, phrase) in [
            ("No, use the v2 endpoint instead", "no,"),
            ("NO. Revert that", "no."),
            ("still failing with the same trace", "still failing"),
            ("It still doesn't work", "doesn't work"),
            ("that's wrong, the port is 8080", "that's wrong"),
            ("This is not what I wanted", "not what i wanted"),
            ("Didn’t work.", "didn't work"),
            ("Wrong file", "wrong"),
            ("That did not fix it, payments still fail.", "did not fix"),
            ("why did you touch the lock file?", "why did you"),
            ("Revert that.", "revert"),
            ("You broke the build", "broke"),
            ("Das geht immer noch nicht", "geht immer noch nicht"),
            ("还是不行", "还是不行"),
        ] {
            assert_eq!(correction_phrase(text).as_deref(), Some(phrase), "{text}");
            let s = session(&[(U, "deploy the app"), (A, "Deployed."), (U, text)]);
            assert_eq!(kinds(&find_corrections(&s, 0.6)), ["phrase"], "{text}");
        }
    }

    #[test]
    fn acknowledgements_new_requests_and_first_turns_do_not_count() {
        for later in [
            "thanks",
            "ok",
            "Great, thank you!",
            "continue",
            "no, thanks",
            "No.",
            "now write the release notes",
            "did you push?",
            "Nothing else, wrong window",
            "notice the new tests",
            "wrongly named? rename it to config.rs",
            "How do I revert this if needed?",
            "Is the old endpoint still used anywhere?",
            "Fix the broken link in the footer too",
            "It doesn't fail anymore, thanks",
        ] {
            let s = session(&[
                (U, "Fix the flaky login test in the auth module"),
                (A, "Fixed the race."),
                (U, later),
            ]);
            assert!(find_corrections(&s, 0.6).is_empty(), "{later}");
        }
        // The first request is never a correction, even when it opens with "no".
        let first = session(&[(U, "No, wait: still failing"), (A, "Looking.")]);
        assert!(find_corrections(&first, 0.6).is_empty());
        // A related next step shares terms, but not enough of them.
        let next = session(&[
            (U, "refactor the parser module to use nom"),
            (A, "Refactored."),
            (U, "now write tests for the parser module and run them"),
        ]);
        assert!(find_corrections(&next, 0.6).is_empty());
        // The same words without an answer in between are not a retry.
        let unanswered = session(&[
            (U, "run the database migration script"),
            (U, "run the database migration script"),
        ]);
        assert!(find_corrections(&unanswered, 0.6).is_empty());
        // "continue" twice shares one term only.
        let nudges = session(&[
            (U, "work on the next bead"),
            (A, "Working."),
            (U, "continue implementation"),
            (A, "Continuing."),
            (U, "continue implementation"),
        ]);
        assert!(find_corrections(&nudges, 0.6).is_empty());
    }

    #[test]
    fn subagent_turns_are_not_the_users() {
        let mut s = session(&[(U, "summarise the design doc"), (A, "Summary: …")]);
        s.turns.push(Turn {
            role: U,
            text: "No, summarise the design doc".to_owned(),
            timestamp: None,
            subagent: Some("agent-1".to_owned()),
        });
        assert!(find_corrections(&s, 0.6).is_empty());
    }

    #[test]
    fn the_threshold_decides_and_quotes_are_capped() {
        let long = format!("fix the parser crash {}", "x".repeat(400));
        let s = session(&[
            (U, "fix the parser crash in the lexer"),
            (A, "Done."),
            (U, &long),
        ]);
        assert!(find_corrections(&s, 0.9).is_empty());
        let found = find_corrections(&s, 0.3);
        let Some(Correction::Repeated { evidence, .. }) = found.first() else {
            panic!("{found:?}")
        };
        assert!(
            evidence.chars().count() < MAX_EVIDENCE_CHARS + 30,
            "{evidence}"
        );
        assert!(evidence.contains("more chars]"), "{evidence}");
        assert!(find_corrections(&s, f64::NAN).is_empty());
    }

    #[test]
    fn cjk_text_is_compared_by_character_pairs() {
        let s = session(&[
            (U, "修复登录页面的错误"),
            (A, "已修复。"),
            (U, "登录页面的错误还在，请修复"),
        ]);
        assert_eq!(kinds(&find_corrections(&s, 0.5)), ["repeated"]);
    }
}
