//! The planted secrets: provider-token families, and every place a transcript can hold a
//! token or a secret value (plain text, JSON of every spacing, Read-tool lines, diffs, env
//! files, shell commands).

use serde_json::{Value, json};

/// A deterministic generator (splitmix64).
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next() % (n.max(1) as u64)) as usize
    }

    pub(crate) fn from(&mut self, alphabet: &str, n: usize) -> String {
        let chars: Vec<char> = alphabet.chars().collect();
        (0..n)
            .map(|_| chars.get(self.below(chars.len())).copied().unwrap_or('x'))
            .collect()
    }

    pub(crate) fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items
            .get(self.below(items.len()))
            .copied()
            .unwrap_or_default()
    }
}

pub(crate) const ALNUM: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
pub(crate) const B64URL: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
pub(crate) const B64: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
pub(crate) const HEX: &str = "0123456789abcdef";
pub(crate) const UPPER_DIGIT: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
pub(crate) const DIGITS: &str = "0123456789";
pub(crate) const BECH32: &str = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L";

/// `from` until the text has a digit, an upper- and a lower-case letter (as real keys almost
/// always do).
pub(crate) fn mixed(rng: &mut Rng, alphabet: &str, n: usize) -> String {
    loop {
        let s = rng.from(alphabet, n);
        let has = |f: fn(&char) -> bool| s.chars().any(|c| f(&c));
        if has(char::is_ascii_digit)
            && has(char::is_ascii_uppercase)
            && has(char::is_ascii_lowercase)
        {
            return s;
        }
    }
}

