package hooks_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/hooks"
)

// appendTranscript is a Claude Code transcript for the incremental Stop
// tests: the bundled sessions' lines, then a tool call whose result comes
// many lines later, a value a tool output reveals as a secret and an
// assistant text repeating it bare 30 lines later, and a record copied
// again at the end (a resumed session appends copies: no new turn).
func appendTranscript(t *testing.T) []byte {
	t.Helper()
	var b bytes.Buffer
	for _, f := range []string{"testdata/16-transcript.jsonl", "testdata/22-secrets-in-tool-output.jsonl", "../ingest/testdata/transcripts/claude-code/ledger-api-session.jsonl"} {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(data)
		if !bytes.HasSuffix(data, []byte("\n")) {
			b.WriteByte('\n')
		}
	}
	first := append([]byte(nil), b.Bytes()[:bytes.IndexByte(b.Bytes(), '\n')+1]...)
	n := 0
	add := func(typ string, msg map[string]any) {
		n++
		line, _ := json.Marshal(map[string]any{"type": typ, "uuid": fmt.Sprintf("inc-%d", n), "sessionId": "s-inc",
			"timestamp": "2026-03-02T11:00:00.000Z", "message": msg})
		b.Write(append(line, '\n'))
	}
	v := "Rk5m" + "Wq2zPn8xLc4vTb7h"
	add("assistant", map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": "toolu_late", "name": "Bash", "input": map[string]any{"command": "make deploy"}}}})
	add("assistant", map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": "toolu_env", "name": "Bash", "input": map[string]any{"command": "env"}}}})
	add("user", map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": "toolu_env", "content": "HOME=/root\nCLOUDFLARE_API_KEY=" + v + "\nPATH=/usr/bin"}}})
	for i := range 30 {
		add("user", map[string]any{"role": "user", "content": fmt.Sprintf("next item %d of the list", i)})
	}
	add("user", map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": "toolu_late", "content": "deployed in 41 s"}}})
	add("assistant", map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": "I checked that " + v + " is the one in use."}}})
	b.Write(first)
	return b.Bytes()
}

// stopOn runs the Stop hook on the transcript at tr for the store dir.
func stopOn(t *testing.T, dir, tr string) *hooks.FoldReport {
	t.Helper()
	rep, err := hooks.FoldTranscript(&hooks.Input{SessionID: "s-inc", TranscriptPath: tr, CWD: t.TempDir(), HookEventName: "Stop"}, hooks.Options{Dir: dir})
	if err != nil {
		t.Fatalf("Stop: %v", err)
	}
	return rep
}

// storeFiles returns the files of the store dir (but the Stop hook's
// StateFile) by path, with their bytes.
func storeFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() == hooks.StateFile {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		files[rel] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// sameStore fails unless the stores a and b hold the same files, byte for
// byte.
func sameStore(t *testing.T, what string, a, b string) {
	t.Helper()
	fa, fb := storeFiles(t, a), storeFiles(t, b)
	for p, x := range fa {
		if y, ok := fb[p]; !ok {
			t.Errorf("%s: %s only in the incremental store", what, p)
		} else if x != y {
			t.Errorf("%s: %s differs:\n%.400s\nwant\n%.400s", what, p, x, y)
		}
	}
	for p := range fb {
		if _, ok := fa[p]; !ok {
			t.Errorf("%s: %s missing from the incremental store", what, p)
		}
	}
}

// TestStopReadsAppendsAsTheWhole: a transcript appended in random chunks
// (cut anywhere, a line still being written included) and folded by a Stop
// after each gives the same store, byte for byte, as the same Stops each
// reading the whole transcript (the state deleted before each): the same
// turns and step ids, a tool result named by a call an earlier Stop read,
// a copied record skipped, and a value an earlier Stop's turn revealed
// as a secret redacted where a later one repeats it bare.
func TestStopReadsAppendsAsTheWhole(t *testing.T) {
	t.Setenv(contextfold.EnvSourceDateEpoch, "1772449200")
	data := appendTranscript(t)
	for seed := range uint64(4) {
		rng := rand.New(rand.NewPCG(seed, 7))
		cuts := []int{}
		for len(cuts) < 2+int(seed)*3 {
			cuts = append(cuts, rng.IntN(len(data)))
		}
		cuts = append(cuts, len(data))
		inc, whole := filepath.Join(t.TempDir(), "store"), filepath.Join(t.TempDir(), "store")
		tr := filepath.Join(t.TempDir(), "transcript.jsonl")
		written := 0
		for _, c := range cuts {
			if c <= written {
				continue
			}
			f, err := os.OpenFile(tr, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.Write(data[written:c]); err != nil {
				t.Fatal(err)
			}
			f.Close()
			written = c
			if bytes.Count(data[:c], []byte("\n")) == 0 {
				continue // a lone torn line: refused by either read
			}
			ri := stopOn(t, inc, tr)
			os.Remove(filepath.Join(whole, hooks.StateFile))
			rw := stopOn(t, whole, tr)
			if ri.Turns != rw.Turns || ri.Folded != rw.Folded || ri.Existing != rw.Existing || ri.Redacted != rw.Redacted {
				t.Errorf("seed %d, %d bytes: report %+v, a whole read's %+v", seed, c, ri, rw)
			}
		}
		sameStore(t, fmt.Sprintf("seed %d", seed), inc, whole)
		one := filepath.Join(t.TempDir(), "store")
		stopOn(t, one, tr)
		sameStore(t, fmt.Sprintf("seed %d, one Stop", seed), inc, one)
		if _, held := storeFilesHolding(inc, "Rk5m"+"Wq2zPn8xLc4vTb7h"); len(held) > 0 {
			t.Errorf("seed %d: these files hold the value an earlier Stop's turn revealed: %v", seed, held)
		}
	}
}

// TestStopReadsOnlyTheAppendedLines: a Stop parses the lines appended
// since the last one, not the transcript again: a bad line before the
// first Stop's end is reported (skipped) by that Stop only, and the
// appended turns are folded. Before, every Stop parsed the whole file
// (9–10 s at 300k turns).
func TestStopReadsOnlyTheAppendedLines(t *testing.T) {
	data := appendTranscript(t)
	nl := bytes.IndexByte(data, '\n') + 1
	data = append(append(bytes.Clone(data[:nl]), "{{{{ a torn line\n"...), data[nl:]...)
	half := bytes.IndexByte(data[len(data)/2:], '\n') + len(data)/2 + 1
	dir := filepath.Join(t.TempDir(), "store")
	tr := filepath.Join(t.TempDir(), "transcript.jsonl")
	if err := os.WriteFile(tr, data[:half], 0o644); err != nil {
		t.Fatal(err)
	}
	first := stopOn(t, dir, tr)
	if first.Problems != 1 {
		t.Fatalf("first Stop %+v: want the torn line skipped", first)
	}
	if err := os.WriteFile(tr, data, 0o644); err != nil {
		t.Fatal(err)
	}
	rep := stopOn(t, dir, tr)
	if rep.Problems != 0 || rep.Folded == 0 || rep.Turns <= first.Turns || rep.Existing != first.Turns {
		t.Errorf("second Stop %+v after %+v: it read the lines before the first Stop's end again", rep, first)
	}
}

// TestStopReadsARewrittenTranscriptWhole: a transcript truncated, rewritten
// at the point the last Stop read to, or replaced by another file at the
// same path is read whole (its state's digests no longer match), giving
// the store of Stops that always read it whole.
func TestStopReadsARewrittenTranscriptWhole(t *testing.T) {
	t.Setenv(contextfold.EnvSourceDateEpoch, "1772449200")
	data := appendTranscript(t)
	lineEnd := func(at int) int { return bytes.IndexByte(data[at:], '\n') + at + 1 }
	half := lineEnd(len(data) / 2)
	last := bytes.LastIndexByte(data[:half-1], '\n') + 1 // the start of the first part's last line
	other := []byte{}
	for i := range 1000 {
		line, _ := json.Marshal(map[string]any{"type": "user", "uuid": fmt.Sprintf("rot-%d", i), "sessionId": "s-rot",
			"message": map[string]any{"role": "user", "content": fmt.Sprintf("rotated session, prompt %d", i)}})
		other = append(append(other, line...), '\n')
	}
	longer, _ := json.Marshal(map[string]any{"type": "user", "uuid": "rewritten", "sessionId": "s-inc",
		"message": map[string]any{"role": "user", "content": "a record written in place of the last one, longer than it was " + strings.Repeat("x", 200)}})
	for _, c := range []struct {
		name  string
		after []byte // the transcript at the second Stop
	}{
		{"truncated", data[:lineEnd(len(data)/4)]},
		{"truncated then grown past the end", append(bytes.Clone(data[:lineEnd(len(data)/4)]), data[lineEnd(len(data)/3):]...)},
		{"last line rewritten", append(append(bytes.Clone(data[:last]), append(longer, '\n')...), data[half:]...)},
		{"replaced by another session", other},
	} {
		t.Run(c.name, func(t *testing.T) {
			inc, whole := filepath.Join(t.TempDir(), "store"), filepath.Join(t.TempDir(), "store")
			tr := filepath.Join(t.TempDir(), "transcript.jsonl")
			for _, content := range [][]byte{data[:half], c.after} {
				if err := os.WriteFile(tr, content, 0o644); err != nil {
					t.Fatal(err)
				}
				stopOn(t, inc, tr)
				os.Remove(filepath.Join(whole, hooks.StateFile))
				stopOn(t, whole, tr)
			}
			sameStore(t, c.name, inc, whole)
		})
	}
}
