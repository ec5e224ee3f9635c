package match_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/match"
)

func fold(t *testing.T, s *contextfold.Store, turns ...contextfold.Turn) {
	t.Helper()
	if _, err := s.FoldBatch(turns); err != nil {
		t.Fatal(err)
	}
}

func bigLog(lines int, at map[int]string) string {
	var b strings.Builder
	for i := 1; i <= lines; i++ {
		if s, ok := at[i]; ok {
			b.WriteString(s + "\n")
			continue
		}
		fmt.Fprintf(&b, "2026-11-30T10:%02d:%02d INFO reconcile batch %d processed rows=%d ok\n", i/60%60, i%60, i, 1000+i)
	}
	return b.String()
}

// Trial 1: a store of one node (the proxy's first fold event) or a few
// nodes: a prompt naming the node's words finds it, although no term can
// be rare among one or two nodes.
func TestRankedSmallStores(t *testing.T) {
	for _, n := range []int{1, 2, 3, 5, 20} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			s := newStore(t, "")
			var turns []contextfold.Turn
			for i := 1; i < n; i++ {
				turns = append(turns, contextfold.Turn{StepID: i, Summary: fmt.Sprintf("step %d", i), RawContent: fmt.Sprintf("compiled package %d without warnings", i)})
			}
			turns = append(turns, contextfold.Turn{StepID: n, Summary: "tool: reconcile", RawContent: bigLog(300, map[int]string{211: "ERROR shard-5 checksum mismatch: expected 9f2c got 77ab"})})
			fold(t, s, turns...)
			res, err := match.Scan(s, "which shard had the checksum mismatch", match.Ranked)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Selected) == 0 || res.Selected[0].StepID != n {
				t.Fatalf("selected %v, want %d first", steps(res.Selected), n)
			}
			for _, p := range []string{"thanks, go on", "write a haiku about autumn leaves"} {
				if r, _ := match.Scan(s, p, match.Ranked); len(r.Selected) != 0 {
					t.Errorf("%q hydrates %v", p, steps(r.Selected))
				}
			}
		})
	}
}

// Trial 3: neighbour credit crosses no gap: only the node of the adjacent
// step id (step−1 or step+1) lends or borrows terms.
func TestRankedNeighbourOnlyAdjacent(t *testing.T) {
	s := newStore(t, "")
	var turns []contextfold.Turn
	for i := 1; i <= 40; i++ {
		turns = append(turns, contextfold.Turn{StepID: i, Summary: fmt.Sprint("turn ", i), RawContent: fmt.Sprintf("routine output number %d", i)})
	}
	turns = append(turns,
		contextfold.Turn{StepID: 44, Summary: "question", RawContent: "why did the ledger_sync job fail?"},
		contextfold.Turn{StepID: 100, Summary: "answer", RawContent: "the ledger_sync job failed on a lock timeout in stage reconcile"},
		contextfold.Turn{StepID: 101, Summary: "ack", RawContent: "noted, moving on"},
	)
	fold(t, s, turns...)
	res, err := match.Scan(s, "what happened with ledger_sync lock timeout", match.Ranked)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range append(res.Selected, res.Dropped...) {
		for _, w := range p.Why {
			if strings.Contains(w, "via neighbour step") {
				nb := 0
				fmt.Sscanf(w[strings.Index(w, "via neighbour step")+len("via neighbour step "):], "%d", &nb)
				if d := nb - p.StepID; d != 1 && d != -1 {
					t.Errorf("step %d credited via step %d: %q", p.StepID, nb, w)
				}
			}
		}
		if p.StepID == 44 && needleOnly(p) && slices.Index(steps(res.Selected), 100) >= 0 && slices.Index(steps(res.Selected), 100) < slices.Index(steps(res.Selected), 44) {
			// The question quotes ledger_sync literally: rule "exact
			// needles" hydrates it after the newer answer that updates it
			// (intent ownership), never through a neighbour's terms.
			continue
		}
		if p.StepID == 44 || p.StepID == 101 {
			t.Errorf("non-adjacent or unrelated step %d picked: %+v", p.StepID, p)
		}
	}
}

// needleOnly reports whether p was picked by rule "exact needles" alone.
func needleOnly(p contextfold.ScanPick) bool {
	for _, w := range p.Why {
		if !strings.Contains(w, `rule "exact needles"`) {
			return false
		}
	}
	return len(p.Why) > 0
}

