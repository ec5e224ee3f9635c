//go:build !race

package fleet

// Store and fleet benchmarks (BENCHMARKS.md, "PostgreSQL
// store"): the directory store and the PostgreSQL store side by side on one
// machine.
//
//	CONTEXTFOLD_BENCH_DIR=/var/tmp/cfbench go test -run '^$' -bench 'Backends|Sessions' -benchtime 200x -timeout 3h ./internal/fleet
//	go test -run '^$' -bench FleetProxy -benchtime 1x ./internal/fleet
//
// Sizes 1k and 10k always, 100k with CONTEXTFOLD_BENCH_LARGE=1. Directory
// stores are kept in CONTEXTFOLD_BENCH_DIR (as the root package's scale
// benchmarks keep them: the same seed, so the same stores); the PostgreSQL
// sessions are imported from them (Store.ImportDir) into the database of
// CONTEXTFOLD_BENCH_PG_URL when set (kept across runs), else into a new
// temporary cluster with durable settings (fsync, synchronous_commit and
// full_page_writes on, unlike the tests' cluster), removed at the end.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/contextfold/contextfold/internal/benchlat"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/internal/cachedir"
	"github.com/contextfold/contextfold/internal/pgtest"
	"github.com/contextfold/contextfold/internal/scripted"
	"github.com/contextfold/contextfold/internal/testgen"
	"github.com/contextfold/contextfold/match"
	"github.com/contextfold/contextfold/match/ranked"
	"github.com/contextfold/contextfold/pgstore"
)

const benchSeed = 42 // the root package's scale benchmarks' seed

var benchGen = testgen.New(benchSeed)

func benchSizes() []int {
	if os.Getenv("CONTEXTFOLD_BENCH_LARGE") == "1" {
		return []int{1_000, 10_000, 100_000}
	}
	return []int{1_000, 10_000}
}

// benchRoot is where directory stores are kept across runs.
func benchRoot(b *testing.B) string {
	if root := os.Getenv("CONTEXTFOLD_BENCH_DIR"); root != "" {
		return root
	}
	d, err := os.MkdirTemp("", "contextfold-bench-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(d) })
	return d
}

var benchPG struct {
	once sync.Once
	c    *pgtest.Cluster
	url  string
	err  error
}

// benchDB returns the benchmark database: CONTEXTFOLD_BENCH_PG_URL, or a
// database on a durable temporary cluster.
func benchDB(b *testing.B) string {
	if u := os.Getenv("CONTEXTFOLD_BENCH_PG_URL"); u != "" {
		return u
	}
	benchPG.once.Do(func() {
		if _, err := pgtest.FindBinDir(); err != nil {
			benchPG.err = err
			return
		}
		c, err := pgtest.Start(pgtest.Options{Settings: []string{"fsync=on", "synchronous_commit=on", "full_page_writes=on", "shared_buffers=256MB"}})
		if err != nil {
			benchPG.err = err
			return
		}
		benchPG.c = c
		benchPG.url, benchPG.err = c.CreateDatabase(context.Background(), "bench")
	})
	if benchPG.err != nil {
		b.Skipf("no PostgreSQL for the benchmark: %v", benchPG.err)
	}
	return benchPG.url
}

func stopBenchPG() {
	if benchPG.c != nil {
		benchPG.c.Stop()
	}
}

var pgDBs sync.Map // url → *pgstore.DB

func pgDB(b *testing.B, url string) *pgstore.DB {
	if db, ok := pgDBs.Load(url); ok {
		return db.(*pgstore.DB)
	}
	db, err := pgstore.Connect(context.Background(), url)
	if err != nil {
		b.Fatal(err)
	}
	pgDBs.Store(url, db)
	return db
}

// dirStore returns the directory store of n generated nodes.
func dirStore(b *testing.B, n int) string {
	dir := filepath.Join(benchRoot(b), fmt.Sprintf("store-%d", n))
	start := time.Now()
	if err := benchGen.BuildStore(dir, n, contextfold.Options{}); err != nil {
		b.Fatal(err)
	}
	b.Logf("directory store of %d nodes ready in %v", n, time.Since(start).Round(time.Millisecond))
	return dir
}

// pgSession returns the PostgreSQL session holding the same n nodes,
// imported from the directory store when it holds fewer.
func pgSession(b *testing.B, n int, dir string) *contextfold.Store {
	db := pgDB(b, benchDB(b))
	name := fmt.Sprintf("bench-%d", n)
	s, err := db.Session(name, contextfold.Options{})
	if err != nil {
		b.Fatal(err)
	}
	if st, err := s.Status(); err == nil && st.Total >= n {
		return s
	}
	start := time.Now()
	if _, err := s.ImportDir(dir); err != nil {
		b.Fatalf("import %s: %v", dir, err)
	}
	b.Logf("PostgreSQL session of %d nodes imported in %v", n, time.Since(start).Round(time.Millisecond))
	// A new Store, as a replica that did not write it would open.
	if s, err = db.Session(name, contextfold.Options{}); err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkBackends measures fold, scan (exact and ranked) and hydrate on
// one warm Store of a session of n nodes, directory and PostgreSQL.
func BenchmarkBackends(b *testing.B) {
	if root := os.Getenv("CONTEXTFOLD_BENCH_DIR"); root != "" {
		b.Setenv(cachedir.Env, filepath.Join(root, "cache"))
	} else {
		b.Setenv(cachedir.Env, b.TempDir())
	}
	for _, n := range benchSizes() {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			dir := dirStore(b, n)
			open := map[string]func() *contextfold.Store{
				"dir": func() *contextfold.Store {
					s, err := contextfold.Open(dir, contextfold.Options{})
					if err != nil {
						b.Fatal(err)
					}
					return s
				},
				"pg": func() *contextfold.Store { return pgSession(b, n, dir) },
			}
			for _, backend := range []string{"dir", "pg"} {
				b.Run("store="+backend, func(b *testing.B) {
					s := open[backend]()
					b.Run("scan-exact", func(b *testing.B) { benchScan(b, s, match.Exact) })
					b.Run("scan-ranked", func(b *testing.B) { benchScan(b, s, match.Ranked) })
					b.Run("hydrate", func(b *testing.B) { benchHydrate(b, s, n) })
					b.Run("fold", func(b *testing.B) { benchFold(b, s) })
				})
			}
		})
	}
}

