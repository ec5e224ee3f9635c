// Package procmem reads the process's resident memory from
// /proc/self/status, for the memory benchmarks and guards ("memory within
// a small multiple of the input").
package procmem

import (
	"os"
	"strconv"
	"strings"
)

// RSS returns the process's resident set now, in bytes (VmRSS); 0 where
// /proc/self/status is not available (off Linux) or lacks the field.
func RSS() uint64 { return field("VmRSS:") }

// PeakRSS returns the process's peak resident set, in bytes (VmHWM, the
// high-water mark); 0 off Linux.
func PeakRSS() uint64 { return field("VmHWM:") }

// field returns a "Name:  N kB" line of /proc/self/status in bytes.
func field(name string) uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, name); ok {
			kb, _ := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}
