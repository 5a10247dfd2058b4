//! A tiny HTTP/1.1 server on 127.0.0.1 that speaks the chat-completions wire
//! format from a script and injects faults. One request per connection.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::Instant;

/// What the server does with one request.
#[derive(Debug, Clone)]
pub(crate) enum Step {
    /// A complete response with a body.
    Json {
        status: u16,
        headers: Vec<(String, String)>,
        body: String,
    },
    /// An SSE response in chunked encoding; each event waits its delay first.
    /// With `complete == false` the connection is dropped after the last event
    /// instead of ending the chunked body.
    Sse {
        events: Vec<(Duration, String)>,
        complete: bool,
    },
    /// Wait, then do the inner step.
    Delay(Duration, Box<Step>),
    /// Close the connection without answering.
    Close,
}

impl Step {
    pub(crate) fn ok(body: Value) -> Step {
        Step::Json {
            status: 200,
            headers: vec![],
            body: body.to_string(),
        }
    }
    pub(crate) fn status(status: u16, body: &str) -> Step {
        Step::Json {
            status,
            headers: vec![],
            body: body.to_owned(),
        }
    }
    pub(crate) fn with_header(self, name: &str, value: &str) -> Step {
        match self {
            Step::Json {
                status,
                mut headers,
                body,
            } => {
                headers.push((name.to_owned(), value.to_owned()));
                Step::Json {
                    status,
                    headers,
                    body,
                }
            }
            other => other,
        }
    }
    pub(crate) fn delayed(self, by: Duration) -> Step {
        Step::Delay(by, Box::new(self))
    }
}

/// A completion body.
pub(crate) fn completion(content: &str) -> Value {
    json!({
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "server-model",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}
    })
}

/// One stream event carrying a delta.
pub(crate) fn delta(field: &str, text: &str) -> String {
    json!({
        "id": "chatcmpl-s", "object": "chat.completion.chunk", "model": "stream-model",
        "choices": [{"index": 0, "delta": {field: text}, "finish_reason": null}]
    })
    .to_string()
}

/// The closing events of a stream: finish reason, usage, `[DONE]`.
pub(crate) fn stream_end(prompt: u64, completion: u64) -> Vec<String> {
    vec![
        json!({"id": "chatcmpl-s", "model": "stream-model",
               "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
        .to_string(),
        json!({"id": "chatcmpl-s", "model": "stream-model", "choices": [],
               "usage": {"prompt_tokens": prompt, "completion_tokens": completion}})
        .to_string(),
        "[DONE]".to_owned(),
    ]
}

/// Events with no delay in between.
pub(crate) fn events(data: impl IntoIterator<Item = String>) -> Vec<(Duration, String)> {
    data.into_iter().map(|d| (Duration::ZERO, d)).collect()
}

/// A request the server received.
#[derive(Debug, Clone)]
pub(crate) struct Received {
    pub(crate) at: Instant,
    pub(crate) head: String,
    pub(crate) body: Value,
}

/// The running server; stops with the test's runtime.
pub(crate) struct TestServer {
    addr: SocketAddr,
    received: Arc<Mutex<Vec<Received>>>,
    in_flight: Arc<AtomicUsize>,
    max_in_flight: Arc<AtomicUsize>,
}

impl TestServer {
    /// Serves request `i` with `script[i]`, the last step repeating.
    pub(crate) async fn start(script: Vec<Step>) -> TestServer {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind loopback");
        let addr = listener.local_addr().expect("local addr");
        let received = Arc::new(Mutex::new(Vec::new()));
        let in_flight = Arc::new(AtomicUsize::new(0));
        let max_in_flight = Arc::new(AtomicUsize::new(0));
        let script = Arc::new(script);
        let counter = Arc::new(AtomicUsize::new(0));
        {
            let received = received.clone();
            let in_flight = in_flight.clone();
            let max_in_flight = max_in_flight.clone();
            tokio::spawn(async move {
                while let Ok((socket, _)) = listener.accept().await {
                    let received = received.clone();
                    let script = script.clone();
                    let counter = counter.clone();
                    let in_flight = in_flight.clone();
                    let max_in_flight = max_in_flight.clone();
                    tokio::spawn(async move {
                        let now = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
                        max_in_flight.fetch_max(now, Ordering::SeqCst);
                        serve(socket, &script, &counter, &received).await;
                        in_flight.fetch_sub(1, Ordering::SeqCst);
                    });
                }
            });
        }
        TestServer {
            addr,
            received,
            in_flight,
            max_in_flight,
        }
    }

    pub(crate) fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Requests received so far (the server-side request counter).
    pub(crate) fn count(&self) -> usize {
        self.received.lock().expect("lock").len()
    }

    pub(crate) fn received(&self) -> Vec<Received> {
        self.received.lock().expect("lock").clone()
    }

    pub(crate) fn max_in_flight(&self) -> usize {
        let _ = self.in_flight.load(Ordering::SeqCst);
        self.max_in_flight.load(Ordering::SeqCst)
    }
}

async fn serve(
    mut socket: TcpStream,
    script: &[Step],
    counter: &AtomicUsize,
    received: &Mutex<Vec<Received>>,
) {
    let Some((head, body)) = read_request(&mut socket).await else {
        return;
    };
    let index = counter.fetch_add(1, Ordering::SeqCst);
    received.lock().expect("lock").push(Received {
        at: Instant::now(),
        head,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    });
    let Some(step) = script.get(index.min(script.len().saturating_sub(1))) else {
        return;
    };
    respond(&mut socket, step).await;
}

async fn read_request(socket: &mut TcpStream) -> Option<(String, Vec<u8>)> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(pos) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break pos + 4;
        }
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let length = head
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse::<usize>().ok())
                .flatten()
        })
        .unwrap_or(0);
    let mut body = buf[head_end..].to_vec();
    while body.len() < length {
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    Some((head, body))
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        _ => "Status",
    }
}

fn respond<'a>(
    socket: &'a mut TcpStream,
    step: &'a Step,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + 'a>> {
    Box::pin(async move {
        match step {
            Step::Json {
                status,
                headers,
                body,
            } => {
                let mut out = format!(
                    "HTTP/1.1 {status} {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n",
                    reason(*status),
                    body.len()
                );
                for (k, v) in headers {
                    out.push_str(&format!("{k}: {v}\r\n"));
                }
                out.push_str("\r\n");
                out.push_str(body);
                let _ = socket.write_all(out.as_bytes()).await;
                let _ = socket.shutdown().await;
            }
            Step::Sse { events, complete } => {
                let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n";
                if socket.write_all(head.as_bytes()).await.is_err() {
                    return;
                }
                let _ = socket.flush().await;
                for (delay, data) in events {
                    tokio::time::sleep(*delay).await;
                    let event = format!("data: {data}\n\n");
                    let frame = format!("{:x}\r\n{event}\r\n", event.len());
                    if socket.write_all(frame.as_bytes()).await.is_err() {
                        return;
                    }
                    let _ = socket.flush().await;
                }
                if *complete {
                    let _ = socket.write_all(b"0\r\n\r\n").await;
                    let _ = socket.shutdown().await;
                }
                // Incomplete: the socket is dropped here, mid-body.
            }
            Step::Delay(by, inner) => {
                tokio::time::sleep(*by).await;
                respond(socket, inner).await;
            }
            Step::Close => {}
        }
    })
}
