package parallel

import (
	"sync/atomic"
	"testing"
)

// TestEachCallsEveryItemOnce: every k in [0, n) is called exactly once,
// for n of 0, 1, a few and many.
func TestEachCallsEveryItemOnce(t *testing.T) {
	for _, n := range []int{0, 1, 2, 7, 1000} {
		counts := make([]atomic.Int32, n)
		Each(n, func(k int) { counts[k].Add(1) })
		for k := range counts {
			if c := counts[k].Load(); c != 1 {
				t.Fatalf("n=%d: item %d called %d times", n, k, c)
			}
		}
	}
}
