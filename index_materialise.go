package contextfold

import (
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/contextfold/contextfold/internal/canonjson"
)

// materialise fills ix.recs for the base positions pos that are not
// materialised yet, decoding their entries on all CPUs (validate and repair
// read every entry of a large index). A position whose entry does
// not read or parse is left to rec's serial path (its fallback reads the
// snapshot's checksummed chunks, which is not safe concurrently). The caller
// holds the store's mutex.
func (ix *index) materialise(pos []int32) {
	if ix.base == nil {
		return
	}
	todo := make([]int32, 0, len(pos))
	for _, p := range pos {
		if int(p) < ix.nb && ix.recs[p] == nil {
			todo = append(todo, p)
		}
	}
	workers := min(runtime.GOMAXPROCS(0), len(todo)/256)
	if workers < 2 {
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)-1) * 64
				if i >= len(todo) {
					return
				}
				for _, p := range todo[i:min(i+64, len(todo))] {
					ix.recs[p] = ix.base.decodedRecord(ix, p)
				}
			}
		}()
	}
	wg.Wait()
}

// decodedRecord is the record of base position p decoded from its entry in
// recall_index.json, or nil when the entry does not read or parse. It only
// reads the record table (verified at load) and the index file, so it is
// safe for concurrent use.
func (b *baseIndex) decodedRecord(ix *index, p int32) *record {
	step := b.step(p)
	data, err := b.readEntry(p)
	if err != nil {
		return nil
	}
	v, err := canonjson.DecodeOwned(data) // readEntry's own buffer
	if err != nil {
		return nil
	}
	r, err := ix.recordFromDoc(strconv.Itoa(step), v)
	if err != nil {
		return nil
	}
	return r
}
