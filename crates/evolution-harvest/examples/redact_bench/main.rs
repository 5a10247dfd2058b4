//! Redaction quality and speed: recall on planted secrets of every shape and provider family,
//! in every place a transcript holds them; the false-positive rate on ordinary text that looks
//! like a secret; and throughput on a large mixed text, side by side with the former rules.
//!
//! Usage: `cargo run --release -p evolution-harvest --example redact_bench [-- --mb 16]
//! [--dump DIR] [--show-misses]` (or `cargo xtask bench redact`).
//!
//! Every corpus is generated deterministically from the code below (no file is read). A
//! planted secret counts as caught when its text no longer occurs in the redacted output; an
//! ordinary line counts as a false positive when redaction changes it at all. `--dump DIR`
//! writes every case as a file of its own (`DIR/secret/<family>-<n>.txt`,
//! `DIR/ordinary/<n>.txt`) so that another scanner can be measured on the same cases.
#![expect(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a bench prints its report and its usage"
)]

mod legacy;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use evolution_harvest::redact::Redactor;
use serde_json::{Value, json};

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("redact_bench: {e}");
            ExitCode::from(2)
        }
    }
}

struct Options {
    mb: f64,
    dump: Option<PathBuf>,
    show_misses: bool,
}

fn parse() -> Result<Options, String> {
    let mut options = Options {
        mb: 16.0,
        dump: None,
        show_misses: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--mb" => {
                let v = args.next().ok_or("--mb needs a number")?;
                options.mb = v
                    .parse()
                    .map_err(|_| format!("--mb needs a number, got {v:?}"))?;
                if !(options.mb > 0.0 && options.mb <= 1024.0) {
                    return Err("--mb must be in (0, 1024]".into());
                }
            }
            "--dump" => {
                options.dump = Some(PathBuf::from(args.next().ok_or("--dump needs a folder")?))
            }
            "--show-misses" => options.show_misses = true,
            other => {
                return Err(format!(
                    "unknown argument {other:?}\nusage: redact_bench [--mb SIZE] [--dump DIR] [--show-misses]"
                ));
            }
        }
    }
    Ok(options)
}

fn run() -> Result<(), String> {
    let options = parse()?;
    let mut rng = Rng(0x005E_C2E7_u64);
    let cases = secret_cases(&mut rng);
    let ordinary = ordinary_lines();
    if let Some(dir) = &options.dump {
        dump(dir, &cases, &ordinary)?;
    }

    // Recall, per family and overall.
    let mut per_family: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    let mut misses = Vec::new();
    for case in &cases {
        let out = match &case.json {
            Some(value) => {
                let mut value = value.clone();
                Redactor::default().redact_json(&mut value);
                value.to_string()
            }
            None => Redactor::default().redact(&case.text).into_owned(),
        };
        let caught = !out.contains(&case.secret);
        let entry = per_family.entry(case.family).or_insert((0, 0));
        entry.0 += usize::from(caught);
        entry.1 += 1;
        if !caught {
            misses.push((case.family, case.place, out));
        }
    }
    let mut report = String::new();
    let _ = writeln!(report, "recall per family (caught / planted):");
    let (mut caught, mut planted) = (0usize, 0usize);
    for (family, (c, n)) in &per_family {
        caught += c;
        planted += n;
        let _ = writeln!(
            report,
            "  {family:<22} {c:>4} / {n:<4} {:>6.1}%",
            100.0 * *c as f64 / *n as f64
        );
    }
    let _ = writeln!(
        report,
        "recall overall: {caught} / {planted} = {:.2}% ({} families)",
        100.0 * caught as f64 / planted as f64,
        per_family.len()
    );

    // False positives.
    let mut changed = Vec::new();
    for line in &ordinary {
        let out = Redactor::default().redact(line).into_owned();
        if out != *line {
            changed.push((line.clone(), out));
        }
    }
    let _ = writeln!(
        report,
        "false positives: {} / {} ordinary lines = {:.2}%",
        changed.len(),
        ordinary.len(),
        100.0 * changed.len() as f64 / ordinary.len() as f64
    );
    // The former rules on the same cases.
    let legacy_caught = cases
        .iter()
        .filter(|case| {
            let out = match &case.json {
                Some(value) => {
                    let mut value = value.clone();
                    legacy_json(&mut value);
                    value.to_string()
                }
                None => legacy::redact(&case.text),
            };
            !out.contains(&case.secret)
        })
        .count();
    let legacy_changed = ordinary
        .iter()
        .filter(|line| legacy::redact(line) != **line)
        .count();
    let _ = writeln!(
        report,
        "former rules on the same cases: recall {legacy_caught} / {planted} = {:.2}%, \
         false positives {legacy_changed} / {} = {:.2}%",
        100.0 * legacy_caught as f64 / planted as f64,
        ordinary.len(),
        100.0 * legacy_changed as f64 / ordinary.len() as f64
    );
    print!("{report}");
    if options.show_misses {
        for (family, place, out) in &misses {
            println!("  missed {family} in {place}: {}", shorten(out));
        }
    }
    for (line, out) in &changed {
        println!("  changed: {}  ->  {}", shorten(line), shorten(out));
    }

    // Throughput on a large mixed text, cut into messages as a transcript is.
    let messages = mixed_text(&mut rng, (options.mb * 1e6) as usize);
    let bytes: usize = messages.iter().map(String::len).sum();
    let mb = bytes as f64 / 1e6;
    let started = Instant::now();
    let mut redactor = Redactor::default();
    let mut kept = 0usize;
    for m in &messages {
        kept += redactor.redact(m).len();
    }
    let new_s = started.elapsed().as_secs_f64();
    let started = Instant::now();
    let mut kept_legacy = 0usize;
    for m in &messages {
        kept_legacy += legacy::redact(m).len();
    }
    let old_s = started.elapsed().as_secs_f64();
    println!(
        "throughput on {mb:.1} MB of mixed transcript text in {} messages:\n  \
         current rules: {:.1} MB/s ({} redactions, {kept} bytes out)\n  \
         former rules:  {:.1} MB/s ({kept_legacy} bytes out)",
        messages.len(),
        mb / new_s,
        redactor.total(),
        mb / old_s
    );
    Ok(())
}

