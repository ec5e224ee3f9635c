package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/contextfold/contextfold/internal/scripted"
	"github.com/contextfold/contextfold/proxy"
)

// A session as a user lives it, past one question: the build session
// (thinkingSteps shell steps, thinking on, the model answering 400 to an
// invalid thinking block), a question about an early output (a fold event
// happened, the question hydrates), more tool turns (moreMarker), another
// question; with the agent's --continue and --resume, the proxy restarted
// between two questions, or two agents on one proxy at once.

// moreMarker starts a later human turn that asks for moreSteps more shell
// steps, numbered on from thinkingSteps.
const (
	moreMarker = "CFMORE"
	moreSteps  = 6
)

const morePrompt = moreMarker + ": run a few more build steps, one shell step at a time, and tell me when they are done."

// lifecycleScript is the scripted model of these sessions: the build
// session of thinkingSteps steps and its questions (stepsScript), and the
// later turn of moreSteps more steps.
func lifecycleScript() scripted.Script {
	return stepsScript(thinkingSteps, func(t *scripted.Turn) scripted.Reply {
		if !strings.Contains(t.Prompt, moreMarker) {
			return scripted.Reply{}
		}
		k := thinkingSteps
		if len(t.Results) > 0 {
			k = max(k, lastStep(t.Body)+1)
		}
		if k < thinkingSteps+moreSteps {
			if c, ok := shellCall(t, k, stepCommand(k)); ok {
				return scripted.Reply{Calls: []scripted.Call{c}}
			}
		}
		return scripted.Reply{Text: fmt.Sprintf("More steps done: through step %d.", k-1)}
	})
}

// wireRequest is one model request as the proxy accounted for it and as
// the upstream received it.
type wireRequest struct {
	Session  string
	Fold     bool // the proxy reported a fold event for it
	Body     []byte
	Client   []byte // the body the agent sent (nil when not recorded)
	Hydrated []int
}

// zipWire pairs the upstream's model requests of api with the proxy's
// records of api, in order (one agent on an API: the proxy finishes its
// requests in the order the upstream received them). It fails unless
// there are as many of each, unless every record's forwarded_bytes is the
// size of the body the upstream received, and, when the agent's bodies are
// given (client, in order), unless a request with nothing folded or
// hydrated reached the upstream byte for byte.
func zipWire(t *testing.T, up *scripted.Server, api scripted.API, recs []proxy.RequestRecord, client ...[]byte) []wireRequest {
	t.Helper()
	var mine []proxy.RequestRecord
	for _, r := range recs {
		if string(r.API) == string(api) || (api == scripted.Chat && r.API == proxy.APIOpenAI) {
			mine = append(mine, r)
		}
	}
	reqs := up.ModelRequests(api)
	if len(reqs) != len(mine) {
		t.Fatalf("%s: the upstream received %d model requests, the proxy recorded %d", api, len(reqs), len(mine))
	}
	out := make([]wireRequest, len(reqs))
	for i, r := range reqs {
		rec := mine[i]
		if rec.SentSize != len(r.Body) {
			t.Errorf("%s request %d: the proxy recorded %d bytes forwarded, the upstream received %d", api, i, rec.SentSize, len(r.Body))
		}
		out[i] = wireRequest{Session: rec.Session, Fold: rec.WorkingSet != nil && rec.WorkingSet.FoldEvent, Body: r.Body, Hydrated: rec.StepsHydrated}
		if len(client) == len(reqs) {
			out[i].Client = client[i]
			// Below the budget, before anything folded, a request goes
			// upstream byte for byte (README: "Nothing changes while the
			// conversation is small").
			if rec.FoldedTokens == 0 && len(rec.StepsHydrated) == 0 && !bytes.Equal(client[i], r.Body) {
				t.Errorf("%s request %d: nothing folded or hydrated, yet the body forwarded differs from the agent's (%d bytes → %d)", api, i, len(client[i]), len(r.Body))
			}
		}
	}
	return out
}

// checkAppendOnly fails for every forwarded request that changed its
// session's conversation before its end (scripted.FirstChange: the prefix
// check's own comparison) without a fold event: between fold events the
// forwarded conversation only grows at its end, so an earlier human turn's
// hydration stays byte-identical in every later request. A change where
// the agent's own request changed before its end (ws[i].Client, when
// recorded) is logged, not failed: the agent rewrote its history. It
// returns the number of requests compared.
func checkAppendOnly(t *testing.T, api scripted.API, ws []wireRequest) int {
	t.Helper()
	prev := map[string]wireRequest{}
	n := 0
	for i, w := range ws {
		pw, ok := prev[w.Session]
		p := pw.Body
		prev[w.Session] = w
		if !ok || w.Fold {
			continue
		}
		n++
		first, err := scripted.FirstChange(api, p, w.Body)
		if err != nil {
			t.Fatalf("%s request %d: %v", api, i, err)
		}
		if first < 0 {
			continue
		}
		if pw.Client != nil && w.Client != nil {
			c, err := scripted.FirstChange(api, pw.Client, w.Client)
			if err == nil && c >= 0 {
				// The agent rewrote its own history (Qwen Code drops the
				// date reminder of the previous prompt): what it changed
				// cannot stay as it was.
				t.Logf("%s request %d (session %s): changed at unit %d before its end with no fold event; the agent's own request changed at unit %d", api, i, w.Session, first, c)
				continue
			}
		}
		t.Errorf("%s request %d (session %s): the forwarded conversation changed at unit %d, before its end, with no fold event and no change in the agent's own request (an earlier hydration or message was rewritten)", api, i, w.Session, first)
	}
	return n
}

