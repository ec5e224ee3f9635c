package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/contextfold/contextfold/ingest"
)

// TestIngestStandardInput: PATH "-" reads the transcript from standard
// input, as fold --input - does, with the same result as the file; binary
// or empty input is refused with nothing written. Before: "cannot read -:
// stat -: no such file or directory".
func TestIngestStandardInput(t *testing.T) {
	const path = "../../ingest/testdata/transcripts/claude-code/ledger-api-session.jsonl"
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fromFile := filepath.Join(t.TempDir(), "s")
	if _, errs, code := cli(t, "", "--dir", fromFile, "ingest", path); code != 0 {
		t.Fatalf("ingest the file: %d %s", code, errs)
	}
	fromStdin := filepath.Join(t.TempDir(), "s")
	out, errs, code := cli(t, string(data), "--dir", fromStdin, "--json", "ingest", "-")
	if code != 0 {
		t.Fatalf("ingest -: %d %s", code, errs)
	}
	var rep ingestJSON
	mustJSON(t, out, &rep)
	if rep.Format != "claude-code" || rep.Folded != 47 {
		t.Fatalf("ingest -: %+v", rep)
	}
	node := func(dir string) map[string]any {
		var n map[string]any
		raw, err := os.ReadFile(filepath.Join(dir, "cold_nodes", "step_000046.json"))
		if err != nil {
			t.Fatal(err)
		}
		mustJSON(t, string(raw), &n)
		delete(n, "folded_at") // the time of the fold, and the hash over it
		delete(n, "artifact_sha256")
		return n
	}
	if a, b := node(fromFile), node(fromStdin); !reflect.DeepEqual(a, b) {
		t.Fatalf("step 46 from the file and from standard input differ:\n%v\n%v", a, b)
	}
	for _, in := range []string{"", "\x00\x01binary"} {
		dir := filepath.Join(t.TempDir(), "s")
		if _, errs, code := cli(t, in, "--dir", dir, "ingest", "-"); code != 1 || !strings.Contains(errs, "standard input") {
			t.Errorf("ingest - of %q: %d %s", in, code, errs)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("ingest - of %q left a store: %v", in, err)
		}
	}
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// TestIngestStandardInputStreamed: standard input is parsed as it is read,
// so a transcript refused by --max-turns is read no further than the turn
// past the limit (and a few chunks of the reader). Before: it was read
// whole into memory, up to 512 MiB, before the first turn was parsed.
func TestIngestStandardInputStreamed(t *testing.T) {
	var b bytes.Buffer
	for i := 0; i < 100000; i++ {
		fmt.Fprintf(&b, `{"type":"user","uuid":"u%d","sessionId":"s","message":{"role":"user","content":"m%d"}}`+"\n", i, i)
	}
	size := b.Len()
	c := &countingReader{r: &b}
	seen := 0
	errStop := errors.New("stop")
	_, err := parseStdin(c, ingest.Options{Turn: func(ingest.Turn) error {
		if seen++; seen > 100 {
			return errStop
		}
		return nil
	}})
	if !errors.Is(err, errStop) || !strings.Contains(err.Error(), "standard input") {
		t.Fatalf("%v", err)
	}
	if c.n > 1<<20 {
		t.Fatalf("%d of %d bytes of standard input read to parse 101 turns; want at most 1 MiB", c.n, size)
	}
}

// TestIngestStandardInputErrorsNameIt: every refusal of standard input
// names it "standard input", as the parser's errors do, not "-" (the
// refusals past --max-turns and of a transcript holding no turn said
// "contextfold: -: ..."); nothing is written.
func TestIngestStandardInputErrorsNameIt(t *testing.T) {
	data, err := os.ReadFile("../../ingest/testdata/transcripts/claude-code/ledger-api-session.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, stdin string
		args        []string
	}{
		{"max-turns", string(data), []string{"--max-turns", "3"}},
		{"max-turns with min-tokens", string(data), []string{"--max-turns", "1", "--min-tokens", "1"}},
		{"no turns", `{"instance_id":"x","history":[]}` + "\n", []string{"--format", "openhands"}},
	} {
		dir := filepath.Join(t.TempDir(), "s")
		_, errs, code := cli(t, c.stdin, append([]string{"--dir", dir, "ingest", "-"}, c.args...)...)
		if code == 0 || !strings.HasPrefix(errs, "contextfold: standard input: ") {
			t.Errorf("%s: exit %d, %q; want a refusal naming standard input", c.name, code, errs)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("%s: the store was written (%v)", c.name, err)
		}
	}
}

// TestIngestStandardInputOtherSession: standard input holding another
// session than the store's is refused with a store of its own to ingest it
// into that is no directory named "-" (it suggested --dir
// STORE/sessions/-, and said "nor - name their session"; then
// STORE/sessions/stdin, a store inside the store: now STORE-stdin beside
// it); following the suggestion ingests it.
func TestIngestStandardInputOtherSession(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "s")
	first := `[{"role":"user","content":"set the port to 5433"},{"role":"assistant","content":"done"}]`
	other := `[{"role":"user","content":"rename the billing table"},{"role":"assistant","content":"renamed"}]`
	if _, errs, code := cli(t, first, "--dir", dir, "ingest", "-"); code != 0 {
		t.Fatalf("first ingest: %d %s", code, errs)
	}
	_, errs, code := cli(t, other, "--dir", dir, "ingest", "-")
	want := "contextfold --dir " + dir + "-stdin ingest -"
	if code == 0 || !strings.Contains(errs, "nor standard input name their session") || !strings.HasSuffix(strings.TrimSpace(errs), want) {
		t.Fatalf("exit %d, %q; want a refusal naming standard input, ending %q", code, errs, want)
	}
	if _, errs, code := cli(t, other, "--dir", dir+"-stdin", "ingest", "-"); code != 0 {
		t.Fatalf("the suggested ingest: %d %s", code, errs)
	}
}
