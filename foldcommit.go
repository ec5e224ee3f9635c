package contextfold

import (
	"errors"
	"path/filepath"
	"sync"
	"time"

	"github.com/contextfold/contextfold/internal/fsutil"
)

// FoldCommit is the durable part of a fold event that
// FoldBatchEachDeferred left running: the syncs and renames that make the
// batch's cold nodes and recall index durable. Safe for concurrent use; a
// nil FoldCommit is one already done without error.
type FoldCommit struct {
	done    chan struct{}
	err     error
	durable time.Time
	// start is closed when the durable part may begin (Start); nil: it
	// begins at once.
	start     chan struct{}
	startOnce sync.Once
}

// Start lets a held commit (FoldBatchEachHeld) begin its durable part: its
// writes, syncs and renames. Idempotent; nothing for a commit that was not
// held or a nil FoldCommit. Wait, and every operation of the Store that
// waits for the commit (a fold, an eviction, Sync, WaitDurable), start it
// too, so a held commit never waits for a Start no one calls before it is
// needed. Safe for concurrent use.
func (c *FoldCommit) Start() {
	if c == nil || c.start == nil {
		return
	}
	c.startOnce.Do(func() { close(c.start) })
}

// Wait starts the commit (Start) and blocks until it is done, returning
// its error (a *StoreFileError naming the file whose sync or rename
// failed, with the remedy); nil once every node of the batch and the
// index that names them are durable.
func (c *FoldCommit) Wait() error {
	if c == nil {
		return nil
	}
	c.Start()
	<-c.done
	return c.err
}

// Done starts the commit (Start) and returns a channel closed when it is
// done (nil FoldCommit: a closed channel).
func (c *FoldCommit) Done() <-chan struct{} {
	if c == nil {
		return closedChan
	}
	c.Start()
	return c.done
}

// DurableAt is when the commit ended (the zero time for a nil FoldCommit
// or one not done yet). Read it after Wait.
func (c *FoldCommit) DurableAt() time.Time {
	if c == nil {
		return time.Time{}
	}
	select {
	case <-c.done:
		return c.durable
	default:
		return time.Time{}
	}
}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// groupCommit is the index commit of a fold's commit group in two parts
// (beginCommit): durable makes the group durable, settle then runs under
// s.mu with durable's error, brings the in-memory state up to date and
// returns the commit's error. When overlap is set, durable touches only
// files (syncs, renames, a journal append of lines encoded beforehand) and
// may run without s.mu, while the store lock is held (deferCommit).
type groupCommit struct {
	durable func() error
	settle  func(error) error
	overlap bool
}

// commitGroup commits a commit group of a fold: the cold nodes written to
// nodes since the last commit, then the index operations ops (midBatch:
// not the batch's last commit). Callers hold s.mu and the store lock.
func (s *Store) commitGroup(nodes *fsutil.FileBatch, ix *index, ops []journalOp, now string, midBatch bool) error {
	c, err := s.beginCommit(nodes, ix, ops, now, midBatch)
	if err != nil {
		return err
	}
	return c.settle(c.durable())
}

// nodesCommitError is the error of the nodes' part of a journaled group
// commit (beginCommit).
type nodesCommitError struct{ err error }

func (e *nodesCommitError) Error() string { return e.err.Error() }
func (e *nodesCommitError) Unwrap() error { return e.err }

// beginCommit begins the index commit of a commit group (commitGroup).
// When the index is rewritten (not journaled), recall_index.json's
// temporary file is written here as nodes' last file
// (fsutil.FileBatch.AddLast): its bytes are synced in the same wave as the
// nodes', and it is renamed, then the store root synced, only once every
// node is named and cold_nodes/ synced. So the promise of commitNodes then
// commitBatch holds (the index's name, which makes it visible, never
// becomes durable before its nodes' names) at one wait for the device
// less. A journal append is not overlapped with the nodes' syncs: the
// appended line is visible at once, so it is appended (its lines encoded
// here) once the nodes' names are durable. A backend's commit, a group
// without new nodes or without operations, commit as commitNodes then
// commitBatch, under s.mu (overlap false). Callers hold s.mu and the store
// lock.
func (s *Store) beginCommit(nodes *fsutil.FileBatch, ix *index, ops []journalOp, now string, midBatch bool) (*groupCommit, error) {
	if s.be != nil || len(ops) == 0 || nodes.Len() == 0 {
		return &groupCommit{
			durable: func() error {
				if err := s.commitNodes(nodes); err != nil {
					return err
				}
				return s.commitBatch(ix, ops, now, midBatch)
			},
			settle: func(err error) error { return err },
		}, nil
	}
	if v, _ := ix.header["created_at"].(string); v == "" {
		ix.header["created_at"] = now
	}
	nodesErr := func(err error) error {
		return s.storeErr(filepath.Join(s.dir, ColdNodesDir), err,
			"free disk space or fix the permissions of the store directory, then fold again; cold nodes already named are orphans that 'contextfold repair --apply' re-indexes")
	}
	if s.journals(len(ops), midBatch) {
		lines, err := ix.encodeOps(ops)
		if err != nil {
			return nil, err
		}
		path, jOff := filepath.Join(s.dir, JournalFile), s.jOff
		var off int64
		return &groupCommit{overlap: true,
			durable: func() error {
				if err := nodes.Commit(); err != nil {
					return &nodesCommitError{err}
				}
				var err error
				off, err = appendJournal(path, jOff, lines)
				return err
			},
			settle: func(err error) error {
				if err == nil {
					s.jOff, s.jOps = off, s.jOps+len(ops)
					return nil
				}
				s.ix = nil
				var ne *nodesCommitError
				if errors.As(err, &ne) {
					return nodesErr(ne.err)
				}
				return &StoreFileError{File: path, Err: err,
					Remedy: "free disk space or fix the permissions of the store directory; the cold nodes already written are orphans that 'contextfold repair --apply' re-indexes"}
			}}, nil
	}
	w := s.indexWrite(ix)
	if err := nodes.AddLast(w.path, 0o644, w.write); err != nil {
		w.release()
		return nil, w.failed(err)
	}
	return &groupCommit{overlap: true, durable: nodes.Commit, settle: func(err error) error {
		defer w.release()
		if err == nil {
			return w.done()
		}
		s.ix = nil
		if w.encErr != nil {
			return w.encErr
		}
		var last *fsutil.LastFileError
		if errors.As(err, &last) {
			return &StoreFileError{File: w.path, Err: err,
				Remedy: "free disk space or fix the permissions of the store directory; the cold nodes already written are orphans that 'contextfold repair --apply' re-indexes"}
		}
		return nodesErr(err)
	}}, nil
}

