package scrub

import (
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// extraFindingsByIndex is extraFindings as it looked for anchors before
// anchorSet: one strings.Index pass per anchor. The reference of
// TestExtraFindingsAnchorScanSame.
func extraFindingsByIndex(text string) []Finding {
	var out []Finding
	for _, r := range extraRules {
		last := -1
		for _, a := range r.anchors {
			for off := 0; off < len(text); {
				k := strings.Index(text[off:], a)
				if k < 0 {
					break
				}
				p := off + k
				off = p + len(a)
				b := r.begin(text, p)
				if b < 0 || b == last {
					continue
				}
				last = b
				end := len(text)
				if r.maxLen > 0 && b+r.maxLen < end {
					end = b + r.maxLen
				}
				cand := text[b:end]
				m := r.re.FindStringSubmatchIndex(cand)
				if m == nil {
					continue
				}
				if r.multi != nil {
					for _, sp := range r.multi(cand, m) {
						out = append(out, Finding{RuleID: r.id, Start: b + sp[0], End: b + sp[1]})
					}
					continue
				}
				s, e, ok := m[0], m[1], true
				if r.secret != nil {
					s, e, ok = r.secret(cand, m)
				}
				if ok && e > s {
					out = append(out, Finding{RuleID: r.id, Start: b + s, End: b + e})
				}
			}
		}
	}
	return out
}

// anchorTexts are texts built from the extra rules' anchors themselves,
// back to back and overlapping ("----", "===", "::", an anchor cut at the
// text's end), with secret-like values after them.
func anchorTexts() []string {
	as := extraAnchors()
	rng := rand.New(rand.NewPCG(21, 1))
	fill := []string{"", " ", "\t", "\n", "=", ":", "-", "--", "://u:", "\"", "'", "s3cr3tV4lu3Xy9Q2", "Zx9yW8vU7tS6rQ5pK", "_", "\\n", "é", "<", ">", "@h/x"}
	var out []string
	for _, a := range as.lits {
		out = append(out, a, a+a, a+a+a, "x"+a, a[:len(a)-1])
	}
	for range 4000 {
		var b strings.Builder
		for n := 1 + rng.IntN(8); n > 0; n-- {
			if rng.IntN(2) == 0 {
				b.WriteString(as.lits[rng.IntN(len(as.lits))])
			}
			b.WriteString(fill[rng.IntN(len(fill))])
		}
		out = append(out, b.String())
	}
	return out
}

// TestExtraFindingsAnchorScanSame: the one-pass anchor search finds what
// one strings.Index pass per anchor found, finding for finding, in the
// same order, on the secret corpora, the look-alikes, the benchmark's text
// and texts made of the anchors themselves.
func TestExtraFindingsAnchorScanSame(t *testing.T) {
	texts := append(prefilterTexts(t), anchorTexts()...)
	if !raceEnabled { // keep -race runs short on the 2-core CI machine
		texts = append(texts, benchText()[:1<<20])
	}
	extraSkipCovered = false // the reference tries every occurrence
	defer func() { extraSkipCovered = true }()
	found := 0
	for _, text := range texts {
		want, got := extraFindingsByIndex(text), extraFindings(text)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("text %.200q:\n got %v\nwant %v", text, got, want)
		}
		found += len(want)
	}
	if found < 500 {
		t.Fatalf("only %d findings over %d texts: the comparison tests little", found, len(texts))
	}
}

// TestAnchorSetFindsEveryOccurrence: each anchor's positions are every
// occurrence of it, overlapping ones included, ascending.
func TestAnchorSetFindsEveryOccurrence(t *testing.T) {
	as := extraAnchors()
	var h anchorHits
	for _, text := range anchorTexts() {
		as.find(text, &h)
		for k, a := range as.lits {
			var want []int
			for p := 0; p+len(a) <= len(text); p++ {
				if strings.HasPrefix(text[p:], a) {
					want = append(want, p)
				}
			}
			if got := h.positions(k); !reflect.DeepEqual(got, want) && (len(got) != 0 || len(want) != 0) {
				t.Fatalf("anchor %q in %q: got %v, want %v", a, text, got, want)
			}
		}
	}
}

// FuzzExtraFindingsAnchorScan compares the one-pass anchor search with
// one strings.Index pass per anchor on any text.
func FuzzExtraFindingsAnchorScan(f *testing.F) {
	for _, text := range anchorTexts()[:200] {
		f.Add(text)
	}
	f.Fuzz(func(t *testing.T, text string) {
		extraSkipCovered = false // the reference tries every occurrence
		defer func() { extraSkipCovered = true }()
		if want, got := extraFindingsByIndex(text), extraFindings(text); !reflect.DeepEqual(got, want) {
			t.Fatalf("got %v, want %v", got, want)
		}
	})
}

// BenchmarkExtraFindings runs the extra rules over 4 KiB pieces of the
// benchmark's text (tool output of some 800 tokens, the size of a folded
// turn's).
//
//	go test ./scrub -run '^$' -bench 'BenchmarkExtraFindings' -benchmem
func BenchmarkExtraFindings(b *testing.B) {
	text := benchText()
	b.SetBytes(4096)
	i := 0
	for b.Loop() {
		if i+4096 > len(text) {
			i = 0
		}
		extraFindings(text[i : i+4096])
		i += 4096
	}
}

// BenchmarkExtraFindingsToolLog runs the extra rules over a build log of
// 90 lines ("line 12: compiled pkg7 module ok"), the tool output of the
// proxy's fold-event benchmarks.
//
//	go test ./scrub -run '^$' -bench 'BenchmarkExtraFindingsToolLog' -benchmem
func BenchmarkExtraFindingsToolLog(b *testing.B) {
	var sb strings.Builder
	for i := range 90 {
		sb.WriteString("line " + strconv.Itoa(i) + ": compiled pkg7 module ok\n")
	}
	text := sb.String()
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		extraFindings(text)
	}
}

// TestScrubSetKnownSameAsAddContext: ScrubSetKnown scrubs as ScrubSet and
// learns, from the findings the scrub makes, exactly the values (and their
// rules) that AddContext over texts[from:] learns, on sets of the secret
// corpora, the look-alikes and short texts (whose findAll is memoized).
func TestScrubSetKnownSameAsAddContext(t *testing.T) {
	s := newTestScrubber(t)
	texts := prefilterTexts(t)
	texts = append(texts, "sess-1", "PASSWORD=hunter2hunter2", "app.py", "", "\xff\xfeDB_PASSWORD=s3cr3tV4lu3Xy9Q2")
	learned, step := 0, 10
	if raceEnabled {
		step = 80 // keep -race runs short on the 2-core CI machine
	}
	for i := 0; i < len(texts); i += step {
		set := texts[i:min(i+5, len(texts))]
		from := i % 2
		var want, got Known
		for _, x := range set[from:] {
			want.AddContext(s, x)
		}
		rs := s.ScrubSetKnown(set, &got, from)
		if !reflect.DeepEqual(rs, s.ScrubSet(set)) {
			t.Fatalf("set %d: ScrubSetKnown's results differ from ScrubSet's", i)
		}
		if !reflect.DeepEqual(got.values, want.values) {
			t.Fatalf("set %d: learned %v, AddContext learns %v", i, got.values, want.values)
		}
		learned += want.Len()
	}
	if learned < 2000/step {
		t.Fatalf("only %d values learned: the comparison tests little", learned)
	}
}