// hydratedIn reports the steps hydrated by the records from n on.
func hydratedIn(recs []proxy.RequestRecord, n int) []int {
	var out []int
	for _, r := range recs[n:] {
		out = append(out, r.StepsHydrated...)
	}
	return out
}

// checkStores runs `contextfold status` and `validate` on every session
// store the records name and fails unless each validates clean, holds every
// step hydrated from it (with the artifact digest the record names) and
// counts a hydrated node as evicted after the response.
func checkStores(t *testing.T, dir string, recs []proxy.RequestRecord) {
	t.Helper()
	bin := needContextfold(t)
	type key struct {
		s string
		g int
	}
	hyd := map[key]map[int]string{}
	for _, r := range recs {
		if r.Session == "" {
			continue
		}
		k := key{r.Session, r.Generation}
		if hyd[k] == nil {
			hyd[k] = map[int]string{}
		}
		for _, h := range r.Hydrated {
			hyd[k][h.StepID] = h.ArtifactSHA256
		}
	}
	for k, steps := range hyd {
		store := filepath.Join(dir, k.s, "g"+strconv.Itoa(k.g))
		out, err := exec.Command(bin, "--dir", store, "validate", "--json").CombinedOutput()
		if err != nil {
			t.Errorf("contextfold validate %s: %v\n%s", store, err, out)
		}
		out, err = exec.Command(bin, "--dir", store, "status", "--json").Output()
		var st struct{ Total, Active, Evicted int }
		if err != nil || json.Unmarshal(out, &st) != nil {
			t.Errorf("contextfold status %s: %v\n%s", store, err, out)
			continue
		}
		if st.Total == 0 || (len(steps) > 0 && st.Evicted == 0) {
			t.Errorf("%s: status %+v after %d nodes hydrated and evicted (want nodes, and the hydrated ones evicted)", store, st, len(steps))
		}
		for id, sum := range steps {
			out, err := exec.Command(bin, "--dir", store, "hydrate", strconv.Itoa(id), "--json").Output()
			if err != nil || !bytes.Contains(out, []byte(sum)) {
				t.Errorf("%s: step %d was hydrated with artifact %s; hydrate: %v %s", store, id, sum, err, tail(string(out), 300))
			}
		}
		t.Logf("store %s/g%d: %d nodes (%d evicted), validate clean, %d hydrated steps verified", k.s, k.g, st.Total, st.Evicted, len(steps))
	}
}

// checkStatsAgree fails unless the proxy's counters agree with its records
// and with what the upstream reports having done with reasoning.
func checkStatsAgree(t *testing.T, srv *proxy.Server, recs []proxy.RequestRecord, up *scripted.Server) {
	t.Helper()
	st := srv.Stats()
	hydTok := 0
	for _, r := range recs {
		hydTok += r.HydratedTokens
	}
	b := up.Binding()
	if st.Requests != len(recs) || st.HydratedTokens != hydTok || st.Reasoning.Rejected != b.Rejected ||
		st.Reasoning.DroppedByAPI != b.Reported+b.ReasoningDropped {
		t.Errorf("stats: %d requests, %d hydrated tokens, %d rejected, %d dropped by the API; records: %d requests, %d hydrated tokens; upstream: %v",
			st.Requests, st.HydratedTokens, st.Reasoning.Rejected, st.Reasoning.DroppedByAPI, len(recs), hydTok, b)
	}
}

