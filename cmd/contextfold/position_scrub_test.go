package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"math/rand/v2"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// positionCase is a tool output holding secrets that only their position
// marks (no name next to the value), or a URL password holding '/'; needles
// are what must not reach disk (a base64 form as it was pasted).
type positionCase struct {
	class, name, text string
	needles           []string
}

// positionCases builds the cases with values generated at run time (no
// secret-looking literal is committed): each class of docs/secrets.md's
// position.go rules, several shapes a class takes.
func positionCases() []positionCase {
	rng := rand.New(rand.NewPCG(4, 4))
	const al = "abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789"
	gen := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = al[rng.IntN(len(al))]
		}
		b[1], b[3] = '7', 'Q' // a letter and a digit, always
		return string(b)
	}
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	var cs []positionCase
	add := func(class, name, text string, needles ...string) {
		cs = append(cs, positionCase{class, name, text, needles})
	}
	a, b := gen(6), gen(9)
	add("url-slash", "postgres", "DATABASE_URL=postgres://app:"+a+"/"+b+"@db:5432/x", b)
	a, b = gen(5), gen(9)
	add("url-slash", "https git remote", "git remote add origin https://u:"+a+"/"+b+"@git.example.com/org/r.git", b)
	a, b = gen(7), gen(7)
	add("url-slash", "redis in JSON", `{"url": "redis://:`+a+"/"+b+`@cache:6379/0"}`, b)
	p := gen(12)
	plain := b64("\x00alice@example.com\x00" + p)
	add("protocol", "smtp AUTH PLAIN", " -> EHLO me\n<-  250-AUTH LOGIN PLAIN\n -> AUTH PLAIN "+plain+"\n<-  235 2.7.0 Authentication successful", plain)
	p = gen(12)
	add("protocol", "smtp AUTH LOGIN", "C: AUTH LOGIN\nS: 334 VXNlcm5hbWU6\nC: "+b64("bob")+"\nS: 334 UGFzc3dvcmQ6\nC: "+b64(p)+"\nS: 235 ok", b64(p))
	p = gen(12)
	add("protocol", "ftp PASS", "220 ready\n---> USER bob\n331 Password required\n---> PASS "+p+"\n230 Login successful.", p)
	p = gen(12)
	add("protocol", "imap LOGIN", "* OK IMAP4rev1\na1 LOGIN bob@example.com "+p+"\na1 OK LOGIN completed", p)
	p = gen(12)
	add("protocol", "nickserv", "/msg NickServ IDENTIFY "+p, p)
	p = gen(12)
	add("expect", "expect send", "spawn ssh admin@10.0.0.5\nexpect \"*assword*\"\nsend \""+p+"\\r\"\ninteract", p)
	p = gen(12)
	add("expect", "expect block", "expect {\n  \"yes/no\" { send \"yes\\r\"; exp_continue }\n  \"Password:\" { send \""+p+"\\n\" }\n}", p)
	p = gen(12)
	add("expect", "pexpect", "child = pexpect.spawn('ssh bob@h')\nchild.expect('Password:')\nchild.sendline('"+p+"')", p)
	p, q := gen(12), gen(11)
	add("csv", "password column", "username,password,email\nalice,"+p+",alice@example.com\nbob,"+q+",bob@example.com\n", p, q)
	p = gen(20)
	add("csv", "tsv api_key column", "id\tname\tapi_key\n1\tprod\t"+p+"\n", p)
	p = gen(12)
	add("csv", "quoted secret column", "\"Name\",\"Secret\",\"Notes\"\n\"svc-a\",\""+p+"\",\"rotated, twice\"\n", p)
	pin := strconv.Itoa(10_000_000 + rng.IntN(89_999_999))
	add("pin", "PIN label", "SIM unlocked. PIN: "+pin+"\n", pin)
	pin = strconv.Itoa(100_000 + rng.IntN(899_999))
	add("pin", "pin code prose", "The door pin code is "+pin+", change it monthly.", pin)
	pin = strconv.Itoa(100_000 + rng.IntN(899_999))
	add("pin", "env PIN", "export YUBIKEY_PIN="+pin, pin)
	p = gen(14)
	add("k8s", "yaml data", "apiVersion: v1\nkind: Secret\nmetadata:\n  name: app\ndata:\n  root: "+b64(p)+"\n  username: "+b64("admin")+"\n", b64(p))
	p = gen(14)
	add("k8s", "yaml stringData", "kind: Secret\nstringData:\n  connection: "+p+"\n", p)
	p = gen(14)
	j, _ := json.MarshalIndent(map[string]any{"apiVersion": "v1", "data": map[string]string{"hmac": b64(p)}, "kind": "Secret"}, "", "  ")
	add("k8s", "json data before kind", string(j), b64(p))
	p = gen(16)
	add("prompt", "aws configure", "AWS Access Key ID [None]: AKIAEXAMPLE\nAWS Secret Access Key [None]: "+p+"\nDefault region name [None]: us-east-1", p)
	p = gen(12)
	add("cli", "snmp community", "snmpwalk -v2c -c "+p+" 10.0.0.1 system", p)
	p = gen(12)
	add("cli", "net user", "net user Administrator "+p+" /add", p)
	p = gen(12)
	add("cli", "gh secret set", "gh secret set DEPLOY_KEY --body "+p, p)
	p = gen(12)
	add("cli", "macOS security", "security add-generic-password -a bob -s api -w "+p, p)
	p = gen(12)
	add("cli", "htpasswd -nb", "htpasswd -nbB admin "+p, p)
	p = gen(12)
	add("cli", "vault login", "$ vault login "+p+"\nSuccess!", p)
	p = gen(12)
	add("cli", "odbc braces", "DRIVER={ODBC Driver 18};SERVER=db;UID=sa;PWD={"+p+";x};", p)
	p = gen(12)
	add("cli", "ipsec psk", "%any 203.0.113.5 : PSK \""+p+"\"", p)
	p = gen(14)
	add("ldif", "userPassword::", "dn: uid=bob,dc=ex\nuserPassword:: "+b64(p)+"\n", b64(p))
	p = gen(12)
	add("url-pct", "percent-encoded password", "mongodb://admin:"+url.QueryEscape(p+"!@")+"@mongo.internal:27017/admin", url.QueryEscape(p+"!@"))
	p = gen(12)
	add("table", "psql", " name | password \n------+--------------\n bob  | "+p+"\n(1 row)", p)
	p = gen(12)
	add("table", "mysql", "+------+--------------+\n| user | password     |\n+------+--------------+\n| bob  | "+p+" |\n+------+--------------+", p)
	p = gen(12)
	add("stdin", "docker secret create", "printf '"+p+"' | docker secret create db_pw -", p)
	p = gen(12)
	add("stdin", "gcloud secrets", "echo -n "+p+" | gcloud secrets create db-pw --data-file=-", p)
	p = gen(12)
	add("stdin", "echo -e | passwd", "echo -e \""+p+"\\n"+p+"\" | passwd bob", p)
	p = gen(12)
	add("stdin", "chpasswd here-string", "chpasswd <<< 'bob:"+p+"'", p)
	p = gen(12)
	add("printed", "op read", "$ op read op://vault/db/password\n"+p+"\n$ ", p)
	p = gen(12)
	add("printed", "kubectl base64 -d", "$ kubectl get secret db -o jsonpath='{.data.password}' | base64 -d\n"+p, p)
	p = gen(16)
	add("printed", "vault -field", "$ vault kv get -field=password secret/app\n"+p+"\n", p)
	p = gen(12)
	add("cli", "dash token", "./client -server https://x -token "+p, p)
	p = gen(12)
	add("cli", "ssm put-parameter", "aws ssm put-parameter --name /app/db --type SecureString --value "+p, p)
	p = gen(12)
	add("cli", "keyvault secret set", "az keyvault secret set --vault-name v --name dbpw --value "+p, p)
	return cs
}

