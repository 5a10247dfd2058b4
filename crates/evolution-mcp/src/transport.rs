//! The server's stdio transport: JSON-RPC messages one per line, where every line the client
//! writes gets an answer.
//!
//! A line that is no message is answered with a JSON-RPC error instead of being dropped (a
//! client would otherwise wait forever): invalid UTF-8 or text that is not JSON gets a parse
//! error (-32700, `id` null), and so does JSON nested deeper than the parser's limit of 128
//! levels; JSON that is not a JSON-RPC message gets an invalid-request error (-32600) with the
//! line's `id` when it has one. A line longer than [`MAX_LINE_BYTES`] is refused with an
//! invalid-request error while it is read: its bytes are skipped, never held whole. A
//! notification (no `id`) of an unknown shape is ignored, as JSON-RPC wants.
//!
//! One task reads stdin and one writes stdout, so a line's error and the server's replies never
//! interleave, and reading is never cut off halfway through a line.

use std::io;

use rmcp::RoleServer;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::{Value, json};
use tokio::io::{AsyncBufRead, AsyncBufReadExt as _, AsyncRead, AsyncWrite, AsyncWriteExt as _};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// Most bytes of one incoming line (one JSON-RPC message), its newline included. A tool's
/// largest input, a handoff answer, is at most 1 MiB of text, which JSON escaping can grow
/// up to six times.
pub(crate) const MAX_LINE_BYTES: usize = 8 * 1024 * 1024;

/// Most characters of the parser's explanation an error carries.
const MAX_REASON_CHARS: usize = 300;

/// Lines and replies in flight between the reader, the server and the writer.
const QUEUE: usize = 32;

/// JSON-RPC's code for a line that is not JSON.
const PARSE_ERROR: i64 = -32700;

/// JSON-RPC's code for JSON that is not a valid request.
const INVALID_REQUEST: i64 = -32600;

/// The transport over a reader (stdin) and a writer (stdout).
pub(crate) struct LineTransport {
    incoming: mpsc::Receiver<RxJsonRpcMessage<RoleServer>>,
    outgoing: Option<mpsc::Sender<Vec<u8>>>,
    reader: JoinHandle<()>,
    writer: Option<JoinHandle<()>>,
}

impl LineTransport {
    /// Starts the reading and writing tasks on the current runtime.
    pub(crate) fn new<R, W>(read: R, write: W) -> Self
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
    {
        let (to_server, incoming) = mpsc::channel(QUEUE);
        let (outgoing, to_write) = mpsc::channel(QUEUE);
        let errors = outgoing.clone();
        let reader = tokio::spawn(read_lines(
            tokio::io::BufReader::new(read),
            to_server,
            errors,
        ));
        let writer = tokio::spawn(write_lines(write, to_write));
        LineTransport {
            incoming,
            outgoing: Some(outgoing),
            reader,
            writer: Some(writer),
        }
    }
}

impl Transport<RoleServer> for LineTransport {
    type Error = io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let outgoing = self.outgoing.clone();
        async move {
            let mut line = serde_json::to_vec(&item).map_err(io::Error::other)?;
            line.push(b'\n');
            match outgoing {
                Some(outgoing) => outgoing
                    .send(line)
                    .await
                    .map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "stdout is closed")),
                None => Err(io::Error::new(
                    io::ErrorKind::NotConnected,
                    "the transport is closed",
                )),
            }
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        self.incoming.recv().await
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        // The reader holds a sender of its own (for errors); once it and ours are gone, the
        // writer writes what is queued and ends.
        self.reader.abort();
        self.incoming.close();
        drop(self.outgoing.take());
        if let Some(writer) = self.writer.take() {
            writer.await.map_err(io::Error::other)?;
        }
        Ok(())
    }
}

/// What one read of a line gave.
#[derive(Debug, PartialEq, Eq)]
enum Line {
    /// A whole line, without its newline.
    Whole(Vec<u8>),
    /// A line longer than the cap: this many bytes of it were skipped.
    TooLong(u64),
}

