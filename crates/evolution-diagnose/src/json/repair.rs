//! A lenient JSON parser for what language models write when asked for JSON.
//!
//! It reads a JSON-like text into a `serde_json::Value`, guessing at what was
//! meant where the text is broken: missing or doubled quotes, single and
//! typographic quotes, unquoted keys and values, missing commas and colons,
//! trailing commas, comments, Python literals, tuples, truncated endings and
//! full-width `：，｛｝［］` used as punctuation. Text inside strings is kept
//! as written (full-width punctuation in a Chinese sentence stays).
//!
//! The parser works on a `Vec<char>` with checked access everywhere and a
//! nesting limit, so it cannot panic or overflow the stack on any input.

use serde_json::{Map, Number, Value};

/// Deepest nesting the parser follows before giving up.
const MAX_DEPTH: usize = 256;

/// Where a value is being read; decides which characters end it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Ctx {
    Key,
    Value,
    Array,
}

/// Repairs `text` into the first JSON object it holds.
///
/// Skips anything before the first `{`. When the object closes early and the
/// text goes on with more members (`{"a": 1}, "b": 2}`), those are read into
/// the same object. `None` when the text holds no object or nests deeper than
/// the limit.
pub(crate) fn repair_object(text: &str) -> Option<Map<String, Value>> {
    let mut parser = Parser {
        s: text.chars().collect(),
        i: 0,
        depth: 0,
        too_deep: false,
        bare_end: Search::default(),
        bare_separator: Search::default(),
        bare_quote: None,
    };
    let start = parser.s.iter().position(|&c| c == '{' || c == '｛')?;
    parser.i = start + 1;
    let mut object = parser.object_body(false);
    // Members after an early close: `{"a": 1}, "b": 2}`.
    loop {
        parser.skip_ws_and_commas();
        match parser.peek() {
            Some(c) if is_open_quote(c) => {
                let more = parser.object_body(false);
                object.extend(more);
            }
            _ => break,
        }
    }
    if parser.too_deep {
        return None;
    }
    Some(object)
}

struct Parser {
    s: Vec<char>,
    i: usize,
    depth: usize,
    too_deep: bool,
    /// Where an unquoted value's look-ahead for its closing quote stops.
    bare_end: Search,
    /// The next `,` or space, which tells a sentence from a word.
    bare_separator: Search,
    /// The verdict on the last closing quote that look-ahead stopped at:
    /// (its index, whether it closes the value).
    bare_quote: Option<(usize, bool)>,
}

/// The last answer of a forward search for the first character of a kind:
/// searched from `from`, found at `found` (the text's length when absent).
///
/// No character of the kind lies in `from..found`, so a later search
/// starting anywhere in that range has the same answer. Unquoted values are
/// read left to right, so each character is looked at about once: a text of
/// many short values (`{k:a,k:a,…}`) is read in linear time, not one scan to
/// the end of the text per value.
#[derive(Default)]
struct Search {
    from: usize,
    found: usize,
    valid: bool,
}

impl Search {
    /// The first index at or after `from` whose character matches `kind`.
    fn find(&mut self, s: &[char], from: usize, kind: fn(char) -> bool) -> usize {
        if self.valid && (self.from..=self.found).contains(&from) {
            return self.found;
        }
        let found = s
            .get(from..)
            .and_then(|rest| rest.iter().position(|&c| kind(c)))
            .map_or(s.len(), |at| from.saturating_add(at));
        *self = Search {
            from,
            found,
            valid: true,
        };
        found
    }
}

/// Characters that end an unquoted value's look-ahead for its closing quote.
fn ends_bare_look_ahead(c: char) -> bool {
    matches!(normalize_punct(c), '"' | '}' | '{' | '\n')
}

fn is_separator(c: char) -> bool {
    c == ',' || c == ' '
}

fn is_open_quote(c: char) -> bool {
    matches!(c, '"' | '\'' | '“' | '”' | '‘' | '’' | '＂')
}

/// The quote that closes a string opened with `open`.
fn closing_quote(open: char) -> char {
    match open {
        '“' => '”',
        '‘' => '’',
        other => other,
    }
}

fn normalize_punct(c: char) -> char {
    match c {
        '：' => ':',
        '，' => ',',
        '｛' => '{',
        '｝' => '}',
        '［' => '[',
        '］' => ']',
        other => other,
    }
}

