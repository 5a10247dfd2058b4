//! Secrets recognised by their own shape: provider tokens with a fixed prefix, JSON web tokens,
//! private-key blocks and AWS secret access keys. Each family is one alternative of a single
//! regular expression, so the text is scanned once for all of them.

use regex::Regex;

use super::SecretKind;
use super::score::looks_random;

/// A family of prefixed secrets.
pub(super) struct Family {
    /// A short name for tests, the benchmark and the documentation.
    pub(super) label: &'static str,
    /// The marker the secret is replaced with.
    pub(super) kind: SecretKind,
    /// The pattern; its match is the secret.
    pub(super) pattern: &'static str,
    /// How many characters of the match are the fixed prefix (not counted as random).
    pub(super) prefix: usize,
    /// Whether the rest must look random (two character classes, enough distinct characters):
    /// for prefixes short or common enough to start ordinary words.
    pub(super) random: bool,
}

const fn family(
    label: &'static str,
    kind: SecretKind,
    pattern: &'static str,
    prefix: usize,
    random: bool,
) -> Family {
    Family {
        label,
        kind,
        pattern,
        prefix,
        random,
    }
}

use SecretKind as K;

/// Every prefixed family, most specific first (an earlier alternative wins at one position).
pub(super) const FAMILIES: &[Family] = &[
    family(
        "anthropic",
        K::AnthropicKey,
        r"sk-ant-[A-Za-z0-9_-]{20,}",
        7,
        true,
    ),
    family(
        "stripe",
        K::StripeKey,
        r"(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}|whsec_[A-Za-z0-9+/=]{24,}",
        0,
        true,
    ),
    family(
        "openai",
        K::OpenAiKey,
        r"sk-(?:proj-|svcacct-|admin-|or-v1-)?[A-Za-z0-9_-]{20,}",
        3,
        true,
    ),
    family(
        "google",
        K::GoogleKey,
        r"AIza[0-9A-Za-z_-]{35}|GOCSPX-[A-Za-z0-9_-]{28}|ya29\.[A-Za-z0-9_-]{30,}|1//0[A-Za-z0-9_-]{40,}",
        4,
        true,
    ),
    family(
        "aws-access-key",
        K::AwsAccessKey,
        r"(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[0-9A-Z]{16}(?-u:\b)",
        4,
        false,
    ),
    family(
        "github",
        K::GithubToken,
        r"gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}",
        4,
        true,
    ),
    family(
        "gitlab",
        K::GitlabToken,
        r"gl(?:pat|ptt|rt|dt|cbt|soat|ft|imt|agent|oas|rtr|ffct)-[A-Za-z0-9_-]{20,}|GR1348941[A-Za-z0-9_-]{20,}",
        6,
        true,
    ),
    family(
        "slack",
        K::SlackToken,
        r"xox[abposre]-[A-Za-z0-9-]{10,}|xapp-[A-Za-z0-9-]{20,}|https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_-]{10,}",
        5,
        true,
    ),
    family("npm", K::NpmToken, r"npm_[A-Za-z0-9]{36}(?-u:\b)", 4, true),
    family("pypi", K::PypiToken, r"pypi-AgE[A-Za-z0-9_-]{50,}", 8, true),
    family(
        "huggingface",
        K::HuggingFaceToken,
        r"hf_[A-Za-z0-9]{30,}|api_org_[A-Za-z]{30,}",
        3,
        true,
    ),
    family(
        "jwt",
        K::Jwt,
        r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
        0,
        false,
    ),
    family(
        "sendgrid",
        K::ProviderToken,
        r"SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}",
        3,
        true,
    ),
    family(
        "twilio",
        K::ProviderToken,
        r"SK[0-9a-fA-F]{32}(?-u:\b)",
        2,
        true,
    ),
    family(
        "shopify",
        K::ProviderToken,
        r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}",
        6,
        true,
    ),
    family(
        "digitalocean",
        K::ProviderToken,
        r"do[opr]_v1_[a-f0-9]{64}",
        7,
        true,
    ),
    family(
        "databricks",
        K::ProviderToken,
        r"dapi[a-f0-9]{32}(?:-[0-9])?",
        4,
        true,
    ),
    family(
        "doppler",
        K::ProviderToken,
        r"dp\.(?:pt|st|sa|ct|scim|audit)\.(?:[a-z0-9_-]{1,40}\.)?[A-Za-z0-9]{40,}",
        6,
        true,
    ),
    family(
        "linear",
        K::ProviderToken,
        r"lin_(?:api|oauth)_[A-Za-z0-9]{40}",
        8,
        true,
    ),
    family(
        "postman",
        K::ProviderToken,
        r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}",
        5,
        true,
    ),
    family("pulumi", K::ProviderToken, r"pul-[a-f0-9]{40}", 4, true),
    family(
        "grafana",
        K::ProviderToken,
        r"glc_[A-Za-z0-9+/]{32,}={0,2}|glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}",
        4,
        true,
    ),
    family(
        "vault",
        K::ProviderToken,
        r"hv[sb]\.[A-Za-z0-9_-]{24,}",
        4,
        true,
    ),
    family(
        "age",
        K::ProviderToken,
        r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}",
        16,
        false,
    ),
    family(
        "discord-webhook",
        K::ProviderToken,
        r"https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/[0-9]+/[A-Za-z0-9_-]{20,}",
        0,
        false,
    ),
    family(
        "notion",
        K::ProviderToken,
        r"ntn_[A-Za-z0-9]{40,}|secret_[A-Za-z0-9]{43}(?-u:\b)",
        4,
        true,
    ),
    family("groq", K::ProviderToken, r"gsk_[A-Za-z0-9]{48,}", 4, true),
    family("xai", K::ProviderToken, r"xai-[A-Za-z0-9]{60,}", 4, true),
    family(
        "replicate",
        K::ProviderToken,
        r"r8_[A-Za-z0-9]{37}(?-u:\b)",
        3,
        true,
    ),
    family(
        "perplexity",
        K::ProviderToken,
        r"pplx-[A-Za-z0-9]{40,}",
        5,
        true,
    ),
    family(
        "tavily",
        K::ProviderToken,
        r"tvly-(?:dev-|prod-)?[A-Za-z0-9]{24,}",
        5,
        true,
    ),
    family(
        "dockerhub",
        K::ProviderToken,
        r"dckr_pat_[A-Za-z0-9_-]{27,}",
        9,
        true,
    ),
    family(
        "terraform",
        K::ProviderToken,
        r"[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{60,}",
        0,
        true,
    ),
    family(
        "sentry",
        K::ProviderToken,
        r"sntry[su]_[A-Za-z0-9+/=_-]{40,}",
        7,
        true,
    ),
    family(
        "mailgun",
        K::ProviderToken,
        r"key-[a-f0-9]{32}(?-u:\b)",
        4,
        true,
    ),
    family(
        "mailchimp",
        K::ProviderToken,
        r"[a-f0-9]{32}-us[0-9]{1,2}(?-u:\b)",
        0,
        true,
    ),
    family("newrelic", K::ProviderToken, r"NRAK-[A-Z0-9]{27}", 5, true),
    family(
        "dynatrace",
        K::ProviderToken,
        r"dt0c01\.[A-Z0-9]{24}\.[A-Z0-9]{64}",
        7,
        true,
    ),
    family(
        "planetscale",
        K::ProviderToken,
        r"pscale_(?:tkn|pw|oauth)_[A-Za-z0-9_.-]{32,}",
        11,
        true,
    ),
    family("supabase", K::ProviderToken, r"sbp_[a-f0-9]{40}", 4, true),
    family(
        "atlassian",
        K::ProviderToken,
        r"ATATT3[A-Za-z0-9_=-]{150,}",
        6,
        true,
    ),
    family(
        "square",
        K::ProviderToken,
        r"sq0(?:atp|csp)-[A-Za-z0-9_-]{22,}",
        7,
        true,
    ),
    family(
        "flyio",
        K::ProviderToken,
        r"fo1_[A-Za-z0-9_-]{39,}|fm[12][ar]?_[A-Za-z0-9+/]{100,}={0,3}",
        4,
        true,
    ),
    family(
        "rubygems",
        K::ProviderToken,
        r"rubygems_[a-f0-9]{48}",
        9,
        true,
    ),
    family(
        "heroku",
        K::ProviderToken,
        r"HRKU-[A-Za-z0-9_-]{60}",
        5,
        true,
    ),
    family(
        "telegram",
        K::ProviderToken,
        r"[0-9]{8,10}:AA[A-Za-z0-9_-]{33}(?-u:\b)",
        0,
        true,
    ),
    family(
        "azure-client-secret",
        K::ProviderToken,
        r"[A-Za-z0-9_~.]{3}[0-9]Q~[A-Za-z0-9_~.-]{31,34}",
        0,
        true,
    ),
    family(
        "mapbox",
        K::ProviderToken,
        r"sk\.eyJ[A-Za-z0-9_-]{50,}\.[A-Za-z0-9_-]{20,}",
        3,
        true,
    ),
    family(
        "1password",
        K::ProviderToken,
        r"ops_eyJ[A-Za-z0-9_-]{100,}",
        7,
        true,
    ),
    family(
        "alibaba",
        K::ProviderToken,
        r"LTAI[A-Za-z0-9]{20}(?-u:\b)",
        4,
        true,
    ),
    family(
        "artifactory",
        K::ProviderToken,
        r"AKCp[A-Za-z0-9]{69}",
        4,
        true,
    ),
    family(
        "clojars",
        K::ProviderToken,
        r"CLOJARS_[a-z0-9]{60}",
        8,
        true,
    ),
    family(
        "contentful",
        K::ProviderToken,
        r"CFPAT-[A-Za-z0-9_-]{43}",
        6,
        true,
    ),
    family(
        "dropbox",
        K::ProviderToken,
        r"sl\.(?:u\.)?[A-Za-z0-9_-]{130,}",
        3,
        true,
    ),
    family(
        "duffel",
        K::ProviderToken,
        r"duffel_(?:test|live)_[A-Za-z0-9_=-]{43}",
        12,
        true,
    ),
    family(
        "easypost",
        K::ProviderToken,
        r"EZ[AT]K[A-Za-z0-9]{54}",
        4,
        true,
    ),
    family(
        "flutterwave",
        K::ProviderToken,
        r"FLW(?:SECK|PUBK)(?:_TEST)?-[a-fA-F0-9]{32}-X",
        8,
        true,
    ),
    family(
        "frameio",
        K::ProviderToken,
        r"fio-u-[A-Za-z0-9_=-]{64}",
        6,
        true,
    ),
    family(
        "hubspot",
        K::ProviderToken,
        r"pat-(?:na|eu)[0-9]-[a-f0-9]{8}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{12}",
        8,
        false,
    ),
    family(
        "infracost",
        K::ProviderToken,
        r"ico-[A-Za-z0-9]{32}(?-u:\b)",
        4,
        true,
    ),
    family(
        "langsmith",
        K::ProviderToken,
        r"lsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}",
        8,
        true,
    ),
    family(
        "newrelic-other",
        K::ProviderToken,
        r"NRJS-[a-f0-9]{19}|NRII-[A-Za-z0-9_-]{32}",
        5,
        true,
    ),
    family(
        "openshift",
        K::ProviderToken,
        r"sha256~[A-Za-z0-9_-]{43}",
        7,
        true,
    ),
    family(
        "plaid",
        K::ProviderToken,
        r"access-(?:sandbox|development|production)-[a-f0-9]{8}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{12}",
        0,
        false,
    ),
    family("prefect", K::ProviderToken, r"pnu_[A-Za-z0-9]{36}", 4, true),
    family("readme", K::ProviderToken, r"rdme_[a-z0-9]{70}", 5, true),
    family(
        "scalingo",
        K::ProviderToken,
        r"tk-us-[A-Za-z0-9_-]{48}",
        6,
        true,
    ),
    family(
        "sendinblue",
        K::ProviderToken,
        r"xkeysib-[a-f0-9]{64}-[A-Za-z0-9]{16}",
        8,
        true,
    ),
    family(
        "shippo",
        K::ProviderToken,
        r"shippo_(?:live|test)_[a-f0-9]{40}",
        12,
        true,
    ),
    family("netlify", K::ProviderToken, r"nfp_[A-Za-z0-9]{36}", 4, true),
    family(
        "circleci",
        K::ProviderToken,
        r"CCIPAT_[A-Za-z0-9]{22}_[a-f0-9]{40}",
        7,
        true,
    ),
    family(
        "sourcegraph",
        K::ProviderToken,
        r"sgp_(?:[a-f0-9]{16}_|local_)?[a-f0-9]{40}",
        4,
        true,
    ),
    family(
        "typeform",
        K::ProviderToken,
        r"tfp_[A-Za-z0-9_.=-]{59}",
        4,
        true,
    ),
    family(
        "yandex",
        K::ProviderToken,
        r"AQVN[A-Za-z0-9_-]{35,38}",
        4,
        true,
    ),
    family(
        "harness",
        K::ProviderToken,
        r"pat\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{20}",
        4,
        true,
    ),
    family(
        "airtable",
        K::ProviderToken,
        r"pat[A-Za-z0-9]{14}\.[a-f0-9]{64}",
        3,
        true,
    ),
    family(
        "sonarqube",
        K::ProviderToken,
        r"sq[pua]_[a-f0-9]{40}(?-u:\b)",
        4,
        true,
    ),
    family("buildkite", K::ProviderToken, r"bkua_[a-f0-9]{40}", 5, true),
    family(
        "posthog",
        K::ProviderToken,
        r"phx_[A-Za-z0-9]{40,}",
        4,
        true,
    ),
    family(
        "honeycomb",
        K::ProviderToken,
        r"hc(?:aik|xik|amk|xmk|xlk)_[A-Za-z0-9]{30,}",
        6,
        true,
    ),
    family(
        "firebase-fcm",
        K::ProviderToken,
        r"AAAA[A-Za-z0-9_-]{7}:APA91b[A-Za-z0-9_-]{100,}",
        0,
        true,
    ),
    family(
        "asana",
        K::ProviderToken,
        r"[0-9]/[0-9]{12,16}/[0-9]{12,16}:[a-f0-9]{32}",
        0,
        false,
    ),
    family(
        "bitbucket",
        K::ProviderToken,
        r"ATBB[A-Za-z0-9_=.-]{32,}",
        4,
        true,
    ),
    family(
        "wakatime",
        K::ProviderToken,
        r"waka_[a-f0-9]{8}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{12}",
        0,
        false,
    ),
    family(
        "launchdarkly",
        K::ProviderToken,
        r"(?:sdk|mob)-[a-f0-9]{8}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{12}",
        0,
        false,
    ),
    family(
        "octopus",
        K::ProviderToken,
        r"API-[A-Z0-9]{25,32}(?-u:\b)",
        4,
        true,
    ),
    family(
        "cloudflare-origin-ca",
        K::ProviderToken,
        r"v1\.0-[a-f0-9]{24}-[a-f0-9]{146}",
        0,
        false,
    ),
    family(
        "pinecone",
        K::ProviderToken,
        r"pcsk_[A-Za-z0-9]{4,8}_[A-Za-z0-9]{40,}",
        5,
        true,
    ),
    family(
        "salesforce",
        K::ProviderToken,
        r"00D[A-Za-z0-9]{12,15}![A-Za-z0-9._]{80,}",
        0,
        true,
    ),
    family(
        "twitter-bearer",
        K::ProviderToken,
        r"A{20,22}[A-Za-z0-9%]{40,}",
        20,
        true,
    ),
    family(
        "meta-square",
        K::ProviderToken,
        r"EAA[A-Za-z0-9_-]{56,}",
        3,
        true,
    ),
    family(
        "clickup",
        K::ProviderToken,
        r"pk_[0-9]{6,10}_[A-Z0-9]{32}(?-u:\b)",
        3,
        true,
    ),
    family(
        "ngrok",
        K::ProviderToken,
        r"[12][A-Za-z0-9]{24,27}_[A-Za-z0-9]{20,22}(?-u:\b)",
        1,
        true,
    ),
    family(
        "figma",
        K::ProviderToken,
        r"figd_[A-Za-z0-9_-]{40,}",
        5,
        true,
    ),
    family(
        "crates-io",
        K::ProviderToken,
        r"cio[A-Za-z0-9]{32}(?-u:\b)",
        3,
        true,
    ),
    family(
        "tailscale",
        K::ProviderToken,
        r"tskey-[a-z]+-[A-Za-z0-9]{6,}-[A-Za-z0-9]{20,}",
        6,
        true,
    ),
    family(
        "aws-session-token",
        K::ProviderToken,
        r"(?:IQoJb3JpZ2luX2Vj|FwoGZXIvYXdzE)[A-Za-z0-9+/]{100,}={0,2}",
        0,
        false,
    ),
    family(
        "discord-bot",
        K::ProviderToken,
        r"[MNO][DTjz][A-Za-z0-9_-]{22,26}\.[A-Za-z0-9_-]{6,7}\.[A-Za-z0-9_-]{27,40}",
        0,
        true,
    ),
    family(
        "okta",
        K::ProviderToken,
        r"00[A-Za-z0-9_-]{40}(?-u:\b)",
        2,
        true,
    ),
];

