//! Secrets in configuration formats, command lines and prose, and provider families beyond the
//! first set: `.netrc`, `.pgpass`, XML settings, connection strings and URLs, `docker login`,
//! `htpasswd`, `redis-cli`, PGP key blocks, Azure signatures and keys, npm's legacy settings,
//! Okta and Sentry, dotted bot tokens, values that start with a symbol and values with `&`,
//! `;` or `(` inside. Every value is generated here.
//!
//! The tuned part is what the rules were written against; [`held_out`] holds other templates
//! of the same families, written before the rules and measured apart, never read to tune them.

use crate::secrets::{ALNUM, B64, B64URL, Case, DIGITS, HEX, Rng, WORDS, base64, case, mixed};

/// The characters Django's `get_random_secret_key` draws from.
const DJANGO: &str = "abcdefghijklmnopqrstuvwxyz0123456789!@#$%^&*(-_=+)";
/// Characters a hand-typed password mixes in.
const SYMBOLS: &str = "!@#$%^&*()-_=+;:,.?/~";
/// The leading characters a value must be recognised after.
pub(crate) const LEADS: [char; 14] = [
    '/', '~', '-', '*', '$', '%', '@', '<', '{', '#', '!', '&', '=', '(',
];

/// A password of one of the shapes people use: random with symbols, a base64 key (which may
/// start with `/` or `+`), words with digits, or a Django key.
pub(crate) fn password(rng: &mut Rng) -> String {
    match rng.below(5) {
        0 => {
            let n = 8 + rng.below(8);
            let mut p = mixed(rng, ALNUM, n);
            for _ in 0..2 {
                let at = rng.below(p.len());
                let c = rng.from(SYMBOLS, 1);
                p.insert_str(at, &c);
            }
            p
        }
        1 => {
            let bytes: Vec<u8> = (0..32).map(|_| rng.next() as u8).collect();
            base64(&bytes)
        }
        2 => {
            let n = 2 + rng.below(3);
            format!(
                "{}{}{}",
                rng.pick(&WORDS),
                rng.from(DIGITS, n),
                rng.pick(&["!", "#", "", "?", "*"])
            )
        }
        3 => format!("django-insecure-{}", rng.from(DJANGO, 50)),
        _ => {
            let n = 12 + rng.below(20);
            mixed(rng, ALNUM, n)
        }
    }
}

/// A password that is safe inside a URL (percent-encoded where it needs to be).
fn url_password(rng: &mut Rng) -> String {
    let p = password(rng);
    let mut out = String::new();
    for c in p.chars() {
        if c.is_ascii_alphanumeric() || "-._~".contains(c) {
            out.push(c);
        } else {
            out.push_str(&format!("%{:02X}", c as u32));
        }
    }
    out
}

/// A password with no character a shell or XML would need escaped in double quotes.
fn plain_password(rng: &mut Rng) -> String {
    password(rng).replace(['"', '\'', '<', '>', '&', '$', '`', '\\', '!'], "Q")
}

fn uuid(rng: &mut Rng) -> String {
    format!(
        "{}-{}-4{}-{}{}-{}",
        rng.from(HEX, 8),
        rng.from(HEX, 4),
        rng.from(HEX, 3),
        rng.pick(&["8", "9", "a", "b"]),
        rng.from(HEX, 3),
        rng.from(HEX, 12)
    )
}

fn url_encode_b64(s: &str) -> String {
    s.replace('+', "%2B")
        .replace('/', "%2F")
        .replace('=', "%3D")
}

fn random_bytes(rng: &mut Rng, n: usize) -> Vec<u8> {
    (0..n).map(|_| rng.next() as u8).collect()
}

/// A Discord-style bot token: the base64 of a snowflake id, a timestamp part and an HMAC.
pub(crate) fn dotted_bot_token(rng: &mut Rng) -> String {
    let n = 17 + rng.below(2);
    let id = format!("1{}", rng.from(DIGITS, n));
    let head = base64(id.as_bytes()).trim_end_matches('=').to_owned();
    let n = 27 + rng.below(12);
    format!("{head}.{}.{}", rng.from(B64URL, 6), rng.from(B64URL, n))
}

