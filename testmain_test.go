package contextfold

import (
	"testing"

	"github.com/contextfold/contextfold/internal/cachedir/cachedirtest"
	"github.com/contextfold/contextfold/internal/pgtest"
)

// TestMain keeps the per-user cache of the stores the tests make in a
// temporary directory (cachedirtest.Main), and stops the PostgreSQL test
// cluster if a test started one (pgtest).
func TestMain(m *testing.M) { cachedirtest.Main(pgtest.M(m)) }
