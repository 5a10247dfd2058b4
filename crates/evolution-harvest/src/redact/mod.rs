//! Secret redaction: every secret-shaped string is replaced by `[REDACTED:<kind>]` before any
//! harvested text is kept, written or put into a prompt.
//!
//! The patterns are shapes, not a list of known secrets, in three layers run in this order:
//!
//! 1. Secrets with a shape of their own: private-key and PGP key blocks, provider tokens
//!    recognised by their prefix (OpenAI, Anthropic, GitHub, GitLab, Slack, Stripe, Google, AWS,
//!    npm, PyPI, Hugging Face and the others [`token_families`] lists), JSON web tokens and
//!    40-character AWS secret access keys. A prefix that can start an ordinary word (`sk-`)
//!    must be followed by random-looking characters.
//! 2. Credentials inside URLs: the password of `scheme://user:password@host`, read to the `@`
//!    before the host, and a random user name standing for a token (a Sentry DSN).
//! 3. Values placed where a secret goes: after a secret-named key (`API_KEY=…`,
//!    `"password": "…"`, `?token=…`, `--password …`, `<password>…</password>`), after
//!    `Bearer`, `Basic` or `SSWS`, after a command's password option (`mysql -p…`,
//!    `curl -u user:…`, `docker login -p …`, `redis-cli -a …`, `htpasswd -b f u …`), at a
//!    password's position (`user/…@db`, `auth=("u", "…")`, `net user u …`), in a `.netrc`,
//!    `.pgpass`, `sasl_passwd`, `chap-secrets` or `redis.conf` line, a session cookie, a URL's
//!    `sig=`, prose ("the password is …", "token -> …", "das Passwort lautet …"), or alone on
//!    the line after one that names a key. Such a value is read
//!    whole and replaced only when it looks like a credential: not a number, a path, a URL, a
//!    flag word, a heading word, a reference or a resource's name.
//!
//! Redaction is idempotent (a marker is never matched again), never panics, and runs in linear
//! time: every pattern is a `regex` pattern, and a value is read once per candidate.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::LazyLock;

use regex::{Regex, RegexSet, RegexSetBuilder};
use serde_json::{Map, Value};

mod context;
mod forms;
mod names;
mod score;
mod tokens;
mod url;
mod value;

use context::{ContextRule, Setting, context_rules, value_is_secret};
use names::{NameClass, classify_name};

/// The text a secret is replaced with is `[REDACTED:<kind>]`; this is its start.
pub const REDACTION_PREFIX: &str = "[REDACTED:";

/// What kind of secret a redaction replaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum SecretKind {
    /// A `-----BEGIN … PRIVATE KEY-----`, `-----BEGIN PGP PRIVATE KEY BLOCK-----` or OpenVPN
    /// static key block, or a PuTTY key file (an unterminated one up to the end of the text).
    PrivateKey,
    /// An Anthropic API key (`sk-ant-…`).
    AnthropicKey,
    /// An OpenAI API key (`sk-…`, `sk-proj-…`).
    OpenAiKey,
    /// A Stripe secret or restricted key (`sk_live_…`, `rk_test_…`).
    StripeKey,
    /// A Google API key (`AIza…`).
    GoogleKey,
    /// An AWS access key id (`AKIA…`, `ASIA…`).
    AwsAccessKey,
    /// An AWS secret access key: 40 characters of base64 standing alone.
    AwsSecretKey,
    /// A GitHub token (`ghp_…`, `gho_…`, `github_pat_…`).
    GithubToken,
    /// A Slack token (`xoxb-…`, `xapp-…`) or incoming-webhook URL.
    SlackToken,
    /// A JSON web token (three base64url parts, the first two starting `eyJ`).
    Jwt,
    /// The token after `Bearer` (an `Authorization` header).
    BearerToken,
    /// The password of a `scheme://user:password@host` URL.
    UrlPassword,
    /// The value of a `NAME=value` (or `NAME: value`) line whose name says it is a secret.
    EnvSecret,
    /// A GitLab token (`glpat-…`, `glrt-…`, …).
    GitlabToken,
    /// An npm access token (`npm_…`).
    NpmToken,
    /// A PyPI upload token (`pypi-AgE…`).
    PypiToken,
    /// A Hugging Face token (`hf_…`).
    HuggingFaceToken,
    /// The credentials of an `Authorization: Basic` header.
    BasicAuth,
    /// A password given to a command (`mysql -p…`, `curl -u user:…`, `sshpass -p …`).
    CommandPassword,
    /// A token of another provider recognised by its prefix (SendGrid `SG.`, Shopify
    /// `shpat_`, DigitalOcean `dop_v1_`, Vault `hvs.`, …).
    ProviderToken,
    /// The signature of a signed URL (an Azure SAS `sig=`, `X-Amz-Signature=`).
    UrlSignature,
    /// A token given as a URL's user name (`https://<key>@o1.ingest.sentry.io/2`).
    UrlToken,
}

