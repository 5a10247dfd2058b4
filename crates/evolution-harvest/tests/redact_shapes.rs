//! Secret redaction through the public API, on the shapes an agent transcript really holds:
//! Read-tool output with line-number arrows, diffs, compact and spaced JSON, URLs, shell
//! commands, provider tokens; and ordinary text that only looks like a secret, which must come
//! out unchanged.

use evolution_harvest::claude_code::ClaudeCodeReader;
use evolution_harvest::redact::{Redactor, is_secret_name};
use evolution_harvest::session::TextPolicy;
use serde_json::json;

fn redact(text: &str) -> String {
    Redactor::default().redact(text).into_owned()
}

/// `text` redacted must no longer hold `secret`, and must say it redacted something.
#[track_caller]
fn assert_gone(text: &str, secret: &str) {
    let out = redact(text);
    assert!(
        !out.contains(secret),
        "{secret:?} survived in {out:?} (from {text:?})"
    );
    assert!(out.contains("[REDACTED:"), "no marker in {out:?}");
}

#[track_caller]
fn assert_unchanged(text: &str) {
    let mut r = Redactor::default();
    let out = r.redact(text).into_owned();
    assert_eq!(out, text, "ordinary text was changed");
    assert_eq!(r.total(), 0, "{:?}", r.counts());
}

#[test]
fn read_tool_lines_with_line_number_arrows_are_redacted() {
    let file = "     1\u{2192}DB_HOST=localhost\n     2\u{2192}DB_PASSWORD=Tr0ub4dor3x\n     \
                3\u{2192}STRIPE_WEBHOOK_SECRET=whk9Hq2LmZp4Xv\n    10\u{2192}API_KEY=\"a1b2 c3;d4\"\n";
    let out = redact(file);
    assert!(out.contains("DB_HOST=localhost"), "{out}");
    for secret in ["Tr0ub4dor3x", "whk9Hq2LmZp4Xv", "a1b2 c3;d4", "c3;d4"] {
        assert!(!out.contains(secret), "{secret} survived in {out}");
    }
    assert_eq!(
        redact("     2\u{2192}DB_PASSWORD=Tr0ub4dor3x"),
        "     2\u{2192}DB_PASSWORD=[REDACTED:env_secret]"
    );
}

#[test]
fn diff_and_patch_lines_are_redacted() {
    let diff = "--- a/.env\n+++ b/.env\n@@ -1,2 +1,2 @@\n-DB_PASSWORD=oldPassw0rd9\n+DB_PASSWORD=newPassw0rd7\n \
                PORT=8080\n";
    let out = redact(diff);
    assert!(
        !out.contains("oldPassw0rd9") && !out.contains("newPassw0rd7"),
        "{out}"
    );
    assert!(
        out.contains("+++ b/.env") && out.contains("PORT=8080"),
        "{out}"
    );
    let patch = "*** Begin Patch\n*** Update File: config/.env\n@@\n-SECRET_TOKEN=abc\n+SECRET_TOKEN=Zq8vN2mK4pR7\n*** End Patch";
    assert_gone(patch, "Zq8vN2mK4pR7");
}

