// Package benchlat records per-operation latencies in Go benchmarks and
// reports their percentiles as benchmark metrics, so every benchmark of the
// project states p50/p99 the same way (BENCHMARKS.md quotes them).
package benchlat

import (
	"slices"
	"testing"
	"time"
)

// Latencies is one duration per measured operation. Not safe for
// concurrent appends; give each goroutine its own and join them.
type Latencies []time.Duration

// Percentile returns the p-quantile (0 ≤ p ≤ 1) in milliseconds: the
// element at ⌊p·n⌋ of the sorted durations (the largest for p = 1); 0 when
// l is empty. l is not reordered.
func (l Latencies) Percentile(p float64) float64 {
	if len(l) == 0 {
		return 0
	}
	s := slices.Clone(l)
	slices.Sort(s)
	return float64(s[min(len(s)-1, int(p*float64(len(s))))].Microseconds()) / 1000
}

// Report adds the metrics PREFIXp50-ms and PREFIXp99-ms to b; nothing when
// l is empty.
func (l Latencies) Report(b *testing.B, prefix string) {
	if len(l) == 0 {
		return
	}
	b.ReportMetric(l.Percentile(0.50), prefix+"p50-ms")
	b.ReportMetric(l.Percentile(0.99), prefix+"p99-ms")
}
