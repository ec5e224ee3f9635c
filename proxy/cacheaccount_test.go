package proxy

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/contextfold/contextfold/harness"
	"github.com/contextfold/contextfold/tokens"
)

// unicodeSession is the first n messages of an agent session whose tool
// outputs carry multi-byte text (about 3 kB each), ending in a human
// question whose text is last; maxTokens, when not 0, is the body's
// max_tokens (written before the messages).
func unicodeSession(n int, last string, maxTokens int) []byte {
	msgs := []any{map[string]any{"role": "system", "content": "Tu es un agent de développement — réponds en français."}}
	for i := 1; len(msgs) < n-1; i++ {
		var out strings.Builder
		for k := range 30 {
			out.WriteString("ligne " + itoa(k) + " : module pkg" + itoa(i) + " compilé ✓ — durée 0,4 s 😀 naïve façade\n")
		}
		msgs = append(msgs, map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
			"id": "call_" + itoa(i), "type": "function", "function": map[string]any{"name": "bash", "arguments": `{"command":"go test ./pkg` + itoa(i) + `"}`}}}},
			map[string]any{"role": "tool", "tool_call_id": "call_" + itoa(i), "content": out.String()})
	}
	msgs = append(msgs[:n-1], map[string]any{"role": "user", "content": last})
	top := map[string]any{"model": "gpt-4.1", "messages": msgs}
	if maxTokens != 0 {
		top["max_tokens"] = maxTokens
	}
	b, _ := json.Marshal(top) // keys sorted: max_tokens, messages, model
	return b
}

// fullEstimate is the IPCF-1.1 reference estimate counted from scratch:
// max(1, ⌊code points / 4⌋), an invalid byte (the tail of a cut sequence)
// counting as one.
func fullEstimate(b []byte) int { return max(1, utf8.RuneCount(b)/4) }

// TestCachedTokensEqualFullCount: the cached prefixes the proxy reports
// (ClientCachedTokens against the previous client body,
// ForwardedCachedTokens against the previous forwarded body) are exactly
// what counting each shared prefix from scratch gives, under the
// heuristic counter, through a growing session with fold events, a body
// that grows by more than a 64 KiB block between requests and one whose
// difference starts inside a multi-byte character (é → è: the cut falls
// between the two bytes of one code point).
func TestCachedTokensEqualFullCount(t *testing.T) {
	up := newUpstream(t)
	tp := newProxy(t, up, harness.Config{ContextBudget: 20_000})
	bodies := [][]byte{
		unicodeSession(60, "où en est pkg12 ?", 0),
		unicodeSession(62, "où en est pkg12 ?", 0),
		unicodeSession(62, "où en èst pkg12 ?", 0), // differs inside "é"
		unicodeSession(100, "et pkg40, résumé ?", 0),
		unicodeSession(140, "et pkg40, résumé ?", 0),
		unicodeSession(142, "et pkg40, rèsumé ?", 0),
		unicodeSession(142, "et pkg40, rèsumé ?", 900), // differs in its first block
		unicodeSession(142, "et pkg40, rèsumé ?", 901),
	}
	folds := 0
	for i, body := range bodies {
		resp, got := post(t, tp.http.URL+PathOpenAI, body, map[string]string{HeaderSession: "cached-prefix"})
		if resp.StatusCode != 200 {
			t.Fatalf("request %d: status %d: %s", i+1, resp.StatusCode, got)
		}
		rec := tp.record(t, i+1)
		if rec.WorkingSet == nil {
			t.Fatalf("request %d: no working set (warnings %v)", i+1, rec.Warnings)
		}
		if rec.WorkingSet.FoldEvent {
			folds++
		}
		out := up.last(t).Body
		if rec.ClientTokens != fullEstimate(body) || rec.ForwardedTokens != fullEstimate(out) {
			t.Errorf("request %d: client %d forwarded %d tokens, a full count gives %d and %d",
				i+1, rec.ClientTokens, rec.ForwardedTokens, fullEstimate(body), fullEstimate(out))
		}
		wantClient, wantOut := 0, 0
		if i > 0 {
			if n := commonPrefix(body, bodies[i-1]); n > 0 {
				wantClient = fullEstimate(body[:n])
			}
			up.mu.Lock()
			prev := up.reqs[len(up.reqs)-2].Body
			up.mu.Unlock()
			if n := commonPrefix(out, prev); n > 0 {
				wantOut = fullEstimate(out[:n])
			}
		}
		if rec.ClientCachedTokens != wantClient {
			t.Errorf("request %d: ClientCachedTokens %d, a full count of the shared prefix gives %d", i+1, rec.ClientCachedTokens, wantClient)
		}
		if rec.ForwardedCachedTokens != wantOut {
			t.Errorf("request %d: ForwardedCachedTokens %d, a full count of the shared prefix gives %d", i+1, rec.ForwardedCachedTokens, wantOut)
		}
	}
	if folds < 2 {
		t.Errorf("%d fold events, want at least 2 (the forwarded prefix must change)", folds)
	}
}

