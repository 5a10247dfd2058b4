//! The fifth held-out set's command lines: the flags, positional arguments and inline
//! assignments through which common tools take a password, key or token.

use crate::fifth_gen::{at, password, url_password};
use crate::secrets::{ALNUM, B64, Case, HEX, Rng, base64, mixed};

/// A password safe inside single quotes and as a bare shell word (no quote, space, `$`,
/// backslash, `;`, `&`, `(`, `)`, `|`, `<`, `>`, `#`, `!`, `*`, `?`, `~` or backtick).
fn shell_word(r: &mut Rng) -> String {
    password(r)
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || "%+-.:=@^_,/".contains(*c))
        .collect()
}

/// Each template's `{}` is the password; the family names the tool.
const TEMPLATES: [(&str, &str); 96] = [
    ("docker", "docker login -u deploy -p {} registry.corp:5000"),
    (
        "docker",
        "docker login --username deploy --password {} ghcr.io",
    ),
    (
        "docker",
        "echo '{}' | docker login --username ci --password-stdin",
    ),
    (
        "docker",
        "docker run -d -e POSTGRES_PASSWORD={} -p 5432:5432 postgres:16",
    ),
    (
        "docker",
        "docker run --env MINIO_ROOT_PASSWORD='{}' minio/minio server /data",
    ),
    ("docker", "docker build --build-arg NPM_TOKEN={} -t web ."),
    ("podman", "podman login --password {} quay.io"),
    (
        "skopeo",
        "skopeo copy --src-creds mirror:{} docker://a/b:1 docker://c/b:1",
    ),
    (
        "helm",
        "helm install pg bitnami/postgresql --set auth.postgresPassword={} --set auth.database=app",
    ),
    (
        "helm",
        "helm upgrade redis bitnami/redis --set-string auth.password='{}'",
    ),
    (
        "helm",
        "helm repo add corp https://charts.corp --username ci --password {}",
    ),
    ("helm", "helm registry login registry.corp -u ci -p {}"),
    (
        "kubectl",
        "kubectl create secret generic db --from-literal=username=app --from-literal=password='{}'",
    ),
    (
        "kubectl",
        "kubectl create secret docker-registry regcred --docker-server=registry.corp --docker-username=ci --docker-password={}",
    ),
    (
        "kubectl",
        "kubectl config set-credentials admin --username=admin --password={}",
    ),
    ("mysql", "mysql -u root -p{} shop < dump.sql"),
    ("mysql", "mysql --user=app --password={} -h db shop"),
    ("mysql", "mysqldump -uroot -p'{}' --all-databases > all.sql"),
    ("mysql", "mysqladmin -u root -p\"{}\" status"),
    (
        "psql",
        "PGPASSWORD={} psql -h db -U app -d app -c 'select 1'",
    ),
    ("psql", "PGPASSWORD='{}' pg_dump -h db -U app app > app.sql"),
    ("redis-cli", "redis-cli -h cache -a {} ping"),
    (
        "redis-cli",
        "redis-cli --user default --pass '{}' -h cache info",
    ),
    ("redis-cli", "redis-cli -h cache AUTH default {}"),
    ("curl", "curl -u admin:{} https://jenkins.corp/api/json"),
    (
        "curl",
        "curl --user 'ops:{}' -X POST https://api.corp/restart",
    ),
    (
        "curl",
        "curl -d 'username=ops&password={}' https://app.corp/login",
    ),
    (
        "curl",
        "curl --data-urlencode 'client_secret={}' -d grant_type=client_credentials https://idp.corp/token",
    ),
    (
        "curl",
        "curl -F 'password={}' -F user=me https://app.corp/upload",
    ),
    (
        "wget",
        "wget --user=ci --password={} https://repo.corp/artifact.tar.gz",
    ),
    (
        "wget",
        "wget --http-user=ci --http-password='{}' https://repo.corp/file",
    ),
    ("wget", "wget --ftp-password={} ftp://ftp.corp/pub/file.iso"),
    (
        "git",
        "git clone https://oauth2:{}@gitlab.corp/group/app.git",
    ),
    (
        "git",
        "git remote set-url origin https://ci-bot:{}@github.com/acme/site.git",
    ),
    (
        "ssh-keygen",
        "ssh-keygen -t ed25519 -N '{}' -f ~/.ssh/deploy",
    ),
    (
        "ssh-keygen",
        "ssh-keygen -p -P oldpass123 -N {} -f ~/.ssh/id_rsa",
    ),
    (
        "openssl",
        "openssl genrsa -aes256 -passout pass:{} -out server.key 4096",
    ),
    (
        "openssl",
        "openssl pkcs12 -export -in c.crt -inkey c.key -out c.p12 -passout 'pass:{}'",
    ),
    (
        "openssl",
        "openssl rsa -in enc.key -passin pass:{} -out plain.key",
    ),
    (
        "openssl",
        "openssl enc -aes-256-cbc -salt -in db.sql -out db.sql.enc -k {}",
    ),
    (
        "openssl",
        "openssl enc -aes-256-cbc -pass pass:{} -in a -out a.enc",
    ),
    ("htpasswd", "htpasswd -b /etc/nginx/.htpasswd admin {}"),
    ("htpasswd", "htpasswd -bcB .htpasswd monitor '{}'"),
    (
        "ldapsearch",
        "ldapsearch -x -H ldap://dc1 -D 'cn=admin,dc=corp,dc=local' -w {} -b 'dc=corp,dc=local'",
    ),
    (
        "ldapsearch",
        "ldapmodify -x -D cn=admin,dc=corp -w '{}' -f change.ldif",
    ),
    ("smbclient", "smbclient //fs01/share -U backup%{}"),
    (
        "smbclient",
        "smbclient -U 'CORP\\svc_scan%{}' //fs02/scans -c ls",
    ),
    (
        "mount",
        "mount -t cifs //nas/media /mnt/media -o username=media,password={},vers=3.0",
    ),
    ("sshpass", "sshpass -p '{}' ssh ops@10.0.0.5 uptime"),
    ("sshpass", "sshpass -p {} scp backup.tgz ops@nas:/backups/"),
    ("az", "az login -u admin@corp.onmicrosoft.com -p '{}'"),
    (
        "az",
        "az login --service-principal -u 8f2c0a4e-app --password {} --tenant corp.onmicrosoft.com",
    ),
    (
        "az",
        "az storage blob upload --account-name logs --account-key {} -f a.log -c logs",
    ),
    (
        "aws",
        "aws configure set aws_secret_access_key {} --profile prod",
    ),
    (
        "gcloud",
        "gcloud sql users set-password postgres --instance=main --password={}",
    ),
    (
        "mongo",
        "mongosh --username admin --password '{}' --authenticationDatabase admin",
    ),
    (
        "mongo",
        "mongodump --uri mongodb://db --username backup --password={} --out /backup",
    ),
    (
        "sqlcmd",
        "sqlcmd -S sql01 -U sa -P '{}' -Q 'SELECT @@VERSION'",
    ),
    (
        "bcp",
        "bcp dbo.orders out orders.dat -S sql01 -U etl -P {} -c",
    ),
    ("cqlsh", "cqlsh cassandra-0 -u cassandra -p {}"),
    (
        "clickhouse",
        "clickhouse-client --host ch --user default --password {} --query 'select 1'",
    ),
    (
        "influx",
        "influx -username admin -password '{}' -execute 'SHOW DATABASES'",
    ),
    ("rabbitmqctl", "rabbitmqctl add_user app {}"),
    ("rabbitmqctl", "rabbitmqctl change_password admin '{}'"),
    ("vault", "vault kv put secret/app db_password={}"),
    (
        "vault",
        "vault write auth/userpass/users/ops password='{}' policies=ops",
    ),
    ("net use", "net use \\\\fs01\\share /user:CORP\\ops {}"),
    (
        "xfreerdp",
        "xfreerdp /v:10.0.0.9 /u:Administrator /p:{} /cert:ignore",
    ),
    ("rdesktop", "rdesktop -u admin -p {} 10.0.0.9"),
    ("psexec", "psexec \\\\srv01 -u CORP\\admin -p {} cmd"),
    ("zip", "zip -P {} secrets.zip notes.txt"),
    ("7z", "7z a -p{} -mhe=on backup.7z ./data"),
    ("unzip", "unzip -P '{}' archive.zip"),
    ("gpg", "gpg --batch --passphrase '{}' --symmetric notes.txt"),
    (
        "gpg",
        "gpg --pinentry-mode loopback --passphrase={} -d file.gpg",
    ),
    ("chpasswd", "echo 'deploy:{}' | sudo chpasswd"),
    ("lftp", "lftp -u upload,{} sftp://files.corp"),
    (
        "rsync",
        "RSYNC_PASSWORD={} rsync -av rsync://backup@nas/module ./",
    ),
    (
        "ansible",
        "ansible-playbook site.yml -e ansible_password={} -e ansible_user=admin",
    ),
    (
        "ansible",
        "ansible-playbook db.yml --extra-vars \"db_pass={} db_user=app\"",
    ),
    (
        "terraform",
        "TF_VAR_db_password='{}' terraform apply -auto-approve",
    ),
    (
        "pip",
        "pip install --index-url https://ci:{}@pypi.corp/simple app",
    ),
    ("twine", "twine upload -u ci -p {} dist/*"),
    ("poetry", "poetry config http-basic.corp ci {}"),
    (
        "gradle",
        "./gradlew publish -PsonatypePassword={} -PsonatypeUsername=me",
    ),
    ("maven", "mvn deploy -Drepo.password={} -Drepo.username=ci"),
    (
        "dotnet",
        "dotnet nuget add source https://nuget.corp/v3/index.json -n corp -u ci -p {} --store-password-in-clear-text",
    ),
    (
        "composer",
        "composer config --global http-basic.repo.corp ci {}",
    ),
    ("heroku", "heroku config:set DATABASE_PASSWORD={} -a shop"),
    ("fly", "fly secrets set DB_PASSWORD={} -a shop"),
    ("gh", "gh secret set DB_PASSWORD --body '{}'"),
    (
        "jenkins",
        "java -jar jenkins-cli.jar -s https://ci.corp -auth admin:{} build deploy",
    ),
    (
        "ftp",
        "ftp -n ftp.corp <<EOF\nuser upload {}\nput file.txt\nEOF",
    ),
    (
        "keytool",
        "keytool -importcert -alias ca -file ca.crt -keystore trust.jks -storepass {} -noprompt",
    ),
    (
        "keytool",
        "keytool -genkeypair -alias app -keystore app.p12 -storepass {} -keypass {} -dname CN=app",
    ),
    (
        "wp-cli",
        "wp user create editor ed@corp.example --role=editor --user_pass={}",
    ),
];