// benchScan: a different generated prompt per op, on a warm store (the
// first scan, which loads the index or builds the ranked one, is logged
// and not timed with the others).
func benchScan(b *testing.B, s *contextfold.Store, mode match.Mode) {
	t0 := time.Now()
	if _, err := match.Scan(s, benchGen.Prompt(-1), mode); err != nil {
		b.Fatal(err)
	}
	b.Logf("first scan (loads the index, or builds the ranked one): %v", time.Since(t0).Round(time.Millisecond))
	if mode == match.Ranked && s.Backend() != nil {
		coldReplicas(b, s)
	}
	var lat benchlat.Latencies
	picks := 0
	for i := 0; b.Loop(); i++ {
		t0 := time.Now()
		res, err := match.Scan(s, benchGen.Prompt(i), mode)
		if err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
		picks += len(res.Selected)
	}
	lat.Report(b, "")
	if picks == 0 {
		b.Fatal("no prompt matched anything: the benchmark measures nothing")
	}
}

// benchHydrate: a verified hydrate (read, SHA-256 checks, policy cap) of a
// random step per op.
func benchHydrate(b *testing.B, s *contextfold.Store, n int) {
	r := rand.New(rand.NewPCG(1, 2))
	var lat benchlat.Latencies
	for b.Loop() {
		step := r.IntN(n)
		t0 := time.Now()
		if _, err := s.Hydrate(step); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	lat.Report(b, "")
}

// benchFold folds new turns (the session grows by b.N nodes: run with a
// bounded -benchtime).
func benchFold(b *testing.B, s *contextfold.Store) {
	st, err := s.Status()
	if err != nil {
		b.Fatal(err)
	}
	next := 10_000_000 + st.Total
	var lat benchlat.Latencies
	for b.Loop() {
		t := benchGen.Turn(next)
		t0 := time.Now()
		if _, err := s.Fold(t); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
		next++
	}
	lat.Report(b, "")
}

// BenchmarkTenThousandSessions: the same operations on sessions of 20
// nodes picked at random among 10,000 in one database (or 10,000 store
// directories), each session's Store warm.
func BenchmarkTenThousandSessions(b *testing.B) {
	const sessions, per = 10_000, 20
	for _, backend := range []string{"dir", "pg"} {
		b.Run("store="+backend, func(b *testing.B) {
			stores := make([]*contextfold.Store, sessions)
			root := filepath.Join(benchRoot(b), "sessions")
			var db *pgstore.DB
			if backend == "pg" {
				db = pgDB(b, benchDB(b))
			}
			start := time.Now()
			var wg sync.WaitGroup
			errs := make(chan error, sessions)
			sem := make(chan struct{}, 8)
			for i := range sessions {
				wg.Add(1)
				sem <- struct{}{}
				go func() {
					defer wg.Done()
					defer func() { <-sem }()
					var s *contextfold.Store
					var err error
					if db != nil {
						s, err = db.Session(fmt.Sprintf("many-%d", i), contextfold.Options{})
					} else {
						s, err = contextfold.Open(filepath.Join(root, fmt.Sprint(i), ".contextfold"), contextfold.Options{})
					}
					if err == nil {
						var st *contextfold.Status
						if st, err = s.Status(); err == nil && st.Total < per {
							_, err = s.FoldBatch(benchGen.SmallTurns(0, per))
						}
					}
					stores[i] = s
					if err != nil {
						errs <- err
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				b.Fatal(err)
			}
			b.Logf("%d sessions of %d nodes ready in %v", sessions, per, time.Since(start).Round(time.Millisecond))
			r := rand.New(rand.NewPCG(3, 4))
			for _, s := range stores[:200] { // warm a few; the others warm on first use, measured below
				s.Scan(benchGen.Prompt(-1))
			}
			b.Run("scan-exact", func(b *testing.B) {
				var lat benchlat.Latencies
				for i := 0; b.Loop(); i++ {
					s := stores[r.IntN(200)]
					t0 := time.Now()
					if _, err := match.Scan(s, benchGen.Prompt(i), match.Exact); err != nil {
						b.Fatal(err)
					}
					lat = append(lat, time.Since(t0))
				}
				lat.Report(b, "")
			})
			b.Run("cold-scan-exact", func(b *testing.B) {
				var lat benchlat.Latencies
				next := 200
				for i := 0; b.Loop(); i++ {
					s := stores[next%sessions]
					next++
					t0 := time.Now()
					if _, err := match.Scan(s, benchGen.Prompt(i), match.Exact); err != nil {
						b.Fatal(err)
					}
					lat = append(lat, time.Since(t0))
				}
				lat.Report(b, "")
			})
			b.Run("hydrate", func(b *testing.B) {
				var lat benchlat.Latencies
				for b.Loop() {
					s := stores[r.IntN(200)]
					t0 := time.Now()
					if _, err := s.Hydrate(r.IntN(per)); err != nil {
						b.Fatal(err)
					}
					lat = append(lat, time.Since(t0))
				}
				lat.Report(b, "")
			})
			b.Run("fold", func(b *testing.B) {
				var lat benchlat.Latencies
				for i := 0; b.Loop(); i++ {
					s := stores[r.IntN(200)]
					st, err := s.Status()
					if err != nil {
						b.Fatal(err)
					}
					t0 := time.Now()
					if _, err := s.Fold(benchGen.SmallTurn(1_000_000 + st.Total + i)); err != nil {
						b.Fatal(err)
					}
					lat = append(lat, time.Since(t0))
				}
				lat.Report(b, "")
			})
		})
	}
}

// BenchmarkFleetProxy measures the proxy's throughput with 50 concurrent
// sessions, each a client sending its session's requests one after the other
// (a long agent session: 24 requests, folding and hydrating under a 10k-token
// budget): three `contextfold proxy` processes on one PostgreSQL database,
// each session's consecutive requests round-robin over them, against one
// proxy on the directory store. The upstream is the scripted model on
// loopback (answers at once), so the figures are the proxies' own cost.
// One op is the whole run of 50 × 24 requests.
func BenchmarkFleetProxy(b *testing.B) {
	const sessions, requests = 50, 24
	bin := binary(b)
	conv := testgen.NewConversation(13, requests)
	bodies := make([][]byte, requests)
	for k := range bodies {
		bodies[k] = conv.Body(k)
	}
	for _, setup := range []struct {
		name     string
		replicas int
	}{{"store=dir/replicas=1", 1}, {"store=pg/replicas=3", 3}} {
		b.Run(setup.name, func(b *testing.B) {
			for range b.N {
				up := scripted.New(func(*scripted.Turn) scripted.Reply { return scripted.Reply{Text: "ok"} })
				var ps []*proxyProc
				for range setup.replicas {
					if setup.replicas == 1 {
						ps = append(ps, startProxyArgs(b, bin, append([]string{"proxy", "--dir", b.TempDir(), "--listen", "127.0.0.1:0", "--upstream", up.URL}, proxyFlags...)))
					} else {
						ps = append(ps, startProxy(b, bin, benchFleetDB(b), up.URL, proxyFlags...))
					}
				}
				client := &http.Client{Timeout: 5 * time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
				lat := make([]benchlat.Latencies, sessions)
				errs := make([]error, sessions)
				run := fmt.Sprint(time.Now().UnixNano())
				var retries atomic.Int64
				t0 := time.Now()
				var wg sync.WaitGroup
				for i := range sessions {
					wg.Add(1)
					go func() {
						defer wg.Done()
						sid := fmt.Sprintf("bench-%s-%d", run, i)
						for k, body := range bodies {
							p := ps[(i+k)%len(ps)]
							s0 := time.Now()
							code, _, err := send(client, p.URL, sid, body)
							for try := 0; err != nil && try < 2; try++ {
								// A connection the client reused was closed
								// (EOF): send again, as a load balancer would.
								retries.Add(1)
								code, _, err = send(client, p.URL, sid, body)
							}
							if err == nil && code != 200 {
								err = fmt.Errorf("status %d", code)
							}
							if err != nil {
								errs[i] = fmt.Errorf("session %d request %d: %v", i, k, err)
								return
							}
							lat[i] = append(lat[i], time.Since(s0))
						}
					}()
				}
				wg.Wait()
				wall := time.Since(t0)
				for _, err := range errs {
					if err != nil {
						b.Fatal(err)
					}
				}
				var all benchlat.Latencies
				for _, l := range lat {
					all = append(all, l...)
				}
				all.Report(b, "req-")
				b.ReportMetric(float64(len(all))/wall.Seconds(), "req/s")
				b.ReportMetric(float64(retries.Load()), "retries")
				up.Close()
				for _, p := range ps {
					p.cmd.Process.Signal(os.Interrupt)
				}
			}
		})
	}
}

// benchFleetDB is a fresh database for one fleet run.
func benchFleetDB(b *testing.B) string {
	if u := os.Getenv("CONTEXTFOLD_BENCH_PG_URL"); u != "" {
		return u
	}
	benchDB(b)
	return benchPG.url
}

// envColdReplica makes the test binary a replica starting cold on the
// session of its URL (coldReplicaMain).
const envColdReplica = "FLEET_COLD_REPLICA"

// coldStart is what a cold replica reports (durations in ms).
type coldStart struct {
	OpenMS, IndexMS, RankedMS, ScanMS float64
	Stats                             ranked.Stats
	Picks                             int
	Err                               string
}

// coldReplicaMain: a new process (empty per-user cache directory) opens the
// session, reads its recall index, gets its ranked index (the shared
// snapshot, match/ranked/shared.go) and runs one ranked scan.
func coldReplicaMain(url string) {
	var r coldStart
	ms := func(t time.Time) float64 { return float64(time.Since(t).Microseconds()) / 1000 }
	err := func() error {
		t := time.Now()
		s, err := pgstore.OpenURL(url, contextfold.Options{})
		if err != nil {
			return err
		}
		r.OpenMS = ms(t)
		t = time.Now()
		if _, err := s.IndexVersion(); err != nil {
			return err
		}
		r.IndexMS = ms(t)
		t = time.Now()
		ix, err := ranked.For(s)
		if err != nil {
			return err
		}
		r.RankedMS = ms(t)
		t = time.Now()
		res, err := match.Scan(s, benchGen.Prompt(-1), match.Ranked)
		if err != nil {
			return err
		}
		r.ScanMS = ms(t)
		r.Picks = len(res.Selected)
		ranked.WaitShared()
		r.Stats = ix.Stats()
		return nil
	}()
	if err != nil {
		r.Err = err.Error()
	}
	json.NewEncoder(os.Stdout).Encode(r)
	os.Exit(0)
}

// coldReplicas logs the first ranked scan of three new replica processes
// (each with an empty per-user cache directory: only the database is
// shared) of the session s, whose ranked index this process has just built
// and shared.
func coldReplicas(b *testing.B, s *contextfold.Store) {
	ranked.WaitShared()
	name, err := pgstore.SessionName(s.Dir())
	if err != nil {
		b.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	for i := range 3 {
		cmd := exec.Command(exe, "-test.run=^$", "-test.bench=^$")
		// The database's URL (with its credentials, never printed) and
		// the session's name.
		cmd.Env = append(os.Environ(), envColdReplica+"="+withSession(benchDB(b), name), cachedir.Env+"="+b.TempDir())
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		t0 := time.Now()
		out, err := cmd.Output()
		wall := time.Since(t0)
		var r coldStart
		if err != nil || json.Unmarshal(out, &r) != nil || r.Err != "" {
			b.Fatalf("cold replica: %v %s\n%s%s", err, r.Err, out, stderr.Bytes())
		}
		if r.Stats.Source != "shared" || r.Picks == 0 {
			b.Fatalf("cold replica %d did not use the shared snapshot: %+v", i, r)
		}
		b.Logf("cold replica %d: first ranked scan %v in all (process %v): open %.0f ms, recall index %.0f ms, ranked index %.0f ms (shared snapshot, %d nodes read), scan %.1f ms",
			i, time.Duration((r.OpenMS+r.IndexMS+r.RankedMS+r.ScanMS)*1e6).Round(time.Millisecond), wall.Round(time.Millisecond), r.OpenMS, r.IndexMS, r.RankedMS, r.Stats.NodesRead, r.ScanMS)
	}
}
