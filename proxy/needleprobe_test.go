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
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/harness"
	"github.com/contextfold/contextfold/ingest"
	"github.com/contextfold/contextfold/internal/matcheval"
	"github.com/contextfold/contextfold/match"
	"github.com/contextfold/contextfold/scrub"
)

// wireFormat is how one client sends a conversation: its API, the path it
// posts to, and the notes it wraps around the human's prompt.
type wireFormat struct {
	name  string // the client
	api   API
	path  string
	notes string // prepended to the prompt, as the client sends it
}

// wireFormats are the clients of the end-of-session needle probes: Claude
// Code (Anthropic Messages: tool_use blocks in the assistant's message,
// tool_result blocks in a user message, a todo reminder and a CLAUDE.md
// excerpt around the prompt), Codex (OpenAI Responses: function_call and
// function_call_output items, an environment context), Qwen Code (OpenAI
// Chat Completions: tool_calls and tool messages, a system reminder).
var wireFormats = []wireFormat{
	{"claude-code", APIAnthropic, PathAnthropic,
		"<system-reminder>\nThis is a reminder that your todo list is currently empty. DO NOT mention this to the user explicitly because they are not aware of it. If you are working on tasks that would benefit from a todo list please use the TodoWrite tool to create one. If not, please feel free to ignore.\n</system-reminder>\n" +
			"<system-reminder>\nAs you answer the user's questions, you can use the following context:\n# claudeMd\nContents of /home/dev/work/project/CLAUDE.md (project instructions, checked into the codebase):\n\n- Run `make test` before committing; tests use pytest-xdist.\n</system-reminder>\n"},
	{"codex", APIResponses, PathResponses,
		"<environment_context>\n  <cwd>/home/dev/work/project</cwd>\n  <approval_policy>on-request</approval_policy>\n  <sandbox_mode>workspace-write</sandbox_mode>\n  <shell>bash</shell>\n</environment_context>\n"},
	{"qwen-code", APIOpenAI, PathOpenAI,
		"<system-reminder>\nThe current date is: Tuesday, December 1, 2026. Working directory: /home/dev/work/project\n</system-reminder>\n"},
}

// responsesReply is a Responses API reply of one assistant message.
const responsesReply = `{"id":"resp_1","object":"response","created_at":1,"status":"completed","model":"gpt-5-codex","output":[{"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"ok","annotations":[]}]}],"usage":{"input_tokens":1,"output_tokens":1,"total_tokens":2}}`

// wireRequest is the body a client of format f sends with conversation
// msgs (Chat Completions messages, history(…) applied; the Responses
// format renders them as Codex does, responsesItems) and, when q is not
// "", the human's question: the client's notes and q, as text blocks of
// one user message (Anthropic) or one text (the others).
func wireRequest(f wireFormat, system string, msgs []map[string]any, q string) []byte {
	var req map[string]any
	switch f.api {
	case APIAnthropic:
		if q != "" {
			msgs = append(msgs[:len(msgs):len(msgs)], map[string]any{"role": "user", "content": []any{
				map[string]any{"type": "text", "text": f.notes}, map[string]any{"type": "text", "text": q}}})
		}
		req = map[string]any{"model": "claude-sonnet-4-5", "max_tokens": 4096, "messages": msgs}
		if system != "" {
			req["system"] = system
		}
	case APIResponses:
		instructions, items := responsesItems(msgs, nil)
		if q != "" {
			items = append(items, map[string]any{"type": "message", "role": "user",
				"content": []any{map[string]any{"type": "input_text", "text": f.notes + q}}})
		}
		req = map[string]any{"model": "gpt-5-codex", "input": items}
		if instructions != "" {
			req["instructions"] = instructions
		}
	default:
		if q != "" {
			msgs = append(msgs[:len(msgs):len(msgs)], map[string]any{"role": "user", "content": f.notes + q})
		}
		req = map[string]any{"model": "qwen3-coder-plus", "messages": msgs}
	}
	b, _ := json.Marshal(req)
	return b
}

