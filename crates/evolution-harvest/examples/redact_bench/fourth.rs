//! A fourth held-out set, written from providers' and tools' public descriptions of their
//! credential formats before any of it was run through the redactor: provider token prefixes
//! no earlier set holds (Tailscale, HCP Terraform, Dynatrace, SonarQube, Buildkite, Supabase,
//! Notion, Figma, RubyGems, crates.io, Atlassian, model APIs, Google OAuth, Square,
//! Salesforce, Firebase, Asana, ngrok and more), configuration files of other tools
//! (`.my.cnf`, `wpa_supplicant.conf`, `tomcat-users.xml`, Postfix `sasl_passwd`, HAProxy,
//! `chap-secrets`, mail clients, `fstab`, WireGuard, OpenVPN and PuTTY keys, Kubernetes
//! Secrets, systemd units), command lines that take a secret in another way (`-passout
//! pass:`, `--from-literal`, `--set`, `-var`, `user/password@db`, `-P`, `/pass:`,
//! `ConvertTo-SecureString`, `-D` and `-P` properties, `expect` scripts, positional keys),
//! code that passes one positionally or by keyword, cookies, headers and other languages'
//! prose. Every value is generated here. It is measured as it was first written; later
//! changes to the rules never edit it.

use serde_json::json;

use crate::fourth_place::{read_lines, uuid};
use crate::secrets::{ALNUM, B64, B64URL, Case, DIGITS, HEX, Rng, UPPER_DIGIT, case, mixed};

const LOWER_ALNUM: &str = "abcdefghijklmnopqrstuvwxyz0123456789";

/// Provider tokens of formats no earlier set holds, with the name a configuration gives them.
type Family = (&'static str, &'static str, fn(&mut Rng) -> String);

