package contextfold

import (
	"os"
	"testing"

	"github.com/contextfold/contextfold/internal/cachedir"
)

// TestMain keeps the per-user cache of the stores the tests make in a
// temporary directory of its own, not in the user's cache directory.
func TestMain(m *testing.M) {
	if os.Getenv(cachedir.Env) == "" {
		dir, err := os.MkdirTemp("", "contextfold-test-cache-*")
		if err != nil {
			panic(err)
		}
		os.Setenv(cachedir.Env, dir)
		code := m.Run()
		os.RemoveAll(dir)
		os.Exit(code)
	}
	os.Exit(m.Run())
}
