package proxy

import (
	"container/list"
	"encoding/binary"
	"encoding/json"
	"hash/maphash"
	"sync"
	"unicode/utf8"

	"github.com/contextfold/contextfold/harness"
)

// parseCache keeps the parse of message elements by their bytes, so that a
// conversation resent with one more message costs the new message, not the
// whole history (the profile pointed at re-parsing the unchanged
// prefix). Two generations bound its memory: when the current one holds
// more than parseCacheBytes of message bytes it becomes the previous one,
// and the old previous one is dropped. Safe for concurrent use.
type parseCache struct {
	seed maphash.Seed
	mu   sync.Mutex
	cur  map[uint64]*cachedElem
	prev map[uint64]*cachedElem
	size int // bytes of the elements in cur

	// The prefix cache (prefix.go).
	buckets     map[uint64][]*prefixState
	lru         list.List // *prefixState, most recently used first
	prefixBytes int
	// byElement makes the prefix cache compare element by element only,
	// as without the body's block hashes (tests compare the two paths).
	byElement bool
}

// parseCacheBytes bounds the message bytes of one generation.
const parseCacheBytes = 64 << 20

// cachedElem is the parse of one message element; spans are relative to the
// element's start.
type cachedElem struct {
	n      int // element length in bytes
	msg    harness.Message
	spans  []span
	point  appendAt
	events []toolEvent
	role   string
	kind   string // Responses item type
	// runes of the element, and heuristic counts of each part's span.
	runes      int
	partTokens []int
}

func newParseCache() *parseCache {
	return &parseCache{seed: maphash.MakeSeed(), cur: map[uint64]*cachedElem{}, prev: map[uint64]*cachedElem{}}
}

// key hashes an element with its API (the same bytes read differently in
// another API).
func (c *parseCache) key(api API, raw []byte) uint64 {
	var h maphash.Hash
	h.SetSeed(c.seed)
	h.WriteString(string(api))
	h.WriteByte(0)
	h.Write(raw)
	return h.Sum64()
}

// prefixKeys sets the Message.PrefixKey of msgs[from:], a hash of the
// message's Key and the PrefixKey before it (0 when either is unknown), so
// that the harness tells a repeated conversation by one key (the messages
// before from carry theirs from the prefix state).
func (c *parseCache) prefixKeys(msgs []harness.Message, from int) {
	var b [16]byte
	for i := from; i < len(msgs); i++ {
		var prev uint64
		if i > 0 {
			if prev = msgs[i-1].PrefixKey; prev == 0 {
				msgs[i].PrefixKey = 0
				continue
			}
		}
		if msgs[i].Key == 0 {
			msgs[i].PrefixKey = 0
			continue
		}
		binary.LittleEndian.PutUint64(b[:8], prev)
		binary.LittleEndian.PutUint64(b[8:], msgs[i].Key)
		msgs[i].PrefixKey = maphash.Bytes(c.seed, b[:]) | 1
	}
}

func (c *parseCache) get(key uint64, n int) *cachedElem {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.cur[key]; e != nil && e.n == n {
		return e
	}
	if e := c.prev[key]; e != nil && e.n == n {
		c.cur[key] = e
		c.size += n
		c.rotate()
		return e
	}
	return nil
}

func (c *parseCache) put(key uint64, e *cachedElem) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cur[key] = e
	c.size += e.n
	c.rotate()
}

func (c *parseCache) rotate() {
	if c.size > parseCacheBytes {
		c.prev, c.cur, c.size = c.cur, map[uint64]*cachedElem{}, 0
	}
}

func shiftSpan(sp span, by int) span { return span{sp.start + by, sp.end + by} }

// toCache captures the parse of message i (element at start, n bytes).
func (r *request) toCache(i, start, n int, key uint64) *cachedElem {
	e := &cachedElem{n: n, msg: r.msgs[i], point: r.points[i], events: r.events[i], role: r.roles[i], kind: r.kinds[i]}
	e.msg.Key = key
	e.msg.Parts = append([]harness.Part(nil), r.msgs[i].Parts...)
	e.spans = make([]span, len(r.spans[i]))
	for k, sp := range r.spans[i] {
		e.spans[k] = shiftSpan(sp, -start)
	}
	if e.point.ok {
		e.point.content = shiftSpan(e.point.content, -start)
	}
	e.runes = runeCount(r.body[start : start+n])
	e.partTokens = make([]int, len(r.spans[i]))
	for k, sp := range r.spans[i] {
		e.partTokens[k] = heuristicTokens(r.body[sp.start:sp.end])
		e.msg.Parts[k].Tokens = e.partTokens[k]
	}
	e.msg.Tokens = max(1, e.runes/4)
	return e
}

// fromCache fills message i from a cached parse of the element at start.
func (r *request) fromCache(i int, e *cachedElem, start int) {
	r.msgs[i] = e.msg // its Parts are shared: read-only (measure copies before writing)
	r.spans[i] = make([]span, len(e.spans))
	for k, sp := range e.spans {
		r.spans[i][k] = shiftSpan(sp, start)
	}
	r.points[i] = e.point
	if e.point.ok {
		r.points[i].content = shiftSpan(e.point.content, start)
	}
	r.events[i] = e.events
	r.roles[i] = e.role
	r.kinds[i] = e.kind
	if r.cached == nil {
		r.cached = make([]*cachedElem, len(r.msgs)-r.known)
	}
	r.cached[i-r.known] = e
}

