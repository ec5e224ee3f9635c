package scrub

import (
	"reflect"
	"strings"
	"testing"
)

// coverage returns, for each rule, the bytes of text its findings cover,
// as sorted disjoint spans.
func coverage(fs []Finding) map[string][][2]int {
	by := map[string][]Finding{}
	for _, f := range fs {
		by[f.RuleID] = append(by[f.RuleID], f)
	}
	out := map[string][][2]int{}
	for id, rs := range by {
		sortFindings(rs)
		var spans [][2]int
		for _, f := range rs {
			if n := len(spans); n > 0 && f.Start <= spans[n-1][1] {
				spans[n-1][1] = max(spans[n-1][1], f.End)
				continue
			}
			spans = append(spans, [2]int{f.Start, f.End})
		}
		out[id] = spans
	}
	return out
}

// TestCoveredSkipSame: on the corpus, the look-alikes, tool output and
// texts of the rules' anchors back to back, extraFindings covers the same
// bytes under the same rules whether or not it passes over the anchors
// inside a secret already found (coveredSkip). Without the pending try
// of the last occurrence passed over, "…secret:abc.jsonservice_KEY: VALUE"
// lost VALUE (the ':' after service_KEY lies inside the value before it).
func TestCoveredSkipSame(t *testing.T) {
	texts := append(prefilterTexts(t), anchorTexts()...)
	if !raceEnabled {
		texts = append(texts, benchText()[:1<<20])
	}
	n := 0
	for _, text := range texts {
		got := extraFindings(text)
		extraSkipCovered = false
		want := extraFindings(text)
		extraSkipCovered = true
		n += len(want)
		if g, w := coverage(got), coverage(want); !reflect.DeepEqual(g, w) {
			t.Fatalf("text %.300q:\n got %v\nwant %v", text, g, w)
		}
	}
	if n < 500 {
		t.Fatalf("only %d findings: the comparison tests little", n)
	}
}

// TestSecretNameIsAcceptEnvSecretsName: secretName(name) holds exactly
// when acceptEnvSecret accepts some value under name (a long value
// mixing letters and digits is accepted under every name that takes
// one), over names built from the secret words, qualifiers and others.
func TestSecretNameIsAcceptEnvSecretsName(t *testing.T) {
	comps := []string{"", "api", "API", "access", "ACCESS", "key", "KEY", "Key", "id", "ID", "auth", "AUTH", "Auth",
		"token", "TOKEN", "password", "pgpassword", "PASS", "pwd", "secret", "secretaccesskey", "SIGNINGKEY",
		"redis", "BASIC", "aws", "x", "region", "max", "tokens", "jsessionid", "psk", "credentials"}
	seps := []string{"_", "-", "."}
	values := []string{"Abcdef1234567890XYZ", "abcdefghij", "12345678", "${TOKEN}"}
	n := 0
	for _, a := range comps {
		for _, b := range comps {
			for _, c := range comps {
				for _, sep := range seps {
					var parts []string
					for _, p := range []string{a, b, c} {
						if p != "" {
							parts = append(parts, p)
						}
					}
					name := strings.Join(parts, sep)
					some := false
					for _, v := range values {
						some = some || acceptEnvSecret(name, v)
					}
					if got := secretName(name); got != some {
						t.Fatalf("secretName(%q) = %v, acceptEnvSecret accepts a value: %v", name, got, some)
					}
					if some {
						n++
					}
				}
			}
		}
	}
	if n < 1000 {
		t.Fatalf("only %d names accepted: the comparison tests little", n)
	}
}

// TestPathologicalInputStillScrubbed: a secret after 1 MiB of one anchor
// repeated (the shapes of BenchmarkScrubAdversarial that took minutes)
// is redacted: passing over the anchors inside a secret found, or after
// a header that found none, opens no hole at the end of the run. Each
// junk run is followed at once by the secret in the form its anchor
// starts, then by an assignment and a JWT. 64 KiB under -short, 16 KiB
// under -race (single-goroutine scrubs, to which the race detector adds
// nothing but a ~10 times slowdown); scripts/test.sh runs the full 1 MiB
// without -race.
func TestPathologicalInputStillScrubbed(t *testing.T) {
	s := newTestScrubber(t)
	size := 1 << 20
	if testing.Short() {
		size = 64 << 10
	}
	if raceEnabled {
		size = 16 << 10
	}
	g := newFakeGen(41)
	pw := g.value("ENVVAL")
	jwt := g.value("JWT")
	tok := g.value("GHP")
	cases := []struct{ junk, secret, value string }{
		{"api_key=", "api_key=" + pw, pw},
		{"auth=(", "AUTH_TOKEN=" + pw, pw},
		{"-p ", "docker login -u bob -p " + pw, pw},
		{"-u x -p ", "-u x -p " + pw, pw},
		{"eyJ-", jwt, jwt},
		{"ya29.", "token: " + tok, tok},
		{"--", "--password " + pw, pw},
		{"ENV\t", "\nENV DB_PASSWORD " + pw, pw},
		{"password: ", "password: " + pw, pw},
		{"Authorization: Bearer ", "Authorization: Bearer " + pw, pw},
		{"-----BEGIN RSA PRIVATE KEY-----\n", "\nAWS_SECRET_ACCESS_KEY=" + pw, pw},
		{"API_KEY_1=\nTOKEN_2=${TOKEN}\n", "API_KEY_3=" + pw, pw},
	}
	for _, c := range cases {
		junk := adversarialText(c.junk, size)
		// Right after the junk, no separator: the junk's last secret
		// (or failed header) runs into it.
		out := s.Scrub(junk + c.secret + "\nexport DB_PASSWORD=" + pw + "\n" + jwt).Text
		if strings.Contains(out, c.value) || strings.Contains(out, pw) || strings.Contains(out, jwt) {
			t.Errorf("after %d bytes of %q, %q survived in %q", len(junk), c.junk, c.value, out[max(0, len(out)-300):])
		}
	}
}
