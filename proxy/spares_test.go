//go:build unix

package proxy

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/harness"
)

// spareInodes returns the inodes of the spare files in dir's cold_nodes/.
func spareInodes(t *testing.T, dir string) map[uint64]bool {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, contextfold.ColdNodesDir, ".spare-*"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[uint64]bool{}
	for _, p := range m {
		if fi, err := os.Stat(p); err == nil {
			out[fi.Sys().(*syscall.Stat_t).Ino] = true
		}
	}
	return out
}

// settledSpares waits for the work the proxy runs after its responses
// (harness.PrepareAhead: the spare fill) and returns the spares of dir.
// The caller waited for the record of the last request (tp.record), which
// is logged after that work was handed to the background: no timing.
func settledSpares(t *testing.T, tp *testProxy, dir string) map[uint64]bool {
	t.Helper()
	waitBackground(tp.srv)
	s := spareInodes(t, dir)
	if len(s) == 0 {
		t.Fatalf("no spare files in %s once the work after the response ended", dir)
	}
	return s
}

// TestSpareNodeFiles: after a fold event's response the proxy makes spare
// files in the session store's cold_nodes/; the next fold event writes its
// cold nodes into them (its nodes are the spares' files); the spares of a
// session leaving memory are removed, and Close removes the rest. Without
// spares the first assertion fails.
func TestSpareNodeFiles(t *testing.T) {
	up := newUpstream(t)
	tp := newProxyWith(t, up, func(o *Options) { o.Harness = harness.Config{ContextBudget: 4000}; o.MaxSessions = 1 })
	hdr := map[string]string{HeaderSession: "spares"}
	post(t, tp.http.URL+PathOpenAI, conversationOf(200, false), hdr)
	rec := tp.record(t, 1)
	if rec.WorkingSet == nil || !rec.WorkingSet.FoldEvent {
		t.Fatalf("the first request was no fold event: %+v", rec.WorkingSet)
	}
	dir := filepath.Join(tp.dir, rec.Session, "g"+itoa(rec.Generation))
	spares := settledSpares(t, tp, dir)
	had := map[string]bool{}
	olds, _ := filepath.Glob(filepath.Join(dir, contextfold.ColdNodesDir, "step_*.json"))
	for _, p := range olds {
		had[p] = true
	}
	post(t, tp.http.URL+PathOpenAI, conversationOf(400, false), hdr)
	if rec := tp.record(t, 2); rec.WorkingSet == nil || !rec.WorkingSet.FoldEvent {
		t.Fatalf("the second request was no fold event: %+v", rec.WorkingSet)
	}
	news, _ := filepath.Glob(filepath.Join(dir, contextfold.ColdNodesDir, "step_*.json"))
	fromSpare, added := 0, 0
	for _, p := range news {
		if had[p] {
			continue
		}
		added++
		if fi, err := os.Stat(p); err == nil && spares[fi.Sys().(*syscall.Stat_t).Ino] {
			fromSpare++
		}
	}
	t.Logf("%d of the fold event's %d new nodes written into the %d spares", fromSpare, added, len(spares))
	if added == 0 || fromSpare < min(added, len(spares)) {
		t.Fatalf("%d of the fold event's %d new nodes were written into the %d spares", fromSpare, added, len(spares))
	}
	if rep, err := tp.store(t, rec).Validate(); err != nil || !rep.OK() {
		t.Fatalf("validate with spares on disk: %+v, %v", rep, err)
	}

	// Another session pushes this one out of memory: its spares go.
	settledSpares(t, tp, dir)
	post(t, tp.http.URL+PathOpenAI, conversationN(200), map[string]string{HeaderSession: "other"})
	if n := len(spareInodes(t, dir)); n != 0 {
		t.Fatalf("%d spares left in the store of a session that left memory", n)
	}
	other := tp.record(t, 3)
	odir := filepath.Join(tp.dir, other.Session, "g"+itoa(other.Generation))
	settledSpares(t, tp, odir)
	if err := tp.srv.Close(); err != nil {
		t.Fatal(err)
	}
	if n := len(spareInodes(t, odir)); n != 0 {
		t.Fatalf("%d spares left after Close", n)
	}
}