#[test]
fn json_of_every_spacing_is_redacted() {
    assert_gone(r#"{"api_key":"k3yV4lue99"}"#, "k3yV4lue99");
    assert_gone(r#"{"password": "pa ss;w0rd"}"#, "pa ss;w0rd");
    assert_gone("{\n  \"client_secret\": \"Qw3rTy9Uiop\"\n}", "Qw3rTy9Uiop");
    assert_gone(r#"{\"db_password\":\"escapedS3cret\"}"#, "escapedS3cret");
    // A secret-shaped value inside another value is still found.
    assert_gone(r#"{"command":"DB_PASSWORD=hunter2x ./run.sh"}"#, "hunter2x");
}

#[test]
fn lowercase_and_camel_case_passwords_are_redacted() {
    assert_gone("DB_PASSWORD=letmeinplease", "letmeinplease");
    assert_gone(r#"{"password": "swordfish"}"#, "swordfish");
    assert_gone("password: blueSkyDays", "blueSkyDays");
}

#[test]
fn url_query_parameters_are_redacted() {
    let out = redact(
        "GET https://api.example.com/v1/items?api_key=9f8e7d6c5b4a&limit=10&token=Ab12Cd34Ef",
    );
    assert!(
        !out.contains("9f8e7d6c5b4a") && !out.contains("Ab12Cd34Ef"),
        "{out}"
    );
    assert!(out.contains("limit=10"), "{out}");
}

#[test]
fn command_line_passwords_are_redacted() {
    assert_gone("mysql -u root -pS3cretPw -h db", "S3cretPw");
    assert_gone("mysqldump --password=S3cretPw2 app", "S3cretPw2");
    assert_gone("curl -u admin:Pa55word https://x.example.com", "Pa55word");
    assert_gone("sshpass -p 'hunter2pw' ssh deploy@host", "hunter2pw");
    assert_gone("vault login --token hvs1ExAmPl3Tok", "hvs1ExAmPl3Tok");
    assert_gone(
        "docker run -e \"POSTGRES_PASSWORD=s3cr3tPw\" postgres",
        "s3cr3tPw",
    );
    assert_gone("REDIS_URL=redis://:s3cretpw@redis:6379/0", "s3cretpw");
    assert_gone(
        "curl -H 'Authorization: Token 9944b09199c62bcf9418ad846dd0e4bb' x",
        "9944b09199c62bcf9418ad846dd0e4bb",
    );
    assert_gone(
        "curl -H 'Authorization: Basic YWRtaW46cGFzc3dvcmQxMjM=' https://x.example.com",
        "YWRtaW46cGFzc3dvcmQxMjM=",
    );
}

#[test]
fn provider_tokens_are_redacted() {
    let cases = [
        (
            "xapp-1-A0123BCDEF4-5678901234567-0a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d",
            "slack_token",
        ),
        ("npm_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5", "npm_token"),
        ("glpat-Xy9Zk3Lm5Np7Qr1St4Uv", "gitlab_token"),
        ("hf_AbCdEfGhIjKlMnOpQrStUvWxYzAbCdEfGh", "huggingface_token"),
    ];
    for (token, kind) in cases {
        assert_eq!(
            redact(&format!("token {token} here")),
            format!("token [REDACTED:{kind}] here")
        );
    }
}

#[test]
fn aws_secret_access_keys_are_redacted() {
    let csv = "Access key ID,Secret access key\nAKIAIOSFODNN7EXAMPLE,wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n";
    let out = redact(csv);
    assert!(
        !out.contains("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
        "{out}"
    );
    assert!(!out.contains("AKIAIOSFODNN7EXAMPLE"), "{out}");
    assert!(
        out.starts_with("Access key ID,Secret access key\n"),
        "{out}"
    );
}

#[test]
fn a_secret_used_as_a_json_key_is_redacted() {
    let mut value = json!({"ghp_16C7e42F292c6912E7710c838347Ae178B4a": {"scopes": ["repo"]}});
    let mut r = Redactor::default();
    r.redact_json(&mut value);
    let text = value.to_string();
    assert!(!text.contains("ghp_16C7"), "{text}");
    assert!(text.contains("[REDACTED:github_token]"), "{text}");
    assert_gone(
        r#"{"ghp_16C7e42F292c6912E7710c838347Ae178B4a":true}"#,
        "ghp_16C7e42F292c6912E7710c838347Ae178B4a",
    );
}

#[test]
fn tool_input_values_under_secret_keys_are_redacted() {
    let mut value = json!({"url": "https://db", "password": "plainword", "nested": {"apiKey": "Zz9Yy8Xx7Ww6"}, "limit": 5});
    let mut r = Redactor::default();
    r.redact_json(&mut value);
    assert_eq!(value["password"], "[REDACTED:env_secret]");
    assert_eq!(value["nested"]["apiKey"], "[REDACTED:env_secret]");
    assert_eq!(value["url"], "https://db");
    assert_eq!(value["limit"], 5);

    // The same through a harvested Claude Code session.
    let mut reader = ClaudeCodeReader::new("s1", TextPolicy::default());
    let line = r#"{"type":"assistant","message":{"id":"m1","content":[{"type":"tool_use","id":"t1","name":"mcp__db__connect","input":{"host":"db","password":"plainword"}}]}}"#;
    reader.push_line(1, line).unwrap();
    let (session, _) = reader.finish();
    let input = &session.tool_calls[0].input;
    assert_eq!(input["password"], "[REDACTED:env_secret]");
    assert_eq!(input["host"], "db");
}

#[test]
fn look_alikes_are_left_alone() {
    for text in [
        "token_count: 1234",
        "TOKEN_EXPIRY=3600",
        "PWD=/home/user/project",
        "secretName: tls-cert",
        "token_url: https://auth.example.com/oauth/token",
        "use Bearer authentication for the API",
        ".sk-three-bounce-animation-delay { animation-delay: -0.16s; }",
        "Password: Required",
        "secret_santa: Alice",
        "auth_token_ttl = 3600",
    ] {
        assert_unchanged(text);
    }
}

#[test]
fn secret_names_say_which_values_are_metadata() {
    assert!(is_secret_name("DB_PASSWORD"));
    assert!(is_secret_name("authtoken"));
    assert!(!is_secret_name("token_count"));
    assert!(!is_secret_name("TOKEN_EXPIRY"));
    assert!(!is_secret_name("secretName"));
    assert!(!is_secret_name("token_url"));
}

#[test]
fn redaction_is_idempotent_on_every_shape() {
    let text = "     1\u{2192}API_KEY=Zq8vN2mK4pR7\n{\"password\":\"pa ss;w0rd\"}\nmysql -pS3cretPw\n\
                curl -u a:Pa55word x\nAuthorization: Basic YWRtaW46cGFzc3dvcmQxMjM=\n\
                ?token=Ab12Cd34Ef&x=1\nnpm_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5";
    let once = redact(text);
    let mut r = Redactor::default();
    let twice = r.redact(&once).into_owned();
    assert_eq!(once, twice);
    assert_eq!(r.total(), 0, "{:?}", r.counts());
}

#[test]
fn adversarial_input_is_handled_without_panic() {
    // Long runs of near-matches: each must be handled (the regex engine is linear; the rest
    // of the scan resumes past each candidate).
    let mut text = String::new();
    for _ in 0..20_000 {
        text.push_str("token=");
    }
    text.push_str("\n\"password\":\"");
    text.push_str(&"\\".repeat(50_000));
    text.push_str(&"a=b?token=https://x?token=".repeat(5_000));
    text.push_str(&"-----BEGIN RSA PRIVATE KEY-----".repeat(100));
    let out = redact(&text);
    assert_eq!(redact(&out), out);
}

#[test]
fn passwords_given_by_position_cookie_or_other_tools_files_are_redacted() {
    let cases = [
        ("sqlplus system/Qx7pLm2Zr9@//db:1521/ORCL", "Qx7pLm2Zr9"),
        (
            "url = \"jdbc:oracle:thin:scott/Qx7pLm2Zr9@db01:1521/ORCL\"",
            "Qx7pLm2Zr9",
        ),
        (
            "resp = requests.get(url, auth=(\"ci\", \"Qx7pL!m2Zr9\"))",
            "Qx7pL!m2Zr9",
        ),
        (
            "server.login(\"a@example.com\", \"Qx7pL!m2Zr9\")",
            "Qx7pL!m2Zr9",
        ),
        ("net user backup Qx7pLm2Zr9 /add", "Qx7pLm2Zr9"),
        ("\"vpnuser\" * \"Qx7pLm2Zr9\" *", "Qx7pLm2Zr9"),
        ("smtp.example.com ops@example.com:Qx7pLm2Zr9", "Qx7pLm2Zr9"),
        ("    stats auth admin:Qx7pLm2Zr9", "Qx7pLm2Zr9"),
        (
            "ipmitool -I lanplus -H 10.0.0.9 -U ADMIN -P Qx7pLm2Zr9 power status",
            "Qx7pLm2Zr9",
        ),
        (
            "$pw = ConvertTo-SecureString 'Qx7pLm2Zr9' -AsPlainText -Force",
            "Qx7pLm2Zr9",
        ),
        ("network={\n\tpsk=\"Qx7pLm2Zr9\"\n}", "Qx7pLm2Zr9"),
        ("DB_PASS ?= Qx7pLm2Zr9", "Qx7pLm2Zr9"),
        (
            "< Set-Cookie: session=LRpofi0kswvfgOXQB0gq8jNX6X9i5PKG; Path=/",
            "LRpofi0kswvfgOXQB0gq8jNX6X9i5PKG",
        ),
        ("das Passwort lautet Qx7pLm2Zr9", "Qx7pLm2Zr9"),
        ("use Qx7pLm2Zr9 to log in as root", "Qx7pLm2Zr9"),
        ("creds for the box are admin / Qx7pLm2Zr9", "Qx7pLm2Zr9"),
        (
            "vault write auth/approle/login role_id=x secret_id=84163e02-2b2c-4b61-ab20-3bd31112b7d8",
            "84163e02-2b2c-4b61-ab20-3bd31112b7d8",
        ),
        (
            "PuTTY-User-Key-File-3: ssh-ed25519\nPrivate-Lines: 1\nAAAAIFq3Zr9Qx7pLm2Zr9Qx7pLm2\nPrivate-MAC: 0a1b",
            "AAAAIFq3Zr9Qx7pLm2Zr9Qx7pLm2",
        ),
        (
            "-----BEGIN OpenVPN Static key V1-----\n0f9e8d7c6b5a49382716a5b4c3d2e1f0\n-----END OpenVPN Static key V1-----",
            "0f9e8d7c6b5a49382716a5b4c3d2e1f0",
        ),
        (
            "SONAR_TOKEN squ_0123456789abcdef0123456789abcdef01234567",
            "squ_0123456789abcdef0123456789abcdef01234567",
        ),
    ];
    for (text, secret) in cases {
        assert_gone(text, secret);
    }
    for text in [
        "net user bob /delete",
        "use the staging box to log in",
        "Cookie: theme=dark; lang=en",
        "sqlplus -s /nolog @setup.sql",
        "requests.get(url, auth=(user, password))",
    ] {
        assert_unchanged(text);
    }
}

#[test]
fn prose_that_only_mentions_passing_keeps_its_words() {
    for text in [
        "can you get the test suite to pass on GitHub Actions",
        "make the build pass on Windows too",
        "the key on Keychain Access is fine",
    ] {
        assert_unchanged(text);
    }
    // Finnish puts "on" where English puts "is".
    assert_gone("salasana on Kq8vR2mZt9", "Kq8vR2mZt9");
}

#[test]
fn passwords_in_prose_of_many_languages_are_removed() {
    let pw = "Qv7!rTz2Lm";
    for sentence in [
        "la password è {} per il database",
        "hasło to {} do bazy",
        "пароль: {}",
        "Пароль от сервера — {}",
        "密码是 {}",
        "数据库密码：{}",
        "パスワードは {} です",
        "비밀번호는 {} 입니다",
        "şifre: {}",
        "lösenordet är {} till servern",
        "heslo je {} na server",
        "mật khẩu là {} nhé",
        "كلمة المرور هي {}",
        "पासवर्ड है {}",
        "kata sandinya adalah {} ya",
        "ο κωδικός είναι {}",
        "a jelszó: {}",
        "adgangskoden er {}",
        "passordet er {}",
        "parola este {}",
        "סיסמה: {}",
        "pw for the router is {} btw",
    ] {
        assert_gone(&sentence.replace("{}", pw), pw);
    }
    for plain in [
        "パスワードは環境変数から読み込みます",
        "密码保存在密钥管理服务中",
        "la parola è bella",
        "das Passwort steht im Passwortmanager",
        "password: hashedPassword,",
        "vault kv get -field=password secret/app",
    ] {
        assert_unchanged(plain);
    }
}

#[test]
fn passwords_and_keys_given_to_more_commands_are_removed() {
    let pw = "Qv7rTz2Lm9x";
    for command in [
        "cqlsh db-0 -u cassandra -p {}",
        "twine upload -u ci -p {} dist/*",
        "helm registry login registry.corp -u ci -p {}",
        "openssl genrsa -aes256 -passout pass:{} -out k.pem 4096",
        "openssl rsa -in a.key -passin 'pass:{}' -out b.key",
        "openssl enc -aes-256-cbc -in a -out a.enc -k {}",
        "skopeo copy --src-creds mirror:{} docker://a docker://b",
        "java -jar jenkins-cli.jar -s https://ci -auth admin:{} build x",
        "poetry config http-basic.corp ci {}",
        "composer config --global http-basic.repo.corp ci {}",
        "redis-cli -h cache AUTH default {}",
        "aws configure set aws_secret_access_key {} --profile prod",
        "setenv SMTP_PASSWORD {}",
        "set -gx DB_PASSWORD {}",
        "helm install pg bitnami/postgresql --set auth.postgresPassword=a.{}",
        "echo '{}' > .vault_pass",
        "AZURE_DEVOPS_EXT_PAT={}",
        "PASSCODE={}",
        "DRIVER={{SQL}};UID=u;PWD={{{}}};",
    ] {
        assert_gone(&command.replace("{}", pw), pw);
    }
    let key = "Xw3Rt9Lm2Qp8Zk5Vb7Nc4Hd6";
    for command in [
        "nuget setapikey {} -Source https://api.nuget.org/v3/index.json",
        "dotnet nuget push p.nupkg -k {} -s https://api.nuget.org/v3/index.json",
        "ngrok config add-authtoken {}",
    ] {
        assert_gone(&command.replace("{}", key), key);
    }
    // A port after `-u`, MySQL's prompted password, a Secret object's name: nothing to remove.
    for plain in [
        "docker run -u 1000 -p 8080:80 nginx",
        "mysql -h db -P 3306 -u root -p app",
        "helm install pg bitnami/postgresql --set auth.existingSecret=pg-auth",
        "export OPENAI_API_KEY=your-api-key-here",
        "Key: uploads/2024/06/invoice-1042.pdf",
    ] {
        assert_unchanged(plain);
    }
}

#[test]
fn signatures_webhooks_and_ssh2_keys_are_removed() {
    let sig = "Zk3Lm9Qp2Rt8Xw5Vb7Nc4Hd6Jf1Gs0";
    for url in [
        "https://storage.googleapis.com/b/o?GoogleAccessId=a&Expires=1&Signature={}",
        "https://d1.cloudfront.net/v.m3u8?Expires=1&Signature={}&Key-Pair-Id=K2",
        "https://contoso.webhook.office.com/webhookb2/x@y/IncomingWebhook/{}/z",
        "https://chat.corp.example/hooks/{}",
    ] {
        assert_gone(&url.replace("{}", sig), sig);
    }
    let body = "AAAAB3NzaC1yc2EAAAADAQABAAABAQC7vbqajDhA4sd1Zk3Lm9Qp2Rt8Xw5Vb7";
    let block = format!(
        "---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----\nComment: \"k\"\n{body}\n---- END SSH2 ENCRYPTED PRIVATE KEY ----"
    );
    assert_gone(&block, body);
    // The body of a public key block is not a key to redact.
    assert_unchanged(
        "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEQMkCRa7D+/1eFIQr/UTY3ZlNkHg\n-----END PUBLIC KEY-----",
    );
    assert_unchanged("src/hooks/useLocalStorage.ts");
}

#[test]
fn passwords_before_their_name_on_the_next_line_or_in_scripts_are_removed() {
    let pw = "Qv7!rTz2Lm";
    for text in [
        "{} is the admin password for the staging box",
        "here are the creds\nuser: admin\npass:\n{}\n",
        "ftp -n ftp.corp <<EOF\nuser upload {}\nput f\nEOF",
        "ssh-keygen -p -P Old1pass -N {} -f key",
    ] {
        assert_gone(&text.replace("{}", pw), pw);
    }
    // A weak default is still the password the field holds.
    assert_gone("ADMIN_PASSWORD=changeme\n", "changeme");
    let key = "sk_test_Xw3Rt9Lm2Qp8Zk5Vb7Nc4Hd6";
    assert_gone(
        &format!("stripe customers list --api-key {key}-tail9Xw3Rt"),
        "tail9Xw3Rt",
    );
    for plain in [
        "This is the password field of the form",
        "Below is the password policy",
        "user admin\n",
        "pass:\nnext step is to deploy\n",
    ] {
        assert_unchanged(plain);
    }
}
