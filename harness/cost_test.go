package harness

import (
	"math/rand/v2"
	"testing"
)

// Billed's sums are exact: the same requests added in any order give the
// same bytes (a float sum of 0.1-priced tokens does not), and a sum equals
// the requests' costs (Pricing.Cost) to the last cent.
func TestBilledOrderIndependent(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	type req struct{ ct, cc, ft, fc int }
	reqs := make([]req, 400)
	for i := range reqs {
		ct, ft := 1+r.IntN(200000), 1+r.IntN(60000)
		reqs[i] = req{ct, r.IntN(ct + 1), ft, r.IntN(ft + 1)}
	}
	for _, p := range Pricings() {
		sum := func(order []int) Billed {
			b := Billed{Pricing: p}
			for _, i := range order {
				q := reqs[i]
				b.Add(q.ct, q.cc, q.ft, q.fc)
			}
			return b
		}
		order := make([]int, len(reqs))
		var want float64
		for i := range order {
			order[i] = i
			want += p.Cost(reqs[i].ct, reqs[i].cc)
		}
		first := sum(order)
		for range 20 {
			r.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
			if got := sum(order); got.Client != first.Client || got.Forwarded != first.Forwarded {
				t.Fatalf("%s: sums depend on the order: %v / %v against %v / %v", p.Name, got.Client, got.Forwarded, first.Client, first.Forwarded)
			}
		}
		if d := first.Client - want; d > 0.01 || d < -0.01 {
			t.Errorf("%s: client sum %v, requests' costs add up to %v", p.Name, first.Client, want)
		}
	}
}