impl SecretKind {
    /// The name in the marker: `[REDACTED:<name>]`.
    pub fn name(self) -> &'static str {
        match self {
            SecretKind::PrivateKey => "private_key",
            SecretKind::AnthropicKey => "anthropic_key",
            SecretKind::OpenAiKey => "openai_key",
            SecretKind::StripeKey => "stripe_key",
            SecretKind::GoogleKey => "google_key",
            SecretKind::AwsAccessKey => "aws_access_key",
            SecretKind::AwsSecretKey => "aws_secret_key",
            SecretKind::GithubToken => "github_token",
            SecretKind::SlackToken => "slack_token",
            SecretKind::Jwt => "jwt",
            SecretKind::BearerToken => "bearer_token",
            SecretKind::UrlPassword => "url_password",
            SecretKind::EnvSecret => "env_secret",
            SecretKind::GitlabToken => "gitlab_token",
            SecretKind::NpmToken => "npm_token",
            SecretKind::PypiToken => "pypi_token",
            SecretKind::HuggingFaceToken => "huggingface_token",
            SecretKind::BasicAuth => "basic_auth",
            SecretKind::CommandPassword => "command_password",
            SecretKind::ProviderToken => "provider_token",
            SecretKind::UrlSignature => "url_signature",
            SecretKind::UrlToken => "url_token",
        }
    }

    /// The marker that replaces a secret of this kind.
    pub fn marker(self) -> String {
        format!("{REDACTION_PREFIX}{}]", self.name())
    }
}

/// The compiled patterns. Each is a literal of this crate; a pattern that failed to compile
/// would only drop its rule (a unit test checks that none does), never panic.
struct Rules {
    private_key: Option<Regex>,
    tokens: Option<Regex>,
    url_password: Option<Regex>,
    /// The context rules' patterns as one set: a text is scanned once to learn which rules
    /// match in it at all, and only those are run.
    context_set: Option<RegexSet>,
    context: Vec<ContextRule>,
}

static RULES: LazyLock<Rules> = LazyLock::new(|| {
    let context = context_rules();
    let context_set = RegexSetBuilder::new(context.iter().map(ContextRule::pattern))
        .dfa_size_limit(32 << 20)
        .build()
        .ok();
    Rules {
    private_key: Regex::new(
        concat!(
            r"-{4,5} ?BEGIN (?:[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?|OpenVPN Static key V[0-9]) ?-{4,5}",
            r"(?:[\s\S]*?-{4,5} ?END (?:[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?|OpenVPN Static key V[0-9]) ?-{4,5}|[\s\S]*)",
            r"|PuTTY-User-Key-File-[0-9]+:(?:[\s\S]*?Private-MAC:[ \t]*[0-9A-Fa-f]*|[\s\S]*)",
        ),
    )
    .ok(),
    tokens: tokens::combined(),
    url_password: url::scheme(),
    context_set,
    context,
}
});

