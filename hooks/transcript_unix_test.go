//go:build unix

package hooks_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/contextfold/contextfold"
)

// A Stop hook whose transcript_path is a device (/dev/zero), a FIFO without
// a writer, or an 8 GiB sparse file never blocks and never exits 2 (Claude
// Code reads 2 as "block"): it refuses the input at once, naming why, and
// exits 0 (1 with --strict). Before, /dev/zero grew the hook to 13 GB and
// the sparse file ended in Go's fatal out-of-memory, exit 2. The hook runs
// under a 3 GiB address-space limit, so a regression fails fast instead of
// taking the machine's memory.
func TestHugeOrSpecialTranscriptNeverBlocks(t *testing.T) {
	tmp := t.TempDir()
	fifo := filepath.Join(tmp, "fifo.jsonl")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	sparse := filepath.Join(tmp, "huge.jsonl")
	if err := os.WriteFile(sparse, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(sparse, 8<<30); err != nil {
		t.Skipf("sparse file: %v", err)
	}
	for _, c := range []struct{ path, want string }{
		{"/dev/zero", "not a regular file"}, {fifo, "not a regular file"}, {sparse, "larger than"},
	} {
		payload := fmt.Sprintf(`{"session_id":"s1","hook_event_name":"Stop","transcript_path":%q}`, c.path)
		for _, strict := range []bool{false, true} {
			args := []string{"-c", `ulimit -v 3145728 && exec "$0" "$@"`, binary, "hook", "claude-code", "Stop"}
			if strict {
				args = append(args, "--strict")
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			cmd := exec.CommandContext(ctx, "sh", args...)
			cmd.Env = append(os.Environ(), contextfold.EnvStoreDir+"="+filepath.Join(tmp, "store"))
			cmd.Stdin = strings.NewReader(payload)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			timedOut := ctx.Err() != nil
			cancel()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			want := 0
			if strict {
				want = 1
			}
			if timedOut || code != want || stdout.Len() != 0 || !strings.Contains(stderr.String(), c.want) {
				t.Errorf("%s (strict %v): exit %d (want %d), timed out %v, stdout %q, stderr %q", c.path, strict, code, want, timedOut, stdout.String(), stderr.String())
			}
		}
	}
}
