//! The fifth held-out set's private keys (every PEM label, OpenSSH, PGP, SSH2, and the same
//! keys inside JSON strings, YAML block scalars, diffs, numbered Read-tool lines and base64
//! wrappers), signed storage URLs, chat webhooks, high-entropy values beside secret-like
//! names, and values that start with or hold punctuation.

use crate::fifth_gen::{at, b64_body, password};
use crate::secrets::{ALNUM, B64, B64URL, Case, DIGITS, HEX, Rng, base64, mixed};

/// A PEM body of `lines` full lines of 64 base64 characters and a shorter last one.
fn pem_body(r: &mut Rng, lines: usize) -> Vec<String> {
    let mut out: Vec<String> = (0..lines).map(|_| r.from(B64, 64)).collect();
    let n = 20 + r.below(40);
    out.push(b64_body(r, n));
    out
}

fn private_keys(r: &mut Rng) -> Vec<Case> {
    let mut out = Vec::new();
    let labels = [
        ("rsa pkcs1", "RSA PRIVATE KEY", 12),
        ("pkcs8", "PRIVATE KEY", 10),
        ("pkcs8 encrypted", "ENCRYPTED PRIVATE KEY", 11),
        ("ec", "EC PRIVATE KEY", 3),
        ("dsa", "DSA PRIVATE KEY", 10),
        ("openssh", "OPENSSH PRIVATE KEY", 6),
        ("pgp", "PGP PRIVATE KEY BLOCK", 14),
    ];
    for (i, (family, label, lines)) in labels.iter().enumerate() {
        let body = pem_body(r, *lines);
        let joined = body.join("\n");
        let block = format!("-----BEGIN {label}-----\n{joined}\n-----END {label}-----");
        let text = match i % 3 {
            0 => format!("$ cat ~/.ssh/deploy_key\n{block}\n$ "),
            1 => format!("Here is the key file:\n\n```\n{block}\n```\n"),
            _ => format!("{block}\n"),
        };
        out.push(at(family, "pem block", text, &joined));
    }
    // RSA with the legacy encryption headers.
    let body = pem_body(r, 12);
    let joined = body.join("\n");
    out.push(at(
        "rsa legacy encrypted",
        "pem block with headers",
        format!(
            "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,{}\n\n{joined}\n-----END RSA PRIVATE KEY-----",
            r.from(&HEX.to_uppercase(), 32)
        ),
        &joined,
    ));
    // The SSH2 (RFC 4716) private key of commercial SSH tools.
    let body = pem_body(r, 8);
    let joined = body.join("\n");
    out.push(at(
        "ssh2",
        "ssh.com block",
        format!(
            "---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----\nComment: \"rsa-key-20240101\"\n{joined}\n---- END SSH2 ENCRYPTED PRIVATE KEY ----"
        ),
        &joined,
    ));
    // A short Ed25519 PKCS#8 key.
    let v = format!("MC4CAQAwBQYDK2VwBCIEI{}", b64_body(r, 43));
    out.push(at(
        "ed25519 pkcs8",
        "pem block",
        format!("-----BEGIN PRIVATE KEY-----\n{v}\n-----END PRIVATE KEY-----"),
        &v,
    ));
    // A service-account key inside a JSON string, newlines escaped.
    let body = pem_body(r, 10);
    let escaped = body.join("\\n");
    out.push(at(
        "pkcs8 in json",
        "service account file",
        format!(
            "{{\n  \"type\": \"service_account\",\n  \"project_id\": \"shop-prod\",\n  \"private_key_id\": \"{}\",\n  \"private_key\": \"-----BEGIN PRIVATE KEY-----\\n{escaped}\\n-----END PRIVATE KEY-----\\n\",\n  \"client_email\": \"deploy@shop-prod.iam.gserviceaccount.com\"\n}}",
            r.from(HEX, 40)
        ),
        &escaped,
    ));
    // The same in an env variable on one line.
    let body = pem_body(r, 6);
    let escaped = body.join("\\n");
    out.push(at(
        "pkcs8 in env",
        "one line with \\n",
        format!(
            "PRIVATE_KEY=\"-----BEGIN PRIVATE KEY-----\\n{escaped}\\n-----END PRIVATE KEY-----\""
        ),
        &escaped,
    ));
    // In a YAML block scalar, indented.
    let body = pem_body(r, 8);
    let indented = body.join("\n    ");
    out.push(at(
        "rsa in yaml",
        "block scalar",
        format!(
            "tls:\n  key: |\n    -----BEGIN RSA PRIVATE KEY-----\n    {indented}\n    -----END RSA PRIVATE KEY-----\n  cert: ./tls.crt\n"
        ),
        &indented,
    ));
    // In a diff.
    let body = pem_body(r, 5);
    let plus = body.join("\n+");
    out.push(at(
        "ec in diff",
        "added lines",
        format!(
            "diff --git a/certs/server.key b/certs/server.key\nnew file mode 100644\n--- /dev/null\n+++ b/certs/server.key\n@@ -0,0 +1,7 @@\n+-----BEGIN EC PRIVATE KEY-----\n+{plus}\n+-----END EC PRIVATE KEY-----\n"
        ),
        &plus,
    ));
    // In numbered Read-tool lines.
    let body = pem_body(r, 6);
    let mut numbered = String::from("     1→-----BEGIN OPENSSH PRIVATE KEY-----\n");
    for (n, line) in body.iter().enumerate() {
        numbered.push_str(&format!("{:>6}→{line}\n", n + 2));
    }
    numbered.push_str(&format!(
        "{:>6}→-----END OPENSSH PRIVATE KEY-----\n",
        body.len() + 2
    ));
    let secret = body.join("");
    // Each line is at least 20 characters; checking every line's survival is what `secret`
    // cannot express, so the case plants the longest line as the secret.
    let longest = body.first().cloned().unwrap_or(secret);
    out.push(at(
        "openssh in read lines",
        "numbered lines",
        numbered,
        &longest,
    ));
    // A Kubernetes TLS secret holding the PEM in base64.
    let pem = format!(
        "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
        pem_body(r, 6).join("\n")
    );
    let v = base64(pem.as_bytes());
    out.push(at(
        "pem in base64",
        "kubernetes tls secret",
        format!("type: kubernetes.io/tls\ndata:\n  tls.crt: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t\n  tls.key: {v}\n"),
        &v,
    ));
    out
}

