//! The redactor as it was before the current rules, kept here only to compare throughput on
//! the same text in one run.

use std::sync::LazyLock;

use regex::{Captures, Regex};

#[derive(Clone, Copy, PartialEq, Eq)]
enum SecretKind {
    PrivateKey,
    AnthropicKey,
    OpenAiKey,
    StripeKey,
    GoogleKey,
    AwsAccessKey,
    GithubToken,
    SlackToken,
    Jwt,
    BearerToken,
    UrlPassword,
    EnvSecret,
}

impl SecretKind {
    fn marker(self) -> String {
        format!("[REDACTED:{}]", self as u8)
    }
}

const REDACTION_PREFIX: &str = "[REDACTED:";

/// How a pattern's match is replaced.
enum Shape {
    /// The whole match is the secret.
    Whole,
    /// Capture group 1 is kept, group 2 is the secret, group 3 (when present) is kept.
    Middle,
}

struct Rule {
    kind: SecretKind,
    pattern: Regex,
    shape: Shape,
}

/// Words that make a `NAME=value` name a secret's on their own (`DB_PASSWORD`, `authToken`).
const SECRET_WORDS: [&str; 9] = [
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "PWD",
    "PASSPHRASE",
    "CREDENTIAL",
    "CREDENTIALS",
    "APIKEY",
];

/// Words that make a name ending in `KEY` a secret's (`API_KEY`, `AWS_ACCESS_KEY`,
/// `privateKey`); a bare `key` or `thread_key` is not.
const KEY_QUALIFIERS: [&str; 9] = [
    "API",
    "ACCESS",
    "SECRET",
    "PRIVATE",
    "AUTH",
    "SIGNING",
    "ENCRYPTION",
    "MASTER",
    "CLIENT",
];

fn rules() -> Vec<Rule> {
    // Each pattern is a literal of this file; a typo is caught by the unit tests, and a
    // pattern that failed to compile would only drop that one rule, never panic.
    let specs: [(SecretKind, &str, Shape); 12] = [
        (
            SecretKind::PrivateKey,
            r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(?:[\s\S]*?-----END [A-Z0-9 ]*PRIVATE KEY-----|[\s\S]*)",
            Shape::Whole,
        ),
        (
            SecretKind::AnthropicKey,
            r"\bsk-ant-[A-Za-z0-9_-]{20,}",
            Shape::Whole,
        ),
        (
            SecretKind::StripeKey,
            r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}",
            Shape::Whole,
        ),
        (
            SecretKind::OpenAiKey,
            r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}",
            Shape::Whole,
        ),
        (
            SecretKind::GoogleKey,
            r"\bAIza[0-9A-Za-z_-]{35}",
            Shape::Whole,
        ),
        (
            SecretKind::AwsAccessKey,
            r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b",
            Shape::Whole,
        ),
        (
            SecretKind::GithubToken,
            r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})",
            Shape::Whole,
        ),
        (
            SecretKind::SlackToken,
            r"\bxox[abposr]-[A-Za-z0-9-]{10,}|https://hooks\.slack\.com/services/[A-Za-z0-9/_-]+",
            Shape::Whole,
        ),
        (
            SecretKind::Jwt,
            r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
            Shape::Whole,
        ),
        (
            SecretKind::BearerToken,
            r"(?i)(\bbearer\s+)([A-Za-z0-9._~+/=-]{12,})()",
            Shape::Middle,
        ),
        (
            SecretKind::UrlPassword,
            r"(\b[a-zA-Z][a-zA-Z0-9+.-]*://[^/\s:@]+:)([^@\s/]+)(@)",
            Shape::Middle,
        ),
        (
            SecretKind::EnvSecret,
            // NAME=value or NAME: value, NAME optionally quoted or exported; the value runs to
            // the end of a quoted string, or to white space.
            r#"(?m)((?:^|[\s;,{(])(?:export\s+)?["']?([A-Za-z_][A-Za-z0-9_.-]*)["']?\s*(?:=|:\s)\s*["']?)([^\s"',;]{4,})()"#,
            Shape::Middle,
        ),
    ];
    specs
        .into_iter()
        .filter_map(|(kind, pattern, shape)| {
            Regex::new(pattern).ok().map(|pattern| Rule {
                kind,
                pattern,
                shape,
            })
        })
        .collect()
}

