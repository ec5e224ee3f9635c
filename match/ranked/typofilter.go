package ranked

import "sync/atomic"

// The term filter of rule "typos": a prompt word of n letters has about
// 54n strings one edit away, and looking each up in the term dictionary (a
// binary search of the snapshot's terms, a string built for each) cost a
// scan five times its time without the rule. The filter answers "might
// the archive hold this string?" from a hash of the variant computed
// without building it, in one 64-bit word read; only the strings it lets
// through are built and looked up. It never says no to a term the index
// holds, so the rule's answers are those of looking every variant up.
//
// Two blocked Bloom filters (Putze, Sanders and Singler 2007, "Cache-,
// hash- and space-efficient Bloom filters": one 64-bit block per key,
// bloomBits bits set in it) make it. terms holds every term of lower-case
// ASCII letters (the only strings a variant of a word of such letters
// can be) of at least typoMinLen-1 letters. dels holds, for every such
// term of typoMinLen to typoDelMaxLen letters and every position j in it,
// the pair (j, the term less its letter at j), as SymSpell's deletion
// dictionary does (Garbe 2012) but bound to the position: the 25
// substitutions of a prompt word's letter at i all drop to (i, the word
// less that letter), and the 26 insertions before its letter i to (i, the
// word), so one look-up in dels rules out 25 or 26 variants. A word of n
// letters costs about 4n look-ups, not 54n. At 100k nodes (3.6 million
// terms, 360 thousand of them such) the two take 0.7 and 5 MB.

// Bits a key in each filter (false positives about 1 in 2,000 and 1 in
// 50): a false positive costs one dictionary look-up in terms, 25 or 26
// look-ups in terms in dels.
const (
	termBitsPerKey = 16
	delBitsPerKey  = 10
)

// bloomBits is the number of bits a key sets in its block.
const bloomBits = 6

// typoDelMaxLen is the longest term, in letters, whose deletions enter
// dels; a prompt word longer than typoDelMaxLen-1 letters looks every
// substitution and insertion up in terms.
const typoDelMaxLen = 64

// fnvOffset and fnvPrime are FNV-1a's 64-bit offset basis and prime.
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func fnvAdd(h uint64, b byte) uint64 { return (h ^ uint64(b)) * fnvPrime }

func fnvString[S ~string | ~[]byte](h uint64, s S) uint64 {
	for i := 0; i < len(s); i++ {
		h = (h ^ uint64(s[i])) * fnvPrime
	}
	return h
}

// delKey is dels' key of position j and the hash h of a string less its
// letter at j.
func delKey(h uint64, j int) uint64 { return fnvAdd(h^0x5bd1e995, byte(j)) }

// bloom is a blocked Bloom filter of 64-bit hashes.
type bloom struct {
	blocks []uint64
	keys   int // keys added
	// cap: the keys it was sized for; past it the false-positive rate
	// rises, and typoFilter builds the filter again.
	cap int
}

func newBloom(capacity, bitsPerKey int) bloom {
	return bloom{blocks: make([]uint64, max(1, capacity*bitsPerKey/64)), cap: capacity}
}

// mix is splitmix64's finaliser: FNV-1a's low bits depend little on the
// last bytes hashed, and a variant differs from its word in one byte.
func mix(h uint64) uint64 {
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	h ^= h >> 31
	return h
}

// at returns the block of finalised hash h (its high 32 bits scaled to
// the number of blocks: Lemire's multiply-shift reduction) and the bits
// it sets there (six positions from its low 36 bits).
func (b *bloom) at(h uint64) (*uint64, uint64) {
	h = mix(h)
	blk := &b.blocks[(h>>32)*uint64(len(b.blocks))>>32]
	var m uint64
	for range bloomBits {
		m |= 1 << (h & 63)
		h >>= 6
	}
	return blk, m
}

func (b *bloom) add(h uint64) {
	blk, m := b.at(h)
	*blk |= m
	b.keys++
}

func (b *bloom) mayHold(h uint64) bool {
	blk, m := b.at(h)
	return *blk&m == m
}

// termFilter is rule "typos"' filter of an index's terms.
type termFilter struct {
	terms, dels bloom
	failed      bool // a background build that gave up (typoBuild)
}

// typoKey reports whether a term enters the filter.
func typoKey[S ~string | ~[]byte](text S) bool {
	if len(text) < typoMinLen-1 {
		return false
	}
	for i := 0; i < len(text); i++ {
		if text[i] < 'a' || text[i] > 'z' {
			return false
		}
	}
	return true
}

