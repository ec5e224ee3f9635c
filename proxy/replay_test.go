package proxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/contextfold/contextfold/harness"
	"github.com/contextfold/contextfold/ingest"
)

// transcriptsDir holds the real transcripts shared by the team.
const transcriptsDir = "../../shared/transcripts"

// replayPoint is one request of a replay.
type replayPoint struct {
	Messages, Client, Forwarded, Folded, Hydrated int
}

// chatMessages renders ingested turns as an OpenAI messages array, the way a
// client resends its history: a tool result becomes a "tool" message paired
// with a tool call added to the assistant message before it (as a
// function-calling client sends it); without such an assistant message it
// stays a user observation.
func chatMessages(turns []ingest.Turn) []map[string]any {
	var out []map[string]any
	lastAssistant := -1
	for _, t := range turns {
		role := t.Role
		isResult := t.Role == "tool" || t.Kind == "tool_result"
		if isResult && lastAssistant >= 0 {
			id := "call_" + itoa(t.StepID)
			name := t.Tool
			if name == "" {
				name = "tool"
			}
			args, _ := json.Marshal(map[string]string{"command": t.Command})
			a := out[lastAssistant]
			calls, _ := a["tool_calls"].([]any)
			a["tool_calls"] = append(calls, map[string]any{"id": id, "type": "function",
				"function": map[string]any{"name": name, "arguments": string(args)}})
			out = append(out, map[string]any{"role": "tool", "tool_call_id": id, "content": t.Payload})
			continue
		}
		switch role {
		case "system", "assistant", "user":
		default:
			role = "user"
		}
		if role == "assistant" {
			lastAssistant = len(out)
		} else if role == "user" {
			lastAssistant = -1
		}
		out = append(out, map[string]any{"role": role, "content": t.Payload})
	}
	return out
}

// replay sends the growing conversation through a proxy, one request before
// each assistant message (and one at the end).
func replay(t testing.TB, path string) []replayPoint {
	res, err := ingest.ParseFile(path, ingest.FormatAuto)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	msgs := chatMessages(res.Turns)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, openaiReply)
	}))
	defer up.Close()
	var points []replayPoint
	srv, err := New(Options{Dir: t.TempDir(), Upstream: up.URL, Clock: fixedClock, Logger: discardLogger(),
		OnRequest: func(r RequestRecord) {
			points = append(points, replayPoint{r.Messages, r.ClientTokens, r.ForwardedTokens, r.FoldedTokens, r.HydratedTokens})
		}})
	if err != nil {
		t.Fatal(err)
	}
	px := httptest.NewServer(srv)
	defer px.Close()
	for k := 1; k <= len(msgs); k++ {
		if k < len(msgs) && msgs[k]["role"] != "assistant" {
			continue
		}
		if msgs[k-1]["role"] == "assistant" {
			continue
		}
		// The tool calls of an assistant message are known once all their
		// results are in; send the history as it stood then.
		hist := make([]map[string]any, k)
		for i, m := range msgs[:k] {
			hist[i] = m
			if calls, ok := m["tool_calls"].([]any); ok {
				var keep []any
				for _, c := range calls {
					id := c.(map[string]any)["id"]
					for _, r := range msgs[i+1 : k] {
						if r["tool_call_id"] == id {
							keep = append(keep, c)
						}
					}
				}
				cp := map[string]any{}
				for kk, v := range m {
					cp[kk] = v
				}
				if keep == nil {
					delete(cp, "tool_calls")
				} else {
					cp["tool_calls"] = keep
				}
				hist[i] = cp
			}
		}
		body, _ := json.Marshal(map[string]any{"model": "gpt-4.1", "messages": hist})
		resp, err := http.Post(px.URL+PathOpenAI, "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%s: request %d: %s", path, k, resp.Status)
		}
	}
	return points
}

