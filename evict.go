package contextfold

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/contextfold/contextfold/internal/canonjson"
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
	if s.be != nil {
		// An unknown step takes no write transaction.
		if ix, err := s.loadIndex(); err == nil {
			if _, ok := ix.get(step); !ok {
				return nil, &NodeNotFoundError{StepID: step}
			}
		}
	} else if _, err := os.Stat(filepath.Join(s.dir, IndexFile)); errors.Is(err, fs.ErrNotExist) {
		// Nothing is indexed: do not create a store just to say so.
		return nil, &NodeNotFoundError{StepID: step}
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
	logDoc, err := s.readEvictionLogDoc()
	if err != nil {
		return nil, err
	}
	events, _ := logDoc["evicted"].([]any)
	logDoc["evicted"] = append(events, map[string]any{"step_id": step, "evicted_at": ev.EvictedAt})
	data, err := canonjson.Pretty(logDoc)
	if err != nil {
		return nil, err
	}
	path := s.storePath(EvictionLogFile)
	if err := schema.Validate(schema.EvictionLog, data); err != nil {
		return nil, &StoreFileError{File: path, Err: err, Remedy: "the eviction log does not follow its schema; restore it from a backup"}
	}
	if err := s.writeStoreFile(EvictionLogFile, data); err != nil {
		return nil, s.storeErr(path, err, "free disk space or fix the permissions of the store directory")
	}
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

func (s *Store) readEvictionLogDoc() (map[string]any, error) {
	path := s.storePath(EvictionLogFile)
	data, err := s.readStoreFile(EvictionLogFile)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]any{"evicted": []any{}}, nil
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

// EvictionLog returns every eviction event in log order.
func (s *Store) EvictionLog() ([]Eviction, error) { return s.evictionEvents() }

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