// TestClaudeCodeQuestionToolTurnsQuestion: after a fold event, a question
// that hydrates (--resume), more tool turns in a later human turn
// (--continue), then another question (--continue), then a question in a
// fork of the session (--resume --fork-session) and the same question in
// the original session (--resume). No request may be
// rejected; each question hydrates and gets its answer line; the forwarded
// conversation only grows between fold events, so the first question's
// hydration is byte-identical in every later request until a fold event.
func TestClaudeCodeQuestionToolTurnsQuestion(t *testing.T) {
	bin := agentBin(t, "claude")
	up := scripted.NewWith(lifecycleScript(), thinkingOptions)
	defer up.Close()
	px := newProxy(t, up)
	home, work := t.TempDir(), t.TempDir()
	env := claudeEnv(home, px.http.URL)

	res := runClaude(t, bin, work, env, runPrompt, "")
	if !strings.Contains(res.Result, "Build session done: ran 13 steps") {
		t.Fatalf("the session did not finish: %q (turns %d)", res.Result, res.NumTurns)
	}
	folds, _, _ := logFolds(t, px)
	if folds == 0 {
		t.Fatalf("no fold event in the build session: the question would not need hydration")
	}
	n1 := len(px.records())
	a1 := runClaude(t, bin, work, env, askPrompt(probes[0]), res.SessionID)
	n2 := len(px.records())
	more := runClaudeContinue(t, bin, work, env, morePrompt)
	if !strings.Contains(more.Result, fmt.Sprintf("More steps done: through step %d", thinkingSteps+moreSteps-1)) {
		t.Errorf("the later tool turns did not finish: %q", more.Result)
	}
	if more.SessionID != res.SessionID {
		t.Errorf("--continue went on in session %s, not %s", more.SessionID, res.SessionID)
	}
	n3 := len(px.records())
	a2 := runClaudeContinue(t, bin, work, env, askPrompt(probes[1]))
	// A fork of the session (--resume --fork-session) asks about step 8,
	// then the original session asks about step 4 again: two histories
	// that share their start and part after the second answer go to the
	// same proxy session and store; neither may be rejected, both get the
	// answer line (step 8 is still in the hot part of the prompt, step 4's
	// line in the second question's hydration: nothing to hydrate).
	n4 := len(px.records())
	a3 := runClaudeWith(t, bin, work, env, askPrompt(probes[2]), "--resume", res.SessionID, "--fork-session")
	if a3.SessionID == res.SessionID {
		t.Errorf("--fork-session went on in the same Claude Code session %s", a3.SessionID)
	}
	n5 := len(px.records())
	a4 := runClaudeWith(t, bin, work, env, askPrompt(probes[1]), "--resume", res.SessionID)

	recs := px.records()
	checkAnswers(t, []string{a1.Result, a2.Result, a3.Result}, []string{px.hydratedSince(n1, probes[0]), px.hydratedSince(n3, probes[1]), px.hydratedSince(n4, probes[2])}, px.clientHad)
	if !strings.HasPrefix(a4.Result, "SEEN "+probes[1].Name) {
		t.Errorf("the original session after the fork: %q; hydrated: %s", a4.Result, px.hydratedSince(n5, probes[1]))
	}
	for i, span := range [][2]int{{n1, n2}, {n3, n4}} {
		if len(hydratedIn(recs[:span[1]], span[0])) == 0 {
			t.Errorf("question %d hydrated nothing", i+1)
		}
	}
	stores := map[string]bool{}
	for _, r := range recs {
		stores[r.Session+"/g"+strconv.Itoa(r.Generation)] = true
	}
	if len(stores) != 1 {
		t.Errorf("the session, its continuations and its fork went to %d stores: %v", len(stores), stores)
	}
	// The first question's answer line stays in the forwarded requests of
	// the later turns until a fold event takes its host message out.
	ws := zipWire(t, up, scripted.Anthropic, recs, px.clientBodies(scripted.Anthropic)...)
	kept := 0
	for _, w := range ws[n2:] {
		if w.Fold {
			break
		}
		if !bodyHas(w.Body, probes[0].Answer) {
			t.Errorf("a request after the first question lost its hydration with no fold event")
			break
		}
		kept++
	}
	compared := checkAppendOnly(t, scripted.Anthropic, ws)
	t.Logf("%d requests, %d compared append-only; the first question's hydration carried by %d later requests", len(ws), compared, kept)
	checkBinding(t, up)
	for i, r := range recs {
		if r.Status != 200 {
			t.Errorf("request %d: status %d %v", i, r.Status, r.Warnings)
		}
	}
	checkStatsAgree(t, px.srv, recs, up)
	checkStores(t, px.dir, recs)
}

// runClaudeContinue runs one `claude -p --continue` turn (the most recent
// session of the directory).
func runClaudeContinue(t *testing.T, bin, work string, env []string, prompt string) claudeResult {
	t.Helper()
	return runClaudeWith(t, bin, work, env, prompt, "--continue")
}

// runClaudeWith runs one `claude -p` turn with extra arguments.
func runClaudeWith(t *testing.T, bin, work string, env []string, prompt string, extra ...string) claudeResult {
	t.Helper()
	args := append([]string{"-p", prompt, "--output-format", "json", "--dangerously-skip-permissions"}, extra...)
	r := runAgent(t, 4*time.Minute, work, env, bin, args...)
	var res claudeResult
	if err := json.Unmarshal([]byte(strings.TrimSpace(r.Stdout)), &res); err != nil || r.Err != nil || res.IsError {
		t.Fatalf("claude %v failed: %v / %v %+v\nstdout: %s\nstderr: %s", extra, r.Err, err, res, tail(r.Stdout, 2000), tail(r.Stderr, 2000))
	}
	return res
}

// cliProxy is the contextfold binary's proxy, a subprocess, in front of a
// scripted upstream.
type cliProxy struct {
	cmd    *exec.Cmd
	url    string
	stderr *bytes.Buffer // what it printed after its listening line
	mu     sync.Mutex
	done   chan struct{}
}

