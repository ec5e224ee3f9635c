package ranked

import (
	"math"
	"reflect"
	"testing"

	"github.com/contextfold/contextfold/internal/testgen"
)

// sameWalk checks that every prompt scores, scans, scans before a step and
// recalls the same with the dense-table walk as with the general one
// (walk.go): the candidates' scores are compared bit for bit.
func sameWalk(t *testing.T, ix *Index, prompts []string, before []int) {
	t.Helper()
	few := DefaultParams()
	few.Candidates = 8
	defer func() { generalWalk = false }()
	run := func(prompt string, p Params, b int) (scores []uint64, scan, scanBefore *Result, recall []Hit) {
		ix.mu.Lock()
		for _, bb := range []int{-1, b} {
			for _, m := range ix.score(ix.query(prompt, p), p, bb) {
				scores = append(scores, uint64(m.doc), math.Float64bits(m.score), math.Float64bits(m.ctx))
				for i := range m.own {
					scores = append(scores, math.Float64bits(m.own[i]), math.Float64bits(m.nb[i]))
				}
			}
		}
		ix.mu.Unlock()
		return scores, ix.Scan(prompt, p), ix.ScanBefore(prompt, p, b), ix.Recall(prompt, p)
	}
	for _, p := range []Params{DefaultParams(), few} {
		for i, prompt := range prompts {
			b := before[i%len(before)]
			generalWalk = true
			ws, wScan, wBefore, wRecall := run(prompt, p, b)
			generalWalk = false
			gs, gScan, gBefore, gRecall := run(prompt, p, b)
			if !reflect.DeepEqual(gs, ws) {
				t.Fatalf("prompt %q, before %d: candidate scores differ", prompt, b)
			}
			if !reflect.DeepEqual(gScan, wScan) || !reflect.DeepEqual(gBefore, wBefore) || !reflect.DeepEqual(gRecall, wRecall) {
				t.Fatalf("prompt %q, before %d: dense walk\n%+v\ngeneral walk\n%+v", prompt, b, gScan, wScan)
			}
			samePicks(t, prompt, gBefore, ix.ScanPicksBefore(prompt, p, b))
		}
	}
}

// samePicks checks that ScanPicksBefore's result (lean) is ScanBefore's
// (full) without the explanations: the same terms and picks, the same
// superseded steps in the same order, no cut-off.
func samePicks(t *testing.T, prompt string, full, lean *Result) {
	t.Helper()
	var fullSteps, leanSteps []int
	for _, p := range full.Superseded {
		fullSteps = append(fullSteps, p.Step)
	}
	for _, p := range lean.Superseded {
		leanSteps = append(leanSteps, p.Step)
		if !reflect.DeepEqual(p, Pick{Step: p.Step}) {
			t.Fatalf("prompt %q: ScanPicksBefore described a superseded node: %+v", prompt, p)
		}
	}
	if !reflect.DeepEqual(full.Terms, lean.Terms) || !reflect.DeepEqual(full.Picks, lean.Picks) || !reflect.DeepEqual(fullSteps, leanSteps) || lean.CutOff != nil {
		t.Fatalf("prompt %q: ScanPicksBefore\n%+v\nScanBefore\n%+v", prompt, lean, full)
	}
}

// TestWalkSameGenerated: a generated index over commonMinNodes nodes (rule
// "Common" applies), with question turns among them, in memory and opened
// from its snapshot, then with replaced nodes (dead docs: the general walk
// only) and after more folds (the dense tables rebuilt).
func TestWalkSameGenerated(t *testing.T) {
	g := testgen.New(5)
	turns := g.SmallTurns(0, 2400)
	for i := range turns {
		if i%9 == 0 {
			turns[i].RawContent += "\nwhich one did the build use for " + turns[(i*7)%len(turns)].Summary + "?"
		}
	}
	mem := NewIndex()
	addTurns(mem, turns, "a")
	var prompts []string
	for i := range 60 {
		prompts = append(prompts, g.Prompt(i), g.Query(i))
	}
	before := []int{-1, 1200, 240, 1 << 30}
	sameWalk(t, mem, prompts, before)
	snap := reopen(t, mem)
	sameWalk(t, snap, prompts, before)
	addTurns(snap, g.SmallTurns(2400, 50), "a")
	sameWalk(t, snap, prompts, before)
	replaced := g.SmallTurns(3000, 20)
	for i := range replaced {
		replaced[i].StepID = turns[i*11].StepID
	}
	addTurns(snap, replaced, "b")
	sameWalk(t, snap, prompts, before)
	if n := snap.Len(); n != 2450 {
		t.Fatalf("%d live nodes, want 2450", n)
	}
}