impl Parser {
    /// The next character, with full-width punctuation read as ASCII.
    fn peek(&self) -> Option<char> {
        self.s.get(self.i).copied().map(normalize_punct)
    }

    fn raw(&self, at: usize) -> Option<char> {
        self.s.get(at).copied()
    }

    fn bump(&mut self) {
        self.i = self.i.saturating_add(1);
    }

    /// Index of the next non-blank character at or after `from`.
    fn skip_blank_from(&self, from: usize) -> usize {
        let mut at = from;
        while let Some(c) = self.s.get(at) {
            if c.is_whitespace() {
                at += 1;
            } else {
                break;
            }
        }
        at
    }

    fn skip_ws(&mut self) {
        loop {
            self.i = self.skip_blank_from(self.i);
            match (self.raw(self.i), self.raw(self.i + 1)) {
                (Some('/'), Some('/')) => self.skip_line_comment(false),
                (Some('#'), _) => self.skip_line_comment(true),
                (Some('/'), Some('*')) => {
                    self.i += 2;
                    loop {
                        match (self.raw(self.i), self.raw(self.i + 1)) {
                            (Some('*'), Some('/')) => {
                                self.i += 2;
                                break;
                            }
                            (None, _) => break,
                            _ => self.bump(),
                        }
                    }
                }
                _ => return,
            }
        }
    }

    /// Skips a `//` or `#` comment to the end of the line; a `#` comment
    /// also ends before a closing bracket on the same line.
    fn skip_line_comment(&mut self, stop_at_closer: bool) {
        while let Some(c) = self.raw(self.i) {
            if c == '\n' || (stop_at_closer && matches!(normalize_punct(c), '}' | ']')) {
                break;
            }
            self.bump();
        }
    }

    fn skip_ws_and_commas(&mut self) {
        loop {
            self.skip_ws();
            if self.peek() == Some(',') {
                self.bump();
            } else {
                return;
            }
        }
    }

    fn enter(&mut self) -> bool {
        if self.depth >= MAX_DEPTH {
            self.too_deep = true;
            self.i = self.s.len();
            return false;
        }
        self.depth += 1;
        true
    }

    /// Reads members after a `{` up to its `}` (or the end of the text).
    fn object_body(&mut self, in_array: bool) -> Map<String, Value> {
        let mut object = Map::new();
        if !self.enter() {
            return object;
        }
        let mut last_key: Option<String> = None;
        loop {
            self.skip_ws();
            let Some(c) = self.peek() else { break };
            match c {
                '}' => {
                    self.bump();
                    break;
                }
                ']' => {
                    // A `]` closes the enclosing array: leave it to that array.
                    if in_array {
                        break;
                    }
                    self.bump();
                }
                ',' | ':' => self.bump(),
                '[' => {
                    // An array where a key belongs: more items for the previous array.
                    self.bump();
                    let items = self.array_body(']');
                    match last_key.as_ref().and_then(|k| object.get_mut(k)) {
                        Some(Value::Array(previous)) => previous.extend(items),
                        _ => {
                            if let Some(Value::String(key)) = items.into_iter().next() {
                                object.insert(key.clone(), Value::String(String::new()));
                                last_key = Some(key);
                            }
                        }
                    }
                }
                '{' => {
                    // An object where a key belongs: read and drop it.
                    self.bump();
                    let _ = self.object_body(in_array);
                }
                _ => {
                    let Some(key) = self.key() else { continue };
                    self.skip_ws();
                    match self.peek() {
                        Some(':') => self.bump(),
                        None => break,
                        _ => {}
                    }
                    let value = self.value(Ctx::Value);
                    if !object.contains_key(&key) {
                        object.insert(key.clone(), value);
                    }
                    last_key = Some(key);
                }
            }
        }
        self.depth = self.depth.saturating_sub(1);
        object
    }

    /// Reads a key; `None` when what stood there was not a key (a stray word).
    fn key(&mut self) -> Option<String> {
        let c = self.raw(self.i)?;
        if is_open_quote(c) {
            let key = self.string(Ctx::Key);
            return Some(key.trim_end_matches(['\n', '\r']).to_owned());
        }
        // An unquoted key runs to a colon; a word followed by anything else is noise.
        let start = self.i;
        while let Some(c) = self.peek() {
            if matches!(c, ':' | ',' | '}' | ']' | '{' | '[') || is_open_quote(c) {
                break;
            }
            self.bump();
        }
        let word: String = self
            .s
            .get(start..self.i)
            .unwrap_or_default()
            .iter()
            .collect();
        if self.i == start {
            // Nothing consumed: skip the character so the loop moves on.
            self.bump();
            return None;
        }
        if self.peek() == Some(':') {
            Some(word.trim().to_owned())
        } else {
            None
        }
    }