/// A PGP private key block with a generated body.
fn pgp_block(rng: &mut Rng) -> (String, String) {
    let lines: Vec<String> = (0..6).map(|_| rng.from(B64, 64)).collect();
    let first = lines.first().cloned().unwrap_or_default();
    let block = format!(
        "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n{}\n={}\n-----END PGP PRIVATE KEY BLOCK-----\n",
        lines.join("\n"),
        rng.from(B64, 4)
    );
    (block, first)
}

/// Provider families the first set lacked, each with a generator of realistic fakes.
pub(crate) fn more_token_families() -> Vec<(&'static str, crate::secrets::Maker)> {
    vec![
        ("1password", |r| format!("ops_eyJ{}", mixed(r, B64URL, 240))),
        ("alibaba", |r| format!("LTAI{}", mixed(r, ALNUM, 20))),
        ("artifactory", |r| format!("AKCp{}", mixed(r, ALNUM, 69))),
        ("clojars", |r| {
            format!(
                "CLOJARS_{}",
                r.from("abcdefghijklmnopqrstuvwxyz0123456789", 60)
            )
        }),
        ("contentful", |r| format!("CFPAT-{}", mixed(r, B64URL, 43))),
        ("dropbox", |r| format!("sl.{}", mixed(r, B64URL, 135))),
        ("duffel", |r| {
            format!("duffel_live_{}", mixed(r, B64URL, 43))
        }),
        ("easypost", |r| format!("EZAK{}", mixed(r, ALNUM, 54))),
        ("flutterwave", |r| {
            format!("FLWSECK_TEST-{}-X", r.from(HEX, 32))
        }),
        ("frameio", |r| format!("fio-u-{}", mixed(r, B64URL, 64))),
        ("hubspot", |r| format!("pat-na1-{}", uuid(r))),
        ("infracost", |r| format!("ico-{}", mixed(r, ALNUM, 32))),
        ("langsmith", |r| {
            format!("lsv2_pt_{}_{}", r.from(HEX, 32), r.from(HEX, 10))
        }),
        ("newrelic-browser", |r| {
            format!("NRJS-{}", r.from("0123456789abcdef", 19))
        }),
        ("openshift", |r| format!("sha256~{}", mixed(r, B64URL, 43))),
        ("plaid", |r| format!("access-production-{}", uuid(r))),
        ("prefect", |r| format!("pnu_{}", mixed(r, ALNUM, 36))),
        ("readme", |r| {
            format!(
                "rdme_{}",
                r.from("abcdefghijklmnopqrstuvwxyz0123456789", 70)
            )
        }),
        ("scalingo", |r| format!("tk-us-{}", mixed(r, B64URL, 48))),
        ("sendinblue", |r| {
            format!("xkeysib-{}-{}", r.from(HEX, 64), mixed(r, ALNUM, 16))
        }),
        ("shippo", |r| format!("shippo_live_{}", r.from(HEX, 40))),
        ("sourcegraph", |r| {
            format!("sgp_{}_{}", r.from(HEX, 16), r.from(HEX, 40))
        }),
        ("typeform", |r| format!("tfp_{}", mixed(r, B64URL, 59))),
        ("yandex", |r| format!("AQVN{}", mixed(r, B64URL, 36))),
        ("harness", |r| {
            format!(
                "pat.{}.{}.{}",
                mixed(r, B64URL, 22),
                mixed(r, ALNUM, 24),
                mixed(r, ALNUM, 20)
            )
        }),
        ("airtable", |r| {
            format!("pat{}.{}", mixed(r, ALNUM, 14), r.from(HEX, 64))
        }),
        ("discord-bot", dotted_bot_token),
        ("okta", |r| format!("00{}", mixed(r, B64URL, 40))),
    ]
}

