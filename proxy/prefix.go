package proxy

import (
	"container/list"
	"hash/maphash"
	"sort"
	"sync/atomic"

	"github.com/contextfold/contextfold/harness"
)

// The prefix cache (the proxy's overhead must stay flat in the
// conversation's length). An agent resends its whole conversation with each
// request, one or two messages longer. The element cache (parseCache) spares
// re-parsing each message, but still costs a hash, a map lookup and a copy
// per message. The prefix cache keeps, per recent conversation, the whole
// parse of its messages array (elements, neutral messages with their tools
// resolved and their tokens counted, splice spans). A request whose array
// starts with the same bytes takes that parse as is and reads only what
// follows it. Two hashes say which bytes are the same:
//
//   - the body's blocks: the intake hashes every whole bodyBlock of a body
//     from byte 0 while it arrives (intake.go: bodyDigest), and a state keeps
//     the block hashes of the body it was read from. When a body's first K
//     blocks are the state's, so are its first K×bodyBlock bytes: every
//     element of the state ending within them is there, at the same offset,
//     and no byte of it is hashed again after the body's last byte arrived.
//     An agent's next request repeats every block but the last few, so what
//     is left is the state's elements past its last repeated block (less
//     than a block, and the one element straddling it) and the new bytes.
//   - the elements' segments: per element, a hash of the bytes from the end
//     of the element before it (the array's '[' for the first) to its own
//     end. From the first element the blocks do not cover, the elements are
//     compared segment by segment up to the first that differs; when the
//     blocks cover nothing (a field before the array changed, or the array
//     moved in the body: another model name), that is every element, one
//     pass of maphash over the array (the element path, as before blocks).
//
// Both are maphash values under the parse cache's seed, drawn at random per
// process, like the element cache's keys: a client cannot forge a collision,
// and an accidental one has odds of 2⁻⁶⁴ per comparison. Reading a taken
// element again would cost what the cache saves, so the hashes stand for its
// bytes: the JSON and UTF-8 checks of the state's request hold for them.

// prefixCacheBytes bounds the array bytes the prefix states stand for, and
// prefixCacheStates their number; past either, the least recently used
// state is dropped. The memory a state holds is about its neutral messages'
// text, which the element cache shares.
const (
	prefixCacheBytes  = 128 << 20
	prefixCacheStates = 256
)

// prefixState is the parse of a request's conversation array, read-only
// once stored.
type prefixState struct {
	api  API
	key  uint64 // bucket: hash of the array's first two elements
	base int    // offset of the array ('[') in the body it was read from
	// blocks are the hashes of the whole bodyBlocks of that body.
	blocks []uint64
	// Per element j: its span in that body, the hash of its segment (the
	// bytes from the end of element j-1, or from base, to its end), the
	// runes of the bytes from base to its end, and the tokens of msgs[:j+1].
	elems  []span
	seg    []uint64
	cum    []int
	tokens []int
	// The parse of each element (see request).
	msgs   []harness.Message
	spans  [][]span
	points []appendAt
	events [][]toolEvent
	roles  []string
	kinds  []string
	// counter names the token counter msgs' Tokens were counted with.
	counter string
	size    int // bytes from base to the end of the last element
	el      *list.Element
	// claimed is set by the one request allowed to extend the state's
	// arrays in place, past their length (see claim).
	claimed atomic.Bool
}

// claim reports whether the caller may extend st's arrays in place: append
// its own elements after st's, in the arrays' spare capacity, without
// copying st's. Only one request ever may (the state itself never reads
// past its length, and neither does any other request taking it), and only
// one that holds every element of st at the same offset.
func (st *prefixState) claim() bool { return st.claimed.CompareAndSwap(false, true) }

// extend returns s (a state's array of which the first k elements are
// taken) with length n: in place when allowed and the capacity suffices,
// else a copy of the k elements with room to grow, so that the requests
// after it extend in place too.
func extend[T any](s []T, k, n int, inPlace bool) []T {
	if inPlace && cap(s) >= n {
		return s[:n]
	}
	out := make([]T, n, n+n/4+16)
	copy(out, s[:k])
	return out
}

// prefixMatch is what a request took from a prefix state.
type prefixMatch struct {
	parent *prefixState
	known  int // elements taken from parent
	// blocked: of those, the elements the body's blocks cover (no byte
	// of them hashed after the body arrived).
	blocked int
	key     uint64
	keyOK   bool
	// inPlace: the request claimed parent (every element, same offset).
	inPlace bool
}

// bucketKey hashes the first two elements of the array at a: sessions of
// one agent share a system prompt, rarely the task.
func (c *parseCache) bucketKey(api API, body []byte, a int) (uint64, bool) {
	i := skipWS(body, a+1)
	end := -1
	for n := 0; n < 2; n++ {
		if i >= len(body) || body[i] == ']' {
			return 0, false
		}
		e := valueEnd(body, i)
		if e <= i || e > len(body) {
			return 0, false
		}
		end = e
		i = skipWS(body, e)
		if i >= len(body) || body[i] != ',' {
			return 0, false
		}
		i = skipWS(body, i+1)
	}
	var h maphash.Hash
	h.SetSeed(c.seed)
	h.WriteString(string(api))
	h.Write(body[a:end])
	return h.Sum64(), true
}

