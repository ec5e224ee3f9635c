#!/usr/bin/env python3
"""Secret probes through the real binary (helper breaker4, twelfth session).

Usage: scripts/scrub-probes.py BINARY [CLASS-OR-NAME-PART]

Each probe's text is folded (fold --file) and ingested (an OpenAI chat
transcript) into new stores by BINARY; every byte of each store and the
command's output is searched, ignoring case, for each needle. A probe marked
to stay must keep its needles (nothing redacted). Values are generated at run
time (seed SEED, default 4): no secret-looking literal is committed. Prints,
per class, the probes whose needle reached disk ("fold", "ingest") or whose
look-alike changed. Build the binary with
  go build -o /tmp/contextfold ./cmd/contextfold
and compare two binaries (main and a branch) on the same seed."""
import base64, json, os, random, shutil, subprocess, sys, tempfile, urllib.parse
BIN = sys.argv[1]
ONLY = sys.argv[2] if len(sys.argv) > 2 else None
rnd = random.Random(int(os.environ.get("SEED", "4")))
AL = "abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789"
def S(n=14, sym=""):
    s = "".join(rnd.choice(AL) for _ in range(n))
    s = s[:3] + rnd.choice("23456789") + s[4:7] + rnd.choice("QWXZ") + s[8:]
    if sym: s = s[:5] + sym + s[5:]
    return s
def b64(x): return base64.b64encode(x.encode()).decode()
P = []  # (class, name, text, needles, must_stay)
def add(cls, name, text, needles, stay=False): P.append((cls, name, text, needles, stay))

# 1. URL passwords holding '/'
a, b = S(6), S(8); add("url-slash", "postgres a/b", f"DATABASE={''}postgres://app:{a}/{b}@db:5432/x", [f"{a}/{b}", b])
a, b = S(5), S(9); add("url-slash", "https u:a/b@host", f"git remote add origin https://u:{a}/{b}@git.example.com/org/repo.git", [b])
a, b = S(7), S(7); add("url-slash", "mysql in json", json.dumps({"DATABASE_URL": f"mysql://root:{a}/{b}@127.0.0.1:3306/app"}), [b])
a, b = S(6), S(6); add("url-slash", "redis empty user", f"REDIS=redis://:{a}/{b}@cache:6379/0", [b])
a, b, c = S(4), S(5), S(6); add("url-slash", "two slashes", f"psql 'postgresql://svc:{a}/{b}/{c}@10.0.0.7/app'", [c, b])
a, b = S(6), S(6); add("url-slash", "amqp in log", f"connecting to amqp://guest:{a}/{b}@rabbit.internal:5672/vhost ...", [b])
# must stay: ordinary URLs with @ in the path
add("url-slash-stay", "npm scoped path", "see https://www.npmjs.com/package/@types/node and https://github.com/foo:bar/baz@v1.2.3", ["www.npmjs.com/package/@types/node", "foo:bar/baz@v1.2.3"], True)
add("url-slash-stay", "medium at path", "read https://medium.com/@alice/post-1 and http://host:8080/a/b@c.example.com", ["medium.com/@alice/post-1", "8080/a/b@c"], True)

