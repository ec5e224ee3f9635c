package scrub

import (
	"bufio"
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math/rand/v2"
	"os"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

// corpusCase is one "### name" section of a corpus file.
type corpusCase struct {
	name string
	text string
}

func loadCorpus(t testing.TB, path string) []corpusCase {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cases []corpusCase
	var cur *corpusCase
	var lines []string
	flush := func() {
		if cur != nil {
			cur.text = strings.Join(lines, "\n")
			cases = append(cases, *cur)
		}
		lines = nil
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "### ") {
			flush()
			cur = &corpusCase{name: strings.TrimPrefix(line, "### ")}
			continue
		}
		if cur == nil {
			continue // header comment
		}
		lines = append(lines, line)
	}
	flush()
	return cases
}

// fakeGen produces FAKE credentials shaped like real ones. They are built at
// test time from a seeded generator so that no credential-shaped literal is
// committed (pre-commit secret scanners stay quiet) and runs are repeatable.
type fakeGen struct {
	rng  *rand.Rand
	memo map[string]string
}

func newFakeGen(seed uint64) *fakeGen {
	return &fakeGen{rng: rand.New(rand.NewPCG(seed, 0x5eed)), memo: map[string]string{}}
}

const (
	upperDigits = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567" // base-32 alphabet of AWS key ids
	alnum       = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	digits      = "0123456789"
	b64chars    = alnum + "+/"
)

func (g *fakeGen) pick(alphabet string, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[g.rng.IntN(len(alphabet))]
	}
	return string(b)
}

