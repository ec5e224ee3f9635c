package ranked

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/contextfold/contextfold/internal/testgen"
)

// longIndex is a snapshot index of n docs with long lists of every varint
// width: "alpha" in 6 docs of 7 (one-byte deltas), "beta" held up to 300
// times (two-byte frequencies), "gamma" in the first 1,200 docs and then
// every 150th (two-byte deltas), "delta" in the last doc and the first
// 1,100 (a gap of n-1,100).
func longIndex(t *testing.T, n int) (*Index, *Index) {
	t.Helper()
	mem := NewIndex()
	for d := range n {
		var b strings.Builder
		fmt.Fprintf(&b, "word%d ", d%89)
		if d%7 != 0 {
			b.WriteString("alpha ")
		}
		if d%2 == 0 {
			b.WriteString(strings.Repeat("beta ", 1+d%300))
		}
		if d < 1200 || d%150 == 0 {
			b.WriteString("gamma ")
		}
		if d < 1100 || d == n-1 {
			b.WriteString("delta ")
		}
		mem.Add(d, fmt.Sprint(d), 10, "s", b.String())
	}
	return mem, reopen(t, mem)
}

// checkLong compares every snapshot term's list read in place with the
// same list decoded: its count, each doc's frequency (Index.longTF), and
// the frequencies of ascending docs (Index.longRow); it returns the number
// of long lists.
func checkLong(t *testing.T, stage string, ix *Index) int {
	t.Helper()
	ix.mu.Lock()
	defer ix.mu.Unlock()
	long := 0
	for id := int32(0); id < ix.nterms; id++ {
		want := ix.rawPostings(id)
		_, l := ix.list(id)
		if l == nil {
			if len(want)-len(ix.spost[id]) >= longMin && ix.live == len(ix.docs) {
				t.Fatalf("%s: term %d of %d postings not read in place", stage, id, len(want))
			}
			continue
		}
		long++
		if got := ix.count(id); got != len(want) {
			t.Fatalf("%s: term %d: count %d, want %d", stage, id, got, len(want))
		}
		all := make([]int32, len(ix.docs))
		for d := range all {
			all[d] = int32(d)
			tf, ok := ix.longTF(id, l, int32(d))
			if !ok || tf != tfIn(want, int32(d)) {
				t.Fatalf("%s: term %d doc %d: tf %d (ok %v), want %d", stage, id, d, tf, ok, tfIn(want, int32(d)))
			}
		}
		// The rows read the frequency table (when denseMax allows it;
		// "beta"'s frequencies over denseOver from the list).
		for _, step := range []int{1, 3, 17, 400} {
			var look []int32
			for d := step / 2; d < len(all); d += step {
				look = append(look, int32(d))
			}
			row := make([]uint16, len(look))
			if !ix.longRow(id, l, look, row) {
				t.Fatalf("%s: term %d: corrupt", stage, id)
			}
			for j, d := range look {
				if row[j] != tfIn(want, d) {
					t.Fatalf("%s: term %d, every %d (table %v): doc %d tf %d, want %d", stage, id, step, l.dense != nil, d, row[j], tfIn(want, d))
				}
			}
		}
		if (l.dense != nil) != (denseMax > 0) {
			t.Fatalf("%s: term %d: frequency table %v, budget %d", stage, id, l.dense != nil, denseMax)
		}
	}
	return long
}

// A long list read in place holds the same postings as decoded, whatever
// the widths of its varints, with the delta's postings after it; an index
// with a dead doc decodes its lists again (they are filtered).
func TestLongListsReadInPlace(t *testing.T) {
	defer func(v int) { denseMax = v }(denseMax)
	for _, budget := range []int{denseMax, 0} {
		denseMax = budget
		t.Run(fmt.Sprintf("tables%d", budget), testLongListsReadInPlace)
	}
}

func testLongListsReadInPlace(t *testing.T) {
	const n = 3000
	_, ix := longIndex(t, n)
	long := checkLong(t, "snapshot", ix)
	if long < 4 {
		t.Fatalf("%d long lists, want alpha, beta, gamma, delta and their prefixes", long)
	}
	for d := n; d < n+40; d++ {
		ix.Add(d, fmt.Sprint(d), 10, "s", "alpha beta beta gamma news")
	}
	if got := checkLong(t, "snapshot+delta", ix); got != long {
		t.Fatalf("%d long lists after the delta, want %d", got, long)
	}
	ix.Add(5, "replaced", 10, "s", "alpha")
	ix.mu.Lock()
	for id := int32(0); id < ix.nterms; id++ {
		if _, l := ix.list(id); l != nil {
			t.Fatal("a list read in place with a dead doc in the index")
		}
	}
	ix.mu.Unlock()
}

