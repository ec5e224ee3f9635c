package contextfold

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/contextfold/contextfold/internal/canonjson"
	"github.com/contextfold/contextfold/internal/fsutil"
	"github.com/contextfold/contextfold/schema"
	"github.com/contextfold/contextfold/scrub"
)

// FoldResult reports one fold. Node and Entry of a new fold share their
// lists (identifiers, files, commands, errors) with the store's in-memory
// index, so that a large node's lists are held once: read them,
// do not modify them.
type FoldResult struct {
	// Node is the cold node as stored. For an already indexed step, Fold
	// reads it back from its file (nil when unreadable); FoldBatch leaves it
	// nil, so re-folding a long session reads no file.
	Node *ColdNode
	// Entry is the recall-index entry of the step.
	Entry *Entry
	// AlreadyIndexed is true when the step was in the index before: nothing
	// was written (spec §5: folding an indexed step changes nothing).
	AlreadyIndexed bool
}

// Fold folds one turn (spec §5, CONF-01..03): the cold node is written
// durably first, then the recall index points at it. Folding a step that is
// already indexed changes nothing and returns AlreadyIndexed.
//
// Errors: *StoreFileError for an unreadable index or policy, or a write
// failure (disk full, read-only directory); *PayloadTooLargeError for a
// payload past MaxPayloadBytes; the previous state stays intact.
func (s *Store) Fold(t Turn) (*FoldResult, error) {
	rs, err := s.FoldBatch([]Turn{t})
	if err != nil {
		return nil, err
	}
	if r := rs[0]; r.AlreadyIndexed {
		if n, err := s.readColdNode(t.StepID); err == nil {
			r.Node = n
		}
	}
	return rs[0], nil
}

// FoldBatch folds many turns under one lock (a fold event: spec §5,
// CONF-01..03 for each turn). Turns are folded in order; the first fold of
// a step wins, and an indexed step changes nothing (AlreadyIndexed).
//
// Durability and ordering: the batch commits in groups (every
// FoldCommitEvery new nodes or FoldCommitInterval, and at its end; a fold
// event of the proxy is one group). A group's cold nodes are each written
// whole to a temporary file (the same bytes a single Fold writes), then all
// are fsynced together, renamed into place and cold_nodes/ fsynced once;
// only then is the index committed: recall_index.json renamed into place
// (its temporary file written before the nodes' fsyncs and synced with
// them, commitGroup), or one journal line per node appended and fsynced.
// In a backend store the whole batch is one transaction. So a crash at any point leaves each group
// either absent from the index or wholly in it: never an index entry
// without its node; the nodes of an uncommitted group are temporary files
// (removed by the next writer) or orphans that verify (the next fold of
// their step adopts them, 'repair' re-indexes them). When FoldBatch
// returns, every turn is durable.
//
// Errors: *StoreFileError (unreadable index or policy, a write or sync
// failure: disk full, read-only directory); the groups committed before it
// stay folded, the failing group leaves at most orphans. Safe for
// concurrent use (the store lock serialises writers, across processes too);
// the CPU part of the new turns (scrubbing, extraction) runs on up to
// GOMAXPROCS goroutines.
func (s *Store) FoldBatch(turns []Turn) ([]*FoldResult, error) {
	return s.FoldBatchProgress(turns, nil)
}

// FoldBatchProgress is FoldBatch with progress reporting: progress, when not
// nil, is called after each turn with the number of turns done and the total.
// It is called from the folding goroutine and must not call the Store.
func (s *Store) FoldBatchProgress(turns []Turn, progress func(done, total int)) ([]*FoldResult, error) {
	return s.FoldBatchGuarded(turns, progress, nil)
}

// ConflictCheck is Conflicts over the index a guarded fold holds
// (FoldBatchGuarded): turns in, the conflicting ones out, in their order.
// Valid only during the guard's call.
type ConflictCheck func(turns []Turn) ([]FoldConflict, error)

