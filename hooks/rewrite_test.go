package hooks_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/contextfold/contextfold/hooks"
)

// stopBin runs the Stop hook, the real binary, on the transcript at tr for
// the store dir, and returns its report line (--verbose).
func stopBin(t *testing.T, dir, tr string) string {
	t.Helper()
	payload, _ := json.Marshal(map[string]any{"session_id": "s-inc", "transcript_path": tr, "cwd": t.TempDir(), "hook_event_name": "Stop"})
	r := hookRaw(t, dir, "Stop", payload, "--verbose")
	if r.code != 0 || r.stdout != "" {
		t.Fatalf("Stop: exit %d, stdout %q, stderr %s", r.code, r.stdout, r.stderr)
	}
	return r.stderr
}

// TestStopReadsAMidFileRewriteWhole: a transcript rewritten in place in
// its middle after a Stop, outside the first and last 4 KiB before the
// point that Stop read to (a turn's line spoilt to the same length: one
// turn fewer before it, so every later step id moves), is read whole by
// the next Stop, the real binary, whether nothing was appended since (the
// same length), or more was (longer, the old part changed): the store is
// the one of Stops that always read the transcript whole. Before, the
// second Stop read only the bytes past the old end, as if appended, and
// folded the new turns under step ids one past a whole read's.
func TestStopReadsAMidFileRewriteWhole(t *testing.T) {
	data := appendTranscript(t)
	lineEnd := func(at int) int { return bytes.IndexByte(data[at:], '\n') + at + 1 }
	half := lineEnd(len(data) / 2)
	mid := lineEnd(len(data) / 4)
	if mid < 4096 || half-mid < 4096 {
		t.Fatalf("the spoilt line at %d is within 4 KiB of the start or of %d", mid, half)
	}
	spoil := func(b []byte) []byte {
		b = bytes.Clone(b)
		copy(b[mid:], "{{{{")
		return b
	}
	turns := regexp.MustCompile(`folded (\d+) new turns?`)
	for _, c := range []struct {
		name   string
		stages [][]byte // the transcript at each Stop after the first
	}{
		{"same length, then appended", [][]byte{spoil(data[:half]), spoil(data)}},
		{"longer, the old part changed", [][]byte{spoil(data)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			inc, whole := filepath.Join(t.TempDir(), "store"), filepath.Join(t.TempDir(), "store")
			tr := filepath.Join(t.TempDir(), "transcript.jsonl")
			for i, content := range append([][]byte{data[:half]}, c.stages...) {
				if err := os.WriteFile(tr, content, 0o644); err != nil {
					t.Fatal(err)
				}
				ri := stopBin(t, inc, tr)
				os.Remove(filepath.Join(whole, hooks.StateFile))
				rw := stopBin(t, whole, tr)
				if a, b := turns.FindString(ri), turns.FindString(rw); a != b {
					t.Errorf("Stop %d: %q, a whole read: %q", i+1, ri, rw)
				}
			}
			sameStore(t, c.name, inc, whole)
		})
	}
}
