//! Where a value found after its name ends: at its closing quote, or, bare, at what ends it
//! in its setting (whitespace, a shell operator, the next `&key=` of a query), never inside
//! it, so that a value is always replaced whole: `SECRET_KEY=django-insecure-a&b;c(d` is one
//! value, `?token=x&page=2` ends at `&`.

/// How a candidate's value is read.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Syntax {
    /// Quoted (`"…"`, `'…'`, `` `…` ``, `\"…\"`) or bare up to what ends it.
    Config,
    /// Bare in a query string (`?a=1&token=x`): `&`, `;` and `#` end it too.
    Query,
    /// Bare in a connection string (`User Id=u;Password=x;`): `;` ends it too.
    Connection,
    /// A header token: base64 and URL-safe characters only.
    HeaderToken,
    /// The text of an XML element: up to the next `<`.
    XmlText,
    /// The password of `user/password@database` (Oracle): up to `@`, a quote or whitespace.
    UserPass,
    /// One segment of a URL's path: letters, digits, `-`, `_`, `~`, `%` and `.`.
    PathSegment,
}

/// A value's place in the text: the bytes to replace.
pub(super) struct Span {
    pub(super) start: usize,
    pub(super) end: usize,
    pub(super) quoted: bool,
}

/// Reads the value that starts at byte `at` of `text`, looking at most `limit` bytes into it.
pub(super) fn read_value(text: &str, at: usize, syntax: Syntax, limit: usize) -> Option<Span> {
    let rest = text.get(at..)?;
    let bare = |len: usize| {
        Some(Span {
            start: at,
            end: at.checked_add(len)?,
            quoted: false,
        })
    };
    match syntax {
        Syntax::HeaderToken => {
            let len = rest
                .bytes()
                .take(limit)
                .take_while(|b| b.is_ascii_alphanumeric() || b"._~+/=-".contains(b))
                .count();
            return bare(len);
        }
        Syntax::XmlText => {
            let window = rest.get(..floor_char_boundary(rest, limit))?;
            let len = window.find(['<', '\n']).unwrap_or(window.len());
            let value = window.get(..len)?;
            let trimmed = value.trim_end();
            let lead = value.len() - value.trim_start().len();
            return Some(Span {
                start: at.checked_add(lead)?,
                end: at.checked_add(trimmed.len().max(lead))?,
                quoted: true,
            });
        }
        Syntax::UserPass => {
            let len = rest
                .bytes()
                .take(limit)
                .take_while(|b| !b.is_ascii_whitespace() && !b"@\"'`".contains(b))
                .count();
            return bare(len);
        }
        Syntax::PathSegment => {
            let len = rest
                .bytes()
                .take(limit)
                .take_while(|b| b.is_ascii_alphanumeric() || b"-_~%.".contains(b))
                .count();
            return bare(len);
        }
        Syntax::Config | Syntax::Query | Syntax::Connection => {}
    }
    let bytes = rest.as_bytes();
    let (escaped, quote) = match bytes {
        [b'\\', q @ (b'"' | b'\''), ..] => (true, *q),
        [q @ (b'"' | b'\'' | b'`'), ..] => (false, *q),
        _ => (false, 0),
    };
    // ODBC's `PWD={a;b}}c}`: braces quote a value, `}}` standing for `}`.
    if quote == 0 && syntax == Syntax::Connection && bytes.first() == Some(&b'{') {
        let body = rest.get(1..)?;
        let window = body.get(..floor_char_boundary(body, limit))?;
        let wb = window.as_bytes();
        let mut i = 0usize;
        let mut end = window.len();
        while let Some(&b) = wb.get(i) {
            if b == b'\n' {
                end = i;
                break;
            }
            if b == b'}' {
                if wb.get(i + 1) == Some(&b'}') {
                    i += 2;
                    continue;
                }
                end = i;
                break;
            }
            i += 1;
        }
        let start = at.checked_add(1)?;
        return Some(Span {
            start,
            end: start.checked_add(end)?,
            quoted: true,
        });
    }
    if quote == 0 {
        let window = rest.get(..floor_char_boundary(rest, limit))?;
        let ends: &[u8] = match syntax {
            Syntax::Query => b"&;#",
            Syntax::Connection => b";",
            _ => b"",
        };
        return bare(unquoted_len(window, ends));
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

/// The length of a bare value at the start of `window`. It ends at whitespace, a quote, a
/// shell operator (`&&`, `||`, `| `, `; `, `>`), an escape of the text around it (`\"`,
/// `\n`), `</`, a `,` before a space or another `name=`, a bracket that closes one the value
/// did not open when punctuation or the end follows it, and at any byte of `ends` (`&;#` in
/// a query). Anything else (`&`, `;`, `(`, `=` inside a password) is part of it.
pub(super) fn unquoted_len(window: &str, ends: &[u8]) -> usize {
    let bytes = window.as_bytes();
    let next_is_key = |i: usize| {
        let after = bytes.get(i + 1..).unwrap_or_default();
        let name = after
            .iter()
            .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
            .count();
        name > 0
            && after
                .first()
                .is_some_and(|b| b.is_ascii_alphabetic() || *b == b'_')
            && after.get(name) == Some(&b'=')
    };
    let ends_here = |i: usize| {
        bytes
            .get(i + 1)
            .is_none_or(|b| b.is_ascii_whitespace() || b",;.)]}'\"`".contains(b))
    };
    let mut depth = [0usize; 3];
    for (i, c) in window.char_indices() {
        let next = bytes.get(i + 1).copied();
        if c.is_ascii() && ends.contains(&(c as u8)) {
            return i;
        }
        let stop = match c {
            c if c.is_whitespace() => true,
            '"' | '\'' | '`' | '>' => true,
            // `a && b`, `a &` and `&next=` end it; `&&x` inside a key does not.
            '&' => {
                next.is_none_or(|b| b.is_ascii_whitespace())
                    || (next == Some(b'&') && bytes.get(i + 2).is_none_or(u8::is_ascii_whitespace))
                    || next_is_key(i)
            }
            ';' => next.is_none_or(|b| b.is_ascii_whitespace()) || next_is_key(i),
            '|' => {
                next.is_none_or(|b| b.is_ascii_whitespace())
                    || (next == Some(b'|') && bytes.get(i + 2).is_none_or(u8::is_ascii_whitespace))
            }
            '<' => next.is_none_or(|b| b == b'/' || b == b'<' || b.is_ascii_whitespace()),
            ',' => {
                next.is_none_or(|b| b.is_ascii_whitespace() || b == b'"' || b == b'\'')
                    || next_is_key(i)
            }
            '\\' => next.is_none_or(|b| b"\"'nrt\\".contains(&b)),
            '(' | '[' | '{' => {
                if let Some(d) = depth.get_mut(bracket(c)) {
                    *d += 1;
                }
                false
            }
            ')' | ']' | '}' => match depth.get_mut(bracket(c)) {
                Some(d) if *d > 0 => {
                    *d -= 1;
                    false
                }
                _ => ends_here(i),
            },
            _ => false,
        };
        if stop {
            return i;
        }
    }
    window.len()
}

fn bracket(c: char) -> usize {
    match c {
        '(' | ')' => 0,
        '[' | ']' => 1,
        _ => 2,
    }
}

/// True when the text after byte `at` goes on, on the same line, with a space and then a word
/// or an expression (not a comment, a delimiter or the line's end).
pub(super) fn continues_with_words(text: &str, at: usize) -> bool {
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
pub(super) fn floor_char_boundary(s: &str, at: usize) -> usize {
    let mut i = at.min(s.len());
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_read_to_their_end() {
        let text = r#"a="x y;z" b='q' c=bare,d \"esc\" e="unterminated"#;
        let at = |needle: &str| text.find(needle).map(|i| i + needle.len()).unwrap_or(0);
        let read = |needle| {
            let s = read_value(text, at(needle), Syntax::Config, 512).unwrap();
            (text[s.start..s.end].to_owned(), s.quoted)
        };
        assert_eq!(read("a="), ("x y;z".to_owned(), true));
        assert_eq!(read("b="), ("q".to_owned(), true));
        assert_eq!(read("c="), ("bare,d".to_owned(), false));
        assert_eq!(read("d "), ("esc".to_owned(), true));
        assert_eq!(read("e="), ("unterminated".to_owned(), true));
    }

    #[test]
    fn a_bare_value_keeps_what_only_looks_like_an_end() {
        let len = |s: &str, q: bool| {
            s.get(..unquoted_len(s, if q { b"&;#" } else { b"" }))
                .unwrap_or_default()
                .to_owned()
        };
        let django = "django-insecure-a&b;c(d)e=f!g#h";
        assert_eq!(len(django, false), django);
        assert_eq!(len("x9(k&q;z\nNEXT=1", false), "x9(k&q;z");
        // What does end it: shell operators, the next key, a query's `&`, unmatched closers.
        assert_eq!(len("s3cr3t && make", false), "s3cr3t");
        assert_eq!(len("s3cr3t&&m4ke", false), "s3cr3t&&m4ke");
        assert_eq!(len("s3cr3t; echo", false), "s3cr3t");
        assert_eq!(len("s3cr3t;Encrypt=true", false), "s3cr3t");
        assert_eq!(len("s3cr3t&page=2", false), "s3cr3t");
        assert_eq!(len("s3c&r3t", true), "s3c");
        assert_eq!(len("s3cr3t)", false), "s3cr3t");
        assert_eq!(len("s3cr3t), x", false), "s3cr3t");
        assert_eq!(len("s3c)r3t", false), "s3c)r3t");
        assert_eq!(len("s3cr3t</password>", false), "s3cr3t");
        assert_eq!(len("s3cr3t\\\"}", false), "s3cr3t");
    }
}