/// What the former `redact_json` did: every string redacted on its own, keys kept.
fn legacy_json(value: &mut Value) {
    match value {
        Value::String(s) => *s = legacy::redact(s),
        Value::Array(items) => items.iter_mut().for_each(legacy_json),
        Value::Object(map) => map.values_mut().for_each(legacy_json),
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

fn shorten(text: &str) -> String {
    let flat = text.replace('\n', "\\n");
    match flat.char_indices().nth(160) {
        Some((cut, _)) => format!("{}…", flat.get(..cut).unwrap_or_default()),
        None => flat,
    }
}

fn dump(dir: &std::path::Path, cases: &[Case], ordinary: &[String]) -> Result<(), String> {
    let secret_dir = dir.join("secret");
    let ordinary_dir = dir.join("ordinary");
    for d in [&secret_dir, &ordinary_dir] {
        std::fs::create_dir_all(d).map_err(|e| format!("cannot create {}: {e}", d.display()))?;
    }
    for (i, case) in cases.iter().enumerate() {
        let text = case
            .json
            .as_ref()
            .map_or_else(|| case.text.clone(), Value::to_string);
        let path = secret_dir.join(format!("{}-{i}.txt", case.family));
        std::fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    for (i, line) in ordinary.iter().enumerate() {
        let path = ordinary_dir.join(format!("{i}.txt"));
        std::fs::write(&path, line).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    println!(
        "wrote {} secret and {} ordinary cases under {}",
        cases.len(),
        ordinary.len(),
        dir.display()
    );
    Ok(())
}

/// A deterministic generator (splitmix64).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % (n.max(1) as u64)) as usize
    }

    fn from(&mut self, alphabet: &str, n: usize) -> String {
        let chars: Vec<char> = alphabet.chars().collect();
        (0..n)
            .map(|_| chars.get(self.below(chars.len())).copied().unwrap_or('x'))
            .collect()
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items
            .get(self.below(items.len()))
            .copied()
            .unwrap_or_default()
    }
}

const ALNUM: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const B64URL: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
const B64: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const HEX: &str = "0123456789abcdef";
const UPPER_DIGIT: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
const DIGITS: &str = "0123456789";
const BECH32: &str = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L";

/// `from` until the text has a digit, an upper- and a lower-case letter (as real keys almost
/// always do).
fn mixed(rng: &mut Rng, alphabet: &str, n: usize) -> String {
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

fn base64(bytes: &[u8]) -> String {
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
type Maker = fn(&mut Rng) -> String;

/// The provider families of gitleaks' rule set (and a few newer ones), each with a generator
/// of realistic fakes written for this benchmark.
fn token_families() -> Vec<(&'static str, Maker)> {
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
struct Case {
    family: &'static str,
    place: &'static str,
    text: String,
    json: Option<Value>,
    secret: String,
}

fn case(family: &'static str, place: &'static str, text: String, secret: &str) -> Case {
    Case {
        family,
        place,
        text,
        json: None,
        secret: secret.to_owned(),
    }
}

const ENV_NAMES: [&str; 14] = [
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
const CODE_NAMES: [&str; 10] = [
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
fn token_places(family: &'static str, t: &str, rng: &mut Rng) -> Vec<Case> {
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
fn contextual_token_places(family: &'static str, t: &str, rng: &mut Rng) -> Vec<Case> {
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
fn value_places(family: &'static str, v: &str, quoted_only: bool, rng: &mut Rng) -> Vec<Case> {
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
fn command_places(family: &'static str, v: &str) -> Vec<Case> {
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

const WORDS: [&str; 24] = [
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

fn secret_cases(rng: &mut Rng) -> Vec<Case> {
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

/// Ordinary lines that look like secrets and must come out unchanged.
fn ordinary_lines() -> Vec<String> {
    let lines = [
        // The look-alikes a transcript is full of.
        "token_count: 1234",
        "TOKEN_EXPIRY=3600",
        "PWD=/home/user/project",
        "secretName: tls-cert",
        "token_url: https://auth.example.com/oauth/token",
        "use Bearer authentication for every request",
        ".sk-three-bounce-animation-delay { animation-delay: -0.16s; }",
        "Password: Required",
        "secret_santa: Alice",
        "auth_token_ttl = 3600",
        // Configuration keys and settings.
        "max_tokens: 4096",
        "MAX_TOKENS=8192",
        "max_output_tokens = 2048",
        "token_budget: 200000",
        "tokenizer: cl100k_base",
        "token_type: Bearer",
        "token_endpoint: https://login.example.com/token",
        "TOKEN_URL=https://auth.example.com/token",
        "password_min_length: 12",
        "PASSWORD_MIN_LENGTH=12",
        "password_policy: strict",
        "passwordless: true",
        "show_password: false",
        "secret_ref: db-credentials",
        "SECRET_NAME=prod-db-credentials",
        "api_key_header: X-API-Key",
        "api_key_env: OPENAI_API_KEY",
        "API_KEY_FILE=/run/secrets/api_key",
        "token_file: /var/run/secrets/kubernetes.io/serviceaccount/token",
        "credentials_path: ~/.config/gcloud/application_default_credentials.json",
        "SESSION_TIMEOUT=1800",
        "JWT_EXPIRES_IN=7d",
        "jwt_secret_rotation_days: 30",
        "PASSWORD_HASH_ROUNDS=12",
        "secret_version: 3",
        "token_limit = 100000",
        "cache_key = \"user:42:profile\"",
        "primary_key: id",
        "sort_key: created_at",
        "thread_key: general",
        "KEYBOARD_LAYOUT=us",
        "hotkey: ctrl+shift+p",
        // Code identifiers and code that reads secrets without holding one.
        "const token = await getToken();",
        "password = request.form['password']",
        "let api_key = std::env::var(\"API_KEY\")?;",
        "API_KEY=$OPENAI_API_KEY",
        "export GITHUB_TOKEN=${{ secrets.GITHUB_TOKEN }}",
        "token: ${{ secrets.NPM_TOKEN }}",
        "password: <your-password>",
        "secret = os.environ[\"SECRET_KEY\"]",
        "self.token = token",
        "this.password = password;",
        "params: { _csrf_token: csrfToken }",
        "auth_token = response.json()[\"access_token\"]",
        "if password == confirm_password:",
        "fn verify_password(password: &str) -> bool {",
        "def get_secret(name: str) -> str:",
        "token = next_token",
        "accessToken: string;",
        "password: String,",
        "secret: Option<String>,",
        "const [password, setPassword] = useState(\"\");",
        "tokens = tokenizer.encode(text)",
        "private_key_path = Path(\"~/.ssh/id_ed25519\")",
        "client_secret: process.env.CLIENT_SECRET,",
        "password: null",
        "token: undefined",
        "PASSWORD=********",
        "api_key: \"<redacted>\"",
        "auth: { username: user, password: pass }",
        // Prose about tokens, passwords and secrets.
        "The token expires after one hour; request a new one with the refresh flow.",
        "Rotate the database password every 90 days and store it in the vault.",
        "Never commit secrets: use a .env file that git ignores.",
        "The API key is passed in the X-API-Key header.",
        "Set the password: the installer will prompt for it.",
        "Bearer tokens are sent in the Authorization header.",
        "Use Basic authentication only over TLS.",
        "The secret: nobody reads the docs.",
        "password reset emails are sent from no-reply@example.com",
        "We counted tokens: 1534 in, 212 out.",
        "Tokens per second: 45.2",
        "Authorization: see the section below",
        // CSS class names and front-end code.
        ".sk-fading-circle .sk-circle2 { transform: rotate(30deg); }",
        "<div class=\"sk-chase-dot\"></div>",
        ".sk-cube-grid .sk-cube1 { animation-delay: 0.2s; }",
        "class=\"btn token-input password-field\"",
        "<input type=\"password\" name=\"password\" autocomplete=\"current-password\">",
        "<label for=\"api-key\">API key</label>",
        "--token-color: #ff8800;",
        ".secret-banner { display: none; }",
        // Kubernetes manifests and CI files.
        "secretName: tls-cert",
        "secretKeyRef:\n  name: db-credentials\n  key: password",
        "kind: Secret",
        "type: kubernetes.io/tls",
        "imagePullSecrets:\n  - name: regcred",
        "serviceAccountToken: true",
        "automountServiceAccountToken: false",
        "- name: DB_PASSWORD\n  valueFrom:\n    secretKeyRef:\n      name: db\n      key: password",
        "secrets: inherit",
        "permissions:\n  id-token: write",
        "token_reviewer_jwt_file: /var/run/secrets/token",
        // Shell, git and tools.
        "mkdir -p /tmp/build && cd /tmp/build",
        "ssh -p 2222 deploy@host",
        "docker run -u 1000:1000 -p 8080:80 nginx",
        "git push -u origin main",
        "tar -xzf release.tar.gz -C /opt",
        "gh auth login --with-token < token.txt",
        "docker login --password-stdin -u ci registry.example.com",
        "kubectl create secret generic db --from-file=./password.txt",
        "mysql -u root -p",
        "curl -u \"$USER:$TOKEN\" https://api.example.com",
        "sshpass -f ~/.pw ssh host",
        "ls -la ~/.aws/credentials",
        "commit 3f9a2b7c8d1e4f5a6b7c8d9e0f1a2b3c4d5e6f7a",
        "sha1: da39a3ee5e6b4b0d3255bfef95601890afd80709",
        "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
        "uuid: 123e4567-e89b-12d3-a456-426614174000",
        "version = \"1.2.3\"",
        "https://example.com/search?q=password+reset&page=2",
        "https://example.com/oauth/authorize?response_type=token&client_id=app",
        "postgres://localhost:5432/app",
        "http://user@example.com/path",
        "see https://docs.example.com/a:b@c",
        "git@github.com:owner/repo.git",
        "Skipping task-runner-keyboard-shortcuts-dialog",
        "sk-learn is a common misspelling of scikit-learn",
        "ghp_ prefixes mark GitHub personal access tokens",
        "xoxb- tokens belong to Slack bots",
        "AKIA keys are long-term AWS credentials",
    ];
    lines.iter().map(|s| (*s).to_owned()).collect()
}

/// About `bytes` of transcript text cut into messages: code, prose, JSON tool inputs, Read
/// output with line numbers, diffs, a few secrets and many look-alikes.
fn mixed_text(rng: &mut Rng, bytes: usize) -> Vec<String> {
    let ordinary = ordinary_lines();
    let families = token_families();
    let code = [
        "fn parse(input: &str) -> Result<Config, Error> {",
        "    let value = map.get(\"key\").cloned().unwrap_or_default();",
        "    for (i, line) in text.lines().enumerate() {",
        "        if line.starts_with('#') { continue; }",
        "import { useState } from 'react';",
        "def handler(event, context):",
        "    return {\"statusCode\": 200, \"body\": json.dumps(result)}",
        "SELECT id, name FROM users WHERE created_at > now() - interval '1 day';",
        "The build failed because the linker could not find libssl; installing it fixed the error.",
        "Running 42 tests ... ok. test result: ok. 42 passed; 0 failed.",
    ];
    let mut messages = Vec::new();
    let mut total = 0usize;
    while total < bytes {
        let mut m = String::new();
        let lines = 20 + rng.below(80);
        let read = rng.below(4) == 0;
        for i in 0..lines {
            let line = match rng.below(40) {
                0 => ordinary
                    .get(rng.below(ordinary.len()))
                    .cloned()
                    .unwrap_or_default(),
                1 if rng.below(10) == 0 => {
                    let (_, make) = families
                        .get(rng.below(families.len()))
                        .copied()
                        .unwrap_or(("", |_| String::new()));
                    format!("API_TOKEN={}", make(rng))
                }
                2 => format!(
                    "{{\"command\":\"cargo test -p mod{}\",\"timeout\":120000}}",
                    rng.below(30)
                ),
                3 => format!(
                    "+    let x{} = compute(&input, {});",
                    rng.below(99),
                    rng.below(999)
                ),
                _ => rng.pick(&code).to_owned(),
            };
            if read {
                let _ = writeln!(m, "{:>6}\u{2192}{line}", i + 1);
            } else {
                m.push_str(&line);
                m.push('\n');
            }
        }
        total += m.len();
        messages.push(m);
    }
    messages
}
