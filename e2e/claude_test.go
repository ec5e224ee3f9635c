package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/harness"
	"github.com/contextfold/contextfold/internal/scripted"
	"github.com/contextfold/contextfold/match"
	"github.com/contextfold/contextfold/proxy"
)

// claudeEnv is the environment that points Claude Code at baseURL with no
// outside traffic: a dummy key, non-essential traffic (telemetry, update
// checks, error reports) off, sandbox mode (the tests may run as root, which
// --dangerously-skip-permissions otherwise refuses) and a private HOME.
func claudeEnv(home, baseURL string) []string {
	return []string{
		"HOME=" + home,
		"ANTHROPIC_BASE_URL=" + baseURL,
		"ANTHROPIC_API_KEY=sk-ant-dummy-e2e",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_AUTOUPDATER=1",
		"DISABLE_TELEMETRY=1",
		"DISABLE_ERROR_REPORTING=1",
		"IS_SANDBOX=1",
		"BASH_MAX_OUTPUT_LENGTH=60000",
	}
}

// claudeResult is the part of `claude -p --output-format json` we read.
type claudeResult struct {
	Type      string `json:"type"`
	Subtype   string `json:"subtype"`
	IsError   bool   `json:"is_error"`
	Result    string `json:"result"`
	SessionID string `json:"session_id"`
	NumTurns  int    `json:"num_turns"`
}

func runClaude(t *testing.T, bin, work string, env []string, prompt, resume string) claudeResult {
	t.Helper()
	args := []string{"-p", prompt, "--output-format", "json", "--dangerously-skip-permissions"}
	if resume != "" {
		args = append(args, "--resume", resume)
	}
	r := runAgent(t, 4*time.Minute, work, env, bin, args...)
	var res claudeResult
	if err := json.Unmarshal([]byte(strings.TrimSpace(r.Stdout)), &res); err != nil || r.Err != nil {
		t.Fatalf("claude failed: %v / %v\nstdout: %s\nstderr: %s", r.Err, err, tail(r.Stdout, 2000), tail(r.Stderr, 2000))
	}
	if res.IsError || res.SessionID == "" {
		t.Fatalf("claude reported an error: %+v\nstderr: %s", res, tail(r.Stderr, 2000))
	}
	return res
}

// proxyUnder is the contextfold proxy in front of a scripted upstream,
// recording every request's accounting.
type proxyUnder struct {
	dir    string
	srv    *proxy.Server
	http   *httptest.Server
	mu     sync.Mutex
	recs   []proxy.RequestRecord
	client [][]byte // every request body the agent sent to the proxy
	paths  []string // the path of each
	// inFlight counts the requests whose handler has not returned;
	// idle is signalled, under mu, when it drops to 0. The proxy logs a
	// request's record as its handler ends, which may be just after the
	// agent read the response and exited: records waits for it.
	inFlight int
	idle     *sync.Cond
}

// e2eBudget is the proxy's context budget in these tests (tokens, the
// store's token_counter): below the sessions' peak (33k–46k tokens with the
// agents' system prompts and tool definitions), so that fold events happen.
const e2eBudget = 28000

func newProxy(t *testing.T, up *scripted.Server) *proxyUnder { return newProxyBudget(t, up, e2eBudget) }

// newProxyBudget is newProxy with a context budget of budget tokens.
func newProxyBudget(t *testing.T, up *scripted.Server, budget int) *proxyUnder {
	t.Helper()
	p := &proxyUnder{dir: t.TempDir()}
	p.idle = sync.NewCond(&p.mu)
	if keep := os.Getenv("CF_E2E_KEEP"); keep != "" {
		// Keep the proxy's session stores for a look afterwards
		// (contextfold scan --match ranked --dir …).
		p.dir = filepath.Join(keep, t.Name())
		if err := os.MkdirAll(p.dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	srv, err := proxy.New(proxy.Options{
		Dir:      p.dir,
		Upstream: up.URL,
		Harness:  harness.Config{ContextBudget: budget},
		Logger:   slog.New(slog.NewTextHandler(io.Discard, nil)),
		OnRequest: func(r proxy.RequestRecord) {
			p.mu.Lock()
			p.recs = append(p.recs, r)
			p.mu.Unlock()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() }) // its work after the responses ends before the directory goes
	p.srv = srv
	// The agent's own request bodies are kept (the proxy sees them
	// unchanged), so that a test can tell a line the agent itself never
	// sent from one the proxy failed to bring back.
	p.http = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.inFlight++
		p.mu.Unlock()
		defer func() {
			p.mu.Lock()
			if p.inFlight--; p.inFlight == 0 {
				p.idle.Broadcast()
			}
			p.mu.Unlock()
		}()
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		p.mu.Lock()
		p.client = append(p.client, body)
		p.paths = append(p.paths, r.URL.Path)
		p.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
		srv.ServeHTTP(w, r)
	}))
	t.Cleanup(p.http.Close)
	t.Cleanup(func() { dump(t, up) })
	return p
}

