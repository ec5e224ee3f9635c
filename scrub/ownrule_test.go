package scrub_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/contextfold/contextfold/scrub"
	"github.com/contextfold/contextfold/scrub/scrubtest"
)

// ownSample is a line one of our own rules (extra.go) redacts: pre + secret
// + post, where pre and post are the context the rule needs and secret the
// part that must not reach disk. needle is what must not survive (the
// secret unless set: a private key's body, say).
type ownSample struct {
	rule, pre, secret, post, needle string
}

// ownSamples returns at least one sample of every rule of extra.go. The
// secret values are assembled at run time so that no secret-looking
// literal is committed.
func ownSamples() []ownSample {
	pw := "Wq7v" + "Tz3kLp9sR4xN"            // letters and digits
	punct := "Zr8!" + "kQ2#vLm9$w"           // a password with punctuation
	b64 := "dXNlcjpT" + "M2NyZXQxMjM0NTY3OA" // user:secret as Basic credentials
	key := "MIIEpAIBAAKCAQEA" + "u7Qw3kLp9sR4xNzT"
	return []ownSample{
		{rule: "contextfold-url-password", pre: "postgres://app:", secret: pw, post: "@db.internal:5432/app"},
		{rule: "contextfold-url-password", pre: "https://ci:", secret: pw, post: "@git.example.com/acme/widget.git"},
		{rule: "contextfold-env-secret", pre: "DB_PASSWORD=", secret: pw},
		{rule: "contextfold-env-secret", pre: "export GITHUB_TOKEN='", secret: pw, post: "'"},
		{rule: "contextfold-keyed-secret", pre: "password: ", secret: punct},
		{rule: "contextfold-keyed-secret", pre: `"api_key": "`, secret: pw, post: `"`},
		{rule: "contextfold-keyed-secret", pre: "X-Api-Key: ", secret: pw},
		{rule: "contextfold-flag-secret", pre: "--token ", secret: pw},
		{rule: "contextfold-flag-secret", pre: "--password '", secret: punct, post: "'"},
		{rule: "contextfold-xml-secret", pre: "<password>", secret: punct, post: "</password>"},
		{rule: "contextfold-cookie", pre: "Cookie: session=", secret: pw},
		{rule: "contextfold-cookie", pre: "Set-Cookie: sid=", secret: pw, post: "; Path=/; HttpOnly"},
		{rule: "contextfold-netrc-password", pre: "machine example.com login bob password ", secret: punct},
		{rule: "contextfold-auth-header", pre: "Authorization: Bearer ", secret: pw},
		{rule: "contextfold-auth-header", pre: "Authorization: Basic ", secret: b64},
		{rule: "contextfold-auth-header", pre: "Authorization: Bearer ", secret: "dev" + "42"},
		{rule: "contextfold-auth-header", pre: `"Authorization": "token `, secret: "s3c" + "r3t", post: `"`},
		{rule: "contextfold-auth-header", pre: "Authorization: Bearer ", secret: "12" + "34"},
		{rule: "contextfold-auth-header", pre: `"Proxy-Authorization": "token `, secret: pw, post: `"`},
		{rule: "contextfold-cli-password", pre: "mysql -u root -p'", secret: punct, post: "' appdb"},
		{rule: "contextfold-cli-password", pre: "sshpass -p ", secret: pw, post: " ssh host"},
		{rule: "contextfold-cli-password", pre: "redis-cli -a ", secret: pw, post: " ping"},
		{rule: "contextfold-sql-password", pre: "ALTER USER app WITH PASSWORD '", secret: punct, post: "';"},
		{rule: "contextfold-sql-password", pre: "CREATE USER app IDENTIFIED BY '", secret: pw, post: "';"},
		{rule: "contextfold-config-secret", pre: "aws configure set aws_secret_access_key ", secret: pw},
		{rule: "contextfold-xml-attr-secret", pre: `<add key="ApiKey" value="`, secret: pw, post: `" />`},
		{rule: "contextfold-bearer", pre: "using Bearer ", secret: pw},
		{rule: "contextfold-pgpass", pre: "db.example.com:5432:app:appuser:", secret: pw},
		{rule: "contextfold-login-password", pre: "docker login -u bob -p ", secret: pw, post: " registry.example.com"},
		{rule: "contextfold-stdin-password", pre: "echo ", secret: pw, post: " | docker login --password-stdin"},
		{rule: "contextfold-env-secret", pre: `API_KEY="`, secret: punct, post: `"`},
		{rule: "contextfold-env-secret", pre: "--client-secret=", secret: pw},
		{rule: "contextfold-keyed-secret", pre: `'client_secret': '`, secret: pw, post: `'`},
		{rule: "contextfold-keyed-secret", pre: "PRIVATE-TOKEN: ", secret: pw},
		{rule: "contextfold-keyed-secret", pre: "password: |\n  ", secret: punct},
		{rule: "contextfold-keyed-secret", pre: "api_key: >-\n    ", secret: pw},
		{rule: "contextfold-keyed-secret", pre: "db_password: !!str ", secret: pw},
		{rule: "contextfold-url-password", pre: "redis://:", secret: punct, post: "@cache:6379"},
		{rule: "contextfold-cookie", pre: "Cookie: theme=dark; session_id=", secret: pw},
		{rule: "contextfold-auth-header", pre: `Header.Set("Authorization", "Bearer `, secret: pw, post: `")`},
		{rule: "contextfold-named-secret", pre: `{"name": "DB_PASSWORD", "value": "`, secret: punct, post: `"}`},
		{rule: "contextfold-url-signature", pre: "https://b.s3.amazonaws.com/k.tgz?X-Amz-Expires=900&X-Amz-Signature=", secret: pw},
		{rule: "contextfold-url-signature", pre: "https://a.blob.core.windows.net/c/f?sv=2022-11-02&se=2026-03-02&sig=", secret: pw + "%3D"},
		{rule: "contextfold-named-secret", pre: "- name: API_TOKEN\n  value: ", secret: pw},
		{rule: "contextfold-env-secret", pre: `os.environ["STRIPE_API_KEY"] = "`, secret: pw, post: `"`},
		{rule: "contextfold-env-secret", pre: `ENV[ 'DEPLOY_TOKEN' ] = '`, secret: punct, post: `'`},
		{rule: "contextfold-keyed-secret", pre: `"SecretAccessKey": "`, secret: pw, post: `"`},
		{rule: "contextfold-cli-password", pre: "smbclient -U user%", secret: pw, post: " //srv/share"},
		{rule: "contextfold-cli-password", pre: "htpasswd -b file user ", secret: pw},
		{rule: "contextfold-cli-password", pre: "requirepass ", secret: punct},
		{rule: "contextfold-cli-password", pre: "redis-cli CONFIG SET masterauth '", secret: pw, post: "'"},
		{rule: "contextfold-config-secret", pre: "npm config set //registry.npmjs.org/:_authToken ", secret: pw},
		{rule: "contextfold-xml-attr-secret", pre: `<property name="password" value="`, secret: punct, post: `"/>`},
		{rule: "contextfold-stdin-password", pre: "printf '%s' '", secret: punct, post: "' | helm registry login --password-stdin r"},
		{rule: "contextfold-login-password", pre: "az login -u u -p'", secret: punct, post: "'"},
		{rule: "contextfold-sql-password", pre: "SET PASSWORD FOR 'app'@'%' = '", secret: pw, post: "';"},
		{rule: "contextfold-pgpass", pre: "*:*:*:*:", secret: punct},
		{rule: "contextfold-pgpass", pre: "/var/run/postgresql:5432:app:appuser:", secret: pw},
		{rule: "contextfold-pgpass", pre: "/tmp:*:*:postgres:", secret: punct},
		{rule: "contextfold-spaced-secret", pre: "client_secret ", secret: pw},
		{rule: "contextfold-spaced-secret", pre: "| api_key | ", secret: pw, post: " |"},
		{rule: "contextfold-spaced-secret", pre: "clientSecret\t", secret: pw + "x1"},
		{rule: "contextfold-private-key-block", pre: "", secret: "-----BEGIN RSA PRIVATE" + " KEY-----\n" + key + "\n-----END RSA PRIVATE" + " KEY-----", needle: key},
		// A block's end, its BEGIN line in the message before.
		{rule: "contextfold-private-key-block", pre: "", secret: key + key + "\n" + key + "==\n-----END RSA PRIVATE" + " KEY-----", needle: key},
		{rule: "contextfold-jwt", secret: "eyJhbGciOiJIUzI1NiJ9" + ".eyJzdWIiOiJib2IifQ" + ".Wq7vTz3kLp9sR4xN"},
		{rule: "contextfold-aws-access-key-id", secret: "AKIA" + "Q7V3TZ8KLP9SR4XN"},
		{rule: "contextfold-llm-api-key", secret: "sk-" + "proj-" + pw + pw},
		{rule: "contextfold-curl-user", pre: `["curl", "-s", "-u", "admin:`, secret: punct, post: `", "https://api.example.com"]`},
		{rule: "contextfold-curl-user", pre: "curl -sS --user 'admin:", secret: pw, post: "' https://api.example.com"},
		{rule: "contextfold-userinfo-password", pre: "psql admin:", secret: pw, post: "@db.internal:5432/app"},
		{rule: "contextfold-userinfo-password", pre: "git clone ci:", secret: pw, post: "@github.com/acme/widget.git"},
		{rule: "contextfold-putty-private-key", pre: "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nPublic-Lines: 1\nAAAAC3NzaC1lZDI1NTE5\nPrivate-Lines: 2\n", secret: key + "\n" + key + "==", post: "\nPrivate-MAC: 0f1e2d3c", needle: key},
		{rule: "contextfold-google-oauth-token", secret: "ya29" + ".a0Af" + pw + "_" + pw},
		{rule: "contextfold-webhook-url", pre: "https://hooks.slack.com/workflows/", secret: "T0" + "4ABCD/A0" + pw + "/" + pw + pw},
		{rule: "contextfold-webhook-url", pre: "https://discord.com/api/webhooks/123456789012345678/", secret: pw + pw + pw + pw + pw},
		{rule: "contextfold-plist-secret", pre: "<key>password</key>\n\t<string>", secret: punct, post: "</string>"},
		{rule: "contextfold-docker-auth", pre: `{"auths": {"ghcr.io": {"auth": "`, secret: b64, post: `"}}}`},
		{rule: "contextfold-env-secret", pre: `DB_PASS=ab\ cd\ `, secret: pw},
		{rule: "contextfold-env-secret", pre: `PASSWORD=$'`, secret: punct + `\n` + pw, post: `'`},
		{rule: "contextfold-password-line", pre: "user ops@example.com\npassword ", secret: pw},
		{rule: "contextfold-password-line", pre: "bindpw ", secret: punct},
		{rule: "contextfold-oracle-password", pre: "sqlplus scott/", secret: pw, post: "@//db:1521/ORCL"},
		{rule: "contextfold-oracle-password", pre: "SQL> connect system/", secret: pw, post: "@orclpdb"},
		{rule: "contextfold-redis-auth", pre: "cache:6379> AUTH ", secret: pw},
		{rule: "contextfold-redis-auth", pre: "redis-cli -h cache AUTH default ", secret: punct},
		{rule: "contextfold-prose-secret", pre: "the staging db password is ", secret: pw},
		{rule: "contextfold-prose-secret", pre: "My API key is `", secret: punct + "7", post: "`"},
		{rule: "contextfold-prose-secret", pre: "the password for the db user is now ", secret: pw},
		{rule: "contextfold-prose-secret", pre: "root password -> ", secret: pw},
		{rule: "contextfold-prose-secret", pre: "db pass = ", secret: punct},
		{rule: "contextfold-prose-secret", pre: "pw ", secret: punct},
		{rule: "contextfold-prose-secret", pre: "password = ", secret: "Xy7$" + "kq!"},
		{rule: "contextfold-call-secret", pre: `ds.setPassword("`, secret: punct, post: `");`},
		{rule: "contextfold-call-secret", pre: `Net::SMTP.start('smtp.example.com', 25, 'helo', 'bob', '`, secret: pw, post: `', :plain)`},
		{rule: "contextfold-npmrc-auth", pre: `"//registry.npmjs.org/:_authToken"="`, secret: pw, post: `"`},
		{rule: "contextfold-npmrc-auth", pre: `npm config set //npm.example.com/:_password `, secret: pw},
		{rule: "contextfold-keyed-secret", pre: `{b'password': b'`, secret: pw, post: `'}`},
		{rule: "contextfold-htpasswd", pre: "admin:$apr1$Qz8nLw2p$", secret: "Hv3kQz8nLw2pXr5tMb7dAb"},
		{rule: "contextfold-htpasswd", pre: "deploy:", secret: "$2y$10$" + "Hv3kQz8nLw2pXr5tMb7dAbHv3kQz8nLw2pXr5tMb7dAbQz8nLw2pX"},
		{rule: "contextfold-call-secret", pre: `.withApiKey('`, secret: pw, post: `')`},
		{rule: "contextfold-call-secret", pre: `db.auth("admin", "`, secret: pw, post: `")`},
		{rule: "contextfold-call-secret", pre: `os.Setenv("DB_PASSWORD", "`, secret: pw, post: `")`},
		{rule: "contextfold-call-secret", pre: `define('DB_PASSWORD', '`, secret: punct, post: `');`},
		{rule: "contextfold-telegram-bot-token", pre: "https://api.telegram.org/bot", secret: "1213622446:A" + (pw + pw + pw)[:34], post: "/getMe"},
		{rule: "contextfold-telegram-bot-token", secret: "7213622446:A" + (pw + pw + pw)[:34]},
		{rule: "contextfold-discord-bot-token", pre: "client.run('", secret: base64.RawURLEncoding.EncodeToString([]byte("1264115433906"+"158532")) + "." + pw[:6] + "." + (pw + pw + pw)[:38], post: "')"},
		{rule: "contextfold-twilio-auth-token", pre: "client = Client('AC" + "0b891baf90d0d3bf" + "16295d06910bf3f5', '", secret: "400141212b62c376" + "631129f34369aad8", post: "')"},
		{rule: "contextfold-vendor-token", pre: "STRIPE_WEBHOOK=", secret: "wh" + "sec_" + pw + pw},
		{rule: "contextfold-vendor-token", secret: "NR" + "AK-" + strings.ToUpper(pw + pw)[:27]},
		{rule: "contextfold-vendor-token", pre: "mailchimp ", secret: "ad6074dce1118813" + "830d71939b53182e" + "-us12"},
		{rule: "contextfold-bearer", pre: "SSWS ", secret: "00" + pw + pw + pw},
		{rule: "contextfold-oracle-password", pre: "jdbc:oracle:thin:scott/", secret: pw, post: "@db.example.com:1521:orcl"},
		{rule: "contextfold-stdin-password", pre: "echo '", secret: punct, post: "' | sudo -S apt-get update"},
		{rule: "contextfold-prose-secret", pre: "Password for 'https://bob@github.com': ", secret: punct},
		{rule: "contextfold-prose-secret", pre: "das Passwort ist ", secret: punct},
		{rule: "contextfold-prose-secret", pre: "\u5bc6\u7801\uff1a", secret: pw},
		{rule: "contextfold-prose-secret", pre: "\u5bc6\u7801\u662f", secret: pw, post: "\u3002"},
		{rule: "contextfold-label-secret", pre: "Password:\n  ", secret: punct, post: "\n"},
		{rule: "contextfold-label-secret", pre: "| Password | ", secret: punct, post: " |"},
		{rule: "contextfold-cookie", pre: `{"cookies": [{"name": "sid", "value": "`, secret: pw, post: `", "domain": ".example.com", "httpOnly": true}]}`},
		{rule: "contextfold-cli-password", pre: "rabbitmqctl add_user bob ", secret: punct},
		{rule: "contextfold-cli-password", pre: "net use \\\\srv\\share /user:bob ", secret: punct},
		{rule: "contextfold-cli-password", pre: "openssl passwd -6 '", secret: punct, post: "'"},
		{rule: "contextfold-prose-secret", pre: "$config = ['password' => '", secret: punct, post: "'];"},
		{rule: "contextfold-xml-attr-secret", pre: `<input type="password" name="pw" value="`, secret: punct, post: `">`},
		{rule: "contextfold-env-secret", pre: "ENV DB_PASSWORD ", secret: punct, post: "\n"},
		{rule: "contextfold-call-secret", pre: "requests.get(url, auth=('bob', '", secret: punct, post: "'))"},
		{rule: "contextfold-call-secret", pre: "HTTPBasicAuth('bob', '", secret: punct, post: "')"},
		{rule: "contextfold-call-secret", pre: "define( 'DB_PASSWORD', '", secret: punct, post: "' );"},
		{rule: "contextfold-cli-password", pre: "sqlcmd -S db -U sa -P ", secret: punct},
		{rule: "contextfold-cookie", pre: "curl -b 'session=", secret: pw, post: "' https://example.com", needle: pw},
		{rule: "contextfold-url-password", pre: "git clone https://bob:", secret: "p@ss" + "Wq7vTz3k", post: "@git.example.com/r.git"},
		{rule: "contextfold-keyed-secret", pre: "**Password:** ", secret: punct},
		{rule: "contextfold-keyed-secret", pre: "**API key**: ", secret: pw},
		{rule: "contextfold-keyed-secret", pre: `{"user": "bob", "pass": "`, secret: punct, post: `"}`},
		{rule: "contextfold-env-secret", pre: "https://app.example.com/home;jsessionid=", secret: "A1B2C3D4" + "E5F6A7B8C9D0E1F2"},
		{rule: "contextfold-spaced-secret", pre: "token ", secret: "0f1e2d3c" + "4b5a69788796a5b4c3d2e1f00f1e2d3c"},
		{rule: "contextfold-prose-secret", pre: "\u30d1\u30b9\u30ef\u30fc\u30c9\u306f\u300c", secret: punct, post: "\u300d\u3067\u3059"},
		{rule: "contextfold-prose-secret", pre: "\ube44\ubc00\ubc88\ud638\ub294", secret: pw, post: "\uc785\ub2c8\ub2e4"},
		{rule: "contextfold-prose-secret", pre: "fyi the pass for the staging box is ", secret: punct},
		{rule: "contextfold-prose-secret", pre: "Enter passphrase for key '/root/.ssh/id_rsa': ", secret: pw},
		{rule: "contextfold-cli-password", pre: "lftp -u bob,", secret: punct, post: " sftp://files.example.com"},
		{rule: "contextfold-actions-mask", pre: "::add-mask::", secret: pw},
		{rule: "contextfold-keystore-password", pre: "keytool -list -keystore k.jks -storepass ", secret: pw},
		{rule: "contextfold-keystore-password", pre: "jarsigner -storepass x -keypass '", secret: punct, post: "' app.jar release"},
		// Secrets only their position marks (position.go).
		{rule: "contextfold-url-password", pre: "postgres://app:", secret: "s3c" + "r/" + pw, post: "@db:5432/x"},
		{rule: "contextfold-url-password", pre: "https://u:", secret: pw[:5] + "/" + punct, post: "@git.example.com/r.git"},
		{rule: "contextfold-protocol-auth", pre: "AUTH PLAIN ", secret: base64.StdEncoding.EncodeToString([]byte("\x00bob\x00" + pw))},
		{rule: "contextfold-protocol-auth", pre: "S: 334 UGFzc3dvcmQ6\nC: ", secret: base64.StdEncoding.EncodeToString([]byte(punct)), post: "\n"},
		{rule: "contextfold-protocol-auth", pre: "+OK POP3 ready\nUSER bob\n+OK\nPASS ", secret: punct, post: "\n"},
		{rule: "contextfold-protocol-auth", pre: "* OK IMAP4rev1 ready\na1 LOGIN bob@example.com ", secret: pw, post: "\n"},
		{rule: "contextfold-protocol-auth", pre: "/msg NickServ IDENTIFY ", secret: punct},
		{rule: "contextfold-expect-secret", pre: "expect \"*assword*\"\nsend \"", secret: "Zr8!kQ2#vLm9" + "%w", post: "\\r\""},
		{rule: "contextfold-expect-secret", pre: "child.expect('Password:')\nchild.sendline('", secret: pw, post: "')"},
		{rule: "contextfold-csv-secret", pre: "users.csv:\nusername,password,email\nalice,", secret: punct, post: ",alice@example.com\n"},
		{rule: "contextfold-csv-secret", pre: "keys:\nid\tapi_key\n1\t", secret: pw, post: "\n"},
		{rule: "contextfold-pin", pre: "PIN: ", secret: "48" + "213907"},
		{rule: "contextfold-pin", pre: "YUBIKEY_PIN=", secret: "73" + "9201"},
		{rule: "contextfold-k8s-secret", pre: "kind: Secret\ndata:\n  root: ", secret: base64.StdEncoding.EncodeToString([]byte(pw)), post: "\n"},
		{rule: "contextfold-k8s-secret", pre: `{"kind": "Secret", "data": {"hmac": "`, secret: base64.StdEncoding.EncodeToString([]byte(punct)), post: `"}}`},
		{rule: "contextfold-prompt-secret", pre: "AWS Secret Access Key [None]: ", secret: pw, post: "\n"},
		{rule: "contextfold-cli-password", pre: "snmpwalk -v2c -c ", secret: pw, post: " 10.0.0.1"},
		{rule: "contextfold-cli-password", pre: "net user Administrator ", secret: punct, post: " /add"},
		{rule: "contextfold-cli-password", pre: "gh secret set API_KEY --body ", secret: pw},
		{rule: "contextfold-cli-password", pre: "security add-generic-password -a bob -s api -w ", secret: pw},
		{rule: "contextfold-cli-password", pre: "htpasswd -nbB admin ", secret: punct},
		{rule: "contextfold-cli-password", pre: "vault login ", secret: pw},
		{rule: "contextfold-cli-password", pre: "DRIVER={ODBC Driver 18};UID=sa;PWD={", secret: "ab;" + punct, post: "};"},
		{rule: "contextfold-cli-password", pre: "%any 203.0.113.5 : PSK \"", secret: punct, post: "\""},
		{rule: "contextfold-keyed-secret", pre: "userPassword:: ", secret: base64.StdEncoding.EncodeToString([]byte(pw))},
		{rule: "contextfold-csv-secret", pre: "rows:\n name | password \n------+----------\n bob  | ", secret: pw, post: "\n(1 row)\n"},
		{rule: "contextfold-stdin-password", pre: "printf '", secret: punct, post: "' | docker secret create db_pw -"},
		{rule: "contextfold-stdin-password", pre: "chpasswd <<< 'bob:", secret: pw, post: "'"},
		{rule: "contextfold-printed-secret", pre: "$ op read op://vault/db/password\n", secret: pw, post: "\n"},
		{rule: "contextfold-printed-secret", pre: "$ kubectl get secret db -o jsonpath='{.data.password}' | base64 -d\n", secret: punct, post: "\n"},
		{rule: "contextfold-flag-secret", pre: "./client -token ", secret: pw},
		{rule: "contextfold-cli-password", pre: "aws ssm put-parameter --name /app/db --type SecureString --value ", secret: pw},
		// named.go
		{rule: "contextfold-credential-file", pre: "$ cat /etc/rsyncd.secrets\nbackup:", secret: pw, post: "\n"},
		{rule: "contextfold-credential-file", pre: "\n# /etc/ppp/chap-secrets\nbob * ", secret: pw, post: " *\n"},
		{rule: "contextfold-sql-column-secret", pre: "INSERT INTO users (name, password) VALUES ('bob', '", secret: punct, post: "');"},
		{rule: "contextfold-sql-column-secret", pre: "COPY users (id, api_key) FROM stdin;\n1\t", secret: pw, post: "\n\\.\n"},
		{rule: "contextfold-wifi-password", pre: "WIFI:S:office;T:WPA;P:", secret: pw, post: ";;"},
		{rule: "contextfold-xml-secret", pre: "<password><![CDATA[", secret: punct, post: "]]></password>"},
		{rule: "contextfold-env-secret", pre: `password = """`, secret: pw, post: `"""`},
		{rule: "contextfold-env-secret", pre: "DB_PASSWORD := ", secret: pw},
		{rule: "contextfold-printed-secret", pre: "$ terraform output -raw db_password\n", secret: pw, post: "\n"},
		{rule: "contextfold-cli-password", pre: "mc alias set minio http://minio:9000 admin ", secret: pw},
		{rule: "contextfold-label-secret", pre: "Enter passphrase (empty for no passphrase): ", secret: pw},
		{rule: "contextfold-stdin-password", pre: "passwd bob <<EOF\n", secret: pw, post: "\nEOF\n"},
		{rule: "contextfold-private-key-block", pre: "-----BEGIN OpenVPN Static key V1-----\n", secret: "0f1e2d3c4b5a6978" + "8796a5b4c3d2e1f0", post: "\n-----END OpenVPN Static key V1-----\n"},
		{rule: "contextfold-spaced-secret", pre: "\n  storePassword '", secret: pw, post: "'\n"},
		{rule: "contextfold-call-secret", pre: "const key = process.env.API_KEY || '", secret: pw, post: "';"},
		{rule: "contextfold-keyed-secret", pre: `{"github-oauth": {"github.com": "`, secret: pw, post: `"}}`},
	}
}

