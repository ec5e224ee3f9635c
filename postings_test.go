package contextfold

import (
	"reflect"
	"testing"
)

// TestPostings: single and multiple positions, repeated additions of the
// last position skipped, absent terms empty.
func TestPostings(t *testing.T) {
	ps := newPostings()
	ps.add("a", 0)
	ps.add("a", 0)
	ps.add("b", 1)
	ps.add("a", 2)
	ps.add("a", 2)
	ps.add("a", 5)
	ps.add("c", 0)
	ps.add("c", 3)
	for term, want := range map[string][]int32{"a": {0, 2, 5}, "b": {1}, "c": {0, 3}, "zz": nil} {
		if got := ps.appendTo(nil, term); !reflect.DeepEqual(got, want) {
			t.Errorf("%q: %v, want %v", term, got, want)
		}
		if ps.has(term) != (want != nil) {
			t.Errorf("has(%q) = %v", term, ps.has(term))
		}
	}
	if ps.len() != 3 {
		t.Errorf("len %d", ps.len())
	}
	if got := ps.appendTo([]int32{9}, "b"); !reflect.DeepEqual(got, []int32{9, 1}) {
		t.Errorf("appendTo keeps dst: %v", got)
	}
}
