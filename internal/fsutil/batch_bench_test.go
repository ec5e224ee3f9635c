package fsutil

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/contextfold/contextfold/internal/benchlat"
)

// BenchmarkFileBatchFoldEvent measures the durable write of a fold event
// as a directory store makes it: 50 new node files of 2 KB in cold_nodes/
// (written into spares), then an index of 512 KB that replaces the old one
// in the store root. "index-after" commits the nodes, then writes the index
// atomically (two waits for the device: the nodes' fsyncs, then the
// index's); "index-last" writes the index as the group's last file
// (AddLast, into a root spare), so its fsync joins the nodes' wave and only
// its rename waits for them. Spares are refilled untimed. It reports the
// p50 and p99 of one commit in milliseconds; run it with TMPDIR on the disk
// that matters.
//
//	go test ./internal/fsutil -run '^$' -bench FileBatchFoldEvent -benchtime 200x
func BenchmarkFileBatchFoldEvent(b *testing.B) {
	node := bytes.Repeat([]byte("n"), 2<<10)
	index := bytes.Repeat([]byte("i"), 512<<10)
	write := func(data []byte) func(w io.Writer) error {
		return func(w io.Writer) error { _, err := w.Write(data); return err }
	}
	for _, last := range []bool{false, true} {
		name := "index-after"
		if last {
			name = "index-last"
		}
		b.Run(name, func(b *testing.B) {
			root := b.TempDir()
			cold := filepath.Join(root, "cold_nodes")
			if err := os.Mkdir(cold, 0o755); err != nil {
				b.Fatal(err)
			}
			spares, rootSpares := NewSpareFiles(cold), NewSpareFiles(root)
			ixPath := filepath.Join(root, "recall_index.json")
			var lat benchlat.Latencies
			step := 0
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				if _, err := spares.Fill(50, nil); err != nil {
					b.Fatal(err)
				}
				if _, err := rootSpares.Fill(1, nil); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				start := time.Now()
				batch := FileBatch{Spares: spares, LastSpares: rootSpares}
				for range 50 {
					if err := batch.Add(filepath.Join(cold, fmt.Sprintf("step_%06d.json", step)), 0o644, write(node)); err != nil {
						b.Fatal(err)
					}
					step++
				}
				if last {
					if err := batch.AddLast(ixPath, 0o644, write(index)); err != nil {
						b.Fatal(err)
					}
					if err := batch.Commit(); err != nil {
						b.Fatal(err)
					}
				} else {
					if err := batch.Commit(); err != nil {
						b.Fatal(err)
					}
					if err := WriteFileAtomic(ixPath, index, 0o644); err != nil {
						b.Fatal(err)
					}
				}
				lat = append(lat, time.Since(start))
			}
			b.StopTimer()
			lat.Report(b, "")
		})
	}
}