// TestPrefixTokensHeuristic: under the heuristic, prefixTokens from the
// whole body's code points equals a count of the prefix from scratch at
// every cut, those inside a multi-byte character included.
func TestPrefixTokensHeuristic(t *testing.T) {
	body := unicodeSession(12, "où en est pkg12 ? 😀", 0)
	runes := utf8.RuneCount(body)
	for n := 1; n < len(body); n++ {
		if got, want := prefixTokens(body, n, fullEstimate(body), runes, true, nil), fullEstimate(body[:n]); got != want {
			t.Fatalf("cut at %d of %d (byte %#x): %d tokens, a full count gives %d", n, len(body), body[n], got, want)
		}
	}
}

// TestPrefixTokensBytePair: under a byte-pair encoding the cached prefix is
// the body's count minus that of the rest, within a few tokens of counting
// the prefix itself (the tokens the cut splits), on cuts at message
// boundaries, inside JSON strings and inside a multi-byte character.
func TestPrefixTokensBytePair(t *testing.T) {
	for _, name := range []string{"o200k_base", "cl100k_base"} {
		c, err := tokens.ByName(name)
		if err != nil {
			t.Fatal(err)
		}
		body := unicodeSession(80, "où en est pkg12 ?", 0)
		total := c.Count(string(body))
		worst := 0
		for _, n := range []int{1, 17, len(body) / 3, len(body) / 2, len(body) - 40, len(body) - 3, len(body) - 1} {
			for d := range 12 { // every offset around n, inside characters too
				cut := min(n+d, len(body))
				got := prefixTokens(body, cut, total, 0, false, c.Count)
				want := c.Count(string(body[:cut]))
				worst = max(worst, abs(got-want))
			}
		}
		if worst > 3 {
			t.Errorf("%s: prefixTokens is %d tokens off a full count of the prefix, want at most 3", name, worst)
		}
	}
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// BenchmarkCacheAccount is cacheAccount alone (it runs before the client's
// response completes) for a request that extends the previous one by a
// tool call and its output, at 500 and 8,000 messages: its cost should
// not grow with the conversation (the shared prefix is found from the
// block hashes, its tokens by subtraction, the body kept, not copied).
func BenchmarkCacheAccount(b *testing.B) {
	for _, n := range []int{500, 8000} {
		b.Run(itoa(n), func(b *testing.B) {
			srv, err := New(Options{Dir: b.TempDir(), Upstream: "http://127.0.0.1:1", Clock: fixedClock, Logger: newDiscardLogger()})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { srv.Close() }) // its work after the responses ends before the directory goes
			sess, err := srv.session(nil, "bench", 0)
			if err != nil {
				b.Fatal(err)
			}
			prev, body := conversationOf(n, false), conversationOf(n+2, false)
			digest := func(x []byte) []uint64 {
				d := newBodyDigest(srv.cache.seed)
				d.add(x)
				return d.blocks
			}
			prevBlocks, blocks := digest(prev), digest(body)
			// The forwarded body is bounded by the budget, not the
			// conversation: 160 kB (40k tokens) at any length.
			out := bytes.Clone(body[:min(len(body), 160<<10)])
			runes, outRunes := runeCount(body), runeCount(out)
			b.SetBytes(int64(len(body)))
			b.ResetTimer()
			for range b.N {
				sess.prevBody, sess.prevBodyOwned, sess.prevBlocks, sess.prevOut = prev, false, prevBlocks, out
				st := &reqState{wsBody: body, wsOut: out, wsBlocks: blocks, clientRunes: runes, outRunes: outRunes}
				st.rec.ClientTokens, st.rec.ForwardedTokens = max(1, runes/4), max(1, outRunes/4)
				srv.cacheAccount(sess, st)
			}
		})
	}
}
