package proxy

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/harness"
)

// SharedSessions lets several proxy replicas serve the same sessions (issue
// 13): every session's store lives in a shared backend (PostgreSQL), and so
// does the part of the session's harness state that the request and the store
// do not determine (harness.SessionState: the working set, the current human
// turn's hydration, the evictions pending). Each dispatch, and each
// post-response eviction, runs under the session's lease, so the replicas
// take turns on a session and each starts from what the previous one left:
// consecutive requests of a session forwarded by different replicas are
// byte for byte what one proxy alone would forward. A replica killed while it
// holds a lease loses its uncommitted state change (the lease is a database
// transaction); what it folded is in the store, and folds are idempotent, so
// the client's retry on another replica forwards the same bytes.
//
// Implementations must be safe for concurrent use. Package pgsessions is the
// PostgreSQL one.
type SharedSessions interface {
	// Open returns the store of generation gen (≥ 1) of session id. A
	// replica opens each (id, gen) once and keeps it.
	Open(id string, gen int) (*contextfold.Store, error)
	// Lock takes the exclusive lease of session id, waiting while another
	// replica (or request) holds it, until ctx ends.
	Lock(ctx context.Context, id string) (SessionLease, error)
}

// SharedLineages is implemented by a SharedSessions that also keeps the
// conversations' lineages (lineage.go) where every replica sees them, so
// that a compacted or rewritten conversation reaches the stores of its
// earlier lives whichever replica served them. A SharedSessions without it
// gives each session its own earlier generations only. pgsessions.Sessions
// implements it. Implementations must be safe for concurrent use.
type SharedLineages interface {
	// JoinLineage puts session id into lineage key (once) and returns the
	// sessions that joined it before id, oldest first.
	JoinLineage(ctx context.Context, key, id string) (earlier []string, err error)
	// Generation returns the current store generation of session id (0:
	// no such session).
	Generation(ctx context.Context, id string) (int, error)
}

// SessionLease is a held session lease. Exactly one of Commit and Release
// ends it; Release after Commit does nothing.
type SessionLease interface {
	// Generation is the session's store generation (1 for a new session; a
	// replica that saw the client rewrite its history moved it on).
	Generation() int
	// Version counts the committed state changes of the session (0: none).
	Version() int64
	// State returns the committed harness.SessionState bytes (nil: none).
	State() ([]byte, error)
	// Commit stores gen and state as the session's new state (Version+1)
	// and ends the lease.
	Commit(gen int, state []byte) error
	// Release ends the lease without changing the state.
	Release()
}

// leaseTimeout bounds the wait for a session's lease: a replica whose
// request of a session takes longer (a huge fold) makes the others wait, not
// fail, up to it.
const leaseTimeout = 2 * time.Minute

// syncIn brings sess's harness to the session's committed state when another
// replica changed it since this one last did. Callers hold the lease.
func syncIn(sess *session, lease SessionLease) error {
	if lease.Version() == sess.ver.Load() {
		return nil
	}
	state, err := lease.State()
	if err != nil {
		return err
	}
	if state == nil {
		return nil
	}
	if err := sess.importState(state); err != nil {
		return err
	}
	sess.ver.Store(lease.Version())
	return nil
}

// commitOut stores sess's harness state as the session's and ends the
// lease.
func commitOut(sess *session, lease SessionLease) error {
	state, err := sess.exportState()
	if err != nil {
		lease.Release()
		return err
	}
	v := lease.Version() + 1
	if err := lease.Commit(sess.gen, state); err != nil {
		return fmt.Errorf("saving the session state: %w", err)
	}
	sess.ver.Store(v)
	return nil
}

// sharedDispatch is dispatch for a shared session: under its lease. A
// derived session id's request that diverges from its branch goes on in
// another branch (branch.go; sharedBranch) when the backend keeps lineages
// (it tells which branches exist), else in a new generation.
func (s *Server) sharedDispatch(ctx context.Context, st *reqState, req *request, sid string) (*session, *harness.Dispatch, error) {
	book, branches := s.opts.Shared.(SharedLineages)
	branches = branches && st.family != ""
	sess, d, err := s.sharedDispatchIn(ctx, st, req, sid, false, !branches)
	if branches && isDiverged(err) {
		st.rec.Warnings = append(st.rec.Warnings, "history diverged, another branch of the derived session: "+err.Error())
		return s.sharedBranch(ctx, st, req, sid, book)
	}
	return sess, d, err
}