// rawClaudeCode returns a Claude Code transcript's conversation as Claude
// Code sent it to the Anthropic Messages API — the records' own message
// objects (thinking with its signature, tool_use blocks, tool_result blocks
// in user messages), consecutive records of one role joined into one
// message, side chains and system records left out — and one turn per
// message holding the text the proxy folds of it (its text blocks and tool
// results), from which the probes are generated.
func rawClaudeCode(t testing.TB, path string) ([]map[string]any, []contextfold.Turn) {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var msgs []map[string]any
	for _, line := range bytes.Split(data, []byte("\n")) {
		var rec struct {
			Type        string `json:"type"`
			IsSidechain bool   `json:"isSidechain"`
			Message     struct {
				Role    string `json:"role"`
				Content any    `json:"content"`
			} `json:"message"`
		}
		if len(bytes.TrimSpace(line)) == 0 || json.Unmarshal(line, &rec) != nil || rec.IsSidechain || rec.Type != "user" && rec.Type != "assistant" {
			continue
		}
		blocks, ok := rec.Message.Content.([]any)
		if !ok {
			text, _ := rec.Message.Content.(string)
			blocks = []any{map[string]any{"type": "text", "text": text}}
		}
		if n := len(msgs); n > 0 && msgs[n-1]["role"] == rec.Message.Role {
			msgs[n-1]["content"] = append(msgs[n-1]["content"].([]any), blocks...)
			continue
		}
		msgs = append(msgs, map[string]any{"role": rec.Message.Role, "content": blocks})
	}
	turns := make([]contextfold.Turn, len(msgs))
	for i, m := range msgs {
		var parts []string
		for _, b := range m["content"].([]any) {
			bm := b.(map[string]any)
			switch bm["type"] {
			case "text":
				parts = append(parts, bm["text"].(string))
			case "tool_result":
				switch c := bm["content"].(type) {
				case string:
					parts = append(parts, c)
				case []any:
					for _, x := range c {
						if xm, ok := x.(map[string]any); ok && xm["type"] == "text" {
							parts = append(parts, xm["text"].(string))
						}
					}
				}
			}
		}
		turns[i] = contextfold.Turn{StepID: i, RawContent: strings.Join(parts, "\n")}
	}
	return msgs, turns
}

// storedHas reports whether the store's cold nodes hold one of the
// encodings of a line.
func storedHas(stored string, encodings ...string) bool {
	for _, e := range encodings {
		if strings.Contains(stored, e) {
			return true
		}
	}
	return false
}

// wireProbeResult is one end-of-session question and what reached the
// upstream.
type wireProbeResult struct {
	matcheval.Probe
	InPrompt bool  // an answer line was still verbatim in the prompt: not a question of recall
	Hit      bool  // an answer line was in the hydration
	Steps    []int // the steps hydrated, in order
	Tokens   int   // the hydration's size as forwarded (characters/4)
	// Stored: an answer line is in a cold node of the session's store
	// (as the proxy encodes it); false when scrubbing redacted it.
	Stored bool
}

// hydratedStepRE finds the step ids of the hydration elements in a
// forwarded body (JSON-encoded by the proxy: quotes escaped).
var hydratedStepRE = regexp.MustCompile(`<contextfold-hydration step_id=\\"(\d+)\\"`)

// wireNeedleProbes replays a transcript's turns in f's wire format through
// a real proxy (a loopback upstream; one request before each of the
// model's turns, as the client sends its growing history, with the
// harness config cfg), then asks, at the end of the session,
// matcheval.GenerateNeedleProbes' questions about tokens of every needle
// class held by at most three turns of the folded first half (at most
// perSession of them, spread evenly), each wrapped in the client's notes.
// A probe hits when a line holding the token (its answer line or an Also
// line) is in the hydration the upstream received.
func wireNeedleProbes(t *testing.T, name string, turns []ingest.Turn, f wireFormat, cfg harness.Config, perSession int) []wireProbeResult {
	cf := make([]contextfold.Turn, len(turns))
	for i, tt := range turns {
		cf[i] = contextfold.Turn{StepID: tt.StepID, Summary: tt.Summary, RawContent: tt.Payload}
	}
	var system string
	var msgs []map[string]any
	if f.api == APIAnthropic {
		system, msgs = anthropicMessages(turns)
	} else {
		msgs = chatMessages(turns)
	}
	return wireProbeSession(t, name, cf, system, msgs, f, cfg, perSession)
}

