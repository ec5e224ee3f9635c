package proxy

import (
	"testing"

	"github.com/contextfold/contextfold/harness"
)

// BenchmarkSaveState measures what the proxy does after each response of a
// 4,000-message session to keep its state across a crash (Server.saveState,
// off the request's path): the export, and the write (a temporary file
// renamed, no fsync) when the state changed. "unchanged" is a request that
// changed nothing (the export and a comparison); "changed" writes.
func BenchmarkSaveState(b *testing.B) {
	srv, err := New(Options{Dir: b.TempDir(), Upstream: "http://127.0.0.1:1", Clock: fixedClock, Logger: newDiscardLogger(), Harness: harness.Config{ContextBudget: 8000}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { srv.Close() })
	sess, err := srv.session(nil, "bench", 1)
	if err != nil {
		b.Fatal(err)
	}
	req, err := parseRequest(APIOpenAI, conversationN(4000))
	if err != nil {
		b.Fatal(err)
	}
	if _, err := sess.h.DispatchRequest(req.msgs, 0); err != nil {
		b.Fatal(err)
	}
	srv.saveState(sess, true)
	if len(sess.saved) == 0 {
		b.Fatal("no state saved")
	}
	b.Run("unchanged", func(b *testing.B) {
		for range b.N {
			srv.saveState(sess, true)
		}
	})
	b.Run("changed", func(b *testing.B) {
		for range b.N {
			sess.saved = nil
			srv.saveState(sess, true)
		}
		b.ReportMetric(float64(len(sess.saved)), "state-bytes")
	})
}
