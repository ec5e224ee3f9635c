package ranked

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/internal/cachedir/cachedirtest"
)

func TestMain(m *testing.M) { cachedirtest.Main(m) }

func TestAnalyze(t *testing.T) {
	terms := func(s string) []string {
		var out []string
		for _, t := range Analyze(s) {
			if t.Kind != KindFuzzy {
				out = append(out, t.Text)
			}
		}
		return out
	}
	for in, want := range map[string][]string{
		"TenantBilling":         {"tenantbilling", "tenant", "bill"},
		"tenant billing":        {"tenant", "bill"},
		"test_models.py":        {"test_models.py", "test_models", "test", "model", "py"},
		"failed failures":       {"fail", "failur"},
		"ran 0.33s, 99.9 %":     {"ran", "0.33s", "33s", "33", "99.9", "99"},
		"PostgreSQL":            {"postgresql"},
		"HTTPServer":            {"httpserver", "http", "server"},
		"the of and thanks":     nil,
		"veritabanında":         {"veritaban"},
		"migración fallida":     {"migracion", "fallida"},
		"数据库迁移失败":               {"数据", "据库", "库迁", "迁移", "移失", "失败"},
		"谢谢":                    nil,
		"app.py:42":             {"app.py:42", "app.py", "app", "py", "42"},
		"src/ingest/claude.go:": {"src/ingest/claude.go", "claude.go", "src", "ingest", "claud"},
	} {
		got := terms(in)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("Analyze(%q) = %q, want %q", in, got, want)
		}
	}
}

// Inflected forms share a stem (English, Spanish, Turkish), or at least
// the fuzzy prefix of their stems (failure/failed, bağlantı/bağlantısı).
func TestStemsJoinInflections(t *testing.T) {
	share := func(a, b string) bool {
		for _, x := range Analyze(a) {
			for _, y := range Analyze(b) {
				if x.Text == y.Text {
					return true
				}
			}
		}
		return false
	}
	for _, pair := range [][2]string{{"failed", "failing"}, {"failure", "failed"}, {"migrations", "migration"}, {"postgres", "postgresql"},
		{"veritabanı", "veritabanında"}, {"bağlantısı", "bağlantı"}, {"conexión", "conexiones"}, {"configuración", "configurar"}} {
		if !share(pair[0], pair[1]) {
			t.Errorf("%q and %q share no term: %v / %v", pair[0], pair[1], Analyze(pair[0]), Analyze(pair[1]))
		}
	}
}

// Bad input never panics and gives a result (possibly empty).
func TestBadInput(t *testing.T) {
	ix := NewIndex()
	ix.Add(1, "a", 10, "s", "PostgreSQL port 5433\nmigration failed")
	for _, in := range []string{"", "   ", "?!.,;:", "the of and", strings.Repeat("x", 1<<20), strings.Repeat("日本語 español türkçe ", 50000), "\xff\xfe\x80 port", "a\x00b", strings.Repeat("/", 10000), strings.Repeat("a_", 5000)} {
		r := ix.Scan(in, DefaultParams())
		if r == nil {
			t.Fatal("nil result")
		}
		Focus(in, map[string]float64{"port": 1}, 100)
	}
}

func FuzzScan(f *testing.F) {
	for _, s := range []string{"PostgreSQL port", "thanks, go on", "\xff", "数据库", "a.b/c:1", "TenantBilling_v2"} {
		f.Add(s)
	}
	ix := NewIndex()
	ix.Add(1, "a", 10, "PostgreSQL on 5433", "$ docker compose up -d postgres\nPostgreSQL running on port 5433")
	ix.Add(2, "b", 20, "migration", "Migration V12__TenantBilling.sql failed: deadlock\n数据库迁移失败")
	f.Fuzz(func(t *testing.T, s string) {
		r := ix.Scan(s, DefaultParams())
		if r == nil {
			t.Fatal("nil result")
		}
		text, wins := Focus(s+"\nport 5433\n"+s, map[string]float64{"port": 1, "5433": 2}, 64)
		if wins != nil && len([]rune(text)) > 64 {
			t.Fatalf("focus over its limit: %d", len([]rune(text)))
		}
	})
}

