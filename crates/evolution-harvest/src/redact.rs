//! Secret redaction: every secret-shaped string is replaced by `[REDACTED:<kind>]` before any
//! harvested text is kept, written or put into a prompt.
//!
//! The patterns are shapes, not a list of known secrets: provider API keys (OpenAI, Anthropic,
//! Google, AWS, GitHub, Slack, Stripe), bearer tokens, JSON web tokens, private-key blocks,
//! passwords inside URLs and `NAME=value` lines whose name says it holds a secret
//! (`API_KEY`, `DB_PASSWORD`, `GITHUB_TOKEN`…). Redaction is idempotent: a marker is never
//! matched again.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::LazyLock;

use regex::{Captures, Regex};
use serde_json::Value;

/// The text a secret is replaced with is `[REDACTED:<kind>]`; this is its start.
pub const REDACTION_PREFIX: &str = "[REDACTED:";

/// What kind of secret a redaction replaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum SecretKind {
    /// A `-----BEGIN … PRIVATE KEY-----` block (an unterminated one up to the end of the text).
    PrivateKey,
    /// An Anthropic API key (`sk-ant-…`).
    AnthropicKey,
    /// An OpenAI API key (`sk-…`, `sk-proj-…`).
    OpenAiKey,
    /// A Stripe secret or restricted key (`sk_live_…`, `rk_test_…`).
    StripeKey,
    /// A Google API key (`AIza…`).
    GoogleKey,
    /// An AWS access key id (`AKIA…`, `ASIA…`).
    AwsAccessKey,
    /// A GitHub token (`ghp_…`, `gho_…`, `github_pat_…`).
    GithubToken,
    /// A Slack token (`xoxb-…`) or incoming-webhook URL.
    SlackToken,
    /// A JSON web token (three base64url parts, the first two starting `eyJ`).
    Jwt,
    /// The token after `Bearer` (an `Authorization` header).
    BearerToken,
    /// The password of a `scheme://user:password@host` URL.
    UrlPassword,
    /// The value of a `NAME=value` (or `NAME: value`) line whose name says it is a secret.
    EnvSecret,
}

impl SecretKind {
    /// The name in the marker: `[REDACTED:<name>]`.
    pub fn name(self) -> &'static str {
        match self {
            SecretKind::PrivateKey => "private_key",
            SecretKind::AnthropicKey => "anthropic_key",
            SecretKind::OpenAiKey => "openai_key",
            SecretKind::StripeKey => "stripe_key",
            SecretKind::GoogleKey => "google_key",
            SecretKind::AwsAccessKey => "aws_access_key",
            SecretKind::GithubToken => "github_token",
            SecretKind::SlackToken => "slack_token",
            SecretKind::Jwt => "jwt",
            SecretKind::BearerToken => "bearer_token",
            SecretKind::UrlPassword => "url_password",
            SecretKind::EnvSecret => "env_secret",
        }
    }

    /// The marker that replaces a secret of this kind.
    pub fn marker(self) -> String {
        format!("{REDACTION_PREFIX}{}]", self.name())
    }
}

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
pub fn is_secret_name(name: &str) -> bool {
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

/// Replaces secrets in text and counts what it replaced, by kind.
///
/// ```
/// use evolution_harvest::redact::Redactor;
///
/// let mut redactor = Redactor::default();
/// let text = "export GITHUB_TOKEN=ghp_0123456789abcdefghijklmnopqrstuvwxyzAB";
/// assert_eq!(redactor.redact(text), "export GITHUB_TOKEN=[REDACTED:github_token]");
/// assert_eq!(redactor.total(), 1);
/// ```
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    counts: BTreeMap<&'static str, usize>,
}

