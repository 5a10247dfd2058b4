//! Secrets recognised by what stands before them: the value of a secret-named key in every
//! syntax a transcript holds (`.env` lines, YAML, JSON of any spacing, code, URL query
//! parameters, `--password value` flags, `name:`/`value:` and `key=`/`value=` pairs, XML
//! elements, `define('NAME', …)` calls), the credentials of an `Authorization: Bearer`, `Basic`
//! or `SSWS` header, passwords given on a command line (`mysql -pX`, `curl -u user:pw`,
//! `sshpass -p pw`, `docker login -p`, `redis-cli -a`, `htpasswd -b file user pw`, `echo pw |
//! … --password-stdin`), `.netrc`, `redis.conf` and `.pgpass` lines, URL signatures, and
//! passwords and keys in prose ("the password is …", "token -> …").
//!
//! A pattern finds where a value starts; the value's extent is read by hand (see
//! [`super::value`]) and the value is replaced only when it looks like a credential. A
//! rejected candidate resumes the scan at its value, so a secret inside another value
//! (`"command":"DB_PASSWORD=x ./run"`) is still found; each search is a linear regex search,
//! so the whole scan stays linear.

use regex::{Captures, Regex, RegexBuilder};

use super::forms::{
    auth_value, directive_ends, htpasswd_password_at, literal_password, piped_to_password,
    prose_key, prose_password, signature, standalone_key,
};
use super::names::{NameClass, classify_name};
use super::score::{
    base64_decode, is_capital_name, is_common_word, is_identifier, is_kebab_name, is_masked,
    is_number, is_path, is_reference, is_title_word, looks_like_key, looks_random,
};
use super::value::{Span, Syntax, continues_with_words, read_value};
use super::{REDACTION_PREFIX, SecretKind};

/// How far into a candidate value the judgement looks, in bytes. A rejected candidate costs
/// at most this much reading, which keeps the scan linear on adversarial input; an accepted
/// value is then read to its end, however long.
const JUDGED_BYTES: usize = 512;

/// Longest quoted value replaced, in bytes: an unterminated quote ends there.
const MAX_QUOTED: usize = 1 << 16;

/// How the value stood: in quotes, or bare after `NAME=` with no space (a `.env` line, a
/// shell assignment, a URL parameter), or bare after `: ` or ` = ` (configuration or code).
#[derive(Debug, Clone, Copy)]
pub(super) struct Setting {
    pub(super) quoted: bool,
    pub(super) env_style: bool,
    /// A bare value is followed on its line by more words (`token = await getToken()`,
    /// `The secret: nobody reads the docs`): an expression or prose, not a setting.
    pub(super) continued: bool,
}

/// True when `value`, set under a name of `class`, looks like a credential rather than a
/// number, a path, a URL, a flag word, a heading, a reference to a variable, code or a
/// resource's name.
pub(super) fn value_is_secret(class: NameClass, value: &str, setting: Setting) -> bool {
    if class == NameClass::Other {
        return false;
    }
    let v = value.trim();
    let min = if setting.quoted { 3 } else { 4 };
    if v.chars().count() < min || v.contains(REDACTION_PREFIX) || is_reference(v) {
        return false;
    }
    if class == NameClass::Auth {
        return auth_value(v);
    }
    if is_number(v)
        || is_placeholder(v)
        || (is_path(v) && !v.starts_with(['/', '~']))
        || v.contains("://")
        || is_masked(v)
        || is_common_word(v)
        || is_title_word(v)
        || is_capital_name(v)
    {
        return false;
    }
    if setting.quoted {
        // A sentence (`"Enter your password"`), or a key's name as a string.
        let words = v.split_whitespace().count();
        if words >= 3 && v.starts_with(|c: char| c.is_ascii_uppercase()) {
            return false;
        }
        if names_a_secret(v) && v.contains('_') {
            return false;
        }
    } else {
        // `config.settings.value` is code; `MTE0Nj….Gx1z2a.k9…` is a dotted token.
        let dotted = v.contains('.')
            && v.split('.')
                .all(|p| is_identifier(p) && !(p.len() >= 12 && looks_random(p)) && !scrambled(p));
        let snake = v.contains('_')
            && v.chars()
                .all(|c| c.is_ascii_lowercase() || c == '_' || c.is_ascii_digit());
        // A call, an index or a generic type: `os.environ[…]`, `getenv(…)`, `Option<String>`.
        // A call, an index or a generic type, whole or cut at a quote: `os.environ[`,
        // `getenv(`, `load()`, `Option<String`.
        let code = v.find(['(', '[', '<']).is_some_and(|i| {
            let (head, rest) = v.split_at(i);
            let named = head.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
                && head
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':'));
            let generic = rest.starts_with('<')
                && rest
                    .chars()
                    .skip(1)
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | ':' | '<' | ','));
            // `bcrypt.hashpw(password` is a call cut at its comma; `i()Sk4…` is a password.
            let call = head.len() >= 3
                && (head.contains('.')
                    || rest
                        .get(1..)
                        .is_some_and(|r| r.starts_with(|c: char| c.is_ascii_alphabetic())));
            named && (v.ends_with(['(', '[', ')', ']']) || generic || call)
        });
        let call = code || v.ends_with(['(', '[']) || v.ends_with("()");
        if call
            || v.ends_with(']')
            || (setting.continued && !setting.env_style)
            || dotted
            || names_a_secret(v)
            || (!setting.env_style && (snake || is_kebab_name(v)))
        {
            return false;
        }
    }
    match class {
        NameClass::Secret => true,
        // Laravel writes its key as `base64:…`.
        NameClass::Key => looks_like_key(v.strip_prefix("base64:").unwrap_or(v)),
        NameClass::Auth | NameClass::Other => false,
    }
}

