package fsutil

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestDirOps: dirOps renames files within a directory and across
// directories as os.Rename does (the target replaced whole), refuses a
// directory as target with an *os.LinkError naming both paths, and syncs
// the directories it renamed in.
func TestDirOps(t *testing.T) {
	root := t.TempDir()
	sub := filepath.Join(root, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(path, data string) {
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(sub, ".a1"), "a")
	write(filepath.Join(sub, "b"), "old b")
	write(filepath.Join(sub, ".b1"), "new b")
	write(filepath.Join(root, ".c1"), "c")
	if err := os.Mkdir(filepath.Join(sub, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(filepath.Join(sub, "d", "x"), "x")
	write(filepath.Join(sub, ".d1"), "d")
	var o dirOps
	defer o.close()
	for _, r := range [][2]string{{".a1", "a"}, {".b1", "b"}} {
		if err := o.rename(filepath.Join(sub, r[0]), filepath.Join(sub, r[1])); err != nil {
			t.Fatal(err)
		}
	}
	if err := o.rename(filepath.Join(root, ".c1"), filepath.Join(sub, "c")); err != nil {
		t.Fatal(err)
	}
	err := o.rename(filepath.Join(sub, ".d1"), filepath.Join(sub, "d"))
	if le, ok := err.(*os.LinkError); !ok || le.Old != filepath.Join(sub, ".d1") || le.New != filepath.Join(sub, "d") {
		t.Fatalf("a rename over a directory: %v, want an *os.LinkError naming both paths", err)
	}
	for _, d := range []string{sub, root} {
		if err := o.sync(d); err != nil {
			t.Fatal(err)
		}
	}
	for name, want := range map[string]string{"a": "a", "b": "new b", "c": "c", ".d1": "d"} {
		if got, err := os.ReadFile(filepath.Join(sub, name)); err != nil || string(got) != want {
			t.Errorf("%s: %q, %v; want %q", name, got, err, want)
		}
	}
	if err := o.sync(filepath.Join(root, "missing")); err == nil {
		t.Error("syncing a missing directory succeeded")
	}
}

// BenchmarkRename50 renames 50 new files into place in a directory as deep
// as a proxy session's cold_nodes/, with os.Rename (full paths walked, and
// a stat of each target first) and with dirOps (renameat relative to one
// descriptor of the directory): the part of a fold event's commit between
// the nodes' fsync wave and the directory's sync. Files are created
// untimed.
//
//	go test ./internal/fsutil -run '^$' -bench Rename50 -benchtime 200x
func BenchmarkRename50(b *testing.B) {
	for _, name := range []string{"os.Rename", "renameat"} {
		b.Run(name, func(b *testing.B) {
			dir := filepath.Join(b.TempDir(), "proxy", "s-0123456789abcdef", "g1", "cold_nodes")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				b.Fatal(err)
			}
			step := 0
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				var tmp, dst []string
				for range 50 {
					f, err := os.CreateTemp(dir, SparePrefix)
					if err != nil {
						b.Fatal(err)
					}
					f.Close()
					tmp, dst = append(tmp, f.Name()), append(dst, filepath.Join(dir, fmt.Sprintf("step_%06d.json", step)))
					step++
				}
				b.StartTimer()
				var o dirOps
				for i := range tmp {
					var err error
					if name == "os.Rename" {
						err = os.Rename(tmp[i], dst[i])
					} else {
						err = o.rename(tmp[i], dst[i])
					}
					if err != nil {
						b.Fatal(err)
					}
				}
				o.close()
			}
		})
	}
}
