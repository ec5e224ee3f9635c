package contextfold

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A store directory copied under another name keeps file_paths that name
// the old directory (spec §5): hydrate refuses (CONF-12) and says the store
// was renamed or copied from that name, and repair --apply makes the copy
// whole again under its new name.
func TestCopiedStoreNamesItsOldDirectory(t *testing.T) {
	if _, err := exec.LookPath("cp"); err != nil {
		t.Skip("no cp")
	}
	s := demoStore(t)
	if s.be != nil {
		t.Skip("directory stores only")
	}
	copied := filepath.Join(t.TempDir(), "renamed-store")
	if out, err := exec.Command("cp", "-a", s.Dir(), copied).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	c, err := Open(copied, Options{Clock: fixedClock})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Hydrate(137)
	var pe *PathContainmentError
	if !errors.As(err, &pe) {
		t.Fatalf("hydrate in the copy: %v; want a PathContainmentError", err)
	}
	old := filepath.Base(s.Dir())
	if !strings.Contains(err.Error(), `store directory "`+old+`"`) || !strings.Contains(err.Error(), "renamed or copied") {
		t.Errorf("the error does not name the old directory %q: %v", old, err)
	}
	// A file_path that names no cold node of this step gets no such hint.
	forged := &PathContainmentError{StepID: 137, FilePath: "x/elsewhere/step_000137.json", Resolved: "/x", Want: pe.Want}
	if strings.Contains(forged.Error(), "renamed or copied") {
		t.Errorf("a foreign file_path is explained as a rename: %v", forged)
	}
	if _, err := c.Repair(true); err != nil {
		t.Fatal(err)
	}
	if rep, err := c.Validate(); err != nil || !rep.OK() {
		t.Fatalf("validate after repair: %+v, %v", rep, err)
	}
	if _, err := c.Hydrate(137); err != nil {
		t.Fatalf("hydrate after repair: %v", err)
	}
	if _, err := os.Stat(filepath.Join(s.Dir(), IndexFile)); err != nil {
		t.Fatal("the original store was touched")
	}
}
