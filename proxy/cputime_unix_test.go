//go:build unix

package proxy

import (
	"syscall"
	"time"
)

// processCPU is the CPU time (user + system) this process has used so far,
// for the memory benchmarks' cpu-s (the machine is shared: wall time varies
// with the load, CPU time much less).
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
