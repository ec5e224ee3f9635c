package pgtest

import (
	"os/exec"
	"syscall"
)

// setParentDeath asks the kernel to stop the server (fast shutdown) when the
// test binary dies without calling Stop (a panic, a SIGKILL), so no server is
// left behind. The temporary directory then stays in /tmp.
func setParentDeath(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGINT
}
