package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStoreURLOfAnotherSchemeRefused gives --store (and $CONTEXTFOLD_STORE)
// a URL that is not a PostgreSQL one: a mistyped scheme (postgress://,
// Postgres://), file:// or another database's. Each must be refused with
// exit 1, an error naming the scheme and what --store takes, no password
// shown, and nothing written: before, the value was taken for a relative
// directory path, so `fold` exited 0 having written a store under
// ./file:/… or ./mysql:/… in the working directory.
func TestStoreURLOfAnotherSchemeRefused(t *testing.T) {
	work := t.TempDir()
	t.Chdir(work)
	t.Setenv(EnvStore, "")
	for _, v := range []string{
		"file://" + filepath.Join(work, "s"),
		"mysql://app:hunter2hunter2@db:3306/x",
		"postgress://app:hunter2hunter2@db:5432/x",
		"Postgres://app:hunter2hunter2@db:5432/x",
	} {
		scheme, _, _ := strings.Cut(v, "://")
		for _, how := range []string{"flag", "env"} {
			args := []string{"fold", "1", "a summary"}
			if how == "flag" {
				args = append([]string{"--store", v}, args...)
			} else {
				t.Setenv(EnvStore, v)
			}
			out, errs, code := cli(t, "", args...)
			t.Setenv(EnvStore, "")
			if code != 1 || !strings.Contains(errs, scheme+"://") || !strings.Contains(errs, "postgres://") {
				t.Errorf("%s %s: exit %d, stderr %q, stdout %q; want exit 1 naming the scheme and postgres://", how, v, code, errs, out)
			}
			if strings.Contains(errs, "hunter2") {
				t.Errorf("%s %s: the error shows the password: %q", how, v, errs)
			}
			if ents, _ := os.ReadDir(work); len(ents) != 0 {
				t.Fatalf("%s %s: wrote %v into the working directory", how, v, ents[0].Name())
			}
		}
	}
	// A directory path holding "://" further on is still a directory.
	dir := filepath.Join(work, "a://b")
	if _, errs, code := cli(t, "", "--store", dir, "fold", "1", "a summary"); code != 0 {
		t.Fatalf("--store %s: exit %d %s", dir, code, errs)
	}
}