/// The byte ranges of AWS secret access keys in `text`: runs of exactly 40 base64 characters
/// (`A-Z a-z 0-9 / +`) not touching another base64 character or `=`, with a digit, an upper-
/// and a lower-case letter (a git hash has no upper-case letter). A hand-written scan: one
/// pass, no backtracking.
pub(super) fn aws_secret_spans(text: &str) -> Vec<(usize, usize)> {
    let is_b64 = |c: &u8| c.is_ascii_alphanumeric() || *c == b'/' || *c == b'+';
    let bytes = text.as_bytes();
    let mut spans = Vec::new();
    let mut i = 0usize;
    while i < bytes.len() {
        let run = bytes
            .get(i..)
            .unwrap_or_default()
            .iter()
            .take_while(|c| is_b64(c))
            .count();
        if run == 0 {
            i += 1;
            continue;
        }
        let (start, end) = (i, i + run);
        i = end;
        let touches_pad = |at: Option<usize>| at.and_then(|a| bytes.get(a)) == Some(&b'=');
        if run == 40
            && !touches_pad(start.checked_sub(1))
            && !touches_pad(Some(end))
            && text.get(start..end).is_some_and(accept_aws_secret)
        {
            spans.push((start, end));
        }
    }
    spans
}

/// True for a 40-character candidate that looks like an AWS secret access key.
fn accept_aws_secret(candidate: &str) -> bool {
    let has = |f: fn(&char) -> bool| candidate.chars().any(|c| f(&c));
    has(char::is_ascii_digit) && has(char::is_ascii_uppercase) && has(char::is_ascii_lowercase)
}

