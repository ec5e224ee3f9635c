package pgstore_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/internal/testgen"
	"github.com/contextfold/contextfold/match/ranked"
	"github.com/contextfold/contextfold/pgstore"
)

// The shared ranked snapshot (match/ranked/shared.go): each
// "replica" is a process of its own (this test binary run again, with an
// empty per-user cache directory of its own), so that nothing but the
// database is shared with the replica before it.

const envRankedChild = "CONTEXTFOLD_TEST_RANKED_CHILD" // the session's URL

var rankedGen = testgen.New(7)

const rankedPrompts = 12

// rankedRun is what a replica process reports: how its ranked index was
// opened and the steps each prompt picks.
type rankedRun struct {
	Stats  ranked.Stats
	Picks  [][]int
	Err    string
	Stderr string `json:"-"` // what the replica printed there
}

func picksOf(ix *ranked.Index) [][]int {
	out := make([][]int, rankedPrompts)
	for i := range out {
		out[i] = []int{}
		for _, p := range ix.Scan(rankedGen.Prompt(i), ranked.DefaultParams()).Picks {
			out[i] = append(out[i], p.Step)
		}
	}
	return out
}

// rankedChild is the replica: it opens the session, gets its ranked index
// (ranked.For: the shared snapshot, or a build), and prints a rankedRun.
func rankedChild() {
	var r rankedRun
	s, err := pgstore.OpenURL(os.Getenv(envRankedChild), contextfold.Options{})
	if err == nil {
		var ix *ranked.Index
		if ix, err = ranked.For(s); err == nil {
			r.Picks = picksOf(ix)
			ranked.WaitShared()
			r.Stats = ix.Stats()
		}
	}
	if err != nil {
		r.Err = err.Error()
	}
	json.NewEncoder(os.Stdout).Encode(r)
	os.Exit(0)
}

// replica runs one replica process on the session of url, with a new
// per-user cache directory.
func replica(t *testing.T, url string) rankedRun {
	t.Helper()
	return replicaIn(t, url, t.TempDir())
}

// replicaIn is replica with the per-user cache directory cache.
func replicaIn(t *testing.T, url, cache string) rankedRun {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), envRankedChild+"="+url, "CONTEXTFOLD_CACHE_DIR="+cache)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("replica: %v\n%s", err, stderr.Bytes())
	}
	var r rankedRun
	if err := json.Unmarshal(out, &r); err != nil || r.Err != "" {
		t.Fatalf("replica: %v %s\n%s%s", err, r.Err, out, stderr.Bytes())
	}
	r.Stderr = stderr.String()
	return r
}

// freshPicks are the picks of an index built now from every cold node
// (no snapshot of any kind: ranked.NewIndex, not ranked.For).
func freshPicks(t *testing.T, s *contextfold.Store) [][]int {
	t.Helper()
	ix := ranked.NewIndex()
	if err := ix.Refresh(s); err != nil {
		t.Fatal(err)
	}
	return picksOf(ix)
}

func samePicks(t *testing.T, what string, got, want [][]int) {
	t.Helper()
	n := 0
	for i := range want {
		n += len(want[i])
		if !slices.Equal(got[i], want[i]) {
			t.Errorf("%s: prompt %d picks %v, a fresh build %v", what, i, got[i], want[i])
		}
	}
	if n == 0 {
		t.Fatalf("%s: no prompt picks anything: the comparison proves nothing", what)
	}
}

