package contextfold

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/contextfold/contextfold/internal/canonjson"
	"github.com/contextfold/contextfold/internal/fsutil"
	"github.com/contextfold/contextfold/schema"
)

// Eviction is one event of the append-only eviction log (CONF-07).
type Eviction struct {
	StepID    int
	EvictedAt string
}

// Evict marks a node evicted after the response that used it, and appends an
// event to eviction_log.json; every eviction is a new event (spec §5,
// CONF-07). The log is written before the index.
//
// Errors: *NodeNotFoundError, *StoreFileError.
func (s *Store) Evict(step int) (*Eviction, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.be == nil && s.opts.EvictionLogBatch > 1 && len(s.evPending)+1 < s.opts.EvictionLogBatch {
		// A step already marked evicted: only the log gains an event,
		// kept for the batch (Options.EvictionLogBatch).
		if ix, err := s.loadIndex(); err == nil {
			if r, ok := ix.get(step); ok && r.evicted {
				ev := Eviction{StepID: step, EvictedAt: s.now()}
				s.evPending = append(s.evPending, ev)
				return &ev, nil
			}
		}
	}
	if s.be != nil {
		// An unknown step takes no write transaction.
		if ix, err := s.loadIndex(); err == nil {
			if _, ok := ix.get(step); !ok {
				return nil, &NodeNotFoundError{StepID: step}
			}
		}
	} else if s.pending == nil {
		// Nothing is indexed: do not create a store just to say so. Not
		// while a fold batch of this Store is committing (deferCommit):
		// its index is named only at the end of the commit, and the
		// batch's nodes are indexed already (a proxy request of the
		// session that began before the commit ended evicts the fold
		// event's hydration); lock below waits for the commit.
		if _, err := os.Stat(filepath.Join(s.dir, IndexFile)); errors.Is(err, fs.ErrNotExist) {
			return nil, &NodeNotFoundError{StepID: step}
		}
	}
	l, err := s.lock()
	if err != nil {
		return nil, err
	}
	defer l.Unlock()
	ix, err := s.loadIndex()
	if err != nil {
		return nil, err
	}
	r, ok := ix.get(step)
	if !ok {
		return nil, &NodeNotFoundError{StepID: step}
	}
	ev := &Eviction{StepID: step, EvictedAt: s.now()}
	if err := s.writeEvictions(append(s.evPending, *ev)); err != nil {
		return nil, err
	}
	s.evPending = nil
	if !r.evicted {
		r.evicted = true
		if err := s.commit(ix, []journalOp{{evict: step}}); err != nil {
			return nil, err
		}
	}
	if err := s.flush(); err != nil {
		return nil, err
	}
	return ev, nil
}

// writeEvictions appends evs to the eviction log and writes it. Callers
// hold s.mu and the store lock.
func (s *Store) writeEvictions(evs []Eviction) error {
	data, onlyEvicted, err := s.evictionLogWith(evs)
	if err != nil {
		return err
	}
	s.evLog = evictionLogCache{}
	err = s.writeStoreFile(EvictionLogFile, data)
	s.wroteEvictions(data, onlyEvicted, err)
	if err != nil {
		return s.storeErr(s.storePath(EvictionLogFile), err, "free disk space or fix the permissions of the store directory")
	}
	return nil
}

// evictionLogWith returns the bytes of the eviction log with evs appended,
// and whether "evicted" is the log's only key (its bytes can be cached).
// Callers hold s.mu and the store lock.
func (s *Store) evictionLogWith(evs []Eviction) (_ []byte, onlyEvicted bool, _ error) {
	data, appended := s.appendToCachedEvictionLog(evs)
	if appended {
		return data, true, nil
	}
	logDoc, err := s.readEvictionLogDoc()
	if err != nil {
		return nil, false, err
	}
	events, _ := logDoc["evicted"].([]any)
	for _, ev := range evs {
		events = append(events, map[string]any{"step_id": ev.StepID, "evicted_at": ev.EvictedAt})
	}
	logDoc["evicted"] = events
	if data, err = canonjson.Pretty(logDoc); err != nil {
		return nil, false, err
	}
	if err := schema.Validate(schema.EvictionLog, data); err != nil {
		return nil, false, &StoreFileError{File: s.storePath(EvictionLogFile), Err: err, Remedy: "the eviction log does not follow its schema; restore it from a backup"}
	}
	return data, len(logDoc) == 1, nil
}

