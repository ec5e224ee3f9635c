package scrub

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// namedValue returns a value generated at run time (no secret-looking
// literal is committed): letters of both cases and a digit.
func namedValue(rng *rand.Rand, n int) string {
	const al = "abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789"
	b := make([]byte, n)
	for i := range b {
		b[i] = al[rng.IntN(len(al))]
	}
	b[1], b[3], b[5] = '7', 'Q', 'k'
	return string(b)
}

// namedCase is a text whose secrets (needles) must be redacted.
type namedCase struct {
	name, text string
	needles    []string
}

// namedCases are the shapes of named.go's rules, one class a prefix of
// the name. Without named.go every needle stays in the scrubbed text.
func namedCases() []namedCase {
	rng := rand.New(rand.NewPCG(5, 5))
	v := func() string { return namedValue(rng, 12) }
	var cs []namedCase
	add := func(name, text string, needles ...string) { cs = append(cs, namedCase{name, text, needles}) }
	a, b := v(), v()
	add("file/rsyncd cat", "$ sudo cat /etc/rsyncd.secrets\nbackup:"+a+"\nweb:"+b+"\n$ ls\n", a, b)
	a = v()
	add("file/rsyncd header", "# /etc/rsyncd.secrets\nbackup:"+a, a)
	a, b = v(), v()
	add("file/chap-secrets", "# /etc/ppp/chap-secrets\n# client\tserver\tsecret\tIP addresses\nbob\t*\t\""+a+"\"\t*\nalice * "+b+" 10.0.0.2\n", a, b)
	a = v()
	add("file/davfs2", "$ cat /etc/davfs2/secrets\nhttps://dav.example.com/ bob "+a+"\n", a)
	a = v()
	add("file/openvpn auth-user-pass", "$ cat auth.txt\nbob\n"+a, a)
	a = v()
	add("file/token file", "user@box:~$ head -n 1 ~/.config/gh/token\n"+a+"\nuser@box:~$ ", a)
	a, b = v(), v()
	add("file/users list", "PS C:\\> type users.txt\nadmin:"+a+"\nbob:"+b, a, b)
	a = v()
	add("file/numbered view", "$ cat -n creds.txt\n     1\tdeploy "+a+"\n", a)
	a, b = v(), v()
	add("sql/insert", "INSERT INTO users (name, email, password) VALUES ('bob', 'b@x.io', '"+a+"'),\n  ('al', 'a@x.io', '"+b+"');", a, b)
	a = v()
	add("sql/insert quoted columns", "insert into `accounts` (`id`, `api_key`) values (1, 'it''s-"+a+"')", a)
	a = v()
	add("sql/insert crypt", "INSERT INTO app_user (login, client_secret) VALUES ('svc', crypt('"+a+"', gen_salt('bf')));", a)
	a = v()
	add("sql/pg_dump copy", "COPY public.users (id, name, api_token) FROM stdin;\n1\tbob\t"+a+"\n2\tal\t\\N\n\\.\n", a)
	a = v()
	add("cdata/password", "<password><![CDATA["+a+"]]></password>", a)
	a = v()
	add("cdata/spaced", "<db:secretKey>\n  <![CDATA["+a+"]]>\n</db:secretKey>", a)
	a = v()
	add("toml/one line", `password = """`+a+`"""`, a)
	a = v()
	add("toml/multi line", "[db]\napi_key = '''\n"+a+"\n'''\n", a)
	a = v()
	add("toml/python", "SECRET_KEY = \"\"\"django-"+a+"\"\"\"", a)
	a = v()
	add("wifi/qr", "WIFI:S:office;T:WPA;P:"+a+";;", a)
	a = v()
	add("wifi/escaped", `qrencode 'WIFI:T:WPA;S:my\;net;P:`+a[:5]+`\;`+a[5:]+`;H:false;;'`, a[5:])
	a, b = v(), v()+"x9"
	add("wrapped/env", "export GITHUB_TOKEN=ghp_"+a+"\n"+b+"\nDEBUG=1", a, b)
	a = v()
	add("more/makefile", "DB_PASSWORD := "+a+"\n", a)
	a = v()
	add("more/terraform output", "$ terraform output -raw db_password\n"+a+"\n$ ", a)
	a = v()
	add("more/gh auth token", "$ gh auth token\n"+a+"\n", a)
	a = v()
	add("more/mc alias", "mc alias set minio http://minio:9000 admin "+a, a)
	a = v()
	add("more/freerdp", "xfreerdp /u:bob /p:"+a+" /v:10.0.0.9", a)
	a = v()
	add("more/httpie", "http -a bob:"+a+" POST https://api.example.com/items", a)
	a = v()
	add("more/curl oauth2", "curl --oauth2-bearer "+a+" https://api.example.com", a)
	a = v()
	add("more/walletpassphrase", "bitcoin-cli walletpassphrase \""+a+"\" 60", a)
	a = v()
	add("more/sp_addlogin", "EXEC sp_addlogin 'bob', '"+a+"'", a)
	a = v()
	add("more/same-line prompt", "Enter passphrase (empty for no passphrase): "+a+"\nEnter same passphrase again: "+a, a)
	a = v()
	add("more/heredoc passwd", "passwd bob <<EOF\n"+a+"\n"+a+"\nEOF\n", a)
	a = v()
	add("more/heredoc chpasswd", "sudo chpasswd <<'END'\nbob:"+a+"\nEND\n", a)
	a = "0f1e2d3c4b5a6978" + strings.ToLower(v())
	add("more/openvpn static key", "<tls-auth>\n-----BEGIN OpenVPN Static key V1-----\n"+a+"\n"+a+"\n-----END OpenVPN Static key V1-----\n</tls-auth>", a)
	a = v()
	add("more/gradle", "signingConfigs {\n  release {\n    storePassword '"+a+"'\n  }\n}", a)
	a = v()
	add("more/process.env", "const key = process.env.API_KEY || '"+a+"';", a)
	a = v()
	add("more/composer", "{\n  \"github-oauth\": {\n    \"github.com\": \""+a+"\"\n  }\n}", a)
	return cs
}

