//! A server-sent-events decoder: bytes in, complete `data` payloads out.
//!
//! Chat-completions streams use only the `data` field, so that is all this
//! keeps; comments, `event`, `id` and `retry` lines are skipped. A line may
//! end in `\n` or `\r\n`, and a network chunk may end anywhere, even inside a
//! multi-byte character: incomplete lines wait in the buffer for the rest.

/// Incremental SSE decoder.
#[derive(Debug, Default)]
pub(crate) struct SseDecoder {
    buffer: Vec<u8>,
    data: Option<String>,
}

/// A line of the stream was not UTF-8.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct NotUtf8;

impl SseDecoder {
    /// Feeds a chunk of bytes; returns the payloads of the events it completed.
    pub(crate) fn feed(&mut self, bytes: &[u8]) -> Result<Vec<String>, NotUtf8> {
        self.buffer.extend_from_slice(bytes);
        let mut events = Vec::new();
        let mut start = 0;
        while let Some(pos) = self.buffer[start..].iter().position(|&b| b == b'\n') {
            let end = start + pos;
            let line = self.buffer[start..end]
                .strip_suffix(b"\r")
                .unwrap_or(&self.buffer[start..end]);
            let line = std::str::from_utf8(line).map_err(|_| NotUtf8)?.to_owned();
            start = end + 1;
            self.line(&line, &mut events);
        }
        self.buffer.drain(..start);
        Ok(events)
    }

    /// Ends the stream: an event not yet closed by a blank line is returned.
    pub(crate) fn finish(&mut self) -> Result<Vec<String>, NotUtf8> {
        let mut events = Vec::new();
        if !self.buffer.is_empty() {
            let rest = std::mem::take(&mut self.buffer);
            let line = std::str::from_utf8(&rest).map_err(|_| NotUtf8)?;
            let line = line.strip_suffix('\r').unwrap_or(line).to_owned();
            self.line(&line, &mut events);
        }
        events.extend(self.data.take());
        Ok(events)
    }

    fn line(&mut self, line: &str, events: &mut Vec<String>) {
        if line.is_empty() {
            events.extend(self.data.take());
            return;
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        if field == "data" {
            match &mut self.data {
                Some(data) => {
                    data.push('\n');
                    data.push_str(value);
                }
                None => self.data = Some(value.to_owned()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(chunks: &[&[u8]]) -> Vec<String> {
        let mut d = SseDecoder::default();
        let mut out = Vec::new();
        for c in chunks {
            out.extend(d.feed(c).unwrap_or_default());
        }
        out.extend(d.finish().unwrap_or_default());
        out
    }

    #[test]
    fn decodes_events() {
        assert_eq!(decode(&[b"data: a\n\ndata: b\n\n"]), ["a", "b"]);
        assert_eq!(decode(&[b"data: a\r\n\r\ndata:b\r\n\r\n"]), ["a", "b"]);
        assert_eq!(
            decode(&[b": keep-alive\n\nevent: x\ndata: a\nid: 3\n\n"]),
            ["a"]
        );
        assert_eq!(decode(&[b"data: a\ndata: b\n\n"]), ["a\nb"]);
        assert_eq!(
            decode(&[b"da", b"ta: {\"x\"", b":1}\n", b"\n"]),
            ["{\"x\":1}"]
        );
        assert_eq!(decode(&[b"data: last"]), ["last"]);
        assert_eq!(decode(&[b"data: [DONE]\n\n"]), ["[DONE]"]);
        assert!(decode(&[b"\n\n\n"]).is_empty());
    }

    #[test]
    fn split_multibyte_characters_survive() {
        let text = "data: 思考\n\n".as_bytes();
        assert_eq!(decode(&[&text[..7], &text[7..]]), ["思考"]);
    }

    #[test]
    fn invalid_utf8_is_an_error() {
        let mut d = SseDecoder::default();
        assert_eq!(d.feed(b"data: \xff\n"), Err(NotUtf8));
    }
}
