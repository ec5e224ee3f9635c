package ranked

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/backend"
	"github.com/contextfold/contextfold/internal/fsutil"
)

// The shared snapshot: a store whose backend keeps derived
// snapshots (backend.SnapshotStore: PostgreSQL's cf_snapshots) gets the
// ranked index snapshot of snapshot.go shared by every process and host,
// so that a replica's first ranked scan of a large session loads it and
// reads only the cold nodes folded since its revision (Refresh), instead
// of reading and analysing every cold node.
//
// The bytes are the snapshot file's, opaque to the backend. The backend is
// not trusted: a shared snapshot is used only when (1) the SHA-256 of its
// bytes is the one recorded beside them, (2) it decodes (header, chunk
// table and document CRC-32Cs), (3) the store index version it records is
// the revision of its row, in the index's current generation and not ahead
// of it, and (4) every index entry not written since that revision has a
// snapshot node of the same step, artifact_sha256, token estimate and
// summary, and every snapshot node's step is indexed (checked by the first
// Refresh, which reads the entries anyway: checkShared). Any mismatch is a
// miss: the index is rebuilt from the cold nodes and the rebuilt snapshot
// replaces the shared one. (A snapshot forged whole, with consistent hashes
// and true identities but other terms, could still mis-rank; it cannot
// make a hydrate return wrong bytes: hydrate verifies each cold node.)
//
// When it is written (never in a fold's write transaction; each write is a
// transaction of its own that locks nothing a fold waits for):
//   - after a build from every cold node (a first use without a usable
//     snapshot), synchronously: the build took a read of every node (2 min
//     at 100k), the write adds about 8 s, and a one-shot command would
//     otherwise exit before a background write finished;
//   - when the local snapshot is compacted (Refresh: max(saveEvery, 1 %)
//     nodes changed since it was written) and the shared one is more than
//     sharedLead revisions behind, in the background (one write in flight
//     per index), so that a replica starting later reads at most about
//     1 % of the nodes again: at 100k nodes one 283 MB write per ≈1,000
//     folds of the session, whichever replica gets there first (the
//     others see the lead is small and write nothing).
const sharedKind = "ranked"

// rejectLog holds the func(line string) SetRejectLog set.
var rejectLog atomic.Value

// SetRejectLog sets where the one line reporting a shared snapshot that was
// found but refused (its reason; the index is rebuilt from the cold nodes
// and the snapshot replaced) goes: the proxy gives its logger; nil (the
// default) writes the line to os.Stderr. Safe for concurrent use.
func SetRejectLog(f func(line string)) { rejectLog.Store(f) }

// logRejected reports, once per refusal, a shared snapshot refused.
func logRejected(dir, reason string) {
	if reason == "" {
		return
	}
	line := fmt.Sprintf("contextfold: warning: the shared ranked snapshot of %s fails verification (%s): rebuilding it from the cold nodes", dir, reason)
	if f, _ := rejectLog.Load().(func(string)); f != nil {
		f(line)
		return
	}
	fmt.Fprintln(os.Stderr, line)
}

// sharedStore returns the shared snapshot store of s's backend (nil: none).
func sharedStore(s *contextfold.Store) backend.SnapshotStore {
	if s == nil {
		return nil
	}
	ss, _ := s.Backend().(backend.SnapshotStore)
	return ss
}

// sharedLead is how many revisions the shared snapshot may lag the index
// before a compaction writes it again.
func sharedLead(live int) int64 { return int64(max(saveEvery, live/100)) }

// parseRev reads the revision of a backend store's index version
// (contextfold.Store.IndexVersion: "rev/GENERATION/SEQ/ENTRIES").
func parseRev(version string) (backend.Revision, bool) {
	f := strings.Split(version, "/")
	if len(f) != 4 || f[0] != "rev" {
		return backend.Revision{}, false
	}
	g, err1 := strconv.ParseInt(f[1], 10, 64)
	q, err2 := strconv.ParseInt(f[2], 10, 64)
	if err1 != nil || err2 != nil {
		return backend.Revision{}, false
	}
	return backend.Revision{Generation: g, Seq: q}, true
}

// Stats says how an index got its nodes, for tests and diagnostics.
type Stats struct {
	// Source is where the index came from when this process first used
	// it: "build" (every cold node read), "local" (the per-user cache's
	// snapshot), "shared" (the backend's shared snapshot).
	Source string
	// NodesRead counts the cold nodes Refresh read and analysed since.
	NodesRead int
	// NodesFed counts the nodes Refresh analysed from texts a fold handed
	// it (Folded) instead of reading them.
	NodesFed int
	// SharedRejected says why a shared snapshot that was found was not
	// used ("" when none was found or it was used).
	SharedRejected string
	// SharedWrites counts the shared snapshots this index wrote;
	// SharedErr is the last write's error ("" : none).
	SharedWrites int
	SharedErr    string
}