/// Reads the next line of at most `max` bytes; `None` at the end of the input. A longer line
/// is skipped to its newline without being kept.
async fn next_line<R: AsyncBufRead + Unpin>(read: &mut R, max: usize) -> io::Result<Option<Line>> {
    let mut line = Vec::new();
    let mut skipped: Option<u64> = None;
    loop {
        let available = read.fill_buf().await?;
        if available.is_empty() {
            return Ok(match skipped {
                Some(n) => Some(Line::TooLong(n)),
                None if line.is_empty() => None,
                None => Some(Line::Whole(line)),
            });
        }
        let newline = available.iter().position(|b| *b == b'\n');
        let take = newline.map_or(available.len(), |at| at.saturating_add(1));
        let part = available.get(..take).unwrap_or_default();
        match skipped.as_mut() {
            Some(n) => *n = n.saturating_add(part.len() as u64),
            None if line.len().saturating_add(part.len()) > max => {
                skipped = Some((line.len().saturating_add(part.len())) as u64);
                line = Vec::new();
            }
            None => line.extend_from_slice(part),
        }
        read.consume(take);
        if newline.is_some() {
            return Ok(Some(match skipped {
                Some(n) => Line::TooLong(n),
                None => {
                    line.pop();
                    Line::Whole(line)
                }
            }));
        }
    }
}

/// The reading task: each line becomes a message for the server, an error for the writer, or
/// nothing (a blank line, a notification of an unknown shape).
async fn read_lines<R: AsyncBufRead + Unpin>(
    mut read: R,
    to_server: mpsc::Sender<RxJsonRpcMessage<RoleServer>>,
    errors: mpsc::Sender<Vec<u8>>,
) {
    loop {
        let line = match next_line(&mut read, MAX_LINE_BYTES).await {
            Ok(Some(line)) => line,
            Ok(None) => return,
            Err(e) => {
                tracing::error!("cannot read the MCP client's input: {e}");
                return;
            }
        };
        let answer = match line {
            Line::TooLong(bytes) => Err(error_line(
                INVALID_REQUEST,
                &format!(
                    "Invalid Request: the line is longer than the {MAX_LINE_BYTES} bytes a \
                     message may have ({bytes} bytes); it was skipped unread"
                ),
                Value::Null,
            )),
            Line::Whole(bytes) => classify(&bytes),
        };
        let delivered = match answer {
            Ok(Some(message)) => to_server.send(message).await.is_ok(),
            Ok(None) => true,
            Err(error) => errors.send(error).await.is_ok(),
        };
        if !delivered {
            return;
        }
    }
}

/// A line as the server's message, `None` for a line to ignore, or the error line to answer
/// it with.
fn classify(bytes: &[u8]) -> Result<Option<RxJsonRpcMessage<RoleServer>>, Vec<u8>> {
    let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let text = std::str::from_utf8(bytes).map_err(|e| {
        error_line(
            PARSE_ERROR,
            &format!(
                "Parse error: the line is not UTF-8 (invalid byte at offset {})",
                e.valid_up_to()
            ),
            Value::Null,
        )
    })?;
    if text.trim().is_empty() {
        return Ok(None);
    }
    let error = match serde_json::from_str::<RxJsonRpcMessage<RoleServer>>(text) {
        Ok(message) => return Ok(Some(message)),
        Err(e) => e,
    };
    let value = match serde_json::from_str::<Value>(text) {
        Ok(value) => value,
        Err(e) => {
            return Err(error_line(
                PARSE_ERROR,
                &format!("Parse error: {}", reason(&e)),
                Value::Null,
            ));
        }
    };
    let id = match value.get("id") {
        Some(id @ (Value::String(_) | Value::Number(_))) => id.clone(),
        _ => Value::Null,
    };
    let is_notification = value.get("method").is_some_and(Value::is_string)
        && value.as_object().is_some_and(|o| !o.contains_key("id"));
    if is_notification {
        tracing::debug!(
            "ignoring a notification of an unknown shape: {}",
            reason(&error)
        );
        return Ok(None);
    }
    Err(error_line(
        INVALID_REQUEST,
        &format!("Invalid Request: {}", reason(&error)),
        id,
    ))
}

