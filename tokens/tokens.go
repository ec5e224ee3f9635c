// Package tokens counts and truncates text in model tokens.
//
// Three counters exist: "heuristic", the IPCF-1.1 reference estimate
// max(1, ⌊code points / 4⌋), and the exact byte-pair encodings "o200k_base"
// and "cl100k_base" (github.com/tiktoken-go/tokenizer; the vocabularies are
// compiled into the binary, so nothing is fetched at run time).
package tokens

import (
	"errors"
	"fmt"
	"sync"
	"unicode/utf8"

	"github.com/tiktoken-go/tokenizer"
)

// Counter counts and truncates text in tokens. All implementations are safe
// for concurrent use by multiple goroutines.
type Counter interface {
	// Name returns the counter's name: "heuristic", "o200k_base" or
	// "cl100k_base".
	Name() string
	// Count returns the number of tokens in text.
	Count(text string) int
	// Truncate returns the longest prefix of text that counts at most
	// maxTokens tokens, cut on a token boundary and never inside a UTF-8
	// sequence, and whether anything was cut off. See each counter for the
	// exact rule.
	Truncate(text string, maxTokens int) (string, bool)
}

// Names of the counters accepted by ByName.
const (
	HeuristicName  = "heuristic"
	O200kBaseName  = "o200k_base"
	Cl100kBaseName = "cl100k_base"
)

// ErrUnknownCounter is wrapped by the error ByName returns for a name it
// does not know.
var ErrUnknownCounter = errors.New("unknown token counter")

// ByName returns the counter called name: "" or "heuristic" gives Heuristic,
// "o200k_base" and "cl100k_base" give exact counters. Exact counters are
// built once per process (loading a vocabulary takes some tens of
// milliseconds) and shared. Any other name gives an error wrapping
// ErrUnknownCounter that lists the accepted names.
func ByName(name string) (Counter, error) {
	switch name {
	case "", HeuristicName:
		return Heuristic(), nil
	case O200kBaseName:
		return o200k.get()
	case Cl100kBaseName:
		return cl100k.get()
	}
	return nil, fmt.Errorf("tokens: %w %q (accepted: %q, %q, %q)",
		ErrUnknownCounter, name, HeuristicName, O200kBaseName, Cl100kBaseName)
}

// Heuristic returns the IPCF-1.1 reference estimate: Count is
// max(1, ⌊code points / 4⌋), so even the empty text counts 1 token. Invalid
// UTF-8 bytes count one code point each.
//
// Its Truncate follows the reference hydration rule: text whose Count is at
// most maxTokens is returned whole; otherwise the result is the first
// 4×maxTokens code points, with Python slice semantics, so a negative
// maxTokens drops 4×|maxTokens| code points from the end (and everything if
// that is more than the text holds). The cut is always on a code point
// boundary. Note that the empty result still counts 1.
func Heuristic() Counter { return heuristic{} }

type heuristic struct{}

func (heuristic) Name() string { return HeuristicName }

func (heuristic) Count(text string) int {
	return max(1, utf8.RuneCountInString(text)/4)
}

func (h heuristic) Truncate(text string, maxTokens int) (string, bool) {
	if h.Count(text) <= maxTokens {
		return text, false
	}
	// Here Count(text) > maxTokens, so for maxTokens >= 0 the slice end
	// 4*maxTokens lies inside the text (and cannot overflow).
	n := utf8.RuneCountInString(text)
	var end int
	switch {
	case maxTokens >= 0:
		end = 4 * maxTokens
	case maxTokens < -n: // drops everything; also avoids overflow
		end = 0
	default:
		end = max(0, n+4*maxTokens)
	}
	return prefixRunes(text, end), true
}

// prefixRunes returns the first n code points of s.
func prefixRunes(s string, n int) string {
	i := 0
	for k := 0; k < n && i < len(s); k++ {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return s[:i]
}

// lazyCodec builds an exact counter once.
type lazyCodec struct {
	enc  tokenizer.Encoding
	name string
	once sync.Once
	c    *exact
	err  error
}

var (
	o200k  = &lazyCodec{enc: tokenizer.O200kBase, name: O200kBaseName}
	cl100k = &lazyCodec{enc: tokenizer.Cl100kBase, name: Cl100kBaseName}
)

func (l *lazyCodec) get() (Counter, error) {
	l.once.Do(func() {
		codec, err := tokenizer.Get(l.enc)
		if err != nil {
			l.err = fmt.Errorf("tokens: load %s: %w", l.name, err)
			return
		}
		l.c = &exact{name: l.name, codec: codec}
	})
	if l.err != nil {
		return nil, l.err
	}
	return l.c, nil
}

// exact counts with a byte-pair encoding. Text that looks like a special
// token ("<|endoftext|>") is counted as ordinary text. The codec is never
// mutated after construction, so sharing it is safe.
type exact struct {
	name  string
	codec tokenizer.Codec
}

func (e *exact) Name() string { return e.name }

// Count returns the exact number of tokens (0 for the empty text). Should the
// tokenizer fail (it has no failure mode for any input in its default error
// mode), the heuristic estimate is returned instead.
func (e *exact) Count(text string) int {
	n, err := e.codec.Count(text)
	if err != nil {
		return heuristic{}.Count(text)
	}
	return n
}

// Truncate cuts text at the end of a token. It starts from the end of token
// number maxTokens of the whole text, steps back to the previous token end
// that is a UTF-8 boundary and whose prefix really counts at most maxTokens
// (a prefix can tokenize differently from the same bytes inside the whole
// text), then steps forward while the next such token end still fits, so
// the result is maximal among token-end prefixes. For maxTokens <= 0 the
// result is "". The bool reports whether anything was cut off. For invalid
// UTF-8 input the result is a prefix of the input cut at a code point start.
func (e *exact) Truncate(text string, maxTokens int) (string, bool) {
	if text == "" {
		return "", false
	}
	if maxTokens <= 0 {
		return "", true
	}
	_, toks, err := e.codec.Encode(text)
	if err != nil {
		r, cut := heuristic{}.Truncate(text, maxTokens)
		return r, cut
	}
	if len(toks) <= maxTokens {
		return text, false
	}
	ends := make([]int, len(toks)+1) // ends[k] = byte length of the first k tokens
	for i, t := range toks {
		ends[i+1] = ends[i] + len(t)
	}
	if ends[len(toks)] != len(text) {
		// The tokens do not spell the text (a tokenizer defect): fall back
		// to the longest code-point prefix that fits.
		return e.truncateByRunes(text, maxTokens), true
	}
	boundary := func(k int) bool {
		c := ends[k]
		return c == 0 || c >= len(text) || utf8.RuneStart(text[c])
	}
	fits := func(k int) bool { return e.Count(text[:ends[k]]) <= maxTokens }
	k := maxTokens
	for k > 0 && !(boundary(k) && fits(k)) {
		k--
	}
	for {
		next := k + 1
		for next < len(toks) && !boundary(next) {
			next++
		}
		if next >= len(toks) || !fits(next) {
			break
		}
		k = next
	}
	return text[:ends[k]], true
}

// truncateByRunes returns the longest prefix of text ending on a code point
// boundary whose Count is at most maxTokens (binary search; assumes counts
// grow with the prefix).
func (e *exact) truncateByRunes(text string, maxTokens int) string {
	var bounds []int
	for i := range text {
		bounds = append(bounds, i)
	}
	bounds = append(bounds, len(text))
	lo, hi := 0, len(bounds)-1 // bounds[lo] fits (the empty prefix counts 0)
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if e.Count(text[:bounds[mid]]) <= maxTokens {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return text[:bounds[lo]]
}
