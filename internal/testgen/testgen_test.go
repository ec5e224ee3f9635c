package testgen

import (
	"reflect"
	"testing"

	"github.com/contextfold/contextfold"
)

func TestTurnIsDeterministicAndRealistic(t *testing.T) {
	g := New(7)
	sizes := 0
	for step := range 200 {
		a, b := g.Turn(step), g.Turn(step)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("step %d: two generations differ", step)
		}
		if a.StepID != step || a.Summary == "" {
			t.Fatalf("step %d: %+v", step, a)
		}
		if n := len(a.RawContent); n < 512 || n > 4096+600 {
			t.Fatalf("step %d: payload of %d bytes", step, n)
		}
		sizes += len(a.RawContent)
	}
	if g.Turn(1).RawContent == g.Turn(2).RawContent || New(8).Turn(1).RawContent == g.Turn(1).RawContent {
		t.Fatal("different steps or seeds give the same payload")
	}
	if avg := sizes / 200; avg < 1500 || avg > 3000 {
		t.Fatalf("average payload %d bytes, want about 2.3 KB", avg)
	}
	p, err := contextfold.Project(g.Turn(3), contextfold.DefaultPolicy().Hash())
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Identifiers) < 20 || len(p.Files) == 0 {
		t.Fatalf("turn 3 projects to %d identifiers, %d files", len(p.Identifiers), len(p.Files))
	}
	if len(contextfold.ScanTerms(g.Prompt(1))) < 4 {
		t.Fatalf("prompt %q has too few terms", g.Prompt(1))
	}
}

func TestVocabularyIsZipfLike(t *testing.T) {
	v := Vocabulary()
	if len(v) != VocabularySize {
		t.Fatalf("%d words", len(v))
	}
	s := New(1).src(9, 9)
	counts := map[string]int{}
	for range 100_000 {
		counts[s.word()]++
	}
	// The most frequent word is far more frequent than a mid-rank one,
	// and many distinct words occur.
	if counts[v[0]] < 50*max(1, counts[v[1000]]) && counts[v[0]] < 1000 {
		t.Fatalf("head %d vs rank 1000 %d: not Zipf-like", counts[v[0]], counts[v[1000]])
	}
	if len(counts) < 10_000 {
		t.Fatalf("only %d distinct words in 100k draws", len(counts))
	}
}
