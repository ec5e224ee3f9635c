package matcheval

import (
	"math"
	"strings"
	"testing"
)

func TestSignTest(t *testing.T) {
	for _, c := range []struct {
		wins, losses int
		want         float64
	}{
		{0, 0, 1},
		{3, 3, 1},
		{5, 0, 2.0 / 32},        // 2 × (1/2)^5
		{0, 5, 2.0 / 32},        // two-sided: symmetric
		{9, 1, 2 * 11.0 / 1024}, // 2 × (C(10,0) + C(10,1)) / 2^10
		{1, 1, 1},
		{2, 1, 1}, // 2 × (1 + 3) / 8 = 1
	} {
		if got := SignTest(c.wins, c.losses); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("SignTest(%d, %d) = %g, want %g", c.wins, c.losses, got, c.want)
		}
	}
	// Large counts stay finite and fall with the imbalance.
	if p := SignTest(600, 400); !(p > 0 && p < 1e-9) {
		t.Errorf("SignTest(600, 400) = %g", p)
	}
}

func TestPaired(t *testing.T) {
	a := []EvidenceOutcome{{"k1", true}, {"k2", false}, {"k3", true}, {"k4", false}}
	b := []EvidenceOutcome{{"k2", true}, {"k1", true}, {"k3", false}, {"k4", true}} // another order: paired by key
	r, err := Paired("s", a, b)
	if err != nil {
		t.Fatal(err)
	}
	if r.N != 4 || r.HitsA != 2 || r.HitsB != 3 || r.Wins != 2 || r.Losses != 1 || r.Gain() != 25 {
		t.Errorf("Paired = %+v, gain %g", r, r.Gain())
	}
	if _, err := Paired("s", a, b[:3]); err == nil {
		t.Error("outcomes of different lengths paired")
	}
	if _, err := Paired("s", a, append(b[:3:3], EvidenceOutcome{"k5", true})); err == nil || !strings.Contains(err.Error(), "k5") {
		t.Errorf("a key only under B: %v", err)
	}
}

// TestPairedUnion: the union's unit is the evidence turn; a turn won in
// two sets and lost in one is one win, a turn won and lost is a tie.
func TestPairedUnion(t *testing.T) {
	o := func(hits ...bool) []EvidenceOutcome {
		out := make([]EvidenceOutcome, len(hits))
		for i, h := range hits {
			out[i] = EvidenceOutcome{Key: string(rune('a' + i)), Hit: h}
		}
		return out
	}
	sets := [][2][]EvidenceOutcome{
		{o(false, true, false), o(true, false, false)}, // a won, b lost
		{o(false, false, true), o(true, true, false)},  // a, b won, c lost
		{o(true, true, true), o(false, true, true)},    // a lost
	}
	u := PairedUnion(sets)
	// net: a +1, b 0, c -1.
	if u.Wins != 1 || u.Losses != 1 || u.N != 9 || u.HitsA != 5 || u.HitsB != 5 || u.P != 1 {
		t.Errorf("PairedUnion = %+v", u)
	}
}

func TestDecide(t *testing.T) {
	gain := PairedResult{Set: "union", Wins: 60, Losses: 36, P: SignTest(60, 36)}
	agents := []PairedAgent{{Set: "probes", Probes: 10, HitsA: 10, HitsB: 10, TokensA: 1000, TokensB: 1040}}
	if v := Decide(gain, []PairedResult{{Set: "x", Wins: 7, Losses: 8, P: 1}}, agents); !v.Keep {
		t.Errorf("a significant union gain with no loss: %+v", v)
	}
	if v := Decide(gain, []PairedResult{{Set: "x", Wins: 0, Losses: 9, P: SignTest(0, 9)}}, agents); v.Keep {
		t.Error("kept with a significant loss on one set")
	}
	if v := Decide(PairedResult{Wins: 14, Losses: 8, P: SignTest(14, 8)}, nil, agents); v.Keep {
		t.Error("kept without a significant gain")
	}
	lost := []PairedAgent{{Set: "corpus", Probes: 10, HitsA: 10, HitsB: 9, Losses: 1, TokensA: 1000, TokensB: 900}}
	if v := Decide(gain, nil, lost); v.Keep {
		t.Error("kept while losing an agent probe")
	}
	dear := []PairedAgent{{Set: "corpus", Probes: 10, HitsA: 10, HitsB: 10, TokensA: 1000, TokensB: 1050}}
	if v := Decide(gain, nil, dear); v.Keep {
		t.Error("kept at 5 % more agent tokens")
	}
}

// TestLoCoMoEvidencePairs: every chat set built from one file records the
// same evidence turns under the same keys (the pairs of Paired and
// PairedUnion), and the same outcomes on a second run.
func TestLoCoMoEvidencePairs(t *testing.T) {
	data, err := LoadLoCoMo("testdata/locomo/locomo10.json.gz")
	if err != nil {
		t.Fatal(err)
	}
	data = data[:1]
	run := func(o LoCoMoOptions) []EvidenceOutcome {
		o.BudgetTurns, o.Undated = 5, true
		rep, err := RunLoCoMoWith(data, t.TempDir(), o)
		if err != nil {
			t.Fatal(err)
		}
		return rep.Evidence
	}
	plain := run(LoCoMoOptions{})
	if len(plain) < 100 {
		t.Fatalf("%d evidence outcomes", len(plain))
	}
	if r, err := Paired("again", plain, run(LoCoMoOptions{})); err != nil || r.Wins+r.Losses != 0 {
		t.Fatalf("a second run differs: %+v, %v", r, err)
	}
	combined, err := Combine(data)
	if err != nil {
		t.Fatal(err)
	}
	sets := [][2][]EvidenceOutcome{{plain, plain}}
	for name, o := range map[string]LoCoMoOptions{"uneven": {Uneven: true}, "reword": {Reword: true}, "noisy": {Noisy: true}} {
		other := run(o)
		if _, err := Paired(name, plain, other); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		sets = append(sets, [2][]EvidenceOutcome{plain, other})
	}
	o := LoCoMoOptions{BudgetTurns: 5, Undated: true}
	rep, err := RunLoCoMoWith(combined, t.TempDir(), o)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Paired("combined", plain, rep.Evidence); err != nil {
		t.Errorf("combined: %v", err)
	}
	if u := PairedUnion(sets); u.N != 4*len(plain) {
		t.Errorf("union of %d pairs, want %d", u.N, 4*len(plain))
	}
}