// delKeys is the number of keys text adds to dels (text a typoKey).
func delKeys(n int) int {
	if n < typoMinLen || n > typoDelMaxLen {
		return 0
	}
	return n
}

// filterSize counts what a set of terms adds: to terms and to dels.
type filterSize struct{ terms, dels int }

func (z *filterSize) count(n int) { z.terms++; z.dels += delKeys(n) }

func (z filterSize) filter() *termFilter {
	// A quarter more room than the terms: the terms folded later are
	// added (insert) until it is full.
	return &termFilter{terms: newBloom(z.terms+z.terms/4+1024, termBitsPerKey), dels: newBloom(z.dels+z.dels/4+4096, delBitsPerKey)}
}

// full reports whether the filter holds more keys than it was sized for.
func (f *termFilter) full() bool { return f.terms.keys > f.terms.cap || f.dels.keys > f.dels.cap }

// add adds a term (a typoKey) to the filter.
func addTerm[S ~string | ~[]byte](f *termFilter, text S) {
	f.terms.add(fnvString(fnvOffset, text))
	if delKeys(len(text)) == 0 {
		return
	}
	h := uint64(fnvOffset) // the hash of text[:j]
	for j := range len(text) {
		f.dels.add(delKey(fnvString(h, text[j+1:]), j))
		h = fnvAdd(h, text[j])
	}
}

// typoSyncTerms is the largest snapshot dictionary (terms) whose filter
// the first scan with the rule builds itself; a larger one (about 40 ms a
// million terms) is built beside the scans (typoBuild), which look each
// variant up in the meantime: the same answers, slower.
var typoSyncTerms = 1 << 18 // a variable for tests

// typoBuild is a background build of the filter of a snapshot's terms.
type typoBuild struct {
	snap *snapFile
	// done is set when the build ends: the filter of the snapshot's terms,
	// or an empty one with failed set (a term table out of bounds).
	done atomic.Pointer[termFilter]
}

// typoFilter returns the index's term filter of every term of the
// snapshot and every term added since (insert keeps it up to date), or
// nil while a large snapshot's filter is being built: the caller then
// looks every variant up. Callers hold ix.mu.
func (ix *Index) typoFilter() *termFilter {
	if f := ix.typo; f != nil && !f.full() {
		return f
	}
	if b := ix.typoBuild; b != nil {
		f := b.done.Load()
		if f == nil {
			return nil // still building
		}
		ix.typoBuild = nil
		if f.failed || b.snap != ix.snap {
			return ix.typoFilterNow()
		}
		for text, id := range ix.vocab {
			if id >= ix.nterms && typoKey(text) {
				addTerm(f, text)
			}
		}
		ix.typo = f
		if !f.full() {
			return f
		}
	}
	if ix.snap == nil || int(ix.nterms) <= typoSyncTerms {
		return ix.typoFilterNow()
	}
	// A large snapshot: the first scan looks every variant up and starts
	// nothing, the second starts the build beside the scans. A one-shot
	// command (contextfold scan, a prompt hook) scans once and exits, and
	// a build it started would cost it a core for 0.2 s and 35 MB at 100k
	// nodes for nothing; a process that scans twice (a proxy, an MCP
	// server) will scan again.
	ix.typoAsks++
	if ix.typoAsks >= 2 {
		ix.startTypoBuild()
	}
	return nil
}

// startTypoBuild starts building the filter of a large snapshot's terms
// beside the scans, when none is built or being built. Callers hold ix.mu
// or own the index alone.
func (ix *Index) startTypoBuild() {
	if ix.snap == nil || int(ix.nterms) <= typoSyncTerms || ix.typoBuild != nil {
		return
	}
	b := &typoBuild{snap: ix.snap}
	ix.typoBuild = b
	ix.typo = nil
	// Room for the terms folded since the snapshot, as they are: a term
	// of n letters adds n keys to dels (typoFilter adds them when the
	// build is done; sized by a guess of 8 keys a term, long ones filled
	// it, and every scan started one more build that ended full).
	var extra filterSize
	for text, id := range ix.vocab {
		if id >= ix.nterms && typoKey(text) {
			extra.count(len(text))
		}
	}
	s := ix.snap
	s.users.Add(1)
	go func() {
		defer s.users.Done()
		b.done.Store(snapshotTermFilter(s, extra))
	}()
}

