package proxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

// chunkReader returns its bytes in reads of the given sizes, in turn.
type chunkReader struct {
	b     []byte
	sizes []int
	k     int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	n := min(len(p), len(r.b), r.sizes[r.k%len(r.sizes)])
	r.k++
	copy(p, r.b[:n])
	r.b = r.b[n:]
	return n, nil
}

// TestBodyDigestReadBoundaries: the block hashes made read by read,
// whatever the reads' sizes and wherever they cut a block, are the maphash
// of each whole bodyBlock of the body, with or without a Content-Length.
func TestBodyDigestReadBoundaries(t *testing.T) {
	seed := maphash.MakeSeed()
	whole := bytes.Repeat([]byte("ok é € 😀 0123456789"), 3*bodyBlock/16)
	sizes := [][]int{{1}, {3, 4093}, {bodyBlock - 1}, {bodyBlock}, {bodyBlock + 1}, {1 << 20}}
	checked := 0
	for _, n := range []int{0, 1, bodyBlock - 1, bodyBlock, bodyBlock + 1, 2*bodyBlock + 7, len(whole)} {
		body := whole[:n]
		var want []uint64
		for k := 0; (k+1)*bodyBlock <= len(body); k++ {
			want = append(want, maphash.Bytes(seed, body[k*bodyBlock:(k+1)*bodyBlock]))
		}
		for _, sz := range sizes {
			if sz[0] == 1 && n > 2*bodyBlock {
				sz = []int{bodyBlock - 3, 1, 1, 1, 1, 2*bodyBlock - 4, 1} // one-byte reads around the boundaries
			}
			d := newBodyDigest(seed)
			buf := make([]byte, len(body))
			if err := readDigesting(&chunkReader{b: body, sizes: sz}, buf, d); err != nil || !bytes.Equal(buf, body) {
				t.Fatalf("readDigesting: %v", err)
			}
			d2 := newBodyDigest(seed)
			all, err := readAllDigesting(&chunkReader{b: body, sizes: sz}, d2)
			if err != nil || !bytes.Equal(all, body) {
				t.Fatalf("readAllDigesting: %v", err)
			}
			for _, x := range []*bodyDigest{d, d2} {
				if len(x.blocks) != len(want) || len(want) > 0 && !reflect.DeepEqual(x.blocks, want) {
					t.Fatalf("body of %d bytes, reads of %v: %d block hashes, want %d (or they differ)", n, sz, len(x.blocks), len(want))
				}
			}
			checked++
		}
	}
	// A body shorter than its Content-Length is an unexpected EOF.
	if err := readDigesting(&chunkReader{b: whole[:10], sizes: []int{4}}, make([]byte, 11), newBodyDigest(seed)); err != io.ErrUnexpectedEOF {
		t.Fatalf("short body: %v, want unexpected EOF", err)
	}
	if checked < 40 {
		t.Fatalf("only %d digests checked", checked)
	}
}

// TestInvalidUTF8SplitAcrossReads: through the proxy, a body that arrives
// in two parts cutting a character is forwarded when the character is
// valid, and answered 400 naming the offset when the two parts make an
// invalid sequence; each part is flushed before the next is written, so
// that the proxy reads them apart.
func TestInvalidUTF8SplitAcrossReads(t *testing.T) {
	up := newUpstream(t)
	tp := newProxyWith(t, up, func(*Options) {})
	send := func(first, second string, length bool) (int, string) {
		pr, pw := io.Pipe()
		req, _ := http.NewRequest("POST", tp.http.URL+PathOpenAI, pr)
		req.Header.Set("Content-Type", "application/json")
		if length {
			req.ContentLength = int64(len(first) + len(second))
		}
		go func() {
			pw.Write([]byte(first))
			time.Sleep(30 * time.Millisecond) // the proxy reads the first part alone
			pw.Write([]byte(second))
			pw.Close()
		}()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	head := `{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("x", 3*bodyBlock/2) + ` price 10`
	for _, length := range []bool{true, false} {
		// € is e2 82 ac: cut after its first byte, then after its second.
		for _, cut := range []int{1, 2} {
			euro := "€"
			code, b := send(head+euro[:cut], euro[cut:]+`"}]}`, length)
			if code != 200 {
				t.Fatalf("valid € cut after %d bytes (Content-Length %v): status %d %s", cut, length, code, b)
			}
			// The same cut with the continuation bytes replaced: invalid.
			code, b = send(head+euro[:cut], "x"+`"}]}`, length)
			if code != http.StatusBadRequest || !strings.Contains(b, "UTF-8") || !strings.Contains(b, fmt.Sprintf("offset %d", len(head))) {
				t.Fatalf("invalid sequence cut after %d bytes (Content-Length %v): status %d %s", cut, length, code, b)
			}
		}
	}
	up.mu.Lock()
	n := len(up.reqs)
	up.mu.Unlock()
	if n != 4 {
		t.Fatalf("the upstream received %d bodies, want the 4 valid ones", n)
	}
}

