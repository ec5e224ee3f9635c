package match

import (
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/match/ranked"
)

// maxNeedleCandidates bounds the nodes the needle stage reads to verify one
// needle (the nodes holding every term of it, ranked.NeedleCandidates):
// past it, the needle's terms are too common for a literal look-up to be
// cheap, and the ranking weighs them. A quoted phrase of common words
// ("x + Poly(x):", "print(None.__doc__)") has a large intersection in the
// session that prints them; 256 covers the 25 long agent sessions' such
// phrases (corpus needles 1348 → 1357 of 1368 from 32) at a worst case of
// about 20 ms of reads on a scan that quotes one.
const maxNeedleCandidates = 256

// maxNeedleReads bounds the nodes one scan reads for all its needles
// (ranked.Needles takes at most 8 of them), so that a prompt pasting a log
// full of tokens costs a bounded number of reads.
const maxNeedleReads = 256

// maxNeedleNodes: a needle held literally by more nodes than this is not
// rare (rule "exact needles" is for a token held once or a few times); the
// ranking weighs it.
const maxNeedleNodes = 5

// How a node holds a needle, weakest first: only in its summary (the
// record a fold leaves in the prompt already shows it), in its payload in
// another case, in its payload as the prompt writes it.
const (
	heldInSummary = 1
	heldFolded    = 2
	heldExact     = 3
)

// needleNode is a node that holds one or more of the prompt's needles
// literally.
type needleNode struct {
	step    int
	tokens  int
	summary string
	held    []string       // the needles it holds, in the prompt's needle order
	how     map[string]int // needle → heldInSummary, heldFolded or heldExact
	// updatedBy are the newer needle nodes that update this one (intent
	// ownership, see needleNodes): it comes after every node not updated,
	// and is hydrated only when one of them is. Nil when none does.
	updatedBy []int
}

// count returns how many of the needles n holds at least as strongly as
// level.
func (n *needleNode) count(level int) int {
	k := 0
	for _, nd := range n.held {
		if n.how[nd] >= level {
			k++
		}
	}
	return k
}

// needleNodes is the needle stage of a ranked scan (rule "exact needles",
// ranked.Needles): for each needle of the prompt, the nodes (steps below
// before) that may hold it (ranked.Index.NeedleCandidates: the nodes
// holding its own term, or every word of it, at most
// maxNeedleCandidates) are read from the store (not verified: hydration
// verifies what it pages in) and kept when the payload holds the needle
// literally, ignoring case (ranked.ContainsFold), or, failing that, the
// summary does. A needle so held by more than maxNeedleNodes nodes is
// dropped; so is one whose own term more than maxNeedleNodes nodes hold
// (not read: it is not rare). The result is ordered by the number of
// needles a node's payload holds, then by the number it holds as the
// prompt writes them (case kept: "Appropriately" over "appropriately"),
// then by the number its summary alone holds, then fullest evidence first
// (rule "the output, not the echo": a tool's output before the call that
// asked for it and the assistant's note restating it, whatever their
// length — a call writing a script or a long reasoning is no fuller
// evidence — then the node with the most tokens, then the newer step). A
// node that cannot be read is kept only when it holds the needle's own
// term (its summary and payload hold the needle, up to case).
//
// Intent ownership (CONF-13) holds as the spec states it, an older node
// never stands in for a newer one: a node the ranked scan superseded
// (superseded[step]) that a node more than echoSpan steps newer holds
// every needle of, each at least as strongly — a later update of the
// fact, not the restatement of an output, nor a node that holds a part of
// a quoted phrase ("set_fill" of "def set_fill") or the token in another
// case inside a longer one ("typevar-name-mismatch" for "TypeVar") — comes
// after every node no newer one updates (updatedBy), and the scan
// hydrates it only beside one of its updaters, within the budget. It was
// left out before; but the user quoted the token, and an agent session
// mentions a path, a version or an identifier it works on again and
// again, so the newest mention (a later build that passed, a note) hid
// the output that answers ("why did internal/ratelimit fail to build?").
func needleNodes(s *contextfold.Store, ix *ranked.Index, prompt string, before int, superseded map[int]bool) []*needleNode {
	return startNeedles(s, ix, prompt, before, false).nodes(superseded)
}

// needleStage is the needle stage of one scan under way: the needles'
// candidates were looked up in the index (ranked.Index.NeedleCandidates,
// under the index's lock) when it started; reading and checking the
// candidates' nodes (store reads, no lock of the index) runs beside the
// ranked scan when started with beside, so that a scan's wall time is
// not the sum of the two on a machine with a core free. The nodes found
// are the same either way: the reads and checks are the same, in the
// same order, and only nodes orders them.
type needleStage struct {
	byStep map[int]*needleNode
	done   chan struct{} // closed when byStep is complete; nil when it is already
}