func transcripts(t testing.TB) []string {
	var files []string
	filepath.WalkDir(transcriptsDir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && !strings.HasSuffix(p, "README.md") {
			files = append(files, p)
		}
		return nil
	})
	sort.Strings(files)
	if len(files) == 0 {
		t.Skip("no transcripts in " + transcriptsDir)
	}
	return files
}

// TestReplayTranscripts replays the real transcripts through the proxy and
// checks that the forwarded conversation is smaller than what the client
// sent by the end of each. With CONTEXTFOLD_REPLAY_WRITE=1 it rewrites the
// "## Proxy replay" section of BENCHMARKS.md and proxy/replay.svg.
func TestReplayTranscripts(t *testing.T) {
	write := os.Getenv("CONTEXTFOLD_REPLAY_WRITE") == "1"
	files := transcripts(t)
	if !write && os.Getenv("CONTEXTFOLD_REPLAY_FULL") != "1" {
		// Keep the default suite fast: the transcripts under 128 kB.
		var small []string
		for _, f := range files {
			if st, err := os.Stat(f); err == nil && st.Size() < 128<<10 {
				small = append(small, f)
			}
		}
		files = small
	}
	results := map[string][]replayPoint{}
	for _, f := range files {
		if !write && testing.Short() {
			break
		}
		pts := replay(t, f)
		if len(pts) == 0 {
			t.Fatalf("%s: no requests", f)
		}
		var sc, sf int
		for _, p := range pts {
			sc += p.Client
			sf += p.Forwarded
		}
		if sf >= sc {
			t.Errorf("%s: no reduction over the replay: client %d tokens, forwarded %d", f, sc, sf)
		}
		results[strings.TrimPrefix(f, transcriptsDir+"/")] = pts
	}
	if write {
		if err := writeReplayReport(results); err != nil {
			t.Fatal(err)
		}
	}
}

func discardLogger() *slogLogger { return newDiscardLogger() }