# 2. values only a position marks
u, p = "alice@example.com", S(12)
blob = base64.b64encode(f"\0{u}\0{p}".encode()).decode()
add("position", "smtp AUTH PLAIN", f"=== Connected to smtp.example.com.\n -> EHLO me\n<-  250-AUTH LOGIN PLAIN\n -> AUTH PLAIN {blob}\n<-  235 2.7.0 Authentication successful", [blob, p])
p2 = S(12); ub, pb = b64(u), b64(p2)
add("position", "smtp AUTH LOGIN", f"C: AUTH LOGIN\nS: 334 VXNlcm5hbWU6\nC: {ub}\nS: 334 UGFzc3dvcmQ6\nC: {pb}\nS: 235 Authentication succeeded", [pb, p2])
p3 = S(12); blob3 = base64.b64encode(f"\0bob\0{p3}".encode()).decode()
add("position", "openssl s_client AUTH PLAIN", f"$ openssl s_client -starttls smtp -connect mail:587\n250 HELP\nauth plain {blob3}\n235 2.7.0 Accepted", [blob3, p3])
p4 = S(12, "#"); add("position", "expect send", f'#!/usr/bin/expect -f\nspawn ssh admin@10.0.0.5\nexpect "*assword*"\nsend "{p4}\\r"\ninteract', [p4])
p5 = S(12); add("position", "expect braces", f'spawn sftp deploy@files\nexpect {{\n  "Password:" {{ send "{p5}\\n"; exp_continue }}\n  "sftp>" {{ send "put x\\n" }}\n}}', [p5])
p6 = S(10); add("position", "expect -re passphrase", f"expect -re \"passphrase for key.*:\"\nsend -- \"{p6}\\r\"", [p6])
p7, p8 = S(12), S(11); add("position", "csv password column", f"username,password,email\nalice,{p7},alice@example.com\nbob,{p8},bob@example.com\n", [p7, p8])
p9 = S(20); add("position", "csv api_key column", f"id,name,api_key,created\n1,prod,{p9},2024-01-01\n", [p9])
p10 = S(16); add("position", "tsv token column", f"name\ttoken\tscope\nci\t{p10}\trepo\n", [p10])
p11 = S(12); add("position", "csv quoted secret col", f'"Name","Secret","Notes"\n"svc-a","{p11}","rotated"\n', [p11])
p12 = S(12); add("position", "pgpass cat", f"$ cat ~/.pgpass\ndb.example.com:5432:app:appuser:{p12}\n", [p12])
p13 = S(12); add("position", "pgpass localhost star", f"localhost:*:*:postgres:{p13}", [p13])
p14 = S(6) + "\\:" + S(6); add("position", "pgpass escaped colon", f"# ~/.pgpass\n*:5432:*:repl:{p14}", [p14.split('\\:')[1]])
pin = str(rnd.randint(10**7, 10**8 - 1)); add("position", "PIN label", f"SIM unlocked. PIN: {pin}\nPUK: 1234", [pin])
pin2 = str(rnd.randint(10**5, 10**6 - 1)); add("position", "pin code prose", f"The door pin code is {pin2}, change it monthly.", [pin2])
pin3 = str(rnd.randint(10**5, 10**6 - 1)); add("position", "PIN=", f"export YUBIKEY_PIN={pin3}", [pin3])
add("position-stay", "bare uuid", "request id 3f2b8c1e-9a4d-4e2b-8f1a-2c3d4e5f6a7b failed", ["3f2b8c1e-9a4d-4e2b-8f1a-2c3d4e5f6a7b"], True)
add("position-stay", "csv no secret", "id,name,email\n1,alice,alice@example.com\n", ["alice@example.com"], True)
add("position-stay", "csv password policy", "rule,password_min_length,password_history\nstrict,12,5\n", ["strict,12,5"], True)

