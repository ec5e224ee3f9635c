package contextfold_test

import (
	"testing"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/internal/testgen"
)

// BenchmarkShareSecrets50 measures ShareSecrets on one fold event's turns
// as BenchmarkFoldBatch50 folds them (50 turns of 0.5-4 KB, testgen).
//
//	go test -run '^$' -bench 'ShareSecrets50$' -benchtime 200x .
func BenchmarkShareSecrets50(b *testing.B) {
	const n = 50
	g := testgen.New(21)
	s, err := contextfold.Open(b.TempDir(), contextfold.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		turns := g.Turns(i*n, n)
		b.StartTimer()
		if _, err := s.ShareSecrets(turns); err != nil {
			b.Fatal(err)
		}
	}
}