// deferCommit runs c's durable part on its own goroutine and returns its
// FoldCommit (FoldBatchEachDeferred). It takes over nodes (whose
// temporary files a reader of the batch's nodes falls back to meanwhile:
// nodeBytes) and the store lock l, released once the commit is settled.
// Until then s.pending is set: loadIndex serves the in-memory index ix
// (which holds the batch) without looking at the disk, lock waits for the
// commit. Callers hold s.mu and the store lock.
func (s *Store) deferCommit(c *groupCommit, nodes *fsutil.FileBatch, ix *index, l unlocker, held bool) *FoldCommit {
	fc := &FoldCommit{done: make(chan struct{})}
	if held {
		fc.start = make(chan struct{})
	}
	ver := s.indexVersionLocked(ix)
	s.pending = fc
	s.pendingMu.Lock()
	s.pendingTmp, s.pendingBuf = nodes.Temporaries(), nodes.Buffered()
	s.pendingMu.Unlock()
	go func() {
		if fc.start != nil {
			<-fc.start
		}
		err := c.durable()
		s.mu.Lock()
		err = c.settle(err)
		if err == nil && s.ix == ix {
			// The index this process served while the commit ran is the
			// one on disk now: its version stays (IndexVersion).
			s.verAlias = versionAlias{stamp: s.ixStamp, jOff: s.jOff, n: ix.len(), ver: ver}
		}
		s.pending = nil
		s.pendingMu.Lock()
		s.pendingTmp, s.pendingBuf = nil, nil
		s.pendingMu.Unlock()
		fc.err, fc.durable = err, time.Now()
		s.mu.Unlock()
		nodes.Abort() // after an error: the temporary files not renamed
		l.Unlock()
		close(fc.done)
	}()
	return fc
}

// versionAlias is the version IndexVersion keeps reporting for the index a
// deferred commit made durable (deferCommit) while the store's index is
// still that one (the same stamp, journal offset and entries): the version
// it reported while the commit ran, so that what is bound to it (the
// harness's entries, the ranked index) is not rebuilt for the same
// entries.
type versionAlias struct {
	stamp fileStamp
	jOff  int64
	n     int
	ver   string
}

// waitPending waits, s.mu held on entry and on return (released while
// waiting), until no deferred commit is running, nor a write of kept
// eviction events (WriteKeptEvictions): both hold the store's lock.
func (s *Store) waitPending() {
	for s.pending != nil || s.evWrite != nil {
		if p := s.pending; p != nil {
			s.mu.Unlock()
			p.Start()
			<-p.done
		} else {
			w := s.evWrite
			s.mu.Unlock()
			<-w
		}
		s.mu.Lock()
	}
}

// pendingTemp returns the temporary file holding the node at path while a
// deferred commit runs (deferCommit), or "", and the node's bytes when the
// commit creates its file (held in memory until then: deferCreateBytes),
// or nil. The bytes are shared: not to be modified.
func (s *Store) pendingTemp(path string) (string, []byte) {
	s.pendingMu.Lock()
	defer s.pendingMu.Unlock()
	return s.pendingTmp[path], s.pendingBuf[path]
}

// WaitDurable waits until the fold batch this Store left committing
// (FoldBatchEachDeferred), if any, is done (its error is its
// FoldCommit's). Safe for concurrent use.
func (s *Store) WaitDurable() {
	s.mu.Lock()
	s.waitPending()
	s.mu.Unlock()
}

// PendingCommit returns the durable part of the fold batch this Store left
// committing (FoldBatchEachDeferred, FoldBatchEachHeld) and has not settled
// yet, nil when none. Until it is done this Store serves that batch as
// folded (its index, its nodes): a caller that read the store meanwhile
// and must not act as if the batch were durable before it is (the proxy's
// answer to a request dispatched while another request's fold event of the
// session commits) waits for it (FoldCommit.Wait, which starts a held
// commit). Safe for concurrent use.
func (s *Store) PendingCommit() *FoldCommit {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pending
}
