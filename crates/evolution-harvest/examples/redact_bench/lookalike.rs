//! Generated look-alikes: random values a transcript holds that are not secrets (git hashes,
//! UUIDs, lockfile integrity hashes, checksums, image digests, base64 images and fonts, public
//! keys and certificates), placed where redaction might mistake them for one, and lines of the
//! new shapes that hold no secret (a `.pgpass` header, `redis-cli -p 6379`, a SAS-less URL).
//! Each must come out unchanged.

use crate::secrets::{B64, B64URL, HEX, Rng, base64};

fn uuid(rng: &mut Rng) -> String {
    format!(
        "{}-{}-4{}-a{}-{}",
        rng.from(HEX, 8),
        rng.from(HEX, 4),
        rng.from(HEX, 3),
        rng.from(HEX, 3),
        rng.from(HEX, 12)
    )
}

fn b64_bytes(rng: &mut Rng, n: usize) -> String {
    let bytes: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
    base64(&bytes)
}

/// `n` rounds of every generated look-alike shape.
pub(crate) fn generated_lookalikes(rng: &mut Rng, n: usize) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    for _ in 0..n {
        let sha = rng.from(HEX, 40);
        let short = rng.from(HEX, 7);
        let id = uuid(rng);
        let sha512 = b64_bytes(rng, 64);
        let sha256 = rng.from(HEX, 64);
        let png = format!("iVBORw0KGgoAAAANSUhEUgAA{}", rng.from(B64, 120));
        out.extend([
            ("git sha", format!("commit {sha}\nAuthor: Dev <dev@example.com>")),
            ("git sha", format!("{short} fix: handle empty input ({sha})")),
            ("git sha", format!("git checkout {sha} -- src/lib.rs")),
            ("git sha", format!("HEAD is now at {short} merge branch 'main'")),
            ("uuid", format!("request_id: {id}")),
            ("uuid", format!("{{\"id\":\"{id}\",\"status\":\"done\"}}")),
            ("uuid", format!("session {id} resumed")),
            (
                "lockfile integrity",
                format!(
                    "      \"integrity\": \"sha512-{sha512}\","
                ),
            ),
            (
                "lockfile integrity",
                format!("  integrity sha512-{sha512}"),
            ),
            (
                "cargo checksum",
                format!("checksum = \"{sha256}\""),
            ),
            (
                "go.sum",
                format!(
                    "golang.org/x/text v0.14.0 h1:{}=",
                    rng.from(B64, 43)
                ),
            ),
            ("image digest", format!("image: nginx@sha256:{sha256}")),
            (
                "sri hash",
                format!(
                    "<script src=\"/app.js\" integrity=\"sha384-{}\" crossorigin=\"anonymous\"></script>",
                    b64_bytes(rng, 48)
                ),
            ),
            (
                "base64 image",
                format!("<img src=\"data:image/png;base64,{png}\">"),
            ),
            (
                "base64 image",
                format!("background: url(data:image/png;base64,{png});"),
            ),
            (
                "ssh public key",
                format!("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{} dev@laptop", rng.from(B64, 43)),
            ),
            (
                "certificate",
                format!(
                    "-----BEGIN CERTIFICATE-----\nMIID{}\n{}\n-----END CERTIFICATE-----",
                    rng.from(B64, 60),
                    rng.from(B64, 64)
                ),
            ),
            (
                "pgp public key",
                format!(
                    "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nmQINB{}\n-----END PGP PUBLIC KEY BLOCK-----",
                    rng.from(B64, 59)
                ),
            ),
            ("docker layer", format!("{}: Pull complete", rng.from(HEX, 12))),
            (
                "overlay path",
                format!("/var/lib/docker/overlay2/{sha256}/merged"),
            ),
            (
                "yarn resolved",
                format!(
                    "  resolved \"https://registry.yarnpkg.com/left-pad/-/left-pad-1.3.0.tgz#{sha}\""
                ),
            ),
            (
                "etag",
                format!("ETag: \"{}\"", rng.from(HEX, 32)),
            ),
            (
                "csrf meta",
                format!("<meta name=\"csrf-param\" content=\"authenticity_token\" /> <!-- {} -->", rng.from(B64URL, 12)),
            ),
            ("cache key", format!("cache key: linux-cargo-{sha256}")),
            ("key id", format!("gpg: key {} marked as ultimately trusted", rng.from("0123456789ABCDEF", 16))),
            ("token count", format!("tokens: {} in, {} out", rng.below(90_000), rng.below(9_000))),
        ]);
    }
    out
}

