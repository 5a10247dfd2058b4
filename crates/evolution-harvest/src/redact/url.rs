//! Credentials inside URLs: the password of `scheme://user:password@host` — read to the `@`
//! that is followed by a host, so a password holding `@` or `/` is removed whole — and a
//! token given as the user name (`https://<key>@o1.ingest.sentry.io/2`,
//! `https://<token>@github.com/o/r`).

use regex::Regex;

use super::SecretKind;
use super::score::{is_reference, looks_random};

/// How far into a URL its credentials are looked for, in bytes: each `scheme://` costs at
/// most this much reading, so a text of nested or repeated schemes stays linear.
const MAX_URL: usize = 512;

/// The pattern that finds where a URL's authority starts.
pub(super) fn scheme() -> Option<Regex> {
    Regex::new(r"(?-u:\b)[a-zA-Z][a-zA-Z0-9+.-]*://").ok()
}

/// The byte ranges of URL credentials in `text`, in order, with their kind.
pub(super) fn credential_spans(text: &str, scheme: &Regex) -> Vec<(usize, usize, SecretKind)> {
    let mut spans = Vec::new();
    for m in scheme.find_iter(text) {
        let start = m.end();
        if spans.last().is_some_and(|(_, end, _)| *end > start) {
            continue;
        }
        let rest = text.get(start..).unwrap_or_default();
        let run_len = rest
            .char_indices()
            .find(|(i, c)| {
                *i >= MAX_URL || c.is_whitespace() || matches!(c, '"' | '\'' | '<' | '>' | '`')
            })
            .map_or(rest.len(), |(i, _)| i);
        let run = rest.get(..run_len).unwrap_or_default();
        let Some(user_end) = run.find([':', '@', '/', '?', '#', '\\']) else {
            continue;
        };
        let user = run.get(..user_end).unwrap_or_default();
        match run.as_bytes().get(user_end) {
            Some(b':') => {
                let from = user_end + 1;
                let Some(at) = host_at(run, from) else {
                    continue;
                };
                let password = run.get(from..at).unwrap_or_default();
                let port = password
                    .split('/')
                    .next()
                    .is_some_and(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
                if !password.is_empty()
                    && !port
                    && !password.starts_with("[REDACTED:")
                    && !is_reference(password)
                {
                    spans.push((start + from, start + at, SecretKind::UrlPassword));
                }
            }
            Some(b'@')
                if user.len() >= 16
                    && looks_random(user)
                    && !is_reference(user)
                    && !user.starts_with("[REDACTED:")
                    && host_at(run, 0) == Some(user_end) =>
            {
                spans.push((start, start + user_end, SecretKind::UrlToken));
            }
            _ => {}
        }
    }
    spans
}

/// The `@` after `from` in `run` that ends the user information: the last one followed by a
/// host name and then the end of the authority (`:port`, `/`, `?`, `#`, punctuation or the
/// end), not counting an `@` right after `/` (`/@scope/pkg`) or one after a `?` or `#` that
/// follows such a host. A password holding `@` or `/` is so read whole (at worst a path
/// holding `@` is replaced with it).
fn host_at(run: &str, from: usize) -> Option<usize> {
    let bytes = run.as_bytes();
    let mut found = None;
    let mut i = from;
    while let Some(offset) = run.get(i..)?.find('@') {
        let at = i + offset;
        if found.is_some() && run.get(i..at).is_some_and(|gap| gap.contains(['?', '#'])) {
            break;
        }
        let host = bytes
            .get(at + 1..)
            .unwrap_or_default()
            .iter()
            .take_while(|b| {
                b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_' | b'[' | b']')
            })
            .count();
        let next = bytes.get(at + 1 + host);
        let after_slash = at > 0 && bytes.get(at - 1) == Some(&b'/');
        if host > 0 && !after_slash && next.is_none_or(|b| b":/?#,;)\\".contains(b)) {
            found = Some(at);
        }
        i = at + 1;
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spans(text: &str) -> Vec<String> {
        let Some(re) = scheme() else { return vec![] };
        credential_spans(text, &re)
            .into_iter()
            .map(|(s, e, _)| text.get(s..e).unwrap_or_default().to_owned())
            .collect()
    }

    #[test]
    fn passwords_are_read_to_the_host() {
        assert_eq!(spans("postgres://u:p@ss/w0rd@db:5432/x"), ["p@ss/w0rd"]);
        assert_eq!(spans("redis://:s3cr%40t@cache"), ["s3cr%40t"]);
        assert_eq!(spans("mysql://u:p@w@db/x?to=a@b.com"), ["p@w"]);
        assert_eq!(
            spans("https://u:t0k@registry.npmjs.org/@scope/pkg"),
            ["t0k"]
        );
        assert_eq!(
            spans("https://abcdef0123456789abcdef0123456789@o1.ingest.sentry.io/2"),
            ["abcdef0123456789abcdef0123456789"]
        );
        for plain in [
            "http://host:8080/a@b.c/",
            "see https://docs.example.com/a:b@c",
            "http://user@example.com/path",
            "postgres://u:${DB_PASS}@db/x",
            "https://<key>@sentry.io/1",
        ] {
            assert!(spans(plain).is_empty(), "{plain}");
        }
    }
}
