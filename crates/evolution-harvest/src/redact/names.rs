//! What a key's name says about its value: a secret's name (`DB_PASSWORD`, `authToken`), a
//! key's name that does not say whose (`cache_key`), or anything else (`token_count`).

/// Words that make a name a secret's on their own (`DB_PASSWORD`, `authToken`).
const SECRET_WORDS: [&str; 15] = [
    "TOKEN",
    "PAT",
    "PASSCODE",
    "PSK",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "PWD",
    "PASS",
    "PW",
    "PASSPHRASE",
    "CREDENTIAL",
    "CREDENTIALS",
    "APIKEY",
    "AUTHORIZATION",
];

/// Endings that make one unseparated word a secret's name (`authtoken`, `dbpassword`).
const SECRET_SUFFIXES: [&str; 7] = [
    "token",
    "secret",
    "password",
    "passwd",
    "apikey",
    "secretkey",
    "privatekey",
];

/// Words that make a name ending in `KEY` a secret's (`API_KEY`, `privateKey`).
const KEY_QUALIFIERS: [&str; 15] = [
    "API",
    "ACCOUNT",
    "ACCESS",
    "SECRET",
    "PRIVATE",
    "AUTH",
    "SIGNING",
    "ENCRYPTION",
    "MASTER",
    "CLIENT",
    "SSH",
    "HMAC",
    "JWT",
    "WEBHOOK",
    "LICENSE",
];

/// Last words that make a secret-looking name the name of something about the secret, not the
/// secret itself (`token_count`, `TOKEN_EXPIRY`, `secretName`, `token_url`, `auth_token_ttl`).
const METADATA_WORDS: [&str; 88] = [
    "ID",
    "IDS",
    "NAME",
    "NAMES",
    "COUNT",
    "COUNTS",
    "NUM",
    "NUMBER",
    "URL",
    "URLS",
    "URI",
    "ENDPOINT",
    "HOST",
    "SERVER",
    "TTL",
    "EXPIRY",
    "EXPIRES",
    "EXPIRATION",
    "EXP",
    "LIFETIME",
    "TIMEOUT",
    "AGE",
    "LEN",
    "LENGTH",
    "SIZE",
    "LIMIT",
    "LIMITS",
    "MAX",
    "MIN",
    "TYPE",
    "TYPES",
    "KIND",
    "FILE",
    "FILES",
    "PATH",
    "DIR",
    "REF",
    "REFS",
    "ENV",
    "VAR",
    "HEADER",
    "FIELD",
    "PARAM",
    "POLICY",
    "PREFIX",
    "SUFFIX",
    "FORMAT",
    "VERSION",
    "ROTATION",
    "USAGE",
    "USED",
    "CREATED",
    "UPDATED",
    "AT",
    "TIME",
    "SECONDS",
    "MS",
    "MODE",
    "REGEX",
    "PATTERN",
    "SCOPE",
    "SCOPES",
    "AUDIENCE",
    "ISSUER",
    "ALGORITHM",
    "LOCATION",
    "INDEX",
    "LABEL",
    "DESCRIPTION",
    "HINT",
    "ENABLED",
    "REQUIRED",
    "PROVIDER",
    "STORE",
    "MANAGER",
    "ARN",
    "REGION",
    "SOURCE",
    "STDIN",
    "TEMPLATE",
    "STRENGTH",
    "RESET",
    "BUDGET",
    "RATE",
    "ESTIMATE",
    "ENCODING",
    "METHOD",
    "STATUS",
];

/// Last words that name the form a secret is given in (`client-key-data`, `private_key_pem`):
/// the name is judged without them.
const FORM_WORDS: [&str; 9] = [
    "DATA", "VALUE", "B64", "BASE64", "PEM", "CONTENT", "CONTENTS", "ENCODED", "RAW",
];

/// What a name says about its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum NameClass {
    /// A secret's name (`DB_PASSWORD`).
    Secret,
    /// A key's name that does not say whose (`cache_key`, `OPENAI_KEY`): its value is a secret
    /// only when it looks random.
    Key,
    /// A name that is only `auth` (a Docker `config.json` entry, npm's `_auth`): its value is
    /// a secret when it is the base64 of a `user:password` pair or looks like a key.
    Auth,
    /// Anything else.
    Other,
}

/// `aws_secret-Key.id` → `aws`, `secret`, `Key`, `id`; `apiKey` → `api`, `Key`.
fn name_words(name: &str) -> Vec<&str> {
    let mut words = Vec::new();
    for part in name.split(['_', '-', '.']) {
        let mut start = 0;
        let mut previous_lower = false;
        for (i, c) in part.char_indices() {
            if c.is_ascii_uppercase() && previous_lower {
                words.push(part.get(start..i).unwrap_or_default());
                start = i;
            }
            previous_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
        }
        words.push(part.get(start..).unwrap_or_default());
    }
    words.retain(|w| !w.is_empty());
    words
}

/// What `name` says about its value (see [`NameClass`]).
pub(super) fn classify_name(name: &str) -> NameClass {
    // npm's `_auth` (and `//registry/:_auth`) holds `user:password` in base64.
    if name.ends_with("_auth") && name.rsplit([':', '/']).next() == Some("_auth") {
        return NameClass::Secret;
    }
    if name.eq_ignore_ascii_case("auth") {
        return NameClass::Auth;
    }
    // Names some tools read a password from, that no word of theirs gives away.
    // Vault's AppRole `secret_id` is the secret, not its id.
    if [
        "SSHPASS",
        "REDISCLI_AUTH",
        "REQUIREPASS",
        "MASTERAUTH",
        "SECRET_ID",
        "SECRETID",
    ]
    .iter()
    .any(|n| name.eq_ignore_ascii_case(n))
    {
        return NameClass::Secret;
    }
    let words = name_words(name);
    let is = |word: &str, list: &[&str]| list.iter().any(|w| word.eq_ignore_ascii_case(w));
    // `client-key-data`, `private_key_pem`, `tokenValue`: the key itself, in some form.
    let words = match words.split_last() {
        Some((last, before)) if !before.is_empty() && is(last, &FORM_WORDS) => before.to_vec(),
        _ => words,
    };
    let Some((last, before)) = words.split_last() else {
        return NameClass::Other;
    };
    // A public key (`PublicKeyToken`, `publishable_key`) is no secret.
    if words
        .windows(2)
        .any(|pair| matches!(pair, [a, b] if is(a, &["PUBLIC", "PUBLISHABLE"]) && is(b, &["KEY"])))
    {
        return NameClass::Other;
    }
    if is(last, &METADATA_WORDS) {
        return NameClass::Other;
    }
    // `existingSecret`, `existing_password_secret`: the name of a secret object made elsewhere.
    if words.iter().any(|w| is(w, &["EXISTING"])) {
        return NameClass::Other;
    }
    let ends_with = |word: &str, suffix: &str| {
        word.len() > suffix.len()
            && word
                .get(word.len() - suffix.len()..)
                .is_some_and(|end| end.eq_ignore_ascii_case(suffix))
    };
    if words
        .iter()
        .any(|w| is(w, &SECRET_WORDS) || SECRET_SUFFIXES.iter().any(|s| ends_with(w, s)))
    {
        return NameClass::Secret;
    }
    if last.eq_ignore_ascii_case("KEY") {
        return if before.iter().any(|w| is(w, &KEY_QUALIFIERS)) {
            NameClass::Secret
        } else {
            NameClass::Key
        };
    }
    if ends_with(last, "key") {
        return NameClass::Key;
    }
    NameClass::Other
}
