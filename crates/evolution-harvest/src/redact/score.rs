//! Whether a string looks like a credential: the tests every value after a secret-named key,
//! and every prefixed token, must pass before it is replaced.

/// Words that are a value's type, a flag or a placeholder, never a credential
/// (`token: string`, `password: required`, `secret: none`). A weak default such as `changeme`
/// is not among them: a transcript cannot tell a default from the password in use.
const COMMON_WORDS: &[&str] = &[
    "any",
    "auto",
    "basic",
    "bearer",
    "blank",
    "body",
    "bool",
    "boolean",
    "bytes",
    "cookie",
    "default",
    "disabled",
    "empty",
    "enabled",
    "env",
    "environment",
    "false",
    "file",
    "header",
    "hidden",
    "input",
    "int",
    "integer",
    "key",
    "mandatory",
    "masked",
    "missing",
    "nil",
    "none",
    "null",
    "number",
    "object",
    "off",
    "omitted",
    "optional",
    "pass",
    "passwd",
    "password",
    "placeholder",
    "present",
    "prompt",
    "query",
    "read",
    "redacted",
    "required",
    "secret",
    "secrets",
    "self",
    "set",
    "stdin",
    "str",
    "string",
    "text",
    "this",
    "token",
    "true",
    "undefined",
    "unknown",
    "unset",
    "value",
    "void",
    "write",
    "yes",
];

/// True for a word of [`COMMON_WORDS`], in any case.
pub(super) fn is_common_word(value: &str) -> bool {
    COMMON_WORDS.iter().any(|w| w.eq_ignore_ascii_case(value))
}

/// The character classes of a string: lower-case, upper-case, digit, other.
struct Classes {
    lower: usize,
    upper: usize,
    digit: usize,
    other: usize,
    distinct: usize,
}

fn classes(text: &str) -> Classes {
    let mut seen = [false; 128];
    let mut c = Classes {
        lower: 0,
        upper: 0,
        digit: 0,
        other: 0,
        distinct: 0,
    };
    for ch in text.chars() {
        if ch.is_ascii_lowercase() {
            c.lower += 1;
        } else if ch.is_ascii_uppercase() {
            c.upper += 1;
        } else if ch.is_ascii_digit() {
            c.digit += 1;
        } else {
            c.other += 1;
        }
        if let Some(slot) = seen.get_mut(ch as usize)
            && !*slot
        {
            *slot = true;
            c.distinct += 1;
        }
    }
    c
}

/// True when the random part of a prefixed token looks random: letters with digits, or both
/// letter cases, and enough distinct characters. `three-bounce-animation-delay` does not.
pub(super) fn looks_random(body: &str) -> bool {
    let c = classes(body);
    let letters = c.lower + c.upper;
    let mixed = (c.digit > 0 && letters > 0) || (c.lower > 0 && c.upper > 0);
    mixed && c.distinct >= 8.min(body.len())
}

/// True for a value that is random enough to be a key when its name only says "key"
/// (`cache_key` is not a secret's name, but `cache_key: 6fJk29xQaZ81LmPq0Rtw` holds one).
pub(super) fn looks_like_key(value: &str) -> bool {
    value.len() >= 16
        && !is_labelled_digest(value)
        && !is_file_name_path(value)
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '+' | '/' | '=' | '.'))
        && looks_random(value)
        && {
            let c = classes(value);
            c.digit > 0 && (c.distinct >= 10)
        }
}

/// True for a relative path that ends in a file name with an extension
/// (`uploads/2024/06/invoice-1042.pdf`): an object's key, not a secret one.
fn is_file_name_path(value: &str) -> bool {
    let Some((dir, file)) = value.rsplit_once('/') else {
        return false;
    };
    let extension = file.rsplit_once('.').map_or("", |(_, e)| e);
    !dir.is_empty()
        && (1..=5).contains(&extension.len())
        && extension
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        && extension.starts_with(|c: char| c.is_ascii_lowercase())
}

