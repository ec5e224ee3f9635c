package ranked

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/internal/testgen"
)

// encoded returns ix's snapshot bytes.
func encoded(t testing.TB, ix *Index) []byte {
	t.Helper()
	ix.mu.Lock()
	defer ix.mu.Unlock()
	b, ok := ix.encodeSnapshot()
	if !ok {
		t.Fatal("encode failed")
	}
	return b
}

// A refresh that takes the nodes' text from the fold (Folded) builds the
// index a refresh reading every node from disk builds (the same snapshot
// bytes), without reading them; a fed text whose artifact_sha256 is not the
// index entry's, or that is not valid UTF-8, is not used (the node is read
// from disk); a refresh empties the fed texts.
func TestFedTextsBuildTheSameIndex(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".contextfold")
	s, err := contextfold.Open(dir, contextfold.Options{Scrub: contextfold.ScrubOff})
	if err != nil {
		t.Fatal(err)
	}
	g := testgen.New(8)
	rs, err := s.FoldBatch(g.SmallTurns(0, 300))
	if err != nil {
		t.Fatal(err)
	}
	// Two results lie: another artifact, and a text the file cannot hold.
	forged := *rs[7].Node
	other := "0"
	if forged.ArtifactSHA256[0] == '0' {
		other = "1" // another artifact whatever the fold's hash (folded_at is the clock's)
	}
	forged.RawContent, forged.ArtifactSHA256 = "forged text", other+forged.ArtifactSHA256[1:]
	bad := *rs[9].Node
	bad.RawContent = bad.RawContent + "\xff"
	fedRs := append([]*contextfold.FoldResult{}, rs...)
	fedRs[7] = &contextfold.FoldResult{Node: &forged, Entry: rs[7].Entry}
	fedRs[9] = &contextfold.FoldResult{Node: &bad, Entry: rs[9].Entry}
	Folded(s, fedRs)

	viaFed := NewIndex()
	if err := viaFed.Refresh(s); err != nil {
		t.Fatal(err)
	}
	if st := viaFed.Stats(); st.NodesFed != 298 || st.NodesRead != 2 {
		t.Fatalf("fed %d, read %d; want 298 fed, 2 read (the forged and the invalid one)", st.NodesFed, st.NodesRead)
	}
	if takeFed(s.Dir()) != nil {
		t.Fatal("the refresh left fed texts behind")
	}
	fromDisk := NewIndex()
	if err := fromDisk.Refresh(s); err != nil {
		t.Fatal(err)
	}
	if st := fromDisk.Stats(); st.NodesFed != 0 || st.NodesRead != 300 {
		t.Fatalf("fed %d, read %d; want every node read", st.NodesFed, st.NodesRead)
	}
	if !bytes.Equal(encoded(t, viaFed), encoded(t, fromDisk)) {
		t.Fatal("the index built from fed texts differs from the one built from disk")
	}
	sameAnswers(t, "fed vs disk", g, fromDisk, viaFed)

	// Later folds: fed on top of a refreshed index, the same again.
	more, err := s.FoldBatch(g.SmallTurns(300, 50))
	if err != nil {
		t.Fatal(err)
	}
	Folded(s, more)
	if err := viaFed.Refresh(s); err != nil {
		t.Fatal(err)
	}
	if err := fromDisk.Refresh(s); err != nil {
		t.Fatal(err)
	}
	if st := viaFed.Stats(); st.NodesFed != 348 || st.NodesRead != 2 {
		t.Fatalf("after more folds: fed %d, read %d", st.NodesFed, st.NodesRead)
	}
	if !bytes.Equal(encoded(t, viaFed), encoded(t, fromDisk)) {
		t.Fatal("after more folds the indexes differ")
	}
}

// TestFedTextIsTheAnalysedText: a fed node whose analysis was made of its
// very text (summary, "\n", payload) hands Refresh that analysed string
// (no second concatenation of the payload), and any other text is joined
// anew; joinedIs tells the two apart without joining.
func TestFedTextIsTheAnalysedText(t *testing.T) {
	for _, c := range []struct {
		text, summary, raw string
		want               bool
	}{
		{"s\nr", "s", "r", true}, {"\n", "", "", true}, {"s\nr\n", "s", "r\n", true}, {"s\nr", "s\nr", "", false},
		{"s r", "s", "r", false}, {"s\nx", "s", "r", false}, {"t\nr", "s", "r", false}, {"s\nr", "s", "rr", false}, {"", "", "", false},
	} {
		if got := joinedIs(c.text, c.summary, c.raw); got != c.want {
			t.Errorf("joinedIs(%q, %q, %q) = %v, want %v", c.text, c.summary, c.raw, got, c.want)
		}
	}
	e := &contextfold.Entry{ArtifactSHA256: "a"}
	an := &fedAnalysis{text: strings.Repeat("x", 10) + "\n" + "payload", done: make(chan struct{})}
	n := fedNode{artifact: "a", summary: strings.Repeat("x", 10), raw: "payload", an: an}
	got, ok := n.text(e)
	if !ok || got != an.text || unsafe.StringData(got) != unsafe.StringData(an.text) {
		t.Fatalf("text of a node analysed from its own text: %q %v, not the analysed string", got, ok)
	}
	n.an = &fedAnalysis{text: "other", done: make(chan struct{})}
	if got, ok := n.text(e); !ok || got != an.text {
		t.Fatalf("text of a node analysed from another text: %q %v, want %q", got, ok, an.text)
	}
}