// withoutRedacted drops the probes whose token the proxy's scrubber
// redacts in its turn (the value of a password): the store never holds it
// and the model never sees it, by design, so it is no question of recall.
func withoutRedacted(t *testing.T, name string, turns []contextfold.Turn, probes []matcheval.Probe) []matcheval.Probe {
	t.Helper()
	sc, err := scrub.New()
	if err != nil {
		t.Fatal(err)
	}
	text := map[int]string{}
	for _, tr := range turns {
		text[tr.StepID] = tr.Summary + "\n" + tr.RawContent
	}
	kept := make([]matcheval.Probe, 0, len(probes))
	for _, p := range probes {
		if tx, ok := text[p.Step]; ok && !strings.Contains(strings.ToLower(sc.Scrub(tx).Text), strings.ToLower(p.Identifier)) {
			t.Logf("%s: the probe of turn %d asks about %q, which scrubbing redacts: not asked", name, p.Step, p.Identifier)
			continue
		}
		kept = append(kept, p)
	}
	return kept
}

// wireProbeSession is wireNeedleProbes over a conversation already in f's
// messages (Anthropic Messages for Claude Code, Chat Completions for the
// others; the Responses format renders them as Codex does) with system
// prompt system; the probes are generated from turns.
func wireProbeSession(t *testing.T, name string, turns []contextfold.Turn, system string, msgs []map[string]any, f wireFormat, cfg harness.Config, perSession int) []wireProbeResult {
	probes := withoutRedacted(t, name, turns, matcheval.GenerateNeedleProbes(name, turns))
	if perSession > 0 && len(probes) > perSession {
		kept := make([]matcheval.Probe, 0, perSession)
		for k := 0; k < perSession; k++ {
			kept = append(kept, probes[k*len(probes)/perSession])
		}
		probes = kept
	}
	return wireAsk(t, name, system, msgs, f, cfg, probes)
}

