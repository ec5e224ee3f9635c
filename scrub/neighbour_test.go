package scrub_test

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/contextfold/contextfold/scrub"
	"github.com/contextfold/contextfold/scrub/scrubtest"
)

// namedTypes are the token types a security test found written in
// plaintext when punctuation followed them (and GitHub's, which held): each
// must have a generated sample.
var namedTypes = []string{"stripe-access-token", "npm-access-token", "gcp-api-key", "huggingface-access-token",
	"sendgrid-api-token", "pulumi-api-token", "digitalocean-pat", "databricks-api-token", "rubygems-api-token",
	"grafana-cloud-api-token", "grafana-service-account-token", "github-pat",
	// and those whose \b refused a token joined by '_' ("x_<token>_y").
	"1password-secret-key", "artifactory-api-key", "artifactory-reference-token", "aws-access-token",
	"clickhouse-cloud-api-secret-key", "easypost-api-token", "easypost-test-api-token", "sentry-org-token",
	"sourcegraph-access-token"}

// knownLimits are the crossings gitleaks itself declines: its generic rules
// read a value running on into ".json" as a file name (the rule's stopword
// "json"). A real NAME_KEY=value….json is still redacted by our env rule.
var knownLimits = map[string]bool{
	`generic-api-key after ".json"`:       true,
	`generic-api-key after ".json", JSON`: true,
	`curl-auth-header after ".json"`:      true,
	// "_curl -u user:pass" and "x_curl …" name another program than curl:
	// the rule's \b stands before its keyword, not next to the secret.
	`curl-auth-user before "_"`:  true,
	`curl-auth-user before "x_"`: true,
}

