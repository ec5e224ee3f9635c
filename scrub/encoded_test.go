package scrub_test

import (
	"encoding/base64"
	"encoding/hex"
	"html"
	"net/url"
	"strings"
	"testing"

	"github.com/contextfold/contextfold/scrub"
)

// TestKnownSecretEncodings: a secret value found once (here only by its
// context, CLOUDFLARE_API_KEY=…, and a vendor token) is redacted where
// the same text or another text of the set shows it base64-encoded (at
// any alignment, either alphabet, inside a longer encoded text),
// percent-encoded, HTML-escaped or JSON \u-escaped.
func TestKnownSecretEncodings(t *testing.T) {
	sc := newScrubber(t)
	v := "Zk4p" + "Q9vL+m2x/T7wRb5nYc"
	tok := "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc"
	b64 := base64.StdEncoding.EncodeToString
	enc := []string{
		b64([]byte(v)),
		b64([]byte("a" + v)),
		b64([]byte("ab" + v + "xyz")),
		base64.RawURLEncoding.EncodeToString([]byte("user:" + v)),
		b64([]byte("CLOUDFLARE_API_KEY=" + v + "\n")),
		url.QueryEscape(v),
		html.EscapeString("<" + v + ">"),
		strings.ReplaceAll(v, "+", "&#43;"),
		strings.ReplaceAll(v, "+", `\u002b`),
		b64([]byte(tok)),
		b64([]byte("x" + tok)),
		hex.EncodeToString([]byte(v)),                  // xxd -p
		strings.ToUpper(hex.EncodeToString([]byte(v))), // a hex dump
	}
	secretParts := func(e string) []string {
		// what of the encoding reveals the secret: the encoding itself
		return []string{e}
	}
	context := "CLOUDFLARE_API_KEY=" + v + "\nSTRIPE=" + tok + "\n"
	for _, e := range enc {
		in := context + "echo " + e + " | base64 -d\n"
		out := sc.Scrub(in).Text
		for _, p := range secretParts(e) {
			if strings.Contains(out, p) {
				t.Errorf("Scrub: the encoding %q survives: %q", p, out)
			}
		}
		rs := sc.ScrubSet([]string{context, "data: " + e + " end"})
		if strings.Contains(rs[1].Text, e) {
			t.Errorf("ScrubSet: the encoding %q survives in the other field: %q", e, rs[1].Text)
		}
		if strings.HasPrefix(e, "&lt;") {
			continue
		}
		if !strings.HasPrefix(rs[1].Text, "data: [REDACTED:") || !strings.HasSuffix(rs[1].Text, "] end") {
			t.Errorf("ScrubSet: %q, want the encoded run alone redacted", rs[1].Text)
		}
	}
	// A base64 run that does not encode a known value is kept, and so is
	// a name before an encoded value.
	other := b64([]byte("just some bytes of a log line"))
	if out := sc.ScrubSet([]string{context, "token=" + b64([]byte(v)) + " " + other})[1].Text; !strings.HasPrefix(out, "token=[REDACTED:") || !strings.HasSuffix(out, " "+other) {
		t.Errorf("ScrubSet = %q", out)
	}
}

// TestHTMLCharacterReferences: a token written with HTML character
// references (an HTML page, an escaped log viewer) is found like the
// plain one, and the references around it are kept.
func TestHTMLCharacterReferences(t *testing.T) {
	sc := newScrubber(t)
	tail := "4eC39" + "HqLyjWDarjtT1zdp7dc"
	for _, in := range []string{
		"key sk&#95;live&#95;" + tail + " end",
		"key sk&#x5F;live&#x5f;" + tail + "&#46;json",
		"<td>&quot;sk_live_" + tail + "&quot;</td>",
		"&lt;password&gt;" + "Wq7vTz3kLp9s" + "&lt;/password&gt;",
	} {
		out := sc.Scrub(in).Text
		if strings.Contains(out, tail) || strings.Contains(out, "Wq7vTz3kLp9s") {
			t.Errorf("Scrub(%q) = %q: the token survives", in, out)
		}
	}
	if in := "a &amp; b &#169; &lt;c&gt; &#0; &#xD800; &bogus;"; sc.Scrub(in).Text != in {
		t.Errorf("Scrub(%q) = %q, want it unchanged", in, sc.Scrub(in).Text)
	}
}

