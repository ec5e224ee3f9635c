// Package testgen generates deterministic, realistic agent turns and prompts
// for the store's durability tests and scale benchmarks.
//
// Every turn is a pure function of (seed, step): a test can regenerate the
// turn it folded and compare it byte for byte with what the store returns.
// Identifiers come from a Zipf-distributed vocabulary of about 50,000 words,
// so that a few terms occur in most turns and most terms in few, as in real
// sessions; payloads are tool outputs, test runs, logs with file paths,
// shell commands and error names, 0.5–4 KB each.
package testgen

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"

	"github.com/contextfold/contextfold"
)

// VocabularySize is the number of distinct words of the generated vocabulary.
const VocabularySize = 50_000

var (
	vocabOnce sync.Once
	vocab     []string
)

var syllables = []string{
	"ka", "lo", "mi", "ne", "pu", "ra", "si", "to", "va", "ze", "bri", "cor",
	"dan", "fel", "gor", "hal", "jin", "kor", "lum", "mor", "nix", "pol", "qua",
	"rel", "sto", "tri", "ul", "ven", "wex", "yor", "zan", "ax", "ber", "cid",
	"dor", "eth", "fin", "gil", "hex", "ion",
}

// The most frequent words: the vocabulary of a coding session.
var common = []string{
	"server", "config", "handler", "request", "response", "database", "postgres",
	"migration", "billing", "cache", "client", "session", "token", "parser",
	"index", "worker", "queue", "deploy", "build", "module", "package", "service",
	"router", "middleware", "schema", "table", "column", "query", "timeout",
	"retry", "backoff", "logger", "metrics", "tracing", "auth", "user", "account",
	"invoice", "payment", "webhook", "endpoint", "buffer", "stream", "channel",
	"mutex", "context", "deadline", "snapshot", "replica", "shard", "compaction",
	"checksum", "manifest", "artifact", "pipeline", "fixture", "benchmark",
	"allocation", "goroutine", "scheduler", "listener", "socket", "certificate",
}

// Vocabulary returns the generated words, most frequent first. Do not modify.
func Vocabulary() []string {
	vocabOnce.Do(func() {
		seen := make(map[string]bool, VocabularySize)
		vocab = make([]string, 0, VocabularySize)
		add := func(w string) {
			if !seen[w] && len(w) >= 3 {
				seen[w] = true
				vocab = append(vocab, w)
			}
		}
		for _, w := range common {
			add(w)
		}
		r := rand.New(rand.NewPCG(1, 2))
		for len(vocab) < VocabularySize {
			n := 2 + r.IntN(3)
			var b strings.Builder
			for range n {
				b.WriteString(syllables[r.IntN(len(syllables))])
			}
			add(b.String())
		}
	})
	return vocab
}

// Gen generates turns and prompts. A Gen is cheap; its methods are pure
// functions of the seed and their arguments and safe for concurrent use.
type Gen struct{ Seed uint64 }

// New returns a generator with the given seed.
func New(seed uint64) Gen { return Gen{Seed: seed} }

type src struct {
	r *rand.Rand
	z *rand.Zipf
	v []string
}

func (g Gen) src(kind, n uint64) *src {
	r := rand.New(rand.NewPCG(g.Seed^0x9e3779b97f4a7c15*kind, n))
	v := Vocabulary()
	return &src{r: r, z: rand.NewZipf(r, 1.07, 2, uint64(len(v)-1)), v: v}
}

func (s *src) word() string { return s.v[s.z.Uint64()] }

func (s *src) ident() string {
	w := s.word()
	switch s.r.IntN(4) {
	case 0:
		return w
	case 1:
		return w + "_" + s.word()
	case 2:
		return strings.ToUpper(w[:1]) + w[1:] + strings.ToUpper(s.word()[:1]) + "x"
	default:
		return w + fmt.Sprint(s.r.IntN(100))
	}
}

func (s *src) path() string {
	dirs := []string{"internal", "cmd", "pkg", "api", "db", "web", "tests"}
	exts := []string{"go", "py", "ts", "sql", "json", "yaml", "md", "sh", "rs"}
	d := dirs[s.r.IntN(len(dirs))]
	return fmt.Sprintf("%s/%s/%s.%s", d, s.word(), s.word(), exts[s.r.IntN(len(exts))])
}

var errorNames = []string{
	"ConnectionRefusedError", "TimeoutError", "ValueError", "KeyError",
	"IntegrityError", "PermissionError", "NullPointerException",
	"IllegalStateException", "FATAL", "PANIC", "Traceback", "HTTP 503",
	"HTTP 404", "DB_CONN_POOL_ERROR", "AUTH_TOKEN_EXPIRED_ERROR",
}

var commands = []string{
	"go test ./...", "go vet ./...", "go build ./cmd/...", "pytest -x tests/",
	"npm run build", "make lint", "git status", "git diff --stat",
	"docker compose up -d", "psql -c 'select 1'", "cargo test", "ls -la",
}

func (s *src) sentence(n int) string {
	ws := make([]string, n)
	for i := range ws {
		ws[i] = s.word()
	}
	return strings.Join(ws, " ")
}

