package proxy

import (
	"context"
	"errors"
	"fmt"
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

// sharedDispatch is dispatch for a shared session: under its lease.
func (s *Server) sharedDispatch(ctx context.Context, st *reqState, req *request, sid string) (*session, *harness.Dispatch, error) {
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
	s.joinLineage(sess, st, req)
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
	total, fixed := req.measure(sess.h.CountTokens, sess.h.HeuristicCounter(), sess.h.CounterName())
	st.clientTokens, st.clientRunes = total, req.runes
	s.cache.remember(req, sess.h.CounterName())
	d, err := dispatchFor(sess, req, fixed+stickyTokens(sess, req, sess.h.CountTokens))
	if isDiverged(err) {
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