    fn value(&mut self, ctx: Ctx) -> Value {
        self.skip_ws();
        let Some(c) = self.peek() else {
            return Value::String(String::new());
        };
        match c {
            '{' => {
                self.bump();
                Value::Object(self.object_body(ctx == Ctx::Array))
            }
            '[' => {
                self.bump();
                Value::Array(self.array_body(']'))
            }
            '(' => {
                self.bump();
                let mut items = self.array_body(')');
                if items.len() == 1 {
                    items.pop().unwrap_or(Value::Null)
                } else {
                    Value::Array(items)
                }
            }
            '}' | ',' | ']' | ')' => Value::String(String::new()),
            c if is_open_quote(c) => Value::String(self.string(ctx)),
            c if c.is_ascii_digit() || c == '-' || c == '.' || c == '+' => self.number(ctx),
            _ => self.literal_or_bare(ctx),
        }
    }

    /// Reads items after an opening bracket up to `close` (or a mismatched closer).
    fn array_body(&mut self, close: char) -> Vec<Value> {
        let mut items = Vec::new();
        if !self.enter() {
            return items;
        }
        loop {
            self.skip_ws();
            let Some(c) = self.peek() else { break };
            if c == close || c == '}' || (close == ')' && c == ']') {
                self.bump();
                break;
            }
            if c == ',' || c == ':' {
                self.bump();
                continue;
            }
            let before = self.i;
            let item = self.value(Ctx::Array);
            self.skip_ws();
            // `['a': {...}]`: a key-value pair inside an array becomes an object.
            if let (Value::String(key), Some(':')) = (&item, self.peek()) {
                let key = key.clone();
                self.bump();
                let value = self.value(Ctx::Value);
                let mut object = Map::new();
                object.insert(key, value);
                items.push(Value::Object(object));
            } else {
                items.push(item);
            }
            if self.i == before {
                self.bump();
            }
        }
        self.depth = self.depth.saturating_sub(1);
        items
    }

    /// True when a quote at `at` ends the string being read in `ctx`.
    fn quote_closes(&self, at: usize, ctx: Ctx) -> bool {
        self.quote_closes_after(at, ctx, 0)
    }

    /// Like [`Parser::quote_closes`], knowing how many quotes the string
    /// already holds: with an odd count, a quote followed by a space most
    /// likely closes an inner quotation rather than the string.
    fn quote_closes_after(&self, at: usize, ctx: Ctx, inner_quotes: usize) -> bool {
        let next_at = self.skip_blank_from(at + 1);
        let next = self.raw(next_at).map(normalize_punct);
        let spaced = next_at > at + 1;
        let even = inner_quotes.is_multiple_of(2);
        match (ctx, next) {
            (_, None) => true,
            (Ctx::Key, Some(c)) => {
                matches!(c, ':' | '}' | ',')
                    || (spaced
                        && even
                        && (is_open_quote(c)
                            || c.is_alphanumeric()
                            || matches!(c, '{' | '[' | '-')))
            }
            (Ctx::Value, Some(c)) => {
                matches!(c, ',' | '}' | ']' | ':' | '`')
                    || self.starts_key(next_at)
                    || (spaced && (c == '#' || self.raw(next_at) == Some('/')))
                    || (spaced && even && !self.quote_before_close(next_at))
            }
            (Ctx::Array, Some(c)) => {
                matches!(c, ',' | ']' | '}' | ')' | ':' | '`') || (spaced && even)
            }
        }
    }

    /// True when a quote right after an opening quote closes an empty string
    /// (`"": 1`) rather than doubling the opening one (`""key"`).
    fn empty_string_closes(&self, at: usize, ctx: Ctx) -> bool {
        let next = self.raw(self.skip_blank_from(at + 1)).map(normalize_punct);
        match (ctx, next) {
            (_, None) => true,
            (Ctx::Key, Some(c)) => matches!(c, ':' | '}' | ','),
            _ => self.quote_closes(at, ctx),
        }
    }

