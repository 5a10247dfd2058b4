//! A second held-out set, written after the rules and before any of its results were seen:
//! the same families in the places a coding session shows them (Grep output with file and
//! line prefixes, shell history, Write and Edit tool inputs, diffs, Read output, prose), with
//! other wording, other values and another seed. It is measured once and never read to tune.

use serde_json::json;

use crate::secrets::{ALNUM, B64, B64URL, Case, DIGITS, HEX, Rng, base64, case, mixed};
use crate::shapes::{LEADS, dotted_bot_token, more_token_families, password};

fn strip_for_shell(p: &str) -> String {
    p.replace(
        ['"', '\'', '`', '\\', '$', '!', '<', '>', '&', '|', ';'],
        "Z",
    )
}

/// The cases.
pub(crate) fn unseen(rng: &mut Rng) -> Vec<Case> {
    let mut out = Vec::new();
    for round in 0..4 {
        let v = strip_for_shell(&password(rng));
        let v = v.as_str();
        let n = rng.below(900) + 10;
        out.extend([
            case("netrc", "grep", format!("/home/dev/.netrc:{n}:machine registry.internal login robot password {v}"), v),
            case("netrc", "cat", format!("$ cat ~/.netrc\nmachine api.heroku.com\n    login me@example.com\n    password {v}\nmachine git.heroku.com\n"), v),
            case("pgpass", "write", format!("{{\"file_path\":\"/home/dev/.pgpass\",\"content\":\"pg.prod.internal:5432:orders:svc_orders:{v}\\n\"}}"), v),
            case("pgpass", "printf", format!("printf '%s\\n' 'db:5433:analytics:ro:{v}' > ~/.pgpass && chmod 600 ~/.pgpass"), v),
            case("xml password", "edit", format!("<datasource jndi-name=\"java:/AppDS\">\n    <security>\n        <user-name>app</user-name>\n        <password>{v}</password>\n    </security>\n</datasource>"), v),
            case("xml password", "nuget", format!("<packageSourceCredentials><feed><add key=\"Username\" value=\"ci\" /><add key=\"ClearTextPassword\" value=\"{v}\" /></feed></packageSourceCredentials>"), v),
            case("docker login", "history", format!("  {n}  docker login -u deploy -p {v} 123456789012.dkr.ecr.us-east-1.amazonaws.com"), v),
            case("docker login", "podman", format!("podman login --username ci --password {v} quay.io"), v),
            case("htpasswd", "docker run", format!("docker run --rm --entrypoint htpasswd httpd:2 -Bbn registry {v} > auth/htpasswd"), v),
            case("redis-cli", "docker exec", format!("docker exec -it redis redis-cli -a {v} --scan --pattern 'sess:*'"), v),
            case("mysql", "docker exec", format!("docker exec -i db mysql -uroot -p{v} shop < dump.sql"), v),
            case("sshpass", "scp", format!("sshpass -p '{v}' scp -o StrictHostKeyChecking=no build.tgz ci@10.2.0.7:/tmp"), v),
            case("prose", "user", format!("can you log in to the staging box? the password is {v}"), v),
            case("prose", "assistant", format!("I set the new admin password to {v} as you asked."), v),
            case("connection string", "appsettings", format!("\"DefaultConnection\": \"Server=tcp:sql.example.net,1433;Initial Catalog=app;User ID=app;Password={v};Encrypt=True;\""), v),
            case("redis.conf", "read", format!("   {n}\u{2192}masterauth {v}\n"), v),
            case("env", "grep", format!("config/.env.production:{n}:DB_PASS={v}"), v),
            case("yaml", "compose", format!("    environment:\n      POSTGRES_PASSWORD: {v}\n      POSTGRES_USER: app\n"), v),
        ]);
        let t = strip_for_shell(&password(rng));
        let u = t.replace(|c: char| !c.is_ascii_alphanumeric(), "x");
        out.push(case(
            "connection url",
            "psql",
            format!("psql \"postgresql://report:{u}@10.0.3.4:5432/warehouse?sslmode=require\""),
            &u,
        ));
        out.push(case(
            "connection url",
            "celery",
            format!("CELERY_BROKER_URL=amqp://celery:{u}@mq.internal:5672//"),
            &u,
        ));
        out.push(case(
            "connection url",
            "pip index",
            format!("pip install --index-url https://__token__:{u}@pypi.example.com/simple pkg"),
            &u,
        ));
        // Azure, npm, Okta, Sentry.
        let sig = base64(&(0..32).map(|_| rng.next() as u8).collect::<Vec<_>>())
            .replace('+', "%2B")
            .replace('/', "%2F")
            .replace('=', "%3D");
        out.push(case("azure sas", "curl", format!("curl -X PUT -T backup.tar \"https://st{n}.blob.core.windows.net/backups/backup.tar?sp=racw&st=2025-06-01T10:00:00Z&se=2025-06-02T10:00:00Z&spr=https&sv=2022-11-02&sr=c&sig={sig}\""), &sig));
        let key = base64(&(0..32).map(|_| rng.next() as u8).collect::<Vec<_>>());
        out.push(case("azure key", "service bus json", format!("{{\"ServiceBus\":{{\"ConnectionString\":\"Endpoint=sb://orders-{n}.servicebus.windows.net/;SharedAccessKeyName=listen;SharedAccessKey={key}\"}}}}"), &key));
        let big = base64(&(0..64).map(|_| rng.next() as u8).collect::<Vec<_>>());
        out.push(case(
            "azure key",
            "az output",
            format!("$ az storage account keys list -n st{n} --query [0].value -o tsv\n{big}\n"),
            &big,
        ));
        out.push(case(
            "azure key",
            "env",
            format!("AZURE_STORAGE_KEY={big}"),
            &big,
        ));
        let auth = base64(format!("deploy:{}", strip_for_shell(&password(rng))).as_bytes());
        out.push(case("npm legacy", "npmrc read", format!("     1\u{2192}@corp:registry=https://npm.corp.example.com/\n     2\u{2192}//npm.corp.example.com/:_auth={auth}\n"), &auth));
        let npm = format!("npm_{}", mixed(rng, ALNUM, 36));
        out.push(case(
            "npm legacy",
            "yarnrc",
            format!(
                "npmRegistries:\n  \"https://npm.corp.example.com\":\n    npmAuthToken: {npm}\n"
            ),
            &npm,
        ));
        let okta = format!("00{}", mixed(rng, B64URL, 40));
        out.push(case("okta", "env", format!("OKTA_API_TOKEN={okta}"), &okta));
        out.push(case(
            "okta",
            "httpie",
            format!("http GET https://dev-{n}.okta.com/api/v1/users Authorization:\"SSWS {okta}\""),
            &okta,
        ));
        let dsn = rng.from(HEX, 32);
        out.push(case("sentry dsn", "python", format!("sentry_sdk.init(dsn=\"https://{dsn}@o{}.ingest.de.sentry.io/{}\", traces_sample_rate=1.0)", rng.from(DIGITS, 6), rng.from(DIGITS, 7)), &dsn));
        // PGP.
        let lines: Vec<String> = (0..5).map(|_| rng.from(B64, 64)).collect();
        let first = lines.first().cloned().unwrap_or_default();
        out.push(case("pgp private key", "heredoc", format!("cat > key.asc <<'EOF'\n-----BEGIN PGP PRIVATE KEY BLOCK-----\nVersion: GnuPG v2\n\n{}\n-----END PGP PRIVATE KEY BLOCK-----\nEOF", lines.join("\n")), &first));
        // Random values beside words.
        let r = mixed(rng, ALNUM, 28 + round);
        out.push(case(
            "entropy beside word",
            "slack",
            format!("Signing Secret {r}"),
            &r,
        ));
        out.push(case(
            "entropy beside word",
            "json-ish",
            format!("got token={r}, expires 3600"),
            &r,
        ));
        out.push(case(
            "entropy beside word",
            "bullet",
            format!("- API key: `{r}`"),
            &r,
        ));
        // Dotted tokens and Django keys.
        let t = dotted_bot_token(rng);
        out.push(case(
            "dotted bot token",
            "json",
            format!("{{\"token\": \"{t}\", \"prefix\": \"!\"}}"),
            &t,
        ));
        out.push(case(
            "dotted bot token",
            "env",
            format!("BOT_TOKEN={t}"),
            &t,
        ));
        let d = format!(
            "django-insecure-{}",
            rng.from("abcdefghijklmnopqrstuvwxyz0123456789!@#$%^&*(-_=+)", 50)
        );
        out.push(case(
            "django key",
            "env file",
            format!("DEBUG=1\nDJANGO_SECRET_KEY={d}\nALLOWED_HOSTS=*\n"),
            &d,
        ));
        out.push(case(
            "django key",
            "diff",
            format!("-SECRET_KEY = 'x'\n+SECRET_KEY = '{d}'\n"),
            &d,
        ));
        // Leading symbols, in Write tool input and in YAML.
        for lead in LEADS {
            let v = format!("{lead}{}", mixed(rng, B64, 43));
            out.push(Case {
                family: "leading symbol",
                place: "write tool json",
                text: String::new(),
                json: Some(
                    json!({"file_path": "/srv/app/.env", "content": format!("APP_SECRET={v}\n")}),
                ),
                secret: v.clone(),
            });
            out.push(case(
                "leading symbol",
                "yaml",
                format!("credentials:\n  token: {v}\n"),
                &v,
            ));
        }
    }
    for (family, make) in more_token_families() {
        let t = make(rng);
        out.push(case(
            family,
            "grep",
            format!("deploy/values.yaml:17:  apiToken: {t}"),
            &t,
        ));
    }
    out
}

