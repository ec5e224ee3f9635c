package contextfold

import (
	"reflect"
	"strings"
	"testing"
)

// TestSHA256HexStringSizes: the stack, chunked and whole-copy paths hash
// the same bytes, at the edges of the buffers.
func TestSHA256HexStringSizes(t *testing.T) {
	for _, n := range []int{0, 1, 4095, 4096, 4097, 32 << 10, 32<<10 + 1, 100003} {
		s := strings.Repeat("aé\x00", n/4+1)[:n]
		if got, want := sha256HexString(s), sha256Hex([]byte(s)); got != want {
			t.Errorf("%d bytes: %s, want %s", n, got, want)
		}
	}
}

// TestSortedUniqueKeepsOrCopies: an already sorted, unique list is used as
// it is; any other is sorted and de-duplicated in a copy, the input kept.
func TestSortedUniqueKeepsOrCopies(t *testing.T) {
	in := []string{"a", "b", "c"}
	if got := sortedUnique(in); &got[0] != &in[0] {
		t.Error("a sorted unique list was copied")
	}
	un := []string{"b", "a", "b"}
	if got := sortedUnique(un); !reflect.DeepEqual(got, []string{"a", "b"}) || !reflect.DeepEqual(un, []string{"b", "a", "b"}) {
		t.Errorf("got %q, input now %q", got, un)
	}
	if got := sortedUnique(nil); got == nil || len(got) != 0 {
		t.Errorf("nil gives %#v", got)
	}
}