// Turn returns the turn of a step: a one-line summary and a 0.5–4 KB payload.
func (g Gen) Turn(step int) contextfold.Turn {
	s := g.src(1, uint64(int64(step)))
	target := 512 + s.r.IntN(3584)
	var b strings.Builder
	f := s.path()
	summary := fmt.Sprintf("%s %s in %s: %s", s.word(), s.ident(), f, s.sentence(3))
	for b.Len() < target {
		switch s.r.IntN(6) {
		case 0: // a command and its output
			fmt.Fprintf(&b, "$ %s\n", commands[s.r.IntN(len(commands))])
			for range 1 + s.r.IntN(4) {
				fmt.Fprintf(&b, "ok  \t%s\t%.3fs\n", s.path(), s.r.Float64()*3)
			}
		case 1: // a failing test
			fmt.Fprintf(&b, "--- FAIL: Test%s (%.2fs)\n    %s:%d: %s: %s %s\n",
				strings.ToUpper(s.word()[:1])+s.word(), s.r.Float64(), s.path(), 1+s.r.IntN(900),
				errorNames[s.r.IntN(len(errorNames))], s.ident(), s.sentence(4))
		case 2: // a log line
			fmt.Fprintf(&b, "2025-01-%02dT%02d:%02d:%02dZ level=%s msg=%q file=%s line=%d\n",
				1+s.r.IntN(28), s.r.IntN(24), s.r.IntN(60), s.r.IntN(60),
				[]string{"info", "warn", "error", "debug"}[s.r.IntN(4)], s.sentence(5), s.path(), s.r.IntN(2000))
		case 3: // code
			fmt.Fprintf(&b, "func %s(%s %s) error {\n\treturn %s.%s(%d)\n}\n", s.ident(), s.word(), s.ident(), s.word(), s.ident(), s.r.IntN(10000))
		case 4: // a traceback
			fmt.Fprintf(&b, "Traceback (most recent call last):\n  File \"%s\", line %d, in %s\n%s: %s\n",
				s.path(), s.r.IntN(500), s.word(), errorNames[s.r.IntN(7)], s.sentence(6))
		default: // prose
			fmt.Fprintf(&b, "%s.\n", s.sentence(8+s.r.IntN(10)))
		}
	}
	return contextfold.Turn{StepID: step, Summary: summary, RawContent: b.String()}
}

// Turns returns the turns of steps first, first+1, …, first+n-1.
func (g Gen) Turns(first, n int) []contextfold.Turn {
	ts := make([]contextfold.Turn, n)
	for i := range ts {
		ts[i] = g.Turn(first + i)
	}
	return ts
}

// Prompt returns the i-th user prompt: a question naming a few vocabulary
// words, an identifier, sometimes a file path and an error name.
func (g Gen) Prompt(i int) string {
	s := g.src(2, uint64(int64(i)))
	p := fmt.Sprintf("Why does %s fail with %s after we changed %s? Check %s and %s.",
		s.ident(), errorNames[s.r.IntN(len(errorNames))], s.word(), s.path(), s.sentence(3))
	return p
}

// Query returns the i-th recall query: two or three vocabulary words.
func (g Gen) Query(i int) string {
	s := g.src(3, uint64(int64(i)))
	return s.sentence(2 + s.r.IntN(2))
}

// SmallTurn returns a short turn of a step (a command, its result and an
// error line, 100–400 bytes): for tests that fold thousands of turns and
// must stay fast in CI.
func (g Gen) SmallTurn(step int) contextfold.Turn {
	s := g.src(4, uint64(int64(step)))
	f := s.path()
	raw := fmt.Sprintf("$ %s\n--- FAIL: %s (%s)\n    %s:%d: %s: %s\n",
		commands[s.r.IntN(len(commands))], s.ident(), f, f, 1+s.r.IntN(900),
		errorNames[s.r.IntN(len(errorNames))], s.sentence(2+s.r.IntN(6)))
	return contextfold.Turn{StepID: step, Summary: fmt.Sprintf("step %d: %s %s", step, s.word(), s.ident()), RawContent: raw}
}

// SmallTurns returns the small turns of steps first, …, first+n-1.
func (g Gen) SmallTurns(first, n int) []contextfold.Turn {
	ts := make([]contextfold.Turn, n)
	for i := range ts {
		ts[i] = g.SmallTurn(first + i)
	}
	return ts
}

// BuildStore makes dir a store of the turns of steps 0..n-1, folded with
// FoldBatch in chunks of 10,000. A store that already holds exactly those n
// steps is kept as it is, so benchmarks can reuse a store built earlier.
func (g Gen) BuildStore(dir string, n int, opts contextfold.Options) error {
	s, err := contextfold.Open(dir, opts)
	if err != nil {
		return err
	}
	// Kept when it holds steps 0 and n-1 of this generator (a fold
	// benchmark may have added steps beyond them).
	if st, err := s.Status(); err == nil && st.Total >= n {
		first, err0 := s.Entry(0)
		last, err1 := s.Entry(n - 1)
		if err0 == nil && err1 == nil && first.Summary == g.Turn(0).Summary && last.Summary == g.Turn(n-1).Summary {
			return nil
		}
	}
	const chunk = 10_000
	for first := 0; first < n; first += chunk {
		if _, err := s.FoldBatch(g.Turns(first, min(chunk, n-first))); err != nil {
			return err
		}
	}
	return nil
}