// writeReplayReport writes the section and the plot.
func writeReplayReport(results map[string][]replayPoint) error {
	names := make([]string, 0, len(results))
	for n := range results {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("## Proxy replay\n\n")
	b.WriteString("Each real transcript in `../shared/transcripts/` (parsed by `ingest`, rendered as an OpenAI\n" +
		"messages array, tool output as user observations) is replayed through `contextfold proxy` with the\n" +
		"default harness settings (hot window 8 messages, fold block 8, fold threshold 256 tokens): one\n" +
		"request before each assistant message, the conversation growing as a client sends it. Tokens are\n" +
		"the reference estimate (characters/4) of the whole request body. Regenerate with\n" +
		"`CONTEXTFOLD_REPLAY_WRITE=1 go test ./proxy -run TestReplayTranscripts`.\n\n")
	b.WriteString("![client vs forwarded tokens per request](proxy/replay.svg)\n\n")
	b.WriteString("| transcript | requests | last request: client tokens | forwarded | reduction | all requests: client tokens | forwarded | reduction |\n|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, n := range names {
		pts := results[n]
		last := pts[len(pts)-1]
		var sc, sf int
		for _, p := range pts {
			sc += p.Client
			sf += p.Forwarded
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %.0f%% | %d | %d | %.0f%% |\n", n, len(pts), last.Client, last.Forwarded,
			100*(1-float64(last.Forwarded)/float64(last.Client)), sc, sf, 100*(1-float64(sf)/float64(sc)))
	}
	b.WriteString("\nPer request (every request of each transcript):\n\n")
	for _, n := range names {
		fmt.Fprintf(&b, "<details><summary>%s</summary>\n\n| request | messages | client tokens | forwarded tokens | folded away | hydrated |\n|---:|---:|---:|---:|---:|---:|\n", n)
		for i, p := range results[n] {
			fmt.Fprintf(&b, "| %d | %d | %d | %d | %d | %d |\n", i+1, p.Messages, p.Client, p.Forwarded, p.Folded, p.Hydrated)
		}
		b.WriteString("\n</details>\n\n")
	}
	b.WriteString(latencySection())
	if err := os.WriteFile("replay.svg", replaySVG(names, results), 0o644); err != nil {
		return err
	}
	return replaceSection("../BENCHMARKS.md", "## Proxy replay", b.String())
}

// latencySection is filled in from BENCH_PROXY (the output of the Go
// benchmark), when given.
func latencySection() string {
	out := os.Getenv("CONTEXTFOLD_BENCH_OUTPUT")
	if out == "" {
		return ""
	}
	data, err := os.ReadFile(out)
	if err != nil {
		return ""
	}
	return "### Added latency\n\n`go test ./proxy -run '^$' -bench BenchmarkProxyOverhead -benchtime 2000x` on a 500-message\n" +
		"conversation (the proxy's work before forwarding: read, parse, dispatch, splice; loopback upstream excluded):\n\n```\n" +
		strings.TrimSpace(string(data)) + "\n```\n"
}

// replaceSection replaces (or appends) the section starting with heading up
// to the next "## " heading, leaving the rest of the file alone.
func replaceSection(path, heading, section string) error {
	data, _ := os.ReadFile(path)
	s := string(data)
	i := strings.Index(s, heading+"\n")
	if i < 0 {
		if s != "" && !strings.HasSuffix(s, "\n\n") {
			s = strings.TrimRight(s, "\n") + "\n\n"
		}
		return os.WriteFile(path, []byte(s+section), 0o644)
	}
	rest := s[i+len(heading):]
	j := strings.Index(rest, "\n## ")
	tail := ""
	if j >= 0 {
		tail = rest[j+1:]
	}
	return os.WriteFile(path, []byte(s[:i]+section+tail), 0o644)
}

// replaySVG draws one small chart per transcript: client tokens (grey) and
// forwarded tokens (blue) per request.
func replaySVG(names []string, results map[string][]replayPoint) []byte {
	const w, h, pad = 360, 200, 40
	cols := 2
	rows := (len(names) + cols - 1) / cols
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="11">`+"\n", cols*w, rows*h+24)
	fmt.Fprintf(&b, `<text x="10" y="16" font-size="13">contextfold proxy replay: tokens per request — client sent (grey) vs forwarded (blue)</text>`+"\n")
	for k, n := range names {
		pts := results[n]
		x0, y0 := (k%cols)*w, (k/cols)*h+24
		maxY := 1
		for _, p := range pts {
			maxY = max(maxY, p.Client)
		}
		fmt.Fprintf(&b, `<g transform="translate(%d,%d)"><rect x="%d" y="10" width="%d" height="%d" fill="none" stroke="#ccc"/>`, x0, y0, pad, w-pad-10, h-pad-10)
		fmt.Fprintf(&b, `<text x="%d" y="8">%s</text><text x="2" y="18">%d</text><text x="2" y="%d">0</text>`, pad, n, maxY, h-pad)
		line := func(get func(replayPoint) int, color string) {
			b.WriteString(`<polyline fill="none" stroke-width="1.5" stroke="` + color + `" points="`)
			for i, p := range pts {
				x := float64(pad) + float64(i)*float64(w-pad-10)/float64(max(1, len(pts)-1))
				y := float64(h-pad) - float64(get(p))*float64(h-pad-10)/float64(maxY)
				fmt.Fprintf(&b, "%.1f,%.1f ", x, y)
			}
			b.WriteString(`"/>`)
		}
		line(func(p replayPoint) int { return p.Client }, "#999")
		line(func(p replayPoint) int { return p.Forwarded }, "#1f6fd1")
		fmt.Fprintf(&b, `<text x="%d" y="%d">requests (%d)</text></g>`+"\n", pad, h-pad+14, len(pts))
	}
	b.WriteString("</svg>\n")
	return []byte(b.String())
}

var _ = harness.DefaultHotWindow
