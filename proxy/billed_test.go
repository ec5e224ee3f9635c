package proxy

import (
	"encoding/json"
	"io"
	"math"
	"net/http"
	"testing"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/harness"
)

// GET /contextfold/stats reports the input cost as billed under both price
// structures: each request's client body and forwarded body, cached against
// the session's previous body of the same side, priced with Anthropic's
// write premium and read discount and with OpenAI's discount. The figures
// equal those computed here from the bytes the client sent and the upstream
// received; a session that folds costs less through the proxy than without.
func TestStatsBilledCost(t *testing.T) {
	up := newUpstream(t)
	tp := newProxy(t, up, harness.Config{ContextBudget: 4000})
	var sent [][]byte
	for n := 20; n <= 120; n += 4 {
		body := conversationOf(n, false)
		post(t, tp.http.URL+PathOpenAI, body, map[string]string{HeaderSession: "billed"})
		sent = append(sent, body)
	}
	tp.record(t, len(sent))
	up.mu.Lock()
	var got [][]byte
	for _, r := range up.reqs {
		got = append(got, r.Body)
	}
	up.mu.Unlock()
	if len(got) != len(sent) {
		t.Fatalf("upstream received %d requests, the client sent %d", len(got), len(sent))
	}
	tokens := func(b []byte) int { return contextfold.TokenEstimate(string(b)) }
	want := map[string][2]float64{}
	for _, p := range harness.Pricings() {
		var c, f float64
		for i := range sent {
			cc, fc := 0, 0
			if i > 0 {
				cc = tokens(sent[i][:commonPrefix(sent[i], sent[i-1])])
				fc = tokens(got[i][:commonPrefix(got[i], got[i-1])])
			}
			c += p.Cost(tokens(sent[i]), cc)
			f += p.Cost(tokens(got[i]), fc)
		}
		want[p.Name] = [2]float64{c, f}
	}
	resp, err := http.Get(tp.http.URL + "/contextfold/stats")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var st Stats
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatalf("stats: %v: %s", err, raw)
	}
	if len(st.Billed) != 2 {
		t.Fatalf("stats billed: %+v, want Anthropic's and OpenAI's", st.Billed)
	}
	for _, b := range st.Billed {
		w, ok := want[b.Pricing.Name]
		if !ok {
			t.Fatalf("unknown price structure %q", b.Pricing.Name)
		}
		if math.Abs(b.Client-w[0]) > 1 || math.Abs(b.Forwarded-w[1]) > 1 {
			t.Errorf("%s: stats client %.1f forwarded %.1f, from the bytes %.1f and %.1f", b.Pricing.Name, b.Client, b.Forwarded, w[0], w[1])
		}
		if b.Forwarded >= b.Client {
			t.Errorf("%s: forwarded %.0f not below the client's %.0f: the session did not fold", b.Pricing.Name, b.Forwarded, b.Client)
		}
	}
	if a := st.Billed[0]; a.Pricing != AnthropicPricing {
		t.Errorf("first price structure %+v, want Anthropic's %+v", a.Pricing, AnthropicPricing)
	}
}