// Trial 6: a bad "matching" value in store_settings.json is an error naming
// the file, the value and the modes; a good one is returned.
func TestStoreModeBadValue(t *testing.T) {
	s := demo(t, "")
	if m, err := match.StoreModeOf(s); err != nil || m != match.Exact {
		t.Errorf("no settings: %q %v", m, err)
	}
	path := filepath.Join(s.Dir(), contextfold.SettingsFile)
	os.WriteFile(path, []byte(`{"matching": "ranked"}`), 0o644)
	if m, err := match.StoreModeOf(s); err != nil || m != match.Ranked {
		t.Errorf("ranked: %q %v", m, err)
	}
	for _, bad := range []string{`{"matching": "bm25"}`, `{"matching": 3}`} {
		os.WriteFile(path, []byte(bad), 0o644)
		_, err := match.StoreModeOf(s)
		if err == nil || !errors.Is(err, match.ErrUnknownMode) || !strings.Contains(err.Error(), contextfold.SettingsFile) || !strings.Contains(err.Error(), "exact, ranked") {
			t.Errorf("%s: %v", bad, err)
		}
	}
	os.WriteFile(path, []byte(`{"matching": "bm25"}`), 0o644)
	if _, err := match.StoreModeOf(s); err == nil || !strings.Contains(err.Error(), `"bm25"`) {
		t.Errorf("value not named: %v", err)
	}
}

// Trial 7: a two-character Chinese word matches the node's bigrams, a
// question word around it (是多少) does not dilute it; accent- and
// dotless-i-insensitive forms match Turkish and Spanish typed without
// them.
func TestRankedCJKAndAccents(t *testing.T) {
	s := newStore(t, "")
	var turns []contextfold.Turn
	for i := 1; i <= 40; i++ {
		turns = append(turns, contextfold.Turn{StepID: i, Summary: fmt.Sprint("turn ", i), RawContent: fmt.Sprintf("编译完成，没有警告 %d", i)})
	}
	turns = append(turns,
		contextfold.Turn{StepID: 50, Summary: "迁移", RawContent: "迁移失败了，因为死锁"},
		contextfold.Turn{StepID: 52, Summary: "配置", RawContent: "数据库端口改为5433"},
		contextfold.Turn{StepID: 54, Summary: "parola", RawContent: "Yeni şifre kasaya kaydedildi"},
		contextfold.Turn{StepID: 56, Summary: "config", RawContent: "La configuración del servidor quedó en config/prod.yaml"},
	)
	fold(t, s, turns...)
	for prompt, want := range map[string]int{"死锁": 50, "端口是多少": 52, "SIFRE": 54, "sifre nerede": 54, "configuracion": 56, "¿dónde está la configuracion?": 56} {
		res, err := match.Scan(s, prompt, match.Ranked)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Selected) == 0 || res.Selected[0].StepID != want {
			t.Errorf("%q selected %v, want %d", prompt, steps(res.Selected), want)
		}
	}
}

// Trial 8: an instruction about new work, or a prompt most of whose words
// the archive never saw, hydrates nothing on one ordinary word; a strong
// match (a specific term, or several of the prompt's words) still does.
func TestRankedInstructionsHydrateNothing(t *testing.T) {
	s := newStore(t, "")
	var turns []contextfold.Turn
	for i := 1; i <= 30; i++ {
		turns = append(turns, contextfold.Turn{StepID: i, Summary: fmt.Sprint("turn ", i), RawContent: fmt.Sprintf("go test ./pkg%d ok", i)})
	}
	turns = append(turns,
		contextfold.Turn{StepID: 40, Summary: "ls", RawContent: "README.md\ngo.mod\nmain.go\ncmd/"},
		contextfold.Turn{StepID: 41, Summary: "build", RawContent: "removed 3 leaves from the dependency tree"},
		contextfold.Turn{StepID: 42, Summary: "deadlock", RawContent: "ERROR: deadlock detected in ledger migration, code 40P01"},
	)
	fold(t, s, turns...)
	for _, p := range []string{"now write the README", "write a haiku about autumn leaves", "please add a README", "create a poem about the autumn leaves"} {
		if r, _ := match.Scan(s, p, match.Ranked); len(r.Selected) != 0 {
			t.Errorf("%q hydrates %v", p, steps(r.Selected))
		}
	}
	for p, want := range map[string]int{"what did the README listing show": 40, "fix the ledger migration deadlock": 42, "write down the 40P01 error": 42} {
		if r, _ := match.Scan(s, p, match.Ranked); len(r.Selected) == 0 || r.Selected[0].StepID != want {
			t.Errorf("%q selected %v, want %d", p, steps(r.Selected), want)
		}
	}
}

