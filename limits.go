package contextfold

// Size limits of what a store reads and folds. Every file of a store is
// read through one helper (internal/fsutil: ReadFileMax, OpenRegular) that
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
	// settings, eviction log, policy history or repair log read: 512 MiB,
	// room for a MaxPayloadBytes payload even when JSON escaping makes every
	// byte six (\u0000) plus its lists.
	MaxFileBytes = 512 << 20

	// MaxIndexBytes is the largest recall_index.json or index journal
	// parsed: 2 GiB (a store of millions of folded turns; its snapshot in
	// the per-user cache is mapped, not read, and is not bounded by it).
	MaxIndexBytes = 2 << 30
)
