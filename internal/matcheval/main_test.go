package matcheval

import (
	"os"
	"testing"
)

// TestMain keeps derived data (the ranked index cache) in a temporary
// directory instead of the user's cache.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "contextfold-cache-test")
	if err != nil {
		panic(err)
	}
	os.Setenv("CONTEXTFOLD_CACHE_DIR", dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
