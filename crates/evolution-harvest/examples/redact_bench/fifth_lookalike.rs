//! The fifth held-out set's look-alikes, written with it: text that redaction must leave
//! alone although it looks like a secret or names one. Hashes and digests of every tool,
//! UUIDs and other identifiers, base64 images and fonts, lockfile integrity lines, version
//! strings, public keys and certificates, placeholders (`<password>`, `${VAR}`,
//! `{{ var }}`, `%(var)s`, masks, `YOUR_API_KEY`), names of files and variables that hold a
//! secret, code that passes a secret by name, and sentences about passwords that give none.

use crate::fifth_gen::LOWER_DIGIT;
use crate::secrets::{ALNUM, B64, B64URL, DIGITS, HEX, Rng, mixed};

/// Lines written by hand: placeholders, names, code and prose.
const WRITTEN: [&str; 116] = [
    "password: <password>",
    "PASSWORD=<your-password>",
    "api_key: YOUR_API_KEY",
    "export OPENAI_API_KEY=your-api-key-here",
    "token: ${GITHUB_TOKEN}",
    "password: \"{{ vault_db_password }}\"",
    "password = %(DB_PASS)s",
    "password: ${{ secrets.DB_PASSWORD }}",
    "PGPASSWORD=$DB_PASSWORD psql -h db",
    "DB_PASSWORD=${DB_PASSWORD:-}",
    "password: ********",
    "token=xxxxxxxxxxxxxxxxxxxx",
    "password: REDACTED",
    "\"password\": null",
    "\"password\": \"\"",
    "password=",
    "api_key = os.environ[\"API_KEY\"]",
    "const apiKey = process.env.API_KEY;",
    "password = getpass.getpass(\"Password: \")",
    "token = request.headers.get(\"Authorization\")",
    "let secret = client.get_secret(\"db-password\").await?;",
    "api_key=settings.OPENAI_API_KEY,",
    "password: hashedPassword,",
    "self.password = password",
    "if password == confirm_password:",
    "def check_password(self, raw_password):",
    "password_hash = bcrypt.hashpw(password.encode(), bcrypt.gensalt())",
    "const { token } = await login(user, password);",
    "fn verify(token: &str, key: &DecodingKey) -> Result<Claims, Error> {",
    "    secret: secret.clone(),",
    "let key = event.key;",
    "for key, value in config.items():",
    "password_min_length = 12",
    "PASSWORD_RESET_TIMEOUT=3600",
    "max_tokens: 4096",
    "token_count=1523",
    "keyboard_layout=us",
    "primary_key: id",
    "sort_key: created_at",
    "secretName: postgres-credentials",
    "secretKeyRef:\n  name: db\n  key: password",
    "passwordFile: /run/secrets/db_password",
    "password_file = /etc/app/db.pass",
    "echo \"$TOKEN\" | docker login ghcr.io -u ci --password-stdin",
    "openssl req -new -key server.key -passout env:KEY_PASS -out server.csr",
    "openssl pkcs12 -in c.p12 -passin file:pass.txt -nodes",
    "PGPASSFILE=~/.pgpass",
    "token_endpoint: https://oauth2.googleapis.com/token",
    "auth_uri: https://accounts.google.com/o/oauth2/auth",
    "key_id: 2",
    "key_algorithm: RSA_2048",
    "api_version: 2023-10-01",
    "secret: false",
    "password_required: true",
    "passwordless: yes",
    "authentication: scram-sha-256",
    "host    all    all    10.0.0.0/8    scram-sha-256",
    "keyserver: hkps://keys.openpgp.org",
    "token_type: Bearer",
    "\"expires_in\": 3600,",
    "Reset your password via the link we emailed you.",
    "The token expired, so I asked for a new one.",
    "Set DB_PASSWORD in your environment before running the tests.",
    "Passwords must be at least 12 characters long.",
    "Enter your password:",
    "Wrong password, try again.",
    "The API key lives in the vault under kv/app/api-key.",
    "le mot de passe est stocké dans le coffre-fort",
    "das Passwort steht im Passwortmanager",
    "密码保存在密钥管理服务中",
    "パスワードは環境変数から読み込みます",
    "la contraseña se guarda en el gestor de secretos",
    "Run `gh auth login` and paste your token when asked.",
    "kubectl get secret db -o jsonpath='{.data.password}' | base64 -d",
    "kubectl create secret generic db --from-file=password=./db-pass.txt",
    "docker login -u ci --password-stdin < token.txt",
    "mysql -u root -p shop",
    "mysql --login-path=backup shop",
    "ssh-keygen -t ed25519 -C \"me@laptop\" -f ~/.ssh/id_ed25519",
    "gcloud auth activate-service-account --key-file=sa.json",
    "aws configure --profile prod",
    "az login --identity",
    "vault kv get -field=password secret/app",
    "helm install pg bitnami/postgresql --set auth.existingSecret=pg-auth",
    "NAME          TYPE                                  DATA   AGE\ndb-creds      Opaque                                3      5d",
    "key: ${{ runner.os }}-cargo-${{ hashFiles('**/Cargo.lock') }}",
    "restore-keys: |\n  ${{ runner.os }}-cargo-",
    "Key: uploads/2024/06/invoice-1042.pdf",
    "\"token\": \"<redacted>\"",
    "Authorization: Bearer <token>",
    "Authorization: Bearer $TOKEN",
    "curl -H \"Authorization: Bearer ${API_TOKEN}\" https://api.example.com",
    "git clone https://${GITLAB_USER}:${GITLAB_TOKEN}@gitlab.com/a/b.git",
    "postgres://app@db:5432/app",
    "redis://localhost:6379/0",
    "https://example.com/login?next=/dashboard&lang=en",
    "jdbc:postgresql://db:5432/app?ssl=true&sslmode=verify-full",
    "Server=sql01;Database=Shop;Integrated Security=True;",
    "sk_test_xxxxxxxxxxxxxxxxxxxxxxxx",
    "ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    "rustc 1.83.0 (90b35a623 2024-11-26)",
    "Python 3.12.1",
    "node v20.11.0",
    "version = \"2.0.0-rc.1+build.20240101\"",
    "color: #3a7bd5;",
    "fe80::1ff:fe23:4567:890a",
    "mac 3c:22:fb:7a:11:0e",
    "arn:aws:iam::123456789012:role/Deploy",
    "resourceVersion: \"184467\"",
    "Content-Type: application/x-www-form-urlencoded",
    "@acme/ui@3.14.2",
    "github.com/spf13/cobra v1.8.0 h1:7aJaZx1B85qltLMc546zn58BxxfZdR/W22ej9CFoEf0=",
    "the password field is hidden behind an eye icon",
    "token bucket refills at 10 tokens per second",
    "The secret to good bread is time.",
    "Use `--password` to prompt for it interactively.",
];