fn families() -> Vec<Family> {
    vec![
        ("tailscale", "TS_AUTHKEY", |r| {
            format!(
                "tskey-auth-k{}CNTRL-{}",
                mixed(r, ALNUM, 10),
                mixed(r, ALNUM, 33)
            )
        }),
        ("hcp terraform", "TFE_TOKEN", |r| {
            format!("{}.atlasv1.{}", mixed(r, ALNUM, 14), mixed(r, ALNUM, 67))
        }),
        ("dynatrace", "DT_API_TOKEN", |r| {
            format!(
                "dt0c01.{}.{}",
                r.from(UPPER_DIGIT, 24),
                r.from(UPPER_DIGIT, 64)
            )
        }),
        ("sonarqube", "SONAR_TOKEN", |r| {
            format!("squ_{}", r.from(HEX, 40))
        }),
        ("buildkite", "BUILDKITE_API_TOKEN", |r| {
            format!("bkua_{}", r.from(HEX, 40))
        }),
        ("supabase", "SUPABASE_ACCESS_TOKEN", |r| {
            format!("sbp_{}", r.from(HEX, 40))
        }),
        ("notion", "NOTION_TOKEN", |r| {
            format!("ntn_{}", mixed(r, ALNUM, 46))
        }),
        ("figma", "FIGMA_TOKEN", |r| {
            format!("figd_{}", mixed(r, B64URL, 40))
        }),
        ("rubygems", "GEM_HOST_API_KEY", |r| {
            format!("rubygems_{}", r.from(HEX, 48))
        }),
        ("crates.io", "CARGO_REGISTRY_TOKEN", |r| {
            format!("cio{}", mixed(r, ALNUM, 32))
        }),
        ("atlassian", "JIRA_API_TOKEN", |r| {
            format!(
                "ATATT3xFfGF0{}={}",
                mixed(r, B64URL, 170),
                r.from("0123456789ABCDEF", 8)
            )
        }),
        ("replicate", "REPLICATE_API_TOKEN", |r| {
            format!("r8_{}", mixed(r, ALNUM, 37))
        }),
        ("perplexity", "PPLX_API_KEY", |r| {
            format!("pplx-{}", mixed(r, ALNUM, 48))
        }),
        ("openrouter", "OPENROUTER_API_KEY", |r| {
            format!("sk-or-v1-{}", r.from(HEX, 64))
        }),
        ("xai", "XAI_API_KEY", |r| {
            format!("xai-{}", mixed(r, ALNUM, 80))
        }),
        ("pinecone", "PINECONE_API_KEY", |r| {
            format!("pcsk_{}_{}", mixed(r, ALNUM, 5), mixed(r, ALNUM, 64))
        }),
        ("posthog personal", "POSTHOG_PERSONAL_API_KEY", |r| {
            format!("phx_{}", mixed(r, ALNUM, 47))
        }),
        ("netlify", "NETLIFY_AUTH_TOKEN", |r| {
            format!("nfp_{}", mixed(r, ALNUM, 40))
        }),
        ("fly.io", "FLY_API_TOKEN", |r| {
            format!("fm2_{}", mixed(r, B64, 240))
        }),
        ("gitlab other", "GITLAB_TOKEN", |r| {
            let prefix = r.pick(&["glsoat", "glcbt", "glft", "glimt", "glagent", "gloas"]);
            format!("{prefix}-{}", mixed(r, B64URL, 20))
        }),
        ("stripe webhook", "STRIPE_WEBHOOK_SECRET", |r| {
            format!("whsec_{}", mixed(r, ALNUM, 32))
        }),
        ("slack user", "SLACK_USER_TOKEN", |r| {
            format!(
                "xoxp-{}-{}-{}-{}",
                r.from(DIGITS, 11),
                r.from(DIGITS, 11),
                r.from(DIGITS, 13),
                r.from(HEX, 32)
            )
        }),
        ("slack config", "SLACK_CONFIG_TOKEN", |r| {
            format!("xoxe.xoxp-1-{}", mixed(r, ALNUM, 140))
        }),
        ("google oauth secret", "GOOGLE_CLIENT_SECRET", |r| {
            format!("GOCSPX-{}", mixed(r, B64URL, 28))
        }),
        ("google refresh", "GOOGLE_REFRESH_TOKEN", |r| {
            format!("1//0{}", mixed(r, B64URL, 99))
        }),
        ("google access", "GOOGLE_ACCESS_TOKEN", |r| {
            format!("ya29.a0{}", mixed(r, B64URL, 150))
        }),
        ("mapbox secret", "MAPBOX_SECRET_TOKEN", |r| {
            format!(
                "sk.eyJ1Ijoi{}.{}",
                mixed(r, B64URL, 60),
                mixed(r, B64URL, 22)
            )
        }),
        ("square", "SQUARE_ACCESS_TOKEN", |r| {
            format!("EAAA{}", mixed(r, B64URL, 60))
        }),
        ("square oauth", "SQUARE_APP_SECRET", |r| {
            format!("sq0csp-{}", mixed(r, B64URL, 43))
        }),
        ("honeycomb", "HONEYCOMB_API_KEY", |r| {
            format!("hcaik_{}", r.from(LOWER_ALNUM, 58))
        }),
        ("salesforce", "SF_ACCESS_TOKEN", |r| {
            format!(
                "00D{}!AQ{}",
                mixed(r, ALNUM, 12),
                mixed(
                    r,
                    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._",
                    94
                )
            )
        }),
        ("heroku", "HEROKU_API_KEY", |r| {
            format!("HRKU-AA{}", mixed(r, B64URL, 58))
        }),
        ("sentry user", "SENTRY_AUTH_TOKEN", |r| {
            format!("sntryu_{}", r.from(HEX, 64))
        }),
        ("shopify secret", "SHOPIFY_API_SECRET", |r| {
            format!("shpss_{}", r.from(HEX, 32))
        }),
        ("bitbucket", "BITBUCKET_APP_PASSWORD", |r| {
            format!("ATBB{}", mixed(r, ALNUM, 32))
        }),
        ("twitter bearer", "TWITTER_BEARER_TOKEN", |r| {
            format!(
                "AAAAAAAAAAAAAAAAAAAAA{}%3D{}",
                mixed(r, ALNUM, 40),
                mixed(r, ALNUM, 50)
            )
        }),
        ("facebook", "FB_ACCESS_TOKEN", |r| {
            format!("EAAB{}", mixed(r, ALNUM, 150))
        }),
        ("mailgun", "MAILGUN_API_KEY", |r| {
            format!("key-{}", r.from(HEX, 32))
        }),
        ("anthropic admin", "ANTHROPIC_ADMIN_KEY", |r| {
            format!("sk-ant-admin01-{}AA", mixed(r, B64URL, 93))
        }),
        ("doppler service", "DOPPLER_TOKEN", |r| {
            format!("dp.st.prd.{}", mixed(r, ALNUM, 40))
        }),
        ("vault batch", "VAULT_TOKEN", |r| {
            format!("hvb.{}", mixed(r, B64URL, 138))
        }),
        ("cloudflare origin ca", "CF_ORIGIN_CA_KEY", |r| {
            format!("v1.0-{}-{}", r.from(HEX, 24), r.from(HEX, 146))
        }),
        ("firebase fcm", "FCM_SERVER_KEY", |r| {
            format!(
                "AAAA{}:APA91b{}",
                mixed(r, B64URL, 7),
                mixed(r, B64URL, 134)
            )
        }),
        ("asana", "ASANA_PAT", |r| {
            format!(
                "2/{}/{}:{}",
                r.from(DIGITS, 16),
                r.from(DIGITS, 16),
                r.from(HEX, 32)
            )
        }),
        ("clickup", "CLICKUP_API_TOKEN", |r| {
            format!("pk_{}_{}", r.from(DIGITS, 8), r.from(UPPER_DIGIT, 32))
        }),
        ("ngrok", "NGROK_AUTHTOKEN", |r| {
            format!("2{}_{}", mixed(r, ALNUM, 26), mixed(r, ALNUM, 21))
        }),
        ("wakatime", "WAKATIME_API_KEY", |r| {
            format!("waka_{}", uuid(r))
        }),
        ("launchdarkly", "LD_SDK_KEY", |r| format!("sdk-{}", uuid(r))),
        ("octopus", "OCTOPUS_API_KEY", |r| {
            format!("API-{}", r.from(UPPER_DIGIT, 27))
        }),
        ("aws session token", "AWS_SESSION_TOKEN", |r| {
            format!("IQoJb3JpZ2luX2Vj{}", mixed(r, B64, 300))
        }),
    ]
}

