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
// exited 0 when their checks ran before either fold; then, checked again
// after the fold, a longer losing transcript had folded its extra steps.
func TestConcurrentIngestsNeverBothSucceed(t *testing.T) {
	write := func(name, word string, pairs int) string {
		var b strings.Builder
		b.WriteString("[")
		for i := range pairs {
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
	// b is longer: before the check ran under the fold's lock, a losing
	// b folded its steps past a's end before it was refused, leaving a
	// store of mixed sessions.
	a, b := write("a.json", "alpha", 600), write("b.json", "bravo", 700)
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
		// The store holds the winner's turns only: the refused run
		// folded nothing, not even the steps the winner lacks.
		win, lose, want := "alpha", "bravo", 1200
		if codes[1] == 0 {
			win, lose, want = "bravo", "alpha", 1400
		}
		nodes, err := filepath.Glob(filepath.Join(dir, "cold_nodes", "*.json"))
		if err != nil {
			t.Fatal(err)
		}
		if len(nodes) != want {
			t.Errorf("round %d: %s won, the store holds %d cold nodes, want its %d turns", round, win, len(nodes), want)
		}
		for _, n := range nodes {
			data, err := os.ReadFile(n)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(data), lose) {
				t.Fatalf("round %d: %s won, yet %s holds a turn of the refused %s transcript", round, win, filepath.Base(n), lose)
			}
		}
	}
}
