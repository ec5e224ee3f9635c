package match_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/match"
	"github.com/contextfold/contextfold/match/ranked"
)

// agentPolicy is the store settings of the generated agent-session tests:
// a 300-token cap a node, a 700-token budget a turn, ranked matching.
const agentPolicy = `{"max_rehydration_tokens_per_call": 300, "max_rehydration_tokens_per_turn": 700, "matching": "ranked"}`

// foldedAgentStore returns a new store of agentPolicy with turns folded
// in ranked mode.
func foldedAgentStore(t testing.TB, turns []contextfold.Turn) *contextfold.Store {
	t.Helper()
	s := newStore(t, agentPolicy)
	for i := 0; i < len(turns); i += 5000 {
		if err := match.FoldBatch(s, match.Ranked, turns[i:min(i+5000, len(turns))]); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// skipUnlessLarge skips a test of 100,000 folded nodes unless
// CONTEXTFOLD_BENCH_LARGE=1 asks for it.
func skipUnlessLarge(t *testing.T) {
	t.Helper()
	if os.Getenv("CONTEXTFOLD_BENCH_LARGE") != "1" {
		t.Skip("set CONTEXTFOLD_BENCH_LARGE=1 to fold 100,000 nodes")
	}
}

// withRankedParams makes the ranked scan use the defaults as edit changes
// them until the test ends.
func withRankedParams(t testing.TB, edit func(*ranked.Params)) {
	p := ranked.DefaultParams()
	edit(&p)
	match.SetRankedParams(p)
	t.Cleanup(func() { match.SetRankedParams(ranked.DefaultParams()) })
}

func newStore(t testing.TB, policy string) *contextfold.Store {
	t.Helper()
	dir := filepath.Join(t.TempDir(), ".contextfold")
	s, err := contextfold.Open(dir, contextfold.Options{Scrub: contextfold.ScrubOff})
	if err != nil {
		t.Fatal(err)
	}
	if policy != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, contextfold.PolicyFile), []byte(policy), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func demo(t *testing.T, policy string) *contextfold.Store {
	s := newStore(t, policy)
	if _, err := s.FoldBatch(contextfold.DemoTurns()); err != nil {
		t.Fatal(err)
	}
	return s
}

func steps(ps []contextfold.ScanPick) []int {
	var out []int
	for _, p := range ps {
		out = append(out, p.StepID)
	}
	return out
}

func TestParseMode(t *testing.T) {
	for in, want := range map[string]match.Mode{"exact": match.Exact, "Ranked": match.Ranked, " ranked ": match.Ranked} {
		if got, err := match.ParseMode(in); err != nil || got != want {
			t.Errorf("ParseMode(%q) = %q, %v", in, got, err)
		}
	}
	_, err := match.ParseMode("fuzzy")
	if !errors.Is(err, match.ErrUnknownMode) || !strings.Contains(err.Error(), "exact, ranked") {
		t.Errorf("unknown mode: %v", err)
	}
}

func TestStoreMode(t *testing.T) {
	s := demo(t, "")
	if m := match.StoreMode(s); m != match.Exact {
		t.Errorf("no settings: %q", m)
	}
	os.WriteFile(filepath.Join(s.Dir(), contextfold.SettingsFile), []byte(`{"matching": "ranked"}`), 0o644)
	if m := match.StoreMode(s); m != match.Ranked {
		t.Errorf("ranked setting: %q", m)
	}
	os.WriteFile(filepath.Join(s.Dir(), contextfold.SettingsFile), []byte(`{"matching": "bogus"}`), 0o644)
	if m := match.StoreMode(s); m != match.Exact {
		t.Errorf("bogus setting: %q", m)
	}
}

// Exact mode is the reference, unchanged.
func TestExactIsReference(t *testing.T) {
	s := demo(t, "")
	for _, prompt := range []string{contextfold.DemoPrompt, "PostgreSQL port", "thanks, go on", ""} {
		a, err := s.Scan(prompt)
		if err != nil {
			t.Fatal(err)
		}
		b, err := match.Scan(s, prompt, match.Exact)
		if err != nil || !reflect.DeepEqual(a, b) {
			t.Errorf("scan %q differs: %+v vs %+v (%v)", prompt, a, b, err)
		}
		ra, _ := s.Recall(prompt)
		rb, err := match.Recall(s, prompt, match.Exact)
		if err != nil || !reflect.DeepEqual(ra, rb) {
			t.Errorf("recall %q differs", prompt)
		}
	}
	ha, _ := s.Hydrate(342)
	hb, err := match.Hydrate(s, 342, "deadlock", match.Exact)
	if err != nil || !reflect.DeepEqual(ha, hb) {
		t.Errorf("hydrate differs")
	}
}

// The showcase prompt hydrates 342, 137, 447 under ranked too; the older
// nodes of the same intents (37, 91 for the port; 318 for the migration)
// never stand in for them (CONF-13).
func TestRankedDemo(t *testing.T) {
	s := demo(t, "")
	res, err := match.Scan(s, contextfold.DemoPrompt, match.Ranked)
	if err != nil {
		t.Fatal(err)
	}
	if got := steps(res.Selected); !reflect.DeepEqual(got, []int{342, 137, 447}) {
		t.Fatalf("selected %v, want [342 137 447]; %+v", got, res.Selected)
	}
	for _, p := range res.Selected {
		if p.Score <= 0 || len(p.Why) == 0 || len(p.MatchedTerms) == 0 {
			t.Errorf("pick %d has no score or reason: %+v", p.StepID, p)
		}
	}
}

func TestRankedBudgets(t *testing.T) {
	for _, tc := range []struct {
		budget  string
		want    []int
		dropped []int
	}{
		{"25", []int{342}, []int{137, 447}},
		{"30", []int{342, 137}, []int{447}},
		{"60", []int{342, 137, 447}, nil},
	} {
		t.Run(tc.budget, func(t *testing.T) {
			s := demo(t, `{"max_rehydration_tokens_per_turn": `+tc.budget+`}`)
			res, err := match.Scan(s, contextfold.DemoPrompt, match.Ranked)
			if err != nil {
				t.Fatal(err)
			}
			if got, dr := steps(res.Selected), steps(res.Dropped); !reflect.DeepEqual(got, tc.want) || !reflect.DeepEqual(dr, tc.dropped) {
				t.Errorf("selected %v dropped %v, want %v / %v", got, dr, tc.want, tc.dropped)
			}
		})
	}
}

// Intent ownership (CONF-13): the port went 5433 → 5434 → 5433; asking for
// it hydrates the newest node of that intent, never an older one.
func TestRankedIntentOwnership(t *testing.T) {
	s := demo(t, "")
	res, err := match.Scan(s, "which port does PostgreSQL use?", match.Ranked)
	if err != nil {
		t.Fatal(err)
	}
	got := steps(res.Selected)
	if len(got) == 0 || got[0] != 137 {
		t.Fatalf("selected %v, want 137 first", got)
	}
	for _, st := range got {
		if st == 37 || st == 91 {
			t.Errorf("superseded node %d hydrated: %v", st, got)
		}
	}
	hits, err := match.Recall(s, contextfold.DemoRecallQuery, match.Ranked)
	if err != nil || len(hits) < 3 {
		t.Fatalf("recall %v %v", hits, err)
	}
	if hits[0].StepID != 137 || hits[0].Status != contextfold.StatusLatest {
		t.Errorf("recall first %+v", hits[0])
	}
	labels := map[string]bool{}
	for _, h := range hits {
		labels[h.Status] = true
	}
	if !labels[contextfold.StatusHistorical] {
		t.Errorf("no historical label: %+v", hits)
	}
}

func TestRankedNothingToFind(t *testing.T) {
	s := demo(t, "")
	for _, prompt := range []string{"thanks, go on", "now write the README", "ok", "", "?!.,;", "the of and", "Xyzzyq plugh frobnicate",
		strings.Repeat("what is this ", 1000), "\xff\xfe\xfd", "谢谢，继续", "teşekkürler, devam et", "gracias, sigue"} {
		res, err := match.Scan(s, prompt, match.Ranked)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Selected) != 0 {
			t.Errorf("%.40q hydrates %v", prompt, steps(res.Selected))
		}
	}
}

// A large node is hydrated around the matched line, not from its top; the
// whole artifact is still verified first.
func TestFocusedHydration(t *testing.T) {
	s := newStore(t, `{"max_rehydration_tokens_per_call": 100}`)
	var b strings.Builder
	for i := 1; i <= 3000; i++ {
		if i == 666 {
			b.WriteString("ERROR: relation tenant_billing_ledger does not exist\n")
			continue
		}
		b.WriteString("line of an ordinary file view with nothing to see here\n")
	}
	if _, err := s.Fold(contextfold.Turn{StepID: 5, Summary: "cat big.log", RawContent: b.String()}); err != nil {
		t.Fatal(err)
	}
	h, err := match.Hydrate(s, 5, "what did the log say about tenant_billing_ledger?", match.Ranked)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(h.Content, "relation tenant_billing_ledger does not exist") || len(h.Windows) == 0 || h.Windows[0].FirstLine > 666 || h.Windows[0].LastLine < 666 {
		t.Fatalf("focused content misses line 666: %q %+v", h.Content, h.Windows)
	}
	if len([]rune(h.Content)) > 400 || !strings.Contains(h.Content, "[contextfold: lines 664-668") {
		t.Errorf("content %d code points: %q", len([]rune(h.Content)), h.Content)
	}
	if h.RawContent != b.String() || !h.Truncated {
		t.Error("raw content or truncation flag wrong")
	}
	ex, _ := match.Hydrate(s, 5, "tenant_billing_ledger", match.Exact)
	if strings.Contains(ex.Content, "tenant_billing_ledger") {
		t.Error("exact hydration is the prefix truncation")
	}
	// Tampering is refused whatever the mode.
	path := s.NodePath(5)
	data, _ := os.ReadFile(path)
	os.WriteFile(path, []byte(strings.Replace(string(data), "ordinary", "tampered", 1)), 0o644)
	if _, err := match.Hydrate(s, 5, "tenant_billing_ledger", match.Ranked); !errors.Is(err, contextfold.ErrIntegrityCheck) {
		t.Errorf("tampered node: %v", err)
	}
}