/// True for a value that stands for another rather than being one: a variable or template
/// reference (`$DB_PASS`, `${X}`, `$(cmd)`, `%(x)s`, `%APPDATA%`, `{{ x }}`, `<%= x %>`,
/// `#{x}`), a placeholder in brackets (`<your-key>`, `{name}`, `[REDACTED]`), a YAML tag,
/// anchor or alias (`!Ref`, `&default`, `*default`), a symbol (`:password`), a file given by
/// `@name`, a flag or a dash (`--yes`, `-`), a comment, a colour, a path or an expression in
/// parentheses. A value that starts with one of those characters but goes on with random
/// characters (`/K7MDENG+bPx…`, `$ecr3tP4ss`, `-Jx9…`) is not a reference.
pub(super) fn is_reference(v: &str) -> bool {
    const TEMPLATES: [&str; 6] = ["${", "{{", "%(", "<%", "#{", "$("];
    if TEMPLATES.iter().any(|t| v.contains(t)) {
        return true;
    }
    let Some(first) = v.chars().next() else {
        return true;
    };
    let rest = v.get(first.len_utf8()..).unwrap_or_default();
    match first {
        '$' => {
            let mixed = has_digit(rest)
                && rest.chars().any(|c| c.is_ascii_uppercase())
                && rest.chars().any(|c| c.is_ascii_lowercase());
            (is_identifier(rest) && !mixed) || rest.chars().all(|c| c.is_ascii_digit())
        }
        '%' => rest.ends_with('%') || rest.len() <= 2 || is_plain(rest),
        '<' => v.ends_with('>') || is_plain(rest),
        // `{name}` is a placeholder; `{HM7sW6Yk…}` (Maven's encrypted password) is a value.
        '{' => {
            let inner = rest.strip_suffix('}');
            (inner.is_some() && !inner.is_some_and(looks_like_key)) || is_plain(rest)
        }
        '[' => v.ends_with(']') || is_plain(rest),
        '(' => v.ends_with(')') || is_plain(rest),
        '#' => is_colour(rest) || is_plain(rest),
        '/' | '~' => is_path(v) && !random_path(v),
        '-' => rest.starts_with('-') || is_number(v) || is_plain(rest),
        '@' | '!' | '*' | '&' | ':' | '=' => is_plain(rest) || is_masked(v),
        '\\' => true,
        _ => false,
    }
}

fn has_digit(s: &str) -> bool {
    s.chars().any(|c| c.is_ascii_digit())
}

/// True for what follows a symbol in a reference: empty, or a word, name or path that does
/// not look random (`Ref`, `default_password`, `./x`, `api_key_file`).
fn is_plain(rest: &str) -> bool {
    let name_like = rest
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-' | '/' | '~'));
    rest.is_empty()
        || (name_like
            && (!looks_random(rest)
                || (!rest.chars().any(|c| c.is_ascii_uppercase()) && rest.len() <= 24)))
}

/// True for `fff`, `ff8800` or `ff8800cc` (a colour after `#`).
fn is_colour(rest: &str) -> bool {
    matches!(rest.len(), 3 | 4 | 6 | 8) && rest.chars().all(|c| c.is_ascii_hexdigit())
}

/// True for a value that starts like a path but is a key: base64's `+` or `=` padding, or a
/// segment with both letter cases and digits (`/K7MDENG/bPxRfiCY2XAMPLEKEY`).
fn random_path(v: &str) -> bool {
    v.contains('+')
        || v.ends_with('=')
        || v.split('/').any(|seg| {
            seg.len() >= 6
                && has_digit(seg)
                && seg.chars().any(|c| c.is_ascii_uppercase())
                && seg.chars().any(|c| c.is_ascii_lowercase())
        })
}

/// True for a value that is a hash under a name, not a key: lower-case words joined by `-`
/// and ending in a hexadecimal digest (`linux-cargo-2beba449…`).
pub(super) fn is_labelled_digest(v: &str) -> bool {
    let mut parts = v.rsplitn(2, ['-', '_', ':']);
    let (Some(digest), Some(label)) = (parts.next(), parts.next()) else {
        return false;
    };
    digest.len() >= 16
        && digest
            .chars()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
        && label.split(['-', '_', ':']).all(|w| {
            !w.is_empty()
                && w.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        })
}

