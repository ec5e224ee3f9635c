package ranked

// Rule "an older run beside its re-run" (Params.RerunBeside).
//
// Rule "an output is updated by its re-run" lets only a newer output of
// the same command supersede a tool's output: the re-run stands for the
// fact, and the older run is never hydrated ahead of it. But what a run
// printed before an edit is a fact of its own too: "what did
// reproduce_issue_v2.py print when it tried to pickle?" asks for the first
// run's "Pickling failed as expected", which the re-run after the fix
// ("Pickling successful") updated and which ownership then left out,
// with most of the per-turn budget unspent. The spec's property is that an
// older node never stands in for a newer one; the needle stage already
// hydrates an updated node beside (after) a node that updates it, within
// the budget. This rule does the same for the ranked stage's re-runs: the
// scan lists the older runs (Result.Older) and package match admits one
// right after a re-run it admitted, if it fits.

// olderRuns lists, for rule "an older run beside its re-run", the
// superseded candidates sup (in rank order) that are tool outputs of a
// known command (commandOf, or callCommand with Params.RerunCall), score
// at least threshold on their own (the cut-off: they would have been
// picks but for intent ownership), and whose updaters among cands are all
// re-runs of that command: each as a Pick with UpdatedBy, the steps of
// the re-runs in rank order that updated it (held its prompt terms and an
// entity) and no longer show all it showed (lostSpecific); one with no
// such re-run is not listed. An output of no known command (an editor's
// view, an aider reply) is superseded by any newer tool output, which is
// no re-run of it, and is not listed either. Callers hold ix.mu.
func (ix *Index) olderRuns(q *Query, p Params, sup, cands []*match, threshold float64, labels labelTerms) []Pick {
	var out []Pick
	for _, c := range sup {
		if c.score < threshold {
			continue
		}
		s, call := ix.summaryOf(c.doc), ""
		if p.RerunCall && RoleOf(s) == "tool" && commandOf(s) == "" {
			call = ix.callOf(c.doc)
		}
		r := newRerunOf(s, call)
		if !r.tool || r.command == "" {
			continue
		}
		step := ix.docs[c.doc].step
		var by []int
		for _, o := range cands {
			if o == c || ix.docs[o.doc].step <= step || o.mask&c.mask != c.mask {
				continue
			}
			os, ocall := ix.summaryOf(o.doc), ""
			if r.called && RoleOf(os) == "tool" && commandOf(os) == "" {
				ocall = ix.callOf(o.doc)
			}
			if r.updatedBy(os, ocall) && ix.sameEntity(c, o, p, labels) && ix.lostSpecific(c.doc, o.doc) {
				by = append(by, ix.docs[o.doc].step)
			}
		}
		if len(by) == 0 {
			continue
		}
		pk := ix.pick(q, c, c.score, nil)
		pk.UpdatedBy = by
		out = append(out, pk)
	}
	return out
}

// lostSpecific reports whether doc a holds a specific term (a path, an
// identifier, a number, a version: what intent ownership takes for an
// entity) that doc b does not: what an older run showed that its re-run
// no longer shows (the failure "cannot pickle 'UnpickleableCanvas'
// object" before "Pickling successful", the old timing "0.37s"). A re-run
// holding every specific term of the older run repeats it, and stands for
// it. Callers hold ix.mu.
func (ix *Index) lostSpecific(a, b int32) bool {
	x, y := ix.specificOf(a), ix.specificOf(b)
	j := 0
	for _, t := range x {
		for j < len(y) && y[j] < t {
			j++
		}
		if j == len(y) || y[j] != t {
			return true
		}
	}
	return false
}