/// Lines of the new shapes that hold no secret.
pub(crate) fn shape_lookalikes() -> Vec<String> {
    [
        // Lines that only look like the positional, cookie, key-file and prose shapes.
        "net user bob /delete",
        "net user backup /add",
        "use the staging box to log in, then run the migration",
        "creds are in the vault under ops / staging",
        "Cookie: theme=dark; lang=en",
        "Set-Cookie: session=; Path=/; Max-Age=0",
        "\"app\" \"md5\"",
        "PublicKey = xTIBA5rboUvnH4htodjb6e697QjLERt1NAB4mZqp8Dg=",
        "psk=\"$WIFI_PSK\"",
        "smtp.example.com:587 is the relay; the user is ops@example.com",
        "requests.get(url, auth=(user, password))",
        "server.login(user, os.environ[\"SMTP_PASSWORD\"])",
        "sqlplus -s /nolog @setup.sql",
        "API-Version: 2023-10-01",
        "hostname:port:database:username:password",
        "# hostname:port:database:username:password",
        "redis-cli -h cache -p 6379 ping",
        "redis-cli --no-auth-warning -n 2 info",
        "mysql -h db -P 3306 -u root -p app",
        "htpasswd -c /etc/nginx/.htpasswd admin",
        "htpasswd -D .htpasswd olduser",
        "docker login -u ci --password-stdin ghcr.io < token.txt",
        "docker login registry.example.com",
        "sshpass -e ssh deploy@host",
        "machine api.example.com login deploy",
        "<password>${env.NEXUS_PASSWORD}</password>",
        "<password/>",
        "<password></password>",
        "<input type=\"password\" />",
        "the password is stored in the vault",
        "the password is required",
        "the password is incorrect, try again",
        "Password was reset by the admin.",
        "reset the password to the default before the demo",
        "https://acct.blob.core.windows.net/public/logo.png",
        "https://example.com/img.svg?v=3&sig=",
        "Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=${SB_KEY}",
        "_auth=${NPM_AUTH}",
        "//registry.npmjs.org/:_authToken=${NPM_TOKEN}",
        "always-auth=true",
        "Use the SSWS scheme for Okta API tokens.",
        "SENTRY_DSN=https://<key>@sentry.io/<project>",
        "dsn: https://public@sentry.example.com/1",
        "requirepass foobared is the example in redis.conf",
        "# requirepass <password>",
        "the secret is out",
        "the token is invalid or expired",
        "the key is missing from the map",
        "Client secret: see 1Password",
        "token -> lexer",
        "sessionStorage.setItem(\"token\", token);",
        "SECRET_KEY=os.environ.get(\"SECRET_KEY\")",
        "SECRET_KEY=$(openssl rand -hex 32)",
        "API_KEY=~/.config/key.txt",
        "password = *default_password",
        "password: &pw !vault |",
        "token: !Ref ApiToken",
        "client_secret: {{ .Values.secret }}",
        "secret: %(secret)s",
        "api_key: @api_key_file",
        "PASSWORD=-",
        "token = (await getToken())",
        "password: <%= ENV['DB_PASSWORD'] %>",
        "key = #{secret_key}",
        "Server=db;Database=app;Trusted_Connection=True;",
        "define( 'DB_PASSWORD', getenv('DB_PASSWORD') );",
        "mongodb://mongo:27017/app",
        "postgresql://localhost/app?sslmode=require",
        "MTIzNDU2Nzg5MDEyMzQ1Njc4.is not a token",
        "version: app.v1.config.Loader",
        "import tokenizer.models.bpe.BytePairEncoder",
        "password_hash = bcrypt.hashpw(password, salt)",
        "<PublicKeyToken>b77a5c561934e089</PublicKeyToken>",
        "mongod --port 27017 --dbpath /data",
        "7z x archive.7z -o/tmp/out",
        "ssh-keygen -lf ~/.ssh/id_ed25519.pub",
        "ssh-keygen -t ed25519 -N '' -f key",
        "openssl enc -aes-256-cbc -pass stdin -in a -out b",
        "localStorage.setItem(\"token\", response.data.accessToken)",
        "<key>CFBundleIdentifier</key>",
        "git commit -m \"rotate the signing key\"\n3f9a2b7c8d1e4f5a6b7c8d9e0f1a2b3c4d5e6f7a",
        "API key\n================",
        "echo $TOKEN | docker login ghcr.io -u USER --password-stdin",
        "htpasswd -v .htpasswd admin",
        "   12\u{2192}    token: ${{ secrets.GITHUB_TOKEN }}",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect()
}
