package ranked

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/contextfold/contextfold/internal/cachedir"
	"github.com/contextfold/contextfold/internal/testgen"
)

// A snapshot opened from the per-user cache (load, as a proxy or an MCP
// server opens it at start) has the filter of rule "typos" built beside
// the scans from its second scan (the first, a one-shot command's only
// one, starts nothing); scans and folds arriving at once, before and while it is built,
// race neither with the builder nor with each other (go test -race), and
// once every fold is in, each scan answers as an index whose filter was
// built in place: a misspelling folded while the filter was being built
// is in it. Closing the snapshot then waits for the builder.
func TestTypoFilterConcurrentAfterLoad(t *testing.T) {
	old := typoSyncTerms
	typoSyncTerms = 10
	defer func() { typoSyncTerms = old }()
	t.Setenv(cachedir.Env, t.TempDir())
	dir := t.TempDir()

	g := testgen.New(11)
	mem := NewIndex()
	turns := g.Turns(0, 300)
	for _, tn := range turns {
		mem.Add(tn.StepID, fmt.Sprint(tn.StepID), 10+len(tn.RawContent)/4, tn.Summary, tn.Summary+"\n"+tn.RawContent)
	}
	path := cachePath(dir, true)
	if path == "" {
		t.Fatal("no cache path")
	}
	if err := os.WriteFile(path, encoded(t, mem), 0o600); err != nil {
		t.Fatal(err)
	}
	words := strings.Fields("pottery painting gardening adoption counseling marathon photography volunteering")
	added := func(i int) (int, string) {
		w := words[i%len(words)]
		return 10000 + i, fmt.Sprintf("caroline: that %s%s thing again, number %d", w[:3], w[4:], i)
	}
	p := DefaultParams()
	p.Typo = 0.6
	prompts := []string{}
	for _, w := range words {
		prompts = append(prompts, "what did we say about "+w+"?")
	}

	ix := load(dir)
	if ix == nil {
		t.Fatal("snapshot not loaded")
	}
	building := func() bool {
		ix.mu.Lock()
		defer ix.mu.Unlock()
		return ix.typoBuild != nil
	}
	// A one-shot command scans once: neither opening the snapshot nor its
	// first scan starts a build it would not use.
	if building() {
		t.Fatal("load started a background build of the filter")
	}
	ix.Scan(prompts[0], p)
	if building() {
		t.Fatal("the first scan started a background build of the filter")
	}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				ix.Scan(prompts[(w+i)%len(prompts)], p)
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range 16 {
			step, text := added(i)
			ix.Add(step, fmt.Sprint(step), 12, text, text)
		}
	}()
	wg.Wait()
	ix.mu.Lock()
	b := ix.typoBuild
	if b == nil && ix.typo == nil {
		t.Error("scans after the first started no background build of the filter")
	}
	ix.mu.Unlock()
	if b != nil {
		b.snap.users.Wait() // the builder has stored its filter
	}

	// The reference: the same nodes, the filter built in place.
	typoSyncTerms = 1 << 30
	ref := NewIndex()
	for _, tn := range turns {
		ref.Add(tn.StepID, fmt.Sprint(tn.StepID), 10+len(tn.RawContent)/4, tn.Summary, tn.Summary+"\n"+tn.RawContent)
	}
	for i := range 16 {
		step, text := added(i)
		ref.Add(step, fmt.Sprint(step), 12, text, text)
	}
	typoSyncTerms = 10
	for _, q := range prompts {
		want := fmt.Sprint(ref.Scan(q, p).Picks)
		if got := fmt.Sprint(ix.Scan(q, p).Picks); got != want {
			t.Fatalf("prompt %q:\n got  %s\n want %s", q, got, want)
		}
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.typo == nil {
		t.Fatal("background filter not installed")
	}
	for text, id := range ix.vocab { // every term folded since the snapshot
		if id >= ix.nterms && typoKey(text) && !ix.typo.terms.mayHold(fnvString(fnvOffset, text)) {
			t.Fatalf("term %q folded during the build is not in the filter", text)
		}
	}
	ix.reset()
}
