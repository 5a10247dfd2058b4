//! Every injected fault: the error kind, the attempts (checked against the
//! server's own request counter) and a bound on elapsed time. The bounds are
//! generous: they catch hangs and runaway retries, they are not benchmarks.
//!
//! Run with `--nocapture` to see the measured attempts and times.

use std::time::{Duration, Instant, SystemTime};

use evolution_llm_openai::OpenAiConfig;
use evolution_types::{
    ChatOptions, LlmError, LlmErrorClass, LlmErrorKind, LlmProvider, LlmResponse,
};
use serde_json::json;

use crate::server::{Step, TestServer, completion, delta, events, stream_end};
use crate::{fast_config, provider, question};

/// Runs one call, prints what it measured, and returns it with the elapsed time.
async fn measure(
    name: &str,
    config: OpenAiConfig,
    options: &ChatOptions,
) -> (Result<LlmResponse, LlmError>, Duration) {
    let llm = provider(config);
    let start = Instant::now();
    let result = llm.chat(&question(), options).await;
    let elapsed = start.elapsed();
    #[expect(clippy::print_stderr, reason = "the fault test reports each outcome")]
    {
        match &result {
            Ok(_) => eprintln!("fault {name}: ok in {} ms", elapsed.as_millis()),
            Err(e) => eprintln!(
                "fault {name}: {:?} after {} attempts in {} ms, possibly_billed={}",
                e.kind(),
                e.attempts(),
                elapsed.as_millis(),
                e.possibly_billed()
            ),
        }
    }
    (result, elapsed)
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Three times the configured overall limit: the hang bound of every fault.
fn hang_bound(config: &OpenAiConfig) -> Duration {
    ms(3 * config.timeouts.total_ms)
}

/// The fast configuration as it is.
fn as_is(_: &mut OpenAiConfig) {}

/// The fast configuration, streaming.
fn streaming(config: &mut OpenAiConfig) {
    config.stream = true;
}

/// A server that answers only after ten seconds, past every limit of these tests.
fn hung() -> Vec<Step> {
    vec![Step::ok(completion("late")).delayed(ms(10_000))]
}

/// One call against a server playing a script: the server (whose request counter checks the
/// attempts), what the call returned, how long it took, and the hang bound of its
/// configuration.
struct Fault {
    server: TestServer,
    result: Result<LlmResponse, LlmError>,
    elapsed: Duration,
    bound: Duration,
}

impl Fault {
    /// Starts a server playing `steps` and makes one call with the fast configuration as
    /// `tune` changes it, printing what it measured under `name`.
    async fn of(name: &str, steps: Vec<Step>, tune: impl FnOnce(&mut OpenAiConfig)) -> Fault {
        Fault::with_options(name, steps, tune, &ChatOptions::default()).await
    }

    /// As [`Fault::of`], with the call's `options`.
    async fn with_options(
        name: &str,
        steps: Vec<Step>,
        tune: impl FnOnce(&mut OpenAiConfig),
        options: &ChatOptions,
    ) -> Fault {
        let server = TestServer::start(steps).await;
        let mut config = fast_config(&server.base_url());
        tune(&mut config);
        let bound = hang_bound(&config);
        let (result, elapsed) = measure(name, config, options).await;
        Fault {
            server,
            result,
            elapsed,
            bound,
        }
    }

    /// The error, checked: its kind, its attempts against the server's counter, and the
    /// time against the hang bound.
    fn err(&self, kind: LlmErrorKind, attempts: u32) -> &LlmError {
        self.err_within(kind, attempts, self.bound)
    }

    /// As [`Fault::err`], the time checked against `bound`.
    fn err_within(&self, kind: LlmErrorKind, attempts: u32, bound: Duration) -> &LlmError {
        let err = self
            .result
            .as_ref()
            .expect_err("the fault must surface as an error");
        assert_eq!(err.kind(), kind, "{err}");
        assert_eq!(err.attempts(), attempts, "{err}");
        assert_eq!(
            self.server.count(),
            attempts as usize,
            "server-side request count; {err}"
        );
        let elapsed = self.elapsed;
        assert!(elapsed < bound, "took {elapsed:?}, bound {bound:?}: {err}");
        err
    }

    /// The reply's text, when the call succeeded.
    fn content(&self) -> &str {
        &self.result.as_ref().expect("the call succeeds").content
    }

    /// The time between the server's first and second requests.
    fn first_wait(&self) -> Duration {
        let at: Vec<_> = self.server.received().iter().map(|r| r.at).collect();
        assert!(at.len() >= 2, "{at:?}");
        at[1] - at[0]
    }
}

#[tokio::test]
async fn rate_limited_without_retry_after_backs_off_and_gives_up() {
    let steps = vec![Step::status(429, r#"{"error":{"message":"slow down"}}"#)];
    let fault = Fault::of("429 without Retry-After", steps, as_is).await;
    let err = fault.err(LlmErrorKind::RateLimited, 3);
    assert_eq!(err.class(), LlmErrorClass::Transient);
    assert_eq!((err.status(), err.retry_after()), (Some(429), None));
    assert_eq!(err.message(), "slow down");
    assert!(!err.possibly_billed());
    let at: Vec<_> = fault.server.received().iter().map(|r| r.at).collect();
    // Backoff starts at 20 ms (jitter only adds): the retries did wait.
    assert!(at[1] - at[0] >= ms(20) && at[2] - at[1] >= ms(20), "{at:?}");
}

#[tokio::test]
async fn rate_limited_then_ok_succeeds() {
    let steps = vec![Step::status(429, "{}"), Step::ok(completion("ok"))];
    let fault = Fault::of("429 then 200", steps, as_is).await;
    assert_eq!(fault.content(), "ok");
    assert_eq!(fault.server.count(), 2);
    assert!(fault.elapsed < ms(2_000), "{:?}", fault.elapsed);
}

#[tokio::test]
async fn retry_after_in_seconds_is_honoured() {
    let steps = vec![
        Step::status(429, "{}").with_header("Retry-After", "1"),
        Step::ok(completion("ok")),
    ];
    let fault = Fault::of("429 Retry-After: 1", steps, as_is).await;
    assert_eq!(fault.content(), "ok");
    assert_eq!(fault.server.count(), 2);
    let wait = fault.first_wait();
    assert!(wait >= ms(1_000), "waited only {wait:?}");
    assert!(fault.elapsed < fault.bound, "{:?}", fault.elapsed);
}

#[tokio::test]
async fn retry_after_as_http_date_is_honoured() {
    let when = httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(2));
    let steps = vec![
        Step::status(429, "{}").with_header("Retry-After", &when),
        Step::ok(completion("ok")),
    ];
    let fault = Fault::of("429 Retry-After: <date +2 s>", steps, as_is).await;
    assert_eq!(fault.content(), "ok");
    // The date has whole-second resolution, so the wait is between 1 and 2 s.
    let wait = fault.first_wait();
    assert!(wait >= ms(900), "waited only {wait:?}");
    assert!(fault.elapsed < fault.bound, "{:?}", fault.elapsed);
}

#[tokio::test]
async fn retry_after_beyond_the_deadline_fails_at_once() {
    let steps = vec![Step::status(429, "{}").with_header("Retry-After", "30")];
    let fault = Fault::of("429 Retry-After: 30 (deadline 5 s)", steps, as_is).await;
    let err = fault.err_within(LlmErrorKind::RateLimited, 1, ms(1_000));
    assert_eq!(err.retry_after(), Some(Duration::from_secs(30)));
}

#[tokio::test]
async fn server_error_is_retried_then_surfaced() {
    let steps = vec![Step::status(500, r#"{"error":{"message":"boom"}}"#)];
    let fault = Fault::of("500", steps, as_is).await;
    let err = fault.err(LlmErrorKind::ServerError, 3);
    assert_eq!((err.status(), err.message()), (Some(500), "boom"));
    assert!(!err.possibly_billed());
    assert!(err.to_string().contains("after 3 attempts"), "{err}");
}

#[tokio::test]
async fn slow_first_byte_times_out_each_attempt() {
    let fault = Fault::of("slow first byte (300 ms limit)", hung(), |config| {
        config.timeouts.first_byte_ms = 300;
        config.timeouts.total_ms = 3_000;
    })
    .await;
    let err = fault.err(LlmErrorKind::Timeout, 3);
    let elapsed = fault.elapsed;
    assert!(
        elapsed >= ms(900),
        "three attempts of 300 ms each: {elapsed:?}"
    );
    assert!(err.possibly_billed(), "the requests were sent: {err}");
    assert!(err.to_string().contains("may have been billed"), "{err}");
}

#[tokio::test]
async fn slow_first_byte_is_not_retried_when_billing_forbids_it() {
    let fault = Fault::of("slow first byte, no billed retries", hung(), |config| {
        config.timeouts.first_byte_ms = 300;
        config.retry.retry_possibly_billed = false;
    })
    .await;
    let err = fault.err(LlmErrorKind::Timeout, 1);
    assert!(err.possibly_billed());
}

#[tokio::test]
async fn the_call_deadline_caps_attempts_and_backoff() {
    let options = ChatOptions {
        timeout: Some(ms(400)),
        ..ChatOptions::default()
    };
    let tune = |config: &mut OpenAiConfig| {
        config.timeouts.first_byte_ms = 60_000;
        config.timeouts.attempt_ms = 60_000;
    };
    let fault =
        Fault::with_options("hung server, call timeout 400 ms", hung(), tune, &options).await;
    let err = fault.err_within(LlmErrorKind::Timeout, 1, ms(3 * 400));
    assert!(fault.elapsed >= ms(400), "{:?}", fault.elapsed);
    assert!(err.possibly_billed());
}

#[tokio::test]
async fn dropped_connection_mid_stream_is_retried_and_flagged() {
    let steps = vec![Step::Sse {
        events: events(vec![delta("content", "partial an")]),
        complete: false,
    }];
    let fault = Fault::of("connection dropped mid-stream", steps, streaming).await;
    let err = fault.err(LlmErrorKind::Connection, 3);
    assert!(err.possibly_billed(), "{err}");
}

#[tokio::test]
async fn dropped_stream_then_complete_stream_succeeds() {
    let mut full = vec![delta("content", "whole")];
    full.extend(stream_end(3, 1));
    let steps = vec![
        Step::Sse {
            events: events(vec![delta("content", "par")]),
            complete: false,
        },
        Step::Sse {
            events: events(full),
            complete: true,
        },
    ];
    let fault = Fault::of("dropped stream, then a good one", steps, streaming).await;
    assert_eq!(
        fault.content(),
        "whole",
        "nothing of the dropped attempt leaks in"
    );
    assert_eq!(fault.server.count(), 2);
}

#[tokio::test]
async fn stream_stalling_past_the_idle_limit_times_out() {
    let script = vec![
        (ms(0), delta("content", "a")),
        (ms(10_000), delta("content", "b")),
    ];
    let steps = vec![Step::Sse {
        events: script,
        complete: true,
    }];
    let fault = Fault::of("stream stalls (idle limit 300 ms)", steps, |config| {
        config.stream = true;
        config.timeouts.idle_ms = 300;
        config.retry.max_retries = 0;
    })
    .await;
    let err = fault.err_within(LlmErrorKind::Timeout, 1, ms(3 * 300));
    assert!(err.possibly_billed());
}

#[tokio::test]
async fn connection_closed_before_the_reply_is_retried_and_flagged() {
    let fault = Fault::of(
        "connection closed before the reply",
        vec![Step::Close],
        as_is,
    )
    .await;
    let err = fault.err(LlmErrorKind::Connection, 3);
    assert!(err.possibly_billed(), "{err}");
}

#[tokio::test]
async fn connection_refused_is_retried_and_not_billed() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    drop(listener);
    let config = fast_config(&format!("http://{addr}/v1"));
    let bound = hang_bound(&config);
    let (result, elapsed) = measure("connection refused", config, &ChatOptions::default()).await;
    let err = result.expect_err("nobody listens");
    assert_eq!(err.kind(), LlmErrorKind::Connection, "{err}");
    assert_eq!(err.attempts(), 3);
    assert!(!err.possibly_billed(), "nothing was sent: {err}");
    assert!(elapsed < bound, "{elapsed:?}");
}

#[tokio::test]
async fn malformed_json_is_a_content_error_not_retried() {
    let steps = vec![Step::status(200, "{\"choices\": [ {\"message\": ")];
    let fault = Fault::of("malformed JSON", steps, as_is).await;
    let err = fault.err_within(LlmErrorKind::InvalidResponse, 1, ms(2_000));
    assert_eq!(err.class(), LlmErrorClass::Content);
    assert!(err.possibly_billed());
}

#[tokio::test]
async fn malformed_stream_event_is_a_content_error() {
    let steps = vec![Step::Sse {
        events: events(vec!["{not json".to_owned()]),
        complete: true,
    }];
    let fault = Fault::of("malformed stream event", steps, streaming).await;
    fault.err_within(LlmErrorKind::InvalidResponse, 1, ms(2_000));
}

#[tokio::test]
async fn empty_choices_is_a_content_error() {
    let body = json!({"id": "x", "model": "m", "choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 0}});
    let fault = Fault::of("empty choices", vec![Step::ok(body)], as_is).await;
    let err = fault.err_within(LlmErrorKind::InvalidResponse, 1, ms(2_000));
    assert!(err.message().contains("choices"), "{err}");
}

#[tokio::test]
async fn empty_and_cut_off_replies_are_content_errors() {
    let mut empty = completion("");
    empty["choices"][0]["message"]["reasoning_content"] = json!("thought only");
    let mut cut = completion("{\"a\": [1, 2");
    cut["choices"][0]["finish_reason"] = json!("length");
    let server =
        TestServer::start(vec![Step::ok(empty), Step::ok(cut.clone()), Step::ok(cut)]).await;
    let config = fast_config(&server.base_url());
    let (result, _) = measure("empty content", config.clone(), &ChatOptions::default()).await;
    let err = result.expect_err("empty");
    assert_eq!(err.kind(), LlmErrorKind::EmptyContent);
    let (result, _) = measure(
        "cut off at max_tokens",
        config.clone(),
        &ChatOptions::default(),
    )
    .await;
    let err = result.expect_err("cut off");
    assert_eq!(err.kind(), LlmErrorKind::InvalidResponse);
    assert!(err.message().contains("cut off"), "{err}");
    let mut lenient = config;
    lenient.allow_truncated = true;
    let (result, _) = measure("cut off, allowed", lenient, &ChatOptions::default()).await;
    assert_eq!(result.expect("allowed").content, "{\"a\": [1, 2");
    assert_eq!(server.count(), 3, "content errors are never retried");
}

#[tokio::test]
async fn unauthorized_surfaces_at_once_with_the_server_message() {
    let steps = vec![Step::status(
        401,
        r#"{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}"#,
    )];
    let fault = Fault::of("401", steps, as_is).await;
    let err = fault.err_within(LlmErrorKind::Auth, 1, ms(2_000));
    // The server's words, then where the key came from (never the key).
    assert_eq!(
        (err.status(), err.message()),
        (
            Some(401),
            "Incorrect API key provided (the API key sent was the one the program passed)"
        )
    );
    assert!(err.is_permanent());
    assert!(!err.to_string().contains("sk-test-secret"));
}

#[tokio::test]
async fn unauthorized_without_a_key_says_none_was_sent() {
    let server = TestServer::start(vec![Step::status(
        401,
        r#"{"error":{"message":"Missing bearer token"}}"#,
    )])
    .await;
    let llm = evolution_llm_openai::OpenAiProvider::new(fast_config(&server.base_url()))
        .expect("no key needed");
    let err = llm
        .chat(&question(), &ChatOptions::default())
        .await
        .expect_err("401");
    assert_eq!(err.kind(), LlmErrorKind::Auth);
    assert_eq!(
        err.message(),
        "Missing bearer token (no API key was sent: set api_key_env to the environment variable \
         that holds one)"
    );
}

#[tokio::test]
async fn bad_request_surfaces_at_once_with_the_server_message() {
    let steps = vec![Step::status(
        400,
        r#"{"error":{"message":"This model's maximum context length is 8192 tokens","code":"context_length_exceeded"}}"#,
    )];
    let fault = Fault::of("400", steps, as_is).await;
    let err = fault.err_within(LlmErrorKind::BadRequest, 1, ms(2_000));
    assert_eq!(
        err.message(),
        "This model's maximum context length is 8192 tokens"
    );
}

#[tokio::test]
async fn unknown_model_surfaces_at_once() {
    let steps = vec![Step::status(
        404,
        r#"{"error":{"message":"The model `gpt-9` does not exist","code":"model_not_found"}}"#,
    )];
    let fault = Fault::of("404 model not found", steps, as_is).await;
    let err = fault.err_within(LlmErrorKind::ModelNotFound, 1, ms(2_000));
    assert!(err.message().contains("gpt-9"), "{err}");
}

#[tokio::test]
async fn retry_after_is_capped_by_the_policy() {
    let steps = vec![
        Step::status(429, "{}").with_header("Retry-After", "3"),
        Step::ok(completion("ok")),
    ];
    let fault = Fault::of("429 Retry-After: 3, capped at 200 ms", steps, |config| {
        config.retry.max_retry_after_ms = 200;
    })
    .await;
    assert_eq!(fault.content(), "ok");
    let wait = fault.first_wait();
    assert!(wait >= ms(200), "{wait:?}");
    let elapsed = fault.elapsed;
    assert!(
        elapsed < ms(2_000),
        "the 3 s request was capped: {elapsed:?}"
    );
}

#[tokio::test]
async fn stream_closed_without_done_or_finish_reason_is_a_dropped_connection() {
    let steps = vec![Step::Sse {
        events: events(vec![delta("content", "half a sent")]),
        complete: true,
    }];
    let fault = Fault::of("stream closed cleanly but unfinished", steps, streaming).await;
    let err = fault.err(LlmErrorKind::Connection, 3);
    assert!(err.possibly_billed());
    assert!(err.message().contains("without [DONE]"), "{err}");
}

#[tokio::test]
async fn the_call_deadline_stops_retries_that_would_run_past_it() {
    let name = "slow first byte, 10 retries allowed, deadline 1 s";
    let fault = Fault::of(name, hung(), |config| {
        config.timeouts.first_byte_ms = 300;
        config.timeouts.total_ms = 1_000;
        config.retry.max_retries = 10;
    })
    .await;
    let elapsed = fault.elapsed;
    let err = fault.result.expect_err("deadline");
    assert_eq!(err.kind(), LlmErrorKind::Timeout, "{err}");
    assert_eq!(err.attempts() as usize, fault.server.count());
    assert!((2..=4).contains(&err.attempts()), "{err}");
    assert!(elapsed >= ms(600) && elapsed < ms(1_500), "{elapsed:?}");
}

#[tokio::test]
async fn a_trickling_stream_is_cut_at_the_attempt_limit() {
    let script: Vec<_> = (0..100)
        .map(|i| (ms(50), delta("content", &format!("t{i} "))))
        .collect();
    let steps = vec![Step::Sse {
        events: script,
        complete: true,
    }];
    let fault = Fault::of("trickling stream (attempt limit 500 ms)", steps, |config| {
        config.stream = true;
        config.timeouts.attempt_ms = 500;
        config.retry.max_retries = 0;
    })
    .await;
    let err = fault.err_within(LlmErrorKind::Timeout, 1, ms(3 * 500));
    assert!(fault.elapsed >= ms(500), "{:?}", fault.elapsed);
    assert!(err.possibly_billed());
}

#[tokio::test]
async fn connect_timeout_when_the_server_never_accepts() {
    // A listener with a full accept queue: the kernel drops further SYNs, so
    // connecting hangs until the connect limit.
    let socket = tokio::net::TcpSocket::new_v4().expect("socket");
    socket
        .bind("127.0.0.1:0".parse().expect("addr"))
        .expect("bind");
    let listener = socket.listen(1).expect("listen");
    let addr = listener.local_addr().expect("addr");
    let mut fillers = Vec::new();
    for _ in 0..4 {
        if let Ok(Ok(s)) = tokio::time::timeout(ms(200), tokio::net::TcpStream::connect(addr)).await
        {
            fillers.push(s);
        }
    }
    let mut config = fast_config(&format!("http://{addr}/v1"));
    config.timeouts.connect_ms = 300;
    let bound = hang_bound(&config);
    let (result, elapsed) =
        measure("connect timeout (300 ms)", config, &ChatOptions::default()).await;
    let err = result.expect_err("never accepted");
    assert_eq!(err.kind(), LlmErrorKind::Timeout, "{err}");
    assert_eq!(err.attempts(), 3, "{err}");
    assert!(!err.possibly_billed(), "nothing was sent: {err}");
    assert!(elapsed >= ms(900) && elapsed < bound, "{elapsed:?}");
    drop(fillers);
}

#[tokio::test]
async fn a_zero_call_timeout_fails_at_once() {
    let options = ChatOptions {
        timeout: Some(Duration::ZERO),
        ..ChatOptions::default()
    };
    let steps = vec![Step::ok(completion("ok")).delayed(ms(1_000))];
    let fault = Fault::with_options("call timeout 0", steps, as_is, &options).await;
    let err = fault.result.expect_err("no time at all");
    assert_eq!(err.kind(), LlmErrorKind::Timeout, "{err}");
    assert!(err.attempts() <= 1, "{err}");
    assert!(fault.elapsed < ms(500), "{:?}", fault.elapsed);
}

/// A server that echoes the `Authorization` header (in an error, a reply, a
/// streamed reply) never gets the key past the provider.
#[tokio::test]
async fn an_echoed_api_key_is_redacted_in_errors_and_replies() {
    let echo = "Invalid header: Authorization: Bearer sk-test-secret (key sk-test-secret)";
    let error = serde_json::json!({"error": {"message": echo}}).to_string();
    let stream = Step::Sse {
        events: events(
            [
                delta("reasoning_content", "I saw sk-test-secret"),
                delta("content", echo),
            ]
            .into_iter()
            .chain(stream_end(1, 1)),
        ),
        complete: true,
    };
    let server = TestServer::start(vec![
        Step::status(401, &error),
        Step::status(503, echo),
        Step::ok(completion(echo)),
        stream,
    ])
    .await;
    let mut config = fast_config(&server.base_url());
    config.retry.max_retries = 0;
    let expected = "Invalid header: Authorization: Bearer <redacted> (key <redacted>)";
    for status in [401, 503] {
        let (result, _) = measure("echoed key", config.clone(), &ChatOptions::default()).await;
        let err = result.expect_err("an error status");
        assert_eq!(err.status(), Some(status));
        let note = if status == 401 {
            " (the API key sent was the one the program passed)"
        } else {
            ""
        };
        assert_eq!(err.message(), format!("{expected}{note}"));
        assert!(!err.to_string().contains("sk-test-secret"), "{err}");
    }
    let (result, _) = measure("echoed key", config.clone(), &ChatOptions::default()).await;
    assert_eq!(result.expect("a reply").content, expected);
    config.stream = true;
    let (result, _) = measure("echoed key", config, &ChatOptions::default()).await;
    let reply = result.expect("a streamed reply");
    assert_eq!(reply.content, expected);
    assert_eq!(reply.thinking, "I saw <redacted>");
}
