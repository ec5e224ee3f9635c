//go:build !unix

package procmem

import "time"

// CPU is unknown off Unix: 0.
func CPU() time.Duration { return 0 }

// UserCPU is unknown off Unix: 0.
func UserCPU() time.Duration { return 0 }
