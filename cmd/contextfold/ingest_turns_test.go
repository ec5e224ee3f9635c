package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/contextfold/contextfold/ingest"
)

// TestIngestTooManyTurnsRefused ingests transcripts of many one-line
// messages. Folding holds about 9 KiB a turn however short (a million
// two-token messages, a 42 MB file, peaked at 9 GB resident and took 400 s),
// so past --max-turns (default DefaultMaxIngestTurns) the ingest is refused
// with exit 1, an error naming the count, the limit and the remedy, and no
// store is created; --max-turns raises the limit, --min-tokens counts only
// the turns it keeps, and a nonsensical --max-turns is refused. Before: no
// limit, the ingest ran until the machine's memory ran out.
func TestIngestTooManyTurnsRefused(t *testing.T) {
	write := func(n int) string {
		msgs := make([]map[string]string, n)
		for i := range msgs {
			role := "user"
			if i%2 == 1 {
				role = "assistant"
			}
			msgs[i] = map[string]string{"role": role, "content": "m" + itoa(i)}
		}
		b, _ := json.Marshal(msgs)
		p := filepath.Join(t.TempDir(), "messages.json")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	big := write(DefaultMaxIngestTurns + 1)
	dir := filepath.Join(t.TempDir(), "s")
	_, errs, code := cli(t, "", "--dir", dir, "ingest", big)
	if code != 1 || !strings.Contains(errs, "100001 turns") || !strings.Contains(errs, "--max-turns 100000") || !strings.Contains(errs, "nothing was written") {
		t.Fatalf("exit %d, stderr %q; want exit 1 naming 100001 turns and --max-turns 100000", code, errs)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("a refused ingest left %s behind (%v)", dir, err)
	}

	small := write(12)
	if _, errs, code := cli(t, "", "--dir", dir, "ingest", small, "--max-turns", "11"); code != 1 || !strings.Contains(errs, "12 turns") {
		t.Fatalf("--max-turns 11 on 12 turns: exit %d, %q", code, errs)
	}
	for _, v := range []string{"0", "-2"} {
		if _, errs, code := cli(t, "", "--dir", dir, "ingest", small, "--max-turns", v); code != 1 || !strings.Contains(errs, "--max-turns "+v) {
			t.Fatalf("--max-turns %s: exit %d, %q", v, code, errs)
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("a refused ingest left %s behind (%v)", dir, err)
	}
	out, errs, code := cli(t, "", "--json", "--dir", dir, "ingest", small, "--max-turns", "12")
	var rep ingestJSON
	if code != 0 {
		t.Fatalf("--max-turns 12 on 12 turns: exit %d, %q", code, errs)
	}
	mustJSON(t, out, &rep)
	if rep.Folded != 12 {
		t.Fatalf("folded %d turns, want 12", rep.Folded)
	}
}

// TestIngestNoTurnsRefused ingests transcripts that parse but hold no turn
// (an OpenAI body with an empty messages array, a Claude Code session file
// holding only its summary record): exit 1, an error saying the transcript
// holds no turns, and no store created. Before: exit 0 ("nothing folded")
// with an empty store directory left behind, while a bare empty array was
// already refused.
func TestIngestNoTurnsRefused(t *testing.T) {
	for name, body := range map[string]string{
		"messages.json":  `{"messages":[]}`,
		"session.jsonl":  `{"type":"summary","summary":"Ledger fix","leafUuid":"0b5c8e0e-3c1a-4c55-9a57-2f4f1b0c9d11"}` + "\n",
		"anthropic.json": `{"model":"claude-x","messages":[]}`,
	} {
		p := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(t.TempDir(), "s")
		out, errs, code := cli(t, "", "--dir", dir, "ingest", p)
		if code != 1 || !strings.Contains(errs, "holds no turns") || !strings.Contains(errs, "nothing was written") {
			t.Errorf("%s: exit %d, stderr %q, stdout %q; want exit 1 saying it holds no turns", name, code, errs, out)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("%s: a refused ingest left %s behind (%v)", name, dir, err)
		}
	}
}

// TestIngestStopsReadingAtMaxTurns: the parse stops at the turn past
// --max-turns, so what lies further in the transcript is never read. The
// transcript's line 501 is past the record limit: with --max-turns 100 the
// ingest is refused for its turns (the parse never reached line 501), with
// --max-turns 1000 for the record (it did), and with a record limit above
// that line's size and no turn limit it is folded whole. Before: the whole
// file was decoded first, then the turns counted.
func TestIngestStopsReadingAtMaxTurns(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 1000; i++ {
		content := "m" + itoa(i)
		if i == 500 {
			content = strings.Repeat("x", 8192)
		}
		fmt.Fprintf(&b, `{"type":"user","uuid":"u%d","sessionId":"s","message":{"role":"user","content":%q}}`+"\n", i, content)
	}
	p := filepath.Join(t.TempDir(), "session.jsonl")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "s")
	_, errs, code := cli(t, "", "--dir", dir, "ingest", p, "--max-turns", "100", "--max-record-bytes", "4096")
	if code != 1 || !strings.Contains(errs, "the transcript holds 101 turns and more, past --max-turns 100") || !strings.Contains(errs, "stopped at step 100") || !strings.Contains(errs, "nothing was written") {
		t.Fatalf("--max-turns 100: exit %d, stderr %q", code, errs)
	}
	_, errs, code = cli(t, "", "--dir", dir, "ingest", p, "--max-turns", "1000", "--max-record-bytes", "4096")
	if code != 1 || !strings.Contains(errs, "line 501 is larger than the 4.0 KiB") || !strings.Contains(errs, "--max-record-bytes") || !strings.Contains(errs, "nothing was written") {
		t.Fatalf("--max-turns 1000: exit %d, stderr %q", code, errs)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("a refused ingest left %s behind (%v)", dir, err)
	}
	for _, v := range []string{"0", "-2"} {
		if _, errs, code := cli(t, "", "--dir", dir, "ingest", p, "--max-record-bytes", v); code != 1 || !strings.Contains(errs, "--max-record-bytes "+v) {
			t.Fatalf("--max-record-bytes %s: exit %d, %q", v, code, errs)
		}
	}
	out, errs, code := cli(t, "", "--json", "--dir", dir, "ingest", p, "--max-turns", "-1", "--max-record-bytes", "16384")
	var rep ingestJSON
	if code != 0 {
		t.Fatalf("raised limits: exit %d, %q", code, errs)
	}
	mustJSON(t, out, &rep)
	if rep.Folded != 1000 {
		t.Fatalf("folded %d turns, want 1000", rep.Folded)
	}
}

// TestIngestRecordLimitEveryFormat: a record past --max-record-bytes is
// refused, naming the record, the limit and the flag, in a JSON document
// (an element of its messages array, another member) as in JSONL, an
// OpenHands run and an Aider history; nothing is written.
func TestIngestRecordLimitEveryFormat(t *testing.T) {
	big := strings.Repeat("y", 3000)
	for name, body := range map[string]string{
		"messages.json":     `[{"role":"user","content":"hi"},{"role":"assistant","content":"` + big + `"}]`,
		"anthropic.json":    `{"system":"s","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"` + big + `"}]}`,
		"run.traj":          `{"info":{"submission":"` + big + `"},"history":[{"role":"system","content":"s"},{"role":"assistant","content":"t","action":"ls"}]}`,
		"mini.traj.json":    `{"trajectory_format":"mini-swe-agent-1","messages":[{"role":"user","content":"` + big + `"}]}`,
		"output.jsonl":      `{"instance_id":"x","history":[{"id":0,"source":"agent","action":"run","args":{"command":"` + big + `"}}]}` + "\n",
		"chat.history.md":   "# aider chat started at 2025\n#### hi\n\n" + strings.Repeat(big[:60]+"\n", 50),
		"claude-code.jsonl": `{"type":"user","uuid":"a","message":{"content":"hi"}}` + "\n" + `{"type":"user","uuid":"b","message":{"content":"` + big + `"}}` + "\n",
	} {
		p := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(t.TempDir(), "s")
		_, errs, code := cli(t, "", "--dir", dir, "ingest", p, "--max-record-bytes", "2048")
		if code != 1 || !strings.Contains(errs, "larger than the 2.0 KiB") || !strings.Contains(errs, "--max-record-bytes") || !strings.Contains(errs, "nothing was written") {
			t.Errorf("%s: exit %d, stderr %q", name, code, errs)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("%s: a refused ingest left %s behind (%v)", name, dir, err)
		}
		if _, errs, code := cli(t, "", "--dir", dir, "ingest", p); code != 0 {
			t.Errorf("%s with the default limit: exit %d, %q", name, code, errs)
		}
	}
}

// TestIngestManyBadLinesListed: a transcript of a few good records among
// many torn lines is ingested (exit 0) with the first ingest.MaxProblems
// bad lines listed and the rest counted, in the JSON report and the text
// one. Before: every bad line was held and printed (a 10 MB file of five
// million torn lines took 1.2 GB and printed five million lines).
func TestIngestManyBadLinesListed(t *testing.T) {
	body := `{"type":"user","uuid":"a","sessionId":"s","message":{"role":"user","content":"hello"}}` + "\n" + strings.Repeat("{\"torn\n", 500)
	p := filepath.Join(t.TempDir(), "session.jsonl")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errs, code := cli(t, "", "--json", "--dir", filepath.Join(t.TempDir(), "s"), "ingest", p)
	var rep struct {
		Folded   int              `json:"turns_folded"`
		Problems []map[string]any `json:"problems"`
		More     int              `json:"problems_omitted"`
	}
	if code != 0 {
		t.Fatalf("exit %d, %q", code, errs)
	}
	mustJSON(t, out, &rep)
	if rep.Folded != 1 || len(rep.Problems) != ingest.MaxProblems || rep.More != 500-ingest.MaxProblems {
		t.Fatalf("folded %d, %d problems listed, %d omitted; want 1, %d, %d", rep.Folded, len(rep.Problems), rep.More, ingest.MaxProblems, 500-ingest.MaxProblems)
	}
	// A problem's keys are snake_case as every other key of the report.
	if p := rep.Problems[0]; len(p) != 2 || p["line"] != float64(2) || p["message"] == nil {
		t.Errorf("a problem in the JSON report: %v; want the keys line (2) and message", p)
	}
	out, _, code = cli(t, "", "--dir", filepath.Join(t.TempDir(), "s"), "ingest", p)
	if code != 0 || strings.Count(out, "skipped line") != ingest.MaxProblems || !strings.Contains(out, "and 400 more bad lines skipped") {
		t.Fatalf("exit %d, text report:\n%.2000s", code, out)
	}
}