// startCLIProxy starts `contextfold proxy` on a free loopback port with its
// stores under dir, at a context budget of budget tokens.
func startCLIProxy(t *testing.T, upstream, dir string, budget int) *cliProxy {
	t.Helper()
	cmd := exec.Command(needContextfold(t), "proxy", "--listen", "127.0.0.1:0", "--upstream", upstream,
		"--dir", dir, "--context-budget", strconv.Itoa(budget))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &cliProxy{cmd: cmd, done: make(chan struct{}), stderr: &bytes.Buffer{}}
	urlc := make(chan string, 1)
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<22)
		for sc.Scan() {
			if m := listenRE.FindSubmatch(sc.Bytes()); m != nil {
				select {
				case urlc <- string(m[1]):
				default:
				}
				continue
			}
			p.mu.Lock()
			p.stderr.Write(sc.Bytes())
			p.stderr.WriteByte('\n')
			p.mu.Unlock()
		}
	}()
	select {
	case p.url = <-urlc:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("contextfold proxy did not say where it listens within 30 s")
	}
	t.Cleanup(func() { p.stop(t) })
	return p
}

var listenRE = regexp.MustCompile(`listening on (http://127\.0\.0\.1:\d+)`)

// stop interrupts the proxy as Ctrl-C does and waits for it to exit.
func (p *cliProxy) stop(t *testing.T) {
	if p.cmd.ProcessState != nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		_ = p.cmd.Process.Kill()
		t.Errorf("contextfold proxy did not exit within 20 s of SIGINT")
	}
	if err := p.cmd.Wait(); err != nil {
		p.mu.Lock()
		t.Errorf("contextfold proxy exited with %v after SIGINT; stderr:\n%s", err, tail(p.stderr.String(), 2000))
		p.mu.Unlock()
	}
}

// kill ends the proxy with SIGKILL (a crash: nothing runs after the
// signal) and waits for it.
func (p *cliProxy) kill(t *testing.T) {
	if p.cmd.ProcessState != nil {
		return
	}
	_ = p.cmd.Process.Kill()
	<-p.done
	_ = p.cmd.Wait()
}

// records reads the proxy's GET /contextfold/stats: its counters, and the
// records of all its requests (fewer than the 32 it keeps). It waits until
// nothing is pending (stats.pending 0): the agent may exit just before its
// last request is recorded, and the session state that request changed is
// saved after the response; a kill before that save lost it, and the
// restarted proxy folded again (the crash test's race, not the proxy's
// promise, which holds for requests whose work ended).
func (p *cliProxy) records(t *testing.T) (proxy.Stats, []proxy.RequestRecord) {
	t.Helper()
	var st proxy.Stats
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		resp, err := http.Get(p.url + "/contextfold/stats")
		if err != nil {
			t.Fatal(err)
		}
		st = proxy.Stats{}
		err = json.NewDecoder(resp.Body).Decode(&st)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if st.Pending == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("stats: %d requests or their work after the response still pending after a minute", st.Pending)
		}
	}
	if len(st.Recent) != st.Requests {
		t.Fatalf("stats: %d requests, %d recent records (the test needs them all)", st.Requests, len(st.Recent))
	}
	return st, st.Recent
}

// TestClaudeCodeProxyRestartBetweenQuestions runs the contextfold binary's
// proxy, stops it with SIGINT between two human turns of one Claude Code
// session and starts it again on the same --dir: the session, its store
// and its wire state (what was left out, the first question's hydration)
// carry over, so the later turns are neither rejected nor rewritten before
// their end, and the second question hydrates from the same store.
func TestClaudeCodeProxyRestartBetweenQuestions(t *testing.T) {
	restartBetweenQuestions(t, scripted.Anthropic, e2eBudget, false, claudeAsker(t))
}

// TestClaudeCodeProxyCrashBetweenQuestions is the same with the proxy
// killed (SIGKILL) instead of stopped: what the proxy saved after each
// request (its session state beside the store) is all the next process
// has, and it makes the same fold events as after the stop.
func TestClaudeCodeProxyCrashBetweenQuestions(t *testing.T) {
	restartBetweenQuestions(t, scripted.Anthropic, e2eBudget, true, claudeAsker(t))
}

// TestCodexProxyRestartBetweenQuestions is the restart with Codex on the
// Responses API (reasoning items left out at fold events carry over).
func TestCodexProxyRestartBetweenQuestions(t *testing.T) {
	bin := agentBin(t, "codex")
	home, work := t.TempDir(), t.TempDir()
	restartBetweenQuestions(t, scripted.Responses, codexThinkingBudget, false, func(url, prompt string, resume bool) string {
		return lastLine(runCodex(t, bin, work, codexSetup(t, home, url+"/v1"), prompt, resume))
	})
}

// claudeAsker runs Claude Code turns of one session (-p, then --resume
// of the first turn's session) against the proxy at url.
func claudeAsker(t *testing.T) func(url, prompt string, resume bool) string {
	bin := agentBin(t, "claude")
	home, work := t.TempDir(), t.TempDir()
	var sid string
	return func(url, prompt string, resume bool) string {
		if !resume {
			sid = ""
		}
		r := runClaude(t, bin, work, claudeEnv(home, url), prompt, sid)
		sid = r.SessionID
		return r.Result
	}
}