func newScrubber(t testing.TB) *scrub.Scrubber {
	t.Helper()
	sc, err := scrub.New()
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// TestEveryRuleEveryNeighbour crosses a generated token of every rule with
// every character that may follow or precede it, as plain text and
// JSON-escaped: the secret never survives Scrub.
func TestEveryRuleEveryNeighbour(t *testing.T) {
	t.Parallel() // with the other cross of every neighbour: both only read a Scrubber of their own
	sc := newScrubber(t)
	samples, missing := scrubtest.Samples(sc)
	t.Logf("%d rules sampled, %d without a generated sample: %v", len(samples), len(missing), missing)
	if len(samples) < 150 {
		t.Fatalf("only %d rules have a generated sample", len(samples))
	}
	have := map[string]bool{}
	for _, s := range samples {
		have[s.RuleID] = true
	}
	for _, id := range namedTypes {
		if !have[id] {
			t.Errorf("no sample for %s", id)
		}
	}
	every := 1 // cross every sample with every neighbour
	if scrub.RaceEnabled || testing.Short() {
		// Every fifth rule and the named types; under the race detector
		// (which adds nothing to these single-goroutine scrubs and slows
		// each ~10 times) each meets every third neighbour, rotating with
		// the sample, so that every neighbour is still crossed.
		// scripts/test.sh runs the full cross without -race.
		if scrub.RaceEnabled {
			every = 3
		}
		var some []scrubtest.Sample // every fifth rule, and the named types
		named := map[string]bool{}
		for _, id := range namedTypes {
			named[id] = true
		}
		for i, s := range samples {
			if i%5 == 0 || named[s.RuleID] {
				some = append(some, s)
			}
		}
		samples = some
	}
	leaks := map[string][]string{}
	check := func(s scrubtest.Sample, where, text string) {
		if knownLimits[s.RuleID+" "+where] {
			return
		}
		if out := sc.Scrub(text).Text; strings.Contains(out, s.Secret) {
			leaks[s.RuleID] = append(leaks[s.RuleID], where)
		}
	}
	for i, s := range samples {
		var all strings.Builder // every crossing in one text
		add := func(where, text string) {
			check(s, where, text)
			if !knownLimits[s.RuleID+" "+where] {
				all.WriteString(text + "\n")
			}
		}
		for j, a := range scrubtest.After {
			if (i+j)%every != 0 {
				continue
			}
			add(fmt.Sprintf("after %q", a), "see "+s.Line(" ", a)+" end")
			add(fmt.Sprintf("after %q, JSON", a), `{"out":`+s.JSONLine(" ", a)+`}`)
		}
		for j, b := range scrubtest.Before {
			if (i+j)%every != 0 {
				continue
			}
			add(fmt.Sprintf("before %q", b), "see"+s.Line(b, " ")+"end")
			add(fmt.Sprintf("before %q, JSON", b), `{"out":`+s.JSONLine(b, "\n")+`}`)
		}
		// Together: nothing survives, and the result is settled (a scan
		// of it finds nothing more: scrub-check agrees with the fold).
		r := sc.Scrub(all.String())
		if strings.Contains(r.Text, s.Secret) {
			leaks[s.RuleID] = append(leaks[s.RuleID], "all crossings in one text")
		}
		if fs := sc.Find(r.Text); len(fs) > 0 {
			t.Errorf("%s: the scrubbed text still has %d finding(s), first %s %q", s.RuleID, len(fs), fs[0].RuleID, r.Text[fs[0].Start:fs[0].End])
		}
	}
	ids := make([]string, 0, len(leaks))
	for id := range leaks {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		w := leaks[id]
		if len(w) > 6 {
			w = append(w[:6:6], fmt.Sprintf("… %d more", len(leaks[id])-6))
		}
		t.Errorf("%s survives: %s", id, strings.Join(w, "; "))
	}
}

// TestMarkerIsNotACredential: a redaction marker in URL user-info is not
// read as user "[REDACTED" with password "github-pat]" (scrub-check on a
// scrubbed store must come out clean), while a real password next to a
// marker is still found.
func TestMarkerIsNotACredential(t *testing.T) {
	sc := newScrubber(t)
	for _, in := range []string{
		"git push https://[REDACTED:github-pat]@github.com/acme/widget.git",
		"https://ci:[REDACTED:contextfold-url-password]@git.example.com/x",
		`{"url":"https://[REDACTED:gitlab-pat]@gitlab.com/a/b"}`,
	} {
		if fs := sc.Find(in); len(fs) != 0 {
			t.Errorf("Find(%q) = %+v, want none", in, fs)
		}
	}
	pw := "Zq8" + "rT2vLm9xWp4"
	in := "[REDACTED:github-pat] then postgres://app:" + pw + "@db/x"
	if out := sc.Scrub(in).Text; strings.Contains(out, pw) {
		t.Errorf("password next to a marker survived: %q", out)
	}
}

// TestScrubSetSharesSecrets: a value a rule recognises only in its context
// (here "api_key = value" in the payload) is redacted in the other fields
// of the same turn too, where it stands without that context; alone,
// those fields keep it.
func TestScrubSetSharesSecrets(t *testing.T) {
	sc := newScrubber(t)
	v := "Qm7x" + "Lp2rVz9KwT4nHs8d"
	payload := "loaded config\napi_key = " + v + "\nstarting worker\n"
	fields := []string{payload, "deploy " + v + ".json", "sess-" + v, "keys/" + v}
	for _, f := range fields[1:] {
		if sc.Scrub(f).Text != f {
			t.Fatalf("the field %q alone is redacted: the test proves nothing", f)
		}
	}
	rs := sc.ScrubSet(fields)
	for i, r := range rs {
		if strings.Contains(r.Text, v) {
			t.Errorf("field %d keeps the secret: %q", i, r.Text)
		}
	}
	if rs[1].Text != "deploy [REDACTED:generic-api-key].json" {
		t.Errorf("field 1 = %q", rs[1].Text)
	}
	if got := sc.ScrubSet([]string{"a", ""}); got[0].Text != "a" || got[1].Text != "" || got[0].Redactions+got[1].Redactions != 0 {
		t.Errorf("ScrubSet of clean texts = %+v", got)
	}
}

// TestScrubSetSplitValue: a list split on commas (fold --commands
// "DB_PASSWORD=,VALUE", an option and its value as two items) puts a
// secret's name in one text and its value in the next; ScrubSet reads the
// two joined and redacts the value. Neighbours that name no secret, or
// end in no operator, stay as they are.
func TestScrubSetSplitValue(t *testing.T) {
	sc := newScrubber(t)
	pw := "Zr8!" + "kQ2#vLm9$w"
	tok := "Wq7v" + "Tz3kLp9sR4xN"
	for _, c := range [][]string{
		{"export DB_PASSWORD=", pw},
		{"DB_PASSWORD=", " " + tok, "make deploy"},
		{"mysql -h db --password", pw, "shop"},
		{"psql", "password:", tok},
		{"ls -la", "--api-token", tok},
	} {
		for _, f := range c {
			if sc.Scrub(f).Text != f {
				t.Fatalf("%q alone is redacted: the test proves nothing", f)
			}
		}
		rs := sc.ScrubSet(c)
		for i, r := range rs {
			if strings.Contains(r.Text, pw) || strings.Contains(r.Text, tok) {
				t.Errorf("%q: item %d keeps the secret: %q", c, i, r.Text)
			}
			if !strings.Contains(c[i], pw) && !strings.Contains(c[i], tok) && r.Text != c[i] {
				t.Errorf("%q: item %d changed: %q", c, i, r.Text)
			}
		}
	}
	for _, c := range [][]string{
		{"BUILD_MODE=", "release-candidate-42"},
		{"go test -run", "TestScrubSetSplitValue"},
		{"--output", "report-2026-12-06.json"},
		{"TOKEN_COUNT=", "12345678"},
		{"make build", "DB_PASSWORD"},
	} {
		rs := sc.ScrubSet(c)
		for i, r := range rs {
			if r.Text != c[i] {
				t.Errorf("%q: item %d changed: %q", c, i, r.Text)
			}
		}
	}
}

// TestNetrcPasswordKeepsJSON: a .netrc password inside a JSON string is
// redacted up to the JSON escape or the closing quote after it; the JSON
// text around it stays (it was swallowed up to the next blank).
func TestNetrcPasswordKeepsJSON(t *testing.T) {
	sc := newScrubber(t)
	pw := "Zr8!" + "kQ2#vLm9$w"
	for in, want := range map[string]string{
		`{"stdout":"machine h\n  login u\n  password ` + pw + `\n"}`: `{"stdout":"machine h\n  login u\n  password [REDACTED:contextfold-netrc-password]\n"}`,
		`{"cmd":"machine h login u password ` + pw + `"}`:            `{"cmd":"machine h login u password [REDACTED:contextfold-netrc-password]"}`,
		"machine h login u password " + pw + `"x1`:                   "machine h login u password [REDACTED:contextfold-netrc-password]",
	} {
		if got := sc.Scrub(in).Text; got != want {
			t.Errorf("Scrub(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestNetrcOneCharacterPassword: a .netrc password of one letter or digit
// is redacted (it was read as a placeholder, a run of one character);
// "password *" and a one-character word outside a .netrc entry stay.
func TestNetrcOneCharacterPassword(t *testing.T) {
	sc := newScrubber(t)
	for in, want := range map[string]string{
		"machine h login u password x":                   "machine h login u password [REDACTED:contextfold-netrc-password]",
		"machine db.internal\n  login u\n  password 7\n": "machine db.internal\n  login u\n  password [REDACTED:contextfold-netrc-password]\n",
		`{"stdout":"machine h login u password Q"}`:      `{"stdout":"machine h login u password [REDACTED:contextfold-netrc-password]"}`,
		"machine h login u password *":                   "machine h login u password *",
		"the password x is too short":                    "the password x is too short",
	} {
		if got := sc.Scrub(in).Text; got != want {
			t.Errorf("Scrub(%q) = %q, want %q", in, got, want)
		}
	}
}