// clientHad reports whether a request the agent sent carried line.
func (p *proxyUnder) clientHad(line string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, b := range p.client {
		if bodyHas(b, line) {
			return true
		}
	}
	return false
}

// records returns the records of the requests the proxy answered, once no
// request is in flight: an agent that exited after reading its last
// response may be ahead of that request's record (no timing involved).
func (p *proxyUnder) records() []proxy.RequestRecord {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.inFlight > 0 {
		p.idle.Wait()
	}
	return append([]proxy.RequestRecord(nil), p.recs...)
}

// dump writes every body the scripted model received to $CF_E2E_DUMP, for
// debugging a run (unset: nothing).
func dump(t *testing.T, up *scripted.Server) {
	dir := os.Getenv("CF_E2E_DUMP")
	if dir == "" {
		return
	}
	for i, r := range up.Requests() {
		name := fmt.Sprintf("%s-%s-%03d.json", t.Name(), r.API, i)
		_ = os.WriteFile(filepath.Join(dir, name), r.Body, 0o644)
	}
}

// checkAnthropicPairs fails unless every tool_use of an assistant message
// is answered by a tool_result in the next user message and every
// tool_result answers a tool_use of the message before it.
func checkAnthropicPairs(t *testing.T, body []byte) (pairs int) {
	t.Helper()
	var req struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatalf("forwarded body is not JSON: %v", err)
	}
	blocks := func(i int) []map[string]any {
		var bs []map[string]any
		_ = json.Unmarshal(req.Messages[i].Content, &bs)
		return bs
	}
	for i, m := range req.Messages {
		var uses, results []string
		for _, b := range blocks(i) {
			switch b["type"] {
			case "tool_use":
				uses = append(uses, b["id"].(string))
			case "tool_result":
				results = append(results, b["tool_use_id"].(string))
			}
		}
		if m.Role == "assistant" && len(uses) > 0 {
			if i+1 >= len(req.Messages) {
				t.Errorf("message %d: tool_use %v with no following message", i, uses)
				continue
			}
			got := map[string]bool{}
			for _, b := range blocks(i + 1) {
				if b["type"] == "tool_result" {
					got[b["tool_use_id"].(string)] = true
				}
			}
			for _, id := range uses {
				if !got[id] {
					t.Errorf("message %d: tool_use %s has no tool_result in message %d", i, id, i+1)
				}
				pairs++
			}
		}
		if len(results) > 0 {
			want := map[string]bool{}
			if i > 0 {
				for _, b := range blocks(i - 1) {
					if b["type"] == "tool_use" {
						want[b["id"].(string)] = true
					}
				}
			}
			for _, id := range results {
				if !want[id] {
					t.Errorf("message %d: tool_result %s answers no tool_use of message %d", i, id, i-1)
				}
			}
		}
	}
	return pairs
}

// TestClaudeCodeThroughProxy runs Claude Code through the proxy: a 42-step
// Bash session, then one resumed human turn per early output asking about
// it.
func TestClaudeCodeThroughProxy(t *testing.T) {
	bin := agentBin(t, "claude")
	up := scripted.NewWith(sessionScript(nil), thinkingOptions)
	defer up.Close()
	px := newProxy(t, up)
	home, work := t.TempDir(), t.TempDir()
	env := claudeEnv(home, px.http.URL)

	start := time.Now()
	res := runClaude(t, bin, work, env, runPrompt, "")
	if !strings.Contains(res.Result, "Build session done: ran 42 steps") {
		t.Fatalf("the session did not finish: %q (turns %d)", res.Result, res.NumTurns)
	}
	var answers []string
	var hyd []string
	for _, p := range probes {
		n := len(px.records())
		r := runClaude(t, bin, work, env, askPrompt(p), res.SessionID)
		answers, hyd = append(answers, r.Result), append(hyd, px.hydratedSince(n, p))
	}
	checkAnswers(t, answers, hyd, px.clientHad)
	t.Logf("Claude Code session through the proxy: %v", time.Since(start).Round(time.Millisecond))
	checkProxySession(t, px, up, scripted.Anthropic, checkAnthropicPairs)
}

