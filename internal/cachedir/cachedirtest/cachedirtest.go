// Package cachedirtest keeps the per-user cache (package cachedir) of the
// stores a package's tests make in a temporary directory of its own, never in
// the user's cache directory.
package cachedirtest

import (
	"os"

	"github.com/contextfold/contextfold/internal/cachedir"
)

// Main runs the tests with CONTEXTFOLD_CACHE_DIR set to a new temporary
// directory, removed afterwards, unless the environment already sets it (a
// benchmark that reuses a built cache). Call it from TestMain; it exits. m is
// the *testing.M, or a wrapper of it with the same Run (e.g. pgtest.M(m), to
// also get a PostgreSQL test cluster).
func Main(m interface{ Run() int }) {
	if os.Getenv(cachedir.Env) != "" {
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "contextfold-test-cache-*")
	if err != nil {
		panic(err)
	}
	os.Setenv(cachedir.Env, dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
