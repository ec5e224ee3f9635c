package main

import (
	"bytes"
	"compress/gzip"
	"io"
	"testing"

	"github.com/contextfold/contextfold/internal/wordnet"
)

// The table of the fixture dictionary: stems on both sides, collocations
// (line_of_work) and words never tagged (musical) without links of their
// own, the same bytes every build.
func TestBuildFixtureTable(t *testing.T) {
	db, err := wordnet.Load("../../internal/wordnet/testdata/dict")
	if err != nil {
		t.Fatal(err)
	}
	data, stems, links := build(db, 1)
	r, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	want := "job\toccup\nmarri\tmarriag wed\nmarriag\tmarri\n"
	if string(got) != want || stems != 3 || links != 4 {
		t.Errorf("table %q (%d stems, %d links), want %q (3, 4)", got, stems, links, want)
	}
	again, _, _ := build(db, 1)
	if !bytes.Equal(data, again) {
		t.Error("two builds differ")
	}
	// Untagged musical may have links, but its pertainym music is its own
	// stem ("music"): a word is never linked to itself.
	if _, n, _ := build(db, 0); n != 3 {
		t.Errorf("with -min-tags 0: %d stems, want 3", n)
	}
}
