//! A fifth held-out set, written from public descriptions of credential formats and of the
//! tools that take them before the redaction rules or any earlier set were read: provider
//! tokens of more than forty vendors in their documented shapes, passwords in configuration
//! files of every common syntax (`.netrc`, `.pgpass`, XML, JSON, YAML, TOML, INI, Java
//! properties, env files), connection strings and URLs of databases and message brokers,
//! command-line flags of the common tools, prose in many languages, private-key blocks of
//! every kind and in every wrapping, signed storage URLs, package-manager credentials, chat
//! webhooks, high-entropy values beside secret-like names, and values that start with (or
//! hold) punctuation a rule may stop at. Its look-alikes (`fifth_lookalike.rs`) are measured
//! beside it. Every value is generated here; the set is measured as it was first written and
//! later changes to the rules never edit it.
//!
//! What counts as a secret here: any value a credential field, flag or sentence gives,
//! weak ones such as `changeme` or `hunter2` included (a transcript cannot tell a default
//! from the real value). What does not: placeholders whose form says they hold nothing
//! (`<password>`, `${DB_PASSWORD}`, `{{ vault_pw }}`, `$(cat file)`, `********`,
//! `YOUR_API_KEY`), names of files or variables that hold a secret, and public material
//! (public keys, certificates, hashes, identifiers).

use crate::fifth_config::config_cases;
use crate::fifth_flags::flag_cases;
use crate::fifth_gen::{LOWER_DIGIT, at, at_json, camel, snake};
use crate::fifth_keys::key_cases;
use crate::fifth_prose::prose_cases;
use crate::secrets::{ALNUM, B64, B64URL, BECH32, Case, DIGITS, HEX, Rng, UPPER_DIGIT, mixed};

type Maker = fn(&mut Rng) -> String;