// FoldBatchGuarded is FoldBatchProgress with guard, when not nil, called
// once under the store's lock, after the index is read and before anything
// is written, with a ConflictCheck over that index: no other writer can
// fold a step between the check and the fold. An error from guard ends the
// batch with nothing written and is returned as it is. ingest refuses a
// transcript whose steps the store holds with another session's turns this
// way, so that two ingests into one store at once never mix their turns.
// guard runs on the caller's goroutine and must not call the Store (its
// lock is held); Dir and Backend are safe.
func (s *Store) FoldBatchGuarded(turns []Turn, progress func(done, total int), guard func(ConflictCheck) error) ([]*FoldResult, error) {
	results := make([]*FoldResult, len(turns))
	if _, err := s.foldBatchGuarded(turns, progress, func(i int, r *FoldResult) { results[i] = r }, foldNow, guard); err != nil {
		return nil, err
	}
	return results, nil
}

// FoldBatchEach is FoldBatch handing each turn's result to each (i: the
// turn's position in turns) as the turn is folded, instead of returning
// them all: a caller that keeps only part of a result (the harness keeps a
// node's text for the ranked index) does not hold every cold node's
// document of a large batch at once. each is called from the
// folding goroutine, under the store's lock, before the batch's final
// index commit, so it must not call the Store; on an error, results
// already handed to each may not be indexed (the index is what counts).
func (s *Store) FoldBatchEach(turns []Turn, each func(i int, r *FoldResult)) error {
	_, err := s.foldBatch(turns, nil, each, foldNow)
	return err
}

// FoldBatchEachDeferred is FoldBatchEach for a caller that overlaps the
// batch's durability with other work (the proxy: with the upstream call):
// it returns once every new cold node and the rewritten recall index (or
// its journal lines) are written to their temporary files, and leaves the
// rest of the batch's last commit group running on its own goroutine: the
// fsyncs, renames and directory syncs, in the order FoldBatch makes them
// (nodes' bytes, then their names and cold_nodes/, then the index's name
// and the store root). The returned FoldCommit's Wait reports when that
// part is done; nil when nothing was left to make durable (nothing new was
// folded, a backend store, whose transaction commits before it returns, or
// an adoption of orphans only).
//
// Until the commit is done, this Store serves the batch as folded: its
// in-memory index holds the new entries, and a read of a new node finds
// its bytes in the node's temporary file (then, once renamed, under its
// name), verified as any read (Hydrate checks SHA-256 against the entry);
// an operation that writes the store (a fold, an eviction, a repair,
// Sync) first waits for it, and the store's inter-process lock is held
// until it is done, so another process sees the index only once it is
// renamed, with every node it names durable. A crash before Wait returns
// leaves the store as before the batch or with all of it, as FoldBatch's.
//
// Errors: those of FoldBatchEach for the part before the return; the
// commit's own error (*StoreFileError: a sync or rename failed) from Wait,
// after which the in-memory index is dropped and read again from disk (the
// batch is not indexed, its named nodes are orphans the next fold of their
// steps adopts): the caller must not answer as if the batch were folded.
func (s *Store) FoldBatchEachDeferred(turns []Turn, each func(i int, r *FoldResult)) (*FoldCommit, error) {
	return s.foldBatch(turns, nil, each, foldDeferred)
}

// FoldBatchEachHeld is FoldBatchEachDeferred with the durable part held
// until the returned FoldCommit's Start (or Wait, or any operation of this
// Store that waits for the commit: a fold, an eviction, Sync,
// WaitDurable). A caller with more work on its path after the fold (the
// proxy: the scan, the records, the rewrite of the forwarded body) starts
// it once that work is done, so that the commit's file system work (writing
// the held nodes into their files, a kernel's CPU time on a machine of two
// cores) does not compete with it; the upstream call then overlaps it. A
// crash before Start leaves the store as before the batch: the nodes exist
// only in memory until then. Errors: those of FoldBatchEachDeferred.
func (s *Store) FoldBatchEachHeld(turns []Turn, each func(i int, r *FoldResult)) (*FoldCommit, error) {
	return s.foldBatch(turns, nil, each, foldHeld)
}

// foldMode is how foldBatch commits its last commit group: on its own
// goroutine before it returns (foldNow), left running (foldDeferred:
// FoldBatchEachDeferred) or left waiting for FoldCommit.Start (foldHeld:
// FoldBatchEachHeld).
type foldMode int