// Stats returns the index's Stats. Safe for concurrent use.
func (ix *Index) Stats() Stats {
	ix.mu.Lock()
	st := Stats{Source: ix.source, NodesRead: ix.read, NodesFed: ix.fedUsed, SharedRejected: ix.rejected}
	ix.mu.Unlock()
	ix.shareMu.Lock()
	st.SharedWrites, st.SharedErr = ix.shareWrites, ix.shareErr
	ix.shareMu.Unlock()
	return st
}

// sharedWG counts the background shared snapshot writes in flight.
var sharedWG sync.WaitGroup

// WaitShared waits until this process's background writes of shared
// snapshots (to the backend, and of a verified shared snapshot to the
// per-user cache) are done (tests; a proxy shutting down gracefully). Safe
// for concurrent use.
func WaitShared() { sharedWG.Wait() }

// openFor opens the index of store s when the process first uses it: the
// local snapshot, or the shared one when the store's backend has a usable
// one that is more than sharedLead revisions newer, else an empty index
// (built by the first Refresh).
func openFor(s *contextfold.Store) *Index {
	dir := s.Dir()
	local := load(dir)
	ss := sharedStore(s)
	if ss == nil {
		if local == nil {
			ix := NewIndex()
			ix.source = "build"
			return ix
		}
		local.source = "local"
		return local
	}
	info, err := ss.SnapshotInfo(sharedKind)
	if err != nil {
		if local == nil {
			ix := NewIndex()
			ix.source = "build"
			return ix
		}
		local.source, local.shareDue = "local", true // the database has none: give it ours
		return local
	}
	if local != nil {
		if lr, ok := parseRev(local.version); ok && lr.Generation == info.Rev.Generation && lr.Seq+sharedLead(local.live) >= info.Rev.Seq {
			local.source = "local"
			return local
		}
	}
	ix, reason := loadShared(s, ss, dir)
	if ix != nil {
		if local != nil && local.snap != nil && local.snap != ix.snap {
			local.snap.close()
		}
		ix.source = "shared"
		return ix
	}
	logRejected(dir, reason)
	if local != nil {
		local.source, local.rejected, local.forceShare = "local", reason, reason != ""
		return local
	}
	ix = NewIndex()
	ix.source, ix.rejected, ix.forceShare = "build", reason, reason != ""
	return ix
}

// loadShared reads and verifies the shared snapshot (the index reads its
// bytes in memory; once checkShared has verified it against the index, a
// copy is kept in the per-user cache for the next process). The reason a
// snapshot was refused is returned with a nil index ("" : none stored).
func loadShared(s *contextfold.Store, ss backend.SnapshotStore, dir string) (*Index, string) {
	info, data, err := ss.ReadSnapshot(sharedKind)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, ""
		}
		return nil, "unreadable: " + err.Error()
	}
	sum := sha256.Sum256(data)
	if hex.EncodeToString(sum[:]) != info.SHA256 {
		return nil, "its bytes do not hash to the recorded SHA-256"
	}
	ix, err := decodeSnapshot(data)
	if err != nil {
		return nil, "it does not decode (corrupt or of another format)"
	}
	if vr, ok := parseRev(ix.version); !ok || vr != info.Rev {
		return nil, fmt.Sprintf("it records index version %q, its row revision %d/%d", ix.version, info.Rev.Generation, info.Rev.Seq)
	}
	rev := info.Rev
	ix.verifyRev = &rev // against the index, by the first refresh (checkShared)
	ix.localCopy = data // kept in the per-user cache once verified (checkShared)
	return ix, ""
}

// keepLocal writes a verified shared snapshot to the per-user cache in
// the background, for the next process on this host (the index itself
// keeps reading the bytes in memory: writing and syncing 285 MB before the
// first scan doubled a cold replica's ranked start at 100k nodes).
// Callers hold ix.mu.
func (ix *Index) keepLocal() {
	data := ix.localCopy
	ix.localCopy = nil
	path := cachePath(ix.dir, true)
	if data == nil || path == "" {
		return
	}
	sharedWG.Add(1)
	go func() {
		defer sharedWG.Done()
		if fsutil.WriteFileAtomic(path, data, 0o600) == nil {
			resetDelta(path, identityOf(data))
		}
	}()
}

