package ranked

import "strconv"

// Rule "a call brings its output" (Params.CallOutput).
//
// A question in plain words about an agent session ("what did the
// reproduction script fail with the first time it ran?", "what did the
// first make html fail with?") holds the words of the call — the sentence
// the agent wrote around it ("Now I will run the reproduction script"),
// the script's name — and none of what the call printed (a traceback, the
// values it printed). The scan picks the call and leaves its output below
// the cut-off, or never scores it at all. The output is the answer: an
// exchange is the call and what it printed, so a picked call brings its
// own output, which package match hydrates directly before it.

// ownOutputs is rule "a call brings its output": for each pick of order
// (the scan's own picks, best first) that is an assistant's call, its own
// output (ownOutputDoc) when it is not superseded (intent ownership: a
// re-run of its command updated it) and of a step below before (every
// step when before < 0): pairs maps the call's step to the output's, and
// outs holds the outputs that are not among the picks (picked: the picks
// and companions) as Picks with IsOutput and OutputOf set, Freed when
// rule "an output is updated by its re-run" freed them, in the order of
// their calls. Callers hold ix.mu.
func (ix *Index) ownOutputs(q *Query, p Params, order []*match, picked, superseded, freed map[int32]bool, before int) (outs []Pick, pairs map[int]int) {
	var calls, docs []int32
	for _, c := range order {
		od, ok := ix.ownOutputDoc(c.doc)
		if !ok || superseded[od] || (before >= 0 && ix.docs[od].step >= before) {
			continue
		}
		if pairs == nil {
			pairs = map[int]int{}
		}
		pairs[ix.docs[c.doc].step] = ix.docs[od].step
		if !picked[od] {
			calls, docs = append(calls, c.doc), append(docs, od)
		}
	}
	if len(docs) == 0 {
		return nil, pairs
	}
	detail := ix.detailer(q, p, docs)
	outs = make([]Pick, 0, len(docs))
	for i, od := range docs {
		call := ix.docs[calls[i]].step
		pk := ix.pick(q, detail(od), 0, nil)
		pk.IsOutput, pk.OutputOf, pk.Freed = true, call, freed[od]
		pk.Why = append(pk.Why, `brought by its call at step `+strconv.Itoa(call)+` (rule "a call brings its output")`)
		outs = append(outs, pk)
	}
	return outs, pairs
}

// ownOutputDoc returns the doc of call's own output: call is an
// assistant's node whose summary names a command (CommandOf) or a tool
// ("assistant Read: {…}"), and the node at the next step is a tool's
// output of the same command — both name it, or either names none, and
// then the tools they name (if both name one) are the same. ok false
// otherwise. Callers hold ix.mu.
func (ix *Index) ownOutputDoc(call int32) (int32, bool) {
	cs := ix.summaryOf(call)
	if !isCallSummary(cs) {
		return -1, false
	}
	_, next := ix.neighbours(call)
	if next < 0 {
		return -1, false
	}
	if !ownOutput(cs, ix.summaryOf(next)) {
		return -1, false
	}
	return next, true
}

// isCallSummary reports whether a node's summary is an assistant's call:
// it names a command after "$ " or a tool after its role.
func isCallSummary(s string) bool {
	return RoleOf(s) == "assistant" && (commandOf(s) != "" || toolOf(s) != "")
}

// ownOutput reports whether output, the summary of the node after call's,
// is call's own output: a tool's output of the same command (both name
// it, or either names none, and the tools they name, when both name one,
// are the same).
func ownOutput(call, output string) bool {
	if RoleOf(output) != "tool" {
		return false
	}
	a, b := commandOf(call), commandOf(output)
	if a != "" && b != "" {
		return a == b
	}
	ta, tb := toolOf(call), toolOf(output)
	return ta == "" || tb == "" || ta == tb
}

// OwnOutputStep is rule "a call brings its output" for a node the ranked
// scan did not pick (package match: a call the exact-needle stage
// hydrated): the step of its own output, when the node at step call is an
// assistant's call (its summary names a command or a tool) and the node
// at the next step a tool's output of the same command; ok false
// otherwise. Safe for concurrent use.
func (ix *Index) OwnOutputStep(call int) (int, bool) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	cd, ok := ix.stepDoc(call)
	if !ok {
		return 0, false
	}
	od, ok := ix.ownOutputDoc(cd)
	if !ok {
		return 0, false
	}
	return ix.docs[od].step, true
}

// NextStep returns the step of the live node that neighbours the node at
// step from after: the next indexed step, when at most two step ids
// between them hold no node (an ingested exchange's output is the next
// step; a Responses call's output, through the proxy, lies two after its
// note, the function_call item between, never folded). ok false when
// step holds no live node or none neighbours it after. Safe for
// concurrent use.
func (ix *Index) NextStep(step int) (int, bool) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	d, ok := ix.stepDoc(step)
	if !ok {
		return 0, false
	}
	_, next := ix.neighbours(d)
	if next < 0 {
		return 0, false
	}
	return ix.docs[next].step, true
}
