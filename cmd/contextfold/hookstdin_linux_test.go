package main

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// openPTY opens a pseudo-terminal pair (Linux /dev/ptmx): the controller,
// and the terminal a child process gets as its stdin.
func openPTY(t *testing.T) (ctl, tty *os.File) {
	t.Helper()
	ctl, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { ctl.Close() })
	var unlock int32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, ctl.Fd(), syscall.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); e != 0 {
		t.Skipf("unlockpt: %v", e)
	}
	var n uint32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, ctl.Fd(), syscall.TIOCGPTN, uintptr(unsafe.Pointer(&n))); e != 0 {
		t.Skipf("ptsname: %v", e)
	}
	tty, err = os.OpenFile("/dev/pts/"+strconv.Itoa(int(n)), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("open the terminal: %v", err)
	}
	t.Cleanup(func() { tty.Close() })
	return ctl, tty
}

// TestHookSaysWhereItsPayloadComesFrom: a user trying the hook by hand in
// a shell (`contextfold hook claude-code Stop`) had it wait, silent, for
// an end of input on the terminal; it now says at once that the hook
// reads one JSON object on stdin, which Claude Code pipes in, with a
// command to run it by hand (exit 0, a hook never blocks; 1 with
// --strict). An empty stdin was "the hook payload is not a JSON object:
// EOF"; it now says the payload is empty and what it should be. The real
// binary, its stdin a pseudo-terminal, then empty.
func TestHookSaysWhereItsPayloadComesFrom(t *testing.T) {
	bin := buildBinary(t)
	wd := t.TempDir()
	for _, strict := range []bool{false, true} {
		args := []string{"hook", "claude-code", "Stop"}
		want := 0
		if strict {
			args, want = append(args, "--strict"), 1
		}
		_, tty := openPTY(t)
		cmd := exec.Command(bin, args...)
		cmd.Dir, cmd.Stdin = wd, tty
		var errb strings.Builder
		cmd.Stderr = &errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			<-done
			t.Fatalf("strict %v: the hook still waits on a terminal after 20 s", strict)
		}
		if code := cmd.ProcessState.ExitCode(); code != want || !strings.Contains(errb.String(), "stdin is a terminal") || !strings.Contains(errb.String(), "| contextfold hook claude-code Stop") {
			t.Errorf("strict %v, a terminal: exit %d %q", strict, code, errb.String())
		}
		_, errs, code := binRunIn(t, bin, wd, " \n", args...)
		if code != want || !strings.Contains(errs, "the hook payload is empty: the hook reads one JSON object on stdin") {
			t.Errorf("strict %v, empty stdin: exit %d %q", strict, code, errs)
		}
	}
	if _, err := os.Stat(wd + "/.contextfold"); err == nil {
		t.Error("a hook without a payload made a store")
	}
}
