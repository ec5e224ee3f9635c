package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// breakerSecret is a FAKE credential value used by the cases below; it
// mixes letters and digits like a generated password.
const breakerSecret = "Xq7vR2mK9pL4wZ8t"

// breakerCases are tool outputs holding breakerSecret in formats the
// field reports' kind ("secrets next to punctuation reaching disk") still
// let through once; each must be folded without the secret reaching disk.
var breakerCases = []struct{ name, text string }{
	{"keytool storepass", "$ keytool -list -v -keystore release.jks -storepass " + breakerSecret + "\nKeystore type: PKCS12"},
	{"jarsigner keypass", "jarsigner -keystore k.jks -storepass '" + breakerSecret + "' -keypass " + breakerSecret + "x app.jar alias"},
	{"sshpass environment", "$ SSHPASS=" + breakerSecret + " sshpass -e ssh deploy@web1 uptime"},
	{"wifi psk", "network={\n\tssid=\"office\"\n\tpsk=\"" + breakerSecret + "\"\n}"},
	{"sssd authtok", "[domain/corp]\nldap_default_bind_dn = cn=svc,dc=corp\nldap_default_authtok = " + breakerSecret},
	{"java setter", "at com.acme.Db.init(Db.java:42)\n    ds.setPassword(\"" + breakerSecret + "\");"},
	{"builder member", "Client c = Client.builder().user(\"svc\").password(\"" + breakerSecret + "\").build();"},
	{"kotlin withApiKey", "val api = Api.withApiKey('" + breakerSecret + "')"},
	{"mongo shell auth", "> use admin\n> db.auth(\"admin\", \"" + breakerSecret + "\")\n1"},
	{"python smtp login", "server.login(\"ops@example.com\", \"" + breakerSecret + "\")"},
	{"setter in json tool output", `{"stdout":"cfg.setSecretKey(\"` + breakerSecret + `\")\n"}`},
	{"github actions mask", "##[group]Run echo \"::add-mask::$TOKEN\"\n::add-mask::" + breakerSecret + "\n##[endgroup]"},
	{"msmtprc password line", "account default\nhost smtp.example.com\nport 587\nauth on\nuser ops@example.com\npassword " + breakerSecret + "\n"},
	{"nslcd bindpw", "uri ldap://ldap.corp\nbinddn cn=svc,dc=corp\nbindpw " + breakerSecret + "\n"},
	{"config password in json", `{"stdout":"host smtp.example.com\npassword ` + breakerSecret + `\nfrom ops@example.com"}`},
	{"sqlplus user/password", "$ sqlplus scott/" + breakerSecret + "@//db.corp:1521/ORCL\nSQL*Plus: Release 19.0.0.0.0"},
	{"sqlplus connect", "SQL> connect system/" + breakerSecret + "@orclpdb\nConnected."},
	{"expdp userid", "expdp userid=system/" + breakerSecret + " directory=dp dumpfile=x.dmp"},
	{"redis-cli prompt AUTH", "$ redis-cli -h cache\ncache:6379> AUTH " + breakerSecret + "\nOK\ncache:6379> GET k"},
	{"redis-cli AUTH user", "127.0.0.1:6379[2]> AUTH default " + breakerSecret + "\nOK"},
	{"redis-cli one-shot AUTH", "redis-cli -h cache AUTH " + breakerSecret},
	{"password in a sentence", "sorry, the staging db password is " + breakerSecret + ". please rotate it"},
	{"token in a sentence", "My API key is `" + breakerSecret + "` - keep it out of the logs"},
	{"keytool new password", "keytool -storepasswd -new " + breakerSecret + " -keystore k.jks"},
}

// TestFoldScrubsMoreSecretFormats folds each case through the CLI and
// looks for the secret in every byte under the store and in the command's
// output.
func TestFoldScrubsMoreSecretFormats(t *testing.T) {
	t.Setenv("CONTEXTFOLD_SCRUB", "")
	for _, c := range breakerCases {
		t.Run(c.name, func(t *testing.T) {
			tmp := t.TempDir()
			dir := filepath.Join(tmp, ".contextfold")
			in := filepath.Join(tmp, "out.log")
			if err := os.WriteFile(in, []byte(c.text), 0o600); err != nil {
				t.Fatal(err)
			}
			out, errs, code := cli(t, "", "--dir", dir, "fold", "1", "tool output", "--file", in)
			if code != 0 {
				t.Fatalf("fold: %d %s", code, errs)
			}
			if strings.Contains(out+errs, breakerSecret) {
				t.Errorf("secret in the command's output")
			}
			if bytes.Contains(storeBytes(t, dir), []byte(breakerSecret)) {
				t.Errorf("secret reached disk; input:\n%s", c.text)
			}
		})
	}
}

// A prompt the user pasted a token into by mistake (field report 22's
// u-2208): scan's query terms, as text and JSON, and recall's output do
// not echo it, in any letter case.
func TestScanAndRecallEchoNoSecret(t *testing.T) {
	dir := demoDir(t)
	tok := "ghp_" + "FAKEfake0123456789FAKEfake0123456789"
	q := "I pasted my token by mistake: " + tok + " - ignore it. What port did PostgreSQL use?"
	for _, args := range [][]string{{"scan", q}, {"scan", "--json", q}, {"recall", q}, {"recall", "--json", q}} {
		out, errs, code := cli(t, "", append([]string{"--dir", dir}, args...)...)
		if code != 0 {
			t.Fatalf("%v: %d %s", args[:len(args)-1], code, errs)
		}
		if low := strings.ToLower(out + errs); strings.Contains(low, "fakefake0123456789") {
			t.Errorf("%v echoes the token:\n%s", args[:len(args)-1], out)
		}
	}
}