func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			data, _ := os.ReadFile(p)
			fi, _ := d.Info()
			out[p] = fmt.Sprintf("%x %v", data, fi.ModTime())
		}
		return nil
	})
	return out
}

// The ranked index is derived data: it is never written into the store
// (CONF-08), it is kept in the per-user cache, a new process reuses it,
// a fold adds only the new node, and a corrupt cache file is a miss.
func TestIndexCache(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".contextfold")
	s, err := contextfold.Open(dir, contextfold.Options{Scrub: contextfold.ScrubOff})
	if err != nil {
		t.Fatal(err)
	}
	var turns []contextfold.Turn
	for i := range 100 {
		turns = append(turns, contextfold.Turn{StepID: i, Summary: fmt.Sprintf("turn %d", i), RawContent: fmt.Sprintf("output of step %d: value_%d computed\nall fine", i, i*7)})
	}
	if _, err := s.FoldBatch(turns); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, dir)
	ix := NewIndex()
	ix.dir = dir
	if err := ix.Refresh(s); err != nil {
		t.Fatal(err)
	}
	want := ix.Scan("what was value_343?", DefaultParams())
	if ix.read != 100 || len(want.Picks) == 0 || want.Picks[0].Step != 49 {
		t.Fatalf("read %d, picks %+v", ix.read, want.Picks)
	}
	if after := snapshot(t, dir); !reflect.DeepEqual(before, after) {
		t.Error("building the ranked index changed the store")
	}
	path := cachePath(dir, false)
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("no cache file: %v", err)
	}
	// A new process: loads the file, reads no cold node.
	ix2 := load(dir)
	if ix2 == nil {
		t.Fatal("cache not loadable")
	}
	ix2.dir = dir
	if err := ix2.Refresh(s); err != nil {
		t.Fatal(err)
	}
	if got := ix2.Scan("what was value_343?", DefaultParams()); ix2.read != 0 || !reflect.DeepEqual(got, want) {
		t.Errorf("reloaded index: read %d, %+v vs %+v", ix2.read, got, want)
	}
	// A fold: only the new node is read.
	if _, err := s.Fold(contextfold.Turn{StepID: 100, Summary: "new", RawContent: "value_9999 appeared"}); err != nil {
		t.Fatal(err)
	}
	if err := ix2.Refresh(s); err != nil {
		t.Fatal(err)
	}
	if got := ix2.Scan("value_9999", DefaultParams()); ix2.read != 1 || len(got.Picks) == 0 || got.Picks[0].Step != 100 {
		t.Errorf("after a fold: read %d, %+v", ix2.read, got.Picks)
	}
	// A corrupt file is a miss.
	data, _ := os.ReadFile(path)
	data[len(data)-3] ^= 0xff
	os.WriteFile(path, data, 0o600)
	if load(dir) != nil {
		t.Error("a corrupt cache file was used")
	}
	os.WriteFile(path, data[:len(data)/2], 0o600)
	if load(dir) != nil {
		t.Error("a truncated cache file was used")
	}
}

// Same store, same prompt: same picks, in the same order, every time.
func TestDeterminism(t *testing.T) {
	build := func() *Index {
		ix := NewIndex()
		for i := range 50 {
			ix.Add(i, fmt.Sprint(i), 10+i, "s", fmt.Sprintf("port %d config.env postgres migration step %d", 5400+i%3, i%5))
		}
		return ix
	}
	a := build().Scan("which port does postgres use in config.env?", DefaultParams())
	b := build().Scan("which port does postgres use in config.env?", DefaultParams())
	if !reflect.DeepEqual(a, b) || len(a.Picks) == 0 {
		t.Errorf("%+v\n%+v", a, b)
	}
}

