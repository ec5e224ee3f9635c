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
			if k%10 < 7 {
				// The keys of the messages so far, as the proxy sets
				// them (7 requests in 10; without them, the keys are
				// compared one by one).
				var prev uint64
				if i > 0 {
					prev = keyed[i-1].PrefixKey
				}
				h := fnv.New64a()
				h.Write([]byte(strconv.FormatUint(prev, 16) + "/" + strconv.FormatUint(keyed[i].Key, 16)))
				keyed[i].PrefixKey = h.Sum64() | 1
			}
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

// TestSamePrefixByPrefixKey: with Message.PrefixKey set, the messages a
// conversation shares with the last dispatch's are told by the last one's
// prefix key — all of them when it is the same, and exactly those before a
// changed key when it is not — and without prefix keys by the keys one by
// one; a shorter conversation shares all it holds.
func TestSamePrefixByPrefixKey(t *testing.T) {
	conv := func(n, changed int, prefix bool) []Message {
		out := make([]Message, n)
		var prev uint64
		for i := range out {
			out[i].Key = uint64(1000 + i)
			if i == changed {
				out[i].Key = 7
			}
			if prefix {
				h := fnv.New64a()
				h.Write([]byte(strconv.FormatUint(prev, 16) + "/" + strconv.FormatUint(out[i].Key, 16)))
				out[i].PrefixKey = h.Sum64() | 1
				prev = out[i].PrefixKey
			}
		}
		return out
	}
	h := &Harness{}
	h.beginIncremental(conv(40, -1, true))
	for _, c := range []struct {
		name   string
		conv   []Message
		shared int
	}{
		{"the same conversation, longer", conv(42, -1, true), 40},
		{"a key changed at 12", conv(42, 12, true), 12},
		{"a key changed at 39", conv(40, 39, true), 39},
		{"no prefix keys", conv(42, 12, false), 12},
		{"shorter", conv(30, -1, true), 30},
	} {
		if got := h.samePrefix(c.conv); got != c.shared {
			t.Fatalf("%s: %d messages shared, want %d", c.name, got, c.shared)
		}
	}
}