// matchPrefix finds the stored state whose array bytes body repeats at a
// for the most elements, and returns the match (known 0 when none). blocks
// are body's block hashes (nil: compare element by element only).
func (c *parseCache) matchPrefix(api API, body []byte, a int, blocks []uint64) *prefixMatch {
	m := &prefixMatch{}
	m.key, m.keyOK = c.bucketKey(api, body, a)
	if !m.keyOK {
		return m
	}
	c.mu.Lock()
	cands := append([]*prefixState(nil), c.buckets[m.key]...)
	c.mu.Unlock()
	for _, st := range cands {
		if st.api != api {
			continue
		}
		if known, blocked := st.matched(body, a, blocks, c.seed); known > m.known {
			m.parent, m.known, m.blocked = st, known, blocked
		}
	}
	if m.parent != nil {
		c.mu.Lock()
		if m.parent.el != nil {
			c.lru.MoveToFront(m.parent.el)
		}
		c.mu.Unlock()
	}
	return m
}

// matched returns how many of st's elements body holds, byte for byte, in
// the array at a: those ending within the blocks body shares with st's body
// from byte 0 (same offset: nothing to hash; blocked of them), then,
// segment by segment, those that follow up to the first that differs.
// (What follows them is checked by the strict scan that reads on from
// there.)
func (st *prefixState) matched(body []byte, a int, blocks []uint64, seed maphash.Seed) (known, blocked int) {
	shift := a - st.base
	n := len(st.elems)
	if shift == 0 {
		k := 0
		for k < len(blocks) && k < len(st.blocks) && blocks[k] == st.blocks[k] {
			k++
		}
		known = sort.Search(n, func(j int) bool { return st.elems[j].end > k*bodyBlock })
		blocked = known
	}
	pos := a
	if known > 0 {
		pos = st.elems[known-1].end
	}
	for ; known < n; known++ {
		e := st.elems[known].end + shift
		if e > len(body) || maphash.Bytes(seed, body[pos:e]) != st.seg[known] {
			break
		}
		pos = e
	}
	return known, blocked
}

// remember stores the parse of r (measured with counter) as a prefix state,
// in place of the state it extended.
func (c *parseCache) remember(r *request, counter string) {
	m := r.prefix
	if c == nil || m == nil || !m.keyOK || len(r.elems) < 2 || len(r.elems) != len(r.msgs) {
		return
	}
	n := len(r.elems)
	st := &prefixState{api: r.api, key: m.key, base: r.arrStart, counter: counter, blocks: r.blocks,
		elems: r.elems, msgs: r.msgs, spans: r.spans, points: r.points, events: r.events, roles: r.roles, kinds: r.kinds}
	pos, runes := r.arrStart, 0
	if m.known > 0 {
		// seg and cum of the elements taken from the parent (its base may
		// differ: the values are relative to the array's start).
		st.seg = extend(m.parent.seg, m.known, n, m.inPlace)
		st.cum = extend(m.parent.cum, m.known, n, m.inPlace)
		pos, runes = r.elems[m.known-1].end, st.cum[m.known-1]
	} else {
		st.seg = make([]uint64, n, n+n/4+16)
		st.cum = make([]int, n, n+n/4+16)
	}
	for j := m.known; j < n; j++ {
		e := r.elems[j].end
		st.seg[j] = maphash.Bytes(c.seed, r.body[pos:e])
		runes += runeCount(r.body[pos:e])
		st.cum[j] = runes
		pos = e
	}
	// The token sums, kept from the parent when they were counted alike.
	from, sum := 0, 0
	if m.known > 0 && m.parent.counter == counter {
		from = m.known
		st.tokens = extend(m.parent.tokens, from, n, m.inPlace)
		sum = st.tokens[from-1]
	} else {
		st.tokens = make([]int, n, n+n/4+16)
	}
	for j := from; j < n; j++ {
		sum += r.msgs[j].Tokens
		st.tokens[j] = sum
	}
	st.size = r.elems[n-1].end - r.arrStart
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.buckets == nil {
		c.buckets = map[uint64][]*prefixState{}
	}
	if p := m.parent; p != nil && p.el != nil && p.key == st.key {
		c.dropState(p)
	}
	st.el = c.lru.PushFront(st)
	c.buckets[st.key] = append(c.buckets[st.key], st)
	c.prefixBytes += st.size
	for c.lru.Len() > prefixCacheStates || (c.prefixBytes > prefixCacheBytes && c.lru.Len() > 1) {
		c.dropState(c.lru.Back().Value.(*prefixState))
	}
}

// dropState removes st from the prefix cache; c.mu is held.
func (c *parseCache) dropState(st *prefixState) {
	if st.el == nil {
		return
	}
	c.lru.Remove(st.el)
	st.el = nil
	c.prefixBytes -= st.size
	b := c.buckets[st.key]
	for i, x := range b {
		if x == st {
			b = append(b[:i:i], b[i+1:]...)
			break
		}
	}
	if len(b) == 0 {
		delete(c.buckets, st.key)
	} else {
		c.buckets[st.key] = b
	}
}

// fromPrefix makes r's per-message slices, of length n, with their first
// m.known elements from the matched state (in the state's own arrays when
// the request claimed it); the array starts at a in r's body.
func (r *request) fromPrefix(m *prefixMatch, a, n int) {
	st, k := m.parent, m.known
	shift := a - st.base
	in := m.inPlace && shift == 0
	r.inPlace = in
	r.msgs = extend(st.msgs, k, n, in)
	r.roles = extend(st.roles, k, n, in)
	r.kinds = extend(st.kinds, k, n, in)
	r.events = extend(st.events, k, n, in)
	r.points = extend(st.points, k, n, in)
	r.spans = extend(st.spans, k, n, in)
	if shift == 0 {
		return
	}
	for j := 0; j < k; j++ {
		sp := make([]span, len(st.spans[j]))
		for q, s := range st.spans[j] {
			sp[q] = shiftSpan(s, shift)
		}
		r.spans[j] = sp
		if r.points[j].ok {
			r.points[j].content = shiftSpan(r.points[j].content, shift)
		}
	}
}
