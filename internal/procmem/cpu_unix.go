//go:build unix

package procmem

import (
	"syscall"
	"time"
)

// CPU returns the CPU time (user + system) this process has used so far;
// 0 when getrusage fails. Benchmarks on a shared machine report it beside
// wall time, which varies with the load much more.
func CPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// UserCPU returns the user CPU time this process has used so far (CPU
// without the time spent in the kernel, whose share of a file system's
// work varies with the machine: a new file in a directory whose block
// group is short of free inodes costs ~0.5 ms of kernel time); 0 when
// getrusage fails.
func UserCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano())
}