// A long list that decodes to no valid postings (a zero frequency, a doc
// past the snapshot's, bytes left over) marks the snapshot bad at its
// first look-up, as snapFile.postings does.
func TestLongListCorruptIsAMiss(t *testing.T) {
	good := make([]byte, 0, 2*longMin)
	for range longMin {
		good = append(good, 0, 1)
	}
	midZero := slices.Clone(good)
	midZero[2*37+1] = 0    // a zero frequency inside a block of one-byte postings
	s := &snapFile{n: 100} // docs 0..1023 of a snapshot of 100 docs
	if l := (&longList{b: good, n: longMin}); l.marks(s, make([]uint8, 100)) || !s.bad {
		t.Errorf("docs past the snapshot's in a block of one-byte postings: marked (bad %v)", s.bad)
	}
	for _, c := range []struct {
		name string
		b    []byte
	}{
		{"zero tf in a block", midZero},
		{"zero tf", append(slices.Clone(good[:len(good)-1]), 0)},
		{"past the docs", append(slices.Clone(good[:len(good)-2]), 0x80, 0x40, 1)},
		{"bytes left", append(slices.Clone(good), 0x80)},
		{"cut varint", append(slices.Clone(good[:len(good)-2]), 0, 0x80)},
	} {
		s := &snapFile{n: longMin + 10}
		l := &longList{b: c.b, n: varintEnds(c.b) / 2}
		if l.marks(s, nil) || !s.bad {
			t.Errorf("%s: marked (bad %v)", c.name, s.bad)
		}
	}
	s = &snapFile{n: longMin}
	l := &longList{b: good, n: longMin}
	tab := make([]uint8, longMin)
	if !l.marks(s, tab) || s.bad || len(l.skip) != longMin/skipEvery || slices.ContainsFunc(tab, func(f uint8) bool { return f != 1 }) {
		t.Errorf("a good list: bad %v, %d marks", s.bad, len(l.skip))
	}
}

// Scans, recalls, weights and needle candidates are the same with long
// lists read in place and decoded: on a snapshot, with new nodes on top,
// and with replaced ones.
func TestInPlaceSameAnswers(t *testing.T) {
	g := testgen.New(31)
	mem, ix := longIndex(t, 3000)
	addTurns(mem, g.SmallTurns(3000, 1500), "a")
	ix = reopen(t, mem)
	p := DefaultParams()
	var queries []string
	for i := range 150 {
		queries = append(queries, g.Prompt(i), g.Query(i))
	}
	queries = append(queries, "alpha beta", "gamma delta word7", "`word3 alpha`", "alpha beta gamma delta")
	answers := func() string {
		var b strings.Builder
		for _, q := range queries {
			fmt.Fprintf(&b, "%+v\n%+v\n%v\n", ix.Scan(q, p), ix.Recall(q, p), ix.Weights(q, p))
			for _, nd := range Needles(q) {
				fmt.Fprintf(&b, "%+v\n", ix.NeedleCandidates(nd, -1, 256))
			}
		}
		return b.String()
	}
	compare := func(stage string) {
		t.Helper()
		defer func(v bool) { inPlace = v }(inPlace)
		got := answers()
		inPlace = false
		ix.mu.Lock()
		clear(ix.long)
		ix.denseBytes = 0
		ix.mu.Unlock()
		want := answers()
		if got != want {
			t.Fatalf("%s: answers differ with long lists read in place", stage)
		}
	}
	if checkLong(t, "opened", ix) == 0 {
		t.Fatal("no long list")
	}
	compare("snapshot")
	addTurns(ix, g.SmallTurns(4500, 200), "a")
	compare("snapshot+delta")
	replaced := g.SmallTurns(9000, 20)
	for i := range replaced {
		replaced[i].StepID = 3000 + i*11
	}
	addTurns(ix, replaced, "b")
	compare("with replaced nodes")
	if !reflect.DeepEqual(ix.Scan(queries[0], p), ix.Scan(queries[0], p)) {
		t.Fatal("a scan is not deterministic")
	}
}

// fastBlock and oneByteTable agree with a posting-by-posting reading of
// the block on 200,000 generated blocks: one-byte deltas and frequencies,
// some with a zero frequency or a byte of a wider varint.
func TestFastBlockAsPostings(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	b := make([]byte, blockBytes)
	for n := 0; n < 200_000; n++ {
		for i := range b {
			b[i] = byte(r.IntN(128))
		}
		switch r.IntN(4) {
		case 0:
			b[2*r.IntN(skipEvery)+1] = 0 // a zero frequency
		case 1:
			b[r.IntN(blockBytes)] |= 0x80 // a byte of a wider varint
		}
		for i := 1; i < blockBytes; i += 2 {
			if b[i] == 0 && r.IntN(2) == 0 {
				b[i] = 1 + byte(r.IntN(127))
			}
		}
		last := r.IntN(1000) - 1
		// Posting by posting: the docs, frequencies and whether each is one
		// byte of delta and one of frequency, frequency not 0.
		want, one := last, true
		docs := make([]int, skipEvery)
		for k := range skipEvery {
			delta, tf := b[2*k], b[2*k+1]
			one = one && delta < 0x80 && tf < 0x80 && tf != 0
			want += 1 + int(delta&0x7f)
			docs[k] = want
		}
		d, ok := fastBlock(b, last)
		if ok != one || (ok && d != want) {
			t.Fatalf("block %x after %d: fastBlock %d %v, want %d %v", b, last, d, ok, want, one)
		}
		if !ok {
			continue
		}
		tab := make([]uint8, want+1)
		oneByteTable(tab, b, int32(last))
		for k, doc := range docs {
			if tab[doc] != b[2*k+1] {
				t.Fatalf("block %x after %d: table at %d is %d, want %d", b, last, doc, tab[doc], b[2*k+1])
			}
		}
	}
}