const (
	foldNow foldMode = iota
	foldDeferred
	foldHeld
)

func (s *Store) foldBatch(turns []Turn, progress func(done, total int), each func(i int, r *FoldResult), mode foldMode) (*FoldCommit, error) {
	return s.foldBatchGuarded(turns, progress, each, mode, nil)
}

func (s *Store) foldBatchGuarded(turns []Turn, progress func(done, total int), each func(i int, r *FoldResult), mode foldMode, guard func(ConflictCheck) error) (*FoldCommit, error) {
	deferred := mode != foldNow
	if err := checkPayloadSizes(turns); err != nil {
		return nil, err
	}
	s.folding.Add(1) // spares are made after the fold (FillSpares)
	defer s.folding.Add(-1)
	s.mu.Lock()
	defer s.mu.Unlock()
	l, err := s.lock()
	if err != nil {
		return nil, err
	}
	// The lock moves to the deferred commit's goroutine (handedOff).
	handedOff := false
	defer func() {
		if !handedOff {
			l.Unlock()
		}
	}()

	ix, err := s.loadIndex()
	if err != nil {
		return nil, err
	}
	policy, err := s.Policy()
	if err != nil {
		return nil, err
	}
	sc, err := s.scrubber()
	if err != nil {
		return nil, err
	}
	if guard != nil {
		if err := guard(func(ts []Turn) ([]FoldConflict, error) {
			return s.resolveConflicts(sc, conflictCandidates(ix, ts))
		}); err != nil {
			return nil, err
		}
	}
	if err := s.recordPolicy(policy); err != nil {
		return nil, err
	}
	counter, err := policy.Counter()
	if err != nil {
		return nil, &StoreFileError{File: s.storePath(PolicyFile), Err: err, Remedy: "set token_counter to heuristic, o200k_base or cl100k_base, or remove it"}
	}
	maxIdents := s.maxIndexIdentifiers(sc)
	var ops []journalOp
	now := s.now()
	lastCommit := time.Now()
	// The cold nodes of a commit group are written to temporary files and
	// made durable together before the index commit (commitNodes):
	// a fold event pays a few syncs, not two per node.
	// Their temporary files are spares made ahead when there are
	// (FillSpares): no file is created on the fold's path.
	nodes := fsutil.FileBatch{Spares: s.spares, LastSpares: s.rootSpares}
	if deferred {
		// The nodes' bytes (and the rewritten index's) are held in memory
		// and written by the deferred commit, into the spares or into
		// files it creates when none is left, off the caller's path
		// (deferCreateBytes): the fold event's path makes no file system
		// call for them.
		nodes.DeferCreates, nodes.HoldAll = deferCreateBytes, true
	}
	defer func() {
		if !handedOff {
			nodes.Abort() // an error's temporary files
		}
	}()
	written := 0
	defer func() { s.sinceFill.Add(int64(written)) }()
	s.nodes = &nodes
	defer func() { s.nodes = nil }()
	// The new turns' cold nodes are built ahead, in parallel (nodePrep);
	// what touches the store stays here, in the batch's order.
	var want []int
	seen := make(map[int]bool, len(turns))
	for i, t := range turns {
		if _, ok := ix.get(t.StepID); !ok && !seen[t.StepID] {
			want = append(want, i)
		}
		seen[t.StepID] = true
	}
	// A backend that lists the batch's stored steps in one query spares
	// the orphan check a round trip per new node (absent: none stored).
	var stored map[int]bool
	if nc, ok := s.be.(NodeChecker); ok && len(want) > 1 {
		steps := make([]int, len(want))
		for k, i := range want {
			steps[k] = turns[i].StepID
		}
		have, err := nc.HasNodes(steps)
		if err != nil {
			return nil, s.storeErr(s.storePath(ColdNodesDir), err, "")
		}
		stored = make(map[int]bool, len(have))
		for _, st := range have {
			stored[st] = true
		}
	}
	policyHash, sessionID := policy.Hash(), s.opts.SessionID
	// A value one turn's context reveals as a secret is redacted in every
	// new turn that shows it, whether it came from this fold event or an
	// earlier one (crossturn.go).
	// A secret a message boundary split is redacted on both sides first.
	turns = s.splitSecrets(sc, turns, want)
	// The middle parts of a private key split across outputs.
	turns = s.keyParts(sc, turns, want)
	// The lines of a credential file a tool call printed, its output the
	// next turn.
	turns = s.credFileOutputs(sc, turns, want, func(step int) (Turn, bool) {
		if _, ok := ix.get(step); !ok {
			return Turn{}, false
		}
		n, err := s.readColdNode(step)
		if err != nil {
			return Turn{}, false
		}
		return Turn{StepID: step, Summary: n.Summary, RawContent: n.RawContent}, true
	})
	// A new turn not prepared ahead is scrubbed here, its own values read
	// from its scrub's findings (not our rules run over it once more), and
	// what the scrub derived is kept for its node (scrubbed, the values
	// other turns revealed change it and it is scrubbed again), up to
	// prepMemoMax bytes of turns (past it, its values alone are derived,
	// and its node prepared as it is written).
	scrubbed := make([]*preparedContent, len(want))
	var held atomic.Int64
	turns = s.shareSession(sc, turns, want, func(k int, t Turn) *scrub.Known {
		if t.own != nil {
			return t.own // ShareSecrets computed them
		}
		if c := s.prep.get(t, sessionID, sc, counter); c != nil && c.own != nil {
			return c.own
		}
		if n := int64(len(t.Summary) + len(t.RawContent)); held.Add(n) <= int64(prepMemoMax) {
			c := prepareContent(t, sessionID, sc, counter, true)
			scrubbed[k] = c
			return c.own
		}
		return contextValues(sc, t)
	})
	ahead := make(map[int]*preparedContent, len(want))
	for _, c := range scrubbed {
		if c != nil {
			ahead[c.in.StepID] = c
		}
	}
	prep := newNodePrep(turns, want, func(t Turn) preparedNode {
		c := s.prep.take(t.StepID)
		if c == nil {
			c = ahead[t.StepID] // read-only here
		}
		return prepareNode(t, sessionID, sc, policyHash, now, counter, c)
	})
	defer prep.stop()
	for i, t := range turns {
		if progress != nil && i > 0 {
			progress(i, len(turns))
		}
		// A long batch commits the index as it goes, so that a process
		// killed midway keeps what it folded (CONF-01): every
		// FoldCommitEvery new nodes or FoldCommitInterval.
		if len(ops) >= FoldCommitEvery || (len(ops) > 0 && time.Since(lastCommit) >= FoldCommitInterval) {
			if err := s.commitGroup(&nodes, ix, ops, now, true); err != nil {
				return nil, err
			}
			ops, lastCommit = ops[:0], time.Now()
		}
		if r, ok := ix.get(t.StepID); ok {
			each(i, &FoldResult{Entry: ix.entry(r), AlreadyIndexed: true})
			continue
		}
		pn := prep.get(i)
		t, n := pn.t, pn.n
		if pn.err != nil {
			s.ix = nil
			return nil, pn.err
		}
		path := s.NodePath(t.StepID)
		// A file already there but not indexed is an orphan (a fold that
		// crashed before its index update, or a hand-made file). Folded
		// turns are never lost: an orphan that verifies and holds this very
		// turn is adopted as it is; any other is moved to quarantine/ first.
		// (A step NodeChecker found no node for has none to resolve.)
		var adopted *ColdNode
		if stored == nil || stored[t.StepID] {
			var err error
			if adopted, err = s.resolveOrphanBeforeFold(t, path, policy, now); err != nil {
				s.ix = nil
				return nil, err
			}
		}
		if adopted != nil {
			r := ix.recordFromNode(adopted, s.indexFilePath(t.StepID), maxIdents)
			ix.add(r)
			ops = append(ops, journalOp{fold: r})
			each(i, &FoldResult{Node: adopted, Entry: ix.sharedEntry(r)})
			continue
		}
		// Every artifact is checked against its schema before it is written
		// (prepareNode).
		if err := pn.schemaErr; err != nil {
			s.ix = nil
			return nil, &StoreFileError{File: path, Err: err, Remedy: "the cold node was refused before it reached disk; report this as a bug"}
		}
		// The pretty encoding is streamed to the file (a large
		// node is never held whole in memory besides its document).
		if err := s.writeNode(t.StepID, path, n.Doc, pn.pretty); err != nil {
			s.ix = nil
			return nil, s.storeErr(path, err, "free disk space or fix the permissions of the store directory, then fold again")
		}
		written++
		r := ix.recordFromNode(n, s.indexFilePath(t.StepID), maxIdents)
		if err := validateEntryDoc(ix.entryDoc(r)); err != nil {
			s.ix = nil
			return nil, &StoreFileError{File: s.storePath(IndexFile), Err: err, Remedy: "the index entry was refused before it reached disk; report this as a bug"}
		}
		ix.add(r)
		ops = append(ops, journalOp{fold: r})
		each(i, &FoldResult{Node: n, Entry: ix.sharedEntry(r)})
	}
	if progress != nil {
		progress(len(turns), len(turns))
	}
	c, err := s.beginCommit(&nodes, ix, ops, now, false)
	if err != nil {
		return nil, err
	}
	if !deferred || !c.overlap {
		if err := c.settle(c.durable()); err != nil {
			return nil, err
		}
		return nil, s.flush()
	}
	handedOff = true
	return s.deferCommit(c, &nodes, ix, l, mode == foldHeld), nil
}

