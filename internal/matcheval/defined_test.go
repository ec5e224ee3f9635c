package matcheval

import (
	"path/filepath"
	"testing"
)

// Rule "tool and failure names", its definition entry (match/ranked
// aliases.go): at the end of a long real session, "where was X defined?"
// hydrates the grep output that shows X's definition line ("568: def
// _discover_files(…)") — without the entry it fell under the cut-off,
// behind the assistant's prose that says "defined" and the outputs that
// merely call X.
func TestDefinedFindsTheDefinitionLine(t *testing.T) {
	if testing.Short() {
		t.Skip("ingests a long corpus session")
	}
	dir := filepath.Join("..", "..", "ingest", "testdata", "transcripts")
	qs := []Question{{
		Session: "mini-swe-agent/corpus/pylint-dev__pylint-6528.traj.json", Class: "snake",
		Q:      "where was _discover_files defined, on what line?",
		Answer: "568:    def _discover_files(files_or_modules: Sequence[str]) -> Iterator[str]:", Output: 17,
	}}
	rs, err := RunQuestions(qs, dir, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if !rs[0].Hit {
		t.Errorf("%q: the definition line was not hydrated (cause %s; picked %v, holders %v)", qs[0].Q, rs[0].Cause, rs[0].Picked, rs[0].Holders)
	}
}