// positionStay are texts next to the same rules that hold no secret: no
// redaction marker may reach their stores.
var positionStay = []string{
	"see https://www.npmjs.com/package/@types/node and http://host:8080/a/b@c.example.com",
	"request id 3f2b8c1e-9a4d-4e2b-8f1a-2c3d4e5f6a7b failed", // a bare UUID names nothing
	"rule,password_min_length,password_history\nstrict,12,5\n",
	"PASS src/app.test.js\nTests: 4 passed",
	"250-AUTH PLAIN LOGIN OAUTHBEARER",
	"GPIO pin 18 set high",
	"| Name | Token | Description |\n|---|---|---|\n| ci | CI_TOKEN | the token CI uses |\n",
	"$ op read --help\nUsage: op read [flags] <reference>",
}

// TestPositionSecretsReachNoDisk runs the real binary: each case folded
// (fold --file) and ingested (an OpenAI chat transcript) into new stores,
// then every byte under each store and the command's output searched for
// each needle, in any letter case. Before the rules of scrub/position.go,
// 42 of the 43 cases reached disk (the percent-encoded URL password did
// not: a guard).
func TestPositionSecretsReachNoDisk(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	t.Setenv("CONTEXTFOLD_SCRUB", "")
	bin := buildBinary(t)
	run := func(t *testing.T, text string) (fold, ingest []byte) {
		tmp := t.TempDir()
		in := filepath.Join(tmp, "out.log")
		if err := os.WriteFile(in, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		tr, _ := json.Marshal(map[string]any{"messages": []map[string]string{
			{"role": "user", "content": "run it"}, {"role": "assistant", "content": "ok"}, {"role": "user", "content": text}}})
		trPath := filepath.Join(tmp, "t.json")
		if err := os.WriteFile(trPath, tr, 0o600); err != nil {
			t.Fatal(err)
		}
		var outs [2][]byte
		for i, args := range [][]string{
			{"--dir", filepath.Join(tmp, "f"), "fold", "1", "tool output", "--file", in},
			{"--dir", filepath.Join(tmp, "i"), "ingest", trPath},
		} {
			out, err := exec.Command(bin, args...).CombinedOutput()
			if err != nil {
				t.Fatalf("%v: %v\n%s", args[2], err, out)
			}
			outs[i] = append(storeBytes(t, args[1]), out...)
		}
		return outs[0], outs[1]
	}
	for _, c := range positionCases() {
		t.Run(c.class+"/"+c.name, func(t *testing.T) {
			f, i := run(t, c.text)
			for _, n := range c.needles {
				for what, disk := range map[string][]byte{"fold": f, "ingest": i} {
					if bytes.Contains(bytes.ToLower(disk), []byte(strings.ToLower(n))) {
						t.Errorf("%s: %q reached disk; input:\n%s", what, n, c.text)
					}
				}
			}
		})
	}
	for _, text := range positionStay {
		if f, i := run(t, text); bytes.Contains(f, []byte("[REDACTED:")) || bytes.Contains(i, []byte("[REDACTED:")) {
			t.Errorf("redacted: %q", text)
		}
	}
}
