package hooks_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/contextfold/contextfold/hooks"
)

// writeSession appends n turns of a Claude Code session to w, from turn
// first: a prompt, a Bash call, its result and the assistant's answer,
// over and over (about 360 bytes a line).
func writeSession(w *bufio.Writer, first, n int) {
	for i := first; i < first+n; i++ {
		var typ string
		var msg any
		switch i % 4 {
		case 0:
			typ, msg = "user", map[string]any{"role": "user", "content": fmt.Sprintf("please look at module m%d and check the handler for request %d, then tell me what fails", i%977, i)}
		case 1:
			typ, msg = "assistant", map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_%08d", i), "name": "Bash", "input": map[string]any{"command": fmt.Sprintf("grep -n handler src/m%d/*.go | head -20", i%977)}}}}
		case 2:
			typ, msg = "user", map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": fmt.Sprintf("toolu_%08d", i-1), "content": fmt.Sprintf("src/m%d/a.go:12:func handler(w http.ResponseWriter, r *http.Request) {\nsrc/m%d/b.go:7:// handler of step %d", i%977, i%977, i)}}}
		default:
			typ, msg = "assistant", map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": fmt.Sprintf("The handler in m%d returns early when the request id %d is missing; the test at line 40 expects a 404 there.", i%977, i)}}}
		}
		line, _ := json.Marshal(map[string]any{"type": typ, "uuid": fmt.Sprintf("00000000-0000-4000-8000-%012d", i), "sessionId": "s-bench",
			"timestamp": "2026-03-02T11:00:00.000Z", "message": msg})
		w.Write(append(line, '\n'))
	}
}

// BenchmarkStopAppended is the Stop hook on a long session once its
// transcript is folded: "nothing new" (the Stop after a Stop), "nothing
// new, touched" (its times changed before each Stop), "one new turn" (a
// turn appended before each Stop). HOOKS_BENCH_TURNS sets the
// session's turns (default 10,000; the setup folds them all once, about
// 1.5 ms a turn). Before the incremental read, each Stop parsed the whole
// transcript and loaded every index entry: at 300k turns 9–10 s and
// 1.1 GB with nothing new.
func BenchmarkStopAppended(b *testing.B) {
	n := 10_000
	if s := os.Getenv("HOOKS_BENCH_TURNS"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	dir := filepath.Join(b.TempDir(), "store")
	tr := filepath.Join(b.TempDir(), "transcript.jsonl")
	appendTurns := func(first, k int) {
		f, err := os.OpenFile(tr, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			b.Fatal(err)
		}
		w := bufio.NewWriter(f)
		writeSession(w, first, k)
		if err := w.Flush(); err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
	appendTurns(0, n)
	in := &hooks.Input{SessionID: "s-bench", TranscriptPath: tr, CWD: b.TempDir(), HookEventName: "Stop"}
	if _, err := hooks.FoldTranscript(in, hooks.Options{Dir: dir}); err != nil {
		b.Fatal(err)
	}
	b.Run("nothing new", func(b *testing.B) {
		for b.Loop() {
			rep, err := hooks.FoldTranscript(in, hooks.Options{Dir: dir})
			if err != nil || rep.Folded != 0 {
				b.Fatalf("%+v, %v", rep, err)
			}
		}
	})
	// The file's fstat changed, not its bytes (touch): the bytes read
	// before are read again for their digest, which tells a rewrite in
	// place from an untouched file.
	b.Run("nothing new, touched", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			now := time.Now()
			if err := os.Chtimes(tr, now, now); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			rep, err := hooks.FoldTranscript(in, hooks.Options{Dir: dir})
			if err != nil || rep.Folded != 0 {
				b.Fatalf("%+v, %v", rep, err)
			}
		}
	})
	b.Run("one new turn", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			appendTurns(n, 1)
			n++
			b.StartTimer()
			rep, err := hooks.FoldTranscript(in, hooks.Options{Dir: dir})
			if err != nil || rep.Folded != 1 {
				b.Fatalf("%+v, %v", rep, err)
			}
		}
	})
}