func TestNamedRulesRedact(t *testing.T) {
	s, err := New()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range namedCases() {
		t.Run(c.name, func(t *testing.T) {
			got := s.Scrub(c.text).Text
			for _, n := range c.needles {
				if strings.Contains(got, n) {
					t.Errorf("%q stays in\n%s", n, got)
				}
			}
		})
	}
}

// TestWrappedTokenRest checks that the rest of a wrapped token is redacted
// with its first part, and that the line after a value which is a line of
// its own stays.
func TestWrappedTokenRest(t *testing.T) {
	s, err := New()
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(6, 6))
	first, rest := namedValue(rng, 16), namedValue(rng, 14)
	got := s.Scrub("API_TOKEN=" + first + "\n" + rest + "\n").Text
	if strings.Contains(got, rest) || strings.Contains(got, first) {
		t.Errorf("wrapped token stays: %q", got)
	}
	if !strings.HasSuffix(got, "]\n") || strings.Count(got, "\n") != 2 {
		t.Errorf("line breaks changed: %q", got)
	}
}

// namedStay are texts next to named.go's rules that hold no secret.
var namedStay = []string{
	"$ cat /etc/passwd\nroot:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n",
	"$ cat auth.go\npackage auth\n\nfunc Login(user, pass string) error { return nil }\n",
	"$ cat secrets.txt\nthe deploy note says hello world\nrotate them monthly\n",
	"$ cat users.txt\nalice admin active\nbob viewer disabled\n",
	"$ cat users.txt\nalice alice@example.com\nbob bob@example.com\n",
	"# /etc/ppp/chap-secrets\n# client server secret IP addresses\n",
	"$ cat auth.txt\nbob\n$ ls\n",
	"INSERT INTO users (name, password_hash) VALUES ('bob', 'pbkdf2-sha256-29000-abcdEFGH1234');",
	"INSERT INTO users (name, password) VALUES (?, ?), ($1, $2);",
	"cur.execute(\"INSERT INTO users (name, password) VALUES (%s, %s)\", (name, pw))",
	"INSERT INTO settings (key, value) VALUES ('theme', 'dark');",
	"INSERT INTO users (name, password) VALUES ('bob', '********');",
	"COPY public.users (id, name) FROM stdin;\n1\tbob\n\\.\n",
	"<description><![CDATA[Use a strong password of 12 characters]]></description>",
	`description = """The password must hold 12 characters."""`,
	`password = """"""`,
	"WIFI:S:guest;T:nopass;P:;;",
	"API_KEY=abcd1234efgh5678\nDEBUG=1\n",
	"TOKEN=abcd1234efgh5678\nDeployment\n",
	"TOKEN=abcd1234efgh5678\nv1.2.3\n",
	"TOKEN=abcd1234efgh5678\nsome_identifier_name\n",
	"TOKEN=abcd1234efgh5678\n3f2b8c1e-9a4d-4e2b-8f1a-2c3d4e5f6a7b\n",
	"$ cat auth.txt\nbob\n{p}\", [p])\n",
	"$ terraform output -raw vpc_id\nvpc-0a1b2c3d4e5f67890\n",
	"$ gh auth token\nno oauth token found\n",
	"keytool -list -keystore k.jks -storepass:env STOREPASS",
	"sqlplus / as sysdba",
	"Enter passphrase (empty for no passphrase): \nEnter same passphrase again: \n",
	"New password: ********\n",
	"cat <<EOF > notes.txt\nabcd1234efgh\nEOF\n",
	"-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAu1SU1LfVLPHCozMxH2Mo\n-----END PUBLIC KEY-----\n",
	"import (\n\thcltoken \"github.com/hashicorp/hcl/hcl/token\"\n)\n",
	"    storePassword System.getenv('STORE_PASSWORD')\n",
	"const key = process.env.API_KEY || '';",
	"MY_TOKEN := $(shell cat token.txt)\n",
	"token := getToken(ctx)\n",
}

