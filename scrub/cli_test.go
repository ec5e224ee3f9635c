package scrub_test

import (
	"strings"
	"testing"
)

// TestCommandLinePasswords: a password on a command line, in an
// environment variable whose name ends in a secret word, piped into a
// --password-stdin, or on a .pgpass line, never survives Scrub, whatever
// quoting it has; the look-alikes (ports, port mappings, times, a MySQL
// database name after "-p ") are kept byte for byte.
func TestCommandLinePasswords(t *testing.T) {
	sc := newScrubber(t)
	pw := "Wq7v" + "Tz3kLp9s"
	weak := "hunter2" + "hunter"
	for _, in := range []string{
		"db.example.com:5432:app:appuser:" + pw,
		"localhost:*:*:postgres:" + pw + "\n",
		"*:*:*:*:" + pw,
		"cat ~/.pgpass\n127.0.0.1:5432:prod:admin:" + pw + "\n",
		`{"out":"cat ~/.pgpass\n127.0.0.1:5432:prod:admin:` + pw + `\n"}`,
		"echo 'db:5432:x:y:" + pw + "' >> ~/.pgpass",
		"PGPASSWORD=" + weak + " psql -h db",
		"export PGPASSWORD='" + weak + "'",
		`{"PGPASSWORD": "` + weak + `"}`,
		"env DBPASSWORD=" + weak + " ./migrate",
		"REDISCLI_AUTH=" + weak + " redis-cli",
		"docker login -u bob -p " + pw + " registry.example.com",
		"docker login --password " + pw + " ghcr.io",
		"docker login --password=" + pw + " ghcr.io",
		"docker login -p'" + pw + "' ghcr.io",
		"docker login -p \"" + pw + "\" ghcr.io",
		"docker login -u bob -p" + pw,
		"mysql -u root -p'" + pw + "' db",
		"sshpass -p'" + pw + "' ssh host",
		"redis-cli -a " + pw + " ping",
		"redis-cli -h h -p 6379 -a '" + pw + "' ping",
		"smbclient -U user%" + pw + " //srv/share",
		"htpasswd -b file user " + pw,
		"htpasswd -bc /etc/nginx/.htpasswd admin " + pw,
		"mongosh -u admin -p " + pw,
		"mongosh \"mongodb://h\" --username admin -p " + pw,
		"az login -u u -p " + pw,
		"openconnect --pass " + pw + " vpn.example.com",
		"echo " + pw + " | docker login --password-stdin",
		"echo \"" + pw + "\" | docker login -u x --password-stdin ghcr.io",
		"printf '%s' '" + pw + "' | helm registry login --password-stdin r",
		"$password = ConvertTo-SecureString \"" + pw + "\" -AsPlainText -Force",
		"CREATE USER app IDENTIFIED BY '" + pw + "';",
		"CREATE USER app IDENTIFIED WITH mysql_native_password BY '" + pw + "';",
		"ALTER USER postgres WITH PASSWORD '" + pw + "';",
		"ALTER ROLE app ENCRYPTED PASSWORD '" + pw + "'",
		"SET PASSWORD FOR 'app'@'%' = '" + pw + "';",
		"openssl pkcs12 -export -passout pass:" + pw + " -out a.p12",
		"openssl rsa -in k.pem -passin pass:" + pw,
		"openssl enc -aes256 -k " + pw + " -in f",
		"aws configure set aws_secret_access_key " + pw,
		"npm config set //registry.npmjs.org/:_authToken " + pw,
		"ssh-keygen -t ed25519 -N '" + pw + "' -f key",
		"7z a -p" + pw + " archive.7z",
		"zip -P " + pw + " a.zip f",
		"unzip -P " + pw + " a.zip",
		"rar a -hp" + pw + " a.rar f",
		"ldapsearch -x -D cn=admin -w " + pw + " -b dc=x",
		`<add key="ApiKey" value="` + pw + `" />`,
		`<property name="password" value="` + pw + `"/>`,
		"curl: using Bearer " + pw + "abc123XYZ",
	} {
		if out := sc.Scrub(in).Text; strings.Contains(out, pw) || strings.Contains(out, weak) {
			t.Errorf("Scrub(%q) = %q: the password survives", in, out)
		}
	}
	for _, in := range commandLineLookAlikes {
		if out := sc.Scrub(in).Text; out != in {
			t.Errorf("Scrub(%q) = %q, want it unchanged", in, out)
		}
	}
}

// commandLineLookAlikes are command lines that look like they hold a
// password and do not: Scrub keeps them byte for byte.
var commandLineLookAlikes = []string{
	"docker run -u 1000 -p 8080:80 nginx",
	"ssh -p 2222 -l admin host",
	"psql -h db -p 5432 -U app",
	"mysql -u root -p appdb",
	"at 10:22:33:44:55 done",
	"ERROR:root:something:failed:badly",
	"cp -u -pr src dst",
	"mkdir -p /tmp/x && login",
	"git log -p --author=me",
	"find . -user root -print",
	"2024-01-01T10:22:33:444:555",
	"BYPASS=hunter2" + "hunter",
	"localhost:*:*:postgres:*",
	"zip -r out.zip dir",
	"7z x archive.7z -o/tmp/out",
	"7z a -p archive.7z f",
	"ssh-keygen -t ed25519 -N '' -f key",
	"ldapsearch -x -W -b dc=example,dc=com",
	"openssl req -new -passout env:KEY_PASS -out r.csr",
	"ALTER USER app PASSWORD NULL",
	"git config --global user.name 'Jane Developer'",
	"npm config set registry https://registry.example.com/",
	`<add key="ApiBaseUrl" value="https://api.example.com/v1" />`,
	`<add key="ApiKey" value="$(ApiKey)" />`,
	"Bearer authentication is described in RFC 6750",
}
