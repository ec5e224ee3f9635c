//go:build !unix

package contextfold_test

import "time"

// processCPU is unknown here (0): the cpu-s/op metric reads 0.
func processCPU() time.Duration { return 0 }