func TestSharedRankedSnapshot(t *testing.T) {
	const n = 400
	s, url := openSession(t)
	dir := filepath.Join(t.TempDir(), ".contextfold")
	if err := rankedGen.BuildStore(dir, n, contextfold.Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ImportDir(dir); err != nil {
		t.Fatal(err)
	}
	c := pool(t)
	id := sessionID(t, c, s)
	ctx := context.Background()

	// Replica 1 builds the index from every cold node and shares it.
	r1 := replica(t, url)
	if r1.Stats.Source != "build" || r1.Stats.NodesRead != n || r1.Stats.SharedWrites != 1 || r1.Stats.SharedErr != "" {
		t.Fatalf("first replica: %+v, want a build of %d nodes and one shared write", r1.Stats, n)
	}
	want := freshPicks(t, s)
	samePicks(t, "first replica", r1.Picks, want)

	// Replica 2 uses it: no cold node read.
	cache2 := t.TempDir()
	r2 := replicaIn(t, url, cache2)
	if r2.Stats.Source != "shared" || r2.Stats.NodesRead != 0 || r2.Stats.SharedWrites != 0 {
		t.Fatalf("second replica: %+v, want the shared snapshot and no cold node read", r2.Stats)
	}
	samePicks(t, "second replica", r2.Picks, want)
	// It kept a copy in its per-user cache: its next process on this host
	// opens that one.
	r2b := replicaIn(t, url, cache2)
	if r2b.Stats.Source != "local" || r2b.Stats.NodesRead != 0 {
		t.Fatalf("second replica restarted: %+v, want its local copy and no cold node read", r2b.Stats)
	}
	samePicks(t, "second replica restarted", r2b.Picks, want)

	// The session grows by fewer nodes than make a new snapshot due: a
	// replica loads the older snapshot and reads only the new nodes.
	const more = 9
	for i := range more {
		if _, err := s.Fold(rankedGen.Turn(n + i)); err != nil {
			t.Fatal(err)
		}
	}
	r3 := replica(t, url)
	if r3.Stats.Source != "shared" || r3.Stats.NodesRead != more {
		t.Fatalf("replica after %d folds: %+v, want the shared snapshot and %d nodes read", more, r3.Stats, more)
	}
	want = freshPicks(t, s)
	samePicks(t, "replica after folds", r3.Picks, want)

	// Past sharedLead (32) revisions behind, the replica that brings the
	// snapshot up to date writes it back (in the background); the next
	// one reads nothing.
	const more2 = 40
	for i := range more2 {
		if _, err := s.Fold(rankedGen.Turn(n + more + i)); err != nil {
			t.Fatal(err)
		}
	}
	r3b := replica(t, url)
	if r3b.Stats.Source != "shared" || r3b.Stats.NodesRead != more+more2 || r3b.Stats.SharedWrites != 1 || r3b.Stats.SharedErr != "" {
		t.Fatalf("replica %d folds behind: %+v, want the shared snapshot, %d nodes read and the refreshed snapshot written back", more+more2, r3b.Stats, more+more2)
	}
	r3c := replica(t, url)
	if r3c.Stats.Source != "shared" || r3c.Stats.NodesRead != 0 || r3c.Stats.SharedWrites != 0 {
		t.Fatalf("replica after the write-back: %+v, want the refreshed shared snapshot, no node read", r3c.Stats)
	}
	want = freshPicks(t, s)
	samePicks(t, "replica after the write-back", r3c.Picks, want)

	// A chunk row changed behind our back: refused, rebuilt, replaced.
	if _, err := c.Exec(ctx, `UPDATE cf_snapshot_chunks SET data = set_byte(data, 5000, (get_byte(data, 5000) + 1) % 256) WHERE session_id = $1 AND seq = 0`, id); err != nil {
		t.Fatal(err)
	}
	r4 := replica(t, url)
	if r4.Stats.Source != "build" || r4.Stats.NodesRead != n+more+more2 || !strings.Contains(r4.Stats.SharedRejected, "SHA-256") || r4.Stats.SharedWrites != 1 {
		t.Fatalf("replica after tampering: %+v, want the snapshot refused (SHA-256), a rebuild and a new shared snapshot", r4.Stats)
	}
	samePicks(t, "replica after tampering", r4.Picks, want)
	if strings.Count(r4.Stderr, "shared ranked snapshot") != 1 || !strings.Contains(r4.Stderr, "SHA-256") || !strings.Contains(r4.Stderr, "rebuilding") {
		t.Errorf("the rebuild after tampering logged %q, want one line naming the reason", r4.Stderr)
	}
	r5 := replica(t, url)
	if r5.Stats.Source != "shared" || r5.Stats.NodesRead != 0 {
		t.Fatalf("replica after the rebuild: %+v, want the rebuilt shared snapshot", r5.Stats)
	}
	samePicks(t, "replica after the rebuild", r5.Picks, want)
	if strings.Contains(r5.Stderr, "shared ranked snapshot") {
		t.Errorf("a replica using a good snapshot logged %q", r5.Stderr)
	}

	// The bytes changed and their recorded SHA-256 with them: the
	// snapshot's own CRC-32Cs refuse it.
	if _, err := c.Exec(ctx, `UPDATE cf_snapshot_chunks SET data = set_byte(data, 20, (get_byte(data, 20) + 1) % 256) WHERE session_id = $1 AND seq = 0`, id); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, `UPDATE cf_snapshots s SET sha256 = (SELECT encode(sha256(string_agg(data, ''::bytea ORDER BY seq)), 'hex') FROM cf_snapshot_chunks c WHERE c.session_id = s.session_id AND c.kind = s.kind) WHERE session_id = $1`, id); err != nil {
		t.Fatal(err)
	}
	r6 := replica(t, url)
	if r6.Stats.Source != "build" || !strings.Contains(r6.Stats.SharedRejected, "decode") {
		t.Fatalf("replica after tampering with bytes and hash: %+v, want the snapshot refused and a rebuild", r6.Stats)
	}
	samePicks(t, "replica after tampering with bytes and hash", r6.Picks, want)

	// A row claiming another revision than its bytes: refused.
	if _, err := c.Exec(ctx, `UPDATE cf_snapshots SET rev = rev - 1 WHERE session_id = $1`, id); err != nil {
		t.Fatal(err)
	}
	r7 := replica(t, url)
	if r7.Stats.Source != "build" || !strings.Contains(r7.Stats.SharedRejected, "revision") {
		t.Fatalf("replica after moving the row's revision: %+v, want the snapshot refused and a rebuild", r7.Stats)
	}
	samePicks(t, "replica after moving the row's revision", r7.Picks, want)
	var chunks int
	if err := c.QueryRow(ctx, `SELECT count(*) FROM cf_snapshot_chunks WHERE session_id = $1`, id).Scan(&chunks); err != nil || chunks < 1 {
		t.Fatalf("chunks: %d %v", chunks, err)
	}
}