// restartBetweenQuestions plays, through the contextfold binary's proxy at
// budget: the build session and a question about step 0; then it stops the
// proxy (crash: kills it) and starts another on the same --dir, through
// which the agent (ask: a turn at the proxy's url; resume: go on with the
// session) runs more tool steps and asks about step 4.
func restartBetweenQuestions(t *testing.T, api scripted.API, budget int, crash bool, ask func(url, prompt string, resume bool) string) {
	up := scripted.NewWith(lifecycleScript(), thinkingOptions)
	defer up.Close()
	t.Cleanup(func() { dump(t, up) })
	dir := t.TempDir()

	p1 := startCLIProxy(t, up.URL, dir, budget)
	if out := ask(p1.url, runPrompt, false); !strings.Contains(out, "Build session done: ran 13 steps") {
		t.Fatalf("the session did not finish: %q", tail(out, 500))
	}
	_, before := p1.records(t)
	a1 := ask(p1.url, askPrompt(probes[0]), true)
	st1, recs1 := p1.records(t)
	if crash {
		p1.kill(t)
	} else {
		p1.stop(t)
	}

	p2 := startCLIProxy(t, up.URL, dir, budget)
	if out := ask(p2.url, morePrompt, true); !strings.Contains(out, "More steps done") {
		t.Errorf("the later tool turns did not finish: %q", tail(out, 500))
	}
	n := len(recs1) + len(p2recs(t, p2))
	a2 := ask(p2.url, askPrompt(probes[1]), true)
	st2, recs2 := p2.records(t)
	p2.stop(t)

	for i, a := range []string{a1, a2} {
		if !strings.HasPrefix(a, "SEEN "+probes[i].Name) {
			t.Errorf("question %d: %q", i+1, a)
		}
	}
	recs := append(append([]proxy.RequestRecord(nil), recs1...), recs2...)
	stores := map[string]bool{}
	var foldAt []int
	for i, r := range recs {
		if r.Status != 200 {
			t.Errorf("request %d: status %d %v", i, r.Status, r.Warnings)
		}
		stores[r.Session+"/g"+strconv.Itoa(r.Generation)] = true
		if r.WorkingSet != nil && r.WorkingSet.FoldEvent {
			foldAt = append(foldAt, i)
		}
	}
	if len(stores) != 1 {
		t.Errorf("the session's requests went to %d stores across the restart: %v", len(stores), stores)
	}
	if len(foldAt) == 0 {
		t.Errorf("no fold event")
	}
	// The session's state (working set, hydration, wire state) is saved
	// after each request that changed it, so a proxy started again after a
	// stop or a crash forwards as the first would have: its first request
	// is no fold event of its own (the stop and the crash make the same
	// fold events).
	for _, i := range foldAt {
		if i == len(recs1) {
			t.Errorf("the first request after the restart (request %d) is a fold event: the session's working set was lost (crash %v)", i, crash)
		}
	}
	if len(hydratedIn(recs1, len(before))) == 0 || len(hydratedIn(recs, n)) == 0 {
		t.Errorf("a question hydrated nothing: first %v, second %v", hydratedIn(recs1, len(before)), hydratedIn(recs, n))
	}
	ws := zipWire(t, up, api, recs)
	compared := checkAppendOnly(t, api, ws)
	b := checkBinding(t, up)
	if st1.Reasoning.Rejected+st2.Reasoning.Rejected != b.Rejected || st1.Reasoning.DroppedByAPI+st2.Reasoning.DroppedByAPI != b.Reported+b.ReasoningDropped {
		t.Errorf("stats: %d+%d rejected, the API dropped %d+%d thinking blocks or reasoning items; the upstream: %v",
			st1.Reasoning.Rejected, st2.Reasoning.Rejected, st1.Reasoning.DroppedByAPI, st2.Reasoning.DroppedByAPI, b)
	}
	t.Logf("%d requests (%d before the restart), fold events at %v, %d compared append-only", len(recs), len(recs1), foldAt, compared)
	checkStores(t, dir, recs)
}

// p2recs is the records of p so far.
func p2recs(t *testing.T, p *cliProxy) []proxy.RequestRecord {
	_, r := p.records(t)
	return r
}

// sharedBudget is the context budget of the proxy two agents share
// (tokens): below both 13-step sessions' peaks (Codex's about 24k, Claude
// Code's about 30k) and above what neither can fold (Claude Code's system
// prompt and tools, about 12k).
const sharedBudget = 16000

