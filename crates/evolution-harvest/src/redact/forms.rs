//! The judgements of values found in configuration formats, command lines and prose rather
//! than after a key's name: `.netrc` and `redis.conf` directives, `.pgpass` lines, a password
//! piped into a command, `htpasswd`'s positional password, "the password is …", a random value
//! beside a word such as "token", and signed URLs' signatures.

use super::score::{
    base64_decode, is_common_word, is_number, is_reference, is_title_word, looks_like_key,
    looks_random,
};

/// Words that may follow a netrc `password` on its line.
const NETRC_WORDS: [&str; 5] = ["machine", "login", "account", "macdef", "default"];

/// True for a literal given where only a password goes (a command's password option, a
/// `.pgpass` field, a value piped into `--password-stdin`): anything but a reference or
/// placeholder.
pub(super) fn literal_password(value: &str) -> bool {
    let v = value.trim();
    v.chars().count() >= 2 && !is_reference(v) && !v.starts_with("[REDACTED:")
}

/// True for a password in a place where prose could stand too (`password X` at the start of a
/// line, "the password is X"): a literal that is not a plain word — it has a digit, a symbol or
/// a capital after its first letter, or stood in quotes.
pub(super) fn prose_password(value: &str, quoted: bool) -> bool {
    let v = value.trim();
    if v.chars().count() < 4 || !literal_password(v) || is_common_word(v) || is_title_word(v) {
        return false;
    }
    if quoted {
        return !v.contains(' ');
    }
    let body = v.trim_end_matches(['.', ',', ':', ';', ')']);
    let mut chars = body.chars();
    chars.next();
    body.chars()
        .any(|c| c.is_ascii_digit() || !c.is_alphanumeric())
        || chars.any(|c| c.is_ascii_uppercase())
}

/// True for a random value beside a word such as "token" or "key" in prose (`token -> X`,
/// "the API key X for staging"): long and random enough to be a key. After "key" a bare
/// hexadecimal number is a key's id or a hash, not a key.
pub(super) fn prose_key(word: &str, value: &str) -> bool {
    let v = value.trim_end_matches(['.', ',', ':', ';', ')', '!', '?']);
    let key_id =
        word.to_ascii_lowercase().ends_with("key") && v.chars().all(|c| c.is_ascii_hexdigit());
    let plain = v.contains("://") || is_reference(v) || key_id;
    looks_like_key(v) && !plain
}

/// True for a line that is only a key (after a line naming one): random, at least 20
/// characters, and not a digest's or a fingerprint's shape (40 lower-case or any upper-case
/// hexadecimal digits).
pub(super) fn standalone_key(value: &str) -> bool {
    let hex = value.chars().all(|c| c.is_ascii_hexdigit());
    let upper_hex = hex && value.chars().any(|c| c.is_ascii_uppercase());
    // `NAME=12` is a setting; a key has `=` only as base64's padding.
    let setting = value.trim_end_matches('=').contains('=');
    value.len() >= 20
        && !setting
        && looks_like_key(value)
        && !is_reference(value)
        && !(hex && (value.len() == 40 || upper_hex))
}

/// True when what follows a netrc or `redis.conf` directive's value on its line (`after`)
/// is nothing, a comment, or more netrc words.
pub(super) fn directive_ends(after: &str) -> bool {
    let after = after.trim();
    after.is_empty()
        || after.starts_with('#')
        || after
            .split_whitespace()
            .next()
            .is_some_and(|w| NETRC_WORDS.iter().any(|n| n.eq_ignore_ascii_case(w)))
}

/// True when the rest of a line after an `echo`ed value (`after`) pipes it into a command that
/// reads a password (`docker login --password-stdin`, `passwd --stdin`, `chpasswd`).
pub(super) fn piped_to_password(after: &str) -> bool {
    let line = after.lines().next().unwrap_or_default();
    let piped = line.contains('|')
        && ["--password-stdin", "--stdin", "chpasswd", "passwd"]
            .iter()
            .any(|w| line.contains(w));
    // `echo X > .vault_pass`: written to a file that a secret's name names.
    let saved = line
        .trim_start()
        .strip_prefix('>')
        .map(|rest| rest.trim_start_matches('>').trim_start())
        .and_then(|rest| rest.split_whitespace().next())
        .is_some_and(|file| {
            let name = file.rsplit('/').next().unwrap_or(file).to_ascii_lowercase();
            ["pass", "secret", "token", "key", "cred"]
                .iter()
                .any(|w| name.contains(w))
        });
    piped || saved
}