// wroteEvictions ends a write of the eviction log as data (err: the
// write's error, turned into a *StoreFileError): the bytes are cached for
// the next append when the write succeeded. Callers hold s.mu.
func (s *Store) wroteEvictions(data []byte, onlyEvicted bool, err error) {
	s.evLog = evictionLogCache{}
	if err != nil {
		return
	}
	if s.be == nil && onlyEvicted {
		if st, err := stampOf(s.storePath(EvictionLogFile)); err == nil && st.ok {
			s.evLog = evictionLogCache{stamp: st, data: data}
		}
	}
}

// Sync waits for a fold batch still committing (FoldBatchEachDeferred)
// and writes the eviction events kept for a batch
// (Options.EvictionLogBatch), if any; call it before the process exits or
// lets the store go. Safe for concurrent use.
//
// Errors: *StoreFileError (the events stay kept for the next write).
func (s *Store) Sync() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.waitPending() // a fold batch still committing (FoldBatchEachDeferred)
	if len(s.evPending) == 0 {
		return nil
	}
	l, err := s.lock()
	if err != nil {
		return err
	}
	defer l.Unlock()
	if err := s.writeEvictions(s.evPending); err != nil {
		return err
	}
	s.evPending = nil
	return nil
}

// WriteKeptEvictions writes the eviction events kept for a batch
// (Options.EvictionLogBatch) when they are at least atLeast (and at least
// one), as the eviction that fills the batch would, and reports whether
// it wrote. A caller that evicts on a request's path (the proxy evicts a
// turn's hydrated nodes once the upstream's response is read, before its
// last bytes reach the client) calls it off that path with part of the
// batch, so that the batch's write (the whole log, atomically, with its
// fsyncs) seldom falls to an eviction on the path. The write holds the
// store's lock but not its in-process lock while the file is written and
// synced: the Store's reads (the index, its entries and version, the
// nodes) and evictions of steps already evicted go on meanwhile, and what
// takes the store's lock (a fold, an eviction that changes the index,
// Sync) waits for it, as for a deferred fold's commit. EvictionLog waits
// for it too. What a crash may lose is unchanged: at most
// EvictionLogBatch-1 repeated events. Safe for concurrent use.
//
// Errors: *StoreFileError (the events stay kept for the next write).
func (s *Store) WriteKeptEvictions(atLeast int) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	atLeast = max(atLeast, 1)
	if s.be != nil || len(s.evPending) < atLeast {
		return false, nil
	}
	l, err := s.lock() // waits for a commit under way (s.mu released meanwhile)
	if err != nil {
		return false, err
	}
	if len(s.evPending) < atLeast {
		l.Unlock()
		return false, nil
	}
	n := len(s.evPending)
	data, onlyEvicted, err := s.evictionLogWith(s.evPending[:n:n])
	if err != nil {
		l.Unlock()
		return false, err
	}
	// The file's write and syncs without s.mu, s.evWrite set meanwhile:
	// what takes the store's lock waits for it (waitPending). The events
	// stay kept (EvictionLog reads them) until the file holds them.
	done := make(chan struct{})
	s.evWrite = done
	s.evLog = evictionLogCache{}
	s.mu.Unlock()
	err = s.writeStoreFile(EvictionLogFile, data)
	s.mu.Lock()
	s.wroteEvictions(data, onlyEvicted, err)
	if err == nil {
		s.evPending = slices.Delete(s.evPending, 0, n) // the events kept meanwhile stay
	} else {
		err = s.storeErr(s.storePath(EvictionLogFile), err, "free disk space or fix the permissions of the store directory")
	}
	s.evWrite = nil
	l.Unlock()
	close(done)
	return err == nil, err
}

// evictionLogCache is the eviction log as this process last wrote it
// (directory stores only): while the file keeps that stamp (size, mtime,
// inode: an atomic replace by any writer changes the inode), the next event
// is appended to these bytes without parsing and schema-checking the whole
// log again, so a long proxy session's evictions cost the same at the
// 1,000th as at the first (before: a read, decode, schema check and
// re-encode of every earlier event, quadratic over a session). data is
// canonjson.Pretty of a document whose only key is "evicted", so the
// result is byte for byte what the slow path would write.
type evictionLogCache struct {
	stamp fileStamp
	data  []byte
}

// Pretty's framing of a non-empty eviction list (indent 2, sorted keys).
const (
	evictionLogHead = "{\n  \"evicted\": [\n"
	evictionLogTail = "\n  ]\n}"
	evictionLogNone = "{\n  \"evicted\": []\n}"
)

