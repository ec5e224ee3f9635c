package matcheval

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/ingest"

	"github.com/contextfold/contextfold/match"
)

// The short LoCoMo run (two conversations, ~800 turns, a few seconds): the
// ranked scan finds clearly more evidence turns than the exact scan at the
// same budget. The full run is `go run ./cmd/cfeval locomo` (BENCHMARKS.md).
func TestLoCoMoShort(t *testing.T) {
	data, err := LoadLoCoMo("testdata/locomo/locomo10.json.gz")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := RunLoCoMo(data, t.TempDir(), 5, 2)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", rep.Format())
	ex, rk, bm := rep.Overall[MethodExact].Mean(), rep.Overall[MethodRanked].Mean(), rep.Overall[MethodBM25].Mean()
	if rep.Conversations != 2 || rep.Overall[MethodRanked].Questions < 250 {
		t.Fatalf("ran %d conversations, %d questions", rep.Conversations, rep.Overall[MethodRanked].Questions)
	}
	if rk < ex+15 || rk < bm || rk < 55 {
		t.Errorf("ranked %.1f %%, exact %.1f %%, BM25 %.1f %%", rk, ex, bm)
	}
}

// The agent-session probes over the bundled transcripts: ranked answers at
// least 95 % of them, and filler prompts hydrate nothing.
func TestProbes(t *testing.T) {
	rep, err := RunProbes(filepath.Join("..", "..", "ingest", "testdata", "transcripts"), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", rep.Format(true))
	if rep.Sessions < 6 || rep.Probes < 100 {
		t.Fatalf("%d sessions, %d probes", rep.Sessions, rep.Probes)
	}
	hits := 0
	for _, r := range rep.Results[match.Ranked] {
		if r.Hit {
			hits++
		}
	}
	if float64(hits) < 0.95*float64(len(rep.Results[match.Ranked])) {
		t.Errorf("ranked hits %d of %d", hits, len(rep.Results[match.Ranked]))
	}
	for _, q := range []string{"thanks, go on", "ok", "looks good, please continue", "great, what's next?", "gracias, sigue", "teşekkürler, devam et", "谢谢，继续"} {
		if n := rep.Nulls[match.Ranked][q]; n != 0 {
			t.Errorf("%q hydrated %d tokens", q, n)
		}
	}
}

// Probes are generated deterministically.
func TestProbesDeterministic(t *testing.T) {
	res, err := ingest.ParseFile(filepath.Join("..", "..", "ingest", "testdata", "transcripts", "claude-code", "ledger-api-session.jsonl"), ingest.FormatAuto)
	if err != nil {
		t.Fatal(err)
	}
	var turns []contextfold.Turn
	for _, tr := range res.Turns {
		turns = append(turns, contextfold.Turn{StepID: tr.StepID, Summary: tr.Summary, RawContent: tr.Payload})
	}
	a, b := GenerateProbes("s", turns), GenerateProbes("s", turns)
	if len(a) < 10 || !reflect.DeepEqual(a, b) {
		t.Fatalf("%d probes; deterministic: %v", len(a), reflect.DeepEqual(a, b))
	}
	for _, p := range a {
		if !strings.Contains(p.Question, p.Identifier) || !strings.Contains(p.Answer, p.Identifier) {
			t.Errorf("probe %+v", p)
		}
	}
}

// A turn folded from a dated session carries the session's date (without
// the time of day) in its payload, as a chat client shows it; a file
// without dates folds the turn as before.
func TestTurnPayloadCarriesTheSessionDate(t *testing.T) {
	s := LoCoMoSample{Conversation: map[string]json.RawMessage{
		"session_1_date_time": json.RawMessage(`"1:56 pm on 8 May, 2023"`),
		"session_1":           json.RawMessage(`[{"speaker":"Ana","dia_id":"D1:1","text":"I went yesterday."}]`),
		"session_2":           json.RawMessage(`[{"speaker":"Ben","dia_id":"D2:1","text":"Nice.","blip_caption":"a cat"}]`),
	}}
	turns := s.Turns()
	if len(turns) != 2 {
		t.Fatalf("turns %+v", turns)
	}
	if got, want := TurnPayload(turns[0]), "[8 May 2023] Ana: I went yesterday."; got != want {
		t.Errorf("payload %q, want %q", got, want)
	}
	if got, want := TurnPayload(turns[1]), "Ben: Nice. [shares a photo: a cat]"; got != want {
		t.Errorf("undated payload %q, want %q", got, want)
	}
	for in, want := range map[string]string{"10:37 AM on 27 June, 2023": "27 June 2023", "2023-05-08 13:56": "8 May 2023",
		"2023-05-08T13:56:00Z": "8 May 2023", "evening on the third day": "the third day", "spring": "spring"} {
		if got := sessionDate(in); got != want {
			t.Errorf("sessionDate(%q) = %q, want %q", in, got, want)
		}
	}
}

// Combine puts every conversation's sessions into one, in order, with
// dia_ids and evidence prefixed by the conversation, so that equal dia_ids
// of two conversations stay apart and every evidence id still names its turn.
func TestCombineKeepsEvidenceApart(t *testing.T) {
	mk := func(text, date string) LoCoMoSample {
		return LoCoMoSample{
			Conversation: map[string]json.RawMessage{
				"session_1":           json.RawMessage(`[{"speaker":"A","dia_id":"D1:1","text":"` + text + ` one"},{"speaker":"B","dia_id":"D1:2","text":"` + text + ` two"}]`),
				"session_1_date_time": json.RawMessage(`"` + date + `"`),
			},
			QA: []LoCoMoQA{{Question: "q " + text, Evidence: []string{"D1:2; D1:1"}, Category: 4}},
		}
	}
	got, err := Combine(LoCoMo{mk("alpha", "1:56 pm on 8 May, 2023"), mk("beta", "9 June 2023")})
	if err != nil || len(got) != 1 {
		t.Fatalf("Combine: %v, %d samples", err, len(got))
	}
	turns := got[0].Turns()
	var ids []string
	for _, tu := range turns {
		ids = append(ids, tu.DiaID+"="+tu.Text+"@"+tu.DateTime)
	}
	want := []string{"C0/D1:1=alpha one@1:56 pm on 8 May, 2023", "C0/D1:2=alpha two@1:56 pm on 8 May, 2023", "C1/D1:1=beta one@9 June 2023", "C1/D1:2=beta two@9 June 2023"}
	if strings.Join(ids, "|") != strings.Join(want, "|") {
		t.Errorf("turns:\n%v\nwant\n%v", ids, want)
	}
	if len(got[0].QA) != 2 || strings.Join(got[0].QA[1].Evidence, ",") != "C1/D1:2,C1/D1:1" {
		t.Errorf("QA: %+v", got[0].QA)
	}
}

// End-of-session needle probes on two of the long mini-swe-agent sessions
// (cfeval corpus runs all 25): ranked hydrates the line holding the
// quoted token for at least 95 % of them, exact for clearly fewer, and the
// null prompts hydrate nothing in ranked mode.
func TestNeedleProbesShort(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"django__django-13112.traj.json", "sympy__sympy-22080.traj.json"} {
		src, err := filepath.Abs(filepath.Join("..", "..", "ingest", "testdata", "transcripts", "mini-swe-agent", "corpus", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(src, filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := RunNeedleProbes(dir, t.TempDir(), 40)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", rep.Format(true))
	hits := map[match.Mode]int{}
	for _, m := range []match.Mode{match.Exact, match.Ranked} {
		for _, r := range rep.Results[m] {
			if r.Hit {
				hits[m]++
			}
		}
	}
	if rep.Sessions != 2 || rep.Probes < 60 {
		t.Fatalf("%d sessions, %d probes", rep.Sessions, rep.Probes)
	}
	if float64(hits[match.Ranked]) < 0.95*float64(rep.Probes) || hits[match.Exact] >= hits[match.Ranked] {
		t.Errorf("ranked %d, exact %d of %d", hits[match.Ranked], hits[match.Exact], rep.Probes)
	}
	for q, n := range rep.Nulls[match.Ranked] {
		if n != 0 {
			t.Errorf("%q hydrated %d tokens", q, n)
		}
	}
}

// The uneven perturbation (LoCoMoOptions.Uneven) is deterministic, keeps
// every turn's words in some node, and does split turns and merge runs:
// its node count differs from the turn count and its node lengths spread
// wider than the turns'.
func TestUnevenNodes(t *testing.T) {
	data, err := LoadLoCoMo("testdata/locomo/locomo10.json.gz")
	if err != nil {
		t.Fatal(err)
	}
	turns := data[0].Turns()
	a, b := unevenNodes(turns, true, 0), unevenNodes(turns, true, 0)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("unevenNodes is not deterministic")
	}
	where := map[string]int{}
	split, merged := 0, 0
	for _, n := range a {
		for _, id := range n.diaIDs {
			where[id]++
		}
		if len(n.diaIDs) > 1 {
			merged++
		}
	}
	for _, tr := range turns {
		switch where[tr.DiaID] {
		case 0:
			t.Fatalf("turn %s is in no node", tr.DiaID)
		case 1:
		default:
			split++
		}
	}
	if split == 0 || merged == 0 {
		t.Fatalf("%d turns split, %d merged nodes", split, merged)
	}
	spread := func(texts []string) float64 { // the longest over the mean length
		total, longest := 0, 0
		for _, s := range texts {
			total += len(s)
			longest = max(longest, len(s))
		}
		return float64(longest) * float64(len(texts)) / float64(total)
	}
	var plain, uneven []string
	for _, n := range plainNodes(turns, true) {
		plain = append(plain, n.payload)
	}
	for _, n := range a {
		uneven = append(uneven, n.payload)
	}
	if spread(uneven) <= spread(plain) {
		t.Errorf("uneven lengths spread %.1f, plain %.1f", spread(uneven), spread(plain))
	}
}

// Reword leaves out every other word the question shares with what its
// evidence says (the speaker label does not count), keeps the rest and the
// question mark, and is deterministic.
func TestReword(t *testing.T) {
	ev := []string{"Caroline: I went to the LGBTQ support group yesterday and it was so powerful."}
	q := "When did Caroline go to the LGBTQ support group?"
	got := Reword(q, ev)
	if want := "When did Caroline go to the support ?"; got != want {
		t.Errorf("Reword = %q, want %q", got, want)
	}
	if again := Reword(q, ev); again != got {
		t.Errorf("not deterministic: %q then %q", got, again)
	}
	if got := Reword("What is her favourite colour?", ev); got != "What is her favourite colour?" {
		t.Errorf("a question sharing no word changed: %q", got)
	}
}

// The noisy perturbation (LoCoMoOptions.Noisy) is deterministic, keeps
// every dia_id once and in order, writes speakers under handles and adds
// filler turns that are no evidence.
func TestNoisyTurns(t *testing.T) {
	var turns []DialogTurn
	for i := range 200 {
		sp := []string{"Caroline", "Melanie"}[i%2]
		turns = append(turns, DialogTurn{Speaker: sp, DiaID: fmt.Sprintf("D1:%d", i), Text: "Thanks, you are really going to love the pottery class because it is awesome."})
	}
	a, b := noisyTurns(turns, nil, 3, nil), noisyTurns(turns, nil, 3, nil)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("noisyTurns is not deterministic")
	}
	var ids []string
	filler, chat := 0, 0
	for _, n := range a {
		if n.Speaker == "Caroline" || n.Speaker == "Melanie" || !strings.HasPrefix(n.Speaker, strings.ToLower(n.Speaker[:3])) {
			t.Fatalf("speaker %q is not a handle", n.Speaker)
		}
		if n.DiaID == "" {
			filler++
			continue
		}
		ids = append(ids, n.DiaID)
		if strings.Contains(n.Text, " u ") || strings.Contains(n.Text, " bc ") {
			chat++
		}
	}
	if len(ids) != len(turns) || ids[0] != "D1:0" || ids[len(ids)-1] != "D1:199" {
		t.Fatalf("dia_ids %d, first %v", len(ids), ids[:1])
	}
	if filler < 30 || filler > 90 || chat < 100 {
		t.Errorf("filler turns %d, turns with a chat spelling %d", filler, chat)
	}
	typo := 0
	for i, n := range noisyTurns(turns, nil, 3, []string{NoisyTypos}) {
		if n.Text != turns[i].Text {
			typo++
		}
	}
	if typo == 0 || typo > 100 {
		t.Errorf("typos in %d of 200 turns", typo)
	}
	if one := noisyTurns(turns, nil, 3, []string{NoisyHandles}); len(one) != len(turns) || one[0].Text != turns[0].Text {
		t.Errorf("handles only: %d turns, first %q", len(one), one[0].Text)
	}
}
