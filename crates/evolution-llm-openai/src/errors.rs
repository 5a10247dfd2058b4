//! How a call's failures become [`LlmError`]s: a failed send mapped to its kind and billing,
//! an error's chain of causes in one line, the wait a 429 or 503 asks for, and messages
//! rewritten without the API key.

use std::borrow::Cow;
use std::time::{Duration, SystemTime};

use evolution_types::{LlmError, LlmErrorKind};
use reqwest::header::{HeaderMap, RETRY_AFTER};

use crate::config::ApiKey;

/// Maps a failure to send (or to receive headers) to an error kind.
pub(crate) fn send_error(e: &reqwest::Error) -> LlmError {
    let message = error_chain(e);
    if e.is_connect() {
        // Nothing reached the server: safe to retry, nothing billed.
        let kind = if e.is_timeout() {
            LlmErrorKind::Timeout
        } else {
            LlmErrorKind::Connection
        };
        return LlmError::new(kind, format!("cannot connect: {message}"));
    }
    let kind = if e.is_timeout() {
        LlmErrorKind::Timeout
    } else {
        LlmErrorKind::Connection
    };
    LlmError::new(
        kind,
        format!("the request failed after it was sent: {message}"),
    )
    .with_possibly_billed(true)
}

/// An error and its sources in one line, each source once: `reqwest`'s own message names only
/// the URL, the cause (refused connection, certificate, timeout) is in its sources.
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = s.source();
    }
    out
}

/// The wait a 429 or 503 asks for: `retry-after-ms` (OpenAI), or `Retry-After`
/// in seconds or as an HTTP date.
pub(crate) fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    if let Some(ms) = headers
        .get("retry-after-ms")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|ms| ms.is_finite() && *ms >= 0.0)
    {
        return Duration::try_from_secs_f64(ms / 1000.0).ok();
    }
    let value = headers.get(RETRY_AFTER)?.to_str().ok()?.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    if let Ok(seconds) = value.parse::<f64>() {
        return (seconds.is_finite() && seconds >= 0.0)
            .then(|| Duration::try_from_secs_f64(seconds).ok())
            .flatten();
    }
    let when = httpdate::parse_http_date(value).ok()?;
    Some(when.duration_since(now).unwrap_or(Duration::ZERO))
}

/// `e` with every occurrence of `key` in its message replaced; the rest kept.
pub(crate) fn redacted_error(e: LlmError, key: &ApiKey) -> LlmError {
    let Cow::Owned(message) = key.redact(e.message()) else {
        return e;
    };
    with_message(e, message)
}

/// `e` with another message; its kind, status, wait, attempts and billing kept.
pub(crate) fn with_message(e: LlmError, message: String) -> LlmError {
    let mut clean = LlmError::new(e.kind(), message)
        .with_attempts(e.attempts())
        .with_possibly_billed(e.possibly_billed());
    if let Some(status) = e.status() {
        clean = clean.with_status(status);
    }
    if let Some(wait) = e.retry_after() {
        clean = clean.with_retry_after(wait);
    }
    clean
}

#[cfg(test)]
mod tests {
    use std::time::UNIX_EPOCH;

    use reqwest::header::HeaderValue;

    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            if let Ok(v) = HeaderValue::from_str(v) {
                h.insert(*k, v);
            }
        }
        h
    }

    #[test]
    fn retry_after_forms() {
        let now = UNIX_EPOCH + Duration::from_secs(1_000_000_000);
        let check = |pairs: &[(&'static str, &str)], expect: Option<Duration>| {
            assert_eq!(retry_after(&headers(pairs), now), expect, "{pairs:?}");
        };
        check(&[], None);
        check(&[("retry-after", "2")], Some(Duration::from_secs(2)));
        check(&[("retry-after", "0.5")], Some(Duration::from_millis(500)));
        check(&[("retry-after", "-1")], None);
        check(&[("retry-after", "soon")], None);
        check(
            &[("retry-after-ms", "250"), ("retry-after", "9")],
            Some(Duration::from_millis(250)),
        );
        let in_3s = httpdate::fmt_http_date(now + Duration::from_secs(3));
        check(&[("retry-after", &in_3s)], Some(Duration::from_secs(3)));
        let past = httpdate::fmt_http_date(now - Duration::from_secs(3));
        check(&[("retry-after", &past)], Some(Duration::ZERO));
    }
}
