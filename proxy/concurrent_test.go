package proxy

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/harness"
	"github.com/contextfold/contextfold/internal/fsutil"
	"github.com/contextfold/contextfold/match"
)

// concurrentFirstBody is the first request of a new session in api's
// shape: a task, steps tool calls with verbose outputs (one package each,
// pkg1…), and a human prompt that names one of them (pkg7), so that the
// request is a fold event and its scan hydrates the folded output of pkg7.
func concurrentFirstBody(api API, steps int) []byte {
	return concurrentFirstBodyAsking(api, steps, "why did the pkg7 module fail to compile?")
}

// concurrentFirstBodyAsking is concurrentFirstBody with another prompt.
func concurrentFirstBodyAsking(api API, steps int, prompt string) []byte {
	type msg = map[string]any
	var items []any
	add := func(m msg) { items = append(items, m) }
	const task = "Fix the parser so that every package builds."
	top := msg{"model": "m", "stream": false}
	key := "messages"
	switch api {
	case APIOpenAI:
		add(msg{"role": "system", "content": "You are a coding agent."})
		add(msg{"role": "user", "content": task})
	case APIAnthropic:
		top["system"], top["max_tokens"] = "You are a coding agent.", 1024
		add(msg{"role": "user", "content": []any{msg{"type": "text", "text": task}}})
	case APIResponses:
		key, top["instructions"] = "input", "You are a coding agent."
		add(msg{"type": "message", "role": "user", "content": []any{msg{"type": "input_text", "text": task}}})
	}
	for i := 1; i <= steps; i++ {
		id, cmd, out := "call_"+itoa(i), `{"command":"go build ./pkg`+itoa(i)+`"}`, bigLog("pkg"+itoa(i), 40)
		switch api {
		case APIOpenAI:
			add(msg{"role": "assistant", "content": nil, "tool_calls": []any{msg{"id": id, "type": "function", "function": msg{"name": "bash", "arguments": cmd}}}})
			add(msg{"role": "tool", "tool_call_id": id, "content": out})
		case APIAnthropic:
			add(msg{"role": "assistant", "content": []any{msg{"type": "tool_use", "id": id, "name": "bash", "input": msg{"command": "go build ./pkg" + itoa(i)}}}})
			add(msg{"role": "user", "content": []any{msg{"type": "tool_result", "tool_use_id": id, "content": out}}})
		case APIResponses:
			add(msg{"type": "function_call", "call_id": id, "name": "bash", "arguments": cmd})
			add(msg{"type": "function_call_output", "call_id": id, "output": out})
		}
	}
	switch api {
	case APIResponses:
		add(msg{"type": "message", "role": "user", "content": []any{msg{"type": "input_text", "text": prompt}}})
	case APIAnthropic:
		add(msg{"role": "user", "content": []any{msg{"type": "text", "text": prompt}}})
	default:
		add(msg{"role": "user", "content": prompt})
	}
	top[key] = items
	b, err := json.Marshal(top)
	if err != nil {
		panic(err)
	}
	return b
}

