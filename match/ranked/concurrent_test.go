package ranked

import (
	"sync"
	"testing"
)

// Analysis runs for several sessions at once in one process (the proxy):
// the plain-form transformer must not be shared between goroutines (a shared
// transform.Chain panicked with "slice bounds out of range" under 50
// concurrent proxy sessions, and the race detector flags it).
func TestAnalyzeConcurrently(t *testing.T) {
	texts := []string{"Café déjà vu naïve façade", "İstanbul ılık çalışma", "Ångström résumé coöperate", "Führer über Straße"}
	want := make([][]Term, len(texts))
	for i, s := range texts {
		analyzeQuery(s, func(tm Term) { want[i] = append(want[i], tm) })
	}
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range 200 {
				i := (g + k) % len(texts)
				var got []Term
				analyzeQuery(texts[i], func(tm Term) { got = append(got, tm) })
				if len(got) != len(want[i]) {
					errs <- texts[i]
					return
				}
				for j := range got {
					if got[j] != want[i][j] {
						errs <- texts[i]
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for s := range errs {
		t.Fatalf("concurrent analysis of %q differs from a lone one", s)
	}
}
