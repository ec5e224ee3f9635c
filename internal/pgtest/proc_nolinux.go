//go:build !linux

package pgtest

import "os/exec"

// setParentDeath does nothing outside Linux: a test binary killed without
// calling Stop leaves its server running there.
func setParentDeath(*exec.Cmd) {}