// Trial 4: focused hydration weighs a term by its rarity within the node
// (a word on every line of a log counts little), places only windows
// scoring near the best, and puts the best window first.
func TestFocusRanksWindows(t *testing.T) {
	s := newStore(t, `{"max_rehydration_tokens_per_call": 400}`)
	var b strings.Builder
	for i := 1; i <= 2000; i++ {
		switch {
		case i == 1700:
			b.WriteString("2026-11-30 batch 1700 FAILED: worker-3 checksum mismatch on part 9\n")
		case i%40 == 0:
			fmt.Fprintf(&b, "2026-11-30 batch %d verified checksum on worker-9 ok\n", i)
		default:
			fmt.Fprintf(&b, "2026-11-30 batch %d processed by worker-%d\n", i, i%7)
		}
	}
	fold(t, s, contextfold.Turn{StepID: 1, Summary: "tool: reconcile", RawContent: b.String()})
	for _, prompt := range []string{"batch 1700", "worker-3 checksum"} {
		h, err := match.Hydrate(s, 1, prompt, match.Ranked)
		if err != nil {
			t.Fatal(err)
		}
		if len(h.Windows) == 0 || h.Windows[0].FirstLine > 1700 || h.Windows[0].LastLine < 1700 {
			t.Errorf("%q: first window %+v, want line 1700 (%d windows)", prompt, h.Windows, len(h.Windows))
			continue
		}
		first := h.Content
		if k := strings.Index(first[1:], "[contextfold:"); k >= 0 {
			first = first[:k+1]
		}
		if !strings.Contains(first, "batch 1700 FAILED") || len(h.Windows) > 8 {
			t.Errorf("%q: %d windows, first %q", prompt, len(h.Windows), first)
		}
	}
}

// Trial 2: a large node matched on one generic word, or on bare small
// numbers, does not win over (or spend the budget of) the small node that
// holds the prompt's rarer words.
func TestRankedLargeNodesNeedTheirCost(t *testing.T) {
	s := newStore(t, "")
	var turns []contextfold.Turn
	for i := 1; i <= 30; i++ {
		turns = append(turns, contextfold.Turn{StepID: i, Summary: fmt.Sprint("turn ", i), RawContent: fmt.Sprintf("go test ./pkg%d ok", i)})
	}
	var read, log strings.Builder
	for i := 0; i < 400; i++ {
		fmt.Fprintf(&read, "// code path %d: the code below handles code review notes and code owners\n", i)
		fmt.Fprintf(&log, "2026-11-30 07:11:15 step %d finished in 07 11 15 ms\n", i)
	}
	turns = append(turns,
		contextfold.Turn{StepID: 40, Summary: "Read docs/guide.md", RawContent: read.String()},
		contextfold.Turn{StepID: 42, Summary: "migration", RawContent: "ERROR: deadlock detected while migrating ledger rows"},
		contextfold.Turn{StepID: 44, Summary: "cat run.log", RawContent: log.String()},
		contextfold.Turn{StepID: 46, Summary: "retry plan", RawContent: "plan: retry the ledger migration with smaller batches"},
	)
	fold(t, s, turns...)
	for prompt, want := range map[string]int{
		"what was the deadlock error code":                                 42,
		"pasted:\n07 11 15 retry\n07 11 15 plan smaller batches\n11 15 07": 46,
	} {
		res, err := match.Scan(s, prompt, match.Ranked)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Selected) == 0 || res.Selected[0].StepID != want {
			t.Errorf("%.30q selected %v, want %d first", prompt, steps(res.Selected), want)
		}
		for _, p := range res.Selected {
			if p.StepID == 40 || p.StepID == 44 {
				t.Errorf("%.30q hydrates the large node %d on generic terms: %v", prompt, p.StepID, p.Why)
			}
		}
	}
}

// TestRankedLongBestPickWithRareWord: rule "cost" keeps a long node that is
// the best pick and alone holds a rare word of the prompt (the build log
// that holds the linker's error), while the same long node matched on a
// generic word behind a better pick stays out (TestRankedLargeNodesNeedTheirCost).
func TestRankedLongBestPickWithRareWord(t *testing.T) {
	s := newStore(t, "")
	var build strings.Builder
	for i := 0; i < 400; i++ {
		fmt.Fprintf(&build, "[%3d/400] compiling module_%d.c\n", i, i)
	}
	build.WriteString("ld: error: undefined symbol: frobnicate_v2 (referenced by module_17.o)\n")
	var turns []contextfold.Turn
	for i := 0; i < 12; i++ {
		turns = append(turns, contextfold.Turn{StepID: i, Summary: fmt.Sprintf("step %d", i), RawContent: fmt.Sprintf("$ ls src%d\nmain.c util.c", i)})
	}
	turns = append(turns, contextfold.Turn{StepID: 20, Summary: "make all", RawContent: build.String()})
	fold(t, s, turns...)
	res, err := match.Scan(s, "what did the linker say about the undefined symbol?", match.Ranked)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Selected) == 0 || res.Selected[0].StepID != 20 {
		t.Fatalf("selected %v (dropped %v), want the build log 20 first", steps(res.Selected), steps(res.Dropped))
	}
}
