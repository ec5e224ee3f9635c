package benchlat

import (
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	var l Latencies
	for i := 100; i >= 1; i-- { // unsorted on purpose
		l = append(l, time.Duration(i)*time.Millisecond)
	}
	if got := l.Percentile(0.50); got != 51 {
		t.Errorf("p50 = %v ms, want 51", got)
	}
	if got := l.Percentile(0.99); got != 100 {
		t.Errorf("p99 = %v ms, want 100", got)
	}
	if got := l.Percentile(1); got != 100 {
		t.Errorf("p100 = %v ms, want 100", got)
	}
	if l[0] != 100*time.Millisecond {
		t.Error("Percentile reordered its receiver")
	}
	if got := Latencies(nil).Percentile(0.5); got != 0 {
		t.Errorf("empty p50 = %v, want 0", got)
	}
}
