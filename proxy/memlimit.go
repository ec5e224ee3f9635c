package proxy

import (
	"math"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"time"
)

// The soft memory limit (one large first request must not take
// a multiple of its body that the garbage collector's default pacing lets
// grow to twice the live heap). While a request that folds at least
// governMinFresh bytes of conversation the proxy had not read before is in
// flight, the process's soft memory limit (debug.SetMemoryLimit) is the
// memory in use when the first of them began (the live heap at the last
// collection, plus the runtime's memory outside the heap) plus the memory
// estimates (memoryEstimate) of every such request in flight: the
// collector then works to keep the heap within what the in-flight budget
// counts, instead of letting garbage reach the size of the live heap. When
// the last of them is finished, the limit is what it was before.
//
// The memory in use before is taken before the first request's body
// arrives, so that the request's own body and parse count only in its
// estimate. It is not applied when the user set GOMEMLIMIT (or the program
// set a limit before the first request), nor with
// Options.NoSoftMemoryLimit. So that a live heap larger than the estimates
// does not make the collector run without pause, a watchdog raises the
// limit to 1.1 × the memory in use whenever that passes 95 % of the limit
// (watchFull, watchRaise). The governor is one per process (the limit is
// the process's); it is safe for concurrent use.
const governMinFresh = 1 << 20 // bytes

// The watchdog raises the limit to watchRaise % of the memory in use when
// that passes watchFull % of the limit (variables for the benchmarks).
var (
	watchFull  int64 = 95
	watchRaise int64 = 110
)

type memGovernor struct {
	mu     sync.Mutex
	n      int   // governed requests in flight
	held   int64 // Σ their estimates, bytes
	base   int64 // memory in use when the first of them began, bytes
	raised int64 // what the watchdog added, bytes
	prev   int64 // the limit before the first of them
	// maxRaised is the most the watchdog added since the process began
	// (bytes; BenchmarkProxyLargeRequest reports it).
	maxRaised int64
	stop      chan struct{}
}

var governor memGovernor

// memSample reads the live heap at the last collection and the runtime's
// memory outside the heap (bytes).
func memSample() (live, other int64) {
	s := []metrics.Sample{
		{Name: "/gc/heap/live:bytes"},
		{Name: "/memory/classes/total:bytes"},
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/memory/classes/heap/unused:bytes"},
		{Name: "/memory/classes/heap/free:bytes"},
		{Name: "/memory/classes/heap/released:bytes"},
	}
	metrics.Read(s)
	u := func(i int) int64 {
		if s[i].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return int64(s[i].Value.Uint64())
	}
	return u(0), max(u(1)-u(2)-u(3)-u(4)-u(5), 0)
}

// memInUse is the memory in use as the governor counts it (bytes): the
// live heap at the last collection plus the runtime's memory outside the
// heap. A request takes it before its body arrives, so that the limit's
// base does not count the request's own body and parse.
func memInUse() int64 {
	live, other := memSample()
	return live + other
}

// enter counts a governed request of estimate bytes, taken with the memory
// in use before its body arrived (before: memInUse; 0 means now), and
// returns the function that uncounts it (call it once, when the request is
// finished).
func (g *memGovernor) enter(before, estimate int64) (leave func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.n == 0 {
		cur := debug.SetMemoryLimit(-1)
		if os.Getenv("GOMEMLIMIT") != "" || cur != math.MaxInt64 {
			return func() {}
		}
		if before <= 0 {
			before = memInUse()
		}
		g.base, g.prev, g.raised = before, cur, 0
		g.stop = make(chan struct{})
		go g.watch(g.stop)
	}
	g.n++
	g.held += estimate
	g.apply()
	var once sync.Once
	return func() {
		once.Do(func() {
			g.mu.Lock()
			defer g.mu.Unlock()
			g.n--
			g.held -= estimate
			if g.n == 0 {
				close(g.stop)
				debug.SetMemoryLimit(g.prev)
				return
			}
			g.apply()
		})
	}
}

// limit is the soft memory limit while governed requests are in flight.
func (g *memGovernor) limit() int64 { return g.base + g.held + g.raised }

// apply sets the limit; g.mu is held.
func (g *memGovernor) apply() { debug.SetMemoryLimit(g.limit()) }

// watch raises the limit while the live heap comes close to it, until stop
// is closed.
func (g *memGovernor) watch(stop chan struct{}) {
	t := time.NewTicker(25 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		live, other := memSample()
		g.mu.Lock()
		if g.stop == stop && g.n > 0 {
			if need := live + other; need > g.limit()*watchFull/100 {
				g.raised += need*watchRaise/100 - g.limit()
				g.maxRaised = max(g.maxRaised, g.raised)
				g.apply()
			}
		}
		g.mu.Unlock()
	}
}