// convIndex is a small conversation: filler turns, a run of turns about a
// trip (steps 20–22), and one far-off turn that shares a word with it.
func convIndex() *Index {
	ix := NewIndex()
	filler := []string{"Ana: I cooked pasta tonight", "Ben: my cat slept all day", "Ana: work was busy again", "Ben: the weather turned cold",
		"Ana: I read a novel", "Ben: we painted the fence", "Ana: my sister called", "Ben: I fixed the bike"}
	for i := range 40 {
		ix.Add(i, fmt.Sprint("a", i), 10, "s", filler[i%len(filler)]+fmt.Sprintf(" (day %d)", i))
	}
	ix.Add(20, "t20", 12, "s", "Ben: how was the canyon hike with your kids?")
	ix.Add(21, "t21", 14, "s", "Ana: the canyon hike was long but the kids loved the view")
	ix.Add(22, "t22", 12, "s", "Ana: a rattlesnake near the trail, that was scary")
	ix.Add(35, "t35", 12, "s", "Ben: the line at the bank was scary")
	return ix
}

// Rule "topic context": between two nodes that hold the same prompt word,
// the one next to the strongest match ranks first (the rattlesnake turn
// after the hike, not the bank queue 13 steps away, which is newer and
// wins the tie without the rule).
func TestTopicContext(t *testing.T) {
	const prompt = "What was scary on the canyon hike?"
	r := convIndex().Scan(prompt, DefaultParams())
	pos := map[int]int{}
	for i, p := range r.Picks {
		pos[p.Step] = i + 1
	}
	if pos[21] != 1 || pos[22] == 0 || pos[35] == 0 || pos[35] < pos[22] {
		t.Fatalf("picks %+v", r.Picks)
	}
	off := DefaultParams()
	off.Context1, off.Context2 = 0, 0
	r = convIndex().Scan(prompt, off)
	pos = map[int]int{}
	for i, p := range r.Picks {
		pos[p.Step] = i + 1
	}
	if pos[35] == 0 || pos[22] < pos[35] {
		t.Fatalf("without topic context: picks %+v", r.Picks)
	}
}

// Topic context orders the nodes that pass the cut-off; it never lets a
// node with no prompt term of its own through (a filler turn next to the
// answer is not hydrated).
func TestTopicContextNeedsOwnTerm(t *testing.T) {
	ix := NewIndex()
	for i := range 30 {
		ix.Add(i, fmt.Sprint(i), 10, "s", fmt.Sprintf("routine output number %d", i))
	}
	ix.Add(30, "x", 10, "s", "the ledger_sync job failed on a lock timeout")
	ix.Add(31, "y", 4, "s", "noted, moving on")
	r := ix.Scan("what happened with the ledger_sync lock timeout", DefaultParams())
	if len(r.Picks) == 0 || r.Picks[0].Step != 30 {
		t.Fatalf("picks %+v", r.Picks)
	}
	for _, p := range r.Picks {
		if p.Step == 31 || p.Step == 29 {
			t.Errorf("neighbour without a prompt term picked: %+v", p)
		}
	}
}

// The alias table is analysed like any text: its keys and names are terms
// a prompt and a cold node produce.
func TestAliases(t *testing.T) {
	for from, want := range map[string][]string{"linker": {"ld", "collect2"}, "ld": {"linker"}, "crash": {"panic", "traceback"}, "segfault": {"sigsegv"}} {
		for _, w := range want {
			if !contains(aliases[from], w) {
				t.Errorf("aliases[%q] = %q, want %q in it", from, aliases[from], w)
			}
		}
	}
	if len(aliases["memory"]) != 0 || len(aliases["build"]) != 0 {
		t.Errorf("one-directional entries went both ways: memory %q, build %q", aliases["memory"], aliases["build"])
	}
	// A prompt with the role word looks for the names; the Why says so.
	ix := NewIndex()
	ix.Add(1, "a", 10, "make", "cc -c a.c\nld: error: undefined symbol: foo\ncollect2: error: ld returned 1 exit status")
	for i := 2; i < 30; i++ {
		ix.Add(i, "a", 10, "step", fmt.Sprintf("step %d compiled fine", i))
	}
	r := ix.Scan("what did the linker complain about?", DefaultParams())
	if len(r.Picks) == 0 || r.Picks[0].Step != 1 || !strings.Contains(strings.Join(r.Picks[0].Why, ";"), `name in tool output for "linker"`) {
		t.Errorf("picks %+v", r.Picks)
	}
}