// TestTwoAgentsShareOneProxy runs Claude Code (Messages API) and Codex
// (Responses API) at the same time through one proxy and one model: each
// plays the 13-step build session and then asks about step 0's output. Each
// gets its own session and store; neither request stream is rejected or
// rewritten before its end between fold events; both questions hydrate and
// get their answer line; the proxy's stats, records and stores agree with
// what the model received.
func TestTwoAgentsShareOneProxy(t *testing.T) {
	claude, codex := agentBin(t, "claude"), agentBin(t, "codex")
	up := scripted.NewWith(lifecycleScript(), thinkingOptions)
	defer up.Close()
	px := newProxyBudget(t, up, sharedBudget)
	var mu sync.Mutex
	answers := map[scripted.API]string{}
	asked := map[scripted.API]int{} // records before the question
	t.Run("agents", func(t *testing.T) {
		t.Run("claude", func(t *testing.T) {
			t.Parallel()
			home, work := t.TempDir(), t.TempDir()
			env := claudeEnv(home, px.http.URL)
			res := runClaude(t, claude, work, env, runPrompt, "")
			if !strings.Contains(res.Result, "Build session done: ran 13 steps") {
				t.Fatalf("the session did not finish: %q", res.Result)
			}
			mu.Lock()
			asked[scripted.Anthropic] = len(px.records())
			mu.Unlock()
			a := runClaude(t, claude, work, env, askPrompt(probes[0]), res.SessionID).Result
			mu.Lock()
			answers[scripted.Anthropic] = a
			mu.Unlock()
		})
		t.Run("codex", func(t *testing.T) {
			t.Parallel()
			home, work := t.TempDir(), t.TempDir()
			env := codexSetup(t, home, px.http.URL+"/v1")
			if out := runCodex(t, codex, work, env, runPrompt, false); !strings.Contains(out, "Build session done: ran 13 steps") {
				t.Fatalf("the session did not finish: %q", tail(out, 500))
			}
			mu.Lock()
			asked[scripted.Responses] = len(px.records())
			mu.Unlock()
			a := lastLine(runCodex(t, codex, work, env, askPrompt(probes[0]), true))
			mu.Lock()
			answers[scripted.Responses] = a
			mu.Unlock()
		})
	})
	if t.Failed() {
		return
	}
	recs := px.records()
	sessions := map[proxy.API]map[string]bool{}
	for i, r := range recs {
		if r.Status != 200 {
			t.Errorf("request %d (%s): status %d %v", i, r.API, r.Status, r.Warnings)
		}
		if sessions[r.API] == nil {
			sessions[r.API] = map[string]bool{}
		}
		sessions[r.API][r.Session] = true
	}
	if len(sessions[proxy.APIAnthropic]) != 1 || len(sessions[proxy.APIResponses]) != 1 {
		t.Errorf("sessions by API: %v (want one each)", sessions)
	}
	for _, api := range []scripted.API{scripted.Anthropic, scripted.Responses} {
		if !strings.HasPrefix(answers[api], "SEEN "+probes[0].Name) {
			t.Errorf("%s: the question's answer line did not reach the model: %q", api, answers[api])
		}
		ws := zipWire(t, up, api, recs, px.clientBodies(api)...)
		folds, hyd := 0, 0
		for _, w := range ws {
			if w.Fold {
				folds++
			}
		}
		// The question's requests are the last of the API's (each agent
		// asks once, after its session).
		for _, r := range recs[asked[api]:] {
			if string(r.API) == string(api) {
				hyd += len(r.StepsHydrated)
			}
		}
		if folds == 0 || hyd == 0 {
			t.Errorf("%s: %d fold events, %d steps hydrated for the question (want both)", api, folds, hyd)
		}
		t.Logf("%s: %d requests, %d fold events, %d compared append-only, %d steps hydrated for the question", api, len(ws), folds, checkAppendOnly(t, api, ws), hyd)
	}
	checkBinding(t, up)
	checkReasoning(t, up)
	checkStatsAgree(t, px.srv, recs, up)
	checkStores(t, px.dir, recs)
}

// questionToolTurnsQuestion plays, through a proxy of the given budget: the
// 13-step build session, a question about step 0 (resumed), moreSteps more
// tool steps (resumed), a question about step 4 (resumed). ask runs the
// agent on a prompt (resume: go on with the latest session) and returns its
// last line. Checks as TestClaudeCodeQuestionToolTurnsQuestion.
//
// The agent can lose an answer line on its own (Qwen Code now and then
// returns a long tool output without its last lines, more often on a
// loaded machine): when it lost both, nothing of contextfold was checked,
// and the session runs again, at most three times in all.
func questionToolTurnsQuestion(t *testing.T, api scripted.API, budget int, ask func(px *proxyUnder, prompt string, resume bool) string) {
	const attempts = 3
	for i := 1; !questionToolTurnsQuestionOnce(t, api, budget, ask, i == attempts); i++ {
		t.Logf("attempt %d of %d: the agent itself lost both answer lines (never sent them to the proxy): not a contextfold miss; the session runs again", i, attempts)
	}
}