func (g *fakeGen) b64url(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(g.rng.IntN(256))
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

func (g *fakeGen) pem(kind string, lines int, withEnd bool) string {
	var sb strings.Builder
	sb.WriteString("-----BEGIN " + kind + " PRIVATE" + " KEY-----\n")
	for i := 0; i < lines; i++ {
		sb.WriteString(g.pick(b64chars, 64) + "\n")
	}
	if withEnd {
		sb.WriteString("-----END " + kind + " PRIVATE" + " KEY-----")
	} else {
		s := sb.String()
		return s[:len(s)-1]
	}
	return sb.String()
}

// value returns the fake secret for a placeholder kind (memoised per key so
// that {{GHP}} twice in a case is the same token).
func (g *fakeGen) value(key string) string {
	if v, ok := g.memo[key]; ok {
		return v
	}
	kind, _, _ := strings.Cut(key, ":")
	var v string
	switch kind {
	case "AWS_KEY_ID":
		v = "AK" + "IA" + g.pick(upperDigits, 16)
	case "AWS_SECRET":
		v = g.pick(alnum, 20) + "/" + g.pick(alnum, 19)
	case "GHP":
		v = "gh" + "p_" + g.pick(alnum, 36)
	case "GH_FINE":
		v = "github" + "_pat_" + g.pick(alnum, 22) + "_" + g.pick(alnum, 59)
	case "GLPAT":
		v = "gl" + "pat-" + g.pick(alnum, 20)
	case "XOXB":
		v = "xo" + "xb-" + g.pick(digits, 12) + "-" + g.pick(digits, 13) + "-" + g.pick(alnum, 24)
	case "STRIPE":
		v = "sk" + "_live_" + g.pick(alnum, 24)
	case "PEM_RSA":
		v = g.pem("RSA", 6, true)
	case "PEM_OPENSSH_JSON":
		v = strings.ReplaceAll(g.pem("OPENSSH", 4, true), "\n", `\n`)
	case "PEM_TRUNC":
		v = g.pem("EC", 2, false)
	case "JWT":
		v = base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`)) + "." +
			base64.RawURLEncoding.EncodeToString([]byte(fmt.Sprintf(`{"sub":"user-%d","exp":1767225600}`, g.rng.IntN(1e6)))) + "." +
			g.b64url(32)
	case "DBPASS":
		v = g.pick(alnum, 6) + "-" + g.pick(alnum, 8)
	case "ENVVAL":
		v = g.pick(alnum, 24)
	case "OPENAI":
		v = "sk-" + "proj-" + g.pick(alnum+"_-", 48)
	case "OPAQUE": // an OAuth access token or session token: no prefix
		v = g.pick(alnum, 8) + "." + g.pick(alnum+"-_", 32)
	case "PUNCTPW": // a password with punctuation gitleaks' generic rule declines
		v = g.pick(alnum, 5) + "!" + g.pick(alnum, 4) + "#" + g.pick(alnum, 3)
	case "DOCKER_AUTH": // a config.json "auth": base64 of user:password
		v = base64.StdEncoding.EncodeToString([]byte("deploy:" + g.pick(alnum, 14)))
	case "DOCKER_AUTH_LOW": // the same, of a short lower-case password
		v = base64.StdEncoding.EncodeToString([]byte("ci:" + g.pick("abcdefghijklmnopqrstuvwxyz", 7) + g.pick(digits, 2)))
	case "ANTHROPIC":
		v = "sk-" + "ant-api03-" + g.pick(alnum+"_-", 93) + "AA"
	default:
		panic("unknown placeholder " + key)
	}
	g.memo[key] = v
	return v
}

var placeholderRE = regexp.MustCompile(`\{\{([A-Z0-9_]+(?::[0-9]+)?)\}\}`)

// instantiate fills the placeholders of a case and returns the text and the
// secret values (needles) it now contains. For PEM blocks each body line is
// a needle.
func instantiate(text string, g *fakeGen) (string, []string) {
	var needles []string
	out := placeholderRE.ReplaceAllStringFunc(text, func(m string) string {
		key := m[2 : len(m)-2]
		v := g.value(key)
		if strings.HasPrefix(key, "PEM") {
			for _, line := range strings.Split(strings.ReplaceAll(v, `\n`, "\n"), "\n") {
				if !strings.HasPrefix(line, "-----") {
					needles = append(needles, line)
				}
			}
		} else {
			needles = append(needles, v)
		}
		return v
	})
	return out, needles
}

// nonSecretValue generates harmless values that look random.
func nonSecretValue(key string, rng *rand.Rand, pngB64 string) string {
	kind, n, _ := strings.Cut(key, ":")
	seed := "contextfold-" + kind + n
	switch kind {
	case "SHA256":
		s := sha256.Sum256([]byte(seed))
		return hex.EncodeToString(s[:])
	case "SHA1":
		s := sha1.Sum([]byte(seed))
		return hex.EncodeToString(s[:])
	case "UUID":
		b := make([]byte, 16)
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		b[6] = b[6]&0x0f | 0x40
		b[8] = b[8]&0x3f | 0x80
		return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
	case "PNG_B64":
		return pngB64
	}
	panic("unknown placeholder " + key)
}

// randomPNG returns the base64 of a real PNG image of random pixels.
func randomPNG(rng *rand.Rand) string {
	img := image.NewNRGBA(image.Rect(0, 0, 24, 24))
	for y := 0; y < 24; y++ {
		for x := 0; x < 24; x++ {
			img.Set(x, y, color.NRGBA{uint8(rng.IntN(256)), uint8(rng.IntN(256)), uint8(rng.IntN(256)), 255})
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		panic(err)
	}
	return base64.StdEncoding.EncodeToString(buf.Bytes())
}

func newTestScrubber(t testing.TB) *Scrubber {
	t.Helper()
	s, err := New()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSecretCorpus(t *testing.T) {
	s := newTestScrubber(t)
	cases := loadCorpus(t, "testdata/secrets.txt")
	if len(cases) < 20 {
		t.Fatalf("secret corpus has %d cases", len(cases))
	}
	total, caught := 0, 0
	// Two seeds: different random values exercise the rules' edges.
	for _, seed := range []uint64{1, 2} {
		if seed == 2 && raceEnabled {
			break // keep -race runs short on the 2-core CI machine
		}
		g := newFakeGen(seed)
		for _, c := range cases {
			g.memo = map[string]string{}
			text, needles := instantiate(c.text, g)
			res := s.Scrub(text)
			if !utf8.ValidString(res.Text) {
				t.Errorf("%s: result is not valid UTF-8", c.name)
			}
			if res.Redactions == 0 {
				t.Errorf("%s: no redactions", c.name)
			}
			for _, n := range needles {
				total++
				if strings.Contains(res.Text, n) {
					t.Errorf("seed %d, %s: secret survived: %q\nresult:\n%s", seed, c.name, n, res.Text)
					continue
				}
				caught++
			}
			if seed > 1 {
				continue
			}
			if again := s.Scrub(text); again.Text != res.Text || again.Redactions != res.Redactions {
				t.Errorf("%s: not deterministic", c.name)
			}
		}
	}
	rate := 100 * float64(caught) / float64(total)
	t.Logf("detection: %d/%d secrets = %.1f%%", caught, total, rate)
	if caught != total {
		t.Errorf("detection rate %.1f%%, want 100%%", rate)
	}
}

func TestNonSecretCorpus(t *testing.T) {
	s := newTestScrubber(t)
	cases := loadCorpus(t, "testdata/nonsecrets.txt")
	rng := rand.New(rand.NewPCG(7, 7))
	pngB64 := randomPNG(rng)
	changed := 0
	for _, c := range cases {
		text := placeholderRE.ReplaceAllStringFunc(c.text, func(m string) string {
			return nonSecretValue(m[2:len(m)-2], rng, pngB64)
		})
		res := s.Scrub(text)
		if res.Text != text || res.Redactions != 0 {
			changed++
			t.Errorf("%s: non-secret text changed (rules %v):\n%s", c.name, res.Rules, res.Text)
		}
	}
	t.Logf("false positives: %d/%d non-secret documents = %.1f%%", changed, len(cases), 100*float64(changed)/float64(len(cases)))
}

// TestFieldReport22 scrubs every string of the field report and checks that
// no needle survives and that the harmless lines do.
func TestFieldReport22(t *testing.T) {
	s := newTestScrubber(t)
	needlesData, err := os.ReadFile("testdata/22-secrets-needles.txt")
	if err != nil {
		t.Fatal(err)
	}
	var needles []string
	for _, l := range strings.Split(string(needlesData), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			needles = append(needles, l)
		}
	}
	f, err := os.Open("testdata/22-secrets-in-tool-output.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var all strings.Builder
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		v = scrubStrings(s, v)
		out, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		// Check the decoded strings, not the JSON escapes.
		walkStrings(v, func(str string) { all.WriteString(str + "\n") })
		all.Write(out)
		all.WriteByte('\n')
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	text := all.String()
	for _, n := range needles {
		if strings.Contains(text, n) {
			t.Errorf("needle survived: %q", n)
		}
	}
	for _, keep := range []string{"AWS_REGION=eu-west-1", "EDITOR=vim", "HOME=/home/dev", "env | sort", "[REDACTED:"} {
		if !strings.Contains(text, keep) {
			t.Errorf("harmless text lost: %q", keep)
		}
	}
	for _, marker := range []string{"[REDACTED:github-pat]", "[REDACTED:contextfold-url-password]", "[REDACTED:private-key]", "[REDACTED:jwt]"} {
		if !strings.Contains(text, marker) {
			t.Errorf("marker %s missing", marker)
		}
	}
}

func scrubStrings(s *Scrubber, v any) any {
	switch x := v.(type) {
	case string:
		return s.Scrub(x).Text
	case []any:
		for i := range x {
			x[i] = scrubStrings(s, x[i])
		}
	case map[string]any:
		for k := range x {
			x[k] = scrubStrings(s, x[k])
		}
	}
	return v
}

func walkStrings(v any, fn func(string)) {
	switch x := v.(type) {
	case string:
		fn(x)
	case []any:
		for _, e := range x {
			walkStrings(e, fn)
		}
	case map[string]any:
		for _, e := range x {
			walkStrings(e, fn)
		}
	}
}
