package contextfold

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// cacheStore folds manyTurns(n) into a store in large-store mode (so the
// index has a v2 cache) and returns it with the cache bytes and the stamp
// of its index file.
func cacheStore(t *testing.T, n int) (*Store, []byte, fileStamp) {
	t.Helper()
	withLargeStoreMode(t)
	s := newTestStore(t)
	if _, err := s.FoldBatch(manyTurns(n)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Evict(6); err != nil { // journaled: the cache says not evicted
		t.Fatal(err)
	}
	if err := s.Compact(); err != nil { // now the cache says evicted
		t.Fatal(err)
	}
	data, err := os.ReadFile(cacheFileOf(s))
	if err != nil {
		t.Fatal(err)
	}
	st, _ := stampOf(filepath.Join(s.Dir(), IndexFile))
	return s, data, st
}

// TestCacheRoundTrip: a snapshot decodes to the same records and postings
// as the index parsed from JSON.
func TestCacheRoundTrip(t *testing.T) {
	s, data, st := cacheStore(t, 30)
	f, err := os.Open(filepath.Join(s.Dir(), IndexFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cached, err := decodeCache(data, st, f)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(filepath.Join(s.Dir(), IndexFile))
	parsed, err := parseIndex(raw)
	if err != nil {
		t.Fatal(err)
	}
	if cached.len() != 30 || parsed.len() != 30 || !reflect.DeepEqual(cached.header, parsed.header) {
		t.Fatalf("sizes %d %d, headers %v %v", cached.len(), parsed.len(), cached.header, parsed.header)
	}
	// Records: hot fields without materialising, then the whole entry.
	for p := range int32(30) {
		r, ok := parsed.get(cached.stepAt(p))
		if !ok || r.summary != cached.summaryAt(p) || r.tokenEstimate != cached.tokensAt(p) || r.evicted != cached.evictedAt(p) {
			t.Fatalf("position %d: hot fields differ from %+v", p, r)
		}
		if cached.recs[p] != nil {
			t.Fatalf("position %d materialised by reading its hot fields", p)
		}
		if got, want := cached.entry(cached.rec(p)), parsed.entry(r); !reflect.DeepEqual(got.Doc, want.Doc) {
			t.Fatalf("step %d: %v vs %v", r.step, got.Doc, want.Doc)
		}
	}
	if !cached.evictedAt(mustFind(t, cached, 6)) {
		t.Error("eviction lost")
	}
	// Postings, by step, for every term of the parsed index.
	steps := func(ix *index, ps []int32) []int {
		out := make([]int, len(ps))
		for i, p := range ps {
			out[i] = ix.stepAt(p)
		}
		return out
	}
	for _, summary := range []bool{false, true} {
		m := parsed.post
		if summary {
			m = parsed.spost
		}
		for term := range m.one {
			a := steps(parsed, parsed.appendPostings(nil, term, summary))
			b := steps(cached, cached.appendPostings(nil, term, summary))
			if !reflect.DeepEqual(sortedInts(a), sortedInts(b)) {
				t.Fatalf("postings of %q (summary %v): %v vs %v", term, summary, a, b)
			}
		}
	}
	if got := cached.appendPostings(nil, "no-such-term", false); len(got) != 0 || cached.base.failed() {
		t.Errorf("unknown term: %v", got)
	}
	if !cached.base.verifyAll() {
		t.Error("the snapshot does not verify")
	}
	// Re-encoding from the snapshot gives the same bytes, index and cache.
	enc, spans, err := cached.encode()
	if err != nil || string(enc) != string(raw) {
		t.Fatalf("re-encoded index differs (%v)", err)
	}
	again, err := cached.encodeCache(st, spans)
	if err != nil || string(again) != string(data) {
		t.Fatalf("re-encoded cache differs (%v)", err)
	}
}

func mustFind(t *testing.T, ix *index, step int) int32 {
	t.Helper()
	p, ok := ix.base.find(step)
	if !ok {
		t.Fatalf("step %d not in the snapshot", step)
	}
	return p
}

func sortedInts(a []int) []int {
	out := append([]int(nil), a...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// TestCacheRejectsDamage: a truncated cache, a corrupt section, or a cache
// of another index file is rejected at load or marks the snapshot bad when
// read; a store then answers from the JSON exactly as before.
func TestCacheRejectsDamage(t *testing.T) {
	s, data, st := cacheStore(t, 30)
	le := binary.LittleEndian
	section := func(i int) (int, int) {
		return int(le.Uint64(data[40+16*i:])), int(le.Uint64(data[48+16*i:]))
	}
	flip := func(at int) []byte {
		bad := append([]byte{}, data...)
		bad[at] ^= 0x40
		return bad
	}
	cases := map[string]struct {
		data []byte
		st   fileStamp
	}{
		"empty":           {nil, st},
		"head only":       {data[:cacheHead], st},
		"truncated":       {data[:len(data)-1], st},
		"half":            {data[:len(data)/2], st},
		"magic":           {flip(0), st},
		"head":            {flip(45), st},
		"stale size":      {data, fileStamp{ok: true, size: st.size + 1, mtime: st.mtime, ino: st.ino}},
		"stale mtime":     {data, fileStamp{ok: true, size: st.size, mtime: st.mtime.Add(time.Nanosecond), ino: st.ino}},
		"stale inode":     {data, fileStamp{ok: true, size: st.size, mtime: st.mtime, ino: st.ino + 1}},
		"chunk crc table": {flip(len(data) - 1), st},
	}
	names := []string{"header", "records", "term table", "terms", "postings", "summaries", "dense"}
	for i, name := range names {
		off, n := section(i)
		if n == 0 {
			t.Fatalf("section %s is empty", name)
		}
		cases["section "+name+" first"] = struct {
			data []byte
			st   fileStamp
		}{flip(off), st}
		cases["section "+name+" last"] = struct {
			data []byte
			st   fileStamp
		}{flip(off + n - 1), st}
	}
	// The sound store's answers, taken before any case rewrites the cache
	// file in place: a store reads its snapshot lazily, and one opened
	// before would read the damaged bytes later (the store's own writers
	// replace the file by a rename, never in place).
	queries := []string{"service3 ValueError token4", "pkg2/handler_14.go token14 service0", "step touched"}
	want := mustOpen(t, s.Dir())
	wantScan, wantRecall := map[string]*ScanResult{}, map[string][]RecallHit{}
	for _, q := range queries {
		wantScan[q], _ = want.Scan(q)
		wantRecall[q], _ = want.Recall(q)
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if ix, err := decodeCache(c.data, c.st, nil); err == nil && ix.base.verifyAll() {
				t.Fatal("accepted")
			}
			// On disk: the store answers as with a sound cache (falling
			// back to the JSON when a query meets the damage).
			os.WriteFile(cacheFileOf(s), c.data, 0o644)
			got := mustOpen(t, s.Dir())
			for _, q := range queries {
				ws := wantScan[q]
				gs, err := got.Scan(q)
				if err != nil || !reflect.DeepEqual(ws, gs) {
					t.Errorf("scan %q: %v\n%+v\n%+v", q, err, ws, gs)
				}
				wr := wantRecall[q]
				gr, err := got.Recall(q)
				if err != nil || !reflect.DeepEqual(wr, gr) {
					t.Errorf("recall %q: %v", q, err)
				}
			}
			if e, err := got.Entry(42); err != nil || e.StepID != 42 {
				t.Errorf("entry: %v", err)
			}
		})
	}
}

// TestCacheScanAndRecallEquivalence: scan and recall over a snapshot (dense
// signatures and postings) plus journaled heap records answer exactly as
// over the index parsed from JSON, for queries mixing dense and rare terms.
func TestCacheScanAndRecallEquivalence(t *testing.T) {
	turns := manyTurns(300)
	plain := newTestStore(t)
	if _, err := plain.FoldBatch(turns); err != nil {
		t.Fatal(err)
	}
	withLargeStoreMode(t)
	JournalMaxOps = 256
	big := newTestStore(t)
	if _, err := big.FoldBatch(turns[:290]); err != nil {
		t.Fatal(err)
	}
	for i := len(turns) - 1; i >= 290; i-- { // journaled, out of step order
		if _, err := big.Fold(turns[i]); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range []*Store{plain, big} {
		for _, step := range []int{3, 300, 891} {
			if _, err := s.Evict(step); err != nil {
				t.Fatal(err)
			}
		}
	}
	fresh := mustOpen(t, big.Dir())
	fresh.Scan("x")
	if fresh.ix.base == nil || fresh.ix.nb != 290 || len(fresh.ix.base.dense) == 0 {
		t.Fatalf("expected a snapshot of 290 records with dense terms: base %v nb %d", fresh.ix.base != nil, fresh.ix.nb)
	}
	var queries []string
	for i := 0; i < 60; i++ {
		queries = append(queries,
			fmt.Sprintf("service%d token%d", i%7, i*5),
			fmt.Sprintf("pkg%d/handler_%d.go ValueError step touched", i%5, i*3),
			fmt.Sprintf("FAIL go test pkg%d token%d token%d service%d", i%5, i, 299-i, (i+3)%7),
		)
	}
	for _, q := range queries {
		ws, _ := plain.Scan(q)
		gs, err := fresh.Scan(q)
		if err != nil || !reflect.DeepEqual(ws, gs) {
			t.Fatalf("scan %q: %v\n%+v\n%+v", q, err, ws, gs)
		}
		wr, _ := plain.Recall(q)
		gr, err := fresh.Recall(q)
		if err != nil || !reflect.DeepEqual(wr, gr) {
			t.Fatalf("recall %q: %v\n%+v\n%+v", q, err, wr, gr)
		}
	}
}

// TestIndexCountsMatchEntries: the counts Status needs, read from the
// records, agree with the entries.
func TestIndexCountsMatchEntries(t *testing.T) {
	s, _, _ := cacheStore(t, 30)
	if _, err := s.Fold(Turn{StepID: 1000, Summary: "late", RawContent: "late turn"}); err != nil {
		t.Fatal(err)
	}
	fresh := mustOpen(t, s.Dir())
	total, evicted, tokens, err := fresh.indexCounts()
	if err != nil {
		t.Fatal(err)
	}
	es, _ := fresh.Entries()
	wantEv, wantTok := 0, 0
	for _, e := range es {
		if e.Evicted {
			wantEv++
		}
		wantTok += e.TokenEstimate
	}
	if total != len(es) || evicted != wantEv || tokens != wantTok || evicted != 1 {
		t.Errorf("counts %d %d %d, entries %d %d %d", total, evicted, tokens, len(es), wantEv, wantTok)
	}
}