// needlesBeside: a ranked scan's needle stage reads and checks its nodes
// beside the scan (startNeedles; tests compare both ways).
var needlesBeside = true

// startNeedles starts the needle stage of prompt (see needleNodes). With
// beside, the candidates' nodes are read and checked in a goroutine of
// their own (nodes waits for it); else before startNeedles returns.
func startNeedles(s *contextfold.Store, ix *ranked.Index, prompt string, before int, beside bool) *needleStage {
	st := &needleStage{}
	needles := ranked.Needles(prompt)
	if len(needles) == 0 {
		return st
	}
	cands := make([][]ranked.NeedleCandidate, len(needles))
	found := false
	for i, nd := range needles {
		cands[i] = ix.NeedleCandidates(nd, before, maxNeedleCandidates)
		found = found || len(cands[i]) > 0
	}
	if !found {
		return st
	}
	if !beside {
		st.byStep = checkNeedles(s, needles, cands)
		return st
	}
	st.done = make(chan struct{})
	go func() {
		defer close(st.done)
		st.byStep = checkNeedles(s, needles, cands)
	}()
	return st
}

// nodes waits for the stage's checks and returns its nodes, ordered, the
// superseded ones updated by a newer node left out (see needleNodes).
func (st *needleStage) nodes(superseded map[int]bool) []*needleNode {
	if st.done != nil {
		<-st.done
	}
	var out, later []*needleNode
	for _, n := range st.byStep {
		n.updatedBy = nil
		if superseded[n.step] {
			n.updatedBy = updaters(n, st.byStep)
		}
		if n.updatedBy == nil {
			out = append(out, n)
		} else {
			later = append(later, n)
		}
	}
	order := func(ns []*needleNode) {
		sort.Slice(ns, func(a, b int) bool {
			x, y := ns[a], ns[b]
			for _, level := range []int{heldFolded, heldExact, heldInSummary} {
				if cx, cy := x.count(level), y.count(level); cx != cy {
					return cx > cy
				}
			}
			if tx, ty := x.isOutput(), y.isOutput(); tx != ty {
				return tx
			}
			if x.tokens != y.tokens {
				return x.tokens > y.tokens
			}
			return x.step > y.step
		})
	}
	order(out)
	order(later)
	return append(out, later...)
}

// checkNeedles reads the candidates of each needle (cands[i] those of
// needles[i]) and returns the nodes holding them, by step (see
// needleNodes). It reads the store only: safe beside a scan of the index.
func checkNeedles(s *contextfold.Store, needles []string, cands [][]ranked.NeedleCandidate) map[int]*needleNode {
	byStep := map[int]*needleNode{}
	reads := map[int]*nodeRead{}
	// The nodes' bytes go into one buffer (those that fit in what is left
	// of it; the others each into their own), reused by the next scan: no
	// node's bytes outlive this call (a payload is decoded into a copy).
	bufp := needleBufs.Get().(*[]byte)
	buf := (*bufp)[:0]
	defer needleBufs.Put(bufp)
	for i, nd := range needles {
		cands := cands[i]
		if len(cands) > maxNeedleNodes && cands[0].Whole {
			continue // its own term is in more nodes: not rare
		}
		plain := plainNeedle(nd)
		type holder struct {
			c   ranked.NeedleCandidate
			how int
		}
		var holders []holder
		for _, c := range cands {
			r, seen := reads[c.Step]
			if !seen {
				if len(reads) >= maxNeedleReads {
					continue // a pasted log of tokens: the ranking weighs the rest
				}
				r = &nodeRead{}
				free := buf[len(buf):]
				var data []byte
				if data, r.err = s.AppendColdNodeBytes(free, c.Step); r.err == nil {
					if len(data) > 0 && cap(free) > 0 && &data[0] == &free[:1][0] {
						buf = buf[:len(buf)+len(data)] // read into the buffer
					}
					r.data = data[:len(data):len(data)]
				}
				reads[c.Step] = r
			}
			// A node whose bytes cannot hold the needle holds it in its
			// payload neither: unless it holds the needle's own term or
			// its summary holds the needle, it holds nothing, read or not
			// (the switch below finds the same without decoding it).
			if needleByteCheck && plain && r.err == nil && !c.Whole && !r.mayHold(nd) && !ranked.ContainsFold(c.Summary, nd) {
				continue
			}
			raw, ok := r.payload(s, c.Step)
			how := 0
			switch {
			case !ok:
				if c.Whole {
					how = heldFolded
				}
			case strings.Contains(raw, nd):
				how = heldExact
			case ranked.ContainsFold(raw, nd):
				how = heldFolded
			case ranked.ContainsFold(c.Summary, nd):
				how = heldInSummary
			}
			if how > 0 {
				holders = append(holders, holder{c, how})
			}
		}
		if len(holders) == 0 || len(holders) > maxNeedleNodes {
			continue
		}
		for _, h := range holders {
			n := byStep[h.c.Step]
			if n == nil {
				n = &needleNode{step: h.c.Step, tokens: h.c.Tokens, summary: h.c.Summary, how: map[string]int{}}
				byStep[h.c.Step] = n
			}
			n.held = append(n.held, nd)
			n.how[nd] = h.how
		}
	}
	return byStep
}

