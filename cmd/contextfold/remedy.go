package main

import (
	"errors"
	"os"
	"strings"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/pgstore"
)

// remedied is an error with what to run next appended to its message; it
// unwraps to the error, so its exit code (spec §6) is the error's.
type remedied struct {
	err    error
	remedy string
}

func (e *remedied) Error() string { return e.err.Error() + "; " + e.remedy }
func (e *remedied) Unwrap() error { return e.err }

// withRemedy appends the next step to the core errors whose message names
// none: a step the index does not hold (exit 2) and a node that fails
// verification (exit 3). The orphan, broken-reference, leftover-file and
// renamed-store errors already say to run repair and are returned as they
// are, and so is every other error.
func withRemedy(err error) error {
	if err == nil || strings.Contains(err.Error(), "contextfold repair") {
		return err
	}
	switch {
	case errors.Is(err, contextfold.ErrNodeNotFound):
		return &remedied{err, "contextfold steps lists the folded steps, contextfold recall <words> finds one by content"}
	case errors.Is(err, contextfold.ErrIntegrityCheck):
		return &remedied{err, "contextfold validate lists every finding; contextfold repair --apply moves the node to quarantine/ (or restore the file from a backup)"}
	}
	return err
}

// storeHint says what chose the store directory, for the messages about a
// directory that is not a store, in the order storeDir resolves it:
// --store, --dir, $CONTEXTFOLD_STORE, $CONTEXTFOLD_DIR, else the default
// ./.contextfold of the working directory.
func (g *globals) storeHint() string {
	switch {
	case g.store != "":
		return "check --store"
	case g.dir != "":
		return "check --dir"
	case os.Getenv(EnvStore) != "" && !pgstore.IsURL(os.Getenv(EnvStore)):
		return "check $" + EnvStore + ", which chose it, or give --dir"
	case os.Getenv(contextfold.EnvStoreDir) != "":
		return "check $" + contextfold.EnvStoreDir + ", which chose it, or give --dir"
	}
	return "no --dir, $" + EnvStore + " or $" + contextfold.EnvStoreDir + " was given, so it is the default ./" + contextfold.DefaultStoreDir + " of the working directory: cd to the project, or give --dir"
}