// TestBase64EncodedSecrets: a secret shown only base64-encoded (a
// Kubernetes Secret, a .dockerconfigjson, "echo … | base64" output, twice
// encoded) is redacted, the whole encoded run; base64 runs that decode to
// clean text or to binary (a hash, an identifier) are kept.
func TestBase64EncodedSecrets(t *testing.T) {
	sc := newScrubber(t)
	tok := "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc"
	gh := "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
	std, url := base64.StdEncoding.EncodeToString, base64.RawURLEncoding.EncodeToString
	docker := std([]byte(`{"auths":{"ghcr.io":{"auth":"` + std([]byte("bot:"+gh)) + `"}}}`))
	for _, enc := range []string{
		std([]byte(tok)),
		std([]byte("STRIPE_KEY=" + tok + "\n")),
		url([]byte("token: " + gh)),
		docker,
		std([]byte(std([]byte("x " + tok + " y")))),
		wrap76(std([]byte(`{"auths":{"registry.example.com":{"username":"ci","password":"x","auth":"` + std([]byte("ci:"+gh)) + `"}}}` + "\n"))),
	} {
		for _, in := range []string{
			"apiVersion: v1\nkind: Secret\ndata:\n  key: " + enc + "\n",
			`{"data":{".dockerconfigjson":"` + enc + `"}}`,
			"$ echo ... | base64\n" + enc,
		} {
			out := sc.Scrub(in).Text
			if strings.Contains(out, enc) || strings.Contains(out, enc[:20]) {
				t.Errorf("Scrub(%q) = %q: the encoded secret survives", in, out)
			}
		}
	}
	for _, in := range []string{
		"config: " + std([]byte("just a harmless line of configuration text")),
		"sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
		"func TestEveryRuleEveryNeighbourAndMore(t *testing.T)",
		"image: " + std([]byte{0, 1, 2, 0xff, 0xfe, 0x10, 0x80, 0x81, 0x90, 0x00, 0x00, 0x7f, 0x1b, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08}),
	} {
		if out := sc.Scrub(in).Text; out != in {
			t.Errorf("Scrub(%q) = %q, want it unchanged", in, out)
		}
	}
}

// TestTerminalColours: a token in coloured terminal output (an SGR
// sequence ESC [ … m just before or inside it, raw or JSON-escaped as a
// transcript stores it) is found; the sequences around are kept.
func TestTerminalColours(t *testing.T) {
	sc := newScrubber(t)
	tok := "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc"
	aws := "AKIA" + "Z7XQ4M2PLK9RT3WV"
	for _, in := range []string{
		"key: \x1b[32m" + tok + "\x1b[0m",
		"\x1b[1;31m" + aws + "\x1b[m found",
		`{"out":"key: \u001b[32m` + tok + `\u001b[0m"}`,
		`printf '\033[33m` + aws + `\033[0m'`,
		"grep hit: sk_live_\x1b[01;31m\x1b[K4eC39HqLyjWD\x1b[m\x1b[KarjtT1zdp7dc",
	} {
		out := sc.Scrub(in).Text
		if strings.Contains(out, tok) || strings.Contains(out, aws) || strings.Contains(out, "arjtT1zdp7dc") {
			t.Errorf("Scrub(%q) = %q: the token survives", in, out)
		}
	}
	if in := "\x1b[32mPASS\x1b[0m ok \x1b[1m3 tests\x1b[0m"; sc.Scrub(in).Text != in {
		t.Errorf("Scrub(%q) = %q, want it unchanged", in, sc.Scrub(in).Text)
	}
}

// wrap76 wraps s at 76 characters a line, as base64(1) does.
func wrap76(s string) string {
	var b strings.Builder
	for len(s) > 76 {
		b.WriteString(s[:76] + "\n")
		s = s[76:]
	}
	return b.String() + s
}

// TestKnownSkipsCode: what a context rule reads after "password = " in
// code (a call, a dotted path) is not shared with other texts, a real
// value is; "auth = …" in code names no secret, REDISCLI_AUTH=… does.
func TestKnownSkipsCode(t *testing.T) {
	sc := newScrubber(t)
	pw := "Wq7v" + "Tz3kLp9s"
	var k scrub.Known
	k.AddContext(sc, "username, password = get_auth_from_url(proxy)\nsecret = parsed.auth.password\nREDISCLI_AUTH="+pw+"\n")
	if k.Len() != 1 {
		t.Errorf("Known holds %d values, want 1 (the password only)", k.Len())
	}
	if out, n := k.Redact("echo " + pw + "; x = get_auth_from_url(proxy)"); n != 1 || strings.Contains(out, pw) || !strings.Contains(out, "get_auth_from_url(proxy)") {
		t.Errorf("Redact = %q, %d", out, n)
	}
	for _, in := range []string{"        auth = parsed.auth\n", "auth: parsed_credentials_value"} {
		if out := sc.Scrub(in).Text; out != in {
			t.Errorf("Scrub(%q) = %q, want it unchanged", in, out)
		}
	}
}

// TestKnownSkipsPlainWords: an ordinary word a context rule read as a
// value ("config token postgres" in a log line) is redacted where its
// context shows it but not shared: shared, one rule's mistake took the
// word from every later turn of a session ("postgres" in three turns of a
// generated session of 250). A value with a digit, punctuation or mixed
// case is shared.
func TestKnownSkipsPlainWords(t *testing.T) {
	sc := newScrubber(t)
	var k scrub.Known
	k.AddContext(sc, "KeyError: config token postgres\nDB_PASSWORD=Postgres\nAPI_TOKEN=LETMEINNOW\n")
	if k.Len() != 0 {
		t.Errorf("Known holds %d ordinary words, want none", k.Len())
	}
	if out := sc.Scrub("config token postgres").Text; strings.Contains(out, "postgres") {
		t.Errorf("the word is not redacted where its context shows it: %q", out)
	}
	for _, v := range []string{"hunter2hunter", "s3cr3t-value", "myPassWord", "p@ssphrase"} {
		var k scrub.Known
		if k.AddContext(sc, "DB_PASSWORD="+v+"\n"); k.Len() != 1 {
			t.Errorf("%q is not shared", v)
		}
	}
}