// questionToolTurnsQuestionOnce runs the session once; false (unless
// last) when the agent lost both answer lines itself and nothing was
// checked.
func questionToolTurnsQuestionOnce(t *testing.T, api scripted.API, budget int, ask func(px *proxyUnder, prompt string, resume bool) string, last bool) bool {
	up := scripted.NewWith(lifecycleScript(), thinkingOptions)
	defer up.Close()
	px := newProxyBudget(t, up, budget)
	if out := ask(px, runPrompt, false); !strings.Contains(out, "Build session done: ran 13 steps") {
		t.Fatalf("the session did not finish: %q", tail(out, 500))
	}
	if folds, _, _ := logFolds(t, px); folds == 0 {
		t.Fatalf("no fold event in the build session")
	}
	n1 := len(px.records())
	a1 := ask(px, askPrompt(probes[0]), true)
	n2 := len(px.records())
	if out := ask(px, morePrompt, true); !strings.Contains(out, "More steps done") {
		t.Errorf("the later tool turns did not finish: %q", tail(out, 500))
	}
	n3 := len(px.records())
	a2 := ask(px, askPrompt(probes[1]), true)
	lost := func(k int, answer string) bool {
		return !strings.HasPrefix(answer, "SEEN "+probes[k].Name) && !px.clientHad(probes[k].Answer)
	}
	if !last && lost(0, a1) && lost(1, a2) {
		return false
	}
	recs := px.records()
	checkAnswers(t, []string{a1, a2}, []string{px.hydratedSince(n1, probes[0]), px.hydratedSince(n3, probes[1])}, px.clientHad)
	// A question must hydrate something when its answer line is in the
	// archive; when the agent never sent that line (its own tool output
	// lost it, as checkAnswers reports), there is nothing to hydrate.
	first, second := hydratedIn(recs[:n2], n1), hydratedIn(recs, n3)
	if (len(first) == 0 && px.clientHad(probes[0].Answer)) || (len(second) == 0 && px.clientHad(probes[1].Answer)) {
		t.Errorf("a question whose answer line the agent sent hydrated nothing: first %v, second %v", first, second)
	}
	ws := zipWire(t, up, api, recs, px.clientBodies(api)...)
	t.Logf("%d requests, %d compared append-only", len(ws), checkAppendOnly(t, api, ws))
	checkBinding(t, up)
	for i, r := range recs {
		if r.Status != 200 {
			t.Errorf("request %d: status %d %v", i, r.Status, r.Warnings)
		}
	}
	checkStatsAgree(t, px.srv, recs, up)
	checkStores(t, px.dir, recs)
	return true
}

// TestCodexQuestionToolTurnsQuestion is the question, later tool turns and
// another question with Codex (`codex exec resume --last`) on the Responses
// API with reasoning items.
func TestCodexQuestionToolTurnsQuestion(t *testing.T) {
	bin := agentBin(t, "codex")
	var home, work string
	var env []string
	var envFor *proxyUnder // a session run again gets a new proxy, home and work tree
	questionToolTurnsQuestion(t, scripted.Responses, codexThinkingBudget, func(px *proxyUnder, prompt string, resume bool) string {
		if envFor != px {
			home, work = t.TempDir(), t.TempDir()
			env, envFor = codexSetup(t, home, px.http.URL+"/v1"), px
		}
		return lastLine(runCodex(t, bin, work, env, prompt, resume))
	})
}

// qwenLifecycleBudget is the context budget of the Qwen Code session
// (tokens): above what it cannot fold (its system prompt, tools and first
// message, about 19k) and below its 13-step peak (about 27k).
const qwenLifecycleBudget = 24000

// TestQwenCodeQuestionToolTurnsQuestion is the same with Qwen Code
// (`qwen -p … --continue`) on Chat Completions with reasoning_content.
func TestQwenCodeQuestionToolTurnsQuestion(t *testing.T) {
	bin := agentBin(t, "qwen")
	var home, work string
	var env []string
	var envFor *proxyUnder // a session run again gets a new proxy, home and work tree
	questionToolTurnsQuestion(t, scripted.Chat, qwenLifecycleBudget, func(px *proxyUnder, prompt string, resume bool) string {
		if envFor != px {
			home, work = t.TempDir(), t.TempDir()
			env, envFor = qwenSetup(t, home, px.http.URL+"/v1"), px
		}
		return lastLine(runQwen(t, bin, work, env, prompt, resume))
	})
}

// clientBodies are the bodies the agent sent to the proxy on api, in order.
func (p *proxyUnder) clientBodies(api scripted.API) [][]byte {
	want := map[scripted.API]string{scripted.Anthropic: proxy.PathAnthropic, scripted.Chat: proxy.PathOpenAI, scripted.Responses: proxy.PathResponses}[api]
	p.mu.Lock()
	defer p.mu.Unlock()
	var out [][]byte
	for i, b := range p.client {
		if p.paths[i] == want {
			out = append(out, b)
		}
	}
	return out
}

// hydrationBlockRE finds a hydration block's opening tag in a request body
// (JSON-escaped quotes).
var hydrationBlockRE = regexp.MustCompile(`<contextfold-hydration step_id=\\"(\d+)\\" artifact_sha256=\\"([0-9a-f]+)\\"`)