// deferCreateBytes bounds the bytes of cold nodes (and of the rewritten
// index) a deferred fold (FoldBatchEachDeferred) holds in memory: every
// node is held (fsutil.FileBatch.HoldAll), and the deferred commit writes
// each into a spare file (FillSpares) or, when none is left, a temporary
// file it creates, before its syncs, so that the file system's work (an
// inode allocation is a millisecond or more on a busy ext4; opening a
// spare, its chmod and its write each change its inode and may wait for
// the journal) overlaps the caller's other work (the proxy's upstream
// call) instead of delaying the fold's return. Until the commit writes
// them they exist only in memory: a crash leaves nothing of them, and a
// read of such a node meanwhile is served those bytes (nodeBytes). Past
// the bound the nodes are written on the fold's path (into spares while
// there are).
var deferCreateBytes = 16 << 20 // a variable for tests (SetDeferBytesForTest)

// writeNode writes a new cold node: to a temporary file of the batch
// being folded (s.nodes: named and made durable by commitNodes, before the
// index commit), durably to its file outside a batch (directory store), or
// into the open write transaction (backend). pretty, when not nil, is the
// document's encoding, rendered ahead (prepareNode): written as it is.
func (s *Store) writeNode(step int, path string, doc map[string]any, pretty []byte) error {
	if s.be == nil {
		write := func(w io.Writer) error { return canonjson.WritePretty(w, doc) }
		if pretty != nil {
			write = func(w io.Writer) error { _, err := w.Write(pretty); return err }
		}
		if s.nodes != nil && pretty != nil {
			// Rendered ahead: a held node keeps these very bytes (no copy
			// on the fold's path).
			return s.nodes.AddBytes(path, 0o644, pretty)
		}
		if s.nodes != nil {
			if pretty == nil && s.nodes.HoldAll {
				// A node too large to render ahead (prettyAheadMax) is
				// streamed to a spare as before, not held whole in memory
				// besides its document (held only when no spare is left).
				s.nodes.HoldAll = false
				defer func() { s.nodes.HoldAll = true }()
			}
			return s.nodes.Add(path, 0o644, write)
		}
		return fsutil.WriteFileAtomicFunc(path, 0o644, write)
	}
	if pretty == nil {
		var b bytes.Buffer
		if err := canonjson.WritePretty(&b, doc); err != nil {
			return err
		}
		pretty = b.Bytes()
	}
	s.txWrites = true
	return s.tx.WriteNode(step, pretty)
}

