package harness

// Incremental state of the budgeted dispatch (the proxy's
// overhead must stay flat in the conversation's length beyond the budget).
//
// An agent resends its whole conversation with each request, one or two
// messages longer, and between two fold events the working set does not
// change. So every sum the dispatch takes over the conversation (its
// estimate, the accounting, the breakdown of the working set) and every
// list it derives from the working set (the folded records in the prompt)
// is the same as for the previous request over the messages the two share.
// The harness keeps them, with what they were computed from:
//
//   - the messages they cover, [0, n): valid while those messages keep the
//     Message.Key they had (same, below; a message without a key, 0, is
//     never taken as unchanged, so a caller that sets no keys gets every
//     sum computed afresh);
//   - the working set's generation (workset.gen, bumped at every change of
//     the folded and removed sets and of the page-table block);
//   - the records' generation (Harness.recGen, bumped whenever the text of
//     a step's record changes: a record made for a step just folded takes
//     the place of the representative one the estimate used before).
//
// What a cache does not cover is computed from the messages as before, so
// a request costs its new messages, not its history. The results are the
// same numbers, and so the same fold decisions and the same forwarded
// bytes, as computing everything again (TestIncrementalDispatchMatchesFresh).

// samePrefix returns how many leading messages of conv carry the Key (not
// 0) that the message at the same position had in the previous budgeted
// dispatch: all that both hold when the last of them has the PrefixKey
// (not 0) it had, else counted one by one.
func (h *Harness) samePrefix(conv []Message) int {
	n := min(len(conv), len(h.prevKeys))
	if n > 0 && conv[n-1].PrefixKey != 0 && conv[n-1].PrefixKey == h.prevPrefix[n-1] {
		return n
	}
	i := 0
	for i < n && conv[i].Key != 0 && conv[i].Key == h.prevKeys[i] {
		i++
	}
	return i
}

// beginIncremental records conv's keys for the next dispatch and cuts
// every cache back to the messages before same (what follows was computed
// from messages conv no longer holds). It returns same.
func (h *Harness) beginIncremental(conv []Message) int {
	same := h.samePrefix(conv)
	h.prevKeys, h.prevPrefix = h.prevKeys[:same], h.prevPrefix[:same]
	for i := same; i < len(conv); i++ {
		h.prevKeys = append(h.prevKeys, conv[i].Key)
		h.prevPrefix = append(h.prevPrefix, conv[i].PrefixKey)
	}
	h.client.truncate(same)
	if ws := h.ws; ws != nil {
		ws.dropBeyond(same)
	}
	h.checkedN = min(h.checkedN, same)
	return same
}

// cumSum holds the running sums of a per-message quantity: cum[i] is the
// sum over the messages [0, i).
type cumSum struct{ cum []int }

func (c *cumSum) truncate(n int) {
	if len(c.cum) > n+1 {
		c.cum = c.cum[:n+1]
	}
}

// extend returns the sum over the messages [0, n), computing each message
// not covered yet with f.
func (c *cumSum) extend(n int, f func(i int) int) int {
	if len(c.cum) == 0 {
		c.cum = append(c.cum, 0)
	}
	c.truncate(n)
	for i := len(c.cum) - 1; i < n; i++ {
		c.cum = append(c.cum, c.cum[i]+f(i))
	}
	return c.cum[n]
}

// wsCache is what a dispatch derived from the working set at generation gen
// with the records at recGen, from the messages before n.
type wsCache struct {
	ok          bool
	gen, recGen int
	n           int
}

func (c *wsCache) valid(ws *workset, recGen int) bool {
	return c.ok && c.gen == ws.gen && c.recGen == recGen
}

func (c *wsCache) set(ws *workset, recGen, n int) {
	*c = wsCache{ok: true, gen: ws.gen, recGen: recGen, n: n}
}

// wsDerived holds the caches of one working set.
type wsDerived struct {
	// est: the estimate of each message under the working set
	// (estimateMsgs), valid at generation estGen, recGen estRec.
	est            cumSum
	estGen, estRec int
	// folded: the records the dispatch shows (Dispatch.Folded), their
	// tokens in the prompt (the breakdown's RecordTokens, Records) and what
	// the accounting takes from them.
	folded       wsCache
	foldedList   []FoldedMessage
	recordTokens int
	records      int
	foldedTokens int // Σ FoldedMessage.Tokens
	foldedText   int // Σ counted FoldedMessage.Text
	// removed: the tokens of the messages that left the prompt.
	removed       wsCache
	removedTokens int
	// block: counts of the page-table block.
	blockFor   string
	blockOK    bool
	blockWire  int // wire(block) + 8
	blockCount int // counter.Count(block)
}

// dropBeyond forgets what ws's caches computed from a message at or after
// same.
func (ws *workset) dropBeyond(same int) {
	d := &ws.derived
	d.est.truncate(same)
	for _, c := range []*wsCache{&d.folded, &d.removed} {
		if c.ok && c.n > same {
			c.ok = false
		}
	}
}

// changed marks a change of the working set (folded, removed or block).
func (ws *workset) changed() { ws.gen++ }

// blockCounts returns wire(block)+8 and the counted tokens of the block
// (0, 0 without a block).
func (h *Harness) blockCounts(ws *workset) (wire, count int) {
	d := &ws.derived
	if !d.blockOK || d.blockFor != ws.block {
		d.blockFor, d.blockOK = ws.block, true
		d.blockWire, d.blockCount = 0, 0
		if ws.block != "" {
			d.blockWire = h.wire(ws.block) + 8
			d.blockCount = h.counter.Count(ws.block)
		}
	}
	return d.blockWire, d.blockCount
}

// countMemo remembers the count of the last string it was asked about (the
// hydration text of a human turn is the same for every request of the
// turn).
type countMemo struct {
	s  string
	n  int
	ok bool
}

func (c *countMemo) get(s string, count func(string) int) int {
	if !c.ok || c.s != s {
		c.s, c.n, c.ok = s, count(s), true
	}
	return c.n
}

// estimateMsgs returns the forwarded tokens of conv's messages under ws
// (the page-table block not included).
func (h *Harness) estimateMsgs(conv []Message, ws *workset) int {
	d := &ws.derived
	if d.estGen != ws.gen || d.estRec != h.recGen {
		d.est.cum, d.estGen, d.estRec = d.est.cum[:0], ws.gen, h.recGen
	}
	return d.est.extend(len(conv), func(i int) int {
		switch m := conv[i]; {
		case ws.removed.has(i):
			return 0
		case ws.folded.has(i):
			return h.recordCostOf(m, i)
		default:
			return h.cost(m)
		}
	})
}

// clientTokens returns the sum of partCost over every part of conv.
func (h *Harness) clientTokens(conv []Message) int {
	return h.client.extend(len(conv), func(i int) int {
		n := 0
		for _, p := range conv[i].Parts {
			n += h.partCost(p)
		}
		return n
	})
}
