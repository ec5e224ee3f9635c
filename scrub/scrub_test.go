package scrub

import (
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
)

func TestSecretPartOnly(t *testing.T) {
	s := newTestScrubber(t)
	g := newFakeGen(3)
	pass := g.value("DBPASS")
	in := "dial postgres://app:" + pass + "@db.internal:5432/app failed"
	got := s.Scrub(in)
	want := "dial postgres://app:[REDACTED:contextfold-url-password]@db.internal:5432/app failed"
	if got.Text != want || got.Redactions != 1 {
		t.Fatalf("got %q (%d), want %q", got.Text, got.Redactions, want)
	}
	if len(got.Rules) != 1 || got.Rules[0] != "contextfold-url-password" {
		t.Fatalf("rules = %v", got.Rules)
	}
}

func TestSeveralFindingsOneLine(t *testing.T) {
	s := newTestScrubber(t)
	g := newFakeGen(4)
	a, b := g.value("GHP"), g.value("GHP:2")
	in := "tokens: " + a + " and " + b + " end"
	got := s.Scrub(in)
	want := "tokens: [REDACTED:github-pat] and [REDACTED:github-pat] end"
	if got.Text != want || got.Redactions != 2 {
		t.Fatalf("got %q (%d)", got.Text, got.Redactions)
	}
	fs := s.Find(in)
	if len(fs) != 2 {
		t.Fatalf("Find = %+v", fs)
	}
	for i, f := range fs {
		if in[f.Start:f.End] != []string{a, b}[i] {
			t.Errorf("finding %d covers %q", i, in[f.Start:f.End])
		}
	}
}

// Our own rules, on values too plain for gitleaks' entropy thresholds.
func TestExtraRules(t *testing.T) {
	s := newTestScrubber(t)
	pw := "hunter2" + "hunter2"
	cases := []struct{ in, want string }{
		{"DB_PASSWORD=" + pw + "\n", "DB_PASSWORD=[REDACTED:contextfold-env-secret]\n"},
		{"export GITHUB_TOKEN='" + pw + "'", "export GITHUB_TOKEN='[REDACTED:contextfold-env-secret]'"},
		{`{"out":"PASSWORD=` + pw + `\nEDITOR=vim"}`, `{"out":"PASSWORD=[REDACTED:contextfold-env-secret]\nEDITOR=vim"}`},
		{"AWS_ACCESS_KEY_ID=AKIA" + "FAKEFAKEFAKE1234", "AWS_ACCESS_KEY_ID=[REDACTED:contextfold-aws-access-key-id]"},
		{"key AKIA" + "FAKEFAKEFAKE1234 used", "key [REDACTED:contextfold-aws-access-key-id] used"},
		{"redis://:" + pw + "@cache:6379", "redis://:[REDACTED:contextfold-url-password]@cache:6379"},
		{"-----BEGIN RSA PRIVATE" + " KEY-----\nMIIEabc\n(truncated)", "[REDACTED:contextfold-private-key-block]"},
		{"Bearer eyJhbGciOi.eyJzdWIi.c2ln", "Bearer [REDACTED:contextfold-jwt]"},
		{"use sk-" + "proj-" + strings.Repeat("Ab0", 10), "use [REDACTED:contextfold-llm-api-key]"},
	}
	for _, c := range cases {
		if got := s.Scrub(c.in).Text; got != c.want {
			t.Errorf("Scrub(%q)\n got %q\nwant %q", c.in, got, c.want)
		}
	}
	for _, k := range extraRuleLookAlikes {
		if got := s.Scrub(k); got.Text != k {
			t.Errorf("Scrub(%q) = %q", k, got.Text)
		}
	}
}

func TestOverlapAndRepeat(t *testing.T) {
	s := newTestScrubber(t)
	g := newFakeGen(5)
	tok := g.value("ENVVAL")
	// The env rule and gitleaks' generic rule overlap; the repeat is caught
	// by value.
	in := "NPM_TOKEN=" + tok + "\necho " + tok + "\n"
	r := s.Scrub(in)
	if strings.Contains(r.Text, tok) || r.Redactions != 2 {
		t.Fatalf("got %q (%d)", r.Text, r.Redactions)
	}
	// Adjacent secrets merge into one marker.
	a, b := g.value("AWS_KEY_ID"), g.value("AWS_KEY_ID:2")
	r = s.Scrub(a + " " + b)
	if r.Redactions != 2 || strings.Contains(r.Text, a) || strings.Contains(r.Text, b) {
		t.Fatalf("got %q", r.Text)
	}
}

