//! Secrets recognised by what stands before them: the value of a secret-named key in every
//! syntax a transcript holds (`.env` lines, YAML, JSON of any spacing, code, URL query
//! parameters, `--password value` flags, `name:`/`value:` pairs of a Kubernetes manifest), the
//! credentials of an `Authorization: Bearer` or `Basic` header, and passwords given on a
//! command line (`mysql -pX`, `curl -u user:pw`, `sshpass -p pw`).
//!
//! A pattern finds where a value starts; the value's extent is read by hand (to its closing
//! quote, or to a delimiter when unquoted) and the value is replaced only when it looks like a
//! credential. A rejected candidate resumes the scan at its value, so a secret inside another
//! value (`"command":"DB_PASSWORD=x ./run"`) is still found; each search is a linear regex
//! search, so the whole scan stays linear.

use regex::{Captures, Regex};

use super::score::{
    base64_decode, is_capital_name, is_common_word, is_identifier, is_kebab_name, is_masked,
    is_number, is_path, is_title_word, looks_like_key, looks_random,
};
use super::{REDACTION_PREFIX, SecretKind};

/// How far into a candidate value the judgement looks, in bytes. A rejected candidate costs
/// at most this much reading, which keeps the scan linear on adversarial input; an accepted
/// value is then read to its end, however long.
const JUDGED_BYTES: usize = 512;

/// Longest quoted value replaced, in bytes: an unterminated quote ends there.
const MAX_QUOTED: usize = 1 << 16;

/// Words that make a name a secret's on their own (`DB_PASSWORD`, `authToken`).
const SECRET_WORDS: [&str; 12] = [
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "PWD",
    "PASS",
    "PW",
    "PASSPHRASE",
    "CREDENTIAL",
    "CREDENTIALS",
    "APIKEY",
    "AUTHORIZATION",
];

/// Endings that make one unseparated word a secret's name (`authtoken`, `dbpassword`).
const SECRET_SUFFIXES: [&str; 7] = [
    "token",
    "secret",
    "password",
    "passwd",
    "apikey",
    "secretkey",
    "privatekey",
];

/// Words that make a name ending in `KEY` a secret's (`API_KEY`, `privateKey`).
const KEY_QUALIFIERS: [&str; 14] = [
    "API",
    "ACCESS",
    "SECRET",
    "PRIVATE",
    "AUTH",
    "SIGNING",
    "ENCRYPTION",
    "MASTER",
    "CLIENT",
    "SSH",
    "HMAC",
    "JWT",
    "WEBHOOK",
    "LICENSE",
];

/// Last words that make a secret-looking name the name of something about the secret, not the
/// secret itself (`token_count`, `TOKEN_EXPIRY`, `secretName`, `token_url`, `auth_token_ttl`).
const METADATA_WORDS: [&str; 88] = [
    "ID",
    "IDS",
    "NAME",
    "NAMES",
    "COUNT",
    "COUNTS",
    "NUM",
    "NUMBER",
    "URL",
    "URLS",
    "URI",
    "ENDPOINT",
    "HOST",
    "SERVER",
    "TTL",
    "EXPIRY",
    "EXPIRES",
    "EXPIRATION",
    "EXP",
    "LIFETIME",
    "TIMEOUT",
    "AGE",
    "LEN",
    "LENGTH",
    "SIZE",
    "LIMIT",
    "LIMITS",
    "MAX",
    "MIN",
    "TYPE",
    "TYPES",
    "KIND",
    "FILE",
    "FILES",
    "PATH",
    "DIR",
    "REF",
    "REFS",
    "ENV",
    "VAR",
    "HEADER",
    "FIELD",
    "PARAM",
    "POLICY",
    "PREFIX",
    "SUFFIX",
    "FORMAT",
    "VERSION",
    "ROTATION",
    "USAGE",
    "USED",
    "CREATED",
    "UPDATED",
    "AT",
    "TIME",
    "SECONDS",
    "MS",
    "MODE",
    "REGEX",
    "PATTERN",
    "SCOPE",
    "SCOPES",
    "AUDIENCE",
    "ISSUER",
    "ALGORITHM",
    "LOCATION",
    "INDEX",
    "LABEL",
    "DESCRIPTION",
    "HINT",
    "ENABLED",
    "REQUIRED",
    "PROVIDER",
    "STORE",
    "MANAGER",
    "ARN",
    "REGION",
    "SOURCE",
    "STDIN",
    "TEMPLATE",
    "STRENGTH",
    "RESET",
    "BUDGET",
    "RATE",
    "ESTIMATE",
    "ENCODING",
    "METHOD",
    "STATUS",
];