// sharedDispatchIn dispatches req in shared session sid under its lease.
// probe: sid is another branch of req's family (sharedBranch), which takes
// req only if it folded past the conversation's start and req agrees with
// it. newGen: a divergence goes on in a new generation of sid; else it is
// returned (ErrHistoryDiverged) with nothing committed.
func (s *Server) sharedDispatchIn(ctx context.Context, st *reqState, req *request, sid string, probe, newGen bool) (*session, *harness.Dispatch, error) {
	lctx, cancel := context.WithTimeout(ctx, leaseTimeout)
	defer cancel()
	lease, err := s.opts.Shared.Lock(lctx, sid)
	if err != nil {
		return nil, nil, fmt.Errorf("session lease: %w", err)
	}
	defer lease.Release()
	sess, err := s.session(st, sid, lease.Generation())
	if err != nil {
		return nil, nil, err
	}
	if err := syncIn(sess, lease); err != nil {
		return sess, nil, err
	}
	ok := false
	defer func() {
		if !ok {
			// The harness may have moved on from the committed state:
			// import it again next time.
			sess.ver.Store(-1)
		}
	}()
	if !st.measured {
		var total int
		total, st.fixedTokens = req.measure(sess.h.CountTokens, sess.h.HeuristicCounter(), sess.h.CounterName())
		st.clientTokens, st.clientRunes, st.measured = total, req.runes, true
		s.cache.remember(req, sess.h.CounterName())
	}
	fixed := st.fixedTokens
	if probe {
		if !foldedPast(sess, req.seedMsgs) {
			return sess, nil, &harness.DivergedError{StepID: req.seedMsgs, Reason: "the branch folded nothing after the conversation's start"}
		}
		if err := sess.h.Agrees(req.msgs); err != nil {
			return sess, nil, err
		}
	}
	s.joinLineage(sess, st, req)
	d, err := dispatchFor(sess, req, fixed+stickyTokens(sess, req, sess.h.CountTokens))
	if isDiverged(err) && newGen {
		st.rec.Warnings = append(st.rec.Warnings, "history diverged, new session store: "+err.Error())
		if sess, err = s.session(st, sid, sess.gen+1); err == nil {
			s.joinLineage(sess, st, req)
			d, err = dispatchFor(sess, req, fixed+stickyTokens(sess, req, sess.h.CountTokens))
		}
	}
	if err != nil {
		return sess, nil, err
	}
	st.plan = planWire(sess, req, d) // under the lease: committed with the harness state
	if err := commitOut(sess, lease); err != nil {
		return sess, nil, err
	}
	ok = true
	return sess, d, nil
}

// sharedBranch dispatches req, which diverged from shared session from of
// its family, in the first other branch of the family that folded past
// its start and agrees with it, else in a new branch: the family's
// branches are numbered densely (newBranchID), so the first number the
// backend has no session for ends the search and names the new branch.
func (s *Server) sharedBranch(ctx context.Context, st *reqState, req *request, from string, book SharedLineages) (*session, *harness.Dispatch, error) {
	fam := st.family
	for n := 1; n <= maxBranches+1; n++ {
		id := fam
		if n > 1 {
			id = fam + "-b" + strconv.Itoa(n)
		}
		if id == from {
			continue
		}
		gctx, cancel := context.WithTimeout(ctx, leaseTimeout)
		gen, err := book.Generation(gctx, id)
		cancel()
		if err != nil {
			return nil, nil, err
		}
		if gen == 0 {
			if n == 1 {
				continue // the family's first branch is always its own id
			}
			return s.sharedDispatchIn(ctx, st, req, id, false, true)
		}
		sess, d, err := s.sharedDispatchIn(ctx, st, req, id, true, false)
		if !isDiverged(err) {
			return sess, d, err
		}
	}
	return nil, nil, fmt.Errorf("the derived session %s has %d branches, none agreeing with this conversation", fam, maxBranches)
}

// sharedPostTurn evicts what d hydrated, under the session's lease.
func (s *Server) sharedPostTurn(sess *session, d *harness.Dispatch) ([]int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), leaseTimeout)
	defer cancel()
	lease, err := s.opts.Shared.Lock(ctx, sess.id)
	if err != nil {
		return nil, fmt.Errorf("session lease: %w", err)
	}
	defer lease.Release()
	if lease.Generation() != sess.gen {
		// Another replica moved the session to a new store meanwhile: evict
		// in the old one, whose state is no longer the session's.
		evs, err := sess.h.PostTurnResponse(d)
		return stepsOf(evs), err
	}
	if err := syncIn(sess, lease); err != nil {
		return nil, err
	}
	evs, err := sess.h.PostTurnResponse(d)
	if cerr := commitOut(sess, lease); cerr != nil {
		sess.ver.Store(-1)
		err = errors.Join(err, cerr)
	}
	return stepsOf(evs), err
}

func stepsOf(evs []contextfold.Eviction) []int {
	out := make([]int, 0, len(evs))
	for _, ev := range evs {
		out = append(out, ev.StepID)
	}
	return out
}

func isDiverged(err error) bool { return errors.Is(err, harness.ErrHistoryDiverged) }