/// A password or key in each configuration, command and prose shape (the tuned part).
pub(crate) fn shape_cases(rng: &mut Rng) -> Vec<Case> {
    let mut out = Vec::new();
    for _ in 0..4 {
        let v = plain_password(rng);
        let v = v.as_str();
        out.extend([
            case("netrc", "one line", format!("machine api.example.com login deploy password {v}\n"), v),
            case("netrc", "lines", format!("machine github.com\n  login bot\n  password {v}\n"), v),
            case("pgpass", "file", format!("db.internal:5432:app:app_user:{v}\n"), v),
            case("pgpass", "wildcards", format!("     1\u{2192}*:*:*:postgres:{v}\n"), v),
            case("pgpass", "echo", format!("echo \"localhost:5432:*:admin:{v}\" >> ~/.pgpass"), v),
            case("xml password", "maven", format!("<server>\n  <id>nexus</id>\n  <username>ci</username>\n  <password>{v}</password>\n</server>"), v),
            case("xml password", "appsettings", format!("<appSettings>\n  <add key=\"DbPassword\" value=\"{v}\" />\n</appSettings>"), v),
            case("xml password", "capital", format!("<Credentials><User>sa</User><Password>{v}</Password></Credentials>"), v),
            case("docker login", "-p", format!("docker login -u ci -p {v} registry.example.com"), v),
            case("docker login", "--password", format!("docker login --username ci --password {v} ghcr.io"), v),
            case("docker login", "echo stdin", format!("echo \"{v}\" | docker login -u ci --password-stdin ghcr.io"), v),
            case("htpasswd", "-b -c", format!("htpasswd -b -c /etc/nginx/.htpasswd admin {v}"), v),
            case("htpasswd", "-bc", format!("sudo htpasswd -bc .htpasswd admin {v}"), v),
            case("htpasswd", "-nb", format!("htpasswd -nbB admin {v} > users"), v),
            case("redis-cli", "-a", format!("redis-cli -h cache -p 6379 -a {v} ping"), v),
            case("redis-cli", "-a quoted", format!("redis-cli -a '{v}' --no-auth-warning info"), v),
            case("redis-cli", "--pass", format!("redis-cli --pass {v} -n 2 keys '*'"), v),
            case("mysql", "-p", format!("mysql -uroot -p{v} app < schema.sql"), v),
            case("mysql", "--password=", format!("mysql --user=root --password={v} -e 'show databases'"), v),
            case("mysql", "mysqladmin", format!("mysqladmin -u root -p{v} status"), v),
            case("sshpass", "-p joined", format!("sshpass -p{v} ssh root@10.0.0.2"), v),
            case("sshpass", "-p quoted", format!("sshpass -p \"{v}\" rsync -a dist/ host:/srv"), v),
            case("prose", "is", format!("the password is {v}"), v),
            case("prose", "db is", format!("FYI the db password is {v} until Friday."), v),
            case("prose", "changed to", format!("I changed the root password to {v} so log in again"), v),
            case("redis.conf", "requirepass", format!("bind 0.0.0.0\nrequirepass {v}\nport 6379\n"), v),
            case("connection string", "ado", format!("Server=db;Database=app;User Id=sa;Password={v};Encrypt=true"), v),
            case("connection string", "jdbc", format!("jdbc:postgresql://db:5432/app?user=app&password={v}&ssl=true"), v),
            case("php define", "wp-config", format!("define( 'DB_PASSWORD', '{v}' );"), v),
            case("docker config", "auth", format!("{{\"auths\":{{\"ghcr.io\":{{\"auth\":\"{}\"}}}}}}", base64(format!("ci:{v}").as_bytes())), &base64(format!("ci:{v}").as_bytes())),
        ]);
        out.extend([
            case(
                "other commands",
                "mongo",
                format!("mongo -u admin -p {v} --authenticationDatabase admin"),
                v,
            ),
            case(
                "other commands",
                "sqlcmd",
                format!("sqlcmd -S db -U sa -P '{v}' -Q \"select 1\""),
                v,
            ),
            case(
                "other commands",
                "ldapsearch",
                format!("ldapsearch -x -D cn=admin,dc=ex -w {v} -b dc=ex"),
                v,
            ),
            case(
                "other commands",
                "keytool",
                format!("keytool -importkeystore -srcstorepass {v} -deststorepass {v}"),
                v,
            ),
            case(
                "other commands",
                "zip",
                format!("zip -P {v} secret.zip notes.txt"),
                v,
            ),
            case(
                "other commands",
                "7z",
                format!("7z a -p{v} backup.7z data/"),
                v,
            ),
            case(
                "other commands",
                "smbclient",
                format!("smbclient //files/share -U admin%{v}"),
                v,
            ),
            case(
                "other commands",
                "xfreerdp",
                format!("xfreerdp /v:10.0.0.5 /u:admin /p:{v}"),
                v,
            ),
            case(
                "other commands",
                "net use",
                format!("net use Z: \\\\files\\share /user:corp\\admin {v}"),
                v,
            ),
            case(
                "other commands",
                "rabbitmqctl",
                format!("rabbitmqctl add_user admin {v}"),
                v,
            ),
            case(
                "other commands",
                "ssh-keygen",
                format!("ssh-keygen -t ed25519 -N '{v}' -f deploy_key"),
                v,
            ),
            case(
                "other commands",
                "mosquitto",
                format!("mosquitto_pub -h broker -u dev -P {v} -t t -m hi"),
                v,
            ),
            case(
                "other commands",
                "az login",
                format!("az login -u me@example.com -p {v}"),
                v,
            ),
            case(
                "other commands",
                "gh secret",
                format!("gh secret set API_TOKEN --body \"{v}\""),
                v,
            ),
            case(
                "laravel key",
                "env",
                format!("APP_KEY=base64:{}", base64(v.as_bytes())),
                &base64(v.as_bytes()),
            ),
        ]);
        let u = url_password(rng);
        let u = u.as_str();
        out.extend([
            case(
                "connection url",
                "postgres",
                format!("DATABASE_URL=postgresql://app:{u}@db.internal:5432/app"),
                u,
            ),
            case(
                "connection url",
                "mongodb",
                format!(
                    "client = MongoClient(\"mongodb://admin:{u}@mongo:27017/?authSource=admin\")"
                ),
                u,
            ),
            case(
                "connection url",
                "amqp",
                format!("amqp://guest:{u}@rabbit:5672/vhost"),
                u,
            ),
            case(
                "connection url",
                "redis",
                format!("redis-cli -u redis://default:{u}@cache:6379/0 ping"),
                u,
            ),
        ]);
        // Values with what ends an unquoted value too early inside them.
        let d = format!(
            "django-insecure-{}&{};{}({}",
            rng.from(DJANGO, 12),
            rng.from(DJANGO, 12),
            rng.from(DJANGO, 12),
            rng.from(DJANGO, 12)
        );
        let d = d.as_str();
        out.extend([
            case(
                "django key",
                "env",
                format!("SECRET_KEY={d}\nDEBUG=False\n"),
                d,
            ),
            case(
                "django key",
                "export",
                format!("export DJANGO_SECRET_KEY={d}"),
                d,
            ),
            case("django key", "settings", format!("SECRET_KEY = '{d}'\n"), d),
        ]);
    }
    for _ in 0..3 {
        let (block, first) = pgp_block(rng);
        out.push(case(
            "pgp private key",
            "tool output",
            format!("$ gpg --export-secret-keys --armor ci@example.com\n{block}"),
            &first,
        ));
        let numbered: String = block
            .lines()
            .enumerate()
            .map(|(i, l)| format!("{:>6}\u{2192}{l}\n", i + 1))
            .collect();
        out.push(case("pgp private key", "read arrow", numbered, &first));
        // Azure.
        let sig = url_encode_b64(&base64(&random_bytes(rng, 32)));
        out.push(case("azure sas", "blob url", format!("https://acct.blob.core.windows.net/backups/db.bak?sv=2022-11-02&ss=b&srt=o&sp=r&se=2026-01-01T00:00:00Z&st=2025-01-01T00:00:00Z&spr=https&sig={sig}"), &sig));
        out.push(case(
            "azure sas",
            "sig last",
            format!("az storage blob download --sas-token \"sv=2021-06-08&sp=rl&sr=c&sig={sig}\""),
            &sig,
        ));
        out.push(case("azure sas", "service bus", format!("SharedAccessSignature sr=ns.servicebus.windows.net&sig={sig}&se=1767225600&skn=RootManageSharedAccessKey"), &sig));
        let sb = base64(&random_bytes(rng, 32));
        out.push(case("azure key", "service bus", format!("Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey={sb}"), &sb));
        out.push(case("azure key", "event hub json", format!("{{\"connectionString\": \"Endpoint=sb://hub.servicebus.windows.net/;SharedAccessKeyName=send;SharedAccessKey={sb};EntityPath=events\"}}"), &sb));
        let st = base64(&random_bytes(rng, 64));
        out.push(case("azure key", "storage", format!("AZURE_STORAGE_CONNECTION_STRING=DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={st};EndpointSuffix=core.windows.net"), &st));
        // npm.
        let auth = base64(format!("ci:{}", plain_password(rng)).as_bytes());
        out.push(case(
            "npm legacy",
            "_auth",
            format!("registry=https://registry.npmjs.org/\n_auth={auth}\nalways-auth=true\n"),
            &auth,
        ));
        out.push(case(
            "npm legacy",
            "scoped _auth",
            format!("//npm.example.com/:_auth={auth}\n"),
            &auth,
        ));
        let token = uuid(rng);
        out.push(case(
            "npm legacy",
            "_authToken uuid",
            format!("//registry.npmjs.org/:_authToken={token}\n"),
            &token,
        ));
        let pw = base64(plain_password(rng).as_bytes());
        out.push(case(
            "npm legacy",
            "_password",
            format!("//npm.example.com/:username=ci\n//npm.example.com/:_password={pw}\n"),
            &pw,
        ));
        // Okta and Sentry.
        let okta = format!("00{}", mixed(rng, B64URL, 40));
        out.push(case(
            "okta",
            "header",
            format!("curl -H \"Authorization: SSWS {okta}\" https://dev-1.okta.com/api/v1/users"),
            &okta,
        ));
        out.push(case(
            "okta",
            "json header",
            format!("{{\"headers\":{{\"Authorization\":\"SSWS {okta}\"}}}}"),
            &okta,
        ));
        let key = rng.from(HEX, 32);
        out.push(case(
            "sentry dsn",
            "env",
            format!(
                "SENTRY_DSN=https://{key}@o{}.ingest.sentry.io/{}",
                rng.from(DIGITS, 6),
                rng.from(DIGITS, 7)
            ),
            &key,
        ));
        out.push(case(
            "sentry dsn",
            "init",
            format!(
                "Sentry.init({{ dsn: \"https://{key}@o{}.ingest.us.sentry.io/{}\" }});",
                rng.from(DIGITS, 6),
                rng.from(DIGITS, 7)
            ),
            &key,
        ));
        // Random values beside secret words.
        let n = 24 + rng.below(16);
        let r = mixed(rng, ALNUM, n);
        let r = r.as_str();
        out.extend([
            case(
                "entropy beside word",
                "secret colon",
                format!("Client secret: {r}"),
                r,
            ),
            case(
                "entropy beside word",
                "token arrow",
                format!("token -> {r}"),
                r,
            ),
            case(
                "entropy beside word",
                "api key prose",
                format!("here's the API key {r} for staging"),
                r,
            ),
            case(
                "entropy beside word",
                "new token",
                format!("Your new personal token is {r}. Store it safely."),
                r,
            ),
        ]);
        // Dotted bot tokens under Discord names.
        let t = dotted_bot_token(rng);
        let t = t.as_str();
        out.extend([
            case("dotted bot token", "env", format!("DISCORD_TOKEN={t}\n"), t),
            case(
                "dotted bot token",
                "code",
                format!("client.login(\"{t}\");"),
                t,
            ),
            case(
                "dotted bot token",
                "yaml",
                format!("discord:\n  bot_token: {t}\n"),
                t,
            ),
            case("dotted bot token", "plain", format!("bot token {t}"), t),
        ]);
    }
    // Values that start with each symbol.
    for lead in LEADS {
        for _ in 0..2 {
            let v = format!("{lead}{}", mixed(rng, B64, 31));
            let v = v.as_str();
            out.extend([
                case("leading symbol", "env", format!("API_KEY={v}\n"), v),
                case(
                    "leading symbol",
                    "yaml",
                    format!("auth:\n  client_secret: {v}\n"),
                    v,
                ),
                case(
                    "leading symbol",
                    "json",
                    format!("{{\"password\": \"{v}\"}}"),
                    v,
                ),
                case(
                    "leading symbol",
                    "flag",
                    format!("deploy --token {v} --yes"),
                    v,
                ),
            ]);
        }
    }
    out
}