/// The parser's explanation, at most [`MAX_REASON_CHARS`] characters.
fn reason(e: &serde_json::Error) -> String {
    let text = e.to_string();
    if text.chars().count() <= MAX_REASON_CHARS {
        return text;
    }
    let mut cut: String = text.chars().take(MAX_REASON_CHARS).collect();
    cut.push('…');
    cut
}

/// A JSON-RPC error response line.
fn error_line(code: i64, message: &str, id: Value) -> Vec<u8> {
    let mut line = json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": { "code": code, "message": message },
    })
    .to_string()
    .into_bytes();
    line.push(b'\n');
    line
}

/// The writing task: each line written and flushed in the order it came.
async fn write_lines<W: AsyncWrite + Unpin>(mut write: W, mut lines: mpsc::Receiver<Vec<u8>>) {
    while let Some(line) = lines.recv().await {
        let written = async {
            write.write_all(&line).await?;
            write.flush().await
        };
        if let Err(e) = written.await {
            tracing::error!("cannot write to the MCP client: {e}");
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(input: &[u8], max: usize) -> Vec<Line> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        runtime.block_on(async {
            // A tiny buffer, so lines cross many reads.
            let mut read = tokio::io::BufReader::with_capacity(3, input);
            let mut out = Vec::new();
            while let Some(line) = next_line(&mut read, max).await.unwrap() {
                out.push(line);
            }
            out
        })
    }

    #[test]
    fn lines_longer_than_the_cap_are_skipped_to_their_newline() {
        assert_eq!(
            lines(b"ab\n0123456789\ncd\n\nxyz", 5),
            [
                Line::Whole(b"ab".to_vec()),
                Line::TooLong(11),
                Line::Whole(b"cd".to_vec()),
                Line::Whole(Vec::new()),
                Line::Whole(b"xyz".to_vec()),
            ]
        );
        assert_eq!(lines(b"0123456789", 5), [Line::TooLong(10)]);
        assert_eq!(lines(b"1234\n", 5), [Line::Whole(b"1234".to_vec())]);
        assert!(lines(b"", 5).is_empty());
    }

    fn answer(line: &str) -> Value {
        let error = classify(line.as_bytes()).unwrap_err();
        serde_json::from_slice(&error).unwrap()
    }

    #[test]
    fn every_line_that_is_no_message_is_answered() {
        let not_json = answer("{\"jsonrpc\": \"2.0\", ");
        assert_eq!(not_json["error"]["code"], PARSE_ERROR);
        assert_eq!(not_json["id"], Value::Null);
        let deep = format!("{}{}", "[".repeat(5000), "]".repeat(5000));
        let deep = answer(&deep);
        assert_eq!(deep["error"]["code"], PARSE_ERROR);
        assert!(
            deep["error"]["message"]
                .as_str()
                .unwrap()
                .contains("recursion")
        );
        let not_utf8 = classify(b"{\"a\": \"\xff\"}").unwrap_err();
        let not_utf8: Value = serde_json::from_slice(&not_utf8).unwrap();
        assert_eq!(not_utf8["error"]["code"], PARSE_ERROR);
        let shapeless = answer(r#"{"jsonrpc": "2.0", "id": 7, "params": 1}"#);
        assert_eq!(shapeless["error"]["code"], INVALID_REQUEST);
        assert_eq!(shapeless["id"], 7);
        assert_eq!(answer("[1, 2]")["error"]["code"], INVALID_REQUEST);
        assert_eq!(answer("42")["id"], Value::Null);
    }

    #[test]
    fn messages_pass_and_blank_lines_and_odd_notifications_are_ignored() {
        let ping = classify(br#"{"jsonrpc": "2.0", "id": 1, "method": "ping"}"#).unwrap();
        assert!(ping.is_some());
        assert!(classify(b"  \r").unwrap().is_none());
        // A notification is never answered, whatever its shape.
        let odd = br#"{"jsonrpc": "2.0", "method": "notifications/x", "params": [[3]]}"#;
        assert!(classify(odd).is_ok());
    }
}