// seek finds the first posting at or after a doc from any start, on lists
// dense, sparse, clustered and uneven.
func TestSeek(t *testing.T) {
	lists := map[string][]posting{}
	var dense, sparse, clustered, uneven []posting
	for d := int32(0); d < 5000; d++ {
		if d%10 != 3 {
			dense = append(dense, posting{doc: d, tf: 1})
		}
		if d%397 == 5 {
			sparse = append(sparse, posting{doc: d, tf: 2})
		}
		if (d > 100 && d < 160) || (d > 4900) {
			clustered = append(clustered, posting{doc: d, tf: 3})
		}
		if d*d%4999 < 30 {
			uneven = append(uneven, posting{doc: d, tf: 4})
		}
	}
	lists["dense"], lists["sparse"], lists["clustered"], lists["uneven"], lists["empty"] = dense, sparse, clustered, uneven, nil
	for name, ps := range lists {
		for _, lo := range []int{0, 1, len(ps) / 3, len(ps)} {
			for d := int32(-2); d < 5003; d++ {
				want := lo
				for want < len(ps) && ps[want].doc < d {
					want++
				}
				if lo > len(ps) {
					continue
				}
				if got := seek(ps, lo, d); got != want {
					t.Fatalf("%s: seek(lo %d, doc %d) = %d, want %d", name, lo, d, got, want)
				}
			}
		}
	}
}

// TestCoverLazySame: the ranked set cover's picks, order, scores and
// reasons are the same when only the candidate with the best bound is
// scored again each round as when every candidate is (eagerCover), with
// the discount lifted at the default share, never lifted, lifted early,
// and with no discount or a full one; a generated index of 2,400 nodes
// and prompts of many terms (many kept candidates).
func TestCoverLazySame(t *testing.T) {
	g := testgen.New(11)
	ix := NewIndex()
	addTurns(ix, g.SmallTurns(0, 2400), "a")
	var prompts []string
	for i := range 80 {
		prompts = append(prompts, g.Prompt(i), g.Query(i), g.Prompt(i)+" "+g.Query(i+1)+" "+g.Prompt(i+2))
	}
	var ps []Params
	for _, f := range []func(*Params){
		func(*Params) {},
		func(p *Params) { p.CoverShare = 0 },
		func(p *Params) { p.CoverShare = 0.2 },
		func(p *Params) { p.Covered = 0 },
		func(p *Params) { p.Covered = 1 },
		func(p *Params) { p.Delta = 0 },
		func(p *Params) { p.Delta = -0.1 }, // not monotone: every candidate every round
	} {
		p := DefaultParams()
		f(&p)
		ps = append(ps, p)
	}
	defer func() { eagerCover = false }()
	picks := 0
	for _, p := range ps {
		for _, prompt := range prompts {
			eagerCover = true
			want := ix.ScanBefore(prompt, p, -1)
			eagerCover = false
			got := ix.ScanBefore(prompt, p, -1)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("prompt %q, %+v: lazy cover\n%+v\nevery candidate every round\n%+v", prompt, p, got, want)
			}
			picks += len(got.Picks)
		}
	}
	if picks < 10*len(prompts) {
		t.Fatalf("%d picks for %d scans: the cover is hardly exercised", picks, len(prompts)*len(ps))
	}
}
