package main

import (
	"bytes"
	"encoding/json"
	"fmt"
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
	// The second pass: invisible and full-width characters, prose without
	// "is", a name and its value as a call's arguments.
	{"full-width equals", "API_KEY\uFF1D" + breakerSecret},
	{"zero-width space in the name", "PASS\u200bWORD=" + breakerSecret},
	{"soft hyphen in the name", "DB_PASS\u00adWORD: " + breakerSecret},
	{"zero-width joiner in the value", "TOKEN=" + breakerSecret[:6] + "\u200d" + breakerSecret[6:]},
	{"short name and an operator", "db pass = " + breakerSecret + "!"},
	{"pw and a blank", "pw " + breakerSecret},
	{"password for an account", "the password for the root account is now " + breakerSecret},
	{"os.Setenv", `os.Setenv("DB_PASSWORD", "` + breakerSecret + `")`},
	{"php define", "define('DB_PASSWORD', '" + breakerSecret + "');"},
	{"sudo -S", "echo '" + breakerSecret + "' | sudo -S systemctl restart app"},
	{"oracle thin url", "jdbc:oracle:thin:scott/" + breakerSecret + "@db.corp:1521:orcl"},
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
			// Read with the invisible characters gone: a secret a
			// zero-width joiner splits is still the secret.
			disk := storeBytes(t, dir)
			for _, zw := range []string{"\u200b", "\u200c", "\u200d", "\u2060", "\u00ad"} {
				disk = bytes.ReplaceAll(disk, []byte(zw), nil)
			}
			if bytes.Contains(disk, []byte(breakerSecret)) {
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

// TestIngestLongerTranscriptKeepsKeyOpen: a private key a tool output shows
// in three parts (the BEGIN line and first lines, plain base64 lines, the
// END line), in a transcript ingested as it grows (one part more each
// time), then ingested again whole: no key line reaches the store, and
// every ingest succeeds. Before, the second ingest stored the middle part
// in clear (the store did not know the key its stored turns left open), and
// an ingest of a transcript whose middle part the first ingest had redacted
// was refused as "different turns" (the redaction came from another turn).
func TestIngestLongerTranscriptKeepsKeyOpen(t *testing.T) {
	line := func(i int) string { // 64 base64 characters, none of them a word
		return strings.Repeat(fmt.Sprintf("Qm%02dxZ9kLw4", i), 6)[:64]
	}
	parts := []string{
		"$ head -c 140 id_ed25519\n-----BEGIN OPENSSH PRIVATE" + " KEY-----\n" + line(1) + "\n" + line(2),
		"$ sed -n 4,5p id_ed25519\n" + line(3) + "\n" + line(4) + "\n",
		line(5) + "\n" + line(6)[:20] + "==\n-----END OPENSSH PRIVATE" + " KEY-----\n",
	}
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "store")
	n := 0
	rec := func(typ string, content any) []byte {
		n++
		b, _ := json.Marshal(map[string]any{"type": typ, "uuid": fmt.Sprintf("k-%d", n), "sessionId": "s-key",
			"timestamp": "2026-03-02T11:00:00.000Z", "message": map[string]any{"role": typ, "content": content}})
		return append(b, '\n')
	}
	data := rec("user", "show me the deploy key")
	var versions []string
	for i, p := range parts {
		id := fmt.Sprintf("toolu_k%d", i)
		data = append(data, rec("assistant", []any{map[string]any{"type": "tool_use", "id": id, "name": "Bash", "input": map[string]any{"command": fmt.Sprintf("read part %d of the key", i+1)}}})...)
		data = append(data, rec("user", []any{map[string]any{"type": "tool_result", "tool_use_id": id, "content": p}})...)
		path := filepath.Join(tmp, fmt.Sprintf("t%d.jsonl", i+1))
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		versions = append(versions, path)
	}
	for _, path := range append(versions, versions[1], versions[2]) {
		if _, errs, code := cli(t, "", "--dir", dir, "ingest", path); code != 0 {
			t.Fatalf("ingest %s: exit %d: %s", filepath.Base(path), code, errs)
		}
	}
	disk := storeBytes(t, dir)
	for i := 1; i <= 6; i++ {
		if bytes.Contains(disk, []byte(line(i)[:20])) {
			t.Errorf("key line %d reached the store", i)
		}
	}
}

// TestIngestRefusalHidesASecretSessionID: a transcript whose session id
// holds a token, refused by a store of another session, is named in the
// message with the token redacted, and the store the message suggests is
// named by its scrub.SafeName. Before, the message printed the token and
// suggested a directory named after it.
func TestIngestRefusalHidesASecretSessionID(t *testing.T) {
	tok := "gh" + "p_" + strings.Repeat("Nq7VwYS81V", 4)[:36]
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "store")
	write := func(name, session, prompt string) string {
		var data []byte
		for i, typ := range []string{"user", "assistant"} {
			b, _ := json.Marshal(map[string]any{"type": typ, "uuid": fmt.Sprintf("%s-%d", name, i), "sessionId": session,
				"timestamp": "2026-03-02T11:00:00.000Z", "message": map[string]any{"role": typ, "content": prompt}})
			data = append(append(data, b...), '\n')
		}
		p := filepath.Join(tmp, name+".jsonl")
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a := write("a", "sess-a", "a first prompt long enough to fold")
	b := write("b", "my-"+tok, "another prompt, of another session")
	if _, errs, code := cli(t, "", "--dir", dir, "ingest", a); code != 0 {
		t.Fatalf("ingest a: %d %s", code, errs)
	}
	out, errs, code := cli(t, "", "--dir", dir, "ingest", b)
	if code == 0 {
		t.Fatalf("ingest b into a's store: exit 0")
	}
	if strings.Contains(out+errs, tok) || strings.Contains(out+errs, tok[4:]) {
		t.Errorf("the message shows the token:\n%s", errs)
	}
	if !strings.Contains(errs, dir+"-sha256-") {
		t.Errorf("the suggested store is not named by the session's hash:\n%s", errs)
	}
}

// TestErrorMessagesQuoteNoSecret: a command's error message that quotes a
// bad argument or input holding a token shows it redacted (an agent runs
// the command as a tool, and its transcript keeps what it printed). Before,
// "step id "ghp_…" is not an integer" printed the token.
func TestErrorMessagesQuoteNoSecret(t *testing.T) {
	tok := "gh" + "p_" + strings.Repeat("Nq7VwYS81V", 4)[:36]
	tmp := t.TempDir()
	in := filepath.Join(tmp, "turn.json")
	if err := os.WriteFile(in, []byte(`{"step_id": "`+tok+`", "summary": "x"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	// A file that is not JSON and starts with the token: the message quotes
	// its first 12 characters, which alone no rule knows for a token.
	notJSON := filepath.Join(tmp, "notjson.txt")
	if err := os.WriteFile(notJSON, []byte(tok+" was the token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(tmp, "store")
	for _, args := range [][]string{
		{"--dir", dir, "fold", tok, "summary"},
		{"--dir", dir, "fold", "--input", in},
		{"--dir", dir, "fold", "--input", notJSON},
		{"--dir", dir, "--json", "fold", "--input", in},
		{"--dir", dir, "hydrate", tok},
	} {
		out, errs, code := cli(t, "", args...)
		if code == 0 {
			t.Fatalf("%v: exit 0", args)
		}
		if strings.Contains(out+errs, tok[4:11]) {
			t.Errorf("%v: the message shows the token:\n%s", args, errs)
		}
	}
}
