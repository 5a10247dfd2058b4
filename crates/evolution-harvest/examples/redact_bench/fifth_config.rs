//! The fifth held-out set's configuration files and connection strings: `.netrc`,
//! `.pgpass`, XML, JSON, YAML, TOML, INI, Java properties and env files of many tools, the
//! connection URLs and key-value connection strings of databases and brokers, and the
//! credential files of package managers.

use serde_json::json;

use crate::fifth_gen::{at, at_json, b64_body, password, url_password};
use crate::secrets::{ALNUM, B64, B64URL, Case, HEX, Rng, base64, mixed};

/// Configuration files of many syntaxes with a password in them.
fn files(r: &mut Rng) -> Vec<Case> {
    let mut out = Vec::new();
    let v = password(r);
    out.push(at(
        ".netrc",
        "one line",
        format!("machine api.example.com login deploy@example.com password {v}\n"),
        &v,
    ));
    let v = password(r);
    out.push(at(".netrc", "multi line", format!("machine git.example.org\n  login ci-bot\n  password {v}\n\ndefault login anonymous password guest\n"), &v));
    let v = password(r).replace(':', "");
    out.push(at(
        ".pgpass",
        "line",
        format!("db.internal:5432:orders:app_rw:{v}\n"),
        &v,
    ));
    let v = password(r).replace(':', "");
    out.push(at(
        ".pgpass",
        "wildcards",
        format!("# hostname:port:database:username:password\n*:*:*:postgres:{v}\n"),
        &v,
    ));
    let v = password(r);
    out.push(at(
        "xml",
        "element",
        format!("<datasource>\n  <user>app</user>\n  <password>{v}</password>\n</datasource>"),
        &v,
    ));
    let v = password(r);
    out.push(at("xml", "maven settings", format!("<servers>\n  <server>\n    <id>nexus-releases</id>\n    <username>deployer</username>\n    <password>{v}</password>\n  </server>\n</servers>"), &v));
    let v = password(r).replace(['&', '<', '>', '"'], "");
    out.push(at(
        "xml",
        "appSettings add",
        format!("<appSettings>\n  <add key=\"SmtpPassword\" value=\"{v}\" />\n</appSettings>"),
        &v,
    ));
    let v = password(r).replace(['&', '<', '>', '"'], "");
    out.push(at(
        "xml",
        "hibernate property",
        format!("<property name=\"hibernate.connection.password\">{v}</property>"),
        &v,
    ));
    let v = password(r).replace(['&', '<', '>', '"'], "");
    out.push(at("xml", "tomcat resource", format!("<Resource name=\"jdbc/main\" auth=\"Container\" type=\"javax.sql.DataSource\" username=\"svc\" password=\"{v}\" driverClassName=\"org.postgresql.Driver\"/>"), &v));
    let v = password(r).replace(['&', '<', '>', '"', ';'], "");
    out.push(at("xml", "web.config connection string", format!("<connectionStrings>\n  <add name=\"Main\" connectionString=\"Server=sql01;Database=Shop;User Id=shop;Password={v};\" providerName=\"System.Data.SqlClient\" />\n</connectionStrings>"), &v));
    let v = password(r).replace(['&', '<', '>', '"'], "");
    out.push(at("xml", "nuget ClearTextPassword", format!("<packageSourceCredentials>\n  <internal>\n    <add key=\"Username\" value=\"build\" />\n    <add key=\"ClearTextPassword\" value=\"{v}\" />\n  </internal>\n</packageSourceCredentials>"), &v));
    let v = password(r);
    out.push(at_json(
        "json",
        "nested password",
        json!({"database": {"host": "db", "port": 5432, "user": "api", "password": v}}),
        &v,
    ));
    let v = password(r);
    out.push(at_json(
        "json",
        "pass key",
        json!({"smtp": {"user": "mailer", "pass": v}}),
        &v,
    ));
    let v = password(r);
    out.push(at(
        "json",
        "raw text, compact",
        format!("{{\"username\":\"admin\",\"passwd\":\"{v}\",\"remember\":true}}"),
        &v,
    ));
    let v = mixed(r, ALNUM, 34);
    out.push(at_json("json", "client secret", json!({"installed": {"client_id": "1234-abc.apps.googleusercontent.com", "client_secret": v}}), &v));
    let v = password(r).replace(['"', '\\', ';'], "");
    out.push(at("json", "appsettings connection string", format!("{{\n  \"ConnectionStrings\": {{\n    \"Default\": \"Host=pg;Database=app;Username=app;Password={v}\"\n  }}\n}}"), &v));
    let v = password(r);
    out.push(at(
        "yaml",
        "plain",
        format!("database:\n  username: app\n  password: {v}\n"),
        &v,
    ));
    let v = password(r);
    out.push(at(
        "yaml",
        "single quoted",
        format!("redis:\n  host: cache\n  password: '{v}'\n"),
        &v,
    ));
    let v = password(r);
    out.push(at("yaml", "spring datasource", format!("spring:\n  datasource:\n    url: jdbc:postgresql://db:5432/app\n    password: \"{v}\"\n"), &v));
    let v = password(r);
    out.push(at("yaml", "kubernetes stringData", format!("apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\ntype: Opaque\nstringData:\n  DB_PASSWORD: \"{v}\"\n"), &v));
    let raw = password(r);
    let v = base64(raw.as_bytes());
    out.push(at(
        "yaml",
        "kubernetes data (base64)",
        format!("kind: Secret\ndata:\n  password: {v}\n  username: YWRtaW4=\n"),
        &v,
    ));
    let v = password(r);
    out.push(at("yaml", "compose environment map", format!("services:\n  db:\n    image: postgres:16\n    environment:\n      POSTGRES_PASSWORD: {v}\n"), &v));
    let v = password(r).replace([' ', '#'], "");
    out.push(at(
        "yaml",
        "compose environment list",
        format!("    environment:\n      - MYSQL_ROOT_PASSWORD={v}\n      - MYSQL_DATABASE=wp\n"),
        &v,
    ));
    let v = password(r);
    out.push(at(
        "yaml",
        "ansible become",
        format!("all:\n  vars:\n    ansible_user: ops\n    ansible_become_pass: \"{v}\"\n"),
        &v,
    ));
    let v = password(r);
    out.push(at(
        "yaml",
        "helm values",
        format!("auth:\n  enabled: true\n  rootPassword: \"{v}\"\n  replicaSetKey: abc\n"),
        &v,
    ));
    let v = password(r);
    out.push(at(
        "yaml",
        "flow mapping",
        format!("credentials: {{user: svc, password: \"{v}\"}}"),
        &v,
    ));
    let v = password(r);
    out.push(at(
        "toml",
        "quoted",
        format!("[database]\nuser = \"app\"\npassword = \"{v}\"\n"),
        &v,
    ));
    let v = password(r).replace('\'', "");
    out.push(at(
        "toml",
        "literal string",
        format!("[smtp]\npassword = '{v}'\n"),
        &v,
    ));
    let v = format!("cio{}", mixed(r, ALNUM, 32));
    out.push(at(
        "toml",
        "cargo credentials",
        format!("[registry]\ntoken = \"{v}\"\n"),
        &v,
    ));
    let v = mixed(r, ALNUM, 40);
    out.push(at(
        "toml",
        "cargo alt registry",
        format!("[registries.internal]\ntoken = \"Bearer {v}\"\n"),
        &v,
    ));
    let v = password(r);
    out.push(at(
        "ini",
        "spaces",
        format!("[client]\nuser = backup\npassword = {v}\n"),
        &v,
    ));
    let v = password(r);
    out.push(at(
        "ini",
        "no spaces",
        format!("[mail]\nhost=smtp.example.com\npass={v}\n"),
        &v,
    ));
    let v = password(r).replace(';', "");
    out.push(at(
        "ini",
        "odbc PWD",
        format!(
            "[Reporting]\nDriver=ODBC Driver 18 for SQL Server\nServer=sql02\nUID=report\nPWD={v}\n"
        ),
        &v,
    ));
    let v = password(r);
    out.push(at(
        "ini",
        "samba credentials",
        format!("username=fileshare\npassword={v}\ndomain=CORP\n"),
        &v,
    ));
    let v = password(r);
    out.push(at(
        "ini",
        "php.ini",
        format!("mysqli.default_user = web\nmysqli.default_pw = {v}\n"),
        &v,
    ));
    let v = mixed(r, B64, 40);
    out.push(at(
        "ini",
        "aws credentials",
        format!(
            "[prod]\naws_access_key_id = AKIA{}\naws_secret_access_key = {v}\n",
            r.from("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16)
        ),
        &v,
    ));
    let v = mixed(r, B64, 40);
    out.push(at(
        "ini",
        "s3cmd",
        format!(
            "[default]\naccess_key = AKIA{}\nsecret_key = {v}\nhost_base = s3.amazonaws.com\n",
            r.from("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16)
        ),
        &v,
    ));
    let v = password(r);
    out.push(at(
        "properties",
        "spring",
        format!("spring.datasource.username=app\nspring.datasource.password={v}\n"),
        &v,
    ));
    let v = password(r);
    out.push(at(
        "properties",
        "colon separator",
        format!("jdbc.user: report\njdbc.password: {v}\n"),
        &v,
    ));
    let v = password(r);
    out.push(at(
        "properties",
        "gradle",
        format!("ossrhUsername=maintainer\nossrhPassword={v}\nsigning.keyId=24875D73\n"),
        &v,
    ));
    let v = password(r);
    out.push(at("properties", "gradle signing", format!("signing.keyId=24875D73\nsigning.password={v}\nsigning.secretKeyRingFile=/home/me/.gnupg/secring.gpg\n"), &v));
    let v = password(r).replace(['"', ';'], "");
    out.push(at("properties", "kafka jaas", format!("sasl.mechanism=PLAIN\nsasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username=\"svc\" password=\"{v}\";\n"), &v));
    let v = password(r);
    out.push(at(
        "env",
        "dotenv",
        format!("DB_HOST=localhost\nDB_PASS={v}\n"),
        &v,
    ));
    let v = password(r).replace('\'', "");
    out.push(at(
        "env",
        "export single quoted",
        format!("export PGPASSWORD='{v}'\npsql -h db -U app"),
        &v,
    ));
    let v = password(r).replace(['"', '\\', '$', '`'], "");
    out.push(at(
        "env",
        "double quoted",
        format!("REDIS_PASSWORD=\"{v}\"\n"),
        &v,
    ));
    let v = password(r);
    out.push(at(
        "env",
        "windows set",
        format!("C:\\app> set MYSQL_PWD={v}\nC:\\app> mysql -u root"),
        &v,
    ));
    let v = password(r).replace(['"', '`', '$'], "");
    out.push(at(
        "env",
        "powershell",
        format!("PS> $env:AZURE_CLIENT_SECRET = \"{v}\""),
        &v,
    ));
    let v = password(r);
    out.push(at(
        "env",
        "csh setenv",
        format!("setenv SMTP_PASSWORD {v}"),
        &v,
    ));
    let v = password(r).replace('\'', "");
    out.push(at("env", "fish", format!("set -gx DB_PASSWORD '{v}'"), &v));
    let v = password(r);
    out.push(at(
        "env",
        "dockerfile ENV",
        format!("FROM python:3.12\nENV ADMIN_PASSWORD={v}\nRUN pip install -r requirements.txt"),
        &v,
    ));
    let v = password(r);
    out.push(at(
        "env",
        "systemd Environment",
        format!("[Service]\nEnvironment=\"APP_DB_PASSWORD={v}\"\nExecStart=/usr/bin/app"),
        &v,
    ));
    let v = mixed(r, ALNUM, 50);
    out.push(at(
        "env",
        "django secret key",
        format!("SECRET_KEY = 'django-insecure-{v}'"),
        &v,
    ));
    let v = b64_body(r, 44);
    out.push(at(
        "env",
        "laravel app key",
        format!("APP_NAME=Shop\nAPP_KEY=base64:{v}\nAPP_DEBUG=false"),
        &v,
    ));
    let v = b64_body(r, 44);
    out.push(at(
        "env",
        "nextauth secret",
        format!("NEXTAUTH_URL=http://localhost:3000\nNEXTAUTH_SECRET={v}\n"),
        &v,
    ));
    let v = r.from(HEX, 128);
    out.push(at(
        "env",
        "rails secret_key_base",
        format!("SECRET_KEY_BASE={v}"),
        &v,
    ));
    let v = r.from(HEX, 64);
    out.push(at(
        "code",
        "flask secret_key bytes",
        format!("app.secret_key = bytes.fromhex(\"{v}\")"),
        &v,
    ));
    out
}

/// Connection URLs and key-value connection strings.
fn connections(r: &mut Rng) -> Vec<Case> {
    let mut out = Vec::new();
    let schemes = [
        (
            "postgres",
            "postgres://app:{}@db.internal:5432/orders?sslmode=require",
        ),
        ("postgresql", "postgresql://readonly:{}@10.0.3.7/analytics"),
        ("mysql", "mysql://root:{}@127.0.0.1:3306/shop"),
        (
            "mariadb",
            "mariadb://web:{}@maria:3306/site?charset=utf8mb4",
        ),
        (
            "mongodb",
            "mongodb://admin:{}@mongo-0.mongo,mongo-1.mongo:27017/app?replicaSet=rs0&authSource=admin",
        ),
        (
            "mongodb+srv",
            "mongodb+srv://atlas_user:{}@cluster0.ab1cd.mongodb.net/?retryWrites=true&w=majority",
        ),
        ("redis no user", "redis://:{}@redis.cache:6379/0"),
        (
            "rediss",
            "rediss://default:{}@eu1-fast-cat-31337.upstash.io:6379",
        ),
        ("amqp", "amqp://guest_ops:{}@rabbit:5672/%2Fprod"),
        (
            "amqps",
            "amqps://svc:{}@b-1234.mq.eu-west-1.amazonaws.com:5671",
        ),
        ("mqtt", "mqtt://sensor:{}@broker.local:1883"),
        ("nats", "nats://worker:{}@nats:4222"),
        ("clickhouse", "clickhouse://default:{}@ch:9000/metrics"),
        ("couchdb", "http://admin:{}@couch:5984/_all_dbs"),
        (
            "elasticsearch",
            "https://elastic:{}@es01:9200/_cluster/health",
        ),
        ("neo4j", "bolt://neo4j:{}@graph:7687"),
        ("sqlserver", "sqlserver://sa:{}@mssql:1433?database=master"),
        ("smtp", "smtps://mailer%40example.com:{}@smtp.gmail.com:465"),
        ("ftp", "ftp://upload:{}@ftp.example.net/incoming/"),
        ("sftp", "sftp://backup:{}@nas.lan:22/volume1"),
        (
            "git https",
            "https://ci-user:{}@git.example.com/team/repo.git",
        ),
        ("influxdb", "influxdb://telegraf:{}@influx:8086/telegraf"),
        (
            "cockroach",
            "postgresql://root:{}@crdb-public:26257/defaultdb?sslmode=verify-full",
        ),
        ("ldap", "ldaps://cn=reader,dc=corp:{}@ldap.corp:636"),
        ("memcached sasl", "memcached://cache_user:{}@mc:11211"),
        ("etcd", "https://root:{}@etcd-0:2379"),
        ("kafka sasl url", "kafka+ssl://svc:{}@kafka-1:9093"),
        ("proxy", "http://proxyuser:{}@proxy.corp:3128"),
    ];
    for (i, (scheme, template)) in schemes.iter().enumerate() {
        let v = url_password(r);
        let url = template.replace("{}", &v);
        let text = match i % 4 {
            0 => format!("DATABASE_URL={url}"),
            1 => format!("connecting to {url} ..."),
            2 => format!("url: \"{url}\""),
            _ => format!("$ app --dsn '{url}' --migrate"),
        };
        out.push(at("connection url", scheme, text, &v));
    }
    // A password percent-encoded because it holds reserved characters.
    let raw = format!(
        "{}@{}#{}",
        mixed(r, ALNUM, 5),
        mixed(r, ALNUM, 4),
        mixed(r, ALNUM, 5)
    );
    let v = raw.replace('@', "%40").replace('#', "%23");
    out.push(at(
        "connection url",
        "percent-encoded password",
        format!("postgres://app:{v}@db:5432/app"),
        &v,
    ));
    let v = url_password(r);
    out.push(at(
        "connection string",
        "jdbc postgresql query",
        format!("jdbc:postgresql://db:5432/app?user=app&password={v}&ssl=true"),
        &v,
    ));
    let v = url_password(r);
    out.push(at(
        "connection string",
        "jdbc mysql query",
        format!("jdbc:mysql://mysql:3306/shop?user=shop&password={v}"),
        &v,
    ));
    let v = url_password(r);
    out.push(at(
        "connection string",
        "jdbc sqlserver",
        format!("jdbc:sqlserver://sql:1433;databaseName=erp;user=erp;password={v};encrypt=true"),
        &v,
    ));
    let v = url_password(r);
    out.push(at(
        "connection string",
        "jdbc oracle thin",
        format!("jdbc:oracle:thin:scott/{v}@//orahost:1521/ORCLPDB1"),
        &v,
    ));
    let v = password(r).replace([';', '\'', '"'], "");
    out.push(at("connection string", "ado.net", format!("Server=tcp:shop.database.windows.net,1433;Initial Catalog=shop;User ID=shopadmin;Password={v};Encrypt=True;"), &v));
    let v = format!(
        "{}}};{}({}",
        mixed(r, ALNUM, 6),
        mixed(r, ALNUM, 5),
        mixed(r, ALNUM, 4)
    );
    let braced = v.replace('}', "}}");
    out.push(at(
        "connection string",
        "odbc braced with ; and (",
        format!("DRIVER={{ODBC Driver 18 for SQL Server}};SERVER=sql03;UID=etl;PWD={{{braced}}};"),
        &braced,
    ));
    let v = password(r).replace([';', ' '], "");
    out.push(at(
        "connection string",
        "npgsql",
        format!("Host=pg;Port=5432;Username=svc;Password={v};Database=svc"),
        &v,
    ));
    let v = password(r).replace([',', ' '], "");
    out.push(at(
        "connection string",
        "stackexchange redis",
        format!("redis-prod.cache.windows.net:6380,password={v},ssl=True,abortConnect=False"),
        &v,
    ));
    let v = format!("{}=", r.from(B64, 43));
    out.push(at("connection string", "service bus", format!("Endpoint=sb://orders.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey={v}"), &v));
    let v = format!("{}==", r.from(B64, 86));
    out.push(at("connection string", "azure storage", format!("DefaultEndpointsProtocol=https;AccountName=shopassets;AccountKey={v};EndpointSuffix=core.windows.net"), &v));
    let v = format!("{}==", r.from(B64, 86));
    out.push(at(
        "connection string",
        "cosmos",
        format!("AccountEndpoint=https://shop.documents.azure.com:443/;AccountKey={v};"),
        &v,
    ));
    let v = format!("{}=", r.from(B64, 43));
    out.push(at(
        "connection string",
        "iot hub",
        format!("HostName=plant.azure-devices.net;DeviceId=press-7;SharedAccessKey={v}"),
        &v,
    ));
    let v = password(r).replace(' ', "");
    out.push(at(
        "connection string",
        "libpq keyword",
        format!("psql \"host=db port=5432 dbname=app user=app password={v} sslmode=require\""),
        &v,
    ));
    let v = url_password(r);
    out.push(at(
        "connection string",
        "mongodb in code",
        format!("client = MongoClient(\"mongodb://root:{v}@localhost:27017/\")"),
        &v,
    ));
    out
}

/// Package managers' credential files and settings.
fn package_managers(r: &mut Rng) -> Vec<Case> {
    let mut out = Vec::new();
    let v = format!("npm_{}", mixed(r, ALNUM, 36));
    out.push(at(
        "npm",
        ".npmrc authToken",
        format!("registry=https://registry.npmjs.org/\n//registry.npmjs.org/:_authToken={v}\n"),
        &v,
    ));
    let v = format!("ghp_{}", mixed(r, ALNUM, 36));
    out.push(at(
        "npm",
        ".npmrc github packages",
        format!("@acme:registry=https://npm.pkg.github.com\n//npm.pkg.github.com/:_authToken={v}"),
        &v,
    ));
    let v = base64(format!("deploy:{}", password(r)).as_bytes());
    out.push(at(
        "npm",
        ".npmrc _auth",
        format!("_auth={v}\nalways-auth=true"),
        &v,
    ));
    let v = base64(password(r).as_bytes());
    out.push(at("npm", ".npmrc _password", format!("//nexus.corp/repository/npm/:username=build\n//nexus.corp/repository/npm/:_password={v}"), &v));
    let v = mixed(r, ALNUM, 40);
    out.push(at("npm", "yarnrc.yml", format!("npmRegistries:\n  \"https://npm.corp\":\n    npmAlwaysAuth: true\n    npmAuthToken: \"{v}\"\n"), &v));
    let v = url_password(r);
    out.push(at(
        "pip",
        "pip.conf index-url",
        format!("[global]\nindex-url = https://builder:{v}@pypi.corp/simple\n"),
        &v,
    ));
    let v = format!("pypi-AgEIcHlwaS5vcmc{}", mixed(r, B64URL, 120));
    out.push(at(
        "pip",
        ".pypirc",
        format!("[pypi]\nusername = __token__\npassword = {v}\n"),
        &v,
    ));
    let v = url_password(r);
    out.push(at("pip", "PIP_EXTRA_INDEX_URL", format!("PIP_EXTRA_INDEX_URL=https://aws:{v}@corp-123456789012.d.codeartifact.eu-west-1.amazonaws.com/pypi/py/simple/"), &v));
    let v = password(r);
    out.push(at(
        "poetry",
        "auth.toml",
        format!("[http-basic.internal]\nusername = \"ci\"\npassword = \"{v}\"\n"),
        &v,
    ));
    let v = format!("{{{}}}", b64_body(r, 44));
    out.push(at("maven", "encrypted password", format!("<server>\n  <id>central</id>\n  <username>me</username>\n  <password>{v}</password>\n</server>"), &v));
    let v = format!("rubygems_{}", r.from(HEX, 48));
    out.push(at(
        "gem",
        "credentials",
        format!("---\n:rubygems_api_key: {v}\n"),
        &v,
    ));
    let v = url_password(r);
    out.push(at(
        "bundler",
        "env credentials",
        format!("BUNDLE_GEMS__CONTRIBSYS__COM=license:{v}"),
        &v,
    ));
    let v = password(r);
    out.push(at_json(
        "composer",
        "auth.json http-basic",
        json!({"http-basic": {"repo.packagist.com": {"username": "token", "password": v}}}),
        &v,
    ));
    let v = format!("ghp_{}", mixed(r, ALNUM, 36));
    out.push(at_json(
        "composer",
        "auth.json github-oauth",
        json!({"github-oauth": {"github.com": v}}),
        &v,
    ));
    let v = mixed(r, ALNUM, 46);
    out.push(at("nuget", "config apikeys", format!("<apikeys>\n  <add key=\"https://api.nuget.org/v3/index.json\" value=\"{v}\" />\n</apikeys>"), &v));
    let v = base64(format!("robot$ci:{}", mixed(r, ALNUM, 32)).as_bytes());
    out.push(at_json(
        "docker",
        "config.json auths",
        json!({"auths": {"registry.corp:5000": {"auth": v}}}),
        &v,
    ));
    let v = url_password(r);
    out.push(at(
        "go",
        "GOPROXY with credentials",
        format!("GOPROXY=https://go:{v}@athens.corp,direct"),
        &v,
    ));
    let v = url_password(r);
    out.push(at(
        "conda",
        ".condarc channel",
        format!("channels:\n  - https://user:{v}@conda.corp/channel\n"),
        &v,
    ));
    let v = r.from(HEX, 32);
    out.push(at(
        "hex",
        "env",
        format!("HEX_API_KEY={v} mix hex.publish"),
        &v,
    ));
    let v = mixed(r, B64URL, 50);
    out.push(at(
        "gradle",
        "init script",
        format!("credentials {{\n    username = \"ci\"\n    password = \"{v}\"\n}}"),
        &v,
    ));
    out
}

/// The configuration half of the set.
pub(crate) fn config_cases(r: &mut Rng) -> Vec<Case> {
    let mut out = files(r);
    out.extend(connections(r));
    out.extend(package_managers(r));
    out
}
