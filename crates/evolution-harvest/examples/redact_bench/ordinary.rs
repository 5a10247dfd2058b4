//! The ordinary look-alike lines redaction must leave alone, and the mixed text the speed is
//! measured on.

use std::fmt::Write as _;

use crate::secrets::{Rng, token_families};

/// Ordinary lines that look like secrets and must come out unchanged.
pub(crate) fn ordinary_lines() -> Vec<String> {
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
pub(crate) fn mixed_text(rng: &mut Rng, bytes: usize) -> Vec<String> {
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