/// The byte where `htpasswd`'s password starts, given its options (`-bc`, `-nbB`) and the
/// text after them: the second word after the options (the first with `-n`, which takes no
/// file). `None` without `-b` (the password is then prompted for).
pub(super) fn htpasswd_password_at(options: &str, after: &str) -> Option<usize> {
    let flags: String = options
        .split_whitespace()
        .map(|o| o.trim_start_matches('-'))
        .collect();
    if !flags.contains('b') {
        return None;
    }
    let skip = if flags.contains('n') { 1 } else { 2 };
    let mut at = 0usize;
    for _ in 0..skip {
        let rest = after.get(at..)?;
        let word = rest.find(char::is_whitespace)?;
        let gap = rest.get(word..)?;
        let next = gap.find(|c: char| !c.is_whitespace())?;
        if gap.get(..next)?.contains('\n') {
            return None;
        }
        at = at.checked_add(word)?.checked_add(next)?;
    }
    Some(at)
}

/// True for a URL signature's value (`sig=`, `X-Amz-Signature=`): long, and percent-encoded
/// or random.
pub(super) fn signature(value: &str) -> bool {
    value.len() >= 16 && !is_number(value) && (value.contains('%') || looks_random(value))
}

/// True for a value under a name that is only `auth` (a Docker `config.json` entry): the
/// base64 of a `user:password` pair, or a key.
pub(super) fn auth_value(value: &str) -> bool {
    let pair = base64_decode(value)
        .and_then(|b| String::from_utf8(b).ok())
        .is_some_and(|d| {
            d.len() >= 3 && d.contains(':') && d.chars().all(|c| c.is_ascii_graphic() || c == ' ')
        });
    (value.len() >= 8 && pair) || looks_like_key(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prose_passwords_are_not_plain_words() {
        assert!(prose_password("hunter2", false));
        assert!(prose_password("Tr0ub4dor&3", false));
        assert!(prose_password("correcthorse", true));
        for word in [
            "required",
            "incorrect",
            "stored",
            "Required",
            "the",
            "reset",
        ] {
            assert!(!prose_password(word, false), "{word}");
        }
        assert!(!prose_password("$DB_PASS", false));
    }

    #[test]
    fn htpasswd_skips_the_file_and_the_user() {
        assert_eq!(htpasswd_password_at(" -b -c", "f u pw"), Some(4));
        assert_eq!(htpasswd_password_at(" -nbB", "u pw"), Some(2));
        assert_eq!(htpasswd_password_at(" -c", "f u"), None);
        assert_eq!(htpasswd_password_at(" -b", "f u"), None);
    }

    #[test]
    fn a_key_alone_on_its_line_is_random_and_not_a_setting() {
        assert!(standalone_key(
            "eXFjp3gKmjF31gpbXMJ2s0NqsH2mT0vZ+2szTFP7c+xqNb8DENKpW1ezZMY1kY7a=="
        ));
        assert!(!standalone_key("PASSWORD_HASH_ROUNDS=12"));
        assert!(!standalone_key("3f9a2b7c8d1e4f5a6b7c8d9e0f1a2b3c4d5e6f7a"));
        assert!(!standalone_key("4AEE18F83AFDEB23C7A1D93B0E5C2F8A6B4D1E0F"));
    }

    #[test]
    fn keys_beside_words_are_random_and_not_ids() {
        assert!(prose_key("token", "Zq8xK2mPw9LrT4vN7bYc3dFh"));
        assert!(!prose_key("key", "4AEE18F83AFDEB23"));
        assert!(!prose_key(
            "key",
            "linux-cargo-2beba449d59f1f1e17512ba8e7292c5b"
        ));
        assert!(!prose_key("token", "lexer"));
        assert!(auth_value("Y2k6czNjcjN0"));
        assert!(!auth_value("true"));
    }
}