// ownKnownLimits are the crossings a rule declines by design: a .pgpass
// host field after '/' whose last segment has a '.' is a file
// ("dir/file.go:12:5:…" is a position in a file, not a host; a socket
// directory, "/var/run/postgresql:5432:…", is a host).
var ownKnownLimits = map[string]bool{
	`contextfold-pgpass before "/"`:       true,
	`contextfold-pgpass before "/", JSON`: true,
	// A PIN's digits followed by ':' and digits read as a time or a
	// port (PIN: 4821:443 is not told from "at 10:30").
	`contextfold-pin after ":443"`:       true,
	`contextfold-pin after ":443", JSON`: true,
	// A SASL PLAIN credential run on into "/path" is no base64 any more.
	`contextfold-protocol-auth after "/path"`:       true,
	`contextfold-protocol-auth after "/path", JSON`: true,
	// A value typed on a prompt's line that runs on into ".json" reads
	// as a dotted name (code), as below a label.
	`contextfold-label-secret after ".json"`:       true,
	`contextfold-label-secret after ".json", JSON`: true,
}

// ownLookAlikes are texts next to our rules' keywords that hold no secret
// whatever punctuation surrounds them.
var ownLookAlikes = []string{
	// contextfold-label-secret: a label followed by a sentence, code, a
	// mask, a word, a name or a version on the next line.
	"Password:\n  The password must be at least 12 characters.", "def password():\n    return self._pw2",
	"Password:\n  ********", "Token:\n  None", "if token:\n    refresh2()", "Secret:\n  my-secret-name-v2",
	"token 0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a", "token 0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3", "tokenize 0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c",
	"| password | string | the user's password |", "| token | SecretStr | a token |", "| Token | `TOKEN_V2` |",
	"**Password:** see the vault", "**Password**: *required*",
	"https://x.example/@user?from=a@b.example",
	"curl -b cookies.txt https://example.com", "curl -c jar.txt -b jar.txt https://example.com", "auth=(user, password)",
	"auth = ('bob', pw)", "sqlcmd -S db -U sa -Q 'SELECT 1'",
	`<input type="password" name="pw" value="">`, `<input type="password" value="{{ form.pw }}">`,
	"ENV NODE_ENV production", "ENV DB_PASSWORD_FILE /run/secrets/db", "net use Z: \\\\srv\\share /user:bob *",
	"rabbitmqctl list_users", "openssl passwd -help",
	`{"name": "theme", "value": "", "domain": ".example.com"}`, `{"name": "app", "value": "production-eu-1"}`,
	"API key:\n  required", "Token:\n  v1.2.3-rc1", "Password:\n\n    SECRET_PASSWORD_V2", "token:\n  ./bin/gen2\n",
	// netrc's "machine" must start a word (the value is a plain word: a
	// digit would make "password VALUE" contextfold-password-line's).
	"mymachine example.com login bob password hunter" + "hunter",
	"see src/main.go:12:5:func:Handler",
	"pkg/store.go:120:7:fold:coldNode",
	"/home/dev/src/main.go:12:5:func:Handler",
	"/etc/shadow:1:root:$6$salt$hash:19000",
	"password: |\n  $DB_PASSWORD",
	"tokens: |\n  counted per request",
	"# requirepass foobared",
	"Authorization: Bearer token",
	"Authorization: Bearer TOKEN",
	"Authorization: Bearer secret",
	"Authorization: Bearer pass",
	"Authorization: none",
	"Authorization: Bearer abc",
	"a--token counter",
	"--token-file ./token.txt",
	"the api_key parameter is required",
	"api_key my_api_key_22",
	"The access_token expires in 3600 seconds",
	"they key1234567890abc",
	"client_secret ${CLIENT_SECRET}",
	"mailto:bob@example.com",
	"image nginx:1.25@sha256:0a1b2c3d4e5f",
	"npm:lodash@4.17.21",
	"at 12:30@home.example.org",
	"y = x[1:n]@w.T",
	"curl -u admin https://api.example.com",
	"curl -u $USER:$TOKEN https://api.example.com",
	`{"auth": "bearer"}`,
	`"auth": "dG9rZW4="`,
	"<key>PasswordPolicy</key><string>strict</string>",
	"<key>CFBundleName</key><string>Widget</string>",
	"see /api/webhooks/ for the list",
	"keytool -list -keystore k.jks -storepass:env STOREPASS",
	"git switch -new feature-branch-2024",
	`keyring.get_password("deploy-service", "bob")`,
	`cfg.getPassword("database.primary")`,
	`view.setPasswordVisible("visible01")`,
	`session.login("bob")`,
	`api.withToken("${GITHUB_TOKEN}")`,
	`echo "::add-mask::$TOKEN"`,
	"password required pam_unix.so",
	"password expired",
	"passwd $USER",
	"connect client/server model",
	"sqlplus / as sysdba",
	"AUTH failed for user bob",
	"cache:6379> AUTH $REDIS_PASSWORD",
	"the password is incorrect",
	"the token is access_token_2",
	"the key is k8s-node-pool",
	"the password is 8 characters long",
	// position.go: ports and paths in URLs, a test runner's PASS, an
	// EHLO line, a table header, a JavaScript test's expect, CSV columns
	// that are no secret, pins that are no PIN, prompts without one.
	"http://host:8080/a/b@c.example.com", "https://www.npmjs.com/package/@types/node",
	"https://github.com/foo:bar/baz@v1.2.3", "see https://medium.com/@alice/post-1",
	"USER bob logged in\nPASS src/app.test.js", "250-AUTH PLAIN LOGIN OAUTHBEARER XOAUTH2",
	"AUTH PLAIN OAUTHBEARER", "ID LOGIN EMAIL STATUS\n1 LOGIN bob active",
	"expect(input.type).toBe('password')\nws.send('hello world')",
	"expect \"Password:\"\nsend \"$pw\\r\"", "expect \"*assword*\"\nsend -- \"$env(PW)\\r\"",
	"rule,password_min_length,password_history\nstrict,12,5\n", "name,token_count\nalpha,123456\n",
	"password\trequisite\tpam_deny\npassword\trequired\tpam_permit\n",
	"GPIO pin 18", "pin: 13", "pip install pin==1.2.3", "PIN: ****", "pin: 2024-01-01",
	"kind: SecretStore\nspec:\n  provider: vault", "kind: Secret\nmetadata:\n  name: x\ntype: Opaque",
	"Default region name [None]: us-east-1", "Password [****]: ",
	"net user bob /add", "net user bob /domain", "vault login -method=github", "vault login token=$VAULT_TOKEN",
	"gh secret set API_KEY < key.txt", "snmpwalk -v3 -l authPriv -u bob -a SHA -A $AUTHPASS host",
	"| Name | Token | Description |\n|---|---|---|\n| ci | CI_TOKEN | the token CI uses |\n",
	"$ op read --help\nUsage: op read", "$ base64 -d file.b64\nhello there", "vault kv get secret/app\n====== Data ======",
	"-token-file ./token.txt", "go test -pass 3", "echo hi | passwdqc-check",
	"your API key is ${API_KEY}",
}