fn signed_urls(r: &mut Rng) -> Vec<Case> {
    let mut out = Vec::new();
    let sig = format!(
        "{}%3D",
        r.from(B64URL, 43).replace('-', "%2B").replace('_', "%2F")
    );
    out.push(at(
        "azure sas",
        "blob url",
        format!(
            "https://shopassets.blob.core.windows.net/exports/report.csv?sv=2022-11-02&ss=b&srt=sco&sp=rl&se=2026-12-31T23:59:59Z&st=2026-01-01T00:00:00Z&spr=https&sig={sig}"
        ),
        &sig,
    ));
    let sig = format!("{}%3D", r.from(ALNUM, 43));
    out.push(at(
        "azure sas",
        "--sas-token flag",
        format!("az storage blob list -c logs --account-name logs01 --sas-token \"sp=racwdl&st=2026-03-01T09:00:00Z&se=2026-03-02T09:00:00Z&spr=https&sv=2022-11-02&sr=c&sig={sig}\""),
        &sig,
    ));
    let sig = r.from(HEX, 64);
    out.push(at(
        "aws presigned",
        "s3 url",
        format!(
            "https://bucket.s3.eu-west-1.amazonaws.com/a.zip?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAEXAMPLEID%2F20260101%2Feu-west-1%2Fs3%2Faws4_request&X-Amz-Date=20260101T000000Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host&X-Amz-Signature={sig}"
        ),
        &sig,
    ));
    let token = format!("IQoJb3JpZ2luX2Vj{}", mixed(r, B64URL, 200));
    out.push(at(
        "aws presigned",
        "security token in url",
        format!(
            "https://b.s3.amazonaws.com/k?X-Amz-Security-Token={token}&X-Amz-Signature={}",
            r.from(HEX, 64)
        ),
        &token,
    ));
    let sig = r.from(HEX, 512);
    out.push(at(
        "gcs signed",
        "v4 url",
        format!(
            "https://storage.googleapis.com/media/v.mp4?X-Goog-Algorithm=GOOG4-RSA-SHA256&X-Goog-Credential=signer%40proj.iam.gserviceaccount.com%2F20260101%2Fauto%2Fstorage%2Fgoog4_request&X-Goog-Date=20260101T000000Z&X-Goog-Expires=900&X-Goog-SignedHeaders=host&X-Goog-Signature={sig}"
        ),
        &sig,
    ));
    let sig = format!("{}%3D%3D", r.from(ALNUM, 170));
    out.push(at(
        "gcs signed",
        "v2 url",
        format!("https://storage.googleapis.com/b/o.pdf?GoogleAccessId=s%40p.iam.gserviceaccount.com&Expires=1767225600&Signature={sig}"),
        &sig,
    ));
    let sig = mixed(
        r,
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-~",
        172,
    );
    out.push(at(
        "cloudfront signed",
        "url",
        format!("https://d111111abcdef8.cloudfront.net/video.m3u8?Expires=1767225600&Signature={sig}&Key-Pair-Id=K2JCJMDEHXQW5F"),
        &sig,
    ));
    let sig = format!("{}%3D", r.from(ALNUM, 27));
    out.push(at(
        "alibaba oss signed",
        "url",
        format!("https://b.oss-cn-hangzhou.aliyuncs.com/f.txt?OSSAccessKeyId=LTAI5t{}&Expires=1767225600&Signature={sig}", r.from(ALNUM, 18)),
        &sig,
    ));
    out
}