/// Lines with generated hashes, identifiers and encoded data.
fn generated(r: &mut Rng) -> Vec<String> {
    let mut out = Vec::new();
    for _ in 0..4 {
        out.push(format!(
            "commit {}\nAuthor: Ann <ann@example.com>",
            r.from(HEX, 40)
        ));
        out.push(format!("{} fix: handle empty input", r.from(HEX, 7)));
        out.push(format!(
            "   {}..{}  main -> main",
            r.from(HEX, 7),
            r.from(HEX, 7)
        ));
        out.push(format!("{}  dist/app-1.4.2.tar.gz", r.from(HEX, 64)));
        out.push(format!(
            "image: ghcr.io/acme/api@sha256:{}",
            r.from(HEX, 64)
        ));
        out.push(format!("Digest: sha256:{}", r.from(HEX, 64)));
        out.push(format!("\"integrity\": \"sha512-{}==\"", r.from(B64, 86)));
        out.push(format!("checksum = \"{}\"", r.from(HEX, 64)));
        out.push(format!("golang.org/x/sys v0.21.0 h1:{}=", r.from(B64, 43)));
        out.push(format!(
            "requests==2.32.3 --hash=sha256:{}",
            r.from(HEX, 64)
        ));
        out.push(format!(
            "{{file = \"idna-3.7.tar.gz\", hash = \"sha256:{}\"}}",
            r.from(HEX, 64)
        ));
        out.push(format!("\"narHash\": \"sha256-{}=\",", r.from(B64, 43)));
        out.push(format!("\"rev\": \"{}\",", r.from(HEX, 40)));
        out.push(format!("\"reference\": \"{}\",", r.from(HEX, 40)));
        out.push(format!(
            "  resolution: {{integrity: sha512-{}==}}",
            r.from(B64, 86)
        ));
        out.push(format!("\"revision\" : \"{}\",", r.from(HEX, 40)));
        out.push(format!("\"contentHash\": \"{}==\",", r.from(B64, 86)));
        out.push(format!("request_id: {}", uuid(r)));
        out.push(format!("\"correlationId\": \"{}\"", uuid(r)));
        out.push(format!("  uid: {}", uuid(r)));
        out.push(format!(
            "traceparent: 00-{}-{}-01",
            r.from(HEX, 32),
            r.from(HEX, 16)
        ));
        out.push(format!(
            "x-amz-request-id: {}",
            r.from("ABCDEF0123456789", 16)
        ));
        out.push(format!(
            "<img src=\"data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAA{}\">",
            r.from(B64, 200)
        ));
        out.push(format!(
            "src: url(data:font/woff2;base64,d09GMgABAAAAA{}) format('woff2');",
            r.from(B64, 160)
        ));
        out.push(format!(
            "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{} ann@laptop",
            r.from(B64, 43)
        ));
        out.push(format!(
            "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABgQ{} deploy@ci",
            r.from(B64, 300)
        ));
        out.push(format!(
            "-----BEGIN CERTIFICATE-----\nMIID{}\n{}\n-----END CERTIFICATE-----",
            r.from(B64, 60),
            r.from(B64, 64)
        ));
        out.push(format!(
            "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE{}\n{}==\n-----END PUBLIC KEY-----",
            r.from(B64, 28),
            r.from(B64, 54)
        ));
        out.push(format!(
            "256 SHA256:{} ann@laptop (ED25519)",
            r.from(B64, 43)
        ));
        out.push(format!(
            "pub   rsa4096 2023-01-10 [SC]\n      {}",
            r.from(&HEX.to_uppercase(), 40)
        ));
        out.push(format!(
            "CONTAINER ID   IMAGE\n{}   postgres:16",
            r.from(HEX, 12)
        ));
        out.push(format!(
            "web-{}-{}   1/1   Running   0   3d",
            r.from(LOWER_DIGIT, 10),
            r.from(LOWER_DIGIT, 5)
        ));
        out.push(format!("ETag: \"{}\"", r.from(HEX, 32)));
        out.push(format!(
            "/nix/store/{}-openssl-3.0.13/lib",
            r.from("0123456789abcdfghijklmnpqrsvwxyz", 32)
        ));
        out.push(format!(
            "target/debug/deps/libserde-{}.rlib",
            r.from(HEX, 16)
        ));
        out.push(format!(
            "<script src=\"/assets/main.{}.js\"></script>",
            r.from(HEX, 8)
        ));
        out.push(format!("\"id\": \"chatcmpl-{}\"", mixed(r, ALNUM, 29)));
        out.push(format!("\"id\": \"msg_01{}\"", mixed(r, ALNUM, 22)));
        out.push(format!(
            "\"tool_use_id\": \"toolu_01{}\"",
            mixed(r, ALNUM, 22)
        ));
        out.push(format!("customer: cus_{}", mixed(r, ALNUM, 14)));
        out.push(format!(
            "https://docs.google.com/spreadsheets/d/1{}/edit",
            mixed(r, B64URL, 43)
        ));
        out.push(format!(
            "github.com/acme/lib v0.0.0-2024{}-{}",
            r.from(DIGITS, 10),
            r.from(HEX, 12)
        ));
        out.push(format!("\"node_id\": \"MDQ6VXNlcj{}=\"", r.from(ALNUM, 11)));
        out.push(format!("\"sha\": \"{}\",", r.from(HEX, 40)));
    }
    out
}

fn uuid(r: &mut Rng) -> String {
    format!(
        "{}-{}-4{}-a{}-{}",
        r.from(HEX, 8),
        r.from(HEX, 4),
        r.from(HEX, 3),
        r.from(HEX, 3),
        r.from(HEX, 12)
    )
}

/// The fifth set's look-alikes.
pub(crate) fn fifth_lookalikes(r: &mut Rng) -> Vec<String> {
    let mut out: Vec<String> = WRITTEN.iter().map(|s| (*s).to_owned()).collect();
    out.extend(generated(r));
    out
}