// A snapshot whose bytes, hash and revision are all consistent but that is
// another session's (copied over this one's row, the session's revision
// moved to match): its nodes are not this index's, so it is refused and
// the index rebuilt.
func TestSharedRankedSnapshotOfAnotherSession(t *testing.T) {
	const n = 120
	ctx := context.Background()
	c := pool(t)
	var urls [2]string
	var stores [2]*contextfold.Store
	for i, seed := range []uint64{7, 8} {
		s, u := openSessionNamed(t, fmt.Sprint(i))
		dir := filepath.Join(t.TempDir(), ".contextfold")
		if err := testgen.New(seed).BuildStore(dir, n, contextfold.Options{}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.ImportDir(dir); err != nil {
			t.Fatal(err)
		}
		urls[i], stores[i] = u, s
	}
	if r := replica(t, urls[0]); r.Stats.Source != "build" || r.Stats.SharedWrites != 1 {
		t.Fatalf("first session's replica: %+v", r.Stats)
	}
	from, to := sessionID(t, c, stores[0]), sessionID(t, c, stores[1])
	for _, q := range []string{
		`INSERT INTO cf_snapshots (session_id, kind, generation, rev, size, sha256, chunks) SELECT $2, kind, generation, rev, size, sha256, chunks FROM cf_snapshots WHERE session_id = $1`,
		`INSERT INTO cf_snapshot_chunks (session_id, kind, seq, data) SELECT $2, kind, seq, data FROM cf_snapshot_chunks WHERE session_id = $1`,
		`UPDATE cf_sessions t SET generation = f.generation, rev = greatest(t.rev, f.rev) FROM cf_snapshots f WHERE f.session_id = $1 AND t.id = $2`,
	} {
		if _, err := c.Exec(ctx, q, from, to); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	r := replica(t, urls[1])
	if r.Stats.Source != "build" || r.Stats.NodesRead != n || !strings.Contains(r.Stats.SharedRejected, "does not match its index entry") || r.Stats.SharedWrites != 1 {
		t.Fatalf("replica of the second session: %+v, want the copied snapshot refused (identities) and a rebuild", r.Stats)
	}
	s2, err := pgstore.OpenURL(urls[1], contextfold.Options{})
	if err != nil {
		t.Fatal(err)
	}
	samePicks(t, "second session", r.Picks, freshPicks(t, s2))
}