/// What a name says about its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum NameClass {
    /// A secret's name (`DB_PASSWORD`).
    Secret,
    /// A key's name that does not say whose (`cache_key`, `OPENAI_KEY`): its value is a secret
    /// only when it looks random.
    Key,
    /// Anything else.
    Other,
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

/// What `name` says about its value (see [`NameClass`]).
pub(super) fn classify_name(name: &str) -> NameClass {
    let words = name_words(name);
    let is = |word: &str, list: &[&str]| list.iter().any(|w| word.eq_ignore_ascii_case(w));
    let Some((last, before)) = words.split_last() else {
        return NameClass::Other;
    };
    if is(last, &METADATA_WORDS) {
        return NameClass::Other;
    }
    let ends_with = |word: &str, suffix: &str| {
        word.len() > suffix.len()
            && word
                .get(word.len() - suffix.len()..)
                .is_some_and(|end| end.eq_ignore_ascii_case(suffix))
    };
    if words
        .iter()
        .any(|w| is(w, &SECRET_WORDS) || SECRET_SUFFIXES.iter().any(|s| ends_with(w, s)))
    {
        return NameClass::Secret;
    }
    if last.eq_ignore_ascii_case("KEY") {
        return if before.iter().any(|w| is(w, &KEY_QUALIFIERS)) {
            NameClass::Secret
        } else {
            NameClass::Key
        };
    }
    if ends_with(last, "key") {
        return NameClass::Key;
    }
    NameClass::Other
}

/// How the value stood: in quotes, or bare after `NAME=` with no space (a `.env` line, a
/// shell assignment, a URL parameter), or bare after `: ` or ` = ` (configuration or code).
#[derive(Debug, Clone, Copy)]
pub(super) struct Setting {
    pub(super) quoted: bool,
    pub(super) env_style: bool,
    /// A bare value is followed on its line by more words (`token = await getToken()`,
    /// `The secret: nobody reads the docs`): an expression or prose, not a setting.
    pub(super) continued: bool,
}

/// True when `value`, set under a name of `class`, looks like a credential rather than a
/// number, a path, a URL, a flag word, a heading, a reference to a variable, code or a
/// resource's name.
pub(super) fn value_is_secret(class: NameClass, value: &str, setting: Setting) -> bool {
    if class == NameClass::Other {
        return false;
    }
    let v = value.trim();
    let min = if setting.quoted { 3 } else { 4 };
    if v.chars().count() < min || v.contains(REDACTION_PREFIX) {
        return false;
    }
    if v.starts_with([
        '$', '%', '<', '{', '[', '@', '!', '*', '&', ':', '/', '=', '#', '(', '-', '\\',
    ]) || v.contains("${")
        || v.contains("{{")
        || v.contains("%(")
    {
        return false;
    }
    if is_number(v)
        || is_path(v)
        || v.contains("://")
        || is_masked(v)
        || is_common_word(v)
        || is_title_word(v)
        || is_capital_name(v)
    {
        return false;
    }
    if setting.quoted {
        // A sentence (`"Enter your password"`), or a key's name as a string.
        let words = v.split_whitespace().count();
        if words >= 3 && v.starts_with(|c: char| c.is_ascii_uppercase()) {
            return false;
        }
        if names_a_secret(v) && v.contains('_') {
            return false;
        }
    } else {
        let dotted = v.contains('.') && v.split('.').all(is_identifier);
        let snake = v.contains('_')
            && v.chars()
                .all(|c| c.is_ascii_lowercase() || c == '_' || c.is_ascii_digit());
        if v.contains(['(', '['])
            || (setting.continued && !setting.env_style)
            || dotted
            || names_a_secret(v)
            || (!setting.env_style && (snake || is_kebab_name(v)))
        {
            return false;
        }
    }
    match class {
        NameClass::Secret => true,
        NameClass::Key => looks_like_key(v),
        NameClass::Other => false,
    }
}