impl Redactor {
    /// `text` with every secret replaced by its marker (borrowed when nothing was found).
    pub fn redact<'a>(&mut self, text: &'a str) -> Cow<'a, str> {
        let mut out = Cow::Borrowed(text);
        for rule in RULES.iter() {
            let replaced = self.apply(rule, &out);
            if let Cow::Owned(new) = replaced {
                out = Cow::Owned(new);
            }
        }
        out
    }

    fn apply<'t>(&mut self, rule: &Rule, text: &'t str) -> Cow<'t, str> {
        let marker = rule.kind.marker();
        let mut hits = 0usize;
        let replaced = rule.pattern.replace_all(text, |caps: &Captures<'_>| {
            let whole = caps.get(0).map_or("", |m| m.as_str());
            match rule.shape {
                Shape::Whole => {
                    hits = hits.saturating_add(1);
                    marker.clone()
                }
                Shape::Middle => {
                    let group = |i| caps.get(i).map_or("", |m| m.as_str());
                    let (keep_before, secret, keep_after) = if rule.kind == SecretKind::EnvSecret {
                        // Group 1 is `NAME=` (group 2 the name alone), group 3 the value.
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
                    hits = hits.saturating_add(1);
                    format!("{keep_before}{marker}{keep_after}")
                }
            }
        });
        if hits > 0 {
            let count = self.counts.entry(rule.kind.name()).or_insert(0);
            *count = count.saturating_add(hits);
        }
        replaced
    }

    /// Redacts every string of a JSON value in place (object keys are kept).
    pub fn redact_json(&mut self, value: &mut Value) {
        match value {
            Value::String(s) => {
                if let Cow::Owned(new) = self.redact(s) {
                    *s = new;
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.redact_json(v)),
            Value::Object(map) => map.values_mut().for_each(|v| self.redact_json(v)),
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }

    /// Redactions made so far, by kind name.
    pub fn counts(&self) -> &BTreeMap<&'static str, usize> {
        &self.counts
    }

    /// Redactions made so far.
    pub fn total(&self) -> usize {
        self.counts
            .values()
            .fold(0usize, |a, b| a.saturating_add(*b))
    }

    /// Adds another redactor's counts to this one's.
    pub fn absorb(&mut self, other: &Redactor) {
        for (kind, n) in &other.counts {
            let count = self.counts.entry(*kind).or_insert(0);
            *count = count.saturating_add(*n);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn redact(text: &str) -> (String, Redactor) {
        let mut r = Redactor::default();
        let out = r.redact(text).into_owned();
        (out, r)
    }

    #[test]
    fn every_rule_compiles() {
        assert_eq!(RULES.len(), 12);
    }

    #[test]
    fn each_kind_of_secret_is_replaced_by_its_marker() {
        let cases = [
            (
                "key sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz012345 end",
                "key [REDACTED:anthropic_key] end",
            ),
            (
                "OPENAI sk-proj-AbCdEfGhIjKlMnOpQrStUvWx1234",
                "OPENAI [REDACTED:openai_key]",
            ),
            (
                "s sk_live_4eC39HqLyjWDarjtT1zdp7dc",
                "s [REDACTED:stripe_key]",
            ),
            (
                "g AIzaSyA-1234567890abcdefghijklmnopqrstu x",
                "g [REDACTED:google_key] x",
            ),
            (
                "aws AKIAIOSFODNN7EXAMPLE.",
                "aws [REDACTED:aws_access_key].",
            ),
            (
                "gh github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
                "gh [REDACTED:github_token]",
            ),
            (
                "slack xoxb-123456789012-abcdefghijkl",
                "slack [REDACTED:slack_token]",
            ),
            (
                "Authorization: Bearer abc.DEF-123_456~xyz",
                "Authorization: Bearer [REDACTED:bearer_token]",
            ),
            (
                "postgres://admin:hunter2@db:5432/x",
                "postgres://admin:[REDACTED:url_password]@db:5432/x",
            ),
            (
                "DB_PASSWORD=correct-horse\nMAX_TOKENS=4096",
                "DB_PASSWORD=[REDACTED:env_secret]\nMAX_TOKENS=4096",
            ),
            (
                "t eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
                "t [REDACTED:jwt]",
            ),
        ];
        for (input, expected) in cases {
            let (out, r) = redact(input);
            assert_eq!(out, expected, "{input}");
            assert_eq!(r.total(), 1, "{input}: {:?}", r.counts());
        }
    }

    #[test]
    fn private_key_blocks_are_removed_whole_even_when_cut() {
        let block = "before\n-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nAAAA\n-----END RSA PRIVATE KEY-----\nafter";
        assert_eq!(redact(block).0, "before\n[REDACTED:private_key]\nafter");
        let cut = "x -----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk";
        assert_eq!(redact(cut).0, "x [REDACTED:private_key]");
    }

    #[test]
    fn redaction_is_idempotent_and_leaves_ordinary_text_alone() {
        let (once, _) = redact("API_KEY=abcd1234efgh and sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWx");
        let (twice, r) = redact(&once);
        assert_eq!(once, twice);
        assert_eq!(r.total(), 0);
        let plain = "修复错误: the build failed; max_tokens=100; see https://example.com/a:b@c";
        let (out, r) = redact(plain);
        assert_eq!(out, plain);
        assert_eq!(r.total(), 0);
    }

    #[test]
    fn env_names_are_split_into_words() {
        assert!(is_secret_name("AWS_SECRET_ACCESS_KEY"));
        assert!(is_secret_name("github-token"));
        assert!(!is_secret_name("MAX_TOKENS"));
        assert!(!is_secret_name("KEYBOARD"));
        assert!(!is_secret_name("thread_key"));
        assert!(!is_secret_name("session_id"));
        assert!(is_secret_name("apiKey"));
        assert!(is_secret_name("authToken"));
        assert!(is_secret_name("privateKey"));
        // Code and references are not secrets, whatever their name.
        let code = "token = get_token()\npassword: socket.assigns.password\nAPI_KEY=$OPENAI_KEY\n\
                    const csrfToken = document.querySelector(\"meta\")\nsigning_key = Phoenix.Token\n\
                    params: { _csrf_token: csrfToken }";
        assert_eq!(redact(code).0, code);
        let (out, _) = redact("authToken: sEcR3tvAlUe");
        assert_eq!(out, "authToken: [REDACTED:env_secret]");
        let (out, _) = redact(r#"{"api_key": "abcdef123456", "monkey": "banana99"}"#);
        assert_eq!(
            out,
            r#"{"api_key": "[REDACTED:env_secret]", "monkey": "banana99"}"#
        );
    }

    #[test]
    fn json_strings_are_redacted_in_place() {
        let mut value = serde_json::json!({"cmd": ["curl", "-H", "Authorization: Bearer tok_abcdefghijkl"], "n": 1});
        let mut r = Redactor::default();
        r.redact_json(&mut value);
        assert_eq!(
            value["cmd"][2],
            "Authorization: Bearer [REDACTED:bearer_token]"
        );
        assert_eq!(r.counts().get("bearer_token"), Some(&1));
    }
}
