package scrub

import (
	"math/rand/v2"
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/zricethezav/gitleaks/v8/report"
)

// prefilterTexts are texts for the prefilter's tests: the secret corpora
// instantiated, the look-alikes, the benchmark's megabyte cut in pieces,
// and generated lines that put the generic rule's keywords next to its
// operators and values in many ways (with the non-ASCII letters that Go
// folds to ASCII ones among them).
func prefilterTexts(t testing.TB) []string {
	var texts []string
	g := newFakeGen(7)
	for _, c := range loadCorpus(t, "testdata/secrets.txt") {
		g.memo = map[string]string{}
		text, _ := instantiate(c.text, g)
		texts = append(texts, text)
	}
	nrng := rand.New(rand.NewPCG(7, 7))
	png := randomPNG(nrng)
	for _, c := range loadCorpus(t, "testdata/nonsecrets.txt") {
		texts = append(texts, placeholderRE.ReplaceAllStringFunc(c.text, func(m string) string {
			return nonSecretValue(m[2:len(m)-2], nrng, png)
		}))
	}
	data, err := os.ReadFile("testdata/22-secrets-in-tool-output.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	texts = append(texts, strings.Split(string(data), "\n")...)
	texts = append(texts, extraRuleLookAlikes...)
	bench := benchText()
	for i := 0; i+4096 <= len(bench) && i < 256<<10; i += 4096 {
		texts = append(texts, bench[i:i+4096])
	}
	rng := rand.New(rand.NewPCG(3, 5))
	names := []string{"api", "API", "Api", "aPi", "access", "auth", "AUTH_", "credential", "creds", "key", "KEY", "passwd", "password",
		"secret", "token", "ſecret", "\u212aey", "to\u212aen", "my.api-", "x_", "service_", "db"}
	ops := []string{"=", ":", " = ", ": ", "=>", ":=", "::=", "||", "?=", ",", ">", " ", "\n= ", "\"=\"", "'='", "\t:\t"}
	vals := []string{"abcdefghij1234", "0123456789", "Zx9yW8vU7tS6rQ5p", "a+b/c+d/e+f/g+h=", "short", "`q1w2e3r4t5y6`",
		"\"k3Y9mP2xL8nQ4vR7\"", "'k3Y9mP2xL8nQ4vR7'", "${TOKEN}", "true", "eyJhbGciOiJIUzI1NiJ9", "sk-xxxxxxxxxxxxxxxxxxxx"}
	ends := []string{"", "\n", " ", ";", ")", ".json", "\"", "é", "\\n"}
	for range 3000 {
		var b strings.Builder
		for n := 1 + rng.IntN(4); n > 0; n-- {
			if rng.IntN(3) == 0 {
				b.WriteString("line 12: compiled pkg module ok ")
			}
			b.WriteString(names[rng.IntN(len(names))])
			if rng.IntN(2) == 0 {
				b.WriteString(names[rng.IntN(len(names))])
			}
			b.WriteString(ops[rng.IntN(len(ops))])
			b.WriteString(vals[rng.IntN(len(vals))])
			b.WriteString(ends[rng.IntN(len(ends))])
		}
		texts = append(texts, b.String())
	}
	return texts
}

// TestPrefilterKeepsEveryMatchingRule: the detector the prefilter picks
// for a text runs every prefiltered rule whose expression matches the text
// (a rule it leaves out would have found something), and the prefilter
// covers the generic API key rule (else it would silently save nothing).
// Under the race detector (which adds nothing to this single-goroutine
// check and makes each regular expression match ~10 times slower) it checks
// every eighth text; scripts/test.sh runs it in full without -race.
func TestPrefilterKeepsEveryMatchingRule(t *testing.T) {
	s := newTestScrubber(t)
	ids := PrefilteredRules()
	if i := sort.SearchStrings(ids, "generic-api-key"); i == len(ids) || ids[i] != "generic-api-key" {
		t.Fatalf("generic-api-key is not prefiltered (rules: %v)", ids)
	}
	texts, step := prefilterTexts(t), 1
	if raceEnabled {
		step = 8
	}
	dropped := 0
	for i := 0; i < len(texts); i += step {
		text := texts[i]
		keeps := PrefilterKeepsFor(text)
		for _, id := range ids {
			// Only a rule the prefilter leaves out can fail the check:
			// its expression is run only for those.
			if keeps(id) {
				continue
			}
			dropped++
			if RuleMatches(s, text, id) {
				t.Fatalf("rule %s matches %q, and the prefilter left it out", id, text)
			}
		}
	}
	if dropped == 0 {
		t.Error("the prefilter never left a rule out")
	}
	if PrefilterKeeps("line 1: compiled pkg module ok\nthe api is ready", "generic-api-key") {
		t.Error("generic-api-key kept for a text it cannot match")
	}
}

// TestPrefilterSameFindings: gitleaks' findings and Find's (before the
// allowlist) are the same with the prefilter as without, text for text.
func TestPrefilterSameFindings(t *testing.T) {
	s := newTestScrubber(t)
	key := func(fs []report.Finding) []string {
		var out []string
		for _, f := range fs {
			out = append(out, f.RuleID+"\x00"+f.Match+"\x00"+f.Secret+"\x00"+f.Line+"\x00"+
				strings.Repeat("x", f.StartLine)+"\x00"+strings.Repeat("x", f.StartColumn))
		}
		sort.Strings(out)
		return out
	}
	texts, step := prefilterTexts(t), 1
	if testing.Short() || raceEnabled {
		// Every eighth text, of every kind (the corpora, the benchmark's
		// pieces, the generated lines); scripts/test.sh runs them all
		// without -race.
		step = 8
	}
	for i := 0; i < len(texts); i += step {
		text := texts[i]
		with := key(detPre.detector(text).DetectString(text))
		without := key(s.det.DetectString(text))
		if !reflect.DeepEqual(with, without) {
			t.Fatalf("text %q: gitleaks found\n%q\nwith the prefilter, and\n%q\nwithout", text, with, without)
		}
		f1 := s.findAllDepth(text, base64Depth, nil) // not memoized (findAll)
		prefilterOff = true
		f2 := s.findAllDepth(text, base64Depth, nil)
		prefilterOff = false
		if !reflect.DeepEqual(f1, f2) {
			t.Fatalf("text %q: Find gives %v with the prefilter, %v without", text, f1, f2)
		}
	}
}

// TestShortFindMemo: Find and ScrubSet give the same results for a short
// text whether findAll computed them or took them from the memo, and a
// caller appending to a memoized result (ScrubSet adds the findings of
// values its other texts revealed) does not change what the memo holds.
func TestShortFindMemo(t *testing.T) {
	s := newTestScrubber(t)
	g := newFakeGen(9)
	secret := "GITHUB_TOKEN=" + g.value("GHP")
	long := "tool output\n" + strings.Repeat("x", maxShortFind) + "\nthe value is " + secret[len("GITHUB_TOKEN="):] + "\n"
	for _, text := range []string{secret, "fold-event-3", "tool bash $ go test ./pkg3"} {
		want := s.findAllDepth(text, base64Depth, nil)
		for range 3 {
			if got := s.Find(text); !reflect.DeepEqual(got, want) && !(len(got) == 0 && len(want) == 0) {
				t.Fatalf("Find(%q) = %v, want %v", text, got, want)
			}
			rs := s.ScrubSet([]string{text, long, text})
			if rs[0].Text != rs[2].Text || rs[0].Redactions != rs[2].Redactions {
				t.Fatalf("ScrubSet scrubbed %q twice differently: %+v, %+v", text, rs[0], rs[2])
			}
		}
		if got, _ := shortFinds.get(text); !reflect.DeepEqual(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Fatalf("the memo holds %v for %q, want %v", got, text, want)
		}
	}
	if r := s.Scrub(secret); r.Redactions != 1 {
		t.Fatalf("Scrub(%q) = %+v, want one redaction", secret, r)
	}
}
