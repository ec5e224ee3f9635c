package scrub

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// formCases are the shapes of forms.go's rules, each with the needles
// that must not survive a scrub; values are generated at run time.
// Without forms.go 11 of the 14 keep a needle (Python's smtplib login and
// npm's bare _auth and _password names were redacted before: they check
// that the new rules leave those alone).
func formCases() []namedCase {
	rng := rand.New(rand.NewPCG(14, 6))
	v := func(n int) string { return namedValue(rng, n) }
	b64 := func(n int) string { return strings.ReplaceAll(namedValue(rng, n), "k", "+") }
	var cs []namedCase
	add := func(name, text string, needles ...string) { cs = append(cs, namedCase{name, text, needles}) }
	a := v(12)
	add("smtp/ruby positional", "Net::SMTP.start('smtp.example.com', 25, 'example.com', 'bob', '"+a+"', :plain)", a)
	add("smtp/ruby low entropy", `Net::SMTP.start("mail.example.org", 587, "helo", "ops", "winter2024mail", :login)`, "winter2024mail")
	a = v(10)
	add("smtp/instance start", "smtp.start('example.com', 'bob', '"+a+"', :cram_md5)", a)
	add("smtp/python login", `server.login("alerts@example.com", "summer2025smtp")`, "summer2025smtp")
	a = v(12)
	add("npm/quoted name", `"//registry.npmjs.org/:_authToken"="`+a+`"`, a)
	add("npm/quoted low entropy", `"//npm.pkg.example.com/:_authToken"="npmwinter2024"`, "npmwinter2024")
	add("npm/config set", `npm config set "//registry.example.com/:_authToken" "npmspring2025"`, "npmspring2025")
	add("npm/_auth", "//npm.example.com/:_auth=Ym9iOnBhc3N3b3Jk\nalways-auth=true", "Ym9iOnBhc3N3b3Jk")
	add("npm/_password", "//npm.example.com/:username=bob\n//npm.example.com/:_password=d2ludGVyMjAyNA==", "d2ludGVyMjAyNA==")
	add("python/bytes keys", "{b'password': b'winter2024py', b'user': b'bob'}", "winter2024py")
	add("python/bytes api_key", `{b"api_key": b"autumn2023key"}`, "autumn2023key")
	a = v(22)
	add("htpasswd/apr1", "$ cat .htpasswd\nadmin:$apr1$"+v(8)+"$"+a+"\n", a)
	a = b64(27)
	add("htpasswd/sha", "$ cat /etc/nginx/.htpasswd\nbob:{SHA}"+a+"=\n", a)
	a = v(22) + v(31)
	add("htpasswd/bcrypt echo", "echo 'deploy:$2y$10$"+a+"' > /etc/nginx/.htpasswd", a)
	return cs
}

func TestFormRulesRedact(t *testing.T) {
	s, err := New()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range formCases() {
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

// formStay are texts next to forms.go's rules that hold no secret: they
// are scrubbed to themselves.
var formStay = []string{
	"Net::SMTP.start(address, port, helo, user, secret, :plain)",
	"Net::SMTP.start('smtp.example.com', 25) do |smtp|",
	"smtp.start('example.com', 'bob', '', :login)",
	"smtp.start(HELO, 'USER', 'PASSWORD', :login)",
	"//registry.npmjs.org/:_authToken=${NPM_TOKEN}",
	`"//registry.npmjs.org/:_authToken"="${NODE_AUTH_TOKEN}"`,
	"npm config set //registry.npmjs.org/:_authToken ${NPM_TOKEN}",
	"the //registry.npmjs.org/:_authToken setting holds it",
	"//HOST/PATH/:_authToken=VALUE, :_auth= (base64 of USER:PASSWORD)",
	"(`aws configure set aws_secret_access_key …`, `npm config set //registry/:_authToken …`);",
	"see https://docs.npmjs.com/cli/v10/configuring-npm/npmrc#auth-related-configuration",
	"{b'user': b'bob', b'mode': b'fast'}",
	"data = {b'password': b''}",
	"root:x:0:0:root:/root:/bin/bash",
	"Password hashes start with $2y$ (bcrypt) or $apr1$ (MD5).",
	"admin:$apr1$short$tooShort",
}

func TestFormRulesStay(t *testing.T) {
	s, err := New()
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range formStay {
		if r := s.Scrub(text); r.Text != text {
			t.Errorf("changed:\n%s\n%s", text, r.Text)
		}
	}
}