// cachedAt returns the element cache's parse message i came from (nil:
// parsed now, or taken from a prefix state).
func (r *request) cachedAt(i int) *cachedElem {
	if k := i - r.known; r.cached != nil && k >= 0 && k < len(r.cached) {
		return r.cached[k]
	}
	return nil
}

// skeleton reads the top-level object of body strictly: every separator
// between members, and between the elements of the array under arrKey, is
// checked, so that validating each member value (and each element not
// taken from a cache) is validating the whole body. When c holds a prefix
// state for the array, its elements are taken from it (match; blocks are
// body's block hashes, see prefix.go) and only the bytes after them are
// scanned. ok is false when body is not such an object; the caller then
// validates the whole body.
func skeleton(api API, body []byte, blocks []uint64, arrKey string, c *parseCache) (top []field, arrAt int, elems []span, match *prefixMatch, ok bool) {
	arrAt = -1
	i := skipWS(body, 0)
	if i >= len(body) || body[i] != '{' {
		return nil, -1, nil, nil, false
	}
	i = skipWS(body, i+1)
	if i < len(body) && body[i] == '}' {
		return nil, -1, nil, nil, skipWS(body, i+1) == len(body)
	}
	for {
		if i >= len(body) || body[i] != '"' {
			return nil, -1, nil, nil, false
		}
		ke := stringEnd(body, i)
		if ke > len(body) || !json.Valid(body[i:ke]) {
			return nil, -1, nil, nil, false
		}
		key := decodeString(body, span{i, ke})
		i = skipWS(body, ke)
		if i >= len(body) || body[i] != ':' {
			return nil, -1, nil, nil, false
		}
		i = skipWS(body, i+1)
		if i >= len(body) {
			return nil, -1, nil, nil, false
		}
		var ve int
		if key == arrKey && body[i] == '[' && arrAt < 0 {
			var from []span
			if c != nil {
				match = c.matchPrefix(api, body, i, blocks)
				if p := match.parent; match.known > 0 && match.known == len(p.elems) && i == p.base && p.claim() {
					// Every element at the same offset: extend the
					// state's arrays (prefix.go: claim).
					match.inPlace = true
					from = p.elems[:match.known]
				} else if match.known > 0 {
					from = make([]span, match.known, match.known+match.known/4+16)
					shift := i - match.parent.base
					for j := range from {
						from[j] = shiftSpan(match.parent.elems[j], shift)
					}
				}
			}
			els, end, good := arrayStrictFrom(body, i, from)
			if !good {
				return nil, -1, nil, nil, false
			}
			elems, arrAt, ve = els, i, end
		} else {
			ve = valueEnd(body, i)
			if ve <= i {
				return nil, -1, nil, nil, false
			}
		}
		top = append(top, field{key: key, val: span{i, ve}})
		i = skipWS(body, ve)
		if i >= len(body) {
			return nil, -1, nil, nil, false
		}
		if body[i] == '}' {
			return top, arrAt, elems, match, skipWS(body, i+1) == len(body)
		}
		if body[i] != ',' {
			return nil, -1, nil, nil, false
		}
		i = skipWS(body, i+1)
	}
}

// arrayStrictFrom lists the elements of the array starting at the bracket
// at start, checking the commas, and returns its end. from holds elements
// known already (their bytes verified): the scan reads on after the last.
func arrayStrictFrom(body []byte, start int, from []span) ([]span, int, bool) {
	out := from
	var i int
	if len(out) == 0 {
		i = skipWS(body, start+1)
		if i < len(body) && body[i] == ']' {
			return out, i + 1, true
		}
	} else {
		i = skipWS(body, out[len(out)-1].end)
		if i >= len(body) {
			return nil, 0, false
		}
		if body[i] == ']' {
			return out, i + 1, true
		}
		if body[i] != ',' {
			return nil, 0, false
		}
		i = skipWS(body, i+1)
	}
	for i < len(body) {
		ve := valueEnd(body, i)
		if ve <= i || ve > len(body) {
			return nil, 0, false
		}
		out = append(out, span{i, ve})
		i = skipWS(body, ve)
		if i >= len(body) {
			return nil, 0, false
		}
		if body[i] == ']' {
			return out, i + 1, true
		}
		if body[i] != ',' {
			return nil, 0, false
		}
		i = skipWS(body, i+1)
	}
	return nil, 0, false
}

// heuristicTokens is the reference estimate (characters/4, at least 1) of
// b, without copying it.
func heuristicTokens(b []byte) int { return max(1, runeCount(b)/4) }

// runeCount is utf8.RuneCount (an invalid byte counts as one rune) with a
// fast path for runs of ASCII, 8 bytes at a time: most of a body is ASCII.
func runeCount(b []byte) int {
	n := 0
	for len(b) > 0 {
		if len(b) >= 8 && binary.LittleEndian.Uint64(b)&0x8080808080808080 == 0 {
			n += 8
			b = b[8:]
			continue
		}
		if b[0] < utf8.RuneSelf {
			n++
			b = b[1:]
			continue
		}
		_, size := utf8.DecodeRune(b)
		n++
		b = b[size:]
	}
	return n
}
