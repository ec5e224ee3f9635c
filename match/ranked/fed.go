package ranked

import (
	"runtime"
	"sync"
	"unicode/utf8"

	"github.com/contextfold/contextfold"
)

// Fed texts: a caller that has just folded nodes (the harness,
// after Store.FoldBatch) hands the ranked index their text, so that the
// next Refresh analyses it instead of reading and decoding each new cold
// node back from disk (214 MB allocated per 10,000 nodes of a large proxy
// request). Only a node's own bytes are used: the FoldResult's cold node
// is the document the fold wrote (or the orphan it verified and adopted),
// and Refresh takes its text only for an index entry of the same step and
// the same artifact_sha256, so the text is the one on disk whose hash the
// index records (CONF-09); any other entry, a text that is not valid UTF-8
// (the file holds U+FFFD there), or a node not fed is read from disk as
// before. Every Refresh empties the store's fed texts, used or not.
type fedNode struct {
	artifact, summary, raw string
	// an is the node's analysis, started in the background as the node is
	// fed (while the fold makes its nodes and index durable, the CPU is
	// free), so that Refresh mostly inserts; nil when not started.
	an *fedAnalysis
}

// fedAnalysis is analyseDoc of a fed node's text (summary, "\n", payload),
// valid once done is closed.
type fedAnalysis struct {
	text string // what is analysed
	done chan struct{}
	a    analysed
}

// analyseSlots bounds the fed nodes analysed at once (GOMAXPROCS).
var analyseSlots = make(chan struct{}, runtime.GOMAXPROCS(0))

// startAnalysis analyses text in the background (at most GOMAXPROCS at
// once); the result is ready when done is closed.
func startAnalysis(text string) *fedAnalysis {
	an := &fedAnalysis{text: text, done: make(chan struct{})}
	go func() {
		analyseSlots <- struct{}{}
		an.a = analyseDoc(text)
		<-analyseSlots
		close(an.done)
	}()
	return an
}

// analysis returns the fed node's analysis of text when one was started
// for that very text (waiting for it), else analyseDoc(text).
func (n fedNode) analysis(text string) analysed {
	if n.an != nil && n.an.text == text {
		<-n.an.done
		return n.an.a
	}
	return analyseDoc(text)
}

// fedMax bounds the bytes of fed texts held per process (texts fed past
// it are read from disk by the next Refresh, as without feeding).
const fedMax = 512 << 20

var fed = struct {
	sync.Mutex
	m     map[string]map[int]fedNode // store directory → step → node
	bytes int
	an    int // fed nodes holding an analysis (fedNode.an)
}{m: map[string]map[int]fedNode{}}

// fedAnalysesMax bounds the fed nodes analysed ahead of a Refresh, per
// process: a fold event's fifty nodes are, the tens of thousands of a
// large first fold are not all held analysed at once (past the bound,
// Refresh analyses them in chunks, as it inserts them).
const fedAnalysesMax = 512

// Folded hands the ranked index of store s the text of the cold nodes a
// fold just wrote (rs as Store.FoldBatch returned it; results without a
// node are skipped), for its next Refresh (see above). The strings are
// referenced, not copied. Safe for concurrent use.
func Folded(s *contextfold.Store, rs []*contextfold.FoldResult) {
	if s == nil {
		return
	}
	dir := s.Dir()
	fed.Lock()
	defer fed.Unlock()
	for _, r := range rs {
		if r != nil && !r.AlreadyIndexed {
			feed(dir, r.Node, true)
		}
	}
}

// FoldedNode is Folded for one node (Store.FoldBatchEach's result's Node;
// nil is skipped). Safe for concurrent use.
func FoldedNode(s *contextfold.Store, n *contextfold.ColdNode) {
	if s == nil || n == nil {
		return
	}
	fed.Lock()
	defer fed.Unlock()
	feed(s.Dir(), n, true)
}

// FoldedNodeLater is FoldedNode without starting the node's analysis: the
// next Refresh analyses it (on every CPU, with the other new nodes), or
// takes the analysis PrepareAnalysis made ahead. A caller whose path does
// not read the index before its next Refresh (a proxy's fold event that
// scans nothing after it) calls it, so that the analyses do not compete
// with the rest of that path for the CPU. Safe for concurrent use.
func FoldedNodeLater(s *contextfold.Store, n *contextfold.ColdNode) {
	if s == nil || n == nil {
		return
	}
	fed.Lock()
	defer fed.Unlock()
	feed(s.Dir(), n, false)
}