// commitNodes makes the cold nodes written since the last commit durable
// under their names (fsutil.FileBatch.Commit: their bytes synced, then
// renamed, then cold_nodes/ synced once), before the index that points at
// them is committed: the order of spec §1 and STYLE.md, for a whole commit
// group at once. On an error the in-memory index (which holds the group's
// entries) is dropped; the nodes already named are orphans that the next
// fold of their step adopts, or 'repair' re-indexes. Callers hold s.mu and
// the store lock.
func (s *Store) commitNodes(nodes *fsutil.FileBatch) error {
	if nodes.Len() == 0 {
		return nil
	}
	if err := nodes.Commit(); err != nil {
		s.ix = nil
		return s.storeErr(filepath.Join(s.dir, ColdNodesDir), err,
			"free disk space or fix the permissions of the store directory, then fold again; cold nodes already named are orphans that 'contextfold repair --apply' re-indexes")
	}
	return nil
}

// Batch commits of FoldBatch (variables for tests): a batch commits the
// index after every FoldCommitEvery new nodes, or when FoldCommitInterval
// passed since its last commit, and at its end.
var (
	FoldCommitEvery    = 256
	FoldCommitInterval = 2 * time.Second
)

// commitBatch commits the folds ops of a batch (midBatch: not its last
// commit). Callers hold s.mu and the store lock.
func (s *Store) commitBatch(ix *index, ops []journalOp, now string, midBatch bool) error {
	if len(ops) == 0 {
		if !midBatch && s.jOps > JournalMaxOps {
			return s.writeIndex(ix) // the batch's journal, folded into the index
		}
		return nil
	}
	if v, _ := ix.header["created_at"].(string); v == "" {
		ix.header["created_at"] = now
	}
	if err := s.commitOps(ix, ops, midBatch); err != nil {
		var sf *StoreFileError
		if errors.As(err, &sf) && s.be == nil { // a backend's transaction left nothing behind
			sf.Remedy += "; the cold nodes already written are orphans that 'contextfold repair --apply' re-indexes"
		}
		return err
	}
	return nil
}