# 3. fresh round
p = S(10, "!"); add("fresh", "percent-encoded url pw", f"mongodb://admin:{urllib.parse.quote(p, safe='')}@mongo.internal:27017/admin", [urllib.parse.quote(p, safe='')])
p = S(14, "@"); add("fresh", "percent query password", f"GET /login?user=bob&password={urllib.parse.quote(p, safe='')} HTTP/1.1", [urllib.parse.quote(p, safe='')])
p = S(16); add("fresh", "json \\u in name", '{"pass\\u0077ord": "' + p + '"}', [p])
p = S(16); add("fresh", "json \\u in value", '{"api_key": "\\u0041' + p + '"}', [p])
p = S(16); add("fresh", "json \\u whole name", '{"\\u0070\\u0061\\u0073\\u0073\\u0077\\u006f\\u0072\\u0064": "' + p + '"}', [p])
p = S(16); add("fresh", "yaml block |", f"db:\n  password: |\n    {p}\n  host: x", [p])
p = S(16); add("fresh", "yaml block >- deeper", f"secrets:\n  api_token: >-\n      {p}\n", [p])
p = S(16); add("fresh", "yaml plain next line", f"auth:\n  password:\n    {p}\n  user: bob", [p])
p = S(12); add("fresh", "netrc one line", f"machine api.heroku.com login bob@example.com password {p}", [p])
p = S(12); add("fresh", "netrc multi", f"machine git.example.com\n  login bob\n  password {p}\n", [p])
p = S(14); a = b64("bob:" + p); add("fresh", "docker auth", json.dumps({"auths": {"registry.example.com": {"auth": a}}}, indent=2), [a, p])
p = S(14); add("fresh", "k8s secret data generic key", f"apiVersion: v1\nkind: Secret\nmetadata:\n  name: app\ntype: Opaque\ndata:\n  root: {b64(p)}\n  username: {b64('admin')}\n", [b64(p), p])
p = S(14); add("fresh", "k8s secret data password", f"kind: Secret\ndata:\n  db-pass: {b64(p)}\n", [b64(p)])
p = S(14); add("fresh", "k8s stringData", f"apiVersion: v1\nkind: Secret\nstringData:\n  connection: {p}\n", [p])
p = S(14); add("fresh", "k8s secret json", json.dumps({"apiVersion": "v1", "kind": "Secret", "data": {"hmac": b64(p)}}, indent=2), [b64(p)])
p = S(14); add("fresh", "git credential fill", f"$ printf 'protocol=https\\nhost=github.com\\n\\n' | git credential fill\nprotocol=https\nhost=github.com\nusername=bob\npassword={p}\n", [p])
p = S(12, "$"); add("fresh", "powershell securestring", f'$pw = ConvertTo-SecureString "{p}" -AsPlainText -Force', [p])
p = S(12); add("fresh", "mysql -p", f"mysql -uroot -p{p} -e 'show databases'", [p])
p = S(12); add("fresh", "PGPASSWORD inline", f"PGPASSWORD={p} psql -h db -U app", [p])
p = S(14); a = b64("bob:" + p); add("fresh", "basic header", f"> GET / HTTP/1.1\n> Authorization: Basic {a}\n", [a])
p = S(16); add("fresh", "diff +PASSWORD", f"--- a/.env\n+++ b/.env\n@@ -1,2 +1,2 @@\n-PASSWORD=changeme\n+PASSWORD={p}\n", [p])
p = S(16); add("fresh", "diff yaml", f"@@ -3 +3 @@\n-  password: old\n+  password: {p}\n", [p])
p = S(16); add("fresh", "diff json", f'-    "apiKey": "x",\n+    "apiKey": "{p}",\n', [p])
p = S(12); add("fresh", "ftp PASS", f"Connected to ftp.example.com.\n220 ready\n---> USER bob\n331 Password required\n---> PASS {p}\n230 Login successful.", [p])
p = S(12); add("fresh", "pop3 PASS", f"+OK POP3 ready\nUSER bob\n+OK\nPASS {p}\n+OK logged in", [p])
p = S(12); add("fresh", "imap LOGIN", f"* OK IMAP4rev1\na1 LOGIN bob@example.com {p}\na1 OK LOGIN completed", [p])
p = S(12); add("fresh", "nickserv identify", f"/msg NickServ IDENTIFY {p}", [p])
p = S(12); add("fresh", "snmp community", f"snmpwalk -v2c -c {p} 10.0.0.1 system", [p])
p = S(12); add("fresh", "net user", f"net user Administrator {p} /add", [p])
p = S(12); add("fresh", "cmdkey", f"cmdkey /add:fileserver /user:corp\\bob /pass:{p}", [p])
p = S(12); add("fresh", "setx", f"setx API_TOKEN {p}", [p])
p = S(12); add("fresh", "gh secret set --body", f"gh secret set DEPLOY_KEY --body {p}", [p])
p = S(12); add("fresh", "mac security -w", f"security add-generic-password -a bob -s api -w {p}", [p])
p = S(12); add("fresh", "mysqladmin password", f"mysqladmin -u root password {p}", [p])
p = S(14); add("fresh", "ldif userPassword::", f"dn: uid=bob,ou=people,dc=ex\nuserPassword:: {b64(p)}\n", [b64(p)])
p = S(14); add("fresh", "npmrc _auth", f"registry=https://npm.example.com/\n_auth = {b64('bob:'+p)}\nalways-auth=true", [b64('bob:'+p)])
p = S(14); add("fresh", "oauth fragment", f"http://localhost:3000/cb#access_token={p}&token_type=bearer&expires_in=3600", [p])
p = S(12); add("fresh", "aws configure prompt", f"$ aws configure\nAWS Access Key ID [None]: AKIAEXAMPLE\nAWS Secret Access Key [None]: {p}\nDefault region name [None]: us-east-1", [p])
p = S(12); add("fresh", "odbc PWD braces", f"DRIVER={{ODBC Driver 18}};SERVER=db;UID=sa;PWD={{{p};x}};", [p])
p = S(12); add("fresh", "ado password", f"Server=tcp:db.database.windows.net;Database=app;User ID=sa;Password={p};Encrypt=True", [p])
p = S(12); add("fresh", "kubectl from-literal", f"kubectl create secret generic app --from-literal=api-key={p}", [p])
p = S(12); add("fresh", "gpg passphrase", f"gpg --batch --passphrase {p} -d secrets.gpg", [p])
p = S(12); add("fresh", "vault login positional", f"$ vault login {p}\nSuccess! You are now authenticated.", [p])
p = S(12); add("fresh", "python kw passwd", f"conn = pymysql.connect(host='db', user='app', passwd='{p}')", [p])
p = S(12); add("fresh", "split across lines json", '{"password":\n  "' + p + '"}', [p])
p = S(20); add("fresh", "wrapped token", f"export GITHUB_TOKEN=ghp_{p[:10]}\n{p[10:]}abcdefghijklmnopqr", [p[10:]])
p = S(12); add("fresh", "sendmail AUTH in log", f"AUTH=client, relay=smtp.x.com, mech=PLAIN, bits=0\nsmtp.login('ops', '{p}')", [p])
p = S(12); add("fresh", "htpasswd -nb", f"htpasswd -nbB admin {p}", [p])
p = S(12); add("fresh", "ssh pass sed", f"sshpass -p'{p}' ssh root@h", [p])
p = S(12); add("fresh", "curl data password", f"curl -X POST -d 'username=bob&password={p}' https://x/login", [p])
p = S(12); add("fresh", "curl json password", f"curl -d '{{\"user\":\"bob\",\"pass\":\"{p}\"}}' https://x/login", [p])
p = S(12); add("fresh", "wget http-password", f"wget --http-user=bob --http-password={p} https://x/f", [p])
p = S(12); add("fresh", "rclone obscure", f"rclone config create s3 s3 secret_access_key {p}", [p])
p = S(12); add("fresh", "docker -e short", f"docker run -e MYSQL_ROOT_PASSWORD={p} mysql:8", [p])
p = S(12); add("fresh", "helm --set", f"helm install x chart --set auth.rootPassword={p}", [p])
p = S(12); add("fresh", "properties", f"spring.datasource.password={p}", [p])
p = S(12); add("fresh", "toml", f'[database]\npassword = "{p}"', [p])
p = S(12); add("fresh", "ini spaced", f"[client]\nuser = root\npassword = {p}\n", [p])
p = S(12); add("fresh", "my.cnf pass", f"[mysqldump]\nuser=root\npass={p}\n", [p])
p = S(12); add("fresh", "pypirc", f"[pypi]\nusername = bob\npassword = {p}\n", [p])
p = S(12); add("fresh", "python dict keyword", f"DATABASES = {{'default': {{'USER': 'app', 'PASSWORD': '{p}'}}}}", [p])
p = S(12); add("fresh", "go struct", f'cfg := Config{{User: "app", Password: "{p}"}}', [p])
p = S(12); add("fresh", "ruby hash rocket", f":password => '{p}'", [p])
p = S(12); add("fresh", "ruby symbol key", f"Net::SMTP.start('smtp', 25, 'x', 'bob', '{p}', :plain)", [p])
p = S(12); add("fresh", "sql connection", f"EXEC sp_addlogin 'bob', '{p}'", [p])
p = S(12); add("fresh", "alter login", f"ALTER LOGIN sa WITH PASSWORD = '{p}'", [p])
p = S(12); add("fresh", "psql \\password echo", f"CREATE USER app PASSWORD '{p}';", [p])
p = S(12); add("fresh", "env file quoted export", f"export API_SECRET='{p}'", [p])
p = S(12); add("fresh", "x-api-key header", f"-H 'x-api-key: {p}'", [p])
p = S(12); add("fresh", "private token hdr", f"PRIVATE-TOKEN: {p}", [p])
p = S(12); add("fresh", "ldapsearch -w", f"ldapsearch -x -D cn=admin,dc=ex -w {p} -b dc=ex", [p])
p = S(12); add("fresh", "openssl passin", f"openssl rsa -in k.pem -passin pass:{p}", [p])
p = S(12); add("fresh", "jdbc query password", f"jdbc:mysql://db:3306/app?user=bob&password={p}&useSSL=false", [p])
p = S(12); add("fresh", "sqlserver jdbc", f"jdbc:sqlserver://db:1433;databaseName=app;user=sa;password={p};", [p])
p = S(12); add("fresh", "proxy url env", f"export https_proxy=http://bob:{p}@proxy.corp:3128", [p])
p = S(12); add("fresh", "pip index url", f"pip install --extra-index-url https://__token__:{p}@pkgs.example.com/simple app", [p])
p = S(12); add("fresh", "psql conninfo", f"psql \"host=db port=5432 user=app password={p} dbname=x\"", [p])
p = S(12); add("fresh", "mongo -p after", f"mongosh --host db -u admin -p {p} --authenticationDatabase admin", [p])
p = S(12); add("fresh", "redis url rediss", f"rediss://default:{p}@redis-123.cloud.redislabs.com:6380", [p])
p = S(12); add("fresh", "smb mount", f"mount -t cifs //fs/share /mnt -o username=bob,password={p},vers=3.0", [p])
p = S(12); add("fresh", "davfs secrets", f"# /etc/davfs2/secrets\nhttps://dav.example.com/ bob {p}", [p])
p = S(12); add("fresh", "chap secrets", f"# /etc/ppp/chap-secrets\nbob * {p} *", [p])
p = S(12); add("fresh", "ipsec psk", f'# /etc/ipsec.secrets\n%any 203.0.113.5 : PSK "{p}"', [p])
p = S(12); add("fresh", "rsyncd secrets", f"# /etc/rsyncd.secrets\nbackup:{p}", [p])
p = S(12); add("fresh", "openvpn auth file", f"$ cat auth.txt\nbob\n{p}", [p])
p = S(12); add("fresh", "htpasswd plain user:pass", f"$ cat users.txt\nadmin:{p}\nbob:{S(12)}", [p])
p = S(12); add("fresh", "rabbitmq env", f"RABBITMQ_DEFAULT_PASS={p}", [p])
p = S(12); add("fresh", "wp-config", f"define( 'DB_PASSWORD', '{p}' );", [p])
p = S(12); add("fresh", "settings.py SECRET_KEY", f"SECRET_KEY = 'django-insecure-{p}'", [p])
p = S(12); add("fresh", "yaml quoted key", f"'password': '{p}'", [p])
p = S(12); add("fresh", "terraform tfvars", f'db_password = "{p}"', [p])
p = S(12); add("fresh", "hcl block", f'provider "x" {{\n  api_key = "{p}"\n}}', [p])
p = S(12); add("fresh", "secret in C string", f'const char *pass = "{p}";', [p])
p = S(12); add("fresh", "java string", f'String password = "{p}";', [p])
p = S(12); add("fresh", "js const", f"const apiKey = '{p}';", [p])
p = S(12); add("fresh", "rust let", f'let token = "{p}";', [p])
p = S(12); add("fresh", "shell read heredoc", f"passwd bob <<EOF\n{p}\n{p}\nEOF", [p])
p = S(12); add("fresh", "sudo prompt echo", f"[sudo] password for bob: {p}", [p])
p = S(12); add("fresh", "login prompt", f"web1 login: root\nPassword: {p}\nLast login: Mon", [p])
p = S(12); add("fresh", "esc json tool stdout", json.dumps({"stdout": f"user=bob\npassword={p}\n"}), [p])
p = S(12); add("fresh", "password in url query &amp;", f"<a href=\"/login?u=bob&amp;password={p}&amp;x=1\">", [p])
p = S(12); add("fresh", "base64 of env", b64(f"DB_PASSWORD={p}\nX=1\n"), [p, b64(f"DB_PASSWORD={p}\nX=1\n")[:24]])

