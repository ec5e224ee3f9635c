package contextfold

import (
	"runtime"
	"strconv"

	"github.com/contextfold/contextfold/internal/canonjson"
	"github.com/contextfold/contextfold/internal/parallel"
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
	if runtime.GOMAXPROCS(0) < 2 || len(todo) < 512 {
		return // one CPU, or too few to be worth it: rec decodes them as they are asked for
	}
	const chunk = 64 // positions a goroutine takes at a time
	parallel.Each((len(todo)+chunk-1)/chunk, func(c int) {
		for _, p := range todo[c*chunk : min((c+1)*chunk, len(todo))] {
			ix.recs[p] = ix.base.decodedRecord(ix, p)
		}
	})
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
