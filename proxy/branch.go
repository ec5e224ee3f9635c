package proxy

import (
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/contextfold/contextfold/harness"
)

// A derived session id (a request without HeaderSession) names the start of
// a conversation, not the conversation: two clients that open with the same
// system prompt and first message (one task sampled twice, chats that open
// with "hi") derive the same id. Sent to one session, their requests would
// take turns diverging from its store (a new store, a cold fold event and
// a prompt-cache rewrite at every switch) and one could hydrate the other's
// turns. So a derived id names a family of branches, each a session of its
// own (store, working set, wire state):
//
//   - a request goes to the branch whose last request shares the longest
//     prefix of messages with it (Message.PrefixKey; the most recently used
//     branch on a tie), so a conversation that grows, retries or edits its
//     latest message stays in its branch;
//   - a request that diverges from its branch's folded history (a
//     different conversation, or one rewritten before what was folded)
//     goes on in another branch of the family that its history agrees
//     with, one that folded at least one message after the shared start
//     (after a restart the branches' last requests are not known), or else
//     in a new branch: "<id>-b<N>", N from 2, never a name a store on disk
//     already has. A branch reads no other branch's store (its lineage is
//     its own generations and its client's conversation id, lineage.go):
//     the proxy cannot tell a rewritten conversation from another client's.
//
// Requests with HeaderSession keep their session; there a divergence is a
// new generation of it. A PostgreSQL fleet (Options.Shared) branches alike
// (shared.go, sharedBranch): a replica routes by the last requests it
// served; a request that diverges on a replica that did not serve its
// branch finds it in the backend.

// maxBranches bounds the branches a family keeps routing for (the least
// recently used leaves the family; its store stays on disk); maxFamilies
// bounds the families kept in memory likewise.
const (
	maxBranches = 16
	maxFamilies = 4096
)

// family is the branches of one derived session id, most recently used
// first. Guarded by Server.mu.
type family struct {
	branches []*branch
	lastUsed time.Time
}

// branch is one session of a family and the Message.PrefixKey of each
// message of its last request (nil: not known in this process).
type branch struct {
	id   string
	keys []uint64
}

// known reports whether the branch's last request is known by its prefix
// keys (routeDerived can route to it); a key 0 is a message whose key was
// not computed.
func (b *branch) known() bool { return len(b.keys) > 0 && b.keys[len(b.keys)-1] != 0 }

// sharedPrefix returns how many leading messages msgs has in common with
// the request whose prefix keys are keys. A PrefixKey stands for its
// message and every one before it, so agreement is monotone in the length
// and a binary search finds its end. 0 when a key is unknown (0).
func sharedPrefix(keys []uint64, msgs []harness.Message) int {
	n := min(len(keys), len(msgs))
	return sort.Search(n, func(i int) bool {
		return msgs[i].PrefixKey == 0 || msgs[i].PrefixKey != keys[i]
	})
}

// routeDerived returns the session a request with derived id fam goes to:
// the branch sharing the longest prefix with msgs, fam itself for a family
// not seen yet. s.mu is held.
func (s *Server) routeDerived(fam string, msgs []harness.Message) string {
	f := s.families[fam]
	if f == nil || len(f.branches) == 0 {
		return fam
	}
	best, bestLen := 0, -1
	for i, b := range f.branches {
		if l := sharedPrefix(b.keys, msgs); l > bestLen {
			best, bestLen = i, l
		}
	}
	return f.branches[best].id
}

// noteBranch records msgs as the last request of branch id of family fam
// (most recently used first), creating either as needed. s.mu is held.
func (s *Server) noteBranch(fam, id string, msgs []harness.Message) {
	f := s.families[fam]
	if f == nil {
		if len(s.families) >= maxFamilies {
			s.dropOldestFamily()
		}
		f = &family{}
		s.families[fam] = f
	}
	f.lastUsed = time.Now()
	var b *branch
	for i, x := range f.branches {
		if x.id == id {
			b = x
			copy(f.branches[1:i+1], f.branches[:i])
			f.branches[0] = b
			break
		}
	}
	if b == nil {
		b = &branch{id: id}
		f.branches = append([]*branch{b}, f.branches...)
		if len(f.branches) > maxBranches {
			f.branches = f.branches[:maxBranches]
		}
	}
	b.keys = b.keys[:0]
	for _, m := range msgs {
		b.keys = append(b.keys, m.PrefixKey)
	}
}