p = S(12); add("fresh2", "json \\u0022 quotes", '{\\u0022password\\u0022: \\u0022' + p + '\\u0022}', [p])
p = S(12); add("fresh2", "html quot", f"&quot;password&quot;: &quot;{p}&quot;", [p])
p = S(12); add("fresh2", "xml cdata", f"<password><![CDATA[{p}]]></password>", [p])
p = S(12); add("fresh2", "sql insert columns", f"INSERT INTO users (name, email, password) VALUES ('bob', 'b@x.io', '{p}');", [p])
p = S(12); add("fresh2", "psql table", f" name | password \n------+--------------\n bob  | {p}\n(1 row)", [p])
p = S(12); add("fresh2", "mysql table", f"+------+--------------+\n| user | password     |\n+------+--------------+\n| bob  | {p} |\n+------+--------------+", [p])
p = S(12); add("fresh2", "yaml anchor", f"db:\n  password: &pw {p}\n  replica_password: *pw", [p])
p = S(12); add("fresh2", "toml multiline", f'password = """{p}"""', [p])
p = S(12); add("fresh2", "go flag default", f'pw := flag.String("password", "{p}", "db password")', [p])
p = S(12); add("fresh2", "azure AccountKey short", f"DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={p};EndpointSuffix=core.windows.net", [p])
p = S(12); add("fresh2", "servicebus SharedAccessKey", f"Endpoint=sb://x.servicebus.windows.net/;SharedAccessKeyName=Root;SharedAccessKey={p}", [p])
p = S(12); add("fresh2", "mongo createUser", f'db.createUser({{user: "app", pwd: "{p}", roles: ["readWrite"]}})', [p])
p = S(12); add("fresh2", "wifi qr", f"WIFI:S:office;T:WPA;P:{p};;", [p])
p = S(12); add("fresh2", "nmcli password", f"nmcli dev wifi connect office password {p}", [p])
p = S(12); add("fresh2", "wpa_passphrase out", f'network={{\n\tssid="office"\n\t#psk="{p}"\n\tpsk=5f2c0e\n}}', [p])
p = S(12); add("fresh2", "echo -e passwd", f'echo -e "{p}\\n{p}" | passwd bob', [p])
p = S(12); add("fresh2", "chpasswd herestring", f"chpasswd <<< 'bob:{p}'", [p])
p = S(12); add("fresh2", "bitcoin walletpassphrase", f'bitcoin-cli walletpassphrase "{p}" 60', [p])
p = S(12); add("fresh2", "docker secret create", f"printf '{p}' | docker secret create db_pw -", [p])
p = S(12); add("fresh2", "firebase config", f"firebase functions:config:set stripe.key={p}", [p])
p = S(12); add("fresh2", "twine -p", f"twine upload -u __token__ -p {p} dist/*", [p])
p = S(12); add("fresh2", "single-dash -password", f"influx -username admin -password {p} -execute 'SHOW DATABASES'", [p])
p = S(12); add("fresh2", "single-dash -token", f"./client -server https://x -token {p}", [p])
p = S(12); add("fresh2", "git extraheader basic", f"git -c http.extraheader='AUTHORIZATION: basic {b64('bob:'+p)}' clone https://x/r", [b64('bob:'+p)])
p = S(12); add("fresh2", "graphql login", f'mutation {{ login(email: "a@b.c", password: "{p}") {{ token }} }}', [p])
p = S(12); add("fresh2", "python kwargs spaced", f"client = Client(api_key = '{p}')", [p])
p = S(12); add("fresh2", "ruby ENV fetch default", f"ENV.fetch('API_TOKEN', '{p}')", [p])
p = S(12); add("fresh2", "node process.env default", f"const key = process.env.API_KEY || '{p}';", [p])
p = S(12); add("fresh2", "python getenv default", f"os.getenv('DB_PASSWORD', '{p}')", [p])
p = S(12); add("fresh2", "ssh-keygen passphrase prompt", f"Enter passphrase (empty for no passphrase): {p}", [p])
p = S(12); add("fresh2", "mysql_config_editor", f"mysql_config_editor set --login-path=local --user=root --password\nEnter password: {p}", [p])
p = S(12); add("fresh2", "ldap bind line", f"ldapwhoami -x -D uid=bob -w{p}", [p])
p = S(12); add("fresh2", "hashicorp vault kv put", f"vault kv put secret/app password={p}", [p])
p = S(12); add("fresh2", "aws ssm put-parameter", f"aws ssm put-parameter --name /app/db --type SecureString --value {p}", [p])
p = S(12); add("fresh2", "gcloud secrets", f"echo -n {p} | gcloud secrets create db-pw --data-file=-", [p])
p = S(12); add("fresh2", "az keyvault", f"az keyvault secret set --vault-name v --name dbpw --value {p}", [p])
p = S(12); add("fresh2", "doppler/op read", f"$ op read op://vault/db/password\n{p}", [p])
p = S(12); add("fresh2", "kubectl get secret jsonpath decode", f"$ kubectl get secret db -o jsonpath='{{.data.password}}' | base64 -d\n{p}", [p])