    /// True when another `"` comes before the next `}` or line end from `at`.
    fn quote_before_close(&self, at: usize) -> bool {
        let mut j = at;
        while let Some(c) = self.raw(j) {
            match normalize_punct(c) {
                '"' => return true,
                '}' | '\n' => return false,
                _ => j += 1,
            }
        }
        false
    }

    /// True when a quoted key followed by a colon starts at `at` (`"key":`).
    fn starts_key(&self, at: usize) -> bool {
        if self.raw(at) != Some('"') {
            return false;
        }
        let mut j = at + 1;
        while let Some(c) = self.raw(j) {
            match c {
                '"' => {
                    let after = self.skip_blank_from(j + 1);
                    return matches!(self.raw(after).map(normalize_punct), Some(':'));
                }
                '\n' | '{' | '}' | '[' | ']' | ',' => return false,
                _ => j += 1,
            }
        }
        false
    }

    /// Reads a string opened at the current character.
    fn string(&mut self, ctx: Ctx) -> String {
        let Some(open) = self.raw(self.i) else {
            return String::new();
        };
        let close = closing_quote(open);
        self.bump();
        // A doubled opening quote (`""value"`) counts once.
        if self.raw(self.i) == Some(close) && !self.empty_string_closes(self.i, ctx) {
            self.bump();
        }
        let mut out = String::new();
        let mut inner_quotes = 0usize;
        let mut key_colon: Option<(usize, usize)> = None;
        while let Some(c) = self.raw(self.i) {
            if c == '\\' {
                self.escape(&mut out);
                continue;
            }
            if ctx == Ctx::Key && normalize_punct(c) == ':' {
                // `"key:"value"`: the key's closing quote strayed past the colon.
                if self.raw(self.i + 1) == Some(close) && !self.quote_closes(self.i + 1, ctx) {
                    self.i += 2;
                    return out;
                }
                key_colon.get_or_insert((self.i, out.len()));
            }
            if c == close {
                // A doubled closing quote (`"value""`) counts once.
                if self.raw(self.i + 1) == Some(close) && self.quote_closes(self.i + 1, ctx) {
                    self.i += 2;
                    return out;
                }
                if self.quote_closes_after(self.i, ctx, inner_quotes) {
                    self.bump();
                    return out;
                }
                // A quote that starts the next key: this string lacked its closing quote.
                if ctx == Ctx::Value && self.starts_key(self.i) {
                    let trimmed = out.trim_end().trim_end_matches(',').trim_end();
                    return trimmed.to_owned();
                }
                inner_quotes += 1;
                out.push(c);
                self.bump();
                continue;
            }
            out.push(c);
            self.bump();
        }
        // Unterminated key holding a colon (`{"key:value}`): the key ends there.
        if let Some((at, len)) = key_colon {
            self.i = at;
            return out.get(..len).unwrap_or_default().to_owned();
        }
        // Unterminated value: the string probably ended before a closing bracket.
        let cut = match ctx {
            Ctx::Key => None,
            Ctx::Value | Ctx::Array => out.find(['}', ']']),
        };
        match cut {
            Some(at) => out.get(..at).unwrap_or_default().trim_end().to_owned(),
            None => out.trim_end().to_owned(),
        }
    }

    fn escape(&mut self, out: &mut String) {
        self.bump();
        let Some(c) = self.raw(self.i) else {
            return;
        };
        self.bump();
        match c {
            'n' => out.push('\n'),
            't' => out.push('\t'),
            'r' => out.push('\r'),
            'b' => out.push('\u{8}'),
            'f' => out.push('\u{c}'),
            '/' => out.push('/'),
            '\\' => out.push('\\'),
            '"' | '\'' => out.push(c),
            'u' => {
                let hex: String = self
                    .s
                    .get(self.i..self.i.saturating_add(4).min(self.s.len()))
                    .unwrap_or_default()
                    .iter()
                    .collect();
                match u32::from_str_radix(&hex, 16)
                    .ok()
                    .filter(|_| hex.len() == 4)
                {
                    Some(code) => {
                        self.i += 4;
                        // Surrogate pairs: combine with a following `\uDCxx`.
                        if (0xD800..0xDC00).contains(&code)
                            && let Some(low) = self.low_surrogate()
                        {
                            let combined = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
                            out.push(char::from_u32(combined).unwrap_or('\u{FFFD}'));
                            return;
                        }
                        out.push(char::from_u32(code).unwrap_or('\u{FFFD}'));
                    }
                    None => {
                        out.push('\\');
                        out.push('u');
                    }
                }
            }
            other if other.is_ascii_alphanumeric() => {
                // An unknown escape such as `\l` is kept as written.
                out.push('\\');
                out.push(other);
            }
            other => out.push(other),
        }
    }

