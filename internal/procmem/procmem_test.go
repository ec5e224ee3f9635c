package procmem

import (
	"runtime"
	"testing"
)

func TestResidentSet(t *testing.T) {
	if runtime.GOOS != "linux" {
		if RSS() != 0 || PeakRSS() != 0 {
			t.Fatal("off Linux both are 0")
		}
		return
	}
	buf := make([]byte, 64<<20)
	for i := range buf {
		buf[i] = byte(i)
	}
	rss, peak := RSS(), PeakRSS()
	if rss < 64<<20 || peak < rss {
		t.Fatalf("after touching 64 MiB: RSS %d, peak %d bytes (want RSS ≥ 64 MiB ≤ peak)", rss, peak)
	}
	runtime.KeepAlive(buf)
}