if ONLY: P[:] = [x for x in P if ONLY in x[1] or ONLY == x[0]]
def store_bytes(d):
    out = b""
    for root, _, files in os.walk(d):
        for f in files:
            try: out += open(os.path.join(root, f), "rb").read()
            except Exception: pass
    return out.lower()
res = {}
tmp = tempfile.mkdtemp(prefix="b4p")
for i, (cls, name, text, needles, stay) in enumerate(P):
    leaks = []
    for mode in ("fold", "ingest"):
        d = os.path.join(tmp, f"s{i}{mode}")
        f = os.path.join(tmp, f"in{i}")
        if mode == "fold":
            open(f, "w").write(text)
            r = subprocess.run([BIN, "--dir", d, "fold", "1", "tool output", "--file", f], capture_output=True)
        else:
            open(f, "w").write(json.dumps({"messages": [{"role": "user", "content": "run it"}, {"role": "assistant", "content": "ok"}, {"role": "user", "content": text}]}))
            r = subprocess.run([BIN, "--dir", d, "ingest", f], capture_output=True)
        if r.returncode != 0:
            print("ERR", name, mode, r.stderr.decode()[:300]); continue
        blob = store_bytes(d) + (r.stdout + r.stderr).lower()
        hit = [n for n in needles if n.lower().encode() in blob]
        if stay:
            if len(hit) != len(needles): leaks.append(mode + ":CHANGED")
        elif hit: leaks.append(mode)
    res.setdefault(cls, []).append((name, leaks))
shutil.rmtree(tmp)
tot = 0
for cls, items in res.items():
    bad = [(n, l) for n, l in items if l]
    tot += len(bad)
    print(f"{cls}: {len(bad)}/{len(items)}")
    for n, l in bad: print("   ", n, l)
print("TOTAL bad", tot, "of", len(P))
