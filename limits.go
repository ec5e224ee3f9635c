package contextfold

import (
	"fmt"

	"github.com/contextfold/contextfold/internal/fsutil"
)

// Size limits of what a store reads and folds. Every file of a store is
// read through one reader (internal/fsutil: ReadFileMax, OpenRegular) that
// refuses, without blocking and before reading a byte, a path that is not a
// regular file (a FIFO, a device, a socket, a directory) and a file larger
// than its limit: validate and repair report it as a finding, hydrate and
// scan as an error naming the file and its size, and a cache past its
// limit or not regular is a miss. A limit bounds the memory of a read: a
// file is held whole while it is parsed and verified (the payload hash of
// CONF-09 covers the whole node), so a reader needs a few times its size.
const (
	// MaxPayloadBytes is the largest payload (raw content) a turn may fold:
	// 64 MiB, the proxy's largest request body. Fold refuses a larger one
	// with an error naming its size; split the output, or fold a summary of
	// it and keep the file elsewhere.
	MaxPayloadBytes = 64 << 20

	// MaxFileBytes is the largest cold node, hydration policy, store
	// settings, eviction log, policy history or repair log read: 1 GiB,
	// room for a MaxPayloadBytes payload held twice (raw and normalized
	// content) even when JSON escaping makes every byte six (\u0001), plus
	// its lists.
	MaxFileBytes = 1 << 30

	// MaxIndexBytes is the largest recall_index.json or index journal
	// parsed: 2 GiB (a store of millions of folded turns; its snapshot in
	// the per-user cache is mapped, not read, and is not bounded by it).
	MaxIndexBytes = 2 << 30
)

// PayloadTooLargeError is Fold's refusal of a turn whose payload is larger
// than MaxPayloadBytes. Nothing of the batch was written.
type PayloadTooLargeError struct {
	StepID int
	Size   int // the payload's size, in bytes
}

func (e *PayloadTooLargeError) Error() string {
	return fmt.Sprintf("step %d: the payload is %s, larger than the %s a turn may fold (MaxPayloadBytes); split the output into several turns, or fold a summary and keep the file elsewhere",
		e.StepID, fsutil.ByteSize(int64(e.Size)), fsutil.ByteSize(MaxPayloadBytes))
}

// checkPayloadSizes refuses a batch holding a payload past MaxPayloadBytes
// before anything is written.
func checkPayloadSizes(turns []Turn) error {
	for _, t := range turns {
		if n := len(t.Payload()); n > MaxPayloadBytes {
			return &PayloadTooLargeError{StepID: t.StepID, Size: n}
		}
	}
	return nil
}