// TestCodexSameQuestionTwice asks about step 0's output in two human turns
// in a row (Codex, Responses API): both get the answer line, nothing is
// rejected or rewritten before its end, and the second turn does not
// hydrate the node again while the first turn's hydration of it is still in
// the forwarded conversation: the last request carries each step's
// hydration once, and a request names the node as already in the prompt.
func TestCodexSameQuestionTwice(t *testing.T) {
	bin := agentBin(t, "codex")
	up := scripted.NewWith(lifecycleScript(), thinkingOptions)
	defer up.Close()
	px := newProxyBudget(t, up, codexThinkingBudget)
	home, work := t.TempDir(), t.TempDir()
	env := codexSetup(t, home, px.http.URL+"/v1")
	if out := runCodex(t, bin, work, env, runPrompt, false); !strings.Contains(out, "Build session done: ran 13 steps") {
		t.Fatalf("the session did not finish: %q", tail(out, 500))
	}
	for i := 0; i < 2; i++ {
		if a := lastLine(runCodex(t, bin, work, env, askPrompt(probes[0]), true)); !strings.HasPrefix(a, "SEEN "+probes[0].Name) {
			t.Errorf("question %d: %q", i+1, a)
		}
	}
	recs := px.records()
	for i, r := range recs {
		if r.Status != 200 {
			t.Errorf("request %d: status %d %v", i, r.Status, r.Warnings)
		}
	}
	ws := zipWire(t, up, scripted.Responses, recs, px.clientBodies(scripted.Responses)...)
	checkAppendOnly(t, scripted.Responses, ws)
	checkBinding(t, up)
	last := ws[len(ws)-1].Body
	seen := map[string]int{}
	for _, m := range hydrationBlockRE.FindAllSubmatch(last, -1) {
		seen[string(m[1])]++
	}
	for step, n := range seen {
		if n > 1 {
			t.Errorf("the last request carries step %s's hydration %d times (the earlier turn's, still in the conversation, and this turn's); hydrated tokens this turn: %d", step, n, recs[len(recs)-1].HydratedTokens)
		}
	}
	inPrompt := 0
	for _, r := range recs {
		inPrompt += len(r.StepsInPrompt)
	}
	if len(seen) > 0 && inPrompt == 0 {
		t.Errorf("no request reports a node as already in the prompt (steps_in_prompt), though the question came twice")
	}
}

// TestClaudeCodeCompactAfterFoldEvent runs Claude Code's /compact after a
// fold event, then a question about step 0, once straight at the model and
// once through the proxy. The proxy may add no rejected request to what
// Claude Code meets on its own: straight at the model, its first request
// after /compact (2.1.332) sends back a thinking block whose prefix the
// compaction changed (a 400), and it retries without it. After /compact
// the conversation starts anew, so the proxy opens a new session; the
// question must still be answered from the nodes folded before, through
// the conversation's lineage (proxy/lineage.go).
func TestClaudeCodeCompactAfterFoldEvent(t *testing.T) {
	bin := agentBin(t, "claude")
	play := func(base func(up *scripted.Server) (string, *proxyUnder)) (rejected int, answer string, px *proxyUnder) {
		up := scripted.NewWith(lifecycleScript(), thinkingOptions)
		defer up.Close()
		url, px := base(up)
		home, work := t.TempDir(), t.TempDir()
		env := claudeEnv(home, url)
		res := runClaude(t, bin, work, env, runPrompt, "")
		if !strings.Contains(res.Result, "Build session done: ran 13 steps") {
			t.Fatalf("the session did not finish: %q", res.Result)
		}
		runClaude(t, bin, work, env, "/compact", res.SessionID)
		answer = runClaude(t, bin, work, env, askPrompt(probes[0]), res.SessionID).Result
		b := up.Binding()
		t.Logf("prefix checks: %v", b)
		return b.Rejected, answer, px
	}
	direct, _, _ := play(func(up *scripted.Server) (string, *proxyUnder) { return up.URL, nil })
	proxied, answer, px := play(func(up *scripted.Server) (string, *proxyUnder) {
		px := newProxy(t, up)
		return px.http.URL, px
	})
	if proxied > direct {
		t.Errorf("through the proxy %d requests were rejected over a thinking block, straight at the model %d", proxied, direct)
	}
	sessions := map[string]bool{}
	folds, fromEarlier := 0, 0
	for _, r := range px.records() {
		for _, h := range r.Hydrated {
			if h.From != "" {
				fromEarlier++
			}
		}
		sessions[r.Session+"/g"+strconv.Itoa(r.Generation)] = true
		if r.WorkingSet != nil && r.WorkingSet.FoldEvent {
			folds++
		}
	}
	if folds == 0 {
		t.Errorf("no fold event before /compact")
	}
	t.Logf("rejected over a thinking block: %d straight at the model, %d through the proxy; proxy stores %v", direct, proxied, sessions)
	if len(sessions) < 2 {
		t.Errorf("the compacted conversation is the proxy session it was before (%v): the test does not cover the lineage", sessions)
	}
	// The compacted conversation is a new proxy session; its lineage (the
	// same X-Claude-Code-Session-Id and tools) reads the store the session
	// folded into before /compact.
	if fromEarlier == 0 || !strings.HasPrefix(answer, "SEEN "+probes[0].Name) {
		t.Errorf("after /compact the question about step 0 got %q, %d nodes hydrated from the earlier store: the node folded before /compact holds the answer line", answer, fromEarlier)
	}
}
