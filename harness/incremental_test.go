package harness

import (
	"hash/fnv"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"
)

// keyOf is a Message.Key for a test: a hash of what the message says, and
// of salt (a proxy's key is a hash of the message's bytes, which a client
// may change without changing the text: a moved cache_control marker).
func keyOf(m Message, salt int) uint64 {
	h := fnv.New64a()
	h.Write([]byte(m.Role + "\x00" + m.Tool + "\x00" + m.Command + "\x00" + strconv.Itoa(salt)))
	for _, p := range m.Parts {
		h.Write([]byte{0, b2i(p.Foldable), b2i(p.ToolResult)})
		h.Write([]byte(p.Text))
	}
	return h.Sum64() | 1
}

func b2i(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// A session dispatched with message keys (the incremental sums, lists and
// checks of incremental.go) gets, request after request, exactly the
// dispatch of the same session dispatched without keys (everything computed
// from the whole conversation): the same records, working set, accounting
// and hydration, through fold events, page-table growth, new human turns,
// and a client that changes the bytes of its last messages between requests.
func TestIncrementalDispatchMatchesFresh(t *testing.T) {
	cfg := Config{ContextBudget: 6000}
	// Two stores of the same name (the records name their cold nodes).
	inc := New(openAt(t, filepath.Join(t.TempDir(), "store")), cfg)
	fresh := New(openAt(t, filepath.Join(t.TempDir(), "store")), cfg)
	events := 0
	for k := 1; k <= 190; k++ {
		steps := k - k/5 // every fifth request repeats the one before
		conv := fleetConv(steps)
		keyed := make([]Message, len(conv))
		copy(keyed, conv)
		for i := range keyed {
			salt := 0
			if i >= len(keyed)-2 && steps%3 == 0 {
				salt = steps // the last two messages' bytes changed
			}
			keyed[i].Key = keyOf(keyed[i], salt)
		}
		a, err := inc.PreTurnDispatch(keyed)
		if err != nil {
			t.Fatal(err)
		}
		b, err := fresh.PreTurnDispatch(conv)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(a.Folded, b.Folded) {
			t.Fatalf("%d steps: folded records differ:\n%+v\n%+v", steps, a.Folded, b.Folded)
		}
		if !reflect.DeepEqual(a.WorkingSet, b.WorkingSet) {
			t.Fatalf("%d steps: working sets differ:\n%+v\n%+v", steps, a.WorkingSet, b.WorkingSet)
		}
		if !reflect.DeepEqual(a.Accounting, b.Accounting) {
			t.Fatalf("%d steps: accounting differs:\n%+v\n%+v", steps, a.Accounting, b.Accounting)
		}
		if a.HydrationText != b.HydrationText || a.HydrationIndex != b.HydrationIndex {
			t.Fatalf("%d steps: hydration differs", steps)
		}
		if a.WorkingSet.FoldEvent {
			events++
		}
		for _, x := range []struct {
			h *Harness
			d *Dispatch
		}{{inc, a}, {fresh, b}} {
			if _, err := x.h.PostTurnResponse(x.d); err != nil {
				t.Fatal(err)
			}
		}
	}
	if events < 5 {
		t.Fatalf("only %d fold events: the session does not exercise the working set", events)
	}
}