/// True when a variable name says it holds a secret: one of its words (split at `_`, `-`,
/// `.` and lower-to-upper case changes) is a secret word such as `TOKEN` or `PASSWORD` (or
/// ends one, as in `authtoken`), or it ends in `KEY` after a word such as `API` or `ACCESS`;
/// and its last word does not make it the name of something about the secret (`token_count`,
/// `TOKEN_EXPIRY`, `secretName`, `token_url`). `MAX_TOKENS`, `thread_key` and `session_id` are
/// not secret names.
pub fn is_secret_name(name: &str) -> bool {
    classify_name(name) == NameClass::Secret
}

/// The families of prefixed tokens recognised by their shape, by name, with the kind each is
/// reported as (`("gitlab", SecretKind::GitlabToken)`, …).
pub fn token_families() -> impl Iterator<Item = (&'static str, SecretKind)> {
    tokens::FAMILIES.iter().map(|f| (f.label, f.kind))
}

/// Replaces secrets in text and counts what it replaced, by kind.
///
/// ```
/// use evolution_harvest::redact::Redactor;
///
/// let mut redactor = Redactor::default();
/// let text = "export GITHUB_TOKEN=ghp_0123456789abcdefghijklmnopqrstuvwxyzAB";
/// assert_eq!(redactor.redact(text), "export GITHUB_TOKEN=[REDACTED:github_token]");
/// assert_eq!(redactor.total(), 1);
/// ```
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    counts: BTreeMap<&'static str, usize>,
}