// wireAsk replays a conversation already in f's messages through a real
// proxy (a loopback upstream; one request before each of the model's
// turns) with the harness config cfg, then asks each probe's question at
// its end, wrapped in the client's notes, and reports what reached the
// upstream.
func wireAsk(t *testing.T, name string, system string, msgs []map[string]any, f wireFormat, cfg harness.Config, probes []matcheval.Probe) []wireProbeResult {
	if len(probes) == 0 {
		return nil
	}
	api := f.api
	if api == APIResponses {
		api = APIOpenAI // rendered from the Chat Completions history
	}
	var mu sync.Mutex
	var fwd []byte
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		fwd = b
		mu.Unlock()
		switch f.api {
		case APIAnthropic:
			io.WriteString(w, anthropicReply)
		case APIResponses:
			io.WriteString(w, responsesReply)
		default:
			io.WriteString(w, openaiReply)
		}
	}))
	defer up.Close()
	done := make(chan struct{}, 1)
	dir := t.TempDir()
	if d := os.Getenv("CONTEXTFOLD_REPLAY_KEEP"); d != "" {
		dir = filepath.Join(d, f.name) // keep the session stores for a look afterwards
	}
	srv, err := New(Options{Dir: dir, Upstream: up.URL, Clock: fixedClock, Logger: discardLogger(), Harness: cfg,
		OnRequest: func(RequestRecord) { done <- struct{}{} }})
	if err != nil {
		t.Fatal(err)
	}
	// Its work after the responses (harness.PrepareAhead, the sessions'
	// saved state) ends before the directory goes: without it the
	// temporary directory's removal raced that work ("directory not
	// empty").
	defer srv.Close()
	px := httptest.NewServer(srv)
	defer px.Close()
	send := func(body []byte) string {
		resp, err := http.Post(px.URL+f.path, "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		<-done
		if resp.StatusCode != 200 {
			t.Fatalf("%s (%s): %s", name, f.name, resp.Status)
		}
		mu.Lock()
		defer mu.Unlock()
		return string(fwd)
	}
	for k := 1; k < len(msgs); k++ {
		if msgs[k]["role"] == "assistant" && msgs[k-1]["role"] != "assistant" {
			send(wireRequest(f, system, history(msgs, k, api), ""))
		}
	}
	end := history(msgs, len(msgs), api)
	// What the store holds after a question's request (its fold event
	// included): a line scrubbing redacted (a password's value, learned
	// from another turn) is in no cold node, by design.
	stored := func() string {
		var b strings.Builder
		filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.Contains(p, "cold_nodes") {
				if data, err := os.ReadFile(p); err == nil {
					b.Write(data)
				}
			}
			return nil
		})
		return b.String()
	}
	var out []wireProbeResult
	for _, p := range probes {
		got := send(wireRequest(f, system, end, p.Question))
		r := wireProbeResult{Probe: p}
		// The question's own hydration follows the question (in its
		// message); whatever precedes the question is the prompt.
		// The question's own hydration follows the question, in its
		// message: from the first element after the question to the last
		// closing tag. The rest of the body but the question is the
		// prompt (the system prompt may follow the messages).
		eq := strings.Trim(string(encodeString(p.Question)), `"`)
		qi := strings.LastIndex(got, eq)
		if qc, _ := json.Marshal(p.Question); qi < 0 {
			eq = strings.Trim(string(qc), `"`) // as the client encoded it
			qi = strings.LastIndex(got, eq)
		}
		if qi < 0 {
			t.Fatalf("%s (%s): the question did not reach the upstream", name, f.name)
		}
		hydration, prompt := "", got[:qi]+got[qi+len(eq):]
		if hy := strings.Index(got[qi:], harness.HydrationOpen); hy >= 0 {
			hy += qi
			end := strings.LastIndex(got, harness.HydrationClose) + len(harness.HydrationClose)
			hydration, prompt = got[hy:end], got[:qi]+got[qi+len(eq):hy]+got[end:]
			r.Tokens = contextfold.TokenEstimate(hydration)
			for _, m := range hydratedStepRE.FindAllStringSubmatch(hydration, -1) {
				var st int
				fmt.Sscan(m[1], &st)
				r.Steps = append(r.Steps, st)
			}
		}
		for _, line := range append([]string{p.Answer}, p.Also...) {
			asClient, _ := json.Marshal(line)
			proxied := strings.Trim(string(encodeString(line)), `"`)
			if strings.Contains(prompt, strings.Trim(string(asClient), `"`)) || strings.Contains(prompt, proxied) {
				r.InPrompt = true
			}
			if strings.Contains(hydration, proxied) {
				r.Hit = true
			}
			if r.Hit || !r.InPrompt && !r.Stored && storedHas(stored(), proxied, strings.Trim(string(asClient), `"`)) {
				r.Stored = true
			}
		}
		out = append(out, r)
	}
	return out
}

// probeTally counts wire probes that ask about a turn out of the prompt.
type probeTally struct{ probes, hits, inPrompt, tokens int }

func (c probeTally) String() string {
	if c.probes == 0 {
		return fmt.Sprintf("0 / 0 (in prompt %d)", c.inPrompt)
	}
	return fmt.Sprintf("%d / %d (%.1f %%; in prompt %d; %d tokens a probe)", c.hits, c.probes, 100*float64(c.hits)/float64(c.probes), c.inPrompt, c.tokens/c.probes)
}

func (c *probeTally) add(r wireProbeResult) {
	if !r.InPrompt {
		c.tokens += r.Tokens
	}
	switch {
	case r.InPrompt:
		c.inPrompt++
	case r.Hit:
		c.probes++
		c.hits++
	default:
		c.probes++
	}
}

// needleProbeConfig folds every message older than the hot window (the
// harness's fixed window: FoldBlock set; small messages too), so that the first half of even
// the shortest bundled session has left the prompt; the hydration of a
// turn is then bounded by the store policy alone (3,000 tokens a node,
// 3,500 a turn), as under the default context budget (whose hydration
// share, 40,000 × 20 %, is above the policy's per-turn budget).
var needleProbeConfig = harness.Config{FoldBlock: harness.DefaultFoldBlock, MinFoldTokens: -1}