// appendToCachedEvictionLog returns the log with evs appended and true when
// the cached bytes are still the file's; else nil, false (read it afresh).
// Callers hold s.mu and the store lock.
func (s *Store) appendToCachedEvictionLog(evs []Eviction) ([]byte, bool) {
	c := s.evLog
	if s.be != nil || c.data == nil || len(evs) == 0 {
		return nil, false
	}
	st, err := stampOf(s.storePath(EvictionLogFile))
	if err != nil || !st.ok || st.size != c.stamp.size || st.ino != c.stamp.ino || !st.mtime.Equal(c.stamp.mtime) {
		return nil, false
	}
	list := make([]any, len(evs))
	for i, ev := range evs {
		list[i] = map[string]any{"step_id": ev.StepID, "evicted_at": ev.EvictedAt}
	}
	one, err := canonjson.Pretty(map[string]any{"evicted": list})
	if err != nil || !strings.HasPrefix(string(one), evictionLogHead) || !strings.HasSuffix(string(one), evictionLogTail) {
		return nil, false
	}
	if string(c.data) == evictionLogNone {
		return one, true
	}
	if !strings.HasPrefix(string(c.data), evictionLogHead) || !strings.HasSuffix(string(c.data), evictionLogTail) {
		return nil, false
	}
	elem := one[len(evictionLogHead) : len(one)-len(evictionLogTail)]
	keep := c.data[:len(c.data)-len(evictionLogTail)]
	out := make([]byte, 0, len(keep)+2+len(elem)+len(evictionLogTail))
	out = append(out, keep...)
	out = append(out, ",\n"...)
	out = append(out, elem...)
	out = append(out, evictionLogTail...)
	return out, true
}

func (s *Store) readEvictionLogDoc() (map[string]any, error) {
	path := s.storePath(EvictionLogFile)
	data, err := s.readStoreFile(EvictionLogFile)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]any{"evicted": []any{}}, nil
	}
	if errors.Is(err, fsutil.ErrNotRegular) {
		return nil, s.storeErr(path, err, "move it aside and restore the log from a backup, or remove it to start a new eviction log")
	}
	if err != nil {
		return nil, s.storeErr(path, err, "check the permissions of the store directory")
	}
	v, err := canonjson.Decode(data)
	if err != nil {
		return nil, &StoreFileError{File: path, Err: err, Remedy: "restore the file from a backup; it is append-only and is never rewritten from scratch"}
	}
	doc, ok := v.(map[string]any)
	if _, isList := doc["evicted"].([]any); !ok || (doc["evicted"] != nil && !isList) {
		return nil, &StoreFileError{File: path, Err: fmt.Errorf(`expected {"evicted": [...]}`), Remedy: "restore the file from a backup"}
	}
	return doc, nil
}

// EvictionLog returns every eviction event in log order, the ones kept for
// a batch (Options.EvictionLogBatch) last.
func (s *Store) EvictionLog() ([]Eviction, error) {
	s.mu.Lock()
	for w := s.evWrite; w != nil; w = s.evWrite {
		// A write of kept events under way (WriteKeptEvictions): the
		// events are in the file once it is done.
		s.mu.Unlock()
		<-w
		s.mu.Lock()
	}
	s.mu.Unlock()
	evs, err := s.evictionEvents()
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	evs = append(evs, s.evPending...)
	s.mu.Unlock()
	return evs, nil
}

func (s *Store) evictionEvents() ([]Eviction, error) {
	doc, err := s.readEvictionLogDoc()
	if err != nil {
		return nil, err
	}
	events, _ := doc["evicted"].([]any)
	out := make([]Eviction, 0, len(events))
	for _, ev := range events {
		m, ok := ev.(map[string]any)
		if !ok {
			continue
		}
		id, err := intField(m, "step_id")
		if err != nil {
			continue
		}
		at, _ := m["evicted_at"].(string)
		out = append(out, Eviction{StepID: id, EvictedAt: at})
	}
	return out, nil
}

// Status summarises a store (spec §5 status).
type Status struct {
	Total       int // nodes in the index
	Active      int // not evicted
	Evicted     int
	TotalTokens int // archived tokens (sum of token_estimate)
	Policy      *Policy
}

// Status counts the store's nodes and tokens and returns the policy in force.
// Read-only.
func (s *Store) Status() (*Status, error) {
	policy, err := s.Policy()
	if err != nil {
		return nil, err
	}
	// Counted from the records, without reading any entry: a 100k-node
	// store answers in milliseconds.
	total, evicted, tokens, err := s.indexCounts()
	if err != nil {
		return nil, err
	}
	st := &Status{Total: total, Active: total - evicted, Evicted: evicted, TotalTokens: tokens, Policy: policy}
	return st, nil
}