// longChat is an OpenAI conversation of n messages (tool outputs of about
// 4 kB: a body of many bodyBlocks), with a "metadata" field before the
// messages and the model after them.
func longChat(n int, meta, model string) (body []byte, starts []int) {
	var b bytes.Buffer
	b.WriteString(`{"metadata":{"run":"` + meta + `"},"messages":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		starts = append(starts, b.Len())
		var m any
		switch {
		case i == 0:
			m = map[string]any{"role": "system", "content": "You are a coding agent."}
		case i%2 == 1:
			m = map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"id": "call_" + itoa(i), "type": "function",
				"function": map[string]any{"name": "bash", "arguments": `{"command":"go test ./pkg` + itoa(i) + `"}`}}}}
		default:
			m = map[string]any{"role": "tool", "tool_call_id": "call_" + itoa(i-1), "content": bigLog("pkg"+itoa(i), 110)}
		}
		e, _ := json.Marshal(m)
		b.Write(e)
	}
	b.WriteString(`],"model":"` + model + `"}`)
	return b.Bytes(), starts
}

// TestPrefixBlocksPickTheRightPrefix: a body compared with a remembered
// one by its blocks takes exactly the remembered elements it repeats byte
// for byte — as many as the element-by-element comparison finds, and a
// parse equal to one from scratch — when one byte changes inside an early
// block, inside the last (partial) block, in a field before the messages
// (the blocks then cover nothing), when the array moves in the body, and
// when the same bytes come in another API; and the agent's next request
// takes every remembered element, nearly all by blocks.
func TestPrefixBlocksPickTheRightPrefix(t *testing.T) {
	const n = 301
	base, starts := longChat(n, "r1", "gpt-4.1")
	if len(base) < 8*bodyBlock {
		t.Fatalf("the conversation is %d bytes, want many blocks", len(base))
	}
	grown, _ := longChat(n+2, "r1", "gpt-4.1")
	change := func(b []byte, at int) []byte {
		c := append([]byte(nil), b...)
		if c[at] == '7' {
			c[at] = '8'
		} else {
			c[at] = '7'
		}
		return c
	}
	// A digit inside message i's tool output.
	digitIn := func(i int) int {
		j := bytes.Index(base[starts[i]:], []byte("line 1"))
		if j < 0 {
			t.Fatalf("no digit in message %d", i)
		}
		return starts[i] + j + 5
	}
	early := 4 // message 4 lies in the first block
	if digitIn(early) >= bodyBlock {
		t.Fatal("message 4 is past the first block")
	}
	late := n - 1
	if lastWhole := len(base) / bodyBlock * bodyBlock; digitIn(late) < lastWhole {
		t.Fatal("the last message does not end in the last, partial block")
	}
	metaAt := bytes.Index(base, []byte(`"r1"`)) + 2
	moved, _ := longChat(n, "r1-longer", "gpt-4.1")
	cases := []struct {
		name     string
		api      API
		body     []byte
		known    int  // elements taken
		byBlocks bool // most of them by blocks
	}{
		{"the next request", APIOpenAI, grown, n, true},
		{"the same body again", APIOpenAI, base, n, true},
		{"a byte changed in an early block", APIOpenAI, change(base, digitIn(early)), early, false},
		{"a byte changed in message 150", APIOpenAI, change(base, digitIn(150)), 150, true},
		{"a byte changed in the last, partial block", APIOpenAI, change(base, digitIn(late)), late, true},
		{"a field before the messages changed", APIOpenAI, change(base, metaAt), n, false},
		{"the array moved in the body", APIOpenAI, moved, n, false},
		{"the same bytes in another API", APIAnthropic, base, 0, false},
	}
	for _, tc := range cases {
		var known [2]int
		for k, byElement := range []bool{false, true} {
			c := newParseCache()
			c.byElement = byElement
			r, err := parseRequestCached(APIOpenAI, base, c)
			if err != nil {
				t.Fatal(err)
			}
			r.measure(nil, true, "heuristic")
			c.remember(r, "heuristic")
			got, err := parseRequestCached(tc.api, tc.body, c)
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			want, err := parseRequest(tc.api, tc.body)
			if err != nil {
				t.Fatal(err)
			}
			gt, _ := got.measure(nil, true, "heuristic")
			wt, _ := want.measure(nil, true, "heuristic")
			if gt != wt || !reflect.DeepEqual(comparableMsgs(got.msgs), comparableMsgs(want.msgs)) || !reflect.DeepEqual(got.elems, want.elems) {
				t.Fatalf("%s (by element %v, known %d): the parse differs from one from scratch", tc.name, byElement, got.known)
			}
			known[k] = got.known
			blocked := got.prefix.blocked
			switch {
			case got.known != tc.known:
				t.Fatalf("%s (by element %v): took %d remembered elements, want %d", tc.name, byElement, got.known, tc.known)
			case byElement && blocked != 0:
				t.Fatalf("%s: the element path took %d elements by blocks", tc.name, blocked)
			case !byElement && tc.byBlocks && blocked < tc.known*3/4:
				t.Fatalf("%s: only %d of the %d elements taken by blocks", tc.name, blocked, got.known)
			case !byElement && !tc.byBlocks && blocked != 0:
				t.Fatalf("%s: %d elements taken by blocks, want none", tc.name, blocked)
			}
		}
		if known[0] != known[1] {
			t.Fatalf("%s: blocks took %d elements, the element path %d", tc.name, known[0], known[1])
		}
	}
}

// twinProxies are two proxies, each with its upstream: the first compares
// conversations with its prefix states by the body's blocks, the second
// element by element.
type twinProxies struct {
	t     *testing.T
	path  string
	px    [2]*httptest.Server
	mu    sync.Mutex
	fwd   [2][][]byte
	recs  [2][]RequestRecord
	done  chan struct{}
	reply string
}

func newTwinProxies(t *testing.T, api API) *twinProxies {
	tw := &twinProxies{t: t, path: PathOpenAI, reply: openaiReply, done: make(chan struct{}, 2)}
	if api == APIAnthropic {
		tw.path, tw.reply = PathAnthropic, anthropicReply
	}
	for k := range 2 {
		up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			tw.mu.Lock()
			tw.fwd[k] = append(tw.fwd[k], b)
			tw.mu.Unlock()
			io.WriteString(w, tw.reply)
		}))
		t.Cleanup(up.Close)
		srv, err := New(Options{Dir: t.TempDir(), Upstream: up.URL, Clock: fixedClock, Logger: discardLogger(),
			OnRequest: func(r RequestRecord) {
				tw.mu.Lock()
				tw.recs[k] = append(tw.recs[k], r)
				tw.mu.Unlock()
				tw.done <- struct{}{}
			}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { srv.Close() }) // its work after the responses ends before the directory goes
		srv.cache.byElement = k == 1
		tw.px[k] = httptest.NewServer(srv)
		t.Cleanup(tw.px[k].Close)
	}
	return tw
}

// send posts body to both proxies in turn and checks that their upstreams
// received the same bytes and their records say the same.
func (tw *twinProxies) send(name string, body []byte) {
	t := tw.t
	for k := range 2 {
		resp, err := http.Post(tw.px[k].URL+tw.path, "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		<-tw.done
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %s", name, resp.Status)
		}
	}
	tw.mu.Lock()
	defer tw.mu.Unlock()
	a, b := tw.fwd[0][len(tw.fwd[0])-1], tw.fwd[1][len(tw.fwd[1])-1]
	if !bytes.Equal(a, b) {
		i := commonPrefix(a, b)
		t.Fatalf("%s: the block path forwarded %d bytes, the element path %d, differing from byte %d:\n%.200q\n%.200q",
			name, len(a), len(b), i, a[i:], b[i:])
	}
	ra, rb := tw.recs[0][len(tw.recs[0])-1], tw.recs[1][len(tw.recs[1])-1]
	ra.Overhead, ra.BodyRead, ra.Duration, rb.Overhead, rb.BodyRead, rb.Duration = 0, 0, 0, 0, 0, 0
	ra.Durable, rb.Durable = 0, 0
	if !reflect.DeepEqual(ra, rb) {
		t.Fatalf("%s: the records differ:\n%+v\n%+v", name, ra, rb)
	}
}

// TestBlockPathForwardsSameBytes: every request of every bundled
// transcript's replay (the long chained session too with
// CONTEXTFOLD_REPLAY_FULL=1), and the same requests with a field before
// the messages changing at each request, or (Anthropic) a cache_control
// marker moving to the last message, are forwarded byte for byte the same
// by a proxy comparing conversations by the body's blocks and by one
// comparing them element by element, with the same records.
func TestBlockPathForwardsSameBytes(t *testing.T) {
	if testing.Short() {
		t.Skip("replay skipped in -short mode")
	}
	full := os.Getenv("CONTEXTFOLD_REPLAY_FULL") == "1"
	requests, large := 0, 0
	for _, rs := range sessions(t) {
		if !full && strings.HasPrefix(rs.name, "long/") {
			continue
		}
		var system string
		var msgs []map[string]any
		if rs.api == APIAnthropic {
			system, msgs = anthropicMessages(rs.turns)
		} else {
			msgs = chatMessages(rs.turns)
		}
		variants := []string{"as replayed", "a field before the messages"}
		if rs.api == APIAnthropic {
			variants = append(variants, "a moving cache_control marker")
		}
		for _, variant := range variants {
			tw := newTwinProxies(t, rs.api)
			for k := 1; k <= len(msgs); k++ {
				if k < len(msgs) && msgs[k]["role"] != "assistant" || msgs[k-1]["role"] == "assistant" {
					continue
				}
				hist := history(msgs, k, rs.api)
				req := map[string]any{"model": "gpt-4.1", "messages": hist}
				if rs.api == APIAnthropic {
					req = map[string]any{"model": "claude-sonnet-4-5", "max_tokens": 4096, "messages": hist}
					if system != "" {
						req["system"] = system
					}
				}
				switch variant {
				case "a field before the messages":
					// "metadata" sorts before "messages": a field before
					// the array, changing at every request and its length
					// every other one.
					req["metadata"] = map[string]any{"request": strings.Repeat("n", k%2+1) + itoa(k)}
				case "a moving cache_control marker":
					req["messages"] = markLast(hist)
				}
				body, _ := json.Marshal(req)
				if len(body) > 2*bodyBlock {
					large++
				}
				tw.send(fmt.Sprintf("%s (%s), request with %d messages", rs.name, variant, k), body)
				requests++
			}
		}
	}
	if requests < 300 || large < 50 {
		t.Fatalf("%d requests compared, %d of them of more than two blocks: too few", requests, large)
	}
	t.Logf("%d requests compared, %d of more than two blocks", requests, large)
}

// markLast returns msgs with a cache_control marker on the last message's
// last content block (Claude Code moves it to the newest message at each
// request).
func markLast(msgs []map[string]any) []map[string]any {
	out := append([]map[string]any(nil), msgs...)
	last := map[string]any{}
	for k, v := range out[len(out)-1] {
		last[k] = v
	}
	switch c := last["content"].(type) {
	case string:
		last["content"] = []any{map[string]any{"type": "text", "text": c, "cache_control": map[string]any{"type": "ephemeral"}}}
	case []any:
		if len(c) > 0 {
			if b, ok := c[len(c)-1].(map[string]any); ok {
				nb := map[string]any{}
				for k, v := range b {
					nb[k] = v
				}
				nb["cache_control"] = map[string]any{"type": "ephemeral"}
				c = append(append([]any(nil), c[:len(c)-1]...), nb)
				last["content"] = c
			}
		}
	}
	out[len(out)-1] = last
	return out
}