// TestWireNeedleProbes is the end-of-session needle probe in every
// client's wire format through the real proxy: every bundled transcript
// is replayed as Claude Code (Anthropic Messages), Codex (Responses) and
// Qwen Code (Chat Completions) send it, and at its end questions quote a
// token of every needle class (URL, e-mail, timestamp, version, hash,
// decimal, path, slash pair, snake_case, CamelCase, kebab-case, quoted
// string) held by at most three turns of the folded first half, each
// wrapped in the client's notes. A hit is a line holding the token — not
// only its node — in the hydration the upstream received (a long node is
// focused: the line must be in its window). Wanted: at least 95 % of the
// probes in every format, every quoted string; and different tokens
// hydrate different nodes (no node hydrated first for more than half
// of a session's probes, when their answers lie in more nodes).
//
// By default the Claude Code transcript runs in the three formats (about
// 20 s); every transcript with CONTEXTFOLD_REPLAY_FULL=1 (a few minutes).
// CONTEXTFOLD_REPLAY_DEBUG=1 logs every miss.
func TestWireNeedleProbes(t *testing.T) {
	skipReplayUnderRace(t)
	if testing.Short() {
		t.Skip("replay skipped in -short mode")
	}
	full := os.Getenv("CONTEXTFOLD_REPLAY_FULL") == "1"
	only := os.Getenv("CONTEXTFOLD_REPLAY_ONLY")
	var files []string
	filepath.WalkDir(transcriptsDir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() && d.Name() == "corpus" {
			return filepath.SkipDir
		}
		if err == nil && !d.IsDir() && (!strings.HasSuffix(p, ".md") || strings.HasSuffix(p, ".history.md")) {
			files = append(files, p)
		}
		return nil
	})
	sort.Strings(files)
	byFormat := map[string]*probeTally{}
	byClass := map[string]map[string]*probeTally{}
	var lines []string
	for _, file := range files {
		name := strings.TrimPrefix(file, transcriptsDir+"/")
		if !full && !strings.HasPrefix(name, "claude-code/") || !strings.Contains(name, only) {
			continue
		}
		res, err := ingest.ParseFile(file, ingest.FormatAuto)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		type run struct {
			f    wireFormat
			name string
			rs   []wireProbeResult
		}
		var runs []run
		for _, f := range wireFormats {
			runs = append(runs, run{f, name, wireNeedleProbes(t, name, res.Turns, f, needleProbeConfig, 60)})
		}
		if res.Format == ingest.FormatClaudeCode {
			// And as Claude Code itself sent it: the records' messages
			// (fewer, larger messages: a hot window of 2, so that the
			// first half has left the prompt).
			msgs, turns := rawClaudeCode(t, file)
			cfg := needleProbeConfig
			cfg.HotWindow = 2
			runs = append(runs, run{wireFormats[0], name + " (as sent)", wireProbeSession(t, name, turns, "", msgs, wireFormats[0], cfg, 60)})
		}
		for _, x := range runs {
			f, name, rs := x.f, x.name, x.rs
			if byFormat[f.name] == nil {
				byFormat[f.name] = &probeTally{}
				byClass[f.name] = map[string]*probeTally{}
			}
			var session probeTally
			first := map[int]int{}
			answers := map[int]bool{}
			for _, r := range rs {
				session.add(r)
				byFormat[f.name].add(r)
				if byClass[f.name][r.Class] == nil {
					byClass[f.name][r.Class] = &probeTally{}
				}
				byClass[f.name][r.Class].add(r)
				if r.InPrompt {
					continue
				}
				answers[r.Step] = true
				if len(r.Steps) > 0 {
					first[r.Steps[0]]++
				}
				if !r.Hit && (r.Class == "quoted" || os.Getenv("CONTEXTFOLD_REPLAY_DEBUG") != "") {
					t.Logf("%s (%s): missed %s %q (turn %d): hydrated %v; answer %.120q", name, f.name, r.Class, r.Identifier, r.Step, r.Steps, r.Answer)
				}
			}
			for st, n := range first {
				if len(answers) > 2 && session.probes >= 8 && 2*n > session.probes {
					t.Errorf("%s (%s): step %d hydrated first for %d of %d probes, whose answers lie in %d turns", name, f.name, st, n, session.probes, len(answers))
				}
			}
			lines = append(lines, fmt.Sprintf("| %s | %s | %s |", name, f.name, session))
		}
	}
	var b strings.Builder
	b.WriteString("\n| transcript | client | answer line hydrated |\n|---|---|---|\n")
	for _, l := range lines {
		b.WriteString(l + "\n")
	}
	b.WriteString("\n| client | class | answer line hydrated |\n|---|---|---|\n")
	for _, f := range wireFormats {
		if byFormat[f.name] == nil {
			continue
		}
		for _, c := range matcheval.NeedleClasses {
			if x := byClass[f.name][c.Name]; x != nil {
				fmt.Fprintf(&b, "| %s | %s | %s |\n", f.name, c.Name, x)
			}
		}
		fmt.Fprintf(&b, "| %s | all | %s |\n", f.name, byFormat[f.name])
		// Every probe quotes a token held by at most three turns: each
		// class of needle is owed 100 %, whatever its punctuation.
		for _, c := range matcheval.NeedleClasses {
			if x := byClass[f.name][c.Name]; x != nil && x.hits < x.probes {
				t.Errorf("%s: %s needles %d of %d reached the model", f.name, c.Name, x.hits, x.probes)
			}
		}
	}
	t.Log(b.String())
}