impl Redactor {
    /// `text` with every secret replaced by its marker (borrowed when nothing was found).
    pub fn redact<'a>(&mut self, text: &'a str) -> Cow<'a, str> {
        let rules = &*RULES;
        let mut out = Cow::Borrowed(text);
        if let Some(re) = &rules.private_key {
            self.replace_group(&mut out, re, 0, |_| Some(SecretKind::PrivateKey));
        }
        if let Some(re) = &rules.tokens {
            self.replace_tokens(&mut out, re);
        }
        let spans = tokens::aws_secret_spans(&out);
        if !spans.is_empty() {
            let mut new = String::with_capacity(out.len());
            let mut copied = 0usize;
            for (start, end) in spans {
                new.push_str(out.get(copied..start).unwrap_or_default());
                new.push_str(&SecretKind::AwsSecretKey.marker());
                copied = end;
                self.count(SecretKind::AwsSecretKey, 1);
            }
            new.push_str(out.get(copied..).unwrap_or_default());
            out = Cow::Owned(new);
        }
        if let Some(re) = &rules.url_password {
            let spans = url::credential_spans(&out, re);
            if !spans.is_empty() {
                let mut new = String::with_capacity(out.len());
                let mut copied = 0usize;
                for (start, end, kind) in spans {
                    new.push_str(out.get(copied..start).unwrap_or_default());
                    new.push_str(&kind.marker());
                    copied = end;
                    self.count(kind, 1);
                }
                new.push_str(out.get(copied..).unwrap_or_default());
                out = Cow::Owned(new);
            }
        }
        let matched = rules.context_set.as_ref().map(|set| set.matches(&out));
        for (i, rule) in rules.context.iter().enumerate() {
            if matched.as_ref().is_some_and(|m| !m.matched(i)) {
                continue;
            }
            let mut count = |kind: SecretKind| self.count(kind, 1);
            if let Some(new) = rule.apply(&out, &mut count) {
                out = Cow::Owned(new);
            }
        }
        out
    }

    fn count(&mut self, kind: SecretKind, n: usize) {
        if n > 0 {
            let count = self.counts.entry(kind.name()).or_insert(0);
            *count = count.saturating_add(n);
        }
    }

    /// Replaces capture group `group` of every match of `re` that `judge` accepts.
    fn replace_group(
        &mut self,
        text: &mut Cow<'_, str>,
        re: &Regex,
        group: usize,
        judge: impl Fn(&str) -> Option<SecretKind>,
    ) {
        let mut out = String::new();
        let mut copied = 0usize;
        for caps in re.captures_iter(text) {
            let Some(m) = caps.get(group) else { continue };
            let Some(kind) = judge(m.as_str()) else {
                continue;
            };
            out.push_str(text.get(copied..m.start()).unwrap_or_default());
            out.push_str(&kind.marker());
            copied = m.end();
            self.count(kind, 1);
        }
        if copied > 0 {
            out.push_str(text.get(copied..).unwrap_or_default());
            *text = Cow::Owned(out);
        }
    }

    /// Replaces every prefixed token whose family accepts it.
    fn replace_tokens(&mut self, text: &mut Cow<'_, str>, re: &Regex) {
        let mut out = String::new();
        let mut copied = 0usize;
        for caps in re.captures_iter(text) {
            let Some((family, m)) = tokens::FAMILIES
                .iter()
                .enumerate()
                .find_map(|(i, f)| caps.get(i.saturating_add(1)).map(|m| (f, m)))
            else {
                continue;
            };
            if !tokens::accept(family, m.as_str()) {
                continue;
            }
            if m.start() < copied {
                continue;
            }
            // A token that goes on past its pattern (`sk_test_…-…`) is replaced to its end:
            // no tail of it is left behind.
            let tail = text
                .get(m.end()..)
                .unwrap_or_default()
                .bytes()
                .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-'))
                .count();
            out.push_str(text.get(copied..m.start()).unwrap_or_default());
            out.push_str(&family.kind.marker());
            copied = m.end().saturating_add(tail);
            self.count(family.kind, 1);
        }
        if copied > 0 {
            out.push_str(text.get(copied..).unwrap_or_default());
            *text = Cow::Owned(out);
        }
    }

    /// Redacts every string of a JSON value in place: a string value under a secret-named key
    /// (`{"password": "…"}`, or a `{"name": "DB_PASSWORD", "value": "…"}` pair) when it looks
    /// like a credential, secrets inside every other string, and secrets used as object keys.
    pub fn redact_json(&mut self, value: &mut Value) {
        match value {
            Value::String(s) => {
                if let Cow::Owned(new) = self.redact(s) {
                    *s = new;
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.redact_json(v)),
            Value::Object(map) => self.redact_object(map),
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }

    fn redact_object(&mut self, map: &mut Map<String, Value>) {
        let quoted = Setting {
            quoted: true,
            env_style: false,
            continued: false,
        };
        // `{"name": "API_KEY", "value": "…"}`: the name is in another field.
        let pair_class = match map.get("name") {
            Some(Value::String(name)) if map.contains_key("value") => classify_name(name),
            _ => NameClass::Other,
        };
        for (key, v) in map.iter_mut() {
            let class = if key == "value" && pair_class != NameClass::Other {
                pair_class
            } else {
                classify_name(key)
            };
            if let Value::String(s) = v
                && value_is_secret(class, s, quoted)
            {
                *s = SecretKind::EnvSecret.marker();
                self.count(SecretKind::EnvSecret, 1);
                continue;
            }
            self.redact_json(v);
        }
        let renamed = map
            .keys()
            .any(|k| matches!(Redactor::default().redact(k), Cow::Owned(_)));
        if renamed {
            let old = std::mem::take(map);
            for (key, v) in old {
                let mut key = self.redact(&key).into_owned();
                while map.contains_key(&key) {
                    key.push('\'');
                }
                map.insert(key, v);
            }
        }
    }

    /// Redactions made so far, by kind name.
    pub fn counts(&self) -> &BTreeMap<&'static str, usize> {
        &self.counts
    }

    /// Redactions made so far.
    pub fn total(&self) -> usize {
        self.counts
            .values()
            .fold(0usize, |a, b| a.saturating_add(*b))
    }

    /// Adds another redactor's counts to this one's.
    pub fn absorb(&mut self, other: &Redactor) {
        for (kind, n) in &other.counts {
            let count = self.counts.entry(*kind).or_insert(0);
            *count = count.saturating_add(*n);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn redact(text: &str) -> (String, Redactor) {
        let mut r = Redactor::default();
        let out = r.redact(text).into_owned();
        (out, r)
    }

    #[test]
    fn every_rule_compiles() {
        let rules = &*RULES;
        assert!(rules.private_key.is_some() && rules.tokens.is_some());
        assert!(rules.url_password.is_some());
        assert_eq!(rules.context.len(), 30);
        for family in tokens::FAMILIES {
            assert!(Regex::new(family.pattern).is_ok(), "{}", family.label);
        }
    }

    #[test]
    fn each_kind_of_secret_is_replaced_by_its_marker() {
        let cases = [
            (
                "key sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz012345 end",
                "key [REDACTED:anthropic_key] end",
            ),
            (
                "OPENAI sk-proj-AbCdEfGhIjKlMnOpQrStUvWx1234",
                "OPENAI [REDACTED:openai_key]",
            ),
            (
                "s sk_live_4eC39HqLyjWDarjtT1zdp7dc",
                "s [REDACTED:stripe_key]",
            ),
            (
                "g AIzaSyA-1234567890abcdefghijklmnopqrstu x",
                "g [REDACTED:google_key] x",
            ),
            (
                "aws AKIAIOSFODNN7EXAMPLE.",
                "aws [REDACTED:aws_access_key].",
            ),
            (
                "gh github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
                "gh [REDACTED:github_token]",
            ),
            (
                "slack xoxb-123456789012-abcdefghijkl",
                "slack [REDACTED:slack_token]",
            ),
            (
                "Authorization: Bearer abc.DEF-123_456~xyz",
                "Authorization: Bearer [REDACTED:bearer_token]",
            ),
            (
                "postgres://admin:hunter2@db:5432/x",
                "postgres://admin:[REDACTED:url_password]@db:5432/x",
            ),
            (
                "DB_PASSWORD=correct-horse\nMAX_TOKENS=4096",
                "DB_PASSWORD=[REDACTED:env_secret]\nMAX_TOKENS=4096",
            ),
            (
                "t eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
                "t [REDACTED:jwt]",
            ),
        ];
        for (input, expected) in cases {
            let (out, r) = redact(input);
            assert_eq!(out, expected, "{input}");
            assert_eq!(r.total(), 1, "{input}: {:?}", r.counts());
        }
    }

    #[test]
    fn private_key_blocks_are_removed_whole_even_when_cut() {
        let block = "before\n-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nAAAA\n-----END RSA PRIVATE KEY-----\nafter";
        assert_eq!(redact(block).0, "before\n[REDACTED:private_key]\nafter");
        let cut = "x -----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk";
        assert_eq!(redact(cut).0, "x [REDACTED:private_key]");
    }

    #[test]
    fn redaction_is_idempotent_and_leaves_ordinary_text_alone() {
        let (once, _) = redact("API_KEY=abcd1234efgh and sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWx");
        let (twice, r) = redact(&once);
        assert_eq!(once, twice);
        assert_eq!(r.total(), 0);
        let plain = "修复错误: the build failed; max_tokens=100; see https://example.com/a:b@c";
        let (out, r) = redact(plain);
        assert_eq!(out, plain);
        assert_eq!(r.total(), 0);
    }

    #[test]
    fn env_names_are_split_into_words() {
        assert!(is_secret_name("AWS_SECRET_ACCESS_KEY"));
        assert!(is_secret_name("github-token"));
        assert!(!is_secret_name("MAX_TOKENS"));
        assert!(!is_secret_name("KEYBOARD"));
        assert!(!is_secret_name("thread_key"));
        assert!(!is_secret_name("session_id"));
        assert!(is_secret_name("apiKey"));
        assert!(is_secret_name("authToken"));
        assert!(is_secret_name("privateKey"));
        // Code and references are not secrets, whatever their name.
        let code = "token = get_token()\npassword: socket.assigns.password\nAPI_KEY=$OPENAI_KEY\n\
                    password_hash = bcrypt.hashpw(password, salt)\n\
                    const csrfToken = document.querySelector(\"meta\")\nsigning_key = Phoenix.Token\n\
                    params: { _csrf_token: csrfToken }";
        assert_eq!(redact(code).0, code);
        let (out, _) = redact("authToken: sEcR3tvAlUe");
        assert_eq!(out, "authToken: [REDACTED:env_secret]");
        let (out, _) = redact(r#"{"api_key": "abcdef123456", "monkey": "banana99"}"#);
        assert_eq!(
            out,
            r#"{"api_key": "[REDACTED:env_secret]", "monkey": "banana99"}"#
        );
    }

    #[test]
    fn json_strings_are_redacted_in_place() {
        let mut value = serde_json::json!({"cmd": ["curl", "-H", "Authorization: Bearer tok_abcdefghijkl"], "n": 1});
        let mut r = Redactor::default();
        r.redact_json(&mut value);
        assert_eq!(
            value["cmd"][2],
            "Authorization: Bearer [REDACTED:bearer_token]"
        );
        assert_eq!(r.counts().get("bearer_token"), Some(&1));
    }

    /// Redacts `text` and checks that `secret` is gone, whole, and that a marker took its place.
    fn assert_removed(text: &str, secret: &str) {
        let (out, r) = redact(text);
        assert!(r.total() >= 1, "nothing redacted in {text:?}");
        let chars: Vec<char> = secret.chars().collect();
        for part in chars.windows(6.min(chars.len())) {
            let part: String = part.iter().collect();
            assert!(
                !out.contains(&part),
                "{part:?} of {secret:?} left in {out:?}"
            );
        }
    }

    #[test]
    fn passwords_in_configuration_files_are_removed() {
        let pw = "Xk9#mQ2vLp";
        for text in [
            format!("machine api.example.com login deploy password {pw}"),
            format!("machine github.com\n  login bot\n  password {pw}\n"),
            format!("db.internal:5432:app:app_user:{pw}"),
            format!("     1\u{2192}*:*:*:postgres:{pw}"),
            format!("<server><password>{pw}</password></server>"),
            format!("<Credentials><Password>{pw}</Password></Credentials>"),
            format!("<add key=\"DbPassword\" value=\"{pw}\" />"),
            format!("define( 'DB_PASSWORD', '{pw}' );"),
            format!("os.environ[\"DB_PASSWORD\"] = \"{pw}\""),
            format!("bind 0.0.0.0\nrequirepass {pw}\n"),
            format!("Server=db;User Id=sa;Password={pw};Encrypt=true"),
        ] {
            assert_removed(&text, pw);
        }
    }

    #[test]
    fn passwords_given_to_commands_are_removed() {
        let pw = "Xk9#mQ2vLp";
        for text in [
            format!("docker login -u ci -p {pw} registry.example.com"),
            format!("echo \"{pw}\" | docker login -u ci --password-stdin ghcr.io"),
            format!("htpasswd -b -c /etc/nginx/.htpasswd admin {pw}"),
            format!("sudo htpasswd -bc .htpasswd admin {pw}"),
            format!("htpasswd -nbB admin {pw} > users"),
            format!("redis-cli -h cache -p 6379 -a {pw} ping"),
            format!("redis-cli -a '{pw}' --no-auth-warning info"),
            format!("mysql -uroot -p{pw} app"),
            format!("sshpass -p{pw} ssh root@host"),
            format!("mongo -u admin -p {pw} --authenticationDatabase admin"),
            format!("sqlcmd -S db -U sa -P '{pw}' -Q \"select 1\""),
            format!("ldapsearch -x -D cn=admin -w {pw} -b dc=ex"),
            format!("keytool -importkeystore -srcstorepass {pw} -deststorepass {pw}"),
            format!("zip -P {pw} secret.zip file.txt"),
            format!("7z a -p{pw} archive.7z dir"),
            format!("smbclient //srv/share -U admin%{pw}"),
            format!("xfreerdp /v:10.0.0.5 /u:admin /p:{pw}"),
            format!("net use Z: \\\\srv\\share /user:admin {pw}"),
            format!("rabbitmqctl add_user admin {pw}"),
            format!("ssh-keygen -t ed25519 -N '{pw}' -f key"),
            format!("mosquitto_pub -h broker -u dev -P {pw} -t x -m y"),
            format!("az login -u me@example.com -p {pw}"),
            format!("gh secret set API_TOKEN --body \"{pw}\""),
        ] {
            assert_removed(&text, pw);
        }
        // The port of `redis-cli -p`, a prompted password, a file of users: nothing to remove.
        for plain in [
            "redis-cli -h cache -p 6379 ping",
            "htpasswd -c /etc/nginx/.htpasswd admin",
            "docker login -u ci --password-stdin ghcr.io < token.txt",
            "mysql -h db -P 3306 -u root -p app",
            "ssh-keygen -t ed25519 -N '' -f key",
            "openssl enc -aes-256-cbc -pass stdin -in a -out b",
            "rdesktop -u admin -p - 10.0.0.5",
        ] {
            assert_eq!(redact(plain).0, plain);
        }
    }

    #[test]
    fn passwords_in_prose_and_urls_are_removed() {
        assert_removed("the password is hunter2", "hunter2");
        assert_removed(
            "I changed the root password to Tr0ub4dor&3 so log in",
            "Tr0ub4dor&3",
        );
        assert_removed(
            "token -> Zq8xK2mPw9LrT4vN7bYc3dFh",
            "Zq8xK2mPw9LrT4vN7bYc3dFh",
        );
        assert_removed(
            "postgresql://app:p%40ss%2Fw0rd@db:5432/app",
            "p%40ss%2Fw0rd",
        );
        assert_removed(
            "SENTRY_DSN=https://0123456789abcdef0123456789abcdef@o1.ingest.sentry.io/2",
            "0123456789abcdef0123456789abcdef",
        );
        for plain in [
            "the password is required",
            "the password is stored in the vault",
            "reset the password to the default before the demo",
            "the key is missing from the map",
            "gpg: key 4AEE18F83AFDEB23 marked as ultimately trusted",
            "cache key: linux-cargo-2beba449d59f1f1e17512ba8e7292c5b21db65d2",
        ] {
            assert_eq!(redact(plain).0, plain);
        }
    }

    #[test]
    fn provider_shapes_are_removed() {
        let sig = "k3J9%2Bq8Zx%2FvL0pT7mW4nR1sY6uE5aB2cD%3D";
        assert_removed(
            &format!("https://a.blob.core.windows.net/c/b?sv=2022-11-02&sp=r&sig={sig}&se=x"),
            sig,
        );
        let key = "q8Zx/vL0pT7mW4nR1sY6uE5aB2cDk3J9+zYxWvUtSrQ=";
        assert_removed(
            &format!(
                "Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=Root;SharedAccessKey={key}"
            ),
            key,
        );
        assert_removed(
            &format!("AccountName=a;AccountKey={key};EndpointSuffix=core.windows.net"),
            key,
        );
        assert_removed("_auth=Y2k6WGs5I21RMnZMcA==\n", "Y2k6WGs5I21RMnZMcA==");
        assert_removed(
            "//registry.npmjs.org/:_authToken=3f2b8c1d-9a4e-4b7f-8c2d-1e5f6a7b8c9d",
            "3f2b8c1d-9a4e-4b7f-8c2d-1e5f6a7b8c9d",
        );
        assert_removed(
            "{\"auths\":{\"ghcr.io\":{\"auth\":\"Y2k6WGs5I21RMnZMcA==\"}}}",
            "Y2k6WGs5I21RMnZMcA==",
        );
        assert_removed(
            "Authorization: SSWS 00aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5zA7b",
            "00aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5zA7b",
        );
        let discord = "MTE0NjE0NzYyNjQ0ODQ2MTk1Mg.Gx1z2a.k9Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0LzXc";
        assert_removed(&format!("DISCORD_TOKEN={discord}"), discord);
        assert_removed(&format!("client.login(\"{discord}\");"), discord);
        let block = "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQdGBF4k\n=ab12\n-----END PGP PRIVATE KEY BLOCK-----";
        assert_eq!(
            redact(&format!("a\n{block}\nb")).0,
            "a\n[REDACTED:private_key]\nb"
        );
    }

    #[test]
    fn keys_in_command_output_and_tool_variables_are_removed() {
        let key = "eXFjp3gKmjF31gpbXMJ2s0NqsH2mT0vZ+2szTFP7c+xqNb8DENKpW1ezZMY1kY7aZeoeEagRIyFhHkNAS0fxpg==";
        assert_removed(
            &format!("$ az storage account keys list -n st1 --query [0].value -o tsv\n{key}\n"),
            key,
        );
        assert_removed(
            "$ openssl rand -base64 24\nq8Zx/vL0pT7mW4nR1sY6uE5aB2cDk3J9\n",
            "q8Zx/vL0pT7mW4nR1sY6uE5aB2cDk3J9",
        );
        assert_removed(
            "SSHPASS='Ma-G75TSWQhE5' sshpass -e ssh deploy@host",
            "Ma-G75TSWQhE5",
        );
        assert_removed(
            "docker run --rm --entrypoint htpasswd httpd:2 -Bbn registry Xk9mQ2vLp4 > auth/htpasswd",
            "Xk9mQ2vLp4",
        );
        // A setting or a commit after a line that names a key is not a key.
        for plain in [
            "let value = map.get(\"key\").cloned();\nPASSWORD_HASH_ROUNDS=12",
            "git log --format=%H -1 # signing key\n3f9a2b7c8d1e4f5a6b7c8d9e0f1a2b3c4d5e6f7a",
        ] {
            assert_eq!(redact(plain).0, plain);
        }
    }

    #[test]
    fn adversarial_repetition_stays_linear() {
        // Each of these is read in a bounded window per candidate; none may take long or fail.
        for unit in [
            "a://",
            "x:1@",
            "password is ",
            "token -> ",
            "-p",
            "key\n",
            "&a",
            "<password>",
        ] {
            let text = unit.repeat(20_000);
            let (out, _) = redact(&text);
            assert!(out.len() <= text.len() * 4);
        }
    }

    #[test]
    fn a_value_is_removed_whole() {
        let django = "django-insecure-d!iy(01zn8j5&@^wh9-5j25c3;-c@0x+kqc&+b(7fe6c1v";
        assert_eq!(
            redact(&format!("SECRET_KEY={django}\nDEBUG=False")).0,
            "SECRET_KEY=[REDACTED:env_secret]\nDEBUG=False"
        );
        let doubled = "django-insecure-m88&&re12em07ekc07yk^z5j||q(x";
        assert_eq!(
            redact(&format!("docker run -e SECRET_KEY={doubled} web")).0,
            "docker run -e SECRET_KEY=[REDACTED:env_secret] web"
        );
        assert_eq!(
            redact(&format!("export DJANGO_SECRET_KEY={django}")).0,
            "export DJANGO_SECRET_KEY=[REDACTED:env_secret]"
        );
        // A query's `&` and a connection string's `;` still end a value.
        assert_eq!(
            redact("https://x.example.com/cb?token=Ab3dEf9hIj&page=2").0,
            "https://x.example.com/cb?token=[REDACTED:env_secret]&page=2"
        );
        assert_eq!(
            redact("User Id=sa;Password=Ab3d&Ef9;Encrypt=true").0,
            "User Id=sa;Password=[REDACTED:env_secret];Encrypt=true"
        );
    }

    #[test]
    fn values_starting_with_a_symbol_are_secrets_unless_references() {
        for lead in [
            '/', '~', '-', '*', '$', '%', '@', '<', '{', '#', '!', '&', '=', '(', '+',
        ] {
            let value = format!("{lead}K7mDENG9bPxRfiCY2XAMPLEkey");
            assert_removed(&format!("API_KEY={value}\n"), &value);
            assert_removed(&format!("{{\"password\": \"{value}\"}}"), &value);
            assert_removed(&format!("deploy --token {value} --yes"), &value);
        }
        for reference in [
            "API_KEY=$OPENAI_API_KEY",
            "SECRET_KEY=$(openssl rand -hex 32)",
            "API_KEY=~/.config/key.txt",
            "password = *default_password",
            "token: !Ref ApiToken",
            "secret: %(secret)s",
            "api_key: @api_key_file",
            "PASSWORD=-",
            "password: <your-password>",
            "key = #{secret_key}",
            "PWD=/home/user/project",
        ] {
            assert_eq!(redact(reference).0, reference);
        }
    }
}
