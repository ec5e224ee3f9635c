package harness

import (
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/contextfold/contextfold"
)

// fleetConv is a long agent session with a human prompt every 10 tool
// calls that names an earlier package, so fold events, the page table and
// hydration all happen under a small budget. The conversation of a step
// count that is a multiple of 10 ends with that step's prompt (the request
// that asks it, which is scanned); the next ones continue the turn.
func fleetConv(steps int) []Message {
	conv := agentConv(0)
	question := func(i int) Message {
		return Message{Role: RoleUser, Human: true, Parts: []Part{{Text: "What did go test ./pkg" + strconv.Itoa(i/3) + " print earlier?", Foldable: true}}}
	}
	for i := 0; i < steps; i++ {
		if i > 0 && i%10 == 0 {
			conv = append(conv, question(i))
		}
		conv = append(conv, agentConv(i + 1)[2+2*i:]...)
	}
	if steps%10 == 0 {
		conv = append(conv, question(steps))
	}
	return conv
}

func openAt(t *testing.T, dir string) *contextfold.Store {
	t.Helper()
	s, err := contextfold.Open(dir, contextfold.Options{Clock: func() time.Time { return time.Unix(1772445600, 0) }})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Three harnesses over one store, each request of the session on the next
// one in turn, with the SessionState handed over through bytes: every
// forwarded conversation is the one a single harness forwards, and so are
// the evictions. Without the hand-over the replicas fork.
func TestSessionStateFleetEqualsSingle(t *testing.T) {
	cfg := Config{ContextBudget: 5000, Match: "ranked"}
	single := New(openAt(t, t.TempDir()+"/.contextfold"), cfg)
	fleetDir := t.TempDir() + "/.contextfold"
	var fleet [3]*Harness
	for k := range fleet {
		fleet[k] = New(openAt(t, fleetDir), cfg)
	}
	naiveDir := t.TempDir() + "/.contextfold"
	var naive [3]*Harness
	for k := range naive {
		naive[k] = New(openAt(t, naiveDir), cfg)
	}
	var state []byte
	events, hydrations, forked := 0, 0, false
	for steps := 3; steps <= 60; steps++ {
		conv := fleetConv(steps)
		want, err := single.DispatchRequest(conv, 50)
		if err != nil {
			t.Fatal(err)
		}
		h := fleet[steps%3]
		if state != nil {
			if err := h.ImportState(state); err != nil {
				t.Fatal(err)
			}
		}
		got, err := h.DispatchRequest(conv, 50)
		if err != nil {
			t.Fatal(err)
		}
		if g, w := got.Apply(conv), want.Apply(conv); !reflect.DeepEqual(g, w) {
			for i := range min(len(g), len(w)) {
				if !reflect.DeepEqual(g[i], w[i]) {
					t.Logf("message %d:\nfleet  %+v\nsingle %+v", i, g[i], w[i])
					break
				}
			}
			t.Fatalf("%d steps: the fleet forwards another conversation than one harness (fold events %d/%d, removed %v/%v)",
				steps, got.WorkingSet.Events, want.WorkingSet.Events, got.WorkingSet.Removed, want.WorkingSet.Removed)
		}
		if !reflect.DeepEqual(got.Accounting, want.Accounting) {
			t.Fatalf("%d steps: accounting %+v, single %+v", steps, got.Accounting, want.Accounting)
		}
		// The response ends on the replica that dispatched it.
		wantEv, err1 := single.PostTurnResponse(want)
		gotEv, err2 := h.PostTurnResponse(got)
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if len(wantEv) != len(gotEv) {
			t.Fatalf("%d steps: the fleet evicted %d nodes, one harness %d", steps, len(gotEv), len(wantEv))
		}
		if state, err = h.ExportState(); err != nil {
			t.Fatal(err)
		}
		if again, _ := h.ExportState(); string(again) != string(state) {
			t.Fatal("two exports of one state differ")
		}
		if want.WorkingSet.FoldEvent {
			events++
		}
		if len(want.Hydrated) > 0 {
			hydrations++
		}
		// Control: replicas that share only the store.
		nd, err := naive[steps%3].DispatchRequest(conv, 50)
		if err == nil {
			naive[steps%3].PostTurnResponse(nd)
			if !reflect.DeepEqual(nd.Apply(conv), want.Apply(conv)) {
				forked = true
			}
		}
	}
	if events < 3 || hydrations < 3 {
		t.Fatalf("the session had %d fold events and %d hydrated requests; the test needs several of each", events, hydrations)
	}
	if !forked {
		t.Fatal("replicas sharing only the store forwarded what one harness does: the test does not exercise the SessionState")
	}
	// The eviction logs agree too (CONF-07).
	a, _ := single.Store().Status()
	b, _ := fleet[0].Store().Status()
	if a.Evicted != b.Evicted || a.Total != b.Total {
		t.Fatalf("status: fleet %+v, single %+v", b, a)
	}
	if !strings.Contains(string(state), `"working_set"`) {
		t.Fatalf("state has no working set: %s", state)
	}
}

func TestImportStateRejectsOtherVersions(t *testing.T) {
	h := newHarness(t, Config{})
	for _, bad := range []string{`{`, `{"version":99}`, `{"version":1,"turn":{"prompt_sha256":"zz"}}`} {
		if err := h.ImportState([]byte(bad)); err == nil {
			t.Errorf("ImportState(%s) accepted", bad)
		}
	}
}
