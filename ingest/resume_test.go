package ingest_test

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/contextfold/contextfold/ingest"
)

// readFrom reads data[:end] from the cursor at, the way a Stop hook reads a
// transcript that grew to end bytes since its last read: earlier records
// answer for the uuids and tool calls before the cursor. It returns the
// turns and the cursor for the next read.
func readFrom(data []byte, end int, at ingest.ClaudeCodeCursor, old *[]ingest.ClaudeCodeRecord) ([]ingest.Turn, ingest.ClaudeCodeCursor, error) {
	seen := map[string]bool{}
	calls := map[string]ingest.ClaudeCodeRecord{}
	for _, r := range *old {
		if r.UUID != "" {
			seen[r.UUID] = true
		}
		for _, id := range r.Calls {
			calls[id] = r
		}
	}
	at.Seen = func(uuid string) bool { return seen[uuid] }
	at.Tool = func(id string) (string, string, bool) {
		r, ok := calls[id]
		if !ok || r.Turn == nil {
			return "", "", false
		}
		return r.Turn.Tool, r.Turn.Command, true
	}
	var turns []ingest.Turn
	var recs []ingest.ClaudeCodeRecord
	_, next, err := ingest.ReadClaudeCode(io.NewSectionReader(bytes.NewReader(data[:end]), 0, int64(end)), at, func(r *ingest.ClaudeCodeRecord) error {
		if r.Turn != nil {
			turns = append(turns, *r.Turn)
		}
		if r.Complete {
			recs = append(recs, *r)
		}
		return nil
	})
	if err != nil {
		return nil, at, err
	}
	*old = append(*old, recs...)
	return turns, next, nil
}

// TestReadClaudeCodeAnySplit: a Claude Code transcript read in two parts,
// cut at any byte (a line still being written included), gives the turns
// of the parse of the whole file: the same step ids, summaries, payloads,
// tool names of results whose call is in the first part, copies skipped.
func TestReadClaudeCodeAnySplit(t *testing.T) {
	files, _ := filepath.Glob("testdata/transcripts/claude-code/*.jsonl")
	more, _ := filepath.Glob("testdata/field-reports/*.jsonl")
	files = append(files, more...)
	if len(files) < 3 {
		t.Fatalf("only %d Claude Code transcripts found", len(files))
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		// A record copied to the end (as a resumed session appends it)
		// is no new turn, in whichever part it is read.
		if i := bytes.IndexByte(data, '\n'); i > 0 {
			data = append(append(data, data[:i+1]...), data[:i+1]...)
		}
		want, err := ingest.Parse(data, ingest.FormatClaudeCode)
		if err != nil {
			t.Fatal(err)
		}
		step := max(1, len(data)/97)
		for cut := 0; cut <= len(data); cut += step {
			var old []ingest.ClaudeCodeRecord
			// A first part the parse of the whole refuses (a line cut
			// short and nothing else) is read again from the start.
			first, at, _ := readFrom(data, cut, ingest.ClaudeCodeCursor{}, &old)
			// The first read's turns up to the cursor, then the rest.
			var got []ingest.Turn
			for _, tr := range first {
				if tr.StepID < at.Step {
					got = append(got, tr)
				}
			}
			rest, end, err := readFrom(data, len(data), at, &old)
			if err != nil {
				t.Fatalf("%s cut at byte %d: %v", filepath.Base(f), cut, err)
			}
			got = append(got, rest...)
			if !reflect.DeepEqual(got, want.Turns) {
				t.Fatalf("%s cut at byte %d: %d turns, want %d; the turns differ", filepath.Base(f), cut, len(got), len(want.Turns))
			}
			if end.Offset != int64(len(data)) || end.Step != len(want.Turns) {
				t.Fatalf("%s cut at byte %d: cursor %+v at the end", filepath.Base(f), cut, end)
			}
		}
	}
}
