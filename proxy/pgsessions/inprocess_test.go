package pgsessions

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/harness"
	"github.com/contextfold/contextfold/internal/pgtest"
	"github.com/contextfold/contextfold/internal/scripted"
	"github.com/contextfold/contextfold/internal/testgen"
	"github.com/contextfold/contextfold/pgstore"
	"github.com/contextfold/contextfold/proxy"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

var fixedClock = func() time.Time { return time.Unix(1772445600, 0) }

// replica is one proxy over the shared sessions of a database.
func replica(t *testing.T, dbURL, upstream string) *httptest.Server {
	t.Helper()
	db, err := pgstore.Connect(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	sh, err := Connect(context.Background(), dbURL, func(name, id string) (*contextfold.Store, error) {
		return db.Session(name, contextfold.Options{Clock: fixedClock, SessionID: id})
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sh.Close)
	srv, err := proxy.New(proxy.Options{Shared: sh, Upstream: upstream, Clock: fixedClock,
		Harness: harness.Config{ContextBudget: 10000}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	return hs
}

// Three in-process replicas, each with its own pools and Stores on one
// database, forward, request by request round-robin, exactly what one proxy
// forwards (the race detector sees the shared path here; internal/fleet runs
// the same with three processes and a SIGKILL).
func TestInProcessReplicasForwardWhatOneProxyDoes(t *testing.T) {
	conv := testgen.NewConversation(11, 48)
	run := func(replicas []*httptest.Server) []scripted.Request {
		up := scripted.New(func(*scripted.Turn) scripted.Reply { return scripted.Reply{Text: "ok"} })
		defer up.Close()
		dbURL := pgtest.URL(t)
		var rs []*httptest.Server
		for range replicas {
			rs = append(rs, replica(t, dbURL, up.URL))
		}
		for k := range conv.Requests() {
			code, warn, err := send(rs[k%len(rs)].URL, "sess-1", conv.Body(k))
			if err != nil || code != 200 || (warn != "" && !strings.HasPrefix(warn, "over the context budget")) {
				t.Fatalf("request %d: %d %q %v", k, code, warn, err)
			}
		}
		return up.ModelRequests(scripted.Anthropic)
	}
	single := run(make([]*httptest.Server, 1))
	fleet := run(make([]*httptest.Server, 3))
	if len(single) != len(fleet) || len(single) != conv.Requests() {
		t.Fatalf("upstream got %d (fleet) and %d (single) requests; want %d", len(fleet), len(single), conv.Requests())
	}
	changed := 0
	for k := range single {
		if string(fleet[k].Body) != string(single[k].Body) {
			t.Fatalf("request %d: the fleet forwarded other bytes than one proxy %s", k, firstDiff(fleet[k].Body, single[k].Body))
		}
		if string(single[k].Body) != string(conv.Body(k)) {
			changed++
		}
	}
	if changed < len(single)/2 {
		t.Fatalf("only %d of %d requests were folded or hydrated: the session does not exercise the proxy", changed, len(single))
	}
}
