package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// built is the contextfold binary the tests run, built once per test binary
// (each build links a 50 MB executable: seconds of CPU, ~30 times over)
// into a directory of its own that holds nothing else and that
// removeBuiltBinary deletes after the tests. Tests only run it; none may
// write into its directory.
var built struct {
	once sync.Once
	dir  string
	bin  string
	out  []byte
	err  error
}

// buildBinary returns the path of the contextfold binary (built without the
// race detector, as "go build" makes it), building it on the first call;
// safe for concurrent use. A failed build fails every test that asks.
func buildBinary(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		built.dir, built.err = os.MkdirTemp("", "contextfold-test-bin-*")
		if built.err != nil {
			return
		}
		built.bin = filepath.Join(built.dir, "contextfold")
		built.out, built.err = exec.Command("go", "build", "-o", built.bin, ".").CombinedOutput()
	})
	if built.err != nil {
		t.Fatalf("build: %v\n%s", built.err, built.out)
	}
	return built.bin
}

// removeBuiltBinary deletes the directory of the binary buildBinary built,
// if it built one. TestMain calls it after the tests.
func removeBuiltBinary() {
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
}

// binaryRunner runs the tests, then removes the binary they built.
type binaryRunner struct{ m *testing.M }

func (r binaryRunner) Run() int {
	code := r.m.Run()
	removeBuiltBinary()
	return code
}