func TestStripAgentMarkup(t *testing.T) {
	for in, want := range map[string]string{
		"<system-reminder>\nThe date is Tuesday.\n</system-reminder>\nwhat did the linker say?": "\nwhat did the linker say?",
		"a <environment_context><cwd>/x</cwd></environment_context> b":                          "a  b",
		"<system-reminder>x</system-reminder><system-reminder>y</system-reminder>q":             "q",
		"<system-reminderish>kept</system-reminderish> <system-reminder>gone</system-reminder>": "<system-reminderish>kept</system-reminderish> ",
		"<system-reminder>never closed":                                                         "<system-reminder>never closed",
		"plain prompt":                                                                          "plain prompt",
		"<local-command-caveat>Run directly in Claude Code.</local-command-caveat>\n<command-name>/compact</command-name>\n  <command-message>compact</command-message>\n  <command-args></command-args>\n<local-command-stdout>Compacted (ctrl+o to see full summary)</local-command-stdout>\nwhat did the linker say?": "\n\n  \n  \n\nwhat did the linker say?",
	} {
		if got := stripAgentMarkup(in); got != want {
			t.Errorf("stripAgentMarkup(%q) = %q, want %q", in, got, want)
		}
	}
}

// Rule "cover, then rank": once the first pick covers most of the prompt's
// term weight, a second turn about the same event (its words covered)
// comes before a turn holding only the one weak word left uncovered; the
// set cover's old discount (0.1, always) put the weak word first.
func TestCoverThenRank(t *testing.T) {
	ix := NewIndex()
	for i := range 40 {
		text := fmt.Sprintf("Ana: routine day number %d", i)
		if i < 5 {
			text = fmt.Sprintf("Ben: I feel fine on day %d", i)
		}
		switch i {
		case 10:
			text = "Ana: the canyon hike was great"
		case 25:
			text = "Ana: another canyon hike next week"
		case 35:
			text = "Ben: I feel tired today"
		}
		ix.Add(i, fmt.Sprint(i), 10, "s", text)
	}
	order := func(p Params) []int {
		var out []int
		for _, pk := range ix.Scan("how did the canyon hike feel", p).Picks {
			out = append(out, pk.Step)
		}
		return out
	}
	pos := func(steps []int, s int) int {
		for i, x := range steps {
			if x == s {
				return i
			}
		}
		return len(steps)
	}
	// The turns that hold only "feel": 0–4 and 35.
	firstFeel := func(steps []int) int {
		m := len(steps)
		for _, s := range []int{0, 1, 2, 3, 4, 35} {
			m = min(m, pos(steps, s))
		}
		return m
	}
	got := order(DefaultParams())
	if len(got) < 3 || got[0] != 10 || pos(got, 25) > firstFeel(got) {
		t.Fatalf("picks %v: want 10, then 25 before every turn holding only \"feel\"", got)
	}
	old := DefaultParams()
	old.Covered, old.CoverShare = 0.1, 0
	if got := order(old); firstFeel(got) > pos(got, 25) {
		t.Fatalf("with the always-on discount: picks %v, want a \"feel\" turn before 25", got)
	}
}