// rankedHydration is true now that the proxy and the hooks select the
// cold node that answers the prompt and hydrate its matching lines (the
// ranked matching of package match: tool and failure names, rare terms in
// long nodes, the human's words without the agent's markup, the exact node
// not dropped behind broader ones) rather than the first characters of
// whichever node the scan put first: every miss of an answer line fails.
// Set it to false to report misses as KNOWN GAP (with what was hydrated)
// instead, while working on the matcher.
const rankedHydration = true

// checkAnswers checks the model's answers to the probes' questions: each
// says SEEN when the request it received carried the answer line. hydrated[i]
// describes what was hydrated for question i. agentHad, when not nil, says
// whether the agent itself ever sent the answer line (in a request to the
// proxy): an agent can lose the end of a long output on its own (Qwen Code
// 0.24.4 now and then returns a command's output without its last lines),
// and a line the agent never had is not the proxy's to bring back — such a
// probe is logged and not counted; at least one probe must count.
func checkAnswers(t *testing.T, answers, hydrated []string, agentHad func(line string) bool) {
	t.Helper()
	seen, counted := 0, 0
	for i, p := range probes[:len(answers)] { // the first len(answers) probes were asked
		if strings.HasPrefix(answers[i], "SEEN "+p.Name) {
			seen++
			counted++
			continue
		}
		if agentHad != nil && !agentHad(p.Answer) {
			t.Logf("%s: the agent itself never sent the answer line of step %d (%q): its own tool output lost it, not a contextfold miss; not counted", p.Name, p.Step, p.Answer)
			continue
		}
		counted++
		msg := fmt.Sprintf("%s: the answer line of step %d (%q) did not reach the model (%q); hydrated: %s", p.Name, p.Step, p.Answer, answers[i], hydrated[i])
		if rankedHydration {
			t.Error(msg)
		} else {
			t.Log("KNOWN GAP: " + msg)
		}
	}
	if counted == 0 {
		t.Errorf("the agent lost every answer line itself: nothing of contextfold was checked")
	}
	t.Logf("answer lines that reached the model: %d of %d", seen, counted)
}

// askUntilCounted asks the probes' questions in order (ask runs the agent
// on one and returns its answer) until one counts for checkAnswers: its
// answer says SEEN, or the agent itself sent its answer line to the proxy
// in the session. A short session asks one question; asking the next
// only when the agent lost the previous answer line on its own (Qwen Code
// now and then returns a long output without its last lines) keeps the
// test about contextfold, not about the agent's output handling.
func askUntilCounted(px *proxyUnder, ask func(p probe) string) (answers, hydrated []string) {
	for _, p := range probes {
		n := len(px.records())
		a := ask(p)
		answers, hydrated = append(answers, a), append(hydrated, px.hydratedSince(n, p))
		if strings.HasPrefix(a, "SEEN "+p.Name) || px.clientHad(p.Answer) {
			break
		}
	}
	return answers, hydrated
}

// hydratedSince describes what the proxy did for probe p's question after
// its first n records: the nodes hydrated (step id, tokens, whether the
// content was cut), dropped (over the per-turn share) and refused; then,
// from the session's store, which step holds the answer line and how the
// ranked scan scores the question (so that a miss says whether it is the
// scan, the focus or the budget).
func (p *proxyUnder) hydratedSince(n int, pr probe) string {
	var parts []string
	var last *proxy.RequestRecord
	recs := p.records()
	for i, r := range recs[n:] {
		for _, h := range r.Hydrated {
			parts = append(parts, fmt.Sprintf("step %d (%d tokens, truncated %v)", h.StepID, h.Tokens, h.Truncated))
		}
		if len(r.StepsDropped) > 0 {
			parts = append(parts, fmt.Sprintf("dropped %v", r.StepsDropped))
		}
		if len(r.StepsRefused) > 0 {
			parts = append(parts, fmt.Sprintf("refused %v", r.StepsRefused))
		}
		if r.Session != "" {
			last = &recs[n+i]
		}
	}
	desc := "nothing"
	if len(parts) > 0 {
		desc = strings.Join(parts, ", ")
	}
	if last == nil {
		return desc
	}
	return desc + "; " + explainStore(filepath.Join(p.dir, last.Session, "g"+strconv.Itoa(last.Generation)), pr)
}

