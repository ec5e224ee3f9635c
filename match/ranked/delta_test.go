package ranked

import (
	"fmt"
	"reflect"
	"testing"
)

// TestReplacedNodesDoNotCountAsCommon: an index in which nodes were
// replaced answers exactly as one built from the final nodes alone. The
// Common filter (a term held by over Common × N live nodes only scores the
// candidates found by rarer terms) must count the live holders of a term,
// not the postings a replaced node left behind: here "zircon" is in 35 % of
// the nodes before 10 % of them are replaced by text without it (25 %
// after), so only a filter that counts dead postings treats it as common.
func TestReplacedNodesDoNotCountAsCommon(t *testing.T) {
	const n = 2400
	text := func(i int, zircon bool) string {
		s := fmt.Sprintf("node%d handled quokka%d request on worker%d", i, i%7, i%13)
		if zircon {
			s += " zircon"
		}
		return s
	}
	final := NewIndex()
	replaced := NewIndex()
	for i := range n {
		replaced.Add(i, fmt.Sprint("a", i), 20, fmt.Sprint("turn ", i), text(i, i < 840))
	}
	for i := range 240 { // the first 240 zircon nodes lose the term
		replaced.Add(i, fmt.Sprint("b", i), 20, fmt.Sprint("turn ", i), text(i, false))
	}
	for i := range n {
		art := fmt.Sprint("a", i)
		if i < 240 {
			art = fmt.Sprint("b", i)
		}
		final.Add(i, art, 20, fmt.Sprint("turn ", i), text(i, i >= 240 && i < 840))
	}
	p := DefaultParams()
	for _, q := range []string{"zircon quokka3", "zircon worker5 request", "which node had zircon and quokka2?", "zircon node700"} {
		w, g := final.Scan(q, p), replaced.Scan(q, p)
		if !reflect.DeepEqual(w, g) {
			t.Errorf("scan %q: fresh index %+v\nwith replaced nodes %+v", q, w, g)
		}
		if w, g := final.Recall(q, p), replaced.Recall(q, p); !reflect.DeepEqual(w, g) {
			t.Errorf("recall %q differs", q)
		}
	}
}