// Entry returns the index entry of a step, or *NodeNotFoundError.
func (s *Store) Entry(step int) (*Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ix, err := s.loadIndex()
	if err != nil {
		return nil, err
	}
	r, ok := ix.get(step)
	if !ok {
		return nil, &NodeNotFoundError{StepID: step}
	}
	return ix.entry(r), nil
}

// IndexVersion returns an opaque string that changes whenever the recall
// index changes (a fold, an eviction, a repair, a compaction, another
// process's write): the identity (size, mtime, inode) of recall_index.json,
// the journal bytes applied and the number of entries. Derived data such as
// the ranked matcher's index (package match/ranked) binds itself to it.
// Read-only; safe for concurrent use.
func (s *Store) IndexVersion() (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ix, err := s.loadIndex()
	if err != nil {
		return "", err
	}
	return s.indexVersionLocked(ix), nil
}

// indexVersionLocked is IndexVersion of ix, loaded by the caller, who holds
// s.mu. The version a deferred commit's index was served with stays while
// the index is that one (versionAlias).
func (s *Store) indexVersionLocked(ix *index) string {
	if s.be != nil {
		return fmt.Sprintf("rev/%d/%d/%d", s.beRev.Generation, s.beRev.Seq, ix.len())
	}
	st := s.ixStamp
	if a := s.verAlias; a.ver != "" && s.pending == nil && a.stamp == st && a.jOff == s.jOff && a.n == ix.len() {
		return a.ver
	}
	return fmt.Sprintf("%t/%d/%d/%d/%d/%d", st.ok, st.size, st.mtime.UnixNano(), st.ino, s.jOff, ix.len())
}

// Entries returns every index entry in ascending step order.
func (s *Store) Entries() ([]*Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ix, err := s.loadIndex()
	if err != nil {
		return nil, err
	}
	out := make([]*Entry, 0, ix.len())
	for _, p := range ix.sortedPositions() {
		out = append(out, ix.entry(ix.recs[p]))
	}
	return out, nil
}