/// True for an identifier that is itself a secret's name (`csrfToken`, `user_password`,
/// `apiKey`): a variable holding the secret, not the secret. The short words `pw` and `pass`
/// do not count here, so `s3cr3tPw` is a literal.
fn names_a_secret(value: &str) -> bool {
    let lower = value.to_ascii_lowercase();
    is_identifier(value)
        && classify_name(value) == NameClass::Secret
        && [
            "token",
            "secret",
            "password",
            "passwd",
            "credential",
            "key",
            "auth",
        ]
        .iter()
        .any(|w| lower.contains(w))
}

/// How a candidate's value is read.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Syntax {
    /// Quoted (`"…"`, `'…'`, `` `…` ``, `\"…\"`) or bare up to a delimiter.
    Config,
    /// A header token: base64 and URL-safe characters only.
    HeaderToken,
}

/// Which rule found a candidate, and so how it is judged.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Judge {
    /// `NAME=value` and its kin: group 1 the name, group 2 a quote after it, group 3 the
    /// separator.
    Assignment,
    /// `--name value`: group 1 the name.
    Flag,
    /// `name: X` then `value: Y`: group 1 the variable's name.
    Pair,
    /// `Bearer X` / `Basic X`: group 1 the scheme.
    Header,
    /// A command line's password option: any literal value.
    Command,
}

pub(super) struct ContextRule {
    judge: Judge,
    syntax: Syntax,
    pattern: Regex,
}

fn rule(judge: Judge, syntax: Syntax, pattern: &str) -> Option<ContextRule> {
    Regex::new(pattern).ok().map(|pattern| ContextRule {
        judge,
        syntax,
        pattern,
    })
}