// checkShared verifies a shared snapshot just opened against the store's
// index (rule 4 above; rule 3's "not ahead of it" too), in the first
// refresh, which has read the entries anyway; on a mismatch the index is
// emptied (and the copy in the per-user cache removed), so that the
// refresh builds it from every cold node and the rebuilt snapshot replaces
// the shared one. Callers hold ix.mu.
func (ix *Index) checkShared(s *contextfold.Store, entries []*contextfold.Entry, ver string) {
	rev := *ix.verifyRev
	ix.verifyRev = nil
	reason := ix.verifyShared(s, entries, ver, rev)
	if reason == "" {
		ix.keepLocal()
		return
	}
	ix.localCopy = nil
	ix.reset()
	logRejected(s.Dir(), reason)
	ix.source, ix.rejected, ix.forceShare = "build", reason, true
	if p := cachePath(ix.dir, false); p != "" {
		_ = os.Remove(p)
		_ = os.Remove(deltaPath(p))
	}
}

// verifyShared is checkShared's test; "" when it holds.
func (ix *Index) verifyShared(s *contextfold.Store, entries []*contextfold.Entry, ver string, rev backend.Revision) string {
	cr, ok := parseRev(ver)
	if !ok || cr.Generation != rev.Generation || cr.Seq < rev.Seq {
		return fmt.Sprintf("its revision %d/%d is not of the index (now %s)", rev.Generation, rev.Seq, ver)
	}
	// Read after the entries: every entry written after rev as of them is
	// in the delta.
	d, err := s.Backend().ReadIndex(rev)
	if err != nil {
		return "the index is unreadable: " + err.Error()
	}
	if d.Full || d.Rev.Generation != rev.Generation {
		return "the index was replaced since it was written"
	}
	since := make(map[int]bool, len(d.Entries))
	for _, e := range d.Entries {
		since[e.StepID] = true
	}
	present := make(map[int]bool, len(entries))
	for _, e := range entries {
		present[e.StepID] = true
		if since[e.StepID] {
			continue
		}
		di, ok := ix.stepDoc(e.StepID)
		if !ok {
			return fmt.Sprintf("step %d is indexed but not in the snapshot", e.StepID)
		}
		if ix.artifactOf(di) != e.ArtifactSHA256 || ix.docs[di].tokens != e.TokenEstimate || ix.summaryOf(di) != e.Summary {
			return fmt.Sprintf("step %d does not match its index entry", e.StepID)
		}
	}
	for i := range ix.docs {
		if !present[ix.docs[i].step] {
			return fmt.Sprintf("it holds step %d, which is not indexed", ix.docs[i].step)
		}
	}
	if ix.snap != nil && ix.snap.bad {
		return "it does not decode (a chunk's CRC-32C)"
	}
	return ""
}

// share writes data, the snapshot just encoded, as the store's shared
// snapshot: synchronously when sync, else in the background (skipped when
// a write of this index is in flight). Callers hold ix.mu.
func (ix *Index) share(ss backend.SnapshotStore, data []byte, sync bool) {
	rev, ok := parseRev(ix.version)
	if !ok {
		return
	}
	lead := sharedLead(ix.live)
	if ix.forceShare {
		lead = -1
	}
	write := func() {
		wrote, err := ss.WriteSnapshot(sharedKind, rev, data, lead)
		ix.shareMu.Lock()
		if err != nil {
			ix.shareErr = err.Error()
		} else if wrote {
			ix.shareWrites++
			ix.shareErr = ""
		}
		ix.shareMu.Unlock()
	}
	ix.shareDue, ix.forceShare = false, false
	if sync {
		write()
		return
	}
	ix.shareMu.Lock()
	busy := ix.sharing
	ix.sharing = true
	ix.shareMu.Unlock()
	if busy {
		return
	}
	sharedWG.Add(1)
	go func() {
		defer sharedWG.Done()
		write()
		ix.shareMu.Lock()
		ix.sharing = false
		ix.shareMu.Unlock()
	}()
}

// CheckShared verifies the shared ranked snapshot of store s as a replica's
// first ranked scan would (rules 1-4 above), changing nothing: found is
// false when s's backend keeps no shared snapshot or holds none; reason is
// why it fails verification ("" : it holds). validate reports a failure as
// a warning: the snapshot is derived data, never trusted, and the next
// ranked scan rebuilds and replaces it. Reads the whole snapshot and the
// index (bytes: the snapshot's size). Safe for concurrent use.
func CheckShared(s *contextfold.Store) (found bool, reason string) {
	ss := sharedStore(s)
	if ss == nil {
		return false, ""
	}
	ix, reason := loadShared(s, ss, s.Dir())
	if ix == nil {
		return reason != "", reason
	}
	ver, err := s.IndexVersion()
	if err != nil {
		return true, "the index is unreadable: " + err.Error()
	}
	entries, err := s.EntriesShared()
	if err != nil {
		return true, "the index is unreadable: " + err.Error()
	}
	return true, ix.verifyShared(s, entries, ver, *ix.verifyRev)
}