// TestOwnRulesEveryNeighbour crosses a sample of every one of our own
// rules with every neighbour of scrubtest.Before and scrubtest.After, as
// plain text and JSON-escaped, and with the shapes text takes in a
// transcript (a wrapped paragraph, JSON inside JSON, a Markdown table
// cell, a trailing '.' or ',', CRLF line ends): the secret never survives
// Scrub, and the scrubbed text has nothing left to find.
func TestOwnRulesEveryNeighbour(t *testing.T) {
	t.Parallel() // with the other cross of every neighbour: both only read a Scrubber of their own
	sc := newScrubber(t)
	samples := ownSamples()
	have := map[string]bool{}
	for _, s := range samples {
		have[s.rule] = true
		if s.needle == "" {
			s.needle = s.secret
		}
		if out := sc.Scrub(s.pre + s.secret + s.post).Text; strings.Contains(out, s.needle) {
			t.Fatalf("%s: the sample %q alone is not redacted: the test proves nothing", s.rule, s.pre+s.secret+s.post)
		}
	}
	for _, id := range scrub.ExtraRuleIDs() {
		if !have[id] {
			t.Errorf("no sample for our rule %s", id)
		}
	}
	jsonStr := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	// Under the race detector (which adds nothing to these single-goroutine
	// scrubs and slows each ~10 times) every sample meets every eighth
	// neighbour, rotating with the sample, so that each rule and each
	// neighbour is still crossed; the shapes and look-alikes are all kept.
	// scripts/test.sh runs the full cross without -race.
	every := 1
	if scrub.RaceEnabled {
		every = 8
	}
	leaks := map[string][]string{}
	for i, s := range samples {
		needle := s.needle
		if needle == "" {
			needle = s.secret
		}
		line := s.pre + s.secret + s.post
		var all strings.Builder
		check := func(where, text string) {
			if ownKnownLimits[s.rule+" "+where] {
				return
			}
			all.WriteString(text + "\n")
			if out := sc.Scrub(text).Text; strings.Contains(out, needle) {
				leaks[s.rule+" "+s.pre+"…"] = append(leaks[s.rule+" "+s.pre+"…"], where)
			}
		}
		for j, a := range scrubtest.After {
			if (i+j)%every != 0 {
				continue
			}
			check(fmt.Sprintf("after %q", a), "see "+line+a+" end")
			check(fmt.Sprintf("after %q, JSON", a), `{"out":`+jsonStr(" "+line+a)+`}`)
		}
		for j, b := range scrubtest.Before {
			if (i+j)%every != 0 {
				continue
			}
			check(fmt.Sprintf("before %q", b), "see"+b+line+" end")
			check(fmt.Sprintf("before %q, JSON", b), `{"out":`+jsonStr(b+line+"\n")+`}`)
		}
		check("wrapped", strings.Repeat("the deploy step printed ", 4)+"\n"+line+"\n"+"and went on")
		check("JSON in JSON", `{"content":`+jsonStr(`{"out":`+jsonStr("ran\n"+line+"\n")+`}`)+`}`)
		check("Markdown cell", "| name | value |\n|---|---|\n| db | "+line+" |\n")
		check("Markdown cell, no blanks", "|db|"+line+"|\n")
		check(`trailing "."`, "it was "+line+". Then")
		check(`trailing ","`, "it was "+line+", then")
		check("CRLF", "first\r\n"+line+"\r\nnext\r\n")
		r := sc.Scrub(all.String())
		if strings.Contains(r.Text, needle) {
			leaks[s.rule+" "+s.pre+"…"] = append(leaks[s.rule+" "+s.pre+"…"], "all crossings in one text")
		}
		if fs := sc.Find(r.Text); len(fs) > 0 {
			t.Errorf("%s: the scrubbed text still has %d finding(s), first %s %q", s.rule, len(fs), fs[0].RuleID, r.Text[fs[0].Start:fs[0].End])
		}
	}
	// The look-alikes stay as they are in the same shapes.
	var lookAlikes []string
	lookAlikes = append(lookAlikes, ownLookAlikes...)
	lookAlikes = append(lookAlikes, commandLineLookAlikes...)
	lookAlikes = append(lookAlikes, scrub.ExtraRuleLookAlikes...)
	for _, k := range lookAlikes {
		for _, in := range []string{
			k, "see " + k + " end", "first\r\n" + k + "\r\nnext\r\n",
			"| name | value |\n|---|---|\n| x | " + k + " |\n",
			"it was " + k + " . Then", "it was " + k + " , then",
			`{"out":` + jsonStr("ran\n"+k+"\n") + `}`,
			`{"content":` + jsonStr(`{"out":`+jsonStr(k)+`}`) + `}`,
		} {
			if out := sc.Scrub(in).Text; out != in {
				t.Errorf("look-alike changed: Scrub(%q) = %q", in, out)
			}
		}
	}
	ids := make([]string, 0, len(leaks))
	for id := range leaks {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		w := leaks[id]
		if len(w) > 80 {
			w = append(w[:80:80], fmt.Sprintf("… %d more", len(leaks[id])-80))
		}
		t.Errorf("%q survives: %s", id, strings.Join(w, "; "))
	}
}