fn webhooks(r: &mut Rng) -> Vec<Case> {
    let mut out = Vec::new();
    let v = mixed(r, ALNUM, 24);
    out.push(at(
        "slack webhook",
        "url",
        format!(
            "SLACK_WEBHOOK_URL=https://hooks.slack.com/services/T0{}/B0{}/{v}",
            r.from(&ALNUM.to_uppercase(), 8),
            r.from(&ALNUM.to_uppercase(), 9)
        ),
        &v,
    ));
    let v = mixed(r, B64URL, 68);
    out.push(at("discord webhook", "url", format!("curl -X POST -H 'Content-Type: application/json' -d '{{\"content\":\"deploy done\"}}' https://discord.com/api/webhooks/{}/{v}", r.from(DIGITS, 19)), &v));
    let v = r.from(HEX, 32);
    out.push(at(
        "teams webhook",
        "url",
        format!(
            "https://contoso.webhook.office.com/webhookb2/{}@{}/IncomingWebhook/{v}/{}/V2{}",
            uuid(r),
            uuid(r),
            uuid(r),
            mixed(r, B64URL, 40)
        ),
        &v,
    ));
    let v = mixed(r, B64URL, 43);
    out.push(at(
        "google chat webhook",
        "url",
        format!(
            "https://chat.googleapis.com/v1/spaces/AAAA{}/messages?key=AIza{}&token={v}",
            mixed(r, B64URL, 7),
            mixed(r, B64URL, 35)
        ),
        &v,
    ));
    let v = r.from("abcdefghijklmnopqrstuvwxyz0123456789", 26);
    out.push(at(
        "mattermost webhook",
        "url",
        format!("webhook: https://chat.corp.example/hooks/{v}"),
        &v,
    ));
    let v = r.from(HEX, 64);
    out.push(at(
        "dingtalk webhook",
        "url",
        format!("https://oapi.dingtalk.com/robot/send?access_token={v}"),
        &v,
    ));
    let v = uuid(r);
    out.push(at(
        "feishu webhook",
        "url",
        format!("https://open.feishu.cn/open-apis/bot/v2/hook/{v}"),
        &v,
    ));
    let v = uuid(r);
    out.push(at(
        "wecom webhook",
        "url",
        format!("https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key={v}"),
        &v,
    ));
    out
}

fn uuid(r: &mut Rng) -> String {
    format!(
        "{}-{}-4{}-{}{}-{}",
        r.from(HEX, 8),
        r.from(HEX, 4),
        r.from(HEX, 3),
        r.pick(&["8", "9", "a", "b"]),
        r.from(HEX, 3),
        r.from(HEX, 12)
    )
}

