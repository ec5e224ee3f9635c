package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestConcurrentIngestsNeverBothSucceed: two ingests of different
// transcripts into one store at once (neither names its session, so they
// claim the same steps). The first fold of a step wins; the other run must
// be refused (exit 1, its turns named as another session's), never report
// "nothing new" and exit 0 with none of its turns stored. Before, the
// other-session check ran before the fold took the store's lock, and both
// exited 0 when their checks ran before either fold.
func TestConcurrentIngestsNeverBothSucceed(t *testing.T) {
	write := func(name, word string) string {
		var b strings.Builder
		b.WriteString("[")
		for i := range 600 {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `{"role":"user","content":"%s question %d about the %s parser"},{"role":"assistant","content":"%s answer %d: the %s lexer is patched"}`, word, i, word, word, i, word)
		}
		b.WriteString("]")
		p := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a, b := write("a.json", "alpha"), write("b.json", "bravo")
	for round := range 3 {
		dir := filepath.Join(t.TempDir(), ".contextfold")
		var wg sync.WaitGroup
		codes := make([]int, 2)
		outs := make([]string, 2)
		for i, f := range []string{a, b} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				out, errs, code := cli(t, "", "--dir", dir, "ingest", f)
				codes[i], outs[i] = code, out+errs
			}()
		}
		wg.Wait()
		if codes[0] == 0 && codes[1] == 0 {
			t.Fatalf("round %d: both ingests exited 0 into one store; one transcript's turns cannot be there:\n%s\n---\n%s", round, outs[0], outs[1])
		}
		if codes[0] != 0 && codes[1] != 0 {
			t.Fatalf("round %d: both refused:\n%s\n---\n%s", round, outs[0], outs[1])
		}
	}
}