// A client that rewrites its latest prompt (the human edits the question
// and sends it again, or an evaluation asks several questions at the end of
// one history) sends a new message where the earlier prompt was: that
// message is no longer the host of the earlier prompt's hydration, which
// must not come back in it. Before, the earlier question's hydration stayed
// "in its host message" by position, so every later question at that
// position carried the first one's nodes — different questions, the same
// nodes — and, when a later question hydrated nothing, only those.
func TestRewrittenPromptDropsItsHydration(t *testing.T) {
	for _, f := range wireFormats {
		t.Run(f.name, func(t *testing.T) {
			up := newUpstream(t)
			cfg := smallWindow
			cfg.Match = match.Ranked // "write a haiku" asks about nothing
			tp := newProxy(t, up, cfg)
			turns := []ingest.Turn{
				{StepID: 0, Role: "user", Kind: "prompt", Payload: "build the project"},
				{StepID: 1, Role: "assistant", Kind: "tool_call", Tool: "Bash", Command: "make build", Payload: "make build"},
				{StepID: 2, Role: "tool", Kind: "tool_result", Tool: "Bash", Payload: bigLog("frobnicator", 200)},
				{StepID: 3, Role: "assistant", Kind: "response", Payload: "Build finished."},
			}
			var system string
			var msgs []map[string]any
			api := f.api
			if f.api == APIAnthropic {
				system, msgs = anthropicMessages(turns)
			} else {
				msgs, api = chatMessages(turns), APIOpenAI
			}
			hist := history(msgs, len(msgs), api)
			send := func(q string) string {
				resp, err := http.Post(tp.http.URL+f.path, "application/json", bytes.NewReader(wireRequest(f, system, hist, q)))
				if err != nil {
					t.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					t.Fatalf("status %s", resp.Status)
				}
				return string(up.last(t).Body)
			}
			if got := send("why did the frobnicator module warn?"); !strings.Contains(got, harness.HydrationOpen) {
				t.Fatalf("the first question hydrated nothing: %.300s", got)
			}
			for _, q := range []string{"write a haiku about autumn leaves", "and what about the autumn haiku, once more?"} {
				if got := send(q); strings.Contains(got, harness.HydrationOpen) {
					i := strings.Index(got, harness.HydrationOpen)
					t.Errorf("%q (rewriting the earlier question) carries a hydration: %.200s", q, got[i:])
				}
			}
		})
	}
}