func TestInvalidUTF8(t *testing.T) {
	s := newTestScrubber(t)
	g := newFakeGen(6)
	tok := g.value("GHP")
	in := "caf\xc3 token=" + tok + " \xff\xfe é"
	r := s.Scrub(in)
	if !utf8.ValidString(r.Text) {
		t.Fatalf("invalid UTF-8: %q", r.Text)
	}
	if strings.Contains(r.Text, tok) {
		t.Fatalf("secret survived: %q", r.Text)
	}
	for _, f := range s.Find(in) {
		if !utf8.RuneStart(in[f.Start]) || (f.End < len(in) && !utf8.RuneStart(in[f.End])) {
			t.Errorf("finding %+v not on a rune boundary", f)
		}
	}
	if r := s.Scrub(""); r.Text != "" || r.Redactions != 0 || r.Rules != nil {
		t.Fatalf("empty: %+v", r)
	}
}

func TestFindOffsets(t *testing.T) {
	s := newTestScrubber(t)
	g := newFakeGen(8)
	for _, c := range loadCorpus(t, "testdata/secrets.txt") {
		g.memo = map[string]string{}
		text, _ := instantiate(c.text, g)
		// Leading newlines exercise gitleaks' match trimming.
		text = "\n\nx\n" + text
		for _, f := range s.Find(text) {
			if f.Start < 0 || f.End > len(text) || f.Start >= f.End {
				t.Fatalf("%s: bad finding %+v", c.name, f)
			}
			if strings.HasPrefix(text[f.Start:f.End], "\n") {
				t.Errorf("%s: finding %+v starts with a newline", c.name, f)
			}
		}
	}
}

func TestConcurrentScrub(t *testing.T) {
	s := newTestScrubber(t)
	g := newFakeGen(9)
	cases := loadCorpus(t, "testdata/secrets.txt")
	texts := make([]string, len(cases))
	want := make([]string, len(cases))
	for i, c := range cases {
		g.memo = map[string]string{}
		texts[i], _ = instantiate(c.text, g)
		want[i] = s.Scrub(texts[i]).Text
	}
	var wg sync.WaitGroup
	for w := 0; w < 3; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			s2, err := New() // New is cheap after the first call
			if err != nil {
				t.Error(err)
				return
			}
			for k := 0; k < 1; k++ {
				for i := 0; i < len(texts); i += 2 {
					idx := (i + w) % len(texts)
					if got := s2.Scrub(texts[idx]).Text; got != want[idx] {
						t.Errorf("concurrent result differs for %s", cases[idx].name)
					}
				}
			}
		}(w)
	}
	wg.Wait()
}

// benchText builds about 1 MB of tool output: logs, diffs, JSON, with a
// secret roughly every 4 KB.
func benchText() string {
	g := newFakeGen(11)
	rng := rand.New(rand.NewPCG(11, 11))
	var sb strings.Builder
	lines := []string{
		"2026-03-02T12:00:01Z INFO http: GET /v1/items 200 12ms request_id=%s",
		"+\tif err := store.Fold(ctx, step); err != nil { return fmt.Errorf(\"fold: %w\", err) }",
		`{"step_id":42,"summary":"ran go test ./...","exit_code":0,"stdout":"ok  \tgithub.com/acme/widget\t0.012s"}`,
		"--- a/internal/store/store.go",
		"    at com.acme.Widget.run(Widget.java:118)",
		"AWS_REGION=eu-west-1 EDITOR=vim HOME=/home/dev",
	}
	for sb.Len() < 1<<20 {
		for i := 0; i < 40; i++ {
			sb.WriteString(strings.Replace(lines[rng.IntN(len(lines))], "%s", g.pick(alnum, 12), 1))
			sb.WriteByte('\n')
		}
		g.memo = map[string]string{}
		switch rng.IntN(4) {
		case 0:
			sb.WriteString("GITHUB_TOKEN=" + g.value("GHP") + "\n")
		case 1:
			sb.WriteString("DATABASE_URL=postgres://app:" + g.value("DBPASS") + "@db:5432/app\n")
		case 2:
			sb.WriteString("Authorization: Bearer " + g.value("JWT") + "\n")
		default:
			sb.WriteString("aws_access_key_id = " + g.value("AWS_KEY_ID") + "\n")
		}
	}
	return sb.String()
}

// BenchmarkScrubPerMB scrubs about 1 MB of mixed tool output per iteration;
// the MB/s column is the throughput.
func BenchmarkScrubPerMB(b *testing.B) {
	s := newTestScrubber(b)
	text := benchText()
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r := s.Scrub(text)
		if r.Redactions == 0 {
			b.Fatal("no redactions")
		}
	}
}

