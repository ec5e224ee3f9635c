package main

import (
	"testing"

	"github.com/contextfold/contextfold/internal/cachedir/cachedirtest"
	"github.com/contextfold/contextfold/internal/pgtest"
)

// TestMain keeps the per-user cache of the stores the tests make in a
// temporary directory (cachedirtest.Main), and removes the contextfold
// binary the tests built once (buildBinary) after them.
func TestMain(m *testing.M) { cachedirtest.Main(pgtest.M(binaryRunner{m})) }