// TestConcurrentFirstRequestsOfOneSession sends the first request of a new
// session n times at once (a client retrying, parallel requests of one
// agent, several tabs), in each API's shape. The first of them to be
// dispatched is a fold event and hydrates the folded output the prompt asks
// about; the others, dispatched while that fold event's durable part may
// still run, find it folded and give the same hydration. Every one must be
// forwarded the same bytes with that hydration and answered 200 without a
// warning; each hydration is evicted exactly once (n eviction events, the
// node marked evicted, no eviction left pending in the saved state); the
// store validates clean with every folded step present. Before: the
// requests dispatched while the fold event's commit was running evicted the
// first one's hydration from a store whose recall index was not yet on
// disk, so the store answered "node not found" (the warning "evict failed:
// node not found: step 15 is not in the recall index"), their eviction
// events were lost, and at worst the node stayed hydrated in the store and
// pending in the saved state.
//
// The upstream holds every request until all n have reached it, so the n
// requests are in flight together whatever the scheduling: what they
// overlap is decided by the proxy, not by timing, and the assertions hold
// for every order the proxy may dispatch them in.
func TestConcurrentFirstRequestsOfOneSession(t *testing.T) {
	const n = 8
	for _, api := range []API{APIOpenAI, APIAnthropic, APIResponses} {
		t.Run(string(api), func(t *testing.T) {
			path := map[API]string{APIOpenAI: PathOpenAI, APIAnthropic: PathAnthropic, APIResponses: PathResponses}[api]
			reply := map[API]string{APIOpenAI: openaiReply, APIAnthropic: anthropicReply, APIResponses: responsesReply}[api]
			arrive, all := barrier(n)
			up := newUpstream(t)
			up.handler = func(w http.ResponseWriter, r *http.Request) {
				arrive()
				select {
				case <-all:
				case <-r.Context().Done():
					return
				}
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, reply)
			}
			cfg := harness.Config{ContextBudget: 3000, HotWindow: 2, MinFoldTokens: 50, Match: match.Ranked, PaybackRequests: -1}
			tp := newProxy(t, up, cfg)
			body := concurrentFirstBody(api, 30)
			type answer struct {
				status  int
				warning string
				err     error
			}
			answers := make([]answer, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					resp, err := http.Post(tp.http.URL+path, "application/json", bytes.NewReader(body))
					if err != nil {
						answers[i].err = err
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					answers[i] = answer{status: resp.StatusCode, warning: resp.Header.Get(HeaderWarning)}
				}()
			}
			wg.Wait()
			for i, a := range answers {
				if a.err != nil || a.status != 200 || a.warning != "" {
					t.Errorf("request %d: status %d, warning %q, error %v", i, a.status, a.warning, a.err)
				}
			}
			recs := make([]RequestRecord, n)
			for i := range n {
				recs[i] = tp.record(t, i+1)
			}
			// Every answered request's state is saved and its evictions
			// written (the kept events of the eviction log's batch too).
			if err := tp.srv.Close(); err != nil {
				t.Fatal(err)
			}

			foldEvents, hydrations := 0, 0
			for i, rec := range recs {
				if len(rec.Warnings) > 0 {
					t.Errorf("request %d: warnings %q", i, rec.Warnings)
				}
				if rec.WorkingSet != nil && rec.WorkingSet.FoldEvent {
					foldEvents++
				}
				if len(rec.StepsHydrated) == 0 || !slices.Equal(rec.StepsHydrated, recs[0].StepsHydrated) {
					t.Errorf("request %d hydrated %v, request 0 %v: want the same steps", i, rec.StepsHydrated, recs[0].StepsHydrated)
				}
				hydrations += len(rec.StepsHydrated)
				if rec.Session != recs[0].Session || rec.Generation != 1 {
					t.Errorf("request %d went to session %s/g%d, request 0 to %s/g1", i, rec.Session, rec.Generation, recs[0].Session)
				}
			}
			if foldEvents != 1 {
				t.Errorf("%d fold events among the %d requests, want 1", foldEvents, n)
			}
			if t.Failed() {
				t.FailNow()
			}
			steps := recs[0].StepsHydrated

			// The same forwarded bytes for every request as for the same
			// request sent alone, with the hydration of the step the
			// prompt asks about.
			refUp := newUpstream(t)
			ref := newProxy(t, refUp, cfg)
			if resp, out := post(t, ref.http.URL+path, body, nil); resp.StatusCode != 200 {
				t.Fatalf("the request alone: status %d: %s", resp.StatusCode, out)
			}
			alone := refUp.last(t).Body
			up.mu.Lock()
			fwd := append([]recorded(nil), up.reqs...)
			up.mu.Unlock()
			if len(fwd) != n {
				t.Fatalf("the upstream received %d requests, want %d", len(fwd), n)
			}
			for i, r := range fwd {
				if !bytes.Equal(r.Body, alone) {
					t.Errorf("forwarded body %d differs from the one the request gets alone", i)
				}
			}
			var blocks []harness.HydratedNode
			for _, s := range jsonStrings(t, alone) {
				blocks = append(blocks, harness.HydrationBlocks(s)...)
			}
			var inFwd []int
			pkg7 := false
			for _, b := range blocks {
				inFwd = append(inFwd, b.StepID)
				pkg7 = pkg7 || strings.Contains(b.Content, "compiled pkg7 module")
			}
			if !slices.Equal(inFwd, steps) || !pkg7 {
				t.Errorf("the forwarded request carries the hydration of steps %v (pkg7's output: %v), want %v with pkg7's", inFwd, pkg7, steps)
			}

			// The store: whole, every folded step indexed, the node evicted
			// once per request that hydrated it.
			st := tp.store(t, recs[0])
			rep, err := st.Validate()
			if err != nil {
				t.Fatal(err)
			}
			if !rep.OK() {
				t.Errorf("validate: %+v", rep.Findings)
			}
			entries, err := st.Entries()
			if err != nil {
				t.Fatal(err)
			}
			refEntries, err := ref.store(t, ref.record(t, 1)).Entries()
			if err != nil {
				t.Fatal(err)
			}
			if len(entries) == 0 || !slices.EqualFunc(entries, refEntries, func(a, b *contextfold.Entry) bool {
				return a.StepID == b.StepID && a.PayloadSHA256 == b.PayloadSHA256
			}) || rep.Passed != len(entries) {
				t.Errorf("the store indexes %d steps (%d verified); the request alone folds %d", len(entries), rep.Passed, len(refEntries))
			}
			for _, e := range entries {
				if slices.Contains(steps, e.StepID) && !e.Evicted {
					t.Errorf("step %d was hydrated by every request and is not marked evicted", e.StepID)
				}
			}
			var evlog struct {
				Evicted []struct {
					StepID int `json:"step_id"`
				} `json:"evicted"`
			}
			data, err := os.ReadFile(filepath.Join(st.Dir(), contextfold.EvictionLogFile))
			if err == nil {
				err = json.Unmarshal(data, &evlog)
			}
			if err != nil {
				t.Errorf("eviction log: %v", err)
			}
			byStep := map[int]int{}
			for _, ev := range evlog.Evicted {
				byStep[ev.StepID]++
			}
			for _, s := range steps {
				if byStep[s] != n {
					t.Errorf("the eviction log holds %d events of step %d, want one per request that hydrated it: %d", byStep[s], s, n)
				}
			}
			if len(evlog.Evicted) != hydrations {
				t.Errorf("the eviction log holds %d events, want one per hydration: %d", len(evlog.Evicted), hydrations)
			}
			state, err := os.ReadFile(tp.srv.statePath(recs[0].Session, 1))
			if err != nil {
				t.Fatal(err)
			}
			var saved struct {
				Pending []json.RawMessage `json:"pending"`
			}
			if err := json.Unmarshal(state, &saved); err != nil {
				t.Fatal(err)
			}
			if len(saved.Pending) != 0 {
				t.Errorf("the saved session state still has evictions pending: %s", saved.Pending)
			}
		})
	}
}