// EntriesShared is Entries without copies, for readers of a large index
// that only read (a proxy session's first request reads tens of
// thousands of entries): each Entry's Identifiers, Files, Commands and
// Errors are the in-memory index's own lists (read them, never modify
// them; they stay valid, the store never changes a list in place), and Doc
// is nil. Ascending step order. Errors as Entries. Safe for concurrent use.
func (s *Store) EntriesShared() ([]*Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ix, err := s.loadIndex()
	if err != nil {
		return nil, err
	}
	pos := ix.sortedPositions()
	out := make([]*Entry, len(pos))
	block := make([]Entry, len(pos)) // one allocation for all
	for i, p := range pos {
		r := ix.recs[p]
		block[i] = Entry{
			StepID: r.step, Summary: r.summary, PayloadSHA256: r.payload, ProjectionSHA256: r.projection,
			ArtifactSHA256: r.artifact, FilePath: r.filePath, TokenEstimate: r.tokenEstimate, FoldedAt: r.foldedAt,
			Identifiers: r.idents, Files: r.files, Commands: r.commands, Errors: r.errors, Evicted: r.evicted,
		}
		out[i] = &block[i]
	}
	return out, nil
}

// validateEntryDoc checks one index entry against the recall_index schema
// (its entry definition: the check the whole index makes of each entry).
func validateEntryDoc(doc map[string]any) error {
	key := "0"
	switch v := doc["step_id"].(type) {
	case int:
		key = strconv.Itoa(v)
	case json.Number:
		key = v.String()
	}
	return schema.ValidateIndexEntry(key, doc)
}

// resolveOrphanBeforeFold handles an unindexed file at a step's path before a
// fold writes there. It returns the file's node when it verifies and holds
// the same summary and payload as t (the fold is then an adoption, nothing is
// written), or moves the file to quarantine/ (logged in repair_log.json) and
// returns nil. No file: nil. Callers hold the store lock.
func (s *Store) resolveOrphanBeforeFold(t Turn, path string, policy *Policy, now string) (*ColdNode, error) {
	if s.be != nil {
		if _, err := s.be.ReadNode(t.StepID); errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		} else if err != nil {
			return nil, s.storeErr(path, err, "")
		}
	} else if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	known := s.knownPolicyHashes(policy)
	if n, why := s.verifyOrphan(t.StepID, stepFileName(t.StepID), path, known); why == "" &&
		n.Summary == t.Summary && n.RawContent == t.Payload() {
		return n, nil
	}
	stamp := strings.NewReplacer(":", "", "-", "").Replace(now)
	step := t.StepID
	if s.be != nil {
		name := stamp + "-" + stepFileName(step)
		s.txWrites = true
		if err := s.tx.QuarantineNode(step, name, "an unindexed cold node stood where step "+strconv.Itoa(step)+" is folded"); err != nil {
			return nil, s.storeErr(path, err, "")
		}
		return nil, s.appendRepairLog(now, []RepairAction{{Action: ActionQuarantine, StepID: &step, File: path,
			Reason: "an unindexed cold node stood where step " + strconv.Itoa(step) + " is folded; kept in quarantine as " + name}})
	}
	qdir := filepath.Join(s.dir, QuarantineDir)
	if err := mkQuarantine(qdir); err != nil {
		return nil, err
	}
	dst := uniquePath(filepath.Join(qdir, stamp+"-"+stepFileName(t.StepID)))
	if err := os.Rename(path, dst); err != nil {
		return nil, &StoreFileError{File: path, Err: err, Remedy: "move the orphaned file away by hand, or run 'contextfold repair --apply'"}
	}
	if err := fsutil.SyncDir(qdir); err != nil {
		return nil, err
	}
	return nil, s.appendRepairLog(now, []RepairAction{{Action: ActionQuarantine, StepID: &step, File: path,
		Reason: "an unindexed file stood where step " + strconv.Itoa(step) + " is folded; kept in " + dst}})
}

// FoldConflict is a step whose id is indexed with another turn than the one
// offered: typically a turn of another session at the same position, which
// folding would silently drop (spec §5: folding an indexed step changes
// nothing).
type FoldConflict struct {
	StepID int
	// StoredSession is the session_id of the stored cold node ("" when it
	// cannot be read; Conflicts reads it for the first 8 conflicts only).
	StoredSession string
	// OfferedSession is the turn's session id (DefaultSessionID when none).
	OfferedSession string
}

