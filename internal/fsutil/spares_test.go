//go:build unix

package fsutil

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
)

// spareNames returns the names of dir that SpareNameRE matches.
func spareNames(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	for _, n := range names(t, dir) {
		if SpareNameRE.MatchString(n) {
			out = append(out, n)
		}
	}
	return out
}

func inode(t *testing.T, path string) uint64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

func addN(t *testing.T, b *FileBatch, dir string, from, n int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		path := filepath.Join(dir, fmt.Sprintf("step_%06d.json", i))
		if err := b.Add(path, 0o644, func(w io.Writer) error {
			_, err := io.WriteString(w, strings.Repeat(fmt.Sprint(i%10), 50+i))
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSpareFilesTaken: Fill makes empty spare files; a FileBatch with the
// pool writes its files into them (the committed targets are the spares'
// inodes: no file was created for them), creates temporary files as before
// once the pool is empty, and Commit leaves the targets whole with their
// permissions, no spare and no temporary file.
func TestSpareFilesTaken(t *testing.T) {
	dir := t.TempDir()
	p := NewSpareFiles(dir)
	made, err := p.Fill(5, nil)
	if err != nil || made != 5 || p.Len() != 5 {
		t.Fatalf("Fill(5) = %d, %v; Len %d", made, err, p.Len())
	}
	spares := map[uint64]bool{}
	for _, n := range spareNames(t, dir) {
		fi, err := os.Stat(filepath.Join(dir, n))
		if err != nil || fi.Size() != 0 || !fi.Mode().IsRegular() {
			t.Fatalf("spare %s: %v, %v", n, fi, err)
		}
		spares[inode(t, filepath.Join(dir, n))] = true
	}
	if len(spares) != 5 {
		t.Fatalf("%d spares on disk, want 5: %v", len(spares), names(t, dir))
	}
	b := FileBatch{Spares: p}
	addN(t, &b, dir, 0, 7)
	if p.Len() != 0 {
		t.Fatalf("pool holds %d spares after 7 files, want 0", p.Len())
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	got := names(t, dir)
	if len(got) != 7 {
		t.Fatalf("after Commit: %v, want the 7 targets only", got)
	}
	fromSpare := 0
	for i := range 7 {
		path := filepath.Join(dir, fmt.Sprintf("step_%06d.json", i))
		data, err := os.ReadFile(path)
		if err != nil || string(data) != strings.Repeat(fmt.Sprint(i%10), 50+i) {
			t.Fatalf("%s: %q, %v", path, data, err)
		}
		if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o644 {
			t.Fatalf("%s: mode %v, want 0644", path, fi.Mode())
		}
		if spares[inode(t, path)] {
			fromSpare++
		}
	}
	if fromSpare != 5 {
		t.Fatalf("%d targets are spares' inodes, want 5", fromSpare)
	}
}

// TestSpareFilesBounded: a pool never holds more than MaxSpareFiles
// spares, Fill stops when stop says so, and Fill of a count already held
// creates nothing.
func TestSpareFilesBounded(t *testing.T) {
	dir := t.TempDir()
	p := NewSpareFiles(dir)
	if made, err := p.Fill(MaxSpareFiles+40, nil); err != nil || made != MaxSpareFiles {
		t.Fatalf("Fill(%d) = %d, %v; want %d", MaxSpareFiles+40, made, err, MaxSpareFiles)
	}
	if n := len(spareNames(t, dir)); n != MaxSpareFiles {
		t.Fatalf("%d spares on disk, want %d", n, MaxSpareFiles)
	}
	if made, _ := p.Fill(10, nil); made != 0 {
		t.Fatalf("Fill of a full pool made %d", made)
	}
	q := NewSpareFiles(t.TempDir())
	calls := 0
	made, err := q.Fill(50, func() bool { calls++; return calls > 3 })
	if err != nil || made != 3 || q.Len() != 3 {
		t.Fatalf("Fill stopped after 3: made %d, %v, Len %d", made, err, q.Len())
	}
}

// TestSpareFilesRemove: Remove deletes every spare from disk, a spare
// already gone included, and the pool fills again afterwards.
func TestSpareFilesRemove(t *testing.T) {
	dir := t.TempDir()
	p := NewSpareFiles(dir)
	if _, err := p.Fill(4, nil); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, spareNames(t, dir)[0]))
	if err := p.Remove(); err != nil {
		t.Fatal(err)
	}
	if got := names(t, dir); len(got) != 0 || p.Len() != 0 {
		t.Fatalf("after Remove: %v, Len %d", got, p.Len())
	}
	if made, err := p.Fill(2, nil); err != nil || made != 2 || len(spareNames(t, dir)) != 2 {
		t.Fatalf("Fill after Remove: %d, %v", made, err)
	}
}

// TestSpareFilesGoneOrReplaced: a spare removed by another process, or
// replaced by a symlink or a FIFO, is skipped (the symlink's target and the
// FIFO untouched, no wait on the FIFO): Add uses the next spare or creates
// its temporary file, and the batch commits.
func TestSpareFilesGoneOrReplaced(t *testing.T) {
	dir := t.TempDir()
	p := NewSpareFiles(dir)
	if _, err := p.Fill(3, nil); err != nil {
		t.Fatal(err)
	}
	sp := spareNames(t, dir)
	outside := filepath.Join(t.TempDir(), "outside")
	if err := os.WriteFile(outside, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, sp[0]))
	os.Remove(filepath.Join(dir, sp[1]))
	if err := os.Symlink(outside, filepath.Join(dir, sp[1])); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, sp[2]))
	if err := syscall.Mkfifo(filepath.Join(dir, sp[2]), 0o644); err != nil {
		t.Fatal(err)
	}
	b := FileBatch{Spares: p}
	addN(t, &b, dir, 0, 2)
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(outside); string(data) != "keep" {
		t.Fatalf("the symlink's target was written: %q", data)
	}
	if fi, err := os.Lstat(filepath.Join(dir, sp[2])); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Fatalf("the FIFO was touched: %v, %v", fi, err)
	}
	for i := range 2 {
		if _, err := os.Stat(filepath.Join(dir, fmt.Sprintf("step_%06d.json", i))); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSpareFilesAbort: spares written by a batch that aborts are removed
// like its other temporary files; the untaken spares stay in the pool.
func TestSpareFilesAbort(t *testing.T) {
	dir := t.TempDir()
	p := NewSpareFiles(dir)
	if _, err := p.Fill(5, nil); err != nil {
		t.Fatal(err)
	}
	b := FileBatch{Spares: p}
	addN(t, &b, dir, 0, 3)
	b.Abort()
	if got := names(t, dir); len(got) != 2 || p.Len() != 2 {
		t.Fatalf("after Abort: %v, Len %d; want the 2 untaken spares", got, p.Len())
	}
	for _, n := range spareNames(t, dir) {
		if !p.Has(n) {
			t.Fatalf("%s on disk is not the pool's", n)
		}
	}
}

// BenchmarkFileBatch50 commits batches of 50 new files of 3 KiB (a fold
// event's cold nodes) in one directory, creating each file's temporary file
// (create) or writing into spares made between batches, outside the timer
// (spares). Each batch's files are removed after it (outside the timer),
// so the directory's block group sees the churn of a test machine.
//
//	go test ./internal/fsutil -run '^$' -bench 'BenchmarkFileBatch50' -benchtime 50x
func BenchmarkFileBatch50(b *testing.B) {
	data := []byte(strings.Repeat("x", 3<<10))
	for _, spares := range []bool{false, true} {
		name := "create"
		if spares {
			name = "spares"
		}
		b.Run(name, func(b *testing.B) {
			dir := b.TempDir()
			p := NewSpareFiles(dir)
			for i := range b.N {
				b.StopTimer()
				var fb FileBatch
				if spares {
					fb.Spares = p
					if _, err := p.Fill(50, nil); err != nil {
						b.Fatal(err)
					}
				}
				b.StartTimer()
				for k := range 50 {
					path := filepath.Join(dir, fmt.Sprintf("step_%06d.json", i*50+k))
					if err := fb.Add(path, 0o644, func(w io.Writer) error { _, err := w.Write(data); return err }); err != nil {
						b.Fatal(err)
					}
				}
				if err := fb.Commit(); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				for k := range 50 {
					os.Remove(filepath.Join(dir, fmt.Sprintf("step_%06d.json", i*50+k)))
				}
				b.StartTimer()
			}
		})
	}
}

// TestFileBatchLast: a group's last file (AddLast, the index of a fold
// event) is written into a spare of LastSpares, its bytes are whole on disk
// before the group's sync (one wave with the other files'), and it replaces
// its target only after every other file is named and their directory
// synced: at every crash point before BatchLastRenamed the target holds its
// old bytes, from BatchDirSynced on every other file is named, and after
// Commit the target holds the new bytes in the spare's inode, with no spare
// or temporary file left. A second AddLast is refused.
func TestFileBatchLast(t *testing.T) {
	root := t.TempDir()
	sub := filepath.Join(root, "cold_nodes")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	index := filepath.Join(root, "recall_index.json")
	if err := os.WriteFile(index, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	rootPool := NewSpareFiles(root)
	if _, err := rootPool.Fill(1, nil); err != nil {
		t.Fatal(err)
	}
	spare := inode(t, filepath.Join(root, spareNames(t, root)[0]))
	read := func(path string) string {
		data, _ := os.ReadFile(path)
		return string(data)
	}
	var points []string
	CrashPoint = func(p string) {
		points = append(points, p)
		named := len(names(t, sub))
		switch p {
		case BatchSynced:
			// The last file's temporary file holds its bytes (the spare).
			if got := read(filepath.Join(root, spareNames(t, root)[0])); got != "new index" {
				t.Errorf("at %s the last file's temporary file holds %q", p, got)
			}
		case BatchDirSynced:
			for i := range 3 {
				if _, err := os.Stat(filepath.Join(sub, fmt.Sprintf("step_%06d.json", i))); err != nil {
					t.Errorf("at %s: %v", p, err)
				}
			}
		case BatchLastRenamed:
			if got := read(index); got != "new index" {
				t.Errorf("at %s the target holds %q", p, got)
			}
			return
		}
		if got := read(index); got != "old" {
			t.Errorf("at %s (%d files in cold_nodes/) the last file's target holds %q, want the old bytes", p, named, got)
		}
	}
	defer func() { CrashPoint = nil }()
	b := FileBatch{LastSpares: rootPool}
	addN(t, &b, sub, 0, 2)
	if err := b.AddLast(index, 0o644, func(w io.Writer) error {
		_, err := io.WriteString(w, "new index")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if err := b.AddLast(index, 0o644, func(w io.Writer) error { return nil }); err == nil {
		t.Error("a second AddLast was accepted")
	}
	addN(t, &b, sub, 2, 1) // after the last file: named before it too
	if b.Len() != 4 {
		t.Fatalf("Len %d, want 4", b.Len())
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	want := []string{BatchFirstWritten, BatchWritten, BatchSynced, BatchRenamedFirst, BatchRenamed, BatchDirSynced, BatchLastRenamed}
	if fmt.Sprint(points) != fmt.Sprint(want) {
		t.Errorf("crash points %v, want %v", points, want)
	}
	if got := read(index); got != "new index" || inode(t, index) != spare {
		t.Errorf("after Commit the target holds %q (inode %d, the spare's %d)", got, inode(t, index), spare)
	}
	if got := names(t, root); fmt.Sprint(got) != "[cold_nodes recall_index.json]" {
		t.Errorf("the root holds %v after Commit", got)
	}
	if fi, err := os.Stat(index); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("%s: %v, %v", index, fi, err)
	}
}

// TestFileBatchLastFails: when the last file cannot replace its target,
// Commit returns a *LastFileError naming it, the other files are named and
// the target is untouched, and no temporary file is left; Abort before
// Commit removes the last file's temporary file too.
func TestFileBatchLastFails(t *testing.T) {
	root := t.TempDir()
	target := filepath.Join(root, "recall_index.json")
	if err := os.MkdirAll(filepath.Join(target, "x"), 0o755); err != nil { // a rename over it fails
		t.Fatal(err)
	}
	var b FileBatch
	addN(t, &b, root, 0, 2)
	last := func() error {
		return b.AddLast(target, 0o644, func(w io.Writer) error {
			_, err := io.WriteString(w, "new")
			return err
		})
	}
	if err := last(); err != nil {
		t.Fatal(err)
	}
	err := b.Commit()
	var le *LastFileError
	if !errors.As(err, &le) || le.Path != target {
		t.Fatalf("Commit = %v, want a *LastFileError for %s", err, target)
	}
	if got := names(t, root); fmt.Sprint(got) != "[recall_index.json step_000000.json step_000001.json]" {
		t.Errorf("after the failed Commit: %v", got)
	}
	addN(t, &b, root, 2, 1)
	if err := last(); err != nil {
		t.Fatal(err)
	}
	b.Abort()
	if got := names(t, root); len(got) != 3 || b.Len() != 0 {
		t.Errorf("after Abort: %v, Len %d", got, b.Len())
	}
}

// TestFileBatchHoldAll: with HoldAll a batch writes nothing on the path of
// Add and AddLast, spares or not (the spares stay empty and in the pool,
// Buffered holds every file's bytes); Commit writes the files into the
// spares (their inodes become the targets') and creates temporary files
// for the rest, in waves of at most MaxUnsynced
// open files, and names every target with its exact bytes and permissions,
// the last file after the others, passing the crash points in order. Past
// DeferCreates bytes the files are written at once, into spares first.
func TestFileBatchHoldAll(t *testing.T) {
	defer func(n int) { MaxUnsynced = n }(MaxUnsynced)
	MaxUnsynced = 4 // 9 files and the last: three waves
	var points []string
	CrashPoint = func(p string) { points = append(points, p) }
	defer func() { CrashPoint = nil }()

	dir, root := t.TempDir(), t.TempDir()
	p, rp := NewSpareFiles(dir), NewSpareFiles(root)
	if _, err := p.Fill(6, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := rp.Fill(1, nil); err != nil {
		t.Fatal(err)
	}
	spares := map[uint64]bool{}
	for _, d := range []string{dir, root} {
		for _, n := range spareNames(t, d) {
			spares[inode(t, filepath.Join(d, n))] = true
		}
	}
	b := FileBatch{Spares: p, LastSpares: rp, DeferCreates: 1 << 20, HoldAll: true}
	addN(t, &b, dir, 0, 9)
	last := filepath.Join(root, "index.json")
	if err := b.AddLast(last, 0o640, func(w io.Writer) error { _, err := io.WriteString(w, "the index"); return err }); err != nil {
		t.Fatal(err)
	}
	if got := names(t, dir); len(got) != 6 || p.Len() != 6 || rp.Len() != 1 || len(spareNames(t, root)) != 1 {
		t.Fatalf("before Commit: %v in the directory, %d and %d spares in the pools: want the 6 and 1 spares untouched", got, p.Len(), rp.Len())
	}
	for _, n := range spareNames(t, dir) {
		if fi, err := os.Stat(filepath.Join(dir, n)); err != nil || fi.Size() != 0 {
			t.Fatalf("spare %s written before Commit: %v, %v", n, fi, err)
		}
	}
	if held := b.Buffered(); len(held) != 9 || len(b.Temporaries()) != 0 || b.Len() != 10 || len(points) != 0 {
		t.Fatalf("Buffered %d files, Temporaries %v, Len %d, crash points %v: want 9, none, 10, none", len(held), b.Temporaries(), b.Len(), points)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := names(t, dir); len(got) != 9 || p.Len() != 0 || rp.Len() != 0 {
		t.Fatalf("after Commit: %v, pools %d and %d: want the 9 targets, both pools empty", got, p.Len(), rp.Len())
	}
	fromSpare := 0
	for i := range 9 {
		path := filepath.Join(dir, fmt.Sprintf("step_%06d.json", i))
		data, err := os.ReadFile(path)
		if err != nil || string(data) != strings.Repeat(fmt.Sprint(i%10), 50+i) {
			t.Fatalf("%s: %q, %v", path, data, err)
		}
		if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o644 {
			t.Fatalf("%s: mode %v, want 0644", path, fi.Mode())
		}
		if spares[inode(t, path)] {
			fromSpare++
		}
	}
	if fromSpare != 6 {
		t.Fatalf("%d targets are spares' inodes, want 6", fromSpare)
	}
	if data, err := os.ReadFile(last); err != nil || string(data) != "the index" || !spares[inode(t, last)] {
		t.Fatalf("last file: %q, %v (from its spare: %v)", data, err, spares[inode(t, last)])
	}
	if got := names(t, root); len(got) != 1 {
		t.Fatalf("store root after Commit: %v", got)
	}
	want := []string{BatchFirstWritten, BatchWritten, BatchSynced, BatchRenamedFirst, BatchRenamed, BatchDirSynced, BatchLastRenamed}
	if fmt.Sprint(points) != fmt.Sprint(want) {
		t.Errorf("crash points %v, want %v", points, want)
	}

	// Past DeferCreates bytes: written at once, into the spares first.
	dir = t.TempDir()
	p = NewSpareFiles(dir)
	if _, err := p.Fill(1, nil); err != nil {
		t.Fatal(err)
	}
	b = FileBatch{Spares: p, DeferCreates: 60, HoldAll: true} // the first file (50 bytes) held
	addN(t, &b, dir, 0, 3)
	if got := names(t, dir); len(got) != 2 || p.Len() != 0 || len(b.Buffered()) != 1 || len(b.Temporaries()) != 2 {
		t.Fatalf("past the bytes held: %v, pool %d, Buffered %d, Temporaries %v", got, p.Len(), len(b.Buffered()), b.Temporaries())
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := names(t, dir); len(got) != 3 {
		t.Fatalf("after Commit: %v", got)
	}

	// A failing write at Commit: its error, every file it wrote removed.
	dir = t.TempDir()
	p = NewSpareFiles(dir)
	if _, err := p.Fill(2, nil); err != nil {
		t.Fatal(err)
	}
	b = FileBatch{Spares: p, DeferCreates: 1 << 20, HoldAll: true}
	addN(t, &b, dir, 0, 6)
	old := WrapWriter
	var calls atomic.Int64
	WrapWriter = func(w io.Writer) io.Writer {
		if calls.Add(1) == 5 {
			return failWriter{}
		}
		return w
	}
	err := b.Commit()
	WrapWriter = old
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Commit with a failing write returned %v, want ENOSPC", err)
	}
	if got := names(t, dir); len(got) != 0 || b.Len() != 0 {
		t.Fatalf("after a failed Commit: %v, Len %d", got, b.Len())
	}
}

// TestFileBatchAddBytes: a file added as its bytes (AddBytes) is held as
// those very bytes while the batch may hold it (no copy: Buffered returns
// the caller's slice), and written at once past DeferCreates, into a
// spare; either way Commit names it with exactly those bytes, as Add does.
func TestFileBatchAddBytes(t *testing.T) {
	dir := t.TempDir()
	p := NewSpareFiles(dir)
	if _, err := p.Fill(1, nil); err != nil {
		t.Fatal(err)
	}
	b := FileBatch{Spares: p, DeferCreates: 60, HoldAll: true}
	held, past := []byte(strings.Repeat("a", 50)), []byte(strings.Repeat("b", 50))
	heldPath, pastPath := filepath.Join(dir, "step_000000.json"), filepath.Join(dir, "step_000001.json")
	if err := b.AddBytes(heldPath, 0o644, held); err != nil {
		t.Fatal(err)
	}
	if err := b.AddBytes(pastPath, 0o644, past); err != nil { // past the 60 bytes held: into the spare now
		t.Fatal(err)
	}
	buf := b.Buffered()
	if got := buf[heldPath]; len(buf) != 1 || len(got) != len(held) || &got[0] != &held[0] {
		t.Fatalf("Buffered %d files, %s held as a copy or not at all", len(buf), heldPath)
	}
	if p.Len() != 0 || len(b.Temporaries()) != 1 {
		t.Fatalf("past the bytes held: pool %d, Temporaries %v: want the spare taken", p.Len(), b.Temporaries())
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string][]byte{heldPath: held, pastPath: past} {
		if data, err := os.ReadFile(path); err != nil || !bytes.Equal(data, want) {
			t.Fatalf("%s: %q, %v", path, data, err)
		}
	}
}