func TestNamedRulesStay(t *testing.T) {
	s, err := New()
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range namedStay {
		r := s.Scrub(text)
		want := 0
		if strings.HasPrefix(text, "API_KEY=") || strings.HasPrefix(text, "TOKEN=") {
			want = 1 // the value, not the next line
		}
		if r.Redactions != want {
			t.Errorf("%d redactions, want %d:\n%s", r.Redactions, want, r.Text)
		}
	}
}

// BenchmarkNamedRulesRepeated scrubs a text of 1 MiB made of one of
// named.go's shapes, or one of its anchors, over and over: each rule's
// begin function looks back and its candidate ahead a bounded way.
//
//	go test ./scrub -run '^$' -bench NamedRulesRepeated -benchtime 1x
func BenchmarkNamedRulesRepeated(b *testing.B) {
	s, err := New()
	if err != nil {
		b.Fatal(err)
	}
	for _, unit := range []string{"$ cat auth.txt\n", "cat users.txt ", "# /etc/rsyncd.secrets\nbob:x\n", "secrets ",
		"INSERT INTO t (a, password) VALUES ('b', 'c'), ", "INSERT ", "COPY t (a, token) FROM stdin;\n",
		"<password><![CDATA[", `password = """`, `"""`, "WIFI:P:a;"} {
		text := strings.Repeat(unit, (1<<20)/len(unit))
		b.Run(strings.TrimSpace(unit), func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				s.Scrub(text)
			}
		})
	}
}

// BenchmarkWrappedFindings runs the wrapped-token pass alone over 1 MiB of
// "TOKEN=VALUE" then "REST" lines with a finding at every line's end: one
// look at the next line per finding. (Scrubbing the same 1 MiB whole takes
// about two minutes, on main too: 55,000 findings of one repeated value;
// that is not this pass.)
func BenchmarkWrappedFindings(b *testing.B) {
	unit := "TOKEN=abcd1234efgh\nAbcd1234efghXYZ\n"
	text := strings.Repeat(unit, (1<<20)/len(unit))
	var fs []Finding
	for i := 0; i+len(unit) <= len(text); i += len(unit) {
		fs = append(fs, Finding{RuleID: "x", Start: i + 6, End: i + 18})
	}
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		if len(wrappedFindings(text, fs)) != len(fs) {
			b.Fatal("a wrapped rest was missed")
		}
	}
}