// Conflicts returns, in the order of turns, the turns whose step id is
// indexed with a different summary or payload (compared as they would be
// stored, after scrubbing). Turns not indexed yet and turns indexed exactly
// as offered (an idempotent re-fold) are not conflicts. It reads the index
// and, only for a turn that contains secrets or conflicts, the scrubber and
// the stored node; it writes nothing and takes no lock.
func (s *Store) Conflicts(turns []Turn) ([]FoldConflict, error) {
	s.mu.Lock()
	ix, err := s.loadIndex()
	if err != nil {
		s.mu.Unlock()
		return nil, err
	}
	maybe := conflictCandidates(ix, turns)
	s.mu.Unlock()
	if len(maybe) == 0 {
		return nil, nil
	}
	sc, err := s.scrubber()
	if err != nil {
		return nil, err
	}
	return s.resolveConflicts(sc, maybe)
}

// conflictCandidate is a turn whose step is indexed with another summary
// or payload hash (sum, pay) than the turn's own, before scrubbing.
type conflictCandidate struct {
	t        Turn
	sum, pay string
}

// conflictCandidates returns the turns of turns indexed in ix with another
// summary or payload than offered (the caller holds s.mu).
func conflictCandidates(ix *index, turns []Turn) []conflictCandidate {
	var maybe []conflictCandidate
	for _, t := range turns {
		r, ok := ix.get(t.StepID)
		if !ok {
			continue
		}
		if r.summary == t.Summary && r.payload == sha256Hex([]byte(t.Payload())) {
			continue
		}
		maybe = append(maybe, conflictCandidate{t, r.summary, r.payload})
	}
	return maybe
}

// resolveConflicts keeps the candidates that still differ once scrubbed as
// they would be stored (sc: nil when scrubbing is off), naming the stored
// session of the first eight. Reads stored nodes; takes no lock.
func (s *Store) resolveConflicts(sc *scrub.Scrubber, maybe []conflictCandidate) ([]FoldConflict, error) {
	var out []FoldConflict
	for _, m := range maybe {
		if sc != nil {
			// A turn whose secrets were redacted is stored scrubbed.
			c, _ := scrubTurn(sc, m.t)
			if c.Summary == m.sum && sha256Hex([]byte(c.Payload())) == m.pay {
				continue
			}
			// With more redactions than its own scrub makes: what the
			// fold event that stored it learnt from other turns (a value
			// shared, the middle of a private key left open by an earlier
			// turn), which this process may not know.
			if s.storedWithSharedRedactions(m.t.StepID, c, m.sum, m.pay) {
				continue
			}
		}
		fc := FoldConflict{StepID: m.t.StepID, OfferedSession: m.t.SessionID}
		if fc.OfferedSession == "" {
			fc.OfferedSession = s.opts.SessionID
		}
		if fc.OfferedSession == "" {
			fc.OfferedSession = DefaultSessionID
		}
		if len(out) < 8 { // enough to name the sessions; a long conflict reads no more
			if n, err := s.readColdNode(m.t.StepID); err == nil {
				fc.StoredSession = n.SessionID
			}
		}
		out = append(out, fc)
	}
	return out, nil
}

// storedWithSharedRedactions reports whether the cold node of step holds
// c, a turn as its own scrub leaves it, with more values redacted
// (MatchesSharedRedactions), its payload's hash pay as indexed and its
// summary sum the same way. Reads the node (a mismatch path only).
func (s *Store) storedWithSharedRedactions(step int, c Turn, sum, pay string) bool {
	if !MatchesSharedRedactions(sum, c.Summary) {
		return false
	}
	n, err := s.readColdNode(step)
	if err != nil {
		return false
	}
	stored := n.RawContent
	if stored == "" {
		stored = n.Summary
	}
	return sha256Hex([]byte(stored)) == pay && MatchesSharedRedactions(stored, c.Payload())
}

// mkQuarantine creates quarantine/ as needed and refuses one that is not a
// directory of the store (a symlink would move files outside it).
func mkQuarantine(qdir string) error {
	if fi, err := os.Lstat(qdir); err == nil && !fi.IsDir() {
		return &StoreFileError{File: qdir, Err: fmt.Errorf("is not a directory of the store (it resolves to %s)", resolvePath(qdir)),
			Remedy: "replace it by a plain directory (move the link away), then try again"}
	}
	if err := os.MkdirAll(qdir, 0o755); err != nil {
		return &StoreFileError{File: qdir, Err: err, Remedy: "fix the permissions of the store directory"}
	}
	return nil
}