/// One of nine places a provider token turns up in.
fn token_place(family: &'static str, name: &str, t: &str, place: usize, n: usize) -> Case {
    let lower = name.to_ascii_lowercase();
    match place % 9 {
        0 => case(
            family,
            "cli output",
            format!("Created.\n\n    {t}\n\nCopy it now; it is shown once.\n"),
            t,
        ),
        1 => case(
            family,
            "positional in code",
            read_lines(&format!("client = Client(\"{t}\")\nclient.ping()"), n),
            t,
        ),
        2 => case(
            family,
            "history export",
            format!("  {n}  export {name}=\"{t}\""),
            t,
        ),
        3 => Case {
            family,
            place: "json config",
            text: String::new(),
            json: Some(
                json!({"file_path": "/srv/app/.secrets.json", "content": format!("{{\n  \"{lower}\": \"{t}\"\n}}\n")}),
            ),
            secret: t.to_owned(),
        },
        4 => case(
            family,
            "header",
            format!("curl -sS -H \"Authorization: Bearer {t}\" https://api.example.com/v1/me"),
            t,
        ),
        5 => case(
            family,
            "markdown table",
            format!("| env | token |\n|---|---|\n| prod | {t} |\n"),
            t,
        ),
        6 => case(
            family,
            "yaml",
            format!("integrations:\n  {lower}: {t}\n"),
            t,
        ),
        7 => case(
            family,
            "prose",
            format!("ok, use {t} for the staging org and tell me when it works"),
            t,
        ),
        _ => case(family, "grep env", format!(".env.local:{n}:{name}={t}"), t),
    }
}

/// The cases.
pub(crate) fn fourth(rng: &mut Rng) -> Vec<Case> {
    let mut out = Vec::new();
    for (i, (family, name, make)) in families().into_iter().enumerate() {
        for k in 0..6 {
            let t = make(rng);
            let n = rng.below(400) + 3;
            out.push(token_place(family, name, &t, i + k * 4, n));
        }
    }
    for round in 0..3 {
        crate::fourth_shapes::shapes(rng, round, &mut out);
    }
    out
}