/// The context rules in the order they run: headers and command lines first, so the
/// assignment rule sees their markers and leaves them alone.
pub(super) fn context_rules() -> Vec<ContextRule> {
    [
        rule(
            Judge::Header,
            Syntax::HeaderToken,
            r#"(?i)(?-u:\b)(bearer|basic|authorization\\?["']?[ \t]*[:=][ \t]*\\?["']?token)[ \t]+"#,
        ),
        rule(
            Judge::Command,
            Syntax::Config,
            r"(?-u:\b)(?:(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlshow|mysqlcheck|mariadb|mariadb-dump)(?-u:\b)[^\n;|&]*?[ \t]-p|sshpass(?-u:\b)[^\n;|&]*?[ \t]-p[ \t]*|curl(?-u:\b)[^\n;|&]*?[ \t](?:-u|--user)(?:[ \t]+|=)?\\?[\x22']?[^\s:\x22'\\]*:)",
        ),
        rule(
            Judge::Flag,
            Syntax::Config,
            r"(?m)(?:^|[ \t])--([A-Za-z][A-Za-z0-9_-]*)[ \t]+",
        ),
        rule(
            Judge::Pair,
            Syntax::Config,
            r#"(?-u:\b)name\\?["']?[ \t]*[:=][ \t]*\\?["']?([A-Za-z_][A-Za-z0-9_.-]*)\\?["']?[ \t]*,?[ \t]*\r?\n?[ \t]*-?[ \t]*\\?["']?value\\?["']?[ \t]*[:=][ \t]*"#,
        ),
        rule(
            Judge::Assignment,
            Syntax::Config,
            r#"(?-u:\b)([A-Za-z0-9_.-]*?(?i:token|secret|pw|pass|credential|key|authorization)[A-Za-z0-9_.-]*)(\\?["'])?[ \t]*(:=|=>|==|=|:)[ \t]*"#,
        ),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// A value's place in the text: the bytes to replace.
struct Span {
    start: usize,
    end: usize,
    quoted: bool,
}

/// Reads the value that starts at byte `at` of `text`, looking at most `limit` bytes into it.
fn read_value(text: &str, at: usize, syntax: Syntax, limit: usize) -> Option<Span> {
    let rest = text.get(at..)?;
    if syntax == Syntax::HeaderToken {
        let len = rest
            .bytes()
            .take(limit)
            .take_while(|b| b.is_ascii_alphanumeric() || b"._~+/=-".contains(b))
            .count();
        return Some(Span {
            start: at,
            end: at.checked_add(len)?,
            quoted: false,
        });
    }
    let bytes = rest.as_bytes();
    let (escaped, quote) = match bytes {
        [b'\\', q @ (b'"' | b'\''), ..] => (true, *q),
        [q @ (b'"' | b'\'' | b'`'), ..] => (false, *q),
        _ => (false, 0),
    };
    if quote == 0 {
        let window = rest.get(..floor_char_boundary(rest, limit))?;
        let len = window
            .find(|c: char| {
                c.is_whitespace()
                    || matches!(
                        c,
                        '"' | '\''
                            | '`'
                            | ','
                            | ';'
                            | '&'
                            | '<'
                            | '>'
                            | '|'
                            | ')'
                            | ']'
                            | '}'
                            | '\\'
                    )
            })
            .unwrap_or(window.len());
        return Some(Span {
            start: at,
            end: at.checked_add(len)?,
            quoted: false,
        });
    }
    let open = if escaped { 2 } else { 1 };
    let body = rest.get(open..)?;
    let window = body.get(..floor_char_boundary(body, limit))?;
    let mut end = window.len();
    let mut previous_backslash = false;
    for (i, b) in window.bytes().enumerate() {
        if b == b'\n' {
            end = i;
            break;
        }
        if escaped {
            if b == quote && previous_backslash {
                end = i.saturating_sub(1);
                break;
            }
            previous_backslash = b == b'\\' && !previous_backslash;
        } else {
            if b == quote && !previous_backslash {
                end = i;
                break;
            }
            previous_backslash = quote == b'"' && b == b'\\' && !previous_backslash;
        }
    }
    let start = at.checked_add(open)?;
    Some(Span {
        start,
        end: start.checked_add(end)?,
        quoted: true,
    })
}

/// True when the text after byte `at` goes on, on the same line, with a space and then a word
/// or an expression (not a comment, a delimiter or the line's end).
fn continues_with_words(text: &str, at: usize) -> bool {
    let rest = text.get(at..).unwrap_or_default();
    let Some(after) = rest.strip_prefix([' ', '\t']) else {
        return false;
    };
    let after = after.trim_start_matches([' ', '\t']);
    after
        .chars()
        .next()
        .is_some_and(|c| !matches!(c, '#' | '\n' | '\r' | ',' | ';' | '}' | ')' | ']' | '/'))
}

/// The largest char boundary of `s` at or below `at`.
fn floor_char_boundary(s: &str, at: usize) -> usize {
    let mut i = at.min(s.len());
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// True when a header's token (after `Bearer` or `Basic`) is a credential.
fn header_is_secret(scheme: &str, token: &str) -> bool {
    if token.len() < 8 || is_title_word(token) || is_common_word(token) || is_capital_name(token) {
        return false;
    }
    if scheme.eq_ignore_ascii_case("basic") {
        let decoded = base64_decode(token).and_then(|b| String::from_utf8(b).ok());
        let pair = decoded.is_some_and(|d| {
            d.contains(':') && d.chars().all(|c| c.is_ascii_graphic() || c == ' ')
        });
        return pair || (token.len() >= 16 && looks_random(token));
    }
    // A bearer token: random-looking, or not a plain word (`tok_abcdefghijkl`, `a.b-c`).
    looks_random(token) || (token.len() >= 12 && !token.chars().all(|c| c.is_ascii_alphabetic()))
}

impl ContextRule {
    /// The marker's kind for what this rule replaces.
    fn kind(&self) -> SecretKind {
        match self.judge {
            Judge::Assignment | Judge::Flag | Judge::Pair => SecretKind::EnvSecret,
            Judge::Header => SecretKind::BearerToken,
            Judge::Command => SecretKind::CommandPassword,
        }
    }

    /// Whether the candidate found by `caps`, whose value is `value`, is replaced, and as what.
    fn judge(
        &self,
        caps: &Captures<'_>,
        value: &str,
        span: &Span,
        continued: bool,
    ) -> Option<SecretKind> {
        let group = |i| caps.get(i).map_or("", |m| m.as_str());
        if value.is_empty() || value.starts_with(REDACTION_PREFIX) {
            return None;
        }
        let accepted = match self.judge {
            Judge::Assignment => {
                let separator = group(3);
                if separator == "==" {
                    return None;
                }
                let whole = group(0);
                let env_style = separator == "="
                    && caps.get(2).is_none()
                    && !whole.contains([' ', '\t'])
                    && !span.quoted;
                value_is_secret(
                    classify_name(group(1)),
                    value,
                    Setting {
                        quoted: span.quoted,
                        env_style,
                        continued,
                    },
                )
            }
            Judge::Flag => value_is_secret(
                classify_name(group(1)),
                value,
                Setting {
                    quoted: span.quoted,
                    env_style: true,
                    continued: false,
                },
            ),
            Judge::Pair => value_is_secret(
                classify_name(group(1)),
                value,
                Setting {
                    quoted: span.quoted,
                    env_style: false,
                    continued,
                },
            ),
            Judge::Header => {
                return header_is_secret(group(1), value).then(|| {
                    if group(1).eq_ignore_ascii_case("basic") {
                        SecretKind::BasicAuth
                    } else {
                        SecretKind::BearerToken
                    }
                });
            }
            Judge::Command => {
                value.chars().count() >= 2 && !value.starts_with(['$', '%', '<', '{', '-'])
            }
        };
        accepted.then(|| self.kind())
    }

    /// Appends `text` with this rule's secrets replaced to `out`; counts each by kind.
    pub(super) fn apply(&self, text: &str, count: &mut dyn FnMut(SecretKind)) -> Option<String> {
        let mut out = String::new();
        let mut copied = 0usize;
        let mut at = 0usize;
        while at <= text.len() {
            let Some(caps) = self.pattern.captures_at(text, at) else {
                break;
            };
            let Some(whole) = caps.get(0) else {
                break;
            };
            // The scan resumes at the value when the candidate is rejected.
            at = whole.end().max(at.saturating_add(1));
            let Some(mut span) = read_value(text, whole.end(), self.syntax, JUDGED_BYTES) else {
                continue;
            };
            let value = text.get(span.start..span.end).unwrap_or_default();
            let continued = !span.quoted && continues_with_words(text, span.end);
            let Some(kind) = self.judge(&caps, value, &span, continued) else {
                continue;
            };
            if span.end.saturating_sub(span.start) >= JUDGED_BYTES.saturating_sub(2) {
                // Accepted on its first bytes: the rest of it goes too.
                let limit = if span.quoted { MAX_QUOTED } else { usize::MAX };
                if let Some(full) = read_value(text, whole.end(), self.syntax, limit) {
                    span.end = full.end.max(span.end);
                }
            }
            out.push_str(text.get(copied..span.start).unwrap_or_default());
            out.push_str(&kind.marker());
            copied = span.end;
            at = span.end.max(at);
            count(kind);
        }
        if copied == 0 {
            return None;
        }
        out.push_str(text.get(copied..).unwrap_or_default());
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_classified_by_their_words() {
        assert_eq!(classify_name("AWS_SECRET_ACCESS_KEY"), NameClass::Secret);
        assert_eq!(classify_name("authtoken"), NameClass::Secret);
        assert_eq!(classify_name("DB_PASS"), NameClass::Secret);
        assert_eq!(classify_name("cache_key"), NameClass::Key);
        assert_eq!(classify_name("token_count"), NameClass::Other);
        assert_eq!(classify_name("MAX_TOKENS"), NameClass::Other);
        assert_eq!(classify_name("tokenizer"), NameClass::Other);
    }

    #[test]
    fn values_are_read_to_their_end() {
        let text = r#"a="x y;z" b='q' c=bare,d \"esc\" e="unterminated"#;
        let at = |needle: &str| text.find(needle).map(|i| i + needle.len()).unwrap_or(0);
        let read = |needle| {
            let s = read_value(text, at(needle), Syntax::Config, JUDGED_BYTES).unwrap();
            (text[s.start..s.end].to_owned(), s.quoted)
        };
        assert_eq!(read("a="), ("x y;z".to_owned(), true));
        assert_eq!(read("b="), ("q".to_owned(), true));
        assert_eq!(read("c="), ("bare".to_owned(), false));
        assert_eq!(read("d "), ("esc".to_owned(), true));
        assert_eq!(read("e="), ("unterminated".to_owned(), true));
    }
}