/// The regex of all families: each family is capture group `i + 1`, and a family whose
/// prefix starts with a word character needs a word boundary before it.
pub(super) fn combined() -> Option<Regex> {
    let mut pattern = String::from("(?-u:\\b)(?:");
    for (i, f) in FAMILIES.iter().enumerate() {
        if i > 0 {
            pattern.push('|');
        }
        pattern.push('(');
        pattern.push_str(f.pattern);
        pattern.push(')');
    }
    pattern.push(')');
    regex::RegexBuilder::new(&pattern)
        .dfa_size_limit(32 << 20)
        .build()
        .ok()
}

/// True when a matched token of `family` is a secret, not a word that shares its prefix.
pub(super) fn accept(family: &Family, token: &str) -> bool {
    if !family.random {
        return true;
    }
    let body = token.get(family.prefix..).unwrap_or(token);
    // An ngrok token is two random runs; a timestamped name (`2024…_CreateUsers`) is not.
    if family.label == "ngrok" {
        return body.split('_').all(looks_random);
    }
    // A bare `00…` run is a key only with both letter cases (a hex digest has one).
    let cases = family.label != "okta"
        || (body.chars().any(|c| c.is_ascii_uppercase())
            && body.chars().any(|c| c.is_ascii_lowercase()));
    looks_random(body) && cases
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aws_secret_keys_stand_alone_at_forty_characters() {
        let key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
        assert_eq!(aws_secret_spans(&format!("a,{key}\n")), vec![(2, 42)]);
        // One character more or less, a neighbouring `=`, or a git hash: not a key.
        assert!(aws_secret_spans(&format!("{key}Z")).is_empty());
        assert!(aws_secret_spans(key.get(1..).unwrap_or_default()).is_empty());
        assert!(aws_secret_spans(&format!("{key}=")).is_empty());
        assert!(aws_secret_spans("da39a3ee5e6b4b0d3255bfef95601890afd80709").is_empty());
    }

    #[test]
    fn a_common_prefix_needs_a_random_body() {
        let openai = FAMILIES.iter().find(|f| f.label == "openai");
        let openai = openai.map(|f| (f, accept(f, "sk-three-bounce-animation-delay")));
        assert!(matches!(openai, Some((_, false))));
        let Some((family, _)) = openai else { return };
        assert!(accept(family, "sk-proj-Ab3dEf9hIjK1mNoPqR7tUvWx"));
    }
}
