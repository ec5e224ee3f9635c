package proxy

import (
	"encoding/json"
	"hash/maphash"
	"sync"
	"unicode/utf8"

	"github.com/contextfold/contextfold/harness"
)

// parseCache keeps the parse of message elements by their bytes, so that a
// conversation resent with one more message costs the new message, not the
// whole history (issue 11: the profile pointed at re-parsing the unchanged
// prefix). Two generations bound its memory: when the current one holds
// more than parseCacheBytes of message bytes it becomes the previous one,
// and the old previous one is dropped. Safe for concurrent use.
type parseCache struct {
	seed maphash.Seed
	mu   sync.Mutex
	cur  map[uint64]*cachedElem
	prev map[uint64]*cachedElem
	size int // bytes of the elements in cur
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
	// runes of the element, and heuristic counts of each part's span.
	runes      int
	partTokens []int
}

func newParseCache() *parseCache {
	return &parseCache{seed: maphash.MakeSeed(), cur: map[uint64]*cachedElem{}, prev: map[uint64]*cachedElem{}}
}

func (c *parseCache) key(raw []byte) uint64 { return maphash.Bytes(c.seed, raw) }

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

func shift(sp span, by int) span { return span{sp.start + by, sp.end + by} }

// toCache captures the parse of message i (element at start, n bytes).
func (r *request) toCache(i, start, n int, key uint64) *cachedElem {
	e := &cachedElem{n: n, msg: r.msgs[i], point: r.points[i], events: r.events[i], role: r.roles[i]}
	e.msg.Key = key
	e.msg.Parts = append([]harness.Part(nil), r.msgs[i].Parts...)
	e.spans = make([]span, len(r.spans[i]))
	for k, sp := range r.spans[i] {
		e.spans[k] = shift(sp, -start)
	}
	if e.point.ok {
		e.point.content = shift(e.point.content, -start)
	}
	e.runes = utf8.RuneCount(r.body[start : start+n])
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
		r.spans[i][k] = shift(sp, start)
	}
	r.points[i] = e.point
	if e.point.ok {
		r.points[i].content = shift(e.point.content, start)
	}
	r.events[i] = e.events
	r.roles[i] = e.role
	if r.cached == nil {
		r.cached = make([]*cachedElem, len(r.msgs))
	}
	r.cached[i] = e
}

// skeleton reads the top-level object of body strictly: every separator
// between members, and between the elements of "messages", is checked, so
// that validating each member value (and each message not cached) is
// validating the whole body. ok is false when body is not such an object;
// the caller then validates the whole body.
func skeleton(body []byte) (top []field, elems []span, ok bool) {
	i := skipWS(body, 0)
	if i >= len(body) || body[i] != '{' {
		return nil, nil, false
	}
	i = skipWS(body, i+1)
	if i < len(body) && body[i] == '}' {
		return nil, nil, skipWS(body, i+1) == len(body)
	}
	for {
		if i >= len(body) || body[i] != '"' {
			return nil, nil, false
		}
		ke := stringEnd(body, i)
		if ke > len(body) || !json.Valid(body[i:ke]) {
			return nil, nil, false
		}
		key := decodeString(body, span{i, ke})
		i = skipWS(body, ke)
		if i >= len(body) || body[i] != ':' {
			return nil, nil, false
		}
		i = skipWS(body, i+1)
		if i >= len(body) {
			return nil, nil, false
		}
		ve := valueEnd(body, i)
		if ve <= i {
			return nil, nil, false
		}
		val := span{i, ve}
		if key == "messages" && body[i] == '[' {
			els, good := arrayStrict(body, val)
			if !good {
				return nil, nil, false
			}
			elems = els
		}
		top = append(top, field{key: key, val: val})
		i = skipWS(body, ve)
		if i >= len(body) {
			return nil, nil, false
		}
		if body[i] == '}' {
			return top, elems, skipWS(body, i+1) == len(body)
		}
		if body[i] != ',' {
			return nil, nil, false
		}
		i = skipWS(body, i+1)
	}
}

// arrayStrict lists the elements of the array at sp, checking the commas.
func arrayStrict(body []byte, sp span) ([]span, bool) {
	var out []span
	i := skipWS(body, sp.start+1)
	if i < sp.end && body[i] == ']' {
		return out, i+1 == sp.end
	}
	for i < sp.end {
		ve := valueEnd(body, i)
		if ve <= i || ve > sp.end {
			return nil, false
		}
		out = append(out, span{i, ve})
		i = skipWS(body, ve)
		if i >= sp.end {
			return nil, false
		}
		if body[i] == ']' {
			return out, i+1 == sp.end
		}
		if body[i] != ',' {
			return nil, false
		}
		i = skipWS(body, i+1)
	}
	return nil, false
}

// heuristicTokens is the reference estimate (characters/4, at least 1) of
// b, without copying it.
func heuristicTokens(b []byte) int { return max(1, utf8.RuneCount(b)/4) }