/// Other templates of the same families, written before the rules and measured apart.
pub(crate) fn held_out(rng: &mut Rng) -> Vec<Case> {
    let mut out = Vec::new();
    for _ in 0..3 {
        let v = plain_password(rng);
        let v = v.as_str();
        out.extend([
            case(
                "netrc",
                "default",
                format!("default login anonymous password {v}"),
                v,
            ),
            case(
                "netrc",
                "tabs",
                format!("machine ftp.example.org\tlogin\tuploader\tpassword\t{v}"),
                v,
            ),
            case(
                "pgpass",
                "ip",
                format!("10.1.2.3:6432:reports:analyst:{v}"),
                v,
            ),
            case(
                "xml password",
                "secret tag",
                format!("<connection>\n  <host>db</host>\n  <secret>{v}</secret>\n</connection>"),
                v,
            ),
            case(
                "xml password",
                "passphrase",
                format!("<keystore><passphrase>{v}</passphrase></keystore>"),
                v,
            ),
            case(
                "docker login",
                "--password=",
                format!("docker login --password={v} -u bot quay.io"),
                v,
            ),
            case(
                "htpasswd",
                "-Bb",
                format!("htpasswd -Bb ./auth/htpasswd registry {v}"),
                v,
            ),
            case(
                "redis-cli",
                "-a last",
                format!("redis-cli -h 10.0.0.9 -a {v}"),
                v,
            ),
            case(
                "mysql",
                "quoted",
                format!("mysql -h db -u admin -p\"{v}\" app"),
                v,
            ),
            case(
                "sshpass",
                "env",
                format!("SSHPASS='{v}' sshpass -e ssh deploy@host"),
                v,
            ),
            case("prose", "password:", format!("ok, new password: {v}"), v),
            case(
                "prose",
                "pw was",
                format!("The old admin password was {v} (rotated now)"),
                v,
            ),
            case(
                "connection string",
                "pwd",
                format!("Driver={{ODBC Driver 18}};Server=tcp:sql.example.net;Uid=app;Pwd={v};"),
                v,
            ),
        ]);
        let u = url_password(rng);
        let u = u.as_str();
        out.extend([
            case(
                "connection url",
                "mysql",
                format!("mysql://root:{u}@127.0.0.1:3306/shop"),
                u,
            ),
            case(
                "connection url",
                "git",
                format!("git clone https://oauth2:{u}@gitlab.example.com/team/repo.git"),
                u,
            ),
        ]);
        let sig = url_encode_b64(&base64(&random_bytes(rng, 32)));
        out.push(case("azure sas", "queue", format!("https://acct.queue.core.windows.net/jobs?sv=2020-08-04&sig={sig}&se=2030-01-01&sp=raup"), &sig));
        let st = base64(&random_bytes(rng, 64));
        out.push(case(
            "azure key",
            "appsettings json",
            format!(
                "\"Storage\": \"DefaultEndpointsProtocol=https;AccountName=logs;AccountKey={st}\""
            ),
            &st,
        ));
        let auth = base64(format!("bot:{}", plain_password(rng)).as_bytes());
        out.push(case(
            "npm legacy",
            "_auth quoted",
            format!("_auth = \"{auth}\""),
            &auth,
        ));
        let okta = format!("00{}", mixed(rng, B64URL, 40));
        out.push(case(
            "okta",
            "python",
            format!("headers = {{'Authorization': 'SSWS {okta}'}}"),
            &okta,
        ));
        let key = rng.from(HEX, 32);
        out.push(case(
            "sentry dsn",
            "yaml",
            format!("sentry:\n  dsn: https://{key}@sentry.example.com/12\n"),
            &key,
        ));
        let (block, first) = pgp_block(rng);
        out.push(case(
            "pgp private key",
            "json escaped",
            format!("{{\"key\":\"{}\"}}", block.replace('\n', "\\n")),
            &first,
        ));
        let r = mixed(rng, ALNUM, 32);
        out.push(case(
            "entropy beside word",
            "secret is",
            format!("the webhook secret is {r}"),
            &r,
        ));
        out.push(case(
            "entropy beside word",
            "key label",
            format!("Access key: {r}"),
            &r,
        ));
        let t = dotted_bot_token(rng);
        out.push(case(
            "dotted bot token",
            "python",
            format!("bot.run('{t}')"),
            &t,
        ));
        let d = format!("django-insecure-{}", rng.from(DJANGO, 50));
        out.push(case(
            "django key",
            "docker -e",
            format!("docker run -e SECRET_KEY={d} web"),
            &d,
        ));
        for lead in LEADS {
            let v = format!("{lead}{}", mixed(rng, B64, 39));
            out.push(case(
                "leading symbol",
                "toml",
                format!("secret_key = \"{v}\""),
                &v,
            ));
            out.push(case(
                "leading symbol",
                "export",
                format!("export ACCESS_TOKEN={v}"),
                &v,
            ));
        }
    }
    for (family, make) in more_token_families() {
        let t = make(rng);
        out.push(case(
            family,
            "held-out prose",
            format!("new key for prod: {t} (expires in 90 days)"),
            &t,
        ));
    }
    out
}
