package contextfold

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/contextfold/contextfold/internal/canonjson"
)

// JournalFile is our extension: once recall_index.json reaches
// JournalThreshold (1 MiB, some 500–1,000 nodes), a fold or an eviction appends
// one line to this journal (canonical JSON, fsynced) instead of rewriting
// the whole index; the index is rewritten, and the journal emptied, every
// JournalMaxOps operations, by 'contextfold compact', and at the end of
// every 'contextfold ingest'. Readers apply the journal on top of the
// index. An implementation that reads recall_index.json alone (the
// reference) sees the store as of the last rewrite: run 'contextfold
// compact' before handing a store with a journal to one. A store whose
// index is smaller than JournalThreshold never has a journal.
const JournalFile = "index_journal.jsonl"

// Tuning of the journal. They are variables so that tests can exercise
// large-store behaviour on small stores; change them only before opening
// stores.
var (
	// JournalThreshold is the index size in bytes from which updates are
	// journaled instead of rewriting recall_index.json. Below it a fold
	// rewrites an index of at most this size; above it a one-turn fold costs
	// one appended line, and a full rewrite every JournalMaxOps operations.
	//
	// 1 MiB keeps every store of up to several hundred turns exactly the
	// reference's after each fold (recall_index.json complete, no journal),
	// which is what an interoperating tool reads, while bounding what a
	// single fold rewrites (a 1 MiB write and fsync, a few milliseconds).
	JournalThreshold int64 = 1 << 20
	// JournalMaxOps is the number of journaled operations after which the
	// index is rewritten (compacted).
	JournalMaxOps = 256
)

// journalOp is one journaled update.
type journalOp struct {
	fold  *record // a new entry
	evict int     // a step marked evicted (when fold is nil)
}

// encodeOps renders ops as journal lines.
func (ix *index) encodeOps(ops []journalOp) ([]byte, error) {
	var b bytes.Buffer
	for _, op := range ops {
		var doc map[string]any
		if op.fold != nil {
			doc = map[string]any{"op": "fold", "entry": ix.entry(op.fold).Doc}
		} else {
			doc = map[string]any{"op": "evict", "step_id": op.evict}
		}
		c, err := canonjson.Canonical(doc)
		if err != nil {
			return nil, err
		}
		b.Write(c)
		b.WriteByte('\n')
	}
	return b.Bytes(), nil
}

// applyJournal applies complete journal lines in data and returns the bytes
// consumed and the lines applied. Replaying an operation the index already
// holds is a no-op, so a journal that outlived a compaction is harmless.
func (ix *index) applyJournal(data []byte) (consumed, lines int, err error) {
	for {
		nl := bytes.IndexByte(data[consumed:], '\n')
		if nl < 0 {
			return consumed, lines, nil // a torn tail is not an operation
		}
		line := data[consumed : consumed+nl]
		v, derr := canonjson.Decode(line)
		if derr != nil {
			return consumed, lines, fmt.Errorf("journal line %d: %v", lines+1, derr)
		}
		doc, _ := v.(map[string]any)
		switch doc["op"] {
		case "fold":
			r, rerr := ix.recordFromDoc("", doc["entry"])
			if rerr != nil {
				return consumed, lines, fmt.Errorf("journal line %d: %v", lines+1, rerr)
			}
			if _, ok := ix.get(r.step); !ok {
				ix.add(r)
			}
		case "evict":
			step, ierr := intField(doc, "step_id")
			if ierr != nil {
				return consumed, lines, fmt.Errorf("journal line %d: %v", lines+1, ierr)
			}
			if r, ok := ix.get(step); ok {
				r.evicted = true
			}
		default:
			return consumed, lines, fmt.Errorf("journal line %d: unknown op %v", lines+1, doc["op"])
		}
		consumed += nl + 1
		lines++
	}
}

// appendJournal appends lines durably at offset off, cutting a torn tail.
func appendJournal(path string, off int64, lines []byte) (int64, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	if fi.Size() != off {
		if err := f.Truncate(off); err != nil {
			return 0, err
		}
	}
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return 0, err
	}
	n, err := f.Write(lines)
	if err != nil {
		f.Truncate(off)
		return 0, err
	}
	if err := f.Sync(); err != nil {
		return 0, err
	}
	if fi.Size() == 0 {
		if err := syncDir(filepath.Dir(path)); err != nil {
			return 0, err
		}
	}
	return off + int64(n), nil
}