// needleBufs holds the buffers the needle stage reads nodes into
// (*[]byte of needleBuf bytes), one a scan at a time.
var needleBufs = newNeedleBufs()

func newNeedleBufs() *sync.Pool {
	return &sync.Pool{New: func() any { b := make([]byte, 0, needleBuf); return &b }}
}

// needleBuf is the size of a needle stage's buffer, in bytes: the ~12
// nodes a scan of the 100k bench store reads (9 KB each on average) fit.
// A variable: tests make it small.
var needleBuf = 256 << 10

// needleByteCheck: the needle stage decodes a node only when its bytes may
// hold the needle (nodeRead.mayHold; tests compare both ways).
var needleByteCheck = true

// needleDecodes counts the nodes the needle stage decoded (for tests).
var needleDecodes atomic.Int64

// nodeRead is one node the needle stage read: its bytes as stored, and
// its payload once a needle check needed it decoded.
type nodeRead struct {
	data    []byte
	err     error // the read's
	decoded bool
	raw     string // the payload (raw_content), when ok
	ok      bool   // read and parsed
}

// payload returns the node's raw_content, decoding the node the first
// time (ok false: the node could not be read or parsed).
func (r *nodeRead) payload(s *contextfold.Store, step int) (string, bool) {
	if !r.decoded {
		r.decoded = true
		if r.err == nil {
			needleDecodes.Add(1)
			if n, err := s.ParseColdNode(step, r.data); err == nil {
				r.raw, r.ok = n.RawContent, true
			}
		}
		r.data = nil // the decoded node holds what is needed
	}
	return r.raw, r.ok
}

// mayHold reports whether the node's bytes may hold plain needle nd
// (plainNeedle) in a JSON string: they hold it up to ASCII case, or they
// hold an escape that may stand for one of its characters (\u, or \/ for
// a slash). A JSON string holding nd, up to case, writes each of its
// characters either as itself or as such an escape (the others, \n \t
// \" \\ \b \f \r, stand for characters nd does not hold), so when
// mayHold is false no string of the node holds nd, whatever the writer
// (the store's canonical JSON escapes only control characters, " and \).
// Once decoded, the answer is the payload's own.
func (r *nodeRead) mayHold(nd string) bool {
	if r.decoded {
		return r.ok && ranked.ContainsFold(r.raw, nd)
	}
	// A view of the bytes, not a copy: ContainsFold keeps no part of it.
	text := unsafe.String(unsafe.SliceData(r.data), len(r.data))
	return ranked.ContainsFold(text, nd) || escapeMayHold(text)
}

// escapeMayHold reports whether text holds \u or \/ (strings.Contains of
// each), in one pass over its backslashes: a node's bytes are mostly
// searched in vain, and two searches read them twice.
func escapeMayHold(text string) bool {
	for i := 0; ; {
		j := strings.IndexByte(text[i:], '\\')
		if j < 0 {
			return false
		}
		i += j + 1
		if i < len(text) && (text[i] == 'u' || text[i] == '/') {
			return true
		}
	}
}

// plainNeedle reports whether every byte of nd is printable ASCII other
// than " and \: the needles whose absence from a node's bytes
// (nodeRead.mayHold) tells that its payload does not hold them.
func plainNeedle(nd string) bool {
	for i := 0; i < len(nd); i++ {
		if c := nd[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return nd != ""
}

// isOutput reports whether n is a tool's output (its summary opens with
// the agent role "tool"): the evidence itself, where the call that asked
// for it and the assistant's note restating it only quote the token.
func (n *needleNode) isOutput() bool {
	return ranked.RoleOf(n.summary) == "tool"
}

// why is the needle pick's explanation.
func (n *needleNode) why() []string {
	out := make([]string, 0, len(n.held))
	for _, nd := range n.held {
		out = append(out, strconv.Quote(nd)+` verbatim (rule "exact needles")`)
	}
	return out
}

// updaters returns the steps of the nodes more than echoSpan steps newer
// than n that hold every needle n holds, each at least as strongly as n
// does, in ascending order (nil when none).
func updaters(n *needleNode, nodes map[int]*needleNode) []int {
	var out []int
	for _, m := range nodes {
		if m.step <= n.step+echoSpan {
			continue
		}
		all := true
		for _, a := range n.held {
			if m.how[a] < n.how[a] {
				all = false
				break
			}
		}
		if all {
			out = append(out, m.step)
		}
	}
	sort.Ints(out)
	return out
}