pub(crate) fn base64(bytes: &[u8]) -> String {
    let table = B64.as_bytes();
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk.first().copied().unwrap_or(0),
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(table[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// A provider token family and how to make one.
pub(crate) type Maker = fn(&mut Rng) -> String;

/// The provider families of gitleaks' rule set (and a few newer ones), each with a generator
/// of realistic fakes written for this benchmark.
pub(crate) fn token_families() -> Vec<(&'static str, Maker)> {
    vec![
        ("anthropic", |r| {
            format!("sk-ant-api03-{}AA", mixed(r, B64URL, 93))
        }),
        ("openai", |r| format!("sk-proj-{}", mixed(r, B64URL, 120))),
        ("openai-legacy", |r| format!("sk-{}", mixed(r, ALNUM, 48))),
        ("github-pat", |r| format!("ghp_{}", mixed(r, ALNUM, 36))),
        ("github-fine-grained", |r| {
            format!("github_pat_{}_{}", mixed(r, ALNUM, 22), mixed(r, ALNUM, 59))
        }),
        ("github-oauth-app", |r| {
            format!(
                "{}_{}",
                r.pick(&["gho", "ghu", "ghs", "ghr"]),
                mixed(r, ALNUM, 36)
            )
        }),
        ("gitlab", |r| {
            format!(
                "{}-{}",
                r.pick(&["glpat", "glrt", "glptt", "gldt"]),
                mixed(r, B64URL, 20)
            )
        }),
        ("slack-bot", |r| {
            format!(
                "xoxb-{}-{}-{}",
                r.from(DIGITS, 12),
                r.from(DIGITS, 13),
                mixed(r, ALNUM, 24)
            )
        }),
        ("slack-app", |r| {
            format!(
                "xapp-1-A{}-{}-{}",
                r.from(UPPER_DIGIT, 10),
                r.from(DIGITS, 13),
                r.from(HEX, 64)
            )
        }),
        ("slack-webhook", |r| {
            format!(
                "https://hooks.slack.com/services/T{}/B{}/{}",
                r.from(UPPER_DIGIT, 8),
                r.from(UPPER_DIGIT, 8),
                mixed(r, ALNUM, 24)
            )
        }),
        ("stripe", |r| {
            format!(
                "{}_{}",
                r.pick(&["sk_live", "rk_live", "sk_test"]),
                mixed(r, ALNUM, 24)
            )
        }),
        ("google-api", |r| format!("AIza{}", mixed(r, B64URL, 35))),
        ("aws-access-key", |r| {
            format!("{}{}", r.pick(&["AKIA", "ASIA"]), r.from(UPPER_DIGIT, 16))
        }),
        ("npm", |r| format!("npm_{}", mixed(r, ALNUM, 36))),
        ("pypi", |r| {
            format!("pypi-AgEIcHlwaS5vcmc{}", mixed(r, B64URL, 70))
        }),
        ("huggingface", |r| {
            format!(
                "hf_{}",
                mixed(r, ALNUM, 34).replace(|c: char| c.is_ascii_digit(), "Q")
            )
        }),
        ("jwt", |r| {
            format!(
                "eyJhbGciOiJIUzI1NiJ9.eyJ{}.{}",
                mixed(r, B64URL, 40),
                mixed(r, B64URL, 43)
            )
        }),
        ("sendgrid", |r| {
            format!("SG.{}.{}", mixed(r, B64URL, 22), mixed(r, B64URL, 43))
        }),
        ("twilio", |r| format!("SK{}", r.from(HEX, 32))),
        ("shopify", |r| format!("shpat_{}", r.from(HEX, 32))),
        ("digitalocean", |r| format!("dop_v1_{}", r.from(HEX, 64))),
        ("databricks", |r| format!("dapi{}", r.from(HEX, 32))),
        ("vault", |r| format!("hvs.{}", mixed(r, ALNUM, 90))),
        ("age", |r| format!("AGE-SECRET-KEY-1{}", r.from(BECH32, 58))),
        ("telegram", |r| {
            format!("{}:AA{}", r.from(DIGITS, 10), mixed(r, B64URL, 33))
        }),
        ("planetscale", |r| {
            format!("pscale_tkn_{}", mixed(r, ALNUM, 43))
        }),
        ("doppler", |r| format!("dp.pt.{}", mixed(r, ALNUM, 43))),
        ("linear", |r| format!("lin_api_{}", mixed(r, ALNUM, 40))),
        ("grafana", |r| {
            format!("glsa_{}_{}", mixed(r, ALNUM, 32), r.from(HEX, 8))
        }),
        ("sentry", |r| format!("sntrys_eyJ{}", mixed(r, B64, 80))),
        ("azure-ad-secret", |r| {
            format!("{}8Q~{}", mixed(r, ALNUM, 3), mixed(r, ALNUM, 34))
        }),
        ("mailchimp", |r| {
            format!("{}-us{}", r.from(HEX, 32), 1 + r.below(20))
        }),
        ("postman", |r| {
            format!("PMAK-{}-{}", r.from(HEX, 24), r.from(HEX, 34))
        }),
        ("pulumi", |r| format!("pul-{}", r.from(HEX, 40))),
        ("dockerhub", |r| {
            format!("dckr_pat_{}", mixed(r, B64URL, 27))
        }),
        ("newrelic", |r| format!("NRAK-{}", r.from(UPPER_DIGIT, 27))),
        ("groq", |r| format!("gsk_{}", mixed(r, ALNUM, 52))),
        ("discord-webhook", |r| {
            format!(
                "https://discord.com/api/webhooks/{}/{}",
                r.from(DIGITS, 18),
                mixed(r, B64URL, 68)
            )
        }),
        ("bearer-opaque", |r| mixed(r, ALNUM, 40)),
        ("aws-secret-key", |r| mixed(r, B64, 40)),
    ]
}

/// One planted secret: the text (or JSON value) it sits in.
pub(crate) struct Case {
    pub(crate) family: &'static str,
    pub(crate) place: &'static str,
    pub(crate) text: String,
    pub(crate) json: Option<Value>,
    pub(crate) secret: String,
}

pub(crate) fn case(family: &'static str, place: &'static str, text: String, secret: &str) -> Case {
    Case {
        family,
        place,
        text,
        json: None,
        secret: secret.to_owned(),
    }
}

pub(crate) const ENV_NAMES: [&str; 14] = [
    "DB_PASSWORD",
    "API_KEY",
    "SECRET_KEY",
    "AUTH_TOKEN",
    "CLIENT_SECRET",
    "PGPASSWORD",
    "MYSQL_ROOT_PASSWORD",
    "STRIPE_WEBHOOK_SECRET",
    "ACCESS_TOKEN",
    "REDIS_PASS",
    "SMTP_PASSWD",
    "JWT_SECRET",
    "ENCRYPTION_KEY",
    "PASSPHRASE",
];
pub(crate) const CODE_NAMES: [&str; 10] = [
    "password",
    "apiKey",
    "api_key",
    "client_secret",
    "accessToken",
    "db_password",
    "authToken",
    "secret",
    "private_key",
    "x-api-key",
];

/// Every place a provider token can sit in a transcript.
pub(crate) fn token_places(family: &'static str, t: &str, rng: &mut Rng) -> Vec<Case> {
    let name = rng.pick(&ENV_NAMES);
    let mut out = vec![
        case(
            family,
            "user text",
            format!("here is the key {t} - please deploy with it"),
            t,
        ),
        case(
            family,
            "tool output",
            format!("$ cat creds\n{t}\ndone\n"),
            t,
        ),
        case(
            family,
            "env file",
            format!("# production\n{name}={t}\nPORT=8080\n"),
            t,
        ),
        case(
            family,
            "read arrow",
            format!(
                "     1\u{2192}# settings\n     2\u{2192}{name}={t}\n     3\u{2192}DEBUG=false\n"
            ),
            t,
        ),
        case(
            family,
            "read arrow code",
            format!("    12\u{2192}const client = new Client(\"{t}\");\n"),
            t,
        ),
        case(
            family,
            "diff",
            format!("@@ -1,3 +1,3 @@\n-{name}=old\n+{name}={t}\n DEBUG=false\n"),
            t,
        ),
        case(
            family,
            "shell",
            format!("curl -s -H \"X-Custom: {t}\" https://api.example.com/v1/me"),
            t,
        ),
        case(
            family,
            "json compact",
            format!("{{\"command\":\"deploy --with {t}\",\"timeout\":60}}"),
            t,
        ),
        case(
            family,
            "json spaced",
            format!("{{\"header\": \"{t}\", \"retries\": 3}}"),
            t,
        ),
        case(
            family,
            "json pretty",
            format!("{{\n  \"config\": {{\n    \"credential\": \"{t}\"\n  }}\n}}"),
            t,
        ),
        case(
            family,
            "yaml",
            format!("services:\n  api:\n    environment:\n      - {name}={t}\n"),
            t,
        ),
    ];
    out.push(Case {
        family,
        place: "tool input value",
        text: String::new(),
        json: Some(json!({"command": ["deploy", "--with", t], "cwd": "/srv/app"})),
        secret: t.to_owned(),
    });
    out
}

/// Where the AWS secret key and an opaque bearer token stand: next to what names them.
pub(crate) fn contextual_token_places(family: &'static str, t: &str, rng: &mut Rng) -> Vec<Case> {
    match family {
        "aws-secret-key" => {
            let id = format!("AKIA{}", rng.from(UPPER_DIGIT, 16));
            vec![
                case(
                    family,
                    "credentials csv",
                    format!(
                        "User name,Password,Access key ID,Secret access key\ndeploy,,{id},{t}\n"
                    ),
                    t,
                ),
                case(
                    family,
                    "credentials csv 2",
                    format!("Access key ID,Secret access key\n{id},{t}\n"),
                    t,
                ),
                case(
                    family,
                    "aws config",
                    format!("[default]\naws_access_key_id = {id}\naws_secret_access_key = {t}\n"),
                    t,
                ),
                case(
                    family,
                    "env file",
                    format!("AWS_SECRET_ACCESS_KEY={t}\n"),
                    t,
                ),
                case(
                    family,
                    "read arrow",
                    format!("     3\u{2192}aws_secret_access_key={t}\n"),
                    t,
                ),
                case(
                    family,
                    "json compact",
                    format!("{{\"AccessKeyId\":\"{id}\",\"SecretAccessKey\":\"{t}\"}}"),
                    t,
                ),
                case(
                    family,
                    "tool output",
                    format!("ACCESS_KEY {id}\nSECRET {t}\n"),
                    t,
                ),
            ]
        }
        _ => vec![
            case(family, "header", format!("Authorization: Bearer {t}"), t),
            case(
                family,
                "curl",
                format!("curl -H \"Authorization: Bearer {t}\" https://api.example.com"),
                t,
            ),
            case(
                family,
                "json compact",
                format!("{{\"headers\":{{\"Authorization\":\"Bearer {t}\"}}}}"),
                t,
            ),
            case(
                family,
                "python",
                format!("headers = {{\"Authorization\": f\"Bearer {t}\"}}"),
                t,
            ),
            case(
                family,
                "token scheme",
                format!("curl -H 'Authorization: Token {t}' https://api.example.com"),
                t,
            ),
        ],
    }
}

/// A value set under a secret-named key, in every syntax.
pub(crate) fn value_places(
    family: &'static str,
    v: &str,
    quoted_only: bool,
    rng: &mut Rng,
) -> Vec<Case> {
    let env = rng.pick(&ENV_NAMES);
    let code = rng.pick(&CODE_NAMES);
    let mut out = vec![
        case(
            family,
            "json compact",
            format!("{{\"user\":\"admin\",\"{code}\":\"{v}\"}}"),
            v,
        ),
        case(
            family,
            "json spaced",
            format!("{{\"user\": \"admin\", \"{code}\": \"{v}\"}}"),
            v,
        ),
        case(
            family,
            "json pretty",
            format!("{{\n  \"user\": \"admin\",\n  \"{code}\": \"{v}\"\n}}"),
            v,
        ),
        case(
            family,
            "json escaped",
            format!("{{\\\"{code}\\\":\\\"{v}\\\"}}"),
            v,
        ),
        case(family, "env quoted", format!("{env}=\"{v}\"\n"), v),
        case(
            family,
            "read arrow quoted",
            format!("     4\u{2192}{env}='{v}'\n"),
            v,
        ),
        case(
            family,
            "yaml quoted",
            format!("db:\n  {code}: \"{v}\"\n"),
            v,
        ),
        case(family, "code", format!("    {code} = \"{v}\"\n"), v),
        case(
            family,
            "k8s env",
            format!("env:\n  - name: {env}\n    value: \"{v}\"\n"),
            v,
        ),
    ];
    out.push(Case {
        family,
        place: "tool input value",
        text: String::new(),
        json: Some(json!({"host": "db.internal", code: v})),
        secret: v.to_owned(),
    });
    if !quoted_only {
        out.extend([
            case(family, "env", format!("{env}={v}\n"), v),
            case(family, "export", format!("export {env}={v}"), v),
            case(
                family,
                "read arrow",
                format!("     4\u{2192}{env}={v}\n"),
                v,
            ),
            case(family, "diff", format!("-{env}=changeme\n+{env}={v}\n"), v),
            case(
                family,
                "apply_patch",
                format!("*** Begin Patch\n*** Update File: .env\n@@\n+{env}={v}\n*** End Patch"),
                v,
            ),
            case(family, "yaml", format!("db:\n  {code}: {v}\n"), v),
            case(
                family,
                "query",
                format!("GET https://api.example.com/v2/items?{code}={v}&page=2"),
                v,
            ),
            case(
                family,
                "query middle",
                format!("https://example.com/cb?state=xyz&token={v}&x=1"),
                v,
            ),
            case(
                family,
                "flag eq",
                format!("deploy --password={v} --verbose"),
                v,
            ),
            case(family, "flag space", format!("vault login --token {v}"), v),
            case(
                family,
                "k8s env bare",
                format!("  - name: {env}\n    value: {v}\n"),
                v,
            ),
            case(
                family,
                "docker -e",
                format!("docker run --rm -e \"{env}={v}\" postgres:16"),
                v,
            ),
        ]);
    }
    out
}

/// A password typed on a command line.
pub(crate) fn command_places(family: &'static str, v: &str) -> Vec<Case> {
    vec![
        case(
            family,
            "mysql",
            format!("mysql -u root -p{v} -h 127.0.0.1 app"),
            v,
        ),
        case(
            family,
            "mysqldump",
            format!("mysqldump -uroot -p{v} app > dump.sql"),
            v,
        ),
        case(
            family,
            "mysql quoted",
            format!("mysql -h db -u admin -p'{v}' -e 'select 1'"),
            v,
        ),
        case(
            family,
            "curl -u",
            format!("curl -u admin:{v} https://ci.example.com/api/json"),
            v,
        ),
        case(
            family,
            "curl --user",
            format!("curl -s --user \"deploy:{v}\" -X POST https://x.example.com"),
            v,
        ),
        case(
            family,
            "sshpass",
            format!("sshpass -p {v} ssh deploy@10.0.0.5 uptime"),
            v,
        ),
        case(
            family,
            "sshpass quoted",
            format!("sshpass -p '{v}' scp a.txt host:/tmp"),
            v,
        ),
        case(
            family,
            "basic header",
            format!(
                "Authorization: Basic {}",
                base64(format!("admin:{v}").as_bytes())
            ),
            &base64(format!("admin:{v}").as_bytes()),
        ),
        case(
            family,
            "url password",
            format!("DATABASE_URL=postgres://app:{v}@db.internal:5432/app"),
            v,
        ),
        case(
            family,
            "url password plain",
            format!("connect to mongodb+srv://root:{v}@cluster0.example.net/test"),
            v,
        ),
        case(
            family,
            "url password no user",
            format!("REDIS_URL=redis://:{v}@redis:6379/0"),
            v,
        ),
    ]
}

pub(crate) const WORDS: [&str; 24] = [
    "sunflower",
    "harbor",
    "velvet",
    "marble",
    "orchid",
    "lantern",
    "pepper",
    "meadow",
    "cobalt",
    "thunder",
    "willow",
    "garnet",
    "falcon",
    "cinder",
    "juniper",
    "saffron",
    "glacier",
    "ember",
    "copper",
    "hollow",
    "quartz",
    "raven",
    "tundra",
    "bramble",
];

pub(crate) fn secret_cases(rng: &mut Rng) -> Vec<Case> {
    let mut cases = Vec::new();
    for (family, make) in token_families() {
        for _ in 0..2 {
            let t = make(rng);
            if matches!(family, "aws-secret-key" | "bearer-opaque") {
                cases.extend(contextual_token_places(family, &t, rng));
            } else {
                cases.extend(token_places(family, &t, rng));
            }
        }
        // A token used as a JSON key.
        let t = make(rng);
        if !matches!(
            family,
            "aws-secret-key" | "bearer-opaque" | "slack-webhook" | "discord-webhook"
        ) {
            cases.push(case(
                "json-key",
                "json text",
                format!("{{\"{t}\":{{\"scopes\":[\"repo\"]}}}}"),
                &t,
            ));
            cases.push(Case {
                family: "json-key",
                place: "tool input key",
                text: String::new(),
                json: Some(json!({ t.clone(): true })),
                secret: t,
            });
        }
    }
    for _ in 0..3 {
        let len = 10 + rng.below(14);
        let v = mixed(rng, ALNUM, len);
        cases.extend(value_places("password-mixed", &v, false, rng));
        let v = format!(
            "{}{}{}",
            rng.pick(&WORDS),
            rng.pick(&WORDS),
            rng.pick(&WORDS)
        );
        cases.extend(value_places("password-lowercase", &v, false, rng));
        let w = |r: &mut Rng| {
            let w = r.pick(&WORDS);
            let mut c = w.chars();
            c.next()
                .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        };
        let v = format!("{}{}{}", rng.pick(&WORDS), w(rng), w(rng));
        cases.extend(value_places("password-camelcase", &v, false, rng));
        let v = format!(
            "{} {};{}!",
            rng.pick(&WORDS),
            rng.pick(&WORDS),
            rng.from(DIGITS, 3)
        );
        cases.extend(value_places("password-spaces-semicolon", &v, true, rng));
        let v = format!(
            "{}{}#{}",
            mixed(rng, ALNUM, 6),
            rng.pick(&["$", "%", "^"]),
            rng.from(DIGITS, 4)
        );
        cases.extend(value_places("password-symbols", &v, false, rng));
        let v = format!(
            "{}-{}-{}-{}",
            rng.pick(&WORDS),
            rng.pick(&WORDS),
            rng.pick(&WORDS),
            rng.pick(&WORDS)
        );
        cases.extend(value_places("passphrase-kebab-env", &v, true, rng));
        cases.push(case(
            "passphrase-kebab-env",
            "env",
            format!("DB_PASSWORD={v}\n"),
            &v,
        ));
        cases.push(case(
            "passphrase-kebab-env",
            "read arrow",
            format!("     9\u{2192}SECRET_KEY={v}\n"),
            &v,
        ));
        let v = format!("{}{}", mixed(rng, ALNUM, 8), rng.from(DIGITS, 2));
        cases.extend(command_places("command-password", &v));
    }
    // Private keys, whole and cut.
    for cut in [false, true] {
        let body: Vec<String> = (0..8).map(|_| rng.from(B64, 64)).collect();
        let mut block = format!("-----BEGIN OPENSSH PRIVATE KEY-----\n{}\n", body.join("\n"));
        if !cut {
            block.push_str("-----END OPENSSH PRIVATE KEY-----\n");
        }
        let secret = body.first().cloned().unwrap_or_default();
        cases.push(case(
            "private-key",
            "tool output",
            format!("$ cat ~/.ssh/id_ed25519\n{block}"),
            &secret,
        ));
        let numbered: String = block
            .lines()
            .enumerate()
            .map(|(i, l)| format!("{:>6}\u{2192}{l}\n", i + 1))
            .collect();
        cases.push(case("private-key", "read arrow", numbered, &secret));
        cases.push(case(
            "private-key",
            "json escaped",
            format!(
                "{{\"type\":\"service_account\",\"private_key\":\"{}\"}}",
                block.replace('\n', "\\n")
            ),
            &secret,
        ));
    }
    cases
}