// TestLargeText checks the windowed gitleaks pass (texts over 16 KB): the
// whole secret corpus embedded in filler must come out clean.
func TestLargeText(t *testing.T) {
	s := newTestScrubber(t)
	g := newFakeGen(12)
	filler := strings.Repeat("2026-03-02T12:00:01Z INFO worker: processed batch of 128 items in 12ms\n", 40)
	var sb strings.Builder
	var needles []string
	for _, c := range loadCorpus(t, "testdata/secrets.txt") {
		g.memo = map[string]string{}
		text, ns := instantiate(c.text, g)
		sb.WriteString(filler + text + "\n")
		needles = append(needles, ns...)
	}
	in := sb.String()
	if len(in) <= windowMinText {
		t.Fatalf("text too small: %d", len(in))
	}
	out := s.Scrub(in).Text
	for _, n := range needles {
		if strings.Contains(out, n) {
			t.Errorf("secret survived in large text: %q", n)
		}
	}
	if !strings.Contains(out, filler) || !strings.Contains(out, "AWS_REGION=eu-west-1") {
		t.Error("harmless text lost")
	}
}

// TestScrubIsIdempotent: scrubbed text has nothing left to find, so auditing
// a scrubbed store (scrub-check) reports nothing.
func TestScrubIsIdempotent(t *testing.T) {
	s := newTestScrubber(t)
	data, err := os.ReadFile("testdata/22-secrets-in-tool-output.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	once := s.Scrub(string(data))
	if once.Redactions == 0 {
		t.Fatal("the corpus has secrets")
	}
	if f := s.Find(once.Text); len(f) != 0 {
		t.Errorf("scrubbed text still has findings: %+v", f)
	}
	if twice := s.Scrub(once.Text); twice.Text != once.Text || twice.Redactions != 0 {
		t.Error("scrubbing twice changed the text")
	}
}

// extraRuleLookAlikes are assignments and URLs that look like they hold a
// secret and do not: Scrub keeps them byte for byte.
var extraRuleLookAlikes = []string{
	// contextfold-prose-secret's short names and operators: a test
	// report, a path, code, a count, a grammar.
	"--- PASS: TestScrub2 (0.00s)", "Pass: TestScrub2", "pass tests/test_x1.py::test_a",
	"pw = hash_pw(p1)", "pass: 3/5", "pass 1000 requests", "pass x86_64", "pw: v1.2.3-rc1",
	"token = 1*tchar", "pass is required", "the password is correct", "pass  # noqa",
	// contextfold-call-secret's name argument, the vendor tokens, sudo.
	`os.getenv("DB_PASSWORD", "")`, `cfg.get("SORT_KEY", "created_at")`, `os.Setenv("TOKEN_COUNTER", "o200k_base")`,
	"version 1.2.3 of MTIzNDU2Nzg5MDEyMzQ1Njc4OTAx.x file", "MTIzNDU2Nzg5MDEyMzQ1Njc4.abcdef.not-a-token",
	"Passwort vergessen?", "el token es v\u00e1lido",
	// Chinese, Japanese, Korean: no value after the word, or one too
	// short or without a digit.
	"\u5bc6\u7801\u662f\u5426\u6b63\u786e\u8981\u770b\u72b6\u6001\u7801200\u3002", "\u5bc6\u7801\u662f8\u4f4d",
	"\u30d1\u30b9\u30ef\u30fc\u30c9\u306f8\u6587\u5b57\u4ee5\u4e0a", "\u30d1\u30b9\u30ef\u30fc\u30c9\u306fAES256\u3067\u6697\u53f7\u5316",
	"\ube44\ubc00\ubc88\ud638\ub294 admin\uc5d0\uac8c", "\u4ee4\u724c\u4e3aaccess_token_v2", "pass for the staging box is ready", "senha=abc",
	"Password for 'https://bob@github.com': ", "lftp -u bob sftp://h", "d41d8cd98f00b204e9800998ecf8427e-usage", "jdbc:oracle:thin:@//db:1521/orcl", "echo hi | sudo tee /etc/x", "at 12:30:AM",
	"AWS_REGION=eu-west-1", "EDITOR=vim", "MAX_TOKENS=4096", "TOKEN_COUNTER=o200k_base",
	"DB_PASSWORD=${DB_PASSWORD}", "PASSWORD_FILE=/run/secrets/pw", "SECRET=xxxxxxxxxxxx",
	"PWD=/home/dev/widget", "SORT_KEY=created_at", "TOKEN=true",
	"https://user@example.com/x", "postgres://app@db:5432/app",
	"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
	"550e8400-e29b-41d4-a716-446655440000",
}