// jsonStrings returns every string value of the JSON document b.
func jsonStrings(t *testing.T, b []byte) []string {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			out = append(out, x)
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	return out
}

// TestConcurrentFirstRequestsAnsweredOnceDurable sends the first request of
// a new session n times at once with a prompt that hydrates nothing, and
// holds the fold event's durable part (after its nodes' fsyncs, before
// their renames) until all n requests reached the upstream: the requests
// dispatched after the fold event relied on it (their forwarded bodies
// carry its records and page table) without evicting anything of it. Each
// client must get its response only once that fold event is durable, as
// the request that made it does: when a client has its answer, the recall
// index on disk names every folded step. Before, those requests were
// answered at once, while the fold event's commit could still fail.
func TestConcurrentFirstRequestsAnsweredOnceDurable(t *testing.T) {
	const n = 4
	arrive, all := barrier(n) // all: closed once the n requests reached the upstream
	var once sync.Once
	setCrashPoint(t, func(p string) {
		if p == fsutil.BatchSynced {
			once.Do(func() { // the concurrent requests' fold event only
				select {
				case <-all:
				case <-time.After(settleWait): // only a proxy that never forwards them reaches it
				}
			})
		}
	})
	up := newUpstream(t)
	up.handler = func(w http.ResponseWriter, r *http.Request) {
		arrive()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, openaiReply)
	}
	cfg := harness.Config{ContextBudget: 3000, HotWindow: 2, MinFoldTokens: 50, Match: match.Ranked, PaybackRequests: -1}
	tp := newProxy(t, up, cfg)
	body := concurrentFirstBodyAsking(APIOpenAI, 30, "thanks, carry on with the remaining work")
	indexed := func() int { // the steps the recall index on disk names
		files, _ := filepath.Glob(filepath.Join(tp.dir, "*", "g1", contextfold.IndexFile))
		if len(files) != 1 {
			return 0
		}
		data, err := os.ReadFile(files[0])
		if err != nil {
			return 0
		}
		var ix struct {
			Nodes map[string]json.RawMessage `json:"nodes"`
		}
		if err := json.Unmarshal(data, &ix); err != nil {
			t.Error(err)
		}
		return len(ix.Nodes)
	}
	got := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := http.Post(tp.http.URL+PathOpenAI, "application/json", bytes.NewReader(body))
			if err != nil {
				t.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Errorf("request %d: status %d", i, resp.StatusCode)
			}
			got[i] = indexed()
		}()
	}
	wg.Wait()
	foldEvents := 0
	for i := range n {
		rec := tp.record(t, i+1)
		if len(rec.StepsHydrated) > 0 || len(rec.Warnings) > 0 {
			t.Errorf("request %d: hydrated %v, warnings %q; want neither", i+1, rec.StepsHydrated, rec.Warnings)
		}
		if rec.WorkingSet != nil && rec.WorkingSet.FoldEvent {
			foldEvents++
		}
	}
	if foldEvents != 1 {
		t.Errorf("%d fold events, want 1", foldEvents)
	}
	want := indexed()
	if want == 0 {
		t.Fatal("the fold event indexed nothing")
	}
	for i, g := range got {
		if g != want {
			t.Errorf("client %d had its answer when the recall index on disk named %d steps; the fold event folded %d", i, g, want)
		}
	}
}

// barrier returns arrive, which each of n upstream requests calls once,
// and a channel closed when the n-th has.
func barrier(n int) (arrive func(), all <-chan struct{}) {
	ch := make(chan struct{})
	var mu sync.Mutex
	arrived := 0
	return func() {
		mu.Lock()
		defer mu.Unlock()
		if arrived++; arrived == n {
			close(ch)
		}
	}, ch
}
