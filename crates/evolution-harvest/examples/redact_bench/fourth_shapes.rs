//! The fourth held-out set's configuration, command, code and prose shapes (see
//! [`crate::fourth`]), each placed as its round selects.

use crate::fourth_place::{Kind, bytes, placed, quote_safe, shell_safe, uuid};
use crate::secrets::{ALNUM, B64, Case, HEX, Rng, UPPER_DIGIT, base64, mixed};
use crate::shapes::password;

/// Configuration, command, code and prose shapes, each placed as `round` selects.
pub(crate) fn shapes(rng: &mut Rng, round: usize, out: &mut Vec<Case>) {
    let raw = password(rng);
    let sv = shell_safe(&raw);
    let sv = sv.as_str();
    let qv = quote_safe(&password(rng));
    let qv = qv.as_str();
    let ora = mixed(rng, ALNUM, 14);
    let ora = ora.as_str();
    let key = mixed(rng, ALNUM, 32);
    let key = key.as_str();
    let aws = mixed(rng, B64, 40);
    let aws = aws.as_str();
    let hex32 = rng.from(HEX, 32);
    let hex32 = hex32.as_str();
    let id = uuid(rng);
    let id = id.as_str();
    let n = rng.below(300) + 5;
    let mut add = |family: &'static str, kind: Kind, text: String, secret: &str| {
        out.push(placed(family, kind, round, text, secret, n));
    };
    use Kind::{Code, Command, File, Prose};

    // Configuration files.
    add(
        "my.cnf",
        File,
        format!("[client]\nuser=backup\npassword={sv}\nhost=db.internal\n"),
        sv,
    );
    add(
        "wpa_supplicant",
        File,
        format!("network={{\n\tssid=\"office-5g\"\n\tpsk=\"{qv}\"\n\tkey_mgmt=WPA-PSK\n}}\n"),
        qv,
    );
    add(
        "hostapd",
        File,
        format!("interface=wlan0\nssid=lab\nwpa=2\nwpa_passphrase={sv}\n"),
        sv,
    );
    add(
        "networkmanager",
        File,
        format!("[wifi-security]\nkey-mgmt=wpa-psk\npsk={sv}\n"),
        sv,
    );
    add(
        "tomcat-users",
        File,
        format!(
            "<tomcat-users>\n  <user username=\"admin\" password=\"{qv}\" roles=\"manager-gui,admin-gui\"/>\n</tomcat-users>\n"
        ),
        qv,
    );
    add(
        "xml property",
        File,
        format!("<property name=\"hibernate.connection.password\">{qv}</property>\n"),
        qv,
    );
    add(
        "xml property",
        File,
        format!("<property name=\"javax.persistence.jdbc.password\" value=\"{qv}\"/>\n"),
        qv,
    );
    add(
        "tomcat keystore",
        File,
        format!(
            "<Connector port=\"8443\" SSLEnabled=\"true\" keystoreFile=\"conf/ks.jks\" keystorePass=\"{qv}\"/>\n"
        ),
        qv,
    );
    add(
        "sasl_passwd",
        File,
        format!("[smtp.example.net]:587 apikey:{sv}\n"),
        sv,
    );
    add(
        "sasl_passwd",
        File,
        format!("smtp.example.com ops@example.com:{sv}\n"),
        sv,
    );
    add(
        "haproxy",
        File,
        format!("listen stats\n    bind :8404\n    stats enable\n    stats auth admin:{sv}\n"),
        sv,
    );
    add(
        "haproxy",
        File,
        format!("userlist admins\n    user ops insecure-password {sv}\n"),
        sv,
    );
    add(
        "chap-secrets",
        File,
        format!("# client server secret IP\n\"vpnuser\" * \"{qv}\" *\n"),
        qv,
    );
    add(
        "fetchmailrc",
        File,
        format!(
            "poll imap.example.com protocol IMAP user \"me@example.com\" password \"{qv}\" ssl\n"
        ),
        qv,
    );
    add(
        "muttrc",
        File,
        format!("set imap_user = \"me@example.com\"\nset imap_pass = \"{qv}\"\n"),
        qv,
    );
    add(
        "msmtprc",
        File,
        format!("account work\nhost smtp.example.com\nuser me@example.com\npassword {sv}\n"),
        sv,
    );
    add(
        "fstab",
        File,
        format!("//fs01/share /mnt/share cifs username=svc,password={sv},uid=1000 0 0\n"),
        sv,
    );
    add(
        "k8s secret",
        File,
        format!(
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\ntype: Opaque\ndata:\n  password: {}\n",
            base64(raw.as_bytes())
        ),
        &base64(raw.as_bytes()),
    );
    add(
        "k8s secret",
        File,
        format!("kind: Secret\nstringData:\n  api-key: {key}\n"),
        key,
    );
    add(
        "systemd unit",
        File,
        format!("[Service]\nEnvironment=\"API_TOKEN={key}\"\nExecStart=/usr/bin/app\n"),
        key,
    );
    add(
        "grafana.ini",
        File,
        format!("[security]\nadmin_user = admin\nadmin_password = {sv}\n"),
        sv,
    );
    add(
        "kibana.yml",
        File,
        format!("elasticsearch.username: kibana_system\nelasticsearch.password: \"{qv}\"\n"),
        qv,
    );
    add(
        "rabbitmq.conf",
        File,
        format!("default_user = app\ndefault_pass = {sv}\n"),
        sv,
    );
    add(
        "pgbouncer userlist",
        File,
        format!("\"app\" \"{qv}\"\n"),
        qv,
    );
    add(
        "web.config",
        File,
        format!(
            "<connectionStrings>\n  <add name=\"Default\" connectionString=\"Data Source=sql01;Initial Catalog=shop;User Id=sa;Password={sv};\" />\n</connectionStrings>\n"
        ),
        sv,
    );
    let wg = base64(&bytes(rng, 32));
    add(
        "wireguard",
        File,
        format!("[Interface]\nPrivateKey = {wg}\nAddress = 10.8.0.2/24\n"),
        &wg,
    );
    add(
        "jupyter",
        File,
        format!("c.ServerApp.token = '{}'\n", &hex32),
        hex32,
    );
    add(
        "kaggle.json",
        File,
        format!("{{\"username\":\"jdoe\",\"key\":\"{hex32}\"}}"),
        hex32,
    );
    add(
        "boto",
        File,
        format!(
            "[Credentials]\ngs_access_key_id = GOOG1E{}\ngs_secret_access_key = {aws}\n",
            rng.from(UPPER_DIGIT, 20)
        ),
        aws,
    );
    add(
        "cargo credentials",
        File,
        format!("[registries.corp]\ntoken = \"Bearer {key}\"\n"),
        key,
    );
    add(
        "gem credentials",
        File,
        format!("---\n:rubygems_api_key: {hex32}\n"),
        hex32,
    );
    add(
        "ngrok.yml",
        File,
        format!("version: \"2\"\nauthtoken: {key}\n"),
        key,
    );
    add(
        "dockerfile",
        File,
        format!("FROM node:20\nARG NPM_TOKEN={key}\nRUN npm ci\n"),
        key,
    );
    add(
        "makefile",
        File,
        format!("DB_PASS ?= {sv}\n\nmigrate:\n\t./migrate -p $(DB_PASS)\n"),
        sv,
    );
    add(
        "toml",
        File,
        format!("[smtp]\nhost = 'smtp.example.com'\napi_secret = '{qv}'\n"),
        qv,
    );
    add(
        "cfg colon",
        File,
        format!("[database]\nhost: db01\npassword: {sv}\n"),
        sv,
    );
    add(
        "compose healthcheck",
        File,
        format!(
            "    healthcheck:\n      test: [\"CMD\", \"mysqladmin\", \"ping\", \"-uroot\", \"-p{sv}\"]\n"
        ),
        sv,
    );
    add(
        "terraform provider",
        File,
        format!(
            "provider \"aws\" {{\n  region     = \"us-east-1\"\n  access_key = \"AKIA{}\"\n  secret_key = \"{aws}\"\n}}\n",
            rng.from(UPPER_DIGIT, 16)
        ),
        aws,
    );
    add(
        "vagrantfile",
        File,
        format!(
            "Vagrant.configure(\"2\") do |config|\n  config.ssh.username = \"deploy\"\n  config.ssh.password = \"{qv}\"\nend\n"
        ),
        qv,
    );

    // Command lines.
    add(
        "openssl",
        Command,
        format!(
            "openssl pkcs12 -export -in cert.pem -inkey key.pem -out bundle.p12 -passout pass:{sv}"
        ),
        sv,
    );
    add(
        "openssl",
        Command,
        format!("openssl enc -d -aes-256-cbc -in db.sql.enc -out db.sql -pass pass:{sv}"),
        sv,
    );
    add(
        "gpg",
        Command,
        format!("gpg --batch --yes --pinentry-mode loopback --passphrase {sv} -d secrets.tar.gpg"),
        sv,
    );
    add(
        "kubectl literal",
        Command,
        format!(
            "kubectl create secret generic db-creds --from-literal=username=app --from-literal=password={sv}"
        ),
        sv,
    );
    add(
        "helm set",
        Command,
        format!(
            "helm upgrade --install pg bitnami/postgresql --set auth.postgresPassword={sv} --set auth.database=app"
        ),
        sv,
    );
    add(
        "terraform var",
        Command,
        format!("terraform apply -var 'db_password={sv}' -auto-approve"),
        sv,
    );
    add(
        "aws configure",
        Command,
        format!("aws configure set aws_secret_access_key {aws}"),
        aws,
    );
    add(
        "paas config",
        Command,
        format!("heroku config:set SMTP_PASSWORD={sv} -a shop-api"),
        sv,
    );
    add(
        "paas config",
        Command,
        format!("fly secrets set DATABASE_PASSWORD={sv} STRIPE_MODE=live"),
        sv,
    );
    add(
        "wget",
        Command,
        format!("wget --user=ci --password={sv} https://repo.example.com/artifact.tgz"),
        sv,
    );
    add(
        "sqlplus",
        Command,
        format!("sqlplus system/{ora}@//db.example.com:1521/ORCLPDB1"),
        ora,
    );
    add(
        "bcp",
        Command,
        format!("bcp dbo.orders out orders.dat -S sql01 -U sa -P {sv} -c"),
        sv,
    );
    add(
        "ipmitool",
        Command,
        format!("ipmitool -I lanplus -H 10.0.0.9 -U ADMIN -P {sv} chassis power status"),
        sv,
    );
    add(
        "snmp",
        Command,
        format!("snmpwalk -v3 -l authPriv -u monitor -a SHA -A {sv} -x AES -X {ora} 10.0.0.1"),
        sv,
    );
    add(
        "chpasswd",
        Command,
        format!("echo 'deploy:{sv}' | sudo chpasswd"),
        sv,
    );
    add(
        "cmdkey",
        Command,
        format!("cmdkey /add:fs01.corp.local /user:CORP\\svc_backup /pass:{sv}"),
        sv,
    );
    add(
        "powershell",
        Command,
        format!("$pw = ConvertTo-SecureString '{sv}' -AsPlainText -Force"),
        sv,
    );
    add(
        "net user",
        Command,
        format!("net user backup {sv} /add"),
        sv,
    );
    add(
        "java property",
        Command,
        format!("java -Djavax.net.ssl.keyStorePassword={sv} -jar service.jar"),
        sv,
    );
    add(
        "java property",
        Command,
        format!("mvn deploy -Dgpg.passphrase={sv} -DskipTests"),
        sv,
    );
    add(
        "gradle property",
        Command,
        format!("./gradlew publish -PsigningInMemoryKeyPassword={sv}"),
        sv,
    );
    add(
        "dotnet nuget",
        Command,
        format!(
            "dotnet nuget add source https://pkgs.example.com/nuget/v3/index.json -n corp -u ci -p {sv} --store-password-in-clear-text"
        ),
        sv,
    );
    add(
        "expect",
        Command,
        format!(
            "expect -c 'spawn ssh admin@10.0.0.5; expect \"password:\"; send \"{sv}\\r\"; interact'"
        ),
        sv,
    );
    add(
        "mongosh",
        Command,
        format!("mongosh \"mongodb://db01:27017/admin\" --username root --password {sv}"),
        sv,
    );
    add(
        "influx",
        Command,
        format!("influx -host db -username admin -password {sv} -execute 'SHOW DATABASES'"),
        sv,
    );
    add(
        "psexec",
        Command,
        format!("psexec \\\\srv01 -u CORP\\admin -p {sv} cmd /c ipconfig"),
        sv,
    );
    add(
        "backup passphrase",
        Command,
        format!("RESTIC_PASSWORD={sv} restic -r s3:s3.amazonaws.com/backups snapshots"),
        sv,
    );
    add(
        "backup passphrase",
        Command,
        format!("export BORG_PASSPHRASE='{sv}'"),
        sv,
    );
    add(
        "rsync",
        Command,
        format!("RSYNC_PASSWORD={sv} rsync -av rsync://backup@nas01/share/ ./restore/"),
        sv,
    );
    add(
        "mount cifs",
        Command,
        format!("sudo mount -t cifs //fs01/share /mnt -o username=svc,password={sv},vers=3.0"),
        sv,
    );
    add(
        "redis-server",
        Command,
        format!("redis-server --port 6380 --requirepass {sv}"),
        sv,
    );
    add(
        "minio client",
        Command,
        format!("mc alias set s3 https://minio.example.com minioadmin {aws}"),
        aws,
    );
    add(
        "rclone create",
        Command,
        format!(
            "rclone config create remote s3 provider AWS access_key_id AKIA{} secret_access_key {aws}",
            rng.from(UPPER_DIGIT, 16)
        ),
        aws,
    );
    add(
        "s3cmd",
        Command,
        format!(
            "s3cmd --access_key=AKIA{} --secret_key={aws} ls s3://backups",
            rng.from(UPPER_DIGIT, 16)
        ),
        aws,
    );
    add(
        "git clone token",
        Command,
        format!("git clone https://x-access-token:{key}@github.com/acme/infra.git"),
        key,
    );
    add(
        "curl header",
        Command,
        format!(
            "curl --header \"PRIVATE-TOKEN: {}\" https://gitlab.example.com/api/v4/projects",
            &key[..20]
        ),
        &key[..20],
    );
    add(
        "curl header",
        Command,
        format!("curl -H \"X-Vault-Token: {key}\" https://vault.example.com/v1/secret/data/app"),
        key,
    );
    add(
        "curl header",
        Command,
        format!("curl -H 'Ocp-Apim-Subscription-Key: {hex32}' https://api.example.com/v2/items"),
        hex32,
    );
    add(
        "curl header",
        Command,
        format!(
            "curl -X POST https://api.postmarkapp.com/email -H \"X-Postmark-Server-Token: {id}\" -d @mail.json"
        ),
        id,
    );
    add(
        "curl header",
        Command,
        format!("curl --oauth2-bearer {key} https://api.example.com/me"),
        key,
    );
    add(
        "vault approle",
        Command,
        format!(
            "vault write auth/approle/login role_id={} secret_id={id}",
            uuid(rng)
        ),
        id,
    );
    add(
        "consul token",
        Command,
        format!("consul kv get -token={id} config/app/db"),
        id,
    );

    // Code.
    add(
        "libpq string",
        Code,
        format!("conn = psycopg2.connect(\"host=db dbname=app user=app password={ora}\")"),
        ora,
    );
    add(
        "python keyword",
        Code,
        format!("db = mysql.connector.connect(host=\"db\", user=\"root\", passwd=\"{qv}\")"),
        qv,
    );
    add(
        "python positional",
        Code,
        format!("resp = requests.get(url, auth=(\"ci\", \"{qv}\"))"),
        qv,
    );
    add(
        "python positional",
        Code,
        format!("server.login(\"alerts@example.com\", \"{qv}\")"),
        qv,
    );
    add(
        "python environ",
        Code,
        format!("os.environ[\"DB_PASSWORD\"] = \"{qv}\""),
        qv,
    );
    add(
        "go setenv",
        Code,
        format!("os.Setenv(\"API_SECRET\", \"{key}\")"),
        key,
    );
    add("php array", Code, format!("    'password' => '{qv}',"), qv);
    add("php variable", Code, format!("$db_pass = '{qv}';"), qv);
    add("ruby hash", Code, format!("  :password => \"{qv}\","), qv);
    add(
        "js object",
        Code,
        format!("const smtp = {{ user: \"app\", pass: \"{qv}\" }};"),
        qv,
    );
    add(
        "csharp credential",
        Code,
        format!("var cred = new NetworkCredential(\"svc\", \"{qv}\");"),
        qv,
    );
    add(
        "oracle jdbc",
        Code,
        format!("url = \"jdbc:oracle:thin:scott/{ora}@db01:1521/ORCL\""),
        ora,
    );
    add(
        "odbc string",
        Code,
        format!(
            "cs = \"Driver={{ODBC Driver 18 for SQL Server}};Server=tcp:sql01,1433;UID=sa;PWD={sv};Encrypt=yes\""
        ),
        sv,
    );

    // Output and logs.
    add(
        "cookie",
        Code,
        format!("> Cookie: sessionid={key}; csrftoken={hex32}"),
        key,
    );
    add(
        "cookie",
        Code,
        format!("< Set-Cookie: session={key}; Path=/; HttpOnly; Secure"),
        key,
    );
    add(
        "oauth response",
        Code,
        format!(
            "{{\"access_token\":\"{hex32}\",\"token_type\":\"Bearer\",\"expires_in\":3599,\"refresh_token\":\"{key}\"}}"
        ),
        key,
    );
    add(
        "sts output",
        Code,
        format!(
            "{{\n    \"Credentials\": {{\n        \"AccessKeyId\": \"ASIA{}\",\n        \"SecretAccessKey\": \"{aws}\",\n        \"Expiration\": \"2026-01-01T00:00:00Z\"\n    }}\n}}",
            rng.from(UPPER_DIGIT, 16)
        ),
        aws,
    );

    // Prose, in English and in other languages.
    add(
        "prose",
        Prose,
        format!("creds for the test box are admin / {sv}"),
        sv,
    );
    add(
        "prose",
        Prose,
        format!("login: admin pass: {sv} (change it after)"),
        sv,
    );
    add(
        "prose",
        Prose,
        format!("use {sv} to log in as root on the NAS"),
        sv,
    );
    add(
        "prose other language",
        Prose,
        format!("la contraseña del wifi es {sv}"),
        sv,
    );
    add(
        "prose other language",
        Prose,
        format!("das Passwort lautet {sv}"),
        sv,
    );
    add(
        "prose other language",
        Prose,
        format!("le mot de passe est {sv}"),
        sv,
    );

    // Key files.
    let lines: Vec<String> = (0..4).map(|_| rng.from(B64, 64)).collect();
    let second = lines.get(1).cloned().unwrap_or_default();
    add(
        "putty key",
        File,
        format!(
            "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: deploy@ci\nPublic-Lines: 2\nAAAAC3NzaC1lZDI1NTE5AAAAI{}\n{}\nPrivate-Lines: 4\n{}\nPrivate-MAC: {}\n",
            rng.from(B64, 40),
            rng.from(B64, 20),
            lines.join("\n"),
            rng.from(HEX, 64)
        ),
        &second,
    );
    add(
        "openssh key",
        File,
        format!(
            "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n{}\n-----END OPENSSH PRIVATE KEY-----\n",
            lines.join("\n")
        ),
        &second,
    );
    add(
        "ec key",
        File,
        format!(
            "-----BEGIN EC PRIVATE KEY-----\n{}\n-----END EC PRIVATE KEY-----\n",
            lines.join("\n")
        ),
        &second,
    );
    add(
        "encrypted key",
        File,
        format!(
            "-----BEGIN ENCRYPTED PRIVATE KEY-----\n{}\n-----END ENCRYPTED PRIVATE KEY-----\n",
            lines.join("\n")
        ),
        &second,
    );
    let hex_lines: Vec<String> = (0..16).map(|_| rng.from(HEX, 32)).collect();
    let third = hex_lines.get(2).cloned().unwrap_or_default();
    add(
        "openvpn static key",
        File,
        format!(
            "#\n# 2048 bit OpenVPN static key\n#\n-----BEGIN OpenVPN Static key V1-----\n{}\n-----END OpenVPN Static key V1-----\n",
            hex_lines.join("\n")
        ),
        &third,
    );
    let psk = base64(&bytes(rng, 32));
    add(
        "wireguard",
        File,
        format!(
            "[Peer]\nPublicKey = {}\nPresharedKey = {psk}\nEndpoint = vpn.example.com:51820\n",
            base64(&bytes(rng, 32))
        ),
        &psk,
    );
}
