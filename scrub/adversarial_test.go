package scrub

import (
	"os"
	"reflect"
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
	// Environment dumps of empty and referenced values.
	cs = append(cs,
		adversarialCase{rule: "env-dump", anchor: "API_KEY_n=", shape: "empty", unit: "API_KEY_1=\nTOKEN_2=${TOKEN}\n"},
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
// a fold. SCRUB_ADV_KIB sets another size (KiB), SCRUB_ADV_RULE keeps the
// cases whose rule name holds it.
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
	only := os.Getenv("SCRUB_ADV_RULE")
	names := map[string]int{}
	for _, c := range adversarialCases() {
		if only != "" && !strings.Contains(c.rule, only) {
			continue
		}
		name := c.rule + "/" + benchName(c.anchor) + "/" + c.shape
		names[name]++
		if n := names[name]; n > 1 {
			name += "#" + strconv.Itoa(n)
		}
		text := adversarialText(c.unit, size)
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				s.Scrub(text)
			}
		})
	}
}

// benchName makes an anchor usable in a benchmark's name: blanks, line
// ends and slashes spelled out.
func benchName(a string) string {
	return strings.NewReplacer(" ", "␠", "\t", "␉", "\n", "␤", "\r", "␍", "/", "∕").Replace(a)
}

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