// typoFilterNow builds the filter in place. Callers hold ix.mu.
func (ix *Index) typoFilterNow() *termFilter {
	var z filterSize
	each := func(add func(b []byte), addText func(string)) {
		if ix.snap != nil {
			for k := range int(ix.nterms) {
				if b := ix.snap.termBytes(k); typoKey(b) {
					add(b)
				}
			}
		}
		for text, id := range ix.vocab {
			if id >= ix.nterms && typoKey(text) {
				addText(text)
			}
		}
	}
	each(func(b []byte) { z.count(len(b)) }, func(t string) { z.count(len(t)) })
	f := z.filter()
	each(func(b []byte) { addTerm(f, b) }, func(t string) { addTerm(f, t) })
	ix.typo = f
	return f
}

// snapshotTermFilter builds the filter of snapshot s's terms, with room
// for the extra keys (the terms folded since) and a quarter more, from
// the term table's bytes as they are: it runs without the index's mutex,
// so it reads only the immutable mapping, not verifying it (a corrupt table is refused by the scans that read it, and
// the index is built again). It stops early, failed, when s is closed
// (snapFile.close) or a term's bounds are out of the table.
func snapshotTermFilter(s *snapFile, extra filterSize) *termFilter {
	failed := &termFilter{failed: true}
	offs, terms := s.secs[secTermOff], s.secs[secTerm]
	if len(offs) < 4*(s.nterms+1) {
		return failed
	}
	each := func(f func([]byte)) bool {
		lo := le.Uint32(offs)
		for k := range s.nterms {
			if k%65536 == 0 && s.stop.Load() {
				return false
			}
			hi := le.Uint32(offs[4*(k+1):])
			if hi < lo || int(hi) > len(terms) {
				return false
			}
			if b := terms[lo:hi]; typoKey(b) {
				f(b)
			}
			lo = hi
		}
		return true
	}
	var z filterSize
	if !each(func(b []byte) { z.count(len(b)) }) {
		return failed
	}
	z.terms += extra.terms
	z.dels += extra.dels
	f := z.filter()
	if !each(func(b []byte) { addTerm(f, b) }) {
		return failed
	}
	return f
}

// typoVariants calls try with each string one edit from w (lower-case
// ASCII letters; deletions, adjacent transpositions, substitutions,
// insertions, in edits1's order) that the filter may hold, until try
// returns false. A string two edits produce is offered twice; w itself
// may be offered (a transposition of two equal letters).
func typoVariants(w string, f *termFilter, try func(string) bool) {
	n := len(w)
	gate := n+1 <= typoDelMaxLen // dels holds the terms of n and n+1 letters (typoTerms sees to it)
	// pre[i]: the hash of w[:i]; del[i]: of w less its letter i.
	var preBuf, delBuf [64]uint64
	pre, del := preBuf[:0], delBuf[:0]
	if n+1 > len(preBuf) {
		pre, del = make([]uint64, 0, n+1), make([]uint64, 0, n)
	}
	h := uint64(fnvOffset)
	pre = append(pre, h)
	for i := range n {
		h = fnvAdd(h, w[i])
		pre = append(pre, h)
	}
	var buf [80]byte
	build := func(parts ...string) string {
		b := buf[:0]
		for _, s := range parts {
			b = append(b, s...)
		}
		return string(b)
	}
	for i := range n {
		d := fnvString(pre[i], w[i+1:])
		del = append(del, d)
		if f.terms.mayHold(d) && !try(build(w[:i], w[i+1:])) {
			return
		}
	}
	for i := 0; i+1 < n; i++ {
		h := fnvString(fnvAdd(fnvAdd(pre[i], w[i+1]), w[i]), w[i+2:])
		if f.terms.mayHold(h) && !try(build(w[:i], w[i+1:i+2], w[i:i+1], w[i+2:])) {
			return
		}
	}
	for i := range n {
		if gate && !f.dels.mayHold(delKey(del[i], i)) {
			continue // no term is w with its letter i changed
		}
		for c := byte('a'); c <= 'z'; c++ {
			if c == w[i] {
				continue
			}
			if f.terms.mayHold(fnvString(fnvAdd(pre[i], c), w[i+1:])) && !try(build(w[:i], string(c), w[i+1:])) {
				return
			}
		}
	}
	for i := 0; i <= n; i++ {
		if gate && !f.dels.mayHold(delKey(pre[n], i)) {
			continue // no term is w with a letter inserted before its letter i
		}
		for c := byte('a'); c <= 'z'; c++ {
			if f.terms.mayHold(fnvString(fnvAdd(pre[i], c), w[i:])) && !try(build(w[:i], string(c), w[i:])) {
				return
			}
		}
	}
}