// Rule "dates": a year is a weak number (KindNumber: never a specific
// term, an unknown one barely counts as information the archive lacks); a
// port number stays a word.
func TestYearIsWeak(t *testing.T) {
	kinds := map[string]Kind{}
	for _, tm := range Analyze("in 2023 on port 5433, 1999 and 2150") {
		kinds[tm.Text] = tm.Kind
	}
	if kinds["2023"] != KindNumber || kinds["1999"] != KindNumber || kinds["5433"] != KindWord || kinds["2150"] != KindWord {
		t.Fatalf("kinds %v", kinds)
	}
}

// Rule "a when-question is answered by a time": of two turns about the
// same event, the one that says when it happened ranks first for a
// question that asks when; without the rule the turn holding more of the
// question's words wins. A question that asks no "when" is ranked as
// before, and "when" as a conjunction asks for no time.
func TestWhenQuestionPrefersATime(t *testing.T) {
	ix := NewIndex()
	for i := range 40 {
		ix.Add(i, fmt.Sprint(i), 10, "s", fmt.Sprintf("Ana: routine chat number %d about the garden", i))
	}
	ix.Add(40, "a", 10, "s", "Ben: the pottery class was fun, the pottery teacher is kind")
	ix.Add(41, "b", 10, "s", "Ana: nice!")
	ix.Add(42, "c", 10, "s", "Ben: I signed up for a pottery class yesterday")
	first := func(prompt string, p Params) int {
		r := ix.Scan(prompt, p)
		if len(r.Picks) == 0 {
			t.Fatalf("%q: no picks", prompt)
		}
		return r.Picks[0].Step
	}
	off := DefaultParams()
	off.When = 0
	const q = "When did Ben go to the pottery class?"
	if got := first(q, DefaultParams()); got != 42 {
		t.Errorf("%q: first pick %d, want 42 (the turn that says when)", q, got)
	}
	if got := first(q, off); got != 40 {
		t.Errorf("%q without the rule: first pick %d, want 40 (the test needs the rule)", q, got)
	}
	if why := strings.Join(ix.Scan(q, DefaultParams()).Picks[0].Why, "; "); !strings.Contains(why, "says when") {
		t.Errorf("%q: the first pick's why %q does not name the rule", q, why)
	}
	const plain = "What did Ben say about the pottery class?"
	if a, b := first(plain, DefaultParams()), first(plain, off); a != b {
		t.Errorf("%q: first pick %d with the rule, %d without: a question that asks no time must rank as before", plain, a, b)
	}
	for prompt, want := range map[string]bool{
		"When did Ben go?": true, "what year did we move": true, "how long ago was it": true,
		"¿Cuándo falló la migración?": true, "Migration ne zaman başarısız oldu?": true, "迁移什么时候失败的": true,
		"what did it print when I ran the tests": false, "what did Ben make": false,
	} {
		if got := asksWhen(prompt); got != want {
			t.Errorf("asksWhen(%q) = %v, want %v", prompt, got, want)
		}
	}
}

