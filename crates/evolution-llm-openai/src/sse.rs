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
    ///
    /// A line that is not UTF-8 ends the stream: the decoder is not meant to
    /// be fed again after an error.
    pub(crate) fn feed(&mut self, bytes: &[u8]) -> Result<Vec<String>, NotUtf8> {
        self.buffer.extend_from_slice(bytes);
        let buffer = std::mem::take(&mut self.buffer);
        let mut events = Vec::new();
        for piece in buffer.split_inclusive(|&b| b == b'\n') {
            let Some(line) = piece.strip_suffix(b"\n") else {
                // Only the last piece can lack its newline: it waits for the rest.
                self.buffer.extend_from_slice(piece);
                break;
            };
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            let line = std::str::from_utf8(line).map_err(|_| NotUtf8)?;
            self.line(line, &mut events);
        }
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

    proptest::proptest! {
        #[test]
        fn any_split_of_any_bytes_decodes_like_the_whole(
            bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..400),
            cuts in proptest::collection::vec(0usize..400, 0..8),
        ) {
            let mut whole = SseDecoder::default();
            let expected = whole.feed(&bytes).and_then(|mut e| { e.extend(whole.finish()?); Ok(e) });
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(bytes.len())).collect();
            cuts.sort_unstable();
            let mut split = SseDecoder::default();
            let mut got = Ok(Vec::new());
            let mut start = 0;
            for end in cuts.into_iter().chain([bytes.len()]) {
                if let Ok(events) = &mut got {
                    match split.feed(&bytes[start..end]) {
                        Ok(more) => events.extend(more),
                        Err(e) => got = Err(e),
                    }
                }
                start = end;
            }
            if let Ok(events) = &mut got {
                match split.finish() {
                    Ok(more) => events.extend(more),
                    Err(e) => got = Err(e),
                }
            }
            // Invalid UTF-8 is reported either way; valid input decodes identically.
            proptest::prop_assert_eq!(expected.is_ok(), got.is_ok());
            if let (Ok(a), Ok(b)) = (expected, got) {
                proptest::prop_assert_eq!(a, b);
            }
        }

        #[test]
        fn data_lines_round_trip(payloads in proptest::collection::vec("[^\\r\\n]{0,40}", 0..6)) {
            let mut text = String::new();
            for p in &payloads {
                text.push_str("data: ");
                text.push_str(p);
                text.push_str("\n\n");
            }
            let mut d = SseDecoder::default();
            let mut events = d.feed(text.as_bytes()).unwrap_or_default();
            events.extend(d.finish().unwrap_or_default());
            proptest::prop_assert_eq!(events, payloads);
        }
    }
}