/// True for a number, with an optional unit (`3600`, `1.5`, `30s`, `24h`, `100ms`, `-1`).
pub(super) fn is_number(value: &str) -> bool {
    let digits_end = value
        .char_indices()
        .find(|(_, c)| !(c.is_ascii_digit() || matches!(c, '.' | '_' | ',' | '-' | '+' | ':')))
        .map_or(value.len(), |(i, _)| i);
    let (number, unit) = value.split_at(digits_end);
    const UNITS: [&str; 15] = [
        "", "s", "ms", "m", "h", "d", "w", "k", "kb", "mb", "gb", "min", "sec", "px", "%",
    ];
    number.chars().any(|c| c.is_ascii_digit()) && UNITS.iter().any(|u| u.eq_ignore_ascii_case(unit))
}

/// True for a file path (`/home/me`, `./x`, `~/.ssh/id`, `C:\Users`).
pub(super) fn is_path(value: &str) -> bool {
    let b = value.as_bytes();
    value.starts_with(['/', '~'])
        || value.starts_with("./")
        || value.starts_with("../")
        || (b.len() > 2
            && b.first().is_some_and(u8::is_ascii_alphabetic)
            && b.get(1) == Some(&b':')
            && b.get(2) == Some(&b'\\'))
}

/// True for a word written as a name or a heading: `Alice`, `Required`.
pub(super) fn is_title_word(value: &str) -> bool {
    let mut chars = value.chars();
    chars.next().is_some_and(|c| c.is_ascii_uppercase())
        && chars.clone().next().is_some()
        && chars.all(|c| c.is_ascii_lowercase())
}

/// True for a constant's name or a placeholder in capitals: `YOUR_TOKEN`, `REDACTED`.
pub(super) fn is_capital_name(value: &str) -> bool {
    value.chars().any(|c| c.is_ascii_uppercase())
        && value.chars().all(|c| c.is_ascii_uppercase() || c == '_')
}

/// True for a masked or placeholder value: one character repeated, or only `*`, `x`, `•`,
/// `.`, `-`, `#` (`********`, `xxxx`, `...`).
pub(super) fn is_masked(value: &str) -> bool {
    let mut chars = value.chars();
    let Some(first) = chars.next() else {
        return true;
    };
    value.chars().all(|c| c == first)
        || value
            .chars()
            .all(|c| matches!(c, '*' | 'x' | 'X' | '•' | '.' | '-' | '#' | '_'))
}

/// True for an identifier (`csrfToken`, `user_password`, `_x1`).
pub(super) fn is_identifier(value: &str) -> bool {
    value.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && value.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// True for lower-case words joined by `-` (`tls-cert`, `my-app-secret`): a resource's name.
pub(super) fn is_kebab_name(value: &str) -> bool {
    value.contains('-')
        && value.split('-').all(|part| {
            part.starts_with(|c: char| c.is_ascii_lowercase())
                && part
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        })
}

/// The bytes a standard base64 text decodes to; `None` when it is not base64.
pub(super) fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let text = text.trim_end_matches('=');
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let mut buffer = 0u32;
    let mut bits = 0u32;
    for c in text.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            _ => return None,
        };
        buffer = (buffer << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push(((buffer >> bits) & 0xff) as u8);
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_are_told_apart() {
        assert!(looks_random("AbCdEfGhIjKlMnOpQrSt"));
        assert!(looks_random("0a1b2c3d4e5f6a7b8c9d"));
        assert!(!looks_random("three-bounce-animation-delay"));
        assert!(is_number("3600") && is_number("1.5") && is_number("30s") && is_number("-1"));
        assert!(!is_number("s3cr3t") && !is_number("abc"));
        assert!(is_path("/home/user") && is_path("~/.ssh") && is_path("C:\\Users"));
        assert!(is_title_word("Alice") && !is_title_word("AlIce") && !is_title_word("A"));
        assert!(is_masked("********") && is_masked("xxxx") && !is_masked("x1x1"));
        assert!(is_kebab_name("tls-cert") && !is_kebab_name("Tls-cert"));
        assert!(looks_like_key("6fJk29xQaZ81LmPq0Rtw") && !looks_like_key("user_profile_cache"));
        assert_eq!(base64_decode("YWRtaW46cHc="), Some(b"admin:pw".to_vec()));
        assert_eq!(base64_decode("a b"), None);
    }
}