/// A third held-out set, written after the second was read and the rules changed for it:
/// real configuration files (`.git-credentials`, `.pypirc`, `.m2/settings.xml`,
/// `gradle.properties`, `kubeconfig`, `appsettings.json`, `.s3cfg`, `terraform.tfvars`,
/// `application.properties`, Docker's `config.json`, Composer's `auth.json`, `rclone.conf`),
/// each with the values a person or a provider would put there.
pub(crate) fn configs(rng: &mut Rng) -> Vec<Case> {
    let mut out = Vec::new();
    for _ in 0..4 {
        let p = strip_for_shell(&password(rng));
        let p = p.as_str();
        let tok = format!("ghp_{}", mixed(rng, ALNUM, 36));
        let b64 = base64(&(0..40).map(|_| rng.next() as u8).collect::<Vec<_>>());
        let key = mixed(rng, ALNUM, 40);
        let n = rng.below(90) + 10;
        out.extend([
            case("git-credentials", "file", format!("https://ci-bot:{p}@git.example.com\n"), p),
            case("pypirc", "ini", format!("[pypi]\nusername = __token__\npassword = {p}\n"), p),
            case("m2 settings", "xml", format!("<settings>\n  <servers>\n    <server>\n      <id>central</id>\n      <username>deployer</username>\n      <password>{p}</password>\n    </server>\n  </servers>\n</settings>"), p),
            case("gradle.properties", "props", format!("signing.keyId=24875D73\nsigning.password={p}\nossrhPassword={p}\n"), p),
            case("kubeconfig", "token", format!("users:\n- name: admin\n  user:\n    token: {key}\n"), &key),
            case("kubeconfig", "client key", format!("    client-key-data: {b64}\n"), &b64),
            case("appsettings", "json", format!("{{\n  \"Jwt\": {{\n    \"Issuer\": \"api\",\n    \"SigningKey\": \"{key}\"\n  }}\n}}"), &key),
            case("s3cfg", "ini", format!("[default]\naccess_key = AKIA{}\nsecret_key = {key}\n", rng.from("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16)), &key),
            case("tfvars", "hcl", format!("db_password   = \"{p}\"\nregion        = \"eu-west-1\"\n"), p),
            case("application.properties", "spring", format!("spring.datasource.url=jdbc:postgresql://db:5432/app\nspring.datasource.password={p}\n"), p),
            case("docker config", "auths", format!("{{\n  \"auths\": {{\n    \"registry.example.com:{n}\": {{\n      \"auth\": \"{}\"\n    }}\n  }}\n}}", base64(format!("robot:{p}").as_bytes())), &base64(format!("robot:{p}").as_bytes())),
            case("composer auth", "json", format!("{{\"github-oauth\": {{\"github.com\": \"{tok}\"}}, \"http-basic\": {{\"repo.example.com\": {{\"username\": \"ci\", \"password\": \"{p}\"}}}}}}"), p),
            case("rclone.conf", "ini", format!("[remote]\ntype = sftp\nhost = files.example.com\nuser = backup\npass = {key}\n"), &key),
            case("vault", "login output", format!("$ vault login -method=userpass username=ci password={p}\nSuccess! You are now authenticated.\n"), p),
            case("ansible", "inventory", format!("[db]\n10.0.0.5 ansible_user=root ansible_password={p} ansible_become_pass={p}\n"), p),
            case("github actions", "env", format!("      - run: ./deploy.sh\n        env:\n          DEPLOY_KEY: {key}\n"), &key),
        ]);
    }
    out
}