    fn low_surrogate(&mut self) -> Option<u32> {
        if self.raw(self.i) != Some('\\') || self.raw(self.i + 1) != Some('u') {
            return None;
        }
        let hex: String = self.s.get(self.i + 2..self.i + 6)?.iter().collect();
        let low = u32::from_str_radix(&hex, 16).ok()?;
        if (0xDC00..0xE000).contains(&low) {
            self.i += 6;
            Some(low)
        } else {
            None
        }
    }

    fn is_delimiter(c: Option<char>) -> bool {
        match c.map(normalize_punct) {
            None => true,
            Some(c) => c.is_whitespace() || matches!(c, ',' | '}' | ']' | ')' | ':' | '"'),
        }
    }

    fn number(&mut self, ctx: Ctx) -> Value {
        let start = self.i;
        while let Some(c) = self.raw(self.i) {
            if c.is_ascii_digit() || matches!(c, '.' | '-' | '+' | 'e' | 'E' | '_') {
                self.bump();
            } else {
                break;
            }
        }
        if !Self::is_delimiter(self.raw(self.i)) {
            self.i = start;
            return self.bare(ctx);
        }
        let text: String = self
            .s
            .get(start..self.i)
            .unwrap_or_default()
            .iter()
            .collect();
        match parse_number(&text) {
            Some(n) => {
                // A stray quote right after a number (`12345",`) is dropped.
                if self.raw(self.i) == Some('"') && self.quote_closes(self.i, ctx) {
                    self.bump();
                }
                Value::Number(n)
            }
            None => {
                self.i = start;
                self.bare(ctx)
            }
        }
    }

    fn literal_or_bare(&mut self, ctx: Ctx) -> Value {
        let start = self.i;
        while self.raw(self.i).is_some_and(|c| c.is_ascii_alphabetic()) {
            self.bump();
        }
        let word: String = self
            .s
            .get(start..self.i)
            .unwrap_or_default()
            .iter()
            .collect();
        if Self::is_delimiter(self.raw(self.i)) {
            match word.to_ascii_lowercase().as_str() {
                "true" => return Value::Bool(true),
                "false" => return Value::Bool(false),
                "null" | "none" => return Value::Null,
                _ => {}
            }
        }
        self.i = start;
        self.bare(ctx)
    }

    /// True when the quote at `at` closes an unquoted value rather than
    /// starting a key; remembered for the next value that looks ahead to it.
    fn bare_quote_closes(&mut self, at: usize) -> bool {
        if let Some((known, closes)) = self.bare_quote
            && known == at
        {
            return closes;
        }
        let closes = self.quote_closes(at, Ctx::Value) && !self.starts_key(at);
        self.bare_quote = Some((at, closes));
        closes
    }

    /// Reads an unquoted string value.
    fn bare(&mut self, ctx: Ctx) -> Value {
        let start = self.i;
        // `ipsum, sic, datum.",}`: a value missing only its opening quote.
        if ctx == Ctx::Value {
            let j = self.bare_end.find(&self.s, start, ends_bare_look_ahead);
            if self.raw(j) == Some('"') && self.bare_quote_closes(j) {
                let separated = self.bare_separator.find(&self.s, start, is_separator) < j;
                if separated {
                    let text: String = self.s.get(start..j).unwrap_or_default().iter().collect();
                    self.i = j + 1;
                    return Value::String(text.trim().to_owned());
                }
            }
        }
        let mut braces = 0usize;
        while let Some(raw) = self.raw(self.i) {
            let c = normalize_punct(raw);
            match c {
                '{' => braces += 1,
                '}' if braces > 0 => braces -= 1,
                '}' | ',' | '\n' | '"' => break,
                ']' if ctx == Ctx::Array || braces == 0 => break,
                ')' if ctx == Ctx::Array => break,
                _ => {}
            }
            self.bump();
        }
        let text: String = self
            .s
            .get(start..self.i)
            .unwrap_or_default()
            .iter()
            .collect();
        // A stray closing quote after a bare word (`abcdef",`) is dropped.
        if self.raw(self.i) == Some('"')
            && self.quote_closes(self.i, ctx)
            && !self.starts_key(self.i)
        {
            self.bump();
        }
        if self.i == start {
            self.bump();
        }
        Value::String(text.trim().to_owned())
    }
}