// Rule "the person named speaks": of two turns about the same thing, the
// one spoken by the person the question names ranks first; without the
// rule the turn holding the question's words more often wins. Nodes
// without a speaker label, and prompts naming nobody, rank as before.
func TestNamedPersonSpeaks(t *testing.T) {
	build := func(label func(i int, who string) string) *Index {
		ix := NewIndex()
		for i := range 40 {
			who := []string{"Ana", "Ben"}[i%2]
			text := fmt.Sprintf("routine chat number %d about the garden", i)
			ix.Add(i, fmt.Sprint(i), 10, label(i, who)+text, label(i, who)+text)
		}
		add := func(step int, who, text string) {
			ix.Add(step, fmt.Sprint(step), 10, label(step, who)+text, label(step, who)+text)
		}
		add(40, "Ben", "Ana said the pottery class, the pottery teacher and the pottery wheel are great")
		add(41, "Ana", "nice!")
		add(42, "Ana", "I love the pottery class")
		return ix
	}
	chat := build(func(_ int, who string) string { return "[8 May, 2023] " + who + ": " })
	off := DefaultParams()
	off.Speaker = 0
	first := func(ix *Index, prompt string, p Params) int {
		r := ix.Scan(prompt, p)
		if len(r.Picks) == 0 {
			t.Fatalf("%q: no picks", prompt)
		}
		return r.Picks[0].Step
	}
	const q = "What does Ana think of the pottery class?"
	if got := first(chat, q, DefaultParams()); got != 42 {
		t.Errorf("%q: first pick %d, want 42 (Ana's own turn)", q, got)
	}
	if got := first(chat, q, off); got != 40 {
		t.Errorf("%q without the rule: first pick %d, want 40 (the test needs the rule)", q, got)
	}
	if why := strings.Join(chat.Scan(q, DefaultParams()).Picks[0].Why, "; "); !strings.Contains(why, "spoken by Ana") {
		t.Errorf("%q: the first pick's why %q does not name the rule", q, why)
	}
	if a, b := first(chat, "what about the pottery class?", DefaultParams()), first(chat, "what about the pottery class?", off); a != b {
		t.Errorf("a prompt naming nobody: first pick %d with the rule, %d without", a, b)
	}
	plain := build(func(int, string) string { return "" })
	if a, b := first(plain, q, DefaultParams()), first(plain, q, off); a != b {
		t.Errorf("nodes without a speaker label: first pick %d with the rule, %d without", a, b)
	}
	for summary, want := range map[string]string{
		"Caroline: hi": "Caroline", "[8 May, 2023] Mary-Jane O'Neil: ok": "Mary-Jane", "error: file not found": "",
		"Step 3: run": "", "[x]": "", "a long sentence that is no label at all Bob: hi": "",
	} {
		if got := speakerOf(summary); got != want {
			t.Errorf("speakerOf(%q) = %q, want %q", summary, got, want)
		}
	}
}

// Rule "a chat's topic admits": in a chat log, the reply two turns after
// the strongest match, holding one of the prompt's words, passes a
// cut-off it would miss elsewhere; without the rule, or when the nodes
// carry no speaker label (an agent session), it stays below the cut-off.
// A filler turn beside the match, holding no prompt word, never passes.
func TestChatTopicAdmits(t *testing.T) {
	build := func(label func(who string) string) *Index {
		ix := NewIndex()
		add := func(step int, who, text string) {
			ix.Add(step, fmt.Sprint(step), 10, label(who)+text, label(who)+text)
		}
		for i := range 60 {
			add(i, []string{"Ana", "Ben"}[i%2], fmt.Sprintf("routine chat number %d about the garden and the weather", i))
		}
		for i, w := range []string{"music", "music", "band", "band", "band"} {
			add(60+i, "Ana", "the "+w+" was loud")
		}
		add(70, "Ana", "we went to the jazz concert for the birthday with the kids")
		add(71, "Ben", "wow, nice!")
		add(72, "Ana", "the band was great, music all night")
		return ix
	}
	const q = "Which band played at the jazz concert for the birthday?"
	has := func(ix *Index, p Params, step int) bool {
		for _, pk := range ix.Scan(q, p).Picks {
			if pk.Step == step {
				return true
			}
		}
		return false
	}
	chat := build(func(who string) string { return who + ": " })
	off := DefaultParams()
	off.Near = 0
	if !has(chat, DefaultParams(), 72) {
		t.Errorf("chat: the band reply (72) is not picked: %+v", chat.Scan(q, DefaultParams()).Picks)
	}
	for _, pk := range chat.Scan(q, DefaultParams()).Picks {
		if pk.Step == 72 && !strings.Contains(strings.Join(pk.Why, "; "), "a chat's topic admits") {
			t.Errorf("72's why %q does not name the rule", pk.Why)
		}
	}
	if has(chat, off, 72) {
		t.Errorf("chat without the rule: 72 picked, the test needs the rule: %+v", chat.Scan(q, off).Picks)
	}
	for _, pk := range chat.Scan(q, DefaultParams()).Picks {
		if pk.Step == 71 && !pk.IsCompanion {
			t.Errorf("the filler turn 71 was picked on its own: %+v", pk)
		}
	}
	plain := build(func(string) string { return "" })
	if has(plain, DefaultParams(), 72) {
		t.Errorf("nodes without a speaker label: 72 picked: %+v", plain.Scan(q, DefaultParams()).Picks)
	}
}