// feed records n's text for the store at dir, its analysis started in the
// background when start is set. Callers hold fed.
func feed(dir string, n *contextfold.ColdNode, start bool) {
	if n == nil || n.ArtifactSHA256 == "" || fed.bytes+len(n.Summary)+len(n.RawContent) > fedMax {
		return
	}
	m := fed.m[dir]
	if m == nil {
		m = map[int]fedNode{}
		fed.m[dir] = m
	}
	if old, ok := m[n.StepID]; ok {
		fed.bytes -= len(old.summary) + len(old.raw)
		if old.an != nil {
			fed.an--
		}
	}
	an := takePrepared(dir, n.StepID, n.Summary, n.RawContent)
	if an == nil && start && fed.an < fedAnalysesMax {
		an = startAnalysis(n.Summary + "\n" + n.RawContent)
	}
	if an != nil {
		fed.an++
	}
	m[n.StepID] = fedNode{artifact: n.ArtifactSHA256, summary: n.Summary, raw: n.RawContent, an: an}
	fed.bytes += len(n.Summary) + len(n.RawContent)
}

// takeFed removes and returns the fed texts of the store at dir (nil:
// none).
func takeFed(dir string) map[int]fedNode {
	fed.Lock()
	defer fed.Unlock()
	m := fed.m[dir]
	if m == nil {
		return nil
	}
	delete(fed.m, dir)
	for _, n := range m {
		fed.bytes -= len(n.summary) + len(n.raw)
		if n.an != nil {
			fed.an--
		}
	}
	return m
}

// text returns the fed node's text as Refresh analyses it (summary, a
// newline, the payload) when it is the node of entry e; ok false otherwise.
func (n fedNode) text(e *contextfold.Entry) (string, bool) {
	if n.artifact == "" || n.artifact != e.ArtifactSHA256 || !utf8.ValidString(n.summary) || !utf8.ValidString(n.raw) {
		return "", false
	}
	if n.an != nil && joinedIs(n.an.text, n.summary, n.raw) {
		// The analysed text itself (the same bytes, no copy of the
		// payload on the refresh's path; analysis finds it at once).
		return n.an.text, true
	}
	return n.summary + "\n" + n.raw, true
}

// joinedIs reports whether text is summary + "\n" + raw, without making
// the concatenation.
func joinedIs(text, summary, raw string) bool {
	k := len(summary)
	return len(text) == k+1+len(raw) && text[k] == '\n' && text[:k] == summary && text[k+1:] == raw
}

// Analyses prepared ahead of a fold (PrepareAnalysis), by store directory
// and step, at most preparedMax bytes of text per process.
var prepared = struct {
	sync.Mutex
	m     map[string]map[int]*fedAnalysis
	bytes int
}{m: map[string]map[int]*fedAnalysis{}}

// preparedMax bounds the text of the analyses prepared and not yet folded,
// per process (a variable for tests).
var preparedMax = 16 << 20

// PrepareAnalysis analyses text, on the caller's goroutine, ahead of the
// fold of step into store s: text is what the step's cold node will hold
// (its summary, "\n", its payload, as scrubbed: contextfold.Store.Prepare
// returns them). When that fold hands the node over (Folded, FoldedNode)
// and the node's text is this very text, its analysis is taken from here
// instead of being made then; any other text is analysed as before. When
// the texts prepared and not folded would pass preparedMax bytes, the
// memo is emptied first (it may hold steps that never fold). Safe for
// concurrent use.
func PrepareAnalysis(s *contextfold.Store, step int, text string) {
	if s == nil || !utf8.ValidString(text) {
		return
	}
	dir := s.Dir()
	prepared.Lock()
	old := prepared.m[dir][step]
	prepared.Unlock()
	if old != nil && old.text == text || len(text) > preparedMax {
		return
	}
	an := &fedAnalysis{text: text, done: make(chan struct{}), a: analyseDoc(text)}
	close(an.done)
	prepared.Lock()
	defer prepared.Unlock()
	m := prepared.m[dir]
	if m == nil {
		m = map[int]*fedAnalysis{}
		prepared.m[dir] = m
	}
	if old := m[step]; old != nil {
		prepared.bytes -= len(old.text)
	}
	if prepared.bytes+len(text) > preparedMax {
		// Full (of analyses of steps that may never fold, in sessions
		// gone): start again rather than never prepare again.
		clear(prepared.m)
		prepared.bytes = 0
		m = map[int]*fedAnalysis{}
		prepared.m[dir] = m
	}
	m[step] = an
	prepared.bytes += len(text)
}

// takePrepared removes step's prepared analysis at dir and returns it when
// it is of the text summary + "\n" + raw (nil otherwise).
func takePrepared(dir string, step int, summary, raw string) *fedAnalysis {
	prepared.Lock()
	defer prepared.Unlock()
	an := prepared.m[dir][step]
	if an == nil {
		return nil
	}
	delete(prepared.m[dir], step)
	prepared.bytes -= len(an.text)
	if len(prepared.m[dir]) == 0 {
		delete(prepared.m, dir)
	}
	if !joinedIs(an.text, summary, raw) {
		return nil
	}
	return an
}