static RULES: LazyLock<Vec<Rule>> = LazyLock::new(rules);

/// True when a variable name says it holds a secret: one of its words (split at `_`, `-`,
/// `.` and lower-to-upper case changes) is a secret word such as `TOKEN` or `PASSWORD`, or it
/// ends in `KEY` after a word such as `API` or `ACCESS`. `MAX_TOKENS`, `thread_key` and
/// `session_id` are not.
fn is_secret_name(name: &str) -> bool {
    let words = name_words(name);
    let is = |word: &str, list: &[&str]| list.iter().any(|w| word.eq_ignore_ascii_case(w));
    if words.iter().any(|w| is(w, &SECRET_WORDS)) {
        return true;
    }
    match words.split_last() {
        Some((last, before)) if last.eq_ignore_ascii_case("KEY") => {
            before.iter().any(|w| is(w, &KEY_QUALIFIERS))
        }
        _ => false,
    }
}

/// `aws_secret-Key.id` → `aws`, `secret`, `Key`, `id`; `apiKey` → `api`, `Key`.
fn name_words(name: &str) -> Vec<&str> {
    let mut words = Vec::new();
    for part in name.split(['_', '-', '.']) {
        let mut start = 0;
        let mut previous_lower = false;
        for (i, c) in part.char_indices() {
            if c.is_ascii_uppercase() && previous_lower {
                words.push(part.get(start..i).unwrap_or_default());
                start = i;
            }
            previous_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
        }
        words.push(part.get(start..).unwrap_or_default());
    }
    words.retain(|w| !w.is_empty());
    words
}

/// True for a value that is a reference or code rather than a literal secret: a variable
/// (`$TOKEN`, `${TOKEN}`, `%TOKEN%`), a placeholder (`<token>`), a call (`get_token(…)`,
/// `document.querySelector(…)`), a lower-case or lower camel-case identifier of letters only
/// (`token`, `csrfToken`), or a dotted path of identifiers (`socket.assigns.token`,
/// `Phoenix.Token`).
fn is_reference(value: &str) -> bool {
    let identifier = |part: &str| {
        part.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && part.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    value.starts_with(['$', '%', '<', '{', '['])
        || value.contains(['(', ')'])
        || value.chars().all(|c| c.is_ascii_lowercase() || c == '_')
        || (value.starts_with(|c: char| c.is_ascii_lowercase())
            && value.chars().all(|c| c.is_ascii_alphabetic()))
        || (value.contains('.') && value.split('.').all(identifier))
}

/// `text` redacted by the former rules.
pub(crate) fn redact(text: &str) -> String {
    let mut out = text.to_owned();
    for rule in RULES.iter() {
        out = apply(rule, &out);
    }
    out
}

fn apply(rule: &Rule, text: &str) -> String {
    let marker = rule.kind.marker();
    rule.pattern
        .replace_all(text, |caps: &Captures<'_>| {
            let whole = caps.get(0).map_or("", |m| m.as_str());
            match rule.shape {
                Shape::Whole => marker.clone(),
                Shape::Middle => {
                    let group = |i| caps.get(i).map_or("", |m| m.as_str());
                    let (keep_before, secret, keep_after) = if rule.kind == SecretKind::EnvSecret {
                        if !is_secret_name(group(2)) || is_reference(group(3)) {
                            return whole.to_owned();
                        }
                        (group(1), group(3), "")
                    } else {
                        (group(1), group(2), group(3))
                    };
                    if secret.starts_with(REDACTION_PREFIX) {
                        return whole.to_owned();
                    }
                    format!("{keep_before}{marker}{keep_after}")
                }
            }
        })
        .into_owned()
}