// dropOldestFamily forgets the least recently used family. s.mu is held.
func (s *Server) dropOldestFamily() {
	var oldest string
	var at time.Time
	for k, f := range s.families {
		if oldest == "" || f.lastUsed.Before(at) {
			oldest, at = k, f.lastUsed
		}
	}
	delete(s.families, oldest)
}

// branchCandidates returns the other sessions of family fam that a request
// which diverged from session from may belong to: the family's branches
// whose last request is not known (branch.known) and the family's stores
// on disk that no branch names, at most maxBranches. s.mu is held.
func (s *Server) branchCandidates(fam, from string) []string {
	known := map[string]bool{from: true}
	var out []string
	if f := s.families[fam]; f != nil {
		for _, b := range f.branches {
			known[b.id] = true
			if b.id != from && !b.known() {
				out = append(out, b.id)
			}
		}
	}
	for _, id := range s.familyOnDisk(fam) {
		if !known[id] {
			out = append(out, id)
		}
	}
	if len(out) > maxBranches {
		out = out[:maxBranches]
	}
	return out
}

// familyOnDisk lists the session directories of family fam: fam and
// fam-b<N>, by N.
func (s *Server) familyOnDisk(fam string) []string {
	ents, _ := os.ReadDir(s.opts.Dir)
	type numbered struct {
		id string
		n  int
	}
	var got []numbered
	for _, e := range ents {
		name := e.Name()
		if !e.IsDir() {
			continue
		}
		if name == fam {
			got = append(got, numbered{name, 1})
			continue
		}
		if rest, ok := strings.CutPrefix(name, fam+"-b"); ok {
			if n, err := strconv.Atoi(rest); err == nil && n >= 2 && strconv.Itoa(n) == rest {
				got = append(got, numbered{name, n})
			}
		}
	}
	sort.Slice(got, func(i, j int) bool { return got[i].n < got[j].n })
	out := make([]string, len(got))
	for i, g := range got {
		out[i] = g.id
	}
	return out
}

// newBranchID returns a branch id of family fam that no branch, session in
// memory or store on disk has. s.mu is held.
func (s *Server) newBranchID(fam string) string {
	taken := map[string]bool{}
	if f := s.families[fam]; f != nil {
		for _, b := range f.branches {
			taken[b.id] = true
		}
	}
	for n := 2; ; n++ {
		id := fam + "-b" + strconv.Itoa(n)
		if taken[id] || s.sessions[id] != nil {
			continue
		}
		if _, err := os.Lstat(filepath.Join(s.opts.Dir, id)); !errors.Is(err, os.ErrNotExist) {
			continue
		}
		return id
	}
}

// foldedPast reports whether sess's store holds a folded step at or after
// position from: a history that agrees with it shares more than the
// family's common start.
func foldedPast(sess *session, from int) bool {
	es, err := sess.h.Store().EntriesShared()
	return err == nil && len(es) > 0 && es[len(es)-1].StepID >= from
}

// divergedBranch dispatches req, which diverged from session from of its
// family, in another branch: the first candidate (branchCandidates) that
// folded past the family's common start and agrees with req's history,
// else a new branch. It returns the session and dispatch, or the error of
// the last dispatch tried.
func (s *Server) divergedBranch(st *reqState, req *request, fixed int, from string) (*session, *harness.Dispatch, error) {
	s.mu.Lock()
	cands := s.branchCandidates(st.family, from)
	s.mu.Unlock()
	for _, id := range cands {
		c, err := s.session(st, id, 0)
		if err != nil {
			// Reported, not fatal: the request goes on in another branch.
			st.rec.Warnings = append(st.rec.Warnings, "a branch of the derived session not opened: "+err.Error())
			continue
		}
		if !foldedPast(c, req.seedMsgs) {
			continue
		}
		if err := c.h.Agrees(req.msgs); err != nil {
			if errors.Is(err, harness.ErrHistoryDiverged) {
				continue
			}
			return nil, nil, err
		}
		s.joinLineage(c, st, req)
		d, err := dispatchFor(c, req, fixed+stickyTokens(c, req, c.h.CountTokens))
		return c, d, err
	}
	s.mu.Lock()
	id := s.newBranchID(st.family)
	s.mu.Unlock()
	sess, err := s.session(st, id, 0)
	if err != nil {
		return nil, nil, err
	}
	s.joinLineage(sess, st, req)
	d, err := dispatchFor(sess, req, fixed+stickyTokens(sess, req, sess.h.CountTokens))
	return sess, d, err
}
