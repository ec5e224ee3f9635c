package scrub

import (
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// adversarialCase is one text of BenchmarkScrubAdversarial: a rule's
// anchor (or a gitleaks keyword) repeated in one of adversarialShapes.
type adversarialCase struct {
	rule, anchor, shape, unit string
}

// adversarialShapes build a repeated unit from an anchor: the anchor
// alone (no separator at all), after a blank (one line of 1 MiB, no line
// feed), on a line of its own, and after a secret's name with an empty
// value (api_key=\n, the shape of an environment dump).
var adversarialShapes = []struct {
	name string
	unit func(a string) string
}{
	{"bare", func(a string) string { return a }},
	{"line", func(a string) string { return a + " " }},
	{"nl", func(a string) string { return a + "\n" }},
	{"empty", func(a string) string { return "api_key" + a + "\n" }},
}

// adversarialCases returns the cases of every anchor of our rules (named
// by rule id, a rule's later forms numbered) and of every gitleaks
// keyword (named "gitleaks"), sorted and without duplicate texts.
func adversarialCases() []adversarialCase {
	var cs []adversarialCase
	seen := map[string]bool{}
	add := func(rule, a string) {
		for _, sh := range adversarialShapes {
			u := sh.unit(a)
			if seen[u] {
				continue
			}
			seen[u] = true
			cs = append(cs, adversarialCase{rule: rule, anchor: a, shape: sh.name, unit: u})
		}
	}
	forms := map[string]int{}
	for _, r := range extraRules {
		forms[r.id]++
		name := strings.TrimPrefix(r.id, "contextfold-")
		if n := forms[r.id]; n > 1 {
			name += "." + strconv.Itoa(n)
		}
		for _, a := range r.anchors {
			add(name, a)
		}
	}
	d, err := sharedDetector()
	if err != nil {
		panic(err)
	}
	kws := make([]string, 0, len(d.Config.Keywords))
	for k := range d.Config.Keywords {
		kws = append(kws, k)
	}
	sort.Strings(kws)
	for _, k := range kws {
		add("gitleaks", k)
	}
	// Shapes measured before (minutes per MiB), a private key's header
	// with no END line, environment dumps of empty and referenced values.
	cs = append(cs,
		adversarialCase{rule: "measured", anchor: "api_key=", shape: "bare", unit: "api_key="},
		adversarialCase{rule: "measured", anchor: "auth=(", shape: "bare", unit: "auth=("},
		adversarialCase{rule: "measured", anchor: "-p ", shape: "bare", unit: "-p "},
		adversarialCase{rule: "measured", anchor: "-u x -p ", shape: "bare", unit: "-u x -p "},
		adversarialCase{rule: "measured", anchor: "PEM header", shape: "nl", unit: "-----BEGIN RSA PRIVATE KEY-----\n"},
		adversarialCase{rule: "measured", anchor: "eyJ-", shape: "bare", unit: "eyJ-"},
		adversarialCase{rule: "measured", anchor: "ya29.", shape: "bare", unit: "ya29."},
		adversarialCase{rule: "measured", anchor: "password: ", shape: "line", unit: "password: "},
		adversarialCase{rule: "measured", anchor: "Authorization: Bearer ", shape: "line", unit: "Authorization: Bearer "},
		adversarialCase{rule: "env-dump", anchor: "API_KEY_n=", shape: "empty", unit: "API_KEY_1=\nTOKEN_2=${TOKEN}\n"},
		// One value found on every line: gitleaks compares each finding of a
		// fragment with every other (windowMaxMerged).
		adversarialCase{rule: "measured", anchor: "TOKEN=value", shape: "nl", unit: "TOKEN=abcd1234efgh\n"},
		adversarialCase{rule: "query-log", anchor: "?api_key=", shape: "log", unit: "GET /v1/items?api_key=&page=2 200\n"})
	return cs
}

// adversarialText repeats unit up to n bytes.
func adversarialText(unit string, n int) string {
	return strings.Repeat(unit, max(1, n/len(unit)))
}

// BenchmarkScrubAdversarial scrubs 1 MiB of one anchor of one of our rules
// (or a gitleaks keyword) repeated in each of adversarialShapes: text a
// proxy request or an ingested transcript may carry, which must not stall
// a fold. SCRUB_ADV_KIB sets another size (KiB), SCRUB_ADV_ONLY (a
// regular expression) keeps the cases whose name rule/anchor/shape it
// matches (the benchmark's own filter splits names at '/', which anchors
// hold). Besides ns/op it reports cpu-s/op, the process's CPU time, which
// the load of a shared machine does not inflate.
//
//	go test ./scrub -run '^$' -bench ScrubAdversarial -benchtime 1x
func BenchmarkScrubAdversarial(b *testing.B) {
	s, err := New()
	if err != nil {
		b.Fatal(err)
	}
	size := 1 << 20
	if v, err := strconv.Atoi(os.Getenv("SCRUB_ADV_KIB")); err == nil && v > 0 {
		size = v << 10
	}
	only, err := regexp.Compile(os.Getenv("SCRUB_ADV_ONLY"))
	if err != nil {
		b.Fatalf("SCRUB_ADV_ONLY: %v", err)
	}
	names := map[string]int{}
	for _, c := range adversarialCases() {
		name := c.rule + "/" + benchName(c.anchor) + "/" + c.shape
		names[name]++
		if n := names[name]; n > 1 {
			name += "#" + strconv.Itoa(n)
		}
		if !only.MatchString(name) {
			continue
		}
		text := adversarialText(c.unit, size)
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			cpu := processCPU()
			for b.Loop() {
				s.Scrub(text)
			}
			// The process's CPU time: on a shared machine the wall time
			// measures the others' load too.
			b.ReportMetric((processCPU()-cpu).Seconds()/float64(b.N), "cpu-s/op")
		})
	}
}

// benchName makes an anchor usable in a benchmark's name: blanks, line
// ends and slashes spelled out.
func benchName(a string) string {
	return strings.NewReplacer(" ", "␠", "\t", "␉", "\n", "␤", "\r", "␍", "/", "∕").Replace(a)
}