/// True for a part of a dotted value that no one names a field so: a digit between letters of
/// both cases (`puJ8f`), as a password has and `settings.OAuth2` does only at its end.
fn scrambled(part: &str) -> bool {
    let inner = part.trim_end_matches(|c: char| c.is_ascii_digit());
    inner.len() >= 4
        && inner.chars().skip(1).any(|c| c.is_ascii_digit())
        && inner.chars().any(|c| c.is_ascii_uppercase())
        && inner.chars().any(|c| c.is_ascii_lowercase())
}

/// True for a placeholder written in words: `your-api-key-here`, `your_token`,
/// `paste-token-here`.
fn is_placeholder(v: &str) -> bool {
    let lower = v.to_ascii_lowercase();
    let words: Vec<&str> = lower.split(['-', '_', ' ']).collect();
    words.len() >= 2
        && words
            .iter()
            .all(|w| !w.is_empty() && w.chars().all(|c| c.is_ascii_lowercase()))
        && (words.first() == Some(&"your") || words.last() == Some(&"here"))
}

/// True for a path of plain words (`secret/app`, `kv/data/prod`): where a secret is kept.
fn is_word_path(v: &str) -> bool {
    v.contains('/')
        && v.split('/').all(|seg| {
            !seg.is_empty()
                && seg
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || matches!(c, '-' | '_'))
        })
}

/// True for an identifier that is itself a secret's name (`csrfToken`, `user_password`,
/// `apiKey`): a variable holding the secret, not the secret. The short words `pw` and `pass`
/// do not count here, so `s3cr3tPw` is a literal.
fn names_a_secret(value: &str) -> bool {
    let lower = value.to_ascii_lowercase();
    is_identifier(value)
        && classify_name(value) == NameClass::Secret
        && [
            "token",
            "secret",
            "password",
            "passwd",
            "credential",
            "key",
            "auth",
        ]
        .iter()
        .any(|w| lower.contains(w))
}

/// Which rule found a candidate, and so how it is judged.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Judge {
    /// `NAME=value` and its kin: group 1 the name, group 2 a quote after it, group 3 the
    /// separator.
    Assignment,
    /// `--name value`: group 1 the name.
    Flag,
    /// `name: X` then `value: Y`, `key="X" value="Y"`, `define('X', Y)`, `env["X"] = Y`, or
    /// an XML element `<X>Y</X>`: group 1 the variable's name.
    Pair,
    /// `Bearer X` / `Basic X` / `SSWS X`: group 1 the scheme.
    Header,
    /// A command line's password option, or a `.pgpass` line's password field: any literal.
    Command,
    /// A single-dash password option of a Java or OpenSSL style tool (`-storepass X`,
    /// `-keypass X`, `-password X`): a literal that is not a flag word.
    DashPass,
    /// A `.pgpass` line's password field (`host:port:db:user:password`).
    Pgpass,
    /// `htpasswd -b file user password`: group 1 the options.
    Htpasswd,
    /// `echo X | docker login --password-stdin`: the value piped into a password reader.
    Piped,
    /// A `.netrc` or `redis.conf` line: `password X`, `requirepass X`.
    Directive,
    /// Prose: group 1 the word (`password`, `token`, `key`) before the value.
    Prose,
    /// A URL's signature (`sig=`, `X-Amz-Signature=`).
    Signature,
    /// A line that is only a random value, right after a line that names a key, a secret, a
    /// token, a password or a random generator (`az … keys list` then the key,
    /// `openssl rand -base64 32` then its output).
    NextLine,
    /// A password given by its position: `user/password@db`, a credential call's second
    /// argument (`auth=("u", "pw")`, `.login("u", "pw")`, `NetworkCredential("u", "pw")`),
    /// `net user name password`, the `send` after an `expect "password:"`.
    Positional,
    /// A quoted secret after a quoted user name at the start of a line (`chap-secrets`,
    /// PgBouncer's `userlist.txt`): `"user" * "secret" *`, `"user" "secret"`.
    QuotedField,
    /// A session cookie's value (`Cookie: sessionid=…`, `Set-Cookie: auth=…`).
    Cookie,
    /// A password in prose: "creds are admin / pw", "use pw to log in".
    ProsePassword,
    /// `-p X` after `-u user` on any command but MySQL's (whose `-p` takes no separate
    /// value): group 1 the line before it.
    UserThenPass,
    /// A key given positionally to a command that takes one (`nuget setapikey X`,
    /// `ngrok config add-authtoken X`, `nuget push -k X`): random enough to be a key.
    PositionalKey,
    /// A password before the words that name it: "X is the admin password" (the word before
    /// the match).
    ProseBefore,
    /// A random path segment after `/hooks/`, `/webhooks/` or `/IncomingWebhook/`: a chat
    /// webhook's secret.
    PathToken,
}