/// Vendor tokens in their documented shapes (invented values), with the variable a
/// configuration names them by, and whether the token's own prefix identifies it.
fn vendors() -> Vec<(&'static str, &'static str, bool, Maker)> {
    vec![
        ("github classic", "GITHUB_TOKEN", true, |r| {
            format!("ghp_{}", mixed(r, ALNUM, 36))
        }),
        ("github fine-grained", "GH_TOKEN", true, |r| {
            format!(
                "github_pat_11{}_{}",
                r.from(UPPER_DIGIT, 20),
                mixed(r, ALNUM, 59)
            )
        }),
        ("github app", "GITHUB_APP_TOKEN", true, |r| {
            format!("ghs_{}", mixed(r, ALNUM, 36))
        }),
        ("github refresh", "GITHUB_REFRESH", true, |r| {
            format!("ghr_{}", mixed(r, ALNUM, 76))
        }),
        ("gitlab runner", "RUNNER_TOKEN", true, |r| {
            format!("glrt-{}", mixed(r, B64URL, 20))
        }),
        ("gitlab deploy", "CI_DEPLOY_PASSWORD", true, |r| {
            format!("gldt-{}", mixed(r, ALNUM, 20))
        }),
        ("slack user", "SLACK_USER_TOKEN", true, |r| {
            format!(
                "xoxp-{}-{}-{}-{}",
                r.from(DIGITS, 11),
                r.from(DIGITS, 12),
                r.from(DIGITS, 13),
                r.from(HEX, 32)
            )
        }),
        ("slack app-level", "SLACK_APP_TOKEN", true, |r| {
            format!(
                "xapp-1-A{}-{}-{}",
                r.from(UPPER_DIGIT, 10),
                r.from(DIGITS, 13),
                r.from(HEX, 64)
            )
        }),
        ("stripe restricted", "STRIPE_KEY", true, |r| {
            format!("rk_live_{}", mixed(r, ALNUM, 99))
        }),
        ("stripe webhook", "STRIPE_WEBHOOK_SECRET", true, |r| {
            format!("whsec_{}", mixed(r, ALNUM, 32))
        }),
        ("google oauth secret", "GOOGLE_CLIENT_SECRET", true, |r| {
            format!("GOCSPX-{}", mixed(r, B64URL, 28))
        }),
        ("google api key", "GOOGLE_MAPS_KEY", true, |r| {
            format!("AIza{}", mixed(r, B64URL, 35))
        }),
        ("google oauth access", "GOOGLE_ACCESS_TOKEN", true, |r| {
            format!("ya29.a0{}", mixed(r, B64URL, 150))
        }),
        ("openai project", "OPENAI_API_KEY", true, |r| {
            format!(
                "sk-proj-{}T3BlbkFJ{}",
                mixed(r, B64URL, 74),
                mixed(r, B64URL, 74)
            )
        }),
        ("anthropic", "ANTHROPIC_API_KEY", true, |r| {
            format!("sk-ant-api03-{}AA", mixed(r, B64URL, 93))
        }),
        ("anthropic admin", "ANTHROPIC_ADMIN_KEY", true, |r| {
            format!("sk-ant-admin01-{}AA", mixed(r, B64URL, 93))
        }),
        ("hugging face", "HF_TOKEN", true, |r| {
            format!(
                "hf_{}",
                r.from("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz", 34)
            )
        }),
        ("sendgrid", "SENDGRID_API_KEY", true, |r| {
            format!("SG.{}.{}", mixed(r, B64URL, 22), mixed(r, B64URL, 43))
        }),
        ("mailgun", "MAILGUN_API_KEY", true, |r| {
            format!("key-{}", r.from(HEX, 32))
        }),
        ("mailchimp", "MAILCHIMP_API_KEY", false, |r| {
            format!("{}-us{}", r.from(HEX, 32), 1 + r.below(20))
        }),
        ("npm", "NPM_TOKEN", true, |r| {
            format!("npm_{}", mixed(r, ALNUM, 36))
        }),
        ("pypi", "PYPI_TOKEN", true, |r| {
            format!("pypi-AgEIcHlwaS5vcmc{}", mixed(r, B64URL, 150))
        }),
        ("docker hub", "DOCKERHUB_TOKEN", true, |r| {
            format!("dckr_pat_{}", mixed(r, B64URL, 27))
        }),
        ("digitalocean", "DIGITALOCEAN_TOKEN", true, |r| {
            format!("dop_v1_{}", r.from(HEX, 64))
        }),
        ("shopify", "SHOPIFY_ACCESS_TOKEN", true, |r| {
            format!("shpat_{}", r.from(HEX, 32))
        }),
        ("linear", "LINEAR_API_KEY", true, |r| {
            format!("lin_api_{}", mixed(r, ALNUM, 40))
        }),
        ("discord bot", "DISCORD_TOKEN", false, |r| {
            format!(
                "MT{}.{}.{}",
                mixed(r, B64URL, 24),
                mixed(r, B64URL, 6),
                mixed(r, B64URL, 38)
            )
        }),
        ("telegram bot", "TELEGRAM_BOT_TOKEN", true, |r| {
            format!("{}:AA{}", r.from(DIGITS, 10), mixed(r, B64URL, 33))
        }),
        ("twilio", "TWILIO_AUTH_TOKEN", false, |r| r.from(HEX, 32)),
        ("twilio api key", "TWILIO_API_SECRET", false, |r| {
            mixed(r, ALNUM, 32)
        }),
        ("datadog api", "DD_API_KEY", false, |r| r.from(HEX, 32)),
        ("datadog app", "DD_APP_KEY", false, |r| r.from(HEX, 40)),
        ("new relic user", "NEW_RELIC_API_KEY", true, |r| {
            format!("NRAK-{}", r.from(UPPER_DIGIT, 27))
        }),
        ("new relic license", "NEW_RELIC_LICENSE_KEY", false, |r| {
            format!("{}NRAL", r.from(HEX, 36))
        }),
        ("sentry user", "SENTRY_AUTH_TOKEN", true, |r| {
            format!("sntryu_{}", r.from(HEX, 64))
        }),
        ("grafana service account", "GRAFANA_TOKEN", true, |r| {
            format!("glsa_{}_{}", mixed(r, ALNUM, 32), r.from(HEX, 8))
        }),
        ("vault service", "VAULT_TOKEN", true, |r| {
            format!("hvs.{}", mixed(r, B64URL, 90))
        }),
        ("doppler", "DOPPLER_TOKEN", true, |r| {
            format!("dp.st.prd.{}", mixed(r, ALNUM, 40))
        }),
        ("pulumi", "PULUMI_ACCESS_TOKEN", true, |r| {
            format!("pul-{}", r.from(HEX, 40))
        }),
        ("postman", "POSTMAN_API_KEY", true, |r| {
            format!("PMAK-{}-{}", r.from(HEX, 24), r.from(HEX, 34))
        }),
        ("netlify", "NETLIFY_AUTH_TOKEN", true, |r| {
            format!("nfp_{}", mixed(r, ALNUM, 36))
        }),
        ("vercel", "VERCEL_TOKEN", false, |r| mixed(r, ALNUM, 24)),
        ("fly", "FLY_API_TOKEN", true, |r| {
            format!("FlyV1 fm2_{}", mixed(r, B64, 200))
        }),
        ("cloudflare", "CLOUDFLARE_API_TOKEN", false, |r| {
            mixed(r, B64URL, 40)
        }),
        ("cloudflare global", "CF_API_KEY", false, |r| {
            r.from(HEX, 37)
        }),
        ("okta", "OKTA_API_TOKEN", false, |r| {
            format!("00{}", mixed(r, B64URL, 40))
        }),
        ("atlassian", "JIRA_API_TOKEN", true, |r| {
            format!(
                "ATATT3xFfGF0{}={}",
                mixed(r, B64URL, 170),
                r.from(&HEX.to_uppercase(), 8)
            )
        }),
        ("airtable", "AIRTABLE_TOKEN", true, |r| {
            format!("pat{}.{}", mixed(r, ALNUM, 14), r.from(HEX, 64))
        }),
        ("asana", "ASANA_PAT", false, |r| {
            format!(
                "2/{}/{}:{}",
                r.from(DIGITS, 16),
                r.from(DIGITS, 16),
                r.from(HEX, 32)
            )
        }),
        ("notion", "NOTION_TOKEN", true, |r| {
            format!("ntn_{}", mixed(r, ALNUM, 46))
        }),
        ("figma", "FIGMA_TOKEN", true, |r| {
            format!("figd_{}", mixed(r, B64URL, 40))
        }),
        ("mapbox secret", "MAPBOX_SECRET", true, |r| {
            format!(
                "sk.eyJ1Ijoi{}.{}",
                mixed(r, B64URL, 60),
                mixed(r, B64URL, 22)
            )
        }),
        ("age", "SOPS_AGE_KEY", true, |r| {
            format!("AGE-SECRET-KEY-1{}", r.from(BECH32, 58))
        }),
        ("dropbox", "DROPBOX_TOKEN", true, |r| {
            format!("sl.B{}", mixed(r, B64URL, 138))
        }),
        ("square", "SQUARE_ACCESS_TOKEN", true, |r| {
            format!("EAAA{}", mixed(r, B64URL, 60))
        }),
        ("planetscale", "PLANETSCALE_TOKEN", true, |r| {
            format!("pscale_tkn_{}", mixed(r, B64URL, 43))
        }),
        ("supabase", "SUPABASE_ACCESS_TOKEN", true, |r| {
            format!("sbp_{}", r.from(HEX, 40))
        }),
        ("sourcegraph", "SRC_ACCESS_TOKEN", true, |r| {
            format!("sgp_{}", r.from(HEX, 40))
        }),
        ("replicate", "REPLICATE_API_TOKEN", true, |r| {
            format!("r8_{}", mixed(r, ALNUM, 37))
        }),
        ("groq", "GROQ_API_KEY", true, |r| {
            format!("gsk_{}", mixed(r, ALNUM, 52))
        }),
        ("perplexity", "PERPLEXITY_API_KEY", true, |r| {
            format!("pplx-{}", mixed(r, ALNUM, 48))
        }),
        ("cohere", "COHERE_API_KEY", false, |r| mixed(r, ALNUM, 40)),
        ("mistral", "MISTRAL_API_KEY", false, |r| mixed(r, ALNUM, 32)),
        ("jfrog", "ARTIFACTORY_API_KEY", true, |r| {
            format!("AKCp{}", mixed(r, ALNUM, 69))
        }),
        ("circleci", "CIRCLE_TOKEN", true, |r| {
            format!("CCIPAT_{}_{}", mixed(r, ALNUM, 22), r.from(HEX, 40))
        }),
        ("bitbucket", "BITBUCKET_APP_PASSWORD", true, |r| {
            format!(
                "ATBB{}{}",
                mixed(r, ALNUM, 28),
                r.from(&HEX.to_uppercase(), 8)
            )
        }),
        ("azure devops", "AZURE_DEVOPS_EXT_PAT", false, |r| {
            r.from("abcdefghijklmnopqrstuvwxyz234567", 52)
        }),
        ("firebase fcm", "FCM_SERVER_KEY", true, |r| {
            format!(
                "AAAA{}:APA91b{}",
                mixed(r, B64URL, 7),
                mixed(r, B64URL, 134)
            )
        }),
        ("facebook", "FB_ACCESS_TOKEN", true, |r| {
            format!("EAAG{}", mixed(r, ALNUM, 180))
        }),
        ("algolia", "ALGOLIA_ADMIN_KEY", false, |r| r.from(HEX, 32)),
        ("contentful", "CONTENTFUL_MANAGEMENT_TOKEN", true, |r| {
            format!("CFPAT-{}", mixed(r, B64URL, 43))
        }),
        ("prefect", "PREFECT_API_KEY", true, |r| {
            format!("pnu_{}", mixed(r, ALNUM, 36))
        }),
        ("readme", "README_API_KEY", true, |r| {
            format!("rdme_{}", r.from(HEX, 70))
        }),
        ("databricks", "DATABRICKS_TOKEN", true, |r| {
            format!("dapi{}", r.from(HEX, 32))
        }),
        ("hetzner", "HCLOUD_TOKEN", false, |r| mixed(r, ALNUM, 64)),
        ("linode", "LINODE_TOKEN", false, |r| r.from(HEX, 64)),
        ("alibaba", "ALIBABA_CLOUD_ACCESS_KEY_SECRET", false, |r| {
            mixed(r, ALNUM, 30)
        }),
        ("yandex", "YC_TOKEN", true, |r| {
            format!("y0_{}", mixed(r, B64URL, 55))
        }),
        ("shippo", "SHIPPO_API_KEY", true, |r| {
            format!("shippo_live_{}", r.from(HEX, 40))
        }),
        ("launchdarkly", "LD_API_KEY", true, |r| {
            format!(
                "api-{}-{}-4{}-a{}-{}",
                r.from(HEX, 8),
                r.from(HEX, 4),
                r.from(HEX, 3),
                r.from(HEX, 3),
                r.from(HEX, 12)
            )
        }),
        ("heroku", "HEROKU_API_KEY", true, |r| {
            format!("HRKU-{}", mixed(r, B64URL, 60))
        }),
        ("clojars", "CLOJARS_TOKEN", true, |r| {
            format!("CLOJARS_{}", r.from(HEX, 60))
        }),
        ("typeform", "TYPEFORM_TOKEN", true, |r| {
            format!("tfp_{}_{}", mixed(r, ALNUM, 44), mixed(r, ALNUM, 14))
        }),
        ("scaleway", "SCW_SECRET_KEY", false, |r| {
            format!(
                "{}-{}-4{}-9{}-{}",
                r.from(HEX, 8),
                r.from(HEX, 4),
                r.from(HEX, 3),
                r.from(HEX, 3),
                r.from(HEX, 12)
            )
        }),
        ("aws session", "AWS_SESSION_TOKEN", true, |r| {
            format!("FwoGZXIvYXdzE{}", mixed(r, B64, 300))
        }),
        ("gcp service key id", "GCP_SA_PRIVATE_KEY_ID", false, |r| {
            r.from(HEX, 40)
        }),
        ("azure client secret", "AZURE_CLIENT_SECRET", false, |r| {
            format!("{}8Q~{}", mixed(r, ALNUM, 3), mixed(r, B64URL, 31))
        }),
    ]
}