/// High-entropy values beside names that say they are secret, in many spellings.
fn beside_names(r: &mut Rng) -> Vec<Case> {
    let names = [
        "secret",
        "token",
        "key",
        "credential",
        "credentials",
        "auth",
        "passphrase",
        "signingSecret",
        "encryption-key",
        "hmacKey",
        "JWT_SECRET",
        "cookie_secret",
        "master_key",
        "private_token",
        "accessKey",
        "apiSecret",
        "x-api-key",
        "authKey",
        "pwd",
        "passwd",
        "pass",
        "PASSCODE",
        "client-secret",
        "webhook_secret",
        "refreshToken",
        "id_token",
        "session-key",
        "app.secret",
        "db.pass",
        "ApiKey",
        "AUTH_TOKEN",
        "bot_token",
        "consumer_secret",
        "shared_key",
        "psk",
    ];
    let mut out = Vec::new();
    for (i, name) in names.iter().enumerate() {
        let v = match i % 4 {
            0 => mixed(r, ALNUM, 32),
            1 => r.from(HEX, 48),
            2 => b64_body(r, 44),
            _ => mixed(r, B64URL, 36),
        };
        let text = match i % 7 {
            0 => format!("{name}={v}"),
            1 => format!("{name}: {v}"),
            2 => format!("\"{name}\": \"{v}\""),
            3 => format!("--{name} {v}"),
            4 => format!("{name} = '{v}'"),
            5 => format!("<{name}>{v}</{name}>"),
            _ => format!("{name} := \"{v}\""),
        };
        out.push(at("entropy beside name", "name-value", text, &v));
    }
    out
}

/// Values that start with, or hold, a character a rule may stop at.
fn punctuated(r: &mut Rng) -> Vec<Case> {
    let mut out = Vec::new();
    let starts = [
        '/', '~', '-', '*', '$', '%', '@', '<', '{', '#', '!', '&', '=', '(',
    ];
    for (i, c) in starts.iter().enumerate() {
        let v = format!("{c}{}{}", mixed(r, ALNUM, 8), r.from("!#%*+-.=?@^_~", 1))
            + &mixed(r, ALNUM, 4);
        let text = match i % 6 {
            0 => format!("DB_PASSWORD={v}"),
            1 => format!("password: \"{v}\""),
            2 => format!("{{\"password\": \"{v}\"}}"),
            3 => format!("mysql -u root --password='{v}' shop"),
            4 => format!(
                "<password>{}</password>",
                v.replace('<', "&lt;").replace('&', "&amp;")
            ),
            _ => format!("admin_pass = '{v}'"),
        };
        let secret = if i % 6 == 4 {
            v.replace('<', "&lt;").replace('&', "&amp;")
        } else {
            v
        };
        out.push(at("punctuated start", "first character", text, &secret));
    }
    for inner in ['&', ';', '(', ')', ' ', ',', '#', '"'] {
        let v = format!("{}{inner}{}", mixed(r, ALNUM, 7), mixed(r, ALNUM, 7));
        let text = match inner {
            '"' => format!("password = '{v}'"),
            ' ' => format!("password: \"{v}\""),
            _ => format!("SMTP_PASSWORD='{v}'"),
        };
        out.push(at("punctuated inside", "inner character", text, &v));
    }
    let v = format!("{}&{}", mixed(r, ALNUM, 6), mixed(r, ALNUM, 8));
    out.push(at(
        "punctuated inside",
        "url-encoded form",
        format!(
            "grant_type=password&username=ops&password={}&client_id=cli",
            v.replace('&', "%26")
        ),
        &v.replace('&', "%26"),
    ));
    let v = format!("{};{}", mixed(r, ALNUM, 6), mixed(r, ALNUM, 8));
    out.push(at(
        "punctuated inside",
        "yaml unquoted",
        format!("password: {v}\n"),
        &v,
    ));
    let v = format!("({})!{}", mixed(r, ALNUM, 5), mixed(r, ALNUM, 6));
    out.push(at(
        "punctuated inside",
        "env unquoted",
        format!("ADMIN_PASSWORD={v}"),
        &v,
    ));
    let v = password(r);
    out.push(at(
        "punctuated inside",
        "sentence end",
        format!("Set the root password to {v}."),
        &v,
    ));
    out
}

/// The key, URL, webhook and name-value part of the set.
pub(crate) fn key_cases(r: &mut Rng) -> Vec<Case> {
    let mut out = private_keys(r);
    out.extend(signed_urls(r));
    out.extend(webhooks(r));
    out.extend(beside_names(r));
    out.extend(punctuated(r));
    out
}
