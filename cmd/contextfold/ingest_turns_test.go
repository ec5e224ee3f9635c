package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
	var rep struct {
		Folded int `json:"turns_folded"`
	}
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
