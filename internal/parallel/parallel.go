// Package parallel runs independent work items on every CPU.
package parallel

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// Each calls f(k) for every k in [0, n), each k once, on up to GOMAXPROCS
// goroutines (inline, in order, when that is one goroutine or n < 2), and
// returns once every call returned. f must write only k's own results, so
// the outcome does not depend on the scheduling. Items are handed out in
// ascending order from a shared counter: a slow item does not hold back
// the others.
func Each(n int, f func(k int)) {
	workers := min(runtime.GOMAXPROCS(0), n)
	if workers <= 1 {
		for k := range n {
			f(k)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := int(next.Add(1) - 1); k < n; k = int(next.Add(1) - 1) {
				f(k)
			}
		}()
	}
	wg.Wait()
}