/// Each vendor token in two of the places a transcript holds one.
fn vendor_cases(r: &mut Rng) -> Vec<Case> {
    let mut out = Vec::new();
    for (i, (family, name, prefixed, make)) in vendors().into_iter().enumerate() {
        let t = make(r);
        let camel = camel(name);
        let first = match i % 6 {
            0 => at(family, "env file", format!("{name}={t}\n"), &t),
            1 => at_json(
                family,
                "json config",
                serde_json::json!({ camel.clone(): t }),
                &t,
            ),
            2 => at(family, "yaml", format!("env:\n  {name}: \"{t}\"\n"), &t),
            3 => at(
                family,
                "read-tool line",
                format!("    14→export {name}='{t}'\n    15→"),
                &t,
            ),
            4 => at(family, "diff", format!("@@ -3,0 +4 @@\n+{name}={t}\n"), &t),
            _ => at(
                family,
                "code keyword",
                format!("client = Client({}=\"{t}\", timeout=30)", snake(name)),
                &t,
            ),
        };
        out.push(first);
        let second = if prefixed {
            match i % 4 {
                0 => at(
                    family,
                    "prose, no name",
                    format!("I rotated it, the new one is {t} — works now."),
                    &t,
                ),
                1 => at(
                    family,
                    "bearer header",
                    format!(
                        "curl -sS -H \"Authorization: Bearer {t}\" https://api.example.com/v1/me"
                    ),
                    &t,
                ),
                2 => at(
                    family,
                    "query string",
                    format!("GET /v2/items?limit=10&access_token={t} HTTP/1.1"),
                    &t,
                ),
                _ => at(
                    family,
                    "tool output",
                    format!("$ cat ~/.config/tool/token\n{t}\n$ "),
                    &t,
                ),
            }
        } else {
            match i % 3 {
                0 => at(
                    family,
                    "shell export",
                    format!("export {name}=\"{t}\" && ./deploy.sh"),
                    &t,
                ),
                1 => at(
                    family,
                    "toml",
                    format!("[credentials]\n{} = \"{t}\"\n", snake(name)),
                    &t,
                ),
                _ => at(
                    family,
                    "js object",
                    format!("const cfg = {{ {camel}: '{t}', region: 'eu' }};"),
                    &t,
                ),
            }
        };
        out.push(second);
    }
    out
}

/// The whole fifth held-out set.
pub(crate) fn fifth(r: &mut Rng) -> Vec<Case> {
    let mut out = vendor_cases(r);
    out.extend(config_cases(r));
    out.extend(key_cases(r));
    out.extend(flag_cases(r));
    out.extend(prose_cases(r));
    // A few lower-case-only and digit-heavy secrets beside names, which a mixed-case test
    // would pass over.
    for name in [
        "session_secret",
        "hmac_key",
        "signing_key",
        "encryption_key",
    ] {
        let v = r.from(LOWER_DIGIT, 40);
        out.push(at(
            "entropy beside name",
            "lowercase value",
            format!("{name}: {v}"),
            &v,
        ));
    }
    out
}