/// Parses a number the way a model might write it: `1_000`, `.25`, `1.`, `1e`.
fn parse_number(text: &str) -> Option<Number> {
    let mut t: String = text.chars().filter(|&c| c != '_').collect();
    while t.ends_with(['e', 'E', '+', '-']) {
        t.pop();
    }
    if t.is_empty() {
        return None;
    }
    if t.ends_with('.') {
        t.push('0');
    }
    if t.starts_with('.') {
        t.insert(0, '0');
    } else if t.starts_with("-.") {
        t.insert(1, '0');
    }
    let t = t.strip_prefix('+').unwrap_or(&t).to_owned();
    match serde_json::from_str::<Value>(&t) {
        Ok(Value::Number(n)) => Some(n),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn num(text: &str) -> Option<String> {
        parse_number(text).map(|n| n.to_string())
    }

    #[test]
    fn numbers_as_models_write_them() {
        assert_eq!(num("1_000").as_deref(), Some("1000"));
        assert_eq!(num(".25").as_deref(), Some("0.25"));
        assert_eq!(num("-.5").as_deref(), Some("-0.5"));
        assert_eq!(num("1.").as_deref(), Some("1.0"));
        assert_eq!(num("1e").as_deref(), Some("1"));
        assert_eq!(num("+7").as_deref(), Some("7"));
        assert_eq!(num("1.1.1"), None);
        assert_eq!(num("-"), None);
        assert_eq!(num(""), None);
    }

    #[test]
    fn object_extraction_edges() {
        assert_eq!(repair_object("no braces"), None);
        assert_eq!(repair_object("{").map(|o| o.len()), Some(0));
        let o = repair_object("{\"a\": 1}, \"b\": 2}").unwrap_or_default();
        assert_eq!(o.len(), 2);
        // Surrogate pairs combine; a lone surrogate becomes U+FFFD.
        let o = repair_object(r#"{"e": "\ud83d\ude00", "l": "\ud800x"}"#).unwrap_or_default();
        assert_eq!(o.get("e").and_then(Value::as_str), Some("😀"));
        assert_eq!(o.get("l").and_then(Value::as_str), Some("\u{FFFD}x"));
    }

    /// The shapes whose unquoted values each used to look ahead to the end of the text.
    #[test]
    fn many_unquoted_values_read_as_before() {
        let keys: Vec<String> = (0..300).map(|i| format!("k{i}:a")).collect();
        let o = repair_object(&format!("{{{}}}", keys.join(","))).unwrap_or_default();
        assert_eq!(o.len(), 300);
        assert!(o.values().all(|v| v == "a"));
        let same = vec!["k:a"; 300].join(",");
        let o = repair_object(&format!("{{{same}}}")).unwrap_or_default();
        assert_eq!(Value::Object(o), serde_json::json!({"k": "a"}));
        // A quote far ahead closes the first value that holds a separator.
        let spaced: Vec<String> = (0..50).map(|i| format!("k{i}: a b")).collect();
        let text = format!("{{{}\"}}", spaced.join(","));
        let o = repair_object(&text).unwrap_or_default();
        let expected: String = spaced.join(",");
        let expected = expected.strip_prefix("k0: ").unwrap_or_default().trim();
        assert_eq!(Value::Object(o), serde_json::json!({"k0": expected}));
        // Commas are separators too: the whole run up to the quote is one value.
        let words = vec!["k:a"; 50].join(",");
        let o = repair_object(&format!("{{x:{words}\", \"y\": 1}}")).unwrap_or_default();
        assert_eq!(Value::Object(o), serde_json::json!({"x": words, "y": 1}));
        // Without a separator before it, the quote is left to the main scan.
        let o = repair_object("{x:abc\", \"y\": 1}").unwrap_or_default();
        assert_eq!(Value::Object(o), serde_json::json!({"x": "abc", "y": 1}));
        // Lines and braces end the look-ahead, as before.
        let o = repair_object("{a: b c\n, d: e f\", g: {h: i j\"}}").unwrap_or_default();
        assert_eq!(
            Value::Object(o),
            serde_json::json!({"a": "b c", "d": "e f", "g": {"h": "i j"}})
        );
    }
}