// explainStore says which folded step of the store at dir holds the probe's
// answer line and what the ranked scan of its question selects.
func explainStore(dir string, pr probe) string {
	s, err := contextfold.Open(dir, contextfold.Options{})
	if err != nil {
		return "store: " + err.Error()
	}
	es, err := s.Entries()
	if err != nil {
		return "store: " + err.Error()
	}
	holder := -1
	for _, e := range es {
		if n, err := s.ReadColdNode(e.StepID); err == nil && strings.Contains(n.RawContent, pr.Answer) {
			holder = e.StepID
			break
		}
	}
	ex, err := match.ExplainRanked(s, askPrompt(pr))
	if err != nil {
		return fmt.Sprintf("answer in step %d of %d; scan: %v", holder, len(es), err)
	}
	var sel []string
	for _, pk := range ex.Result.Selected {
		sel = append(sel, fmt.Sprintf("%d (%.2f %v)", pk.StepID, pk.Score, pk.MatchedTerms))
	}
	var cut []string
	for _, pk := range ex.CutOff[:min(3, len(ex.CutOff))] {
		cut = append(cut, fmt.Sprintf("%d (%.2f %v)", pk.StepID, pk.Score, pk.MatchedTerms))
	}
	return fmt.Sprintf("answer in step %d of %d folded; ranked scan now selects %v, cut off %v", holder, len(es), sel, cut)
}

// checkProxySession asserts what every proxied session must show: every
// request succeeded; the agent's own history reached 40+ tool calls; the
// tool pairs of every forwarded body are intact (the working set takes
// pairs out together); every forwarded request fits the context budget; the
// proxy folded (records in place, or turns collapsed into the page table)
// and the forwarded prompt shrank.
func checkProxySession(t *testing.T, px *proxyUnder, up *scripted.Server, api scripted.API, pairs func(*testing.T, []byte) int) {
	t.Helper()
	recs := px.records()
	var folded, collapsed, foldedTok, hydrated, maxClient, maxFwd, lastClient, lastFwd, maxMsgs int
	for i, r := range recs {
		if r.Status != 200 {
			t.Errorf("request %d: status %d warnings %v", i, r.Status, r.Warnings)
		}
		folded += r.StepsFolded
		collapsed += r.StepsCollapsed
		foldedTok += r.FoldedTokens
		hydrated += len(r.Hydrated)
		if r.ClientTokens > maxClient {
			maxClient = r.ClientTokens
		}
		if r.ForwardedTokens > maxFwd {
			maxFwd = r.ForwardedTokens
		}
		if r.ForwardedTokens > e2eBudget {
			t.Errorf("request %d: forwarded %d tokens, over the context budget of %d (client sent %d)", i, r.ForwardedTokens, e2eBudget, r.ClientTokens)
		}
		if r.Messages > maxMsgs {
			maxMsgs = r.Messages
		}
		lastClient, lastFwd = r.ClientTokens, r.ForwardedTokens
	}
	reqs := up.ModelRequests(api)
	calls, maxPairs := 0, 0
	for _, r := range reqs {
		if n := pairs(t, r.Body); n > maxPairs {
			maxPairs = n
		}
		calls += len(r.Reply.Calls)
	}
	t.Logf("%s: %d proxied requests (client history up to %d messages), %d model requests, %d tool calls; "+
		"largest forwarded history %d intact tool pairs; steps folded in place %d, collapsed into the page table %d, %d tokens folded; "+
		"nodes hydrated %d; tokens client max %d → forwarded max %d (budget %d), last %d → %d",
		api, len(recs), maxMsgs, len(reqs), calls, maxPairs, folded, collapsed, foldedTok, hydrated, maxClient, maxFwd, e2eBudget, lastClient, lastFwd)
	if calls < 40 || maxMsgs < 80 {
		t.Errorf("%d tool calls were made and the client's history reached %d messages (want 40+ calls, 80+ messages)", calls, maxMsgs)
	}
	if maxPairs == 0 {
		t.Errorf("no forwarded body held a tool pair")
	}
	if folded+collapsed == 0 || foldedTok == 0 {
		t.Errorf("the proxy folded nothing")
	}
	if maxFwd >= maxClient {
		t.Errorf("the forwarded prompt never shrank: client max %d tokens, forwarded max %d", maxClient, maxFwd)
	}
	// The model reasons and checks reasoning bound to its prefix: no
	// request may be rejected over a thinking block.
	checkBinding(t, up)
}
