//go:build !race

package fleet

import (
	"net"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/contextfold/contextfold/internal/pgtest"
	"github.com/contextfold/contextfold/internal/scripted"
	"github.com/contextfold/contextfold/internal/testgen"
)

const fleetSession = "fleet-1"

// proxyFlags make the session fold and hydrate within a few dozen requests.
var proxyFlags = []string{"--context-budget", "10000"}

// fleetRun plays conv through the replicas, request k to replica k mod n
// (of those alive); killAt >= 0 sends request killAt to a replica and kills
// it (SIGKILL) while the request is in flight, and the client retries on the
// next replica, as a load balancer's client would. It returns what the
// upstream received, a retried request's duplicate removed.
func fleetRun(t *testing.T, bin, dbURL string, replicas, killAt int, conv *testgen.Conversation) []scripted.Request {
	t.Helper()
	up := scripted.New(func(*scripted.Turn) scripted.Reply { return scripted.Reply{Text: "ok"} })
	defer up.Close()
	var ps []*proxyProc
	for range replicas {
		ps = append(ps, startProxy(t, bin, dbURL, up.URL, proxyFlags...))
	}
	client := &http.Client{Timeout: 2 * time.Minute}
	next := 0
	for k := range conv.Requests() {
		body := conv.Body(k)
		if k == killAt {
			victim := ps[next%len(ps)]
			done := make(chan struct{})
			go func() {
				defer close(done)
				send(client, victim.URL, fleetSession, body) // fails, or not: the kill races it
			}()
			time.Sleep(3 * time.Millisecond)
			victim.cmd.Process.Signal(syscall.SIGKILL)
			victim.cmd.Wait()
			<-done
			ps = append(ps[:next%len(ps)], ps[next%len(ps)+1:]...)
			t.Logf("request %d: replica %s killed in flight; the client retries on the next replica", k, victim.URL)
		}
		p := ps[next%len(ps)]
		next++
		code, warn, err := send(client, p.URL, fleetSession, body)
		if err != nil || code != 200 || (warn != "" && !strings.HasPrefix(warn, "over the context budget")) {
			t.Fatalf("request %d via %s: status %d, warning %q, %v", k, p.URL, code, warn, err)
		}
	}
	var out []scripted.Request
	for _, r := range up.ModelRequests(scripted.Anthropic) {
		if n := len(out); n > 0 && string(out[n-1].Body) == string(r.Body) {
			continue // the killed replica forwarded it before it died: the retry sent the same bytes
		}
		out = append(out, r)
	}
	return out
}

// TestFleetForwardsWhatOneProxyDoes is the fleet test of three
// `contextfold proxy` processes on one database, a client whose consecutive
// requests of one long session go round-robin to the three; the upstream
// receives exactly what one proxy alone forwards; one replica is killed
// (SIGKILL) mid-session with a request in flight, the others carry on, and
// the session's store holds every folded step and validates clean.
func TestFleetForwardsWhatOneProxyDoes(t *testing.T) {
	bin := binary(t)
	conv := testgen.NewConversation(11, 64)
	start := time.Now()
	singleDB, fleetDB := pgtest.URL(t), pgtest.URL(t)
	single := fleetRun(t, bin, singleDB, 1, -1, conv)
	fleet := fleetRun(t, bin, fleetDB, 3, conv.Requests()/2, conv)
	if len(single) != conv.Requests() || len(fleet) != conv.Requests() {
		t.Fatalf("upstream got %d (fleet) and %d (single) distinct requests; want %d", len(fleet), len(single), conv.Requests())
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
	hydrated := 0
	for _, r := range single {
		if strings.Contains(string(r.Body), "<contextfold-hydration") {
			hydrated++
		}
	}
	if hydrated == 0 {
		t.Fatal("no request carried a hydration: the session does not exercise the scan")
	}
	wantTotal, _ := status(t, bin, withSession(singleDB, fleetSession))
	gotTotal, _ := status(t, bin, withSession(fleetDB, fleetSession))
	if wantTotal == 0 || gotTotal != wantTotal {
		t.Fatalf("the fleet's store holds %d folded steps, one proxy's %d", gotTotal, wantTotal)
	}
	validateClean(t, bin, withSession(fleetDB, fleetSession))
	validateClean(t, bin, withSession(singleDB, fleetSession))
	t.Logf("%d requests (%d folded or hydrated, %d hydrated), %d steps folded; both runs %v", len(single), changed, hydrated, gotTotal, time.Since(start).Round(time.Millisecond))
}

// An unreachable database: `contextfold proxy --store` exits non-zero at
// once with a message naming the problem, and never prints the password.
func TestProxyStoreUnreachable(t *testing.T) {
	bin := binary(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0") // a port nothing answers on once closed
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(bin, "proxy", "--store", "postgres://cf:s3cretpw@"+addr+"/db", "--listen", "127.0.0.1:0", "--upstream", "http://127.0.0.1:9")
	done := make(chan struct{})
	var out []byte
	go func() { out, err = cmd.CombinedOutput(); close(done) }()
	select {
	case <-done:
	case <-time.After(90 * time.Second):
		cmd.Process.Kill()
		t.Fatal("proxy did not give up on an unreachable database within 90 s")
	}
	if err == nil {
		t.Fatalf("exit 0 with an unreachable database:\n%s", out)
	}
	if strings.Contains(string(out), "s3cretpw") {
		t.Fatalf("the password was printed:\n%s", out)
	}
	if !strings.Contains(string(out), addr) {
		t.Fatalf("the message does not name the database:\n%s", out)
	}
	t.Logf("%s", out)
}