/// Tokens that tools take as flags or positional arguments.
fn token_commands(r: &mut Rng) -> Vec<Case> {
    let mut out = Vec::new();
    let t = mixed(r, ALNUM, 40);
    out.push(at(
        "curl",
        "api key header",
        format!("curl -H 'X-API-Key: {t}' https://api.corp/v1/items"),
        &t,
    ));
    let t = mixed(r, ALNUM, 48);
    out.push(at(
        "curl",
        "oauth2-bearer",
        format!("curl --oauth2-bearer {t} https://api.corp/v1/me"),
        &t,
    ));
    let t = format!("00{}", mixed(r, ALNUM, 40));
    out.push(at(
        "curl",
        "SSWS header",
        format!("curl -H \"Authorization: SSWS {t}\" https://corp.okta.com/api/v1/users"),
        &t,
    ));
    let t = base64(format!("ci:{}", mixed(r, ALNUM, 20)).as_bytes());
    out.push(at(
        "curl",
        "basic header",
        format!("curl -H 'Authorization: Basic {t}' https://nexus.corp/service/rest"),
        &t,
    ));
    let t = base64(format!("ci:{}", mixed(r, ALNUM, 24)).as_bytes());
    out.push(at("git", "extraheader", format!("git -c http.extraHeader=\"Authorization: Basic {t}\" clone https://dev.azure.com/corp/app/_git/app"), &t));
    let t = mixed(r, ALNUM, 40);
    out.push(at(
        "wget",
        "header",
        format!(
            "wget --header=\"Authorization: token {t}\" https://api.github.com/repos/a/b/tarball"
        ),
        &t,
    ));
    let t = format!(
        "eyJhbGciOiJSUzI1NiIsImtpZCI6Ij{}.{}.{}",
        mixed(r, ALNUM, 20),
        mixed(r, ALNUM, 120),
        mixed(r, ALNUM, 86)
    );
    out.push(at(
        "kubectl",
        "--token",
        format!("kubectl --server=https://k8s.corp:6443 --token={t} get pods -A"),
        &t,
    ));
    let t = format!("hvs.{}", mixed(r, ALNUM, 24));
    out.push(at(
        "vault",
        "login positional",
        format!("vault login {t}"),
        &t,
    ));
    let t = format!("ghp_{}", mixed(r, ALNUM, 36));
    out.push(at(
        "gh",
        "with-token",
        format!("echo {t} | gh auth login --with-token"),
        &t,
    ));
    let t = format!("npm_{}", mixed(r, ALNUM, 36));
    out.push(at(
        "npm",
        "config set",
        format!("npm config set //registry.npmjs.org/:_authToken {t}"),
        &t,
    ));
    let t = mixed(r, ALNUM, 46);
    out.push(at(
        "nuget",
        "setapikey",
        format!("nuget setapikey {t} -Source https://api.nuget.org/v3/index.json"),
        &t,
    ));
    let t = mixed(r, ALNUM, 46);
    out.push(at(
        "dotnet",
        "nuget push -k",
        format!("dotnet nuget push pkg.nupkg -k {t} -s https://api.nuget.org/v3/index.json"),
        &t,
    ));
    let t = format!("cio{}", mixed(r, ALNUM, 32));
    out.push(at(
        "cargo",
        "login positional",
        format!("cargo login {t}"),
        &t,
    ));
    let t = format!("cio{}", mixed(r, ALNUM, 32));
    out.push(at(
        "cargo",
        "publish --token",
        format!("cargo publish --token {t}"),
        &t,
    ));
    let t = format!("pypi-AgEIcHlwaS5vcmc{}", mixed(r, ALNUM, 80));
    out.push(at(
        "poetry",
        "pypi-token",
        format!("poetry config pypi-token.pypi {t}"),
        &t,
    ));
    let t = format!("ghp_{}", mixed(r, ALNUM, 36));
    out.push(at(
        "composer",
        "github-oauth",
        format!("composer config -g github-oauth.github.com {t}"),
        &t,
    ));
    let t = mixed(r, B64, 40);
    out.push(at(
        "aws",
        "inline env",
        format!(
            "AWS_ACCESS_KEY_ID=AKIA{} AWS_SECRET_ACCESS_KEY={t} aws s3 ls",
            r.from("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16)
        ),
        &t,
    ));
    let t = format!("ya29.a0{}", mixed(r, ALNUM, 120));
    out.push(at(
        "gcloud",
        "print-access-token output",
        format!("$ gcloud auth print-access-token\n{t}\n"),
        &t,
    ));
    let t = r.from(HEX, 32);
    out.push(at("datadog", "agent install", format!("DD_API_KEY={t} DD_SITE=\"datadoghq.eu\" bash -c \"$(curl -L https://install.datadoghq.com/scripts/install_script_agent7.sh)\""), &t));
    let t = mixed(r, ALNUM, 32);
    out.push(at(
        "ngrok",
        "authtoken",
        format!("ngrok config add-authtoken {t}"),
        &t,
    ));
    let t = mixed(r, ALNUM, 40);
    out.push(at("snyk", "auth", format!("snyk auth {t}"), &t));
    let t = format!("{}-{}", mixed(r, ALNUM, 20), mixed(r, ALNUM, 20));
    out.push(at(
        "stripe",
        "--api-key",
        format!("stripe customers list --api-key sk_test_{t}"),
        &format!("sk_test_{t}"),
    ));
    let t = mixed(r, ALNUM, 64);
    out.push(at("ansible-vault", "password via echo", format!("echo '{t}' > .vault_pass && ansible-vault view secrets.yml --vault-password-file .vault_pass"), &t));
    out
}

/// The command-line part of the set.
pub(crate) fn flag_cases(r: &mut Rng) -> Vec<Case> {
    let mut out = Vec::new();
    for (family, template) in TEMPLATES {
        let v = if template.contains("://") && template.contains(":{}@") {
            url_password(r)
        } else {
            shell_word(r)
        };
        out.push(at(family, "command line", template.replace("{}", &v), &v));
    }
    out.extend(token_commands(r));
    // A few with a real hex key rather than a password.
    let key = r.from(HEX, 64);
    out.push(at(
        "openssl",
        "raw key -K",
        format!(
            "openssl enc -aes-256-cbc -K {key} -iv {} -in a -out a.enc",
            r.from(HEX, 32)
        ),
        &key,
    ));
    out
}
