//! Generators and case builders shared by the fifth held-out set's parts.

use serde_json::Value;

use crate::secrets::{ALNUM, B64, Case, DIGITS, Rng, mixed};

pub(crate) const LOWER_DIGIT: &str = "abcdefghijklmnopqrstuvwxyz0123456789";
/// Punctuation people put in passwords.
const PUNCT: &str = "!#%*+-.:=?@^_~";
/// Characters a password may hold unescaped in a URL's user information.
const URL_SAFE: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~!*";

const WORDS: [&str; 20] = [
    "orbit", "cactus", "lantern", "meadow", "falcon", "granite", "pepper", "willow", "comet",
    "tundra", "saffron", "harbour", "quartz", "nimbus", "ember", "violet", "canyon", "maple",
    "dynamo", "juniper",
];

/// One case of the set.
pub(crate) fn at(family: &'static str, place: &'static str, text: String, secret: &str) -> Case {
    Case {
        family,
        place,
        text,
        json: None,
        secret: secret.to_owned(),
    }
}

/// One case whose text is a JSON value, redacted as a value.
pub(crate) fn at_json(
    family: &'static str,
    place: &'static str,
    json: Value,
    secret: &str,
) -> Case {
    Case {
        family,
        place,
        text: String::new(),
        json: Some(json),
        secret: secret.to_owned(),
    }
}

/// A word of [`WORDS`], capitalised or not.
fn word(r: &mut Rng) -> String {
    let w = r.pick(&WORDS);
    if r.below(2) == 0 {
        let mut c = w.chars();
        c.next()
            .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
            .unwrap_or_default()
    } else {
        w.to_owned()
    }
}

/// A password as people choose them: random, word-and-digits, passphrase or punctuated.
pub(crate) fn password(r: &mut Rng) -> String {
    match r.below(5) {
        0 => {
            let n = 12 + r.below(10);
            mixed(r, ALNUM, n)
        }
        1 => {
            let n = 2 + r.below(3);
            format!(
                "{}{}{}{}",
                word(r),
                word(r),
                r.from(DIGITS, n),
                r.from(PUNCT, 1)
            )
        }
        2 => format!(
            "{}-{}-{}-{}",
            r.pick(&WORDS),
            r.pick(&WORDS),
            r.pick(&WORDS),
            r.from(DIGITS, 2)
        ),
        3 => {
            let mut s = mixed(r, ALNUM, 6);
            s.push_str(&r.from(PUNCT, 2));
            s.push_str(&mixed(r, ALNUM, 6));
            s
        }
        _ => format!(
            "{}{}{}",
            mixed(r, ALNUM, 5),
            r.from(PUNCT, 1),
            mixed(r, ALNUM, 8)
        ),
    }
}

/// A password that needs no escaping inside a URL's user information.
pub(crate) fn url_password(r: &mut Rng) -> String {
    match r.below(3) {
        0 => {
            let n = 14 + r.below(8);
            mixed(r, ALNUM, n)
        }
        1 => format!("{}{}{}", word(r), r.from(DIGITS, 4), r.from("-._~!*", 1)),
        _ => {
            let mut s = mixed(r, ALNUM, 4);
            s.push_str(&r.from(URL_SAFE, 12));
            s
        }
    }
}

/// `GITHUB_TOKEN` → `githubToken`.
pub(crate) fn camel(name: &str) -> String {
    let mut out = String::new();
    for (i, part) in name.split('_').enumerate() {
        let lower = part.to_ascii_lowercase();
        if i == 0 {
            out.push_str(&lower);
        } else {
            let mut c = lower.chars();
            if let Some(f) = c.next() {
                out.push(f.to_ascii_uppercase());
                out.push_str(c.as_str());
            }
        }
    }
    out
}

/// `GITHUB_TOKEN` → `github_token`.
pub(crate) fn snake(name: &str) -> String {
    name.to_ascii_lowercase()
}

/// A random base64 body of `n` characters, `=`-padded to a multiple of four.
pub(crate) fn b64_body(r: &mut Rng, n: usize) -> String {
    let mut s = r.from(B64, n);
    while !s.len().is_multiple_of(4) {
        s.push('=');
    }
    s
}