// Rule Params.FindCommon: in a large store, a term held by more than
// FindCommon of the nodes finds no candidates when the prompt has a rarer
// term (the rarer term's nodes are the candidates; the common term still
// scores them); a prompt whose terms are all that common still walks them.
func TestFindCommonTerms(t *testing.T) {
	ix := NewIndex()
	n := commonMinNodes + 100
	for i := range n {
		text := fmt.Sprintf("note %d filler", i)
		switch i % 5 {
		case 0:
			text += " widget"
		case 1:
			text += " gadget"
		}
		if i == 7 {
			text += " widget gadget widget gadget"
		}
		if i == 3 {
			text += " zanzibar"
		}
		ix.Add(i, fmt.Sprint(i), 10, "s", text)
	}
	p := DefaultParams()
	r := ix.Scan("widget zanzibar", p)
	if len(r.Picks) == 0 || r.Picks[0].Step != 3 {
		t.Fatalf("widget zanzibar: picks %+v, want step 3 first", r.Picks)
	}
	// Candidates are the rare term's node and its topic-context neighbours.
	far := func(r *Result) (steps []int) {
		for _, pk := range append(append([]Pick{}, r.Picks...), r.CutOff...) {
			if pk.Step < 3-3 || pk.Step > 3+3 {
				steps = append(steps, pk.Step)
			}
		}
		return steps
	}
	if f := far(r); len(f) > 0 {
		t.Errorf("widget zanzibar: steps %v (widget only, far from step 3) were candidates", f)
	}
	walkAll := p
	walkAll.FindCommon = 1
	if f := far(ix.Scan("widget zanzibar", walkAll)); len(f) == 0 {
		t.Error("with every term walked, widget's nodes far from step 3 should be candidates too (the test would not see the rule)")
	}
	// Only common terms: they are walked, and the node holding both wins.
	r = ix.Scan("widget gadget", p)
	if len(r.Picks) == 0 || r.Picks[0].Step != 7 {
		t.Fatalf("widget gadget: picks %+v, want step 7 first (common terms only are still walked)", r.Picks)
	}
}

// A node is a question turn when its last line asks: a message that asks
// in passing and then goes on, or a run of messages folded as one whose
// last one states something, is not.
func TestIsQuestionLastLine(t *testing.T) {
	for text, want := range map[string]bool{
		"Melanie: any fun plans for the summer?":                                  true,
		"Melanie: we went camping. Any fun plans?\n\n":                            true,
		"Caroline: How are your pets?\nMelanie: Luna and Oliver are doing great.": false,
		"what did the build say?\nthe linker failed on libfoo":                    false,
		"Caroline: I painted a lake at sunset.":                                   false,
		"これは何ですか？":                                                                true,
	} {
		if got := isQuestion(text); got != want {
			t.Errorf("isQuestion(%q) = %v, want %v", text, got, want)
		}
	}
}

// Rule "tool and failure names", its definition entry: "where is X
// defined" also looks for the languages' definition keywords.
func TestDefinedLooksForTheDefinitionKeyword(t *testing.T) {
	for _, w := range []string{"def", "func", "fn"} {
		if !contains(aliases["defin"], w) || !contains(aliases["declar"], w) {
			t.Errorf("aliases of defined / declared: %q / %q, want %q in both", aliases["defin"], aliases["declar"], w)
		}
	}
}