pub(super) struct ContextRule {
    judge: Judge,
    syntax: Syntax,
    pattern: Regex,
}

fn rule(judge: Judge, syntax: Syntax, pattern: &str) -> Option<ContextRule> {
    let pattern = RegexBuilder::new(pattern).dfa_size_limit(8 << 20).build();
    pattern.ok().map(|pattern| ContextRule {
        judge,
        syntax,
        pattern,
    })
}

/// The context rules in the order they run: headers and command lines first, so the
/// assignment rule sees their markers and leaves them alone, and prose last.
pub(super) fn context_rules() -> Vec<ContextRule> {
    [
        rule(
            Judge::Header,
            Syntax::HeaderToken,
            r#"(?i-u)\b(bearer|basic|ssws|authorization\\?["']?[ \t]*[:=][ \t]*\\?["']?token)[ \t]+"#,
        ),
        rule(
            Judge::Command,
            Syntax::Config,
            concat!(
                r"(?-u:\b)(?:(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlshow|mysqlcheck|mariadb|mariadb-dump)(?-u:\b)[^\n;|&]*?[ \t]\\?[\x22']?-p",
                r"|sshpass(?-u:\b)[^\n;|&]*?[ \t]-p[ \t]*",
                r"|curl(?-u:\b)[^\n;|&]*?[ \t](?:-u|--user)(?:[ \t]+|=)?\\?[\x22']?[^ \t\r\n:\x22'\\]*:",
                r"|docker(?:-compose)?[ \t]+login(?-u:\b)[^\n;|&]*?[ \t]-p(?:[ \t]+|=)?",
                r"|redis-cli(?-u:\b)[^\n;|&]*?[ \t](?:-a|--pass)(?:[ \t]+|=)",
                r"|mongo(?:sh|dump|restore|import|export)?(?-u:\b)[^\n;|&]*?[ \t]-p[ \t]+",
                r"|(?:sqlcmd|bcp|mosquitto_pub|mosquitto_sub|zip|unzip|ipmitool)(?-u:\b)[^\n;|&]*?[ \t]-P[ \t]+",
                r"|(?:psexec|psexec64|paexec|nuget)(?-u:\b)[^\n;|&]*?[ \t]-p[ \t]+",
                r"|snmp[a-z]*(?-u:\b)[^\n;|&]*?[ \t]-[AX][ \t]+",
                r"|stats[ \t]+auth[ \t]+[^ \t\n:]+:|insecure-password[ \t]+",
                r"|ConvertTo-SecureString(?:[ \t]+-String)?[ \t]+",
                r"|ldap[a-z]*(?-u:\b)[^\n;|&]*?[ \t]-w[ \t]+",
                r"|(?:7z|7za|7zz|rar|unrar)(?-u:\b)[^\n;|&]*?[ \t]-p",
                r"|ssh-keygen(?-u:\b)[^\n;|&]*?[ \t]-[NP][ \t]+",
                r"|smbclient(?-u:\b)[^\n;|&]*?[ \t]-U[ \t]*[^ \t\n%]+%",
                r"|lftp(?-u:\b)[^\n;|&]*?[ \t]-u[ \t]*[^ \t\n,]+,",
                r"|(?:xfreerdp|wfreerdp|sdl-freerdp)(?-u:\b)[^\n;|&]*?[ \t]/p:",
                r"|rdesktop(?-u:\b)[^\n;|&]*?[ \t]-p[ \t]+",
                r"|net[ \t]+use(?-u:\b)[^\n;|&]*?[ \t]/user:[^ \t\n]+[ \t]+",
                r"|rabbitmqctl[ \t]+(?:add_user|change_password)[ \t]+[^ \t\n]+[ \t]+",
                r"|az[ \t]+login(?-u:\b)[^\n;|&]*?[ \t]-p[ \t]+",
                r"|gh[ \t]+secret[ \t]+set(?-u:\b)[^\n;|&]*?[ \t](?:-b|--body)(?:[ \t]+|=)",
                r"|[ \t]-pass(?:in|out)?[ \t]+\\?[\x22']?pass:",
                r"|openssl(?-u:\b)[^\n;|&]*?[ \t]-[kK][ \t]+",
                r"|[ \t]--?(?:[a-z]+-)?(?:creds|auth)(?:[ \t]+|=)\\?[\x22']?[^ \t\n:\x22'/]+:",
                r"|(?-u:\b)http-basic\.[^ \t\n]+[ \t]+[^ \t\n]+[ \t]+",
                r"|redis-cli(?-u:\b)[^\n;|&]*?[ \t](?i:auth)[ \t]+(?:[^ \t\n]+[ \t]+)?",
                r")",
            ),
        ),
        rule(
            Judge::UserThenPass,
            Syntax::Config,
            r"(?m)(?:^|\x{2192})([^\n]*?)[ \t]-u[ \t]*[^- \t\n][^ \t\n]*[ \t]+-p[ \t]+",
        ),
        rule(
            Judge::PositionalKey,
            Syntax::Config,
            r"(?-u:\b)(?:setapikey|add-authtoken)[ \t]+|(?-u:\b)nuget(?-u:\b)[^\n;|&]*?[ \t]-k[ \t]+",
        ),
        rule(
            Judge::Flag,
            Syntax::Config,
            concat!(
                r"(?-u:\b)(?:configure[ \t]+set|config[ \t]+set|config:set)[ \t]+(?:--?[A-Za-z-]+[ \t]+)*([A-Za-z0-9_.:/@-]+)[ \t]+",
                r"|(?-u:\b)(?:setenv[ \t]+|set[ \t]+(?:-[A-Za-z]+[ \t]+)+)([A-Za-z_][A-Za-z0-9_]*)[ \t]+",
            ),
        ),
        rule(
            Judge::PathToken,
            Syntax::PathSegment,
            r"(?i-u)/(?:hooks?|webhooks?|incomingwebhook)/",
        ),
        rule(
            Judge::DashPass,
            Syntax::Config,
            r"[ \t]-[a-z]*(?:pass|passwd|password|passphrase)[ \t]+",
        ),
        rule(
            Judge::Pgpass,
            Syntax::Config,
            r#"(?m)(?:^|\x{2192}|["' \t])(?:[A-Za-z0-9_.-]+|\*|\[[0-9A-Fa-f:]+\]):(?:[0-9]{1,5}|\*):[^: \t\r\n"']+:[^: \t\r\n"']+:"#,
        ),
        rule(
            Judge::Htpasswd,
            Syntax::Config,
            r"(?-u:\b)htpasswd(?-u:\b)[^\n;|&]*?((?:[ \t]+-[A-Za-z]+)+)[ \t]+",
        ),
        rule(
            Judge::Positional,
            Syntax::UserPass,
            r"(?:(?-u:\b)sqlplus[ \t]+(?:-[A-Za-z]+[ \t]+)*|jdbc:oracle:(?:thin|oci):)[A-Za-z0-9_$#]+/",
        ),
        rule(
            Judge::Positional,
            Syntax::Config,
            concat!(
                r#"(?:(?-u:\b)auth[ \t]*=[ \t]*\(|\.login\(|Credentials?\(|BasicAuth\(|DigestAuth\("#,
                r#"|PasswordAuthentication\()[ \t]*\\?["'][^"'\n\\]*\\?["'][ \t]*,[ \t]*"#,
                r"|(?-u:\b)net[ \t]+user[ \t]+[^ \t\n/]+[ \t]+",
                r#"|(?i-u:expect)[ \t]+(?:-[a-z]+[ \t]+)*\\?["'][^"'\n]*(?i-u:password|passphrase)[^"'\n]*\\?["'][ \t]*(?:;|\r?\n)[ \t]*send[ \t]+(?:--[ \t]+)?"#,
            ),
        ),
        rule(
            Judge::QuotedField,
            Syntax::Config,
            r#"(?m)(?:^|\x{2192})[ \t]*"[^"\n]+"[ \t]+(?:(?:\*|[A-Za-z0-9_.-]+)[ \t]+)?"#,
        ),
        rule(
            Judge::Pgpass,
            Syntax::Config,
            r"(?m)(?:^|\x{2192})[ \t]*\[?[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+\]?(?::[0-9]{1,5}|:submission)?[ \t]+[^ \t:\n]+:",
        ),
        rule(
            Judge::Cookie,
            Syntax::Connection,
            r"(?i:set-)?(?i:cookie):[ \t]*(?:[!-:<>-~]+=[!-:<-~]*;[ \t]*)*?[A-Za-z0-9_.-]*(?i:sess|sid|auth|token|jwt|remember|login)[A-Za-z0-9_.-]*=",
        ),
        rule(
            Judge::Piped,
            Syntax::Config,
            r#"(?-u:\b)(?:echo|printf)(?:[ \t]+-[a-z]+)*(?:[ \t]+["']?%s(?:\\n)?["'])?[ \t]+"#,
        ),
        rule(
            Judge::Signature,
            Syntax::Query,
            r"(?i-u)[?&;\s](?:sig|signature|x-amz-signature|x-goog-signature|x-amz-security-token)=",
        ),
        rule(
            Judge::Flag,
            Syntax::Config,
            r"(?m)(?:^|[ \t])--([A-Za-z][A-Za-z0-9_-]*)[ \t]+",
        ),
        rule(
            Judge::Pair,
            Syntax::Config,
            r#"(?-u:\b)(?:name|key)\\?["']?[ \t]*[:=][ \t]*\\?["']?([A-Za-z_][A-Za-z0-9_.-]*)\\?["']?[ \t]*,?[ \t]*\r?\n?[ \t]*-?[ \t]*\\?["']?value\\?["']?[ \t]*[:=][ \t]*"#,
        ),
        rule(
            Judge::Pair,
            Syntax::Config,
            r#"(?:(?-u:\b)(?:define|setenv|putenv|Setenv|Putenv|SetEnvironmentVariable|set|setdefault|setItem|setProperty|put)\([ \t]*["']([A-Za-z_][A-Za-z0-9_.-]*)["'][ \t]*,|\[["']([A-Za-z_][A-Za-z0-9_.-]*)["']\][ \t]*=)[ \t]*"#,
        ),
        rule(
            Judge::Pair,
            Syntax::XmlText,
            r"<([A-Za-z0-9_.:-]*(?i-u:pass|secret|token|key|credential|auth|pwd)[A-Za-z0-9_.:-]*)>",
        ),
        rule(
            Judge::Pair,
            Syntax::XmlText,
            r#"<[A-Za-z:_-]+[ \t]+name[ \t]*=[ \t]*["']([A-Za-z0-9_.:-]+)["'][ \t]*>"#,
        ),
        rule(
            Judge::Directive,
            Syntax::Config,
            r"(?m)(?:^|\x{2192})[ \t]*[+-]?[ \t]*(?:(?:machine[ \t]+[^ \t\r\n]+|default)[ \t]+)?(?:(?:login|account)[ \t]+[^ \t\r\n]+[ \t]+)*(?:password|passwd|requirepass|masterauth)[ \t]+",
        ),
        // An FTP script's `user NAME PASSWORD`; a password alone on the line after `pass:`.
        rule(
            Judge::Directive,
            Syntax::Config,
            concat!(
                r"(?m)(?:^|\x{2192})[ \t]*user[ \t]+[^ \t\r\n]+[ \t]+",
                r"|(?m)(?:^|\x{2192})[ \t]*(?i-u:pass|password|passwd|pw|pwd)[ \t]*:[ \t]*\r?\n[ \t]*",
            ),
        ),
        // `ssh-keygen -p -P old -N new`: the new passphrase after the old.
        rule(
            Judge::Command,
            Syntax::Config,
            r"ssh-keygen(?-u:\b)[^\n;|&]*?[ \t]-P[ \t]+[^ \t\n]+[^\n;|&]*?[ \t]-N[ \t]+",
        ),
        // "X is the admin password": the value before the words.
        rule(
            Judge::ProseBefore,
            Syntax::Config,
            r"[ \t]+(?i-u:is|was)[ \t]+(?i-u:the|my|our|your)[ \t]+(?:[A-Za-z-]+[ \t]+){0,2}(?i-u:password|passphrase|passcode|pw)(?-u:\b)",
        ),
        rule(
            Judge::Assignment,
            Syntax::Config,
            r#"(?-u:\b)([A-Za-z0-9_.-]*?(?i-u:token|secret|pw|pass|credential|key|authorization|auth|psk|[_-]pat(?-u:\b))[A-Za-z0-9_.-]*)(\\?["'])?[ \t]*(:=|\?=|=>|==|=|:)[ \t]*"#,
        ),
        rule(
            Judge::NextLine,
            Syntax::Config,
            r"(?m)(?i-u:key|secret|token|passw|credential|rand)[^\n]*\n[ \t]*([A-Za-z0-9+/_=.-]{20,})[ \t]*\r?$",
        ),
        rule(
            Judge::Prose,
            Syntax::Config,
            concat!(
                r"(?-u:\b)((?i-u:password|passwd|passphrase|secret|token|api[ _-]?key|key|pass|pwd|pw)",
                r"|(?i:contraseña|contrasena|passwort|kennwort|mot[ \t]+de[ \t]+passe|senha|wachtwoord|lösenord|salasana(?:[ \t]+on)?))",
                r"(?:[ \t]+(?:(?i-u:is|was|is[ \t]+now|to|es|ist|est|lautet|är)|é",
                r"|(?i-u:for|del|de|of|für|du|da|do)[ \t]+[^ \t\r\n]+(?:[ \t]+[^ \t\r\n]+)?[ \t]+(?i-u:is|es|ist|est|é))|[ \t]*(?:->|=>|:))?[ \t]+",
            ),
        ),
        rule(
            Judge::Prose,
            Syntax::Config,
            concat!(
                r"((?:密码|密碼|口令|パスワード|비밀번호|암호|[Пп]ароль|[Hh]asło|[Hh]eslo|[Şş]ifre|[Pp]arola|[Mm]ật[ \t]+khẩu",
                r"|كلمة[ \t]+المرور|كلمة[ \t]+السر|पासवर्ड|[Kk]ata[ \t]+sandi(?:nya)?|[Κκ]ωδικός|[Jj]elszó|[Jj]elszava",
                r"|[Aa]dgangskoden?|[Pp]assord(?:et)?|[Ll]ösenordet|[Ww]achtwoord|סיסמה|סיסמא|[Pp]assword|[Cc]ontraseña|[Pp]asswort|[Kk]ennwort|[Ss]enha))",
                r"(?:[ \t]+(?:от|до|для|od|dla|na|per|til|för|van|voor|za|do)[ \t]+[^ \t\r\n]+)?",
                r"(?:[ \t]*(?:[:：]|—|–)|[ \t]+(?:adalah|είναι|lautet|este|est|ist|es|è|é|är|er|on|je|to|là|है|هي)[ \t]|[ \t]*(?:是|为|為|は|는|은))[ \t]*",
            ),
        ),
        rule(
            Judge::ProsePassword,
            Syntax::Config,
            concat!(
                r"(?-u:\b)(?i-u:creds|credentials|login|log-in)(?-u:\b)[\t -~]{0,40}?[ \t][A-Za-z0-9_.@-]+[ \t]*/[ \t]*",
                r"|(?-u:\b)(?i-u:use)[ \t]+",
            ),
        ),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// True when a header's token (after `Bearer`, `Basic` or `SSWS`) is a credential.
fn header_is_secret(scheme: &str, token: &str) -> bool {
    if token.len() < 8 || is_title_word(token) || is_common_word(token) || is_capital_name(token) {
        return false;
    }
    if scheme.eq_ignore_ascii_case("basic") {
        let decoded = base64_decode(token).and_then(|b| String::from_utf8(b).ok());
        let pair = decoded.is_some_and(|d| {
            d.contains(':') && d.chars().all(|c| c.is_ascii_graphic() || c == ' ')
        });
        return pair || (token.len() >= 16 && looks_random(token));
    }
    // A bearer token: random-looking, or not a plain word (`tok_abcdefghijkl`, `a.b-c`).
    looks_random(token) || (token.len() >= 12 && !token.chars().all(|c| c.is_ascii_alphabetic()))
}

impl ContextRule {
    /// The marker's kind for what this rule replaces.
    fn kind(&self) -> SecretKind {
        match self.judge {
            Judge::Assignment
            | Judge::Flag
            | Judge::Pair
            | Judge::Prose
            | Judge::ProsePassword
            | Judge::Cookie
            | Judge::NextLine => SecretKind::EnvSecret,
            Judge::UserThenPass | Judge::PositionalKey => SecretKind::CommandPassword,
            Judge::ProseBefore => SecretKind::EnvSecret,
            Judge::PathToken => SecretKind::UrlToken,
            Judge::Header => SecretKind::BearerToken,
            Judge::Command
            | Judge::DashPass
            | Judge::Pgpass
            | Judge::Htpasswd
            | Judge::Piped
            | Judge::Positional
            | Judge::QuotedField
            | Judge::Directive => SecretKind::CommandPassword,
            Judge::Signature => SecretKind::UrlSignature,
        }
    }

    /// Where the candidate's value starts: after the match, or, for `htpasswd`, after the
    /// words its options say come first.
    fn value_at(&self, text: &str, caps: &Captures<'_>, end: usize) -> Option<usize> {
        if self.judge == Judge::Assignment {
            // `KEY==x` with no space is `KEY` set to `=x` (a base64 value may start with `=`);
            // `a == b` is a comparison.
            let tight = caps.get(3).is_some_and(|m| m.as_str() == "==")
                && !caps
                    .get(0)
                    .is_some_and(|m| m.as_str().contains([' ', '\t']));
            return Some(if tight { end.saturating_sub(1) } else { end });
        }
        if self.judge == Judge::ProseBefore {
            let before = text.get(..caps.get(0)?.start())?;
            let word = before
                .rfind(char::is_whitespace)
                .map_or(0, |i| i.saturating_add(1));
            return (before.len().saturating_sub(word) >= 4).then_some(word);
        }
        if self.judge == Judge::NextLine {
            return caps.get(1).map(|m| m.start());
        }
        if self.judge != Judge::Htpasswd {
            return Some(end);
        }
        let options = caps.get(1).map_or("", |m| m.as_str());
        let after = text.get(end..)?;
        let limit = after.find('\n').unwrap_or(after.len());
        end.checked_add(htpasswd_password_at(options, after.get(..limit)?)?)
    }

    /// Whether the candidate found by `caps`, whose value is `value` and is followed by
    /// `after` (the rest of its line), is replaced, and as what.
    fn judge(
        &self,
        caps: &Captures<'_>,
        value: &str,
        span: &Span,
        after: &str,
    ) -> Option<SecretKind> {
        let group = |i| caps.get(i).map_or("", |m| m.as_str());
        if value.is_empty() || value.starts_with(REDACTION_PREFIX) {
            return None;
        }
        let continued = !span.quoted && continues_with_words(after, 0);
        let accepted = match self.judge {
            Judge::Assignment => {
                let whole = group(0);
                let separator = match group(3) {
                    "==" if whole.contains([' ', '\t']) => return None,
                    "==" => "=",
                    other => other,
                };
                let env_style = separator == "="
                    && caps.get(2).is_none()
                    && !whole.contains([' ', '\t'])
                    && !span.quoted;
                value_is_secret(
                    classify_name(group(1)),
                    value,
                    Setting {
                        quoted: span.quoted,
                        env_style,
                        continued,
                    },
                )
            }
            Judge::Flag => value_is_secret(
                classify_name(
                    caps.get(1)
                        .or_else(|| caps.get(2))
                        .map_or("", |m| m.as_str()),
                ),
                value,
                Setting {
                    quoted: span.quoted,
                    env_style: true,
                    continued: false,
                },
            ),
            Judge::Pair => {
                let name = caps
                    .get(1)
                    .or_else(|| caps.get(2))
                    .map_or("", |m| m.as_str());
                value_is_secret(
                    classify_name(name),
                    value,
                    Setting {
                        quoted: span.quoted,
                        env_style: false,
                        continued,
                    },
                )
            }
            Judge::Header => {
                return header_is_secret(group(1), value).then(|| {
                    if group(1).eq_ignore_ascii_case("basic") {
                        SecretKind::BasicAuth
                    } else {
                        SecretKind::BearerToken
                    }
                });
            }
            Judge::Command | Judge::Htpasswd => literal_password(value),
            Judge::DashPass => literal_password(value) && !is_common_word(value),
            // An IPv6 address has more `:`; a `.pgpass` password escapes its own.
            Judge::Pgpass => {
                literal_password(value)
                    && !value.replace("\\:", "").contains(':')
                    && (after.trim().is_empty() || after.starts_with(['"', '\'', '\\']))
            }
            Judge::Piped => literal_password(value) && piped_to_password(after),
            Judge::Directive => directive_ends(after) && prose_password(value, span.quoted),
            Judge::Prose => {
                let word = group(1).to_lowercase();
                let password = word.starts_with("pass")
                    || word.starts_with("pw")
                    || !(word.contains("key") || word == "secret" || word == "token");
                // `password: socket.assigns.password` names where the password is.
                let path = value.trim_end_matches(['.', ',', ';', ')']);
                let dotted = path.contains('.') && path.split('.').all(is_identifier);
                if dotted || names_a_secret(path) || is_word_path(path) {
                    false
                } else if password {
                    prose_password(value, span.quoted)
                } else {
                    prose_key(&word, value)
                }
            }
            Judge::Signature => signature(value),
            Judge::UserThenPass => {
                let line = group(1);
                literal_password(value)
                    && !line.contains("mysql")
                    && !line.contains("mariadb")
                    && !value.starts_with('-')
                    && !value
                        .chars()
                        .all(|c| c.is_ascii_digit() || matches!(c, ':' | '.'))
            }
            Judge::PositionalKey => prose_key("token", value),
            Judge::ProseBefore => prose_password(value, span.quoted),
            Judge::PathToken => value.len() >= 20 && !is_number(value) && looks_random(value),
            // The body of a `-----BEGIN PUBLIC KEY-----` block is no secret.
            Judge::NextLine => {
                let line = group(0).lines().next().unwrap_or_default();
                after.trim().is_empty() && !line.contains("-----") && standalone_key(value)
            }
            Judge::Positional => {
                let v = value.trim_end_matches("\\r").trim_end_matches("\\n");
                literal_password(v) && !v.starts_with(['/', '-']) && v != "*"
            }
            Judge::QuotedField => {
                let rest = after.trim_start();
                span.quoted
                    && prose_password(value, false)
                    && (rest.is_empty()
                        || rest.starts_with(['*', '#'])
                        || rest.starts_with(|c: char| c.is_ascii_digit()))
            }
            Judge::Cookie => value.len() >= 16 && looks_random(value),
            Judge::ProsePassword => {
                let whole = group(0).to_ascii_lowercase();
                let login_follows = [
                    "to log in",
                    "to login",
                    "to sign in",
                    "to connect",
                    "as the password",
                    "as password",
                ]
                .iter()
                .any(|w| after.trim_start().to_ascii_lowercase().starts_with(w));
                prose_password(value, span.quoted) && (!whole.starts_with("use") || login_follows)
            }
        };
        accepted.then(|| self.kind())
    }

    /// How the value after the match that ends at `end` is read: as a query's when an
    /// assignment's name follows `?`, `&` or `;`.
    fn syntax_at(&self, text: &str, caps: &Captures<'_>) -> Syntax {
        if self.judge == Judge::Assignment
            && let Some(name) = caps.get(1)
            && text
                .get(..name.start())
                .and_then(|before| before.chars().next_back())
                .is_some_and(|c| matches!(c, '?' | '&' | ';'))
        {
            let before = text
                .get(..caps.get(1).map_or(0, |m| m.start()))
                .unwrap_or_default();
            return if before.ends_with(';') {
                Syntax::Connection
            } else {
                Syntax::Query
            };
        }
        self.syntax
    }

    /// The rule's pattern.
    pub(super) fn pattern(&self) -> &str {
        self.pattern.as_str()
    }

    /// Appends `text` with this rule's secrets replaced to `out`; counts each by kind.
    pub(super) fn apply(&self, text: &str, count: &mut dyn FnMut(SecretKind)) -> Option<String> {
        let mut out = String::new();
        let mut copied = 0usize;
        let mut at = 0usize;
        while at <= text.len() {
            let Some(caps) = self.pattern.captures_at(text, at) else {
                break;
            };
            let Some(whole) = caps.get(0) else {
                break;
            };
            // The scan resumes at the value when the candidate is rejected.
            at = whole.end().max(at.saturating_add(1));
            let Some(start) = self.value_at(text, &caps, whole.end()) else {
                continue;
            };
            let syntax = self.syntax_at(text, &caps);
            let Some(mut span) = read_value(text, start, syntax, JUDGED_BYTES) else {
                continue;
            };
            let value = text.get(span.start..span.end).unwrap_or_default();
            let rest = text.get(span.end..).unwrap_or_default();
            let after_quote = usize::from(span.quoted && rest.starts_with(['"', '\'', '`']));
            let rest = rest.get(after_quote..).unwrap_or_default();
            let after = rest
                .get(..rest.find('\n').unwrap_or(rest.len()))
                .unwrap_or_default();
            let Some(kind) = self.judge(&caps, value, &span, after) else {
                continue;
            };
            if span.end.saturating_sub(span.start) >= JUDGED_BYTES.saturating_sub(2) {
                // Accepted on its first bytes: the rest of it goes too.
                let limit = if span.quoted { MAX_QUOTED } else { usize::MAX };
                if let Some(full) = read_value(text, start, syntax, limit) {
                    span.end = full.end.max(span.end);
                }
            }
            if span.start < copied {
                continue;
            }
            out.push_str(text.get(copied..span.start).unwrap_or_default());
            out.push_str(&kind.marker());
            copied = span.end;
            at = span.end.max(at);
            count(kind);
        }
        if copied == 0 {
            return None;
        }
        out.push_str(text.get(copied..).unwrap_or_default());
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_classified_by_their_words() {
        assert_eq!(classify_name("AWS_SECRET_ACCESS_KEY"), NameClass::Secret);
        assert_eq!(classify_name("authtoken"), NameClass::Secret);
        assert_eq!(classify_name("DB_PASS"), NameClass::Secret);
        assert_eq!(classify_name("cache_key"), NameClass::Key);
        assert_eq!(classify_name("token_count"), NameClass::Other);
        assert_eq!(classify_name("MAX_TOKENS"), NameClass::Other);
        assert_eq!(classify_name("tokenizer"), NameClass::Other);
        assert_eq!(classify_name("client-key-data"), NameClass::Secret);
        assert_eq!(classify_name("private_key_pem"), NameClass::Secret);
        assert_eq!(classify_name("data"), NameClass::Other);
        assert_eq!(classify_name("PublicKeyToken"), NameClass::Other);
        assert_eq!(classify_name("STRIPE_PUBLISHABLE_KEY"), NameClass::Other);
    }
}
