package inspect

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/internal/procmem"
)

// longSessionSteps is the length of the long session the timeline is
// measured on: an agent session of 213 folded turns.
const longSessionSteps = 213

// longSessionTurn is turn i of a long agent session whose tool outputs name
// many files (grep and find listings, test runs, tracebacks): a timeline row
// lists every file, command and error the turn's index entry holds, so rows
// of such turns are heavy. Deterministic: the same turn for the same i.
func longSessionTurn(i int) contextfold.Turn {
	var b strings.Builder
	files := 12 + (i*37)%260
	var summary string
	switch i % 4 {
	case 0:
		summary = fmt.Sprintf("tool bash $ grep -rn handler_%d src/: %d matches", i, files)
		fmt.Fprintf(&b, "$ grep -rn handler_%d src/\n", i)
		for j := 0; j < files; j++ {
			fmt.Fprintf(&b, "src/pkg%02d/module_%03d_%03d.py:%d:    return handler_%d(request, ctx_%d)\n", j%17, i, j, 10+j*3, i, j)
		}
	case 1:
		summary = fmt.Sprintf("tool bash $ find . -name '*.py' -newer build/stamp_%d", i)
		fmt.Fprintf(&b, "$ find . -name '*.py' -newer build/stamp_%d\n", i)
		for j := 0; j < files; j++ {
			fmt.Fprintf(&b, "./lib/area%02d/file_%03d_%03d.py\n", j%23, i, j)
		}
	case 2:
		summary = fmt.Sprintf("tool bash $ python -m pytest tests/test_step_%d.py: FAILED", i)
		fmt.Fprintf(&b, "$ python -m pytest tests/test_step_%d.py -x\n", i)
		for j := 0; j < files/2; j++ {
			fmt.Fprintf(&b, "tests/unit/test_case_%03d_%03d.py::test_%d PASSED\n", i, j, j)
		}
		fmt.Fprintf(&b, "Traceback (most recent call last):\n  File \"src/core/engine_%d.py\", line %d, in run\n", i, 40+i)
		fmt.Fprintf(&b, "ValueError: invalid state for job %d\nAssertionError: expected %d rows\nFAILED tests/test_step_%d.py::test_run - ValueError\n", i, i*3, i)
	default:
		summary = fmt.Sprintf("assistant: edited src/core/engine_%d.py and reran the build", i)
		fmt.Fprintf(&b, "I changed src/core/engine_%d.py to check the state first.\n$ make build\n", i)
		for j := 0; j < files/3; j++ {
			fmt.Fprintf(&b, "cc -c obj/unit_%03d_%03d.c -o obj/unit_%03d_%03d.o\n", i, j, i, j)
		}
	}
	return contextfold.Turn{StepID: i, Summary: summary, RawContent: b.String(), SessionID: "long-session"}
}

var (
	longSessionOnce sync.Once
	longSessionRoot string // removed by TestMain
	longSessionDir  string
	longSessionErr  error
)

// longSession returns a store (shared by the tests and benchmarks of this
// package; never written after it is built) holding the 213-turn session.
func longSession(t testing.TB) string {
	t.Helper()
	longSessionOnce.Do(func() {
		longSessionRoot, longSessionErr = os.MkdirTemp("", "inspect-long-")
		if longSessionErr != nil {
			return
		}
		longSessionDir = filepath.Join(longSessionRoot, ".contextfold")
		s, err := contextfold.Open(longSessionDir, contextfold.Options{Clock: testClock()})
		if err != nil {
			longSessionErr = err
			return
		}
		turns := make([]contextfold.Turn, longSessionSteps)
		for i := range turns {
			turns[i] = longSessionTurn(i)
		}
		_, longSessionErr = s.FoldBatch(turns)
	})
	if longSessionErr != nil {
		t.Fatal(longSessionErr)
	}
	return longSessionDir
}

var stepRowID = regexp.MustCompile(`<tr id="step-(-?\d+)"`)

// rowsOf returns the step ids of the timeline rows of an HTML page, in order.
func rowsOf(body string) []int {
	var ids []int
	for _, m := range stepRowID.FindAllStringSubmatch(body, -1) {
		n, _ := strconv.Atoi(m[1])
		ids = append(ids, n)
	}
	return ids
}

// nextLink returns the href of the timeline's "next page" link, "" if none.
func nextLink(body string) string {
	m := regexp.MustCompile(`<a id="page-next" href="([^"]+)"`).FindStringSubmatch(body)
	if m == nil {
		return ""
	}
	return strings.ReplaceAll(m[1], "&amp;", "&")
}

// The timeline of a long session comes in pages: the first page holds at
// most the default page size of rows, each a bounded size however many
// files its turn names, and following "next" from page to page visits every
// step once, in order.
func TestTimelinePagesALongSession(t *testing.T) {
	srv := serve(t, longSession(t), Options{})
	resp, body := get(t, srv, "/")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /: %d", resp.StatusCode)
	}
	if n := len(body); n > 256<<10 {
		t.Errorf("the timeline's first page of a %d-step session is %d bytes; want at most 256 KiB (paged, tags capped)", longSessionSteps, n)
	}
	first := rowsOf(body)
	if len(first) == 0 || len(first) > defaultPageSize {
		t.Fatalf("first page has %d rows; want 1..%d", len(first), defaultPageSize)
	}
	if !strings.Contains(body, fmt.Sprintf("of %d steps", longSessionSteps)) {
		t.Errorf("the first page does not say how many steps there are in all")
	}
	var seen []int
	path := "/"
	for pages := 0; path != ""; pages++ {
		if pages > longSessionSteps {
			t.Fatal("the next links do not end")
		}
		_, body := get(t, srv, path)
		rows := rowsOf(body)
		if len(rows) > defaultPageSize {
			t.Fatalf("%s: %d rows, more than the page size %d", path, len(rows), defaultPageSize)
		}
		seen = append(seen, rows...)
		path = nextLink(body)
	}
	if len(seen) != longSessionSteps {
		t.Fatalf("walking the pages visited %d rows; want %d", len(seen), longSessionSteps)
	}
	for i, id := range seen {
		if id != i {
			t.Fatalf("row %d of the walk is step %d; want %d (every step once, in order)", i, id, i)
		}
	}
	// A heavy row shows a few of its files and says how many more there are.
	_, body = get(t, srv, "/?limit=1&after=16") // step 17 greps 17*37%260+12 = 121 files... or fewer
	if !regexp.MustCompile(`\+\d+ more`).MatchString(body) {
		t.Errorf("a row with many files does not say how many more it has:\n%.3000s", body)
	}
}

// The JSON twin pages the same way, with a cursor: "next_after" is the
// "after" of the next page, absent on the last one.
func TestAPIStepsPages(t *testing.T) {
	srv := serve(t, longSession(t), Options{})
	var seen []int
	after := ""
	for pages := 0; ; pages++ {
		if pages > longSessionSteps {
			t.Fatal("next_after does not end")
		}
		path := "/api/steps?limit=50" + after
		resp, body := get(t, srv, path)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, resp.StatusCode, body)
		}
		var d struct {
			Steps []struct {
				StepID int      `json:"step_id"`
				Files  []string `json:"files"`
			} `json:"steps"`
			Total int `json:"total"`
			Page  struct {
				Limit     int  `json:"limit"`
				Matched   int  `json:"matched"`
				NextAfter *int `json:"next_after"`
			} `json:"page"`
		}
		if err := json.Unmarshal([]byte(body), &d); err != nil {
			t.Fatal(err)
		}
		if d.Total != longSessionSteps || d.Page.Matched != longSessionSteps || d.Page.Limit != 50 {
			t.Fatalf("%s: total %d, matched %d, limit %d", path, d.Total, d.Page.Matched, d.Page.Limit)
		}
		if len(d.Steps) > 50 {
			t.Fatalf("%s: %d steps, more than the limit", path, len(d.Steps))
		}
		for _, s := range d.Steps {
			seen = append(seen, s.StepID)
		}
		if d.Page.NextAfter == nil {
			break
		}
		after = "&after=" + strconv.Itoa(*d.Page.NextAfter)
	}
	if len(seen) != longSessionSteps {
		t.Fatalf("the pages hold %d steps; want %d", len(seen), longSessionSteps)
	}
	for i, id := range seen {
		if id != i {
			t.Fatalf("step %d at position %d", id, i)
		}
	}
	for _, bad := range []string{"?limit=0", "?limit=-3", "?limit=abc", "?after=x", "?before=1.5", "?after=1&before=5"} {
		resp, body := get(t, srv, "/api/steps"+bad)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "error") {
			t.Errorf("GET /api/steps%s: %d %s; want 400 naming the problem", bad, resp.StatusCode, body)
		}
	}
}

// "before" pages backwards: the rows just before a step, at most limit.
func TestTimelinePreviousPage(t *testing.T) {
	srv := serve(t, longSession(t), Options{})
	_, body := get(t, srv, "/?limit=10&before=100")
	rows := rowsOf(body)
	if len(rows) != 10 || rows[0] != 90 || rows[9] != 99 {
		t.Fatalf("before=100, limit=10: rows %v; want 90..99", rows)
	}
	if !strings.Contains(body, `id="page-prev"`) || !strings.Contains(body, `id="page-next"`) {
		t.Errorf("a middle page lacks its previous or next link")
	}
	_, body = get(t, srv, "/?limit=10&before=5")
	if rows := rowsOf(body); len(rows) != 5 || rows[0] != 0 {
		t.Fatalf("before=5: rows %v; want 0..4", rows)
	}
	if strings.Contains(body, `id="page-prev"`) {
		t.Errorf("the first page has a previous link")
	}
	// A filter keeps its parameters across pages.
	_, body = get(t, srv, "/?limit=5&error=ValueError")
	next := nextLink(body)
	if !strings.Contains(next, "error=ValueError") {
		t.Errorf("the next link %q drops the filter", next)
	}
	for _, id := range rowsOf(body) {
		if id%4 != 2 {
			t.Errorf("step %d does not match error=ValueError", id)
		}
	}
}

// BenchmarkTimelineLongSession measures the timeline of the 213-step
// session through a real loopback server: the bytes of a page and the time
// to serve it, first with a new inspector (nothing cached: validate and
// every node to classify) and then warm.
func BenchmarkTimelineLongSession(b *testing.B) {
	dir := longSession(b)
	for _, c := range []struct {
		name, path string
		fresh      bool
	}{
		{"first-load/html", "/", true},
		{"first-load/api", "/api/steps", true},
		{"warm/html", "/", false},
		{"warm/api", "/api/steps", false},
	} {
		b.Run(c.name, func(b *testing.B) {
			s, err := contextfold.Open(dir, contextfold.Options{})
			if err != nil {
				b.Fatal(err)
			}
			in, err := New(s, Options{})
			if err != nil {
				b.Fatal(err)
			}
			srv := httptest.NewServer(in)
			defer srv.Close()
			if !c.fresh {
				get(b, srv, c.path)
			}
			var n int
			b.ResetTimer()
			cpu0 := procmem.CPU()
			for i := 0; i < b.N; i++ {
				if c.fresh {
					b.StopTimer()
					in, err = New(s, Options{})
					if err != nil {
						b.Fatal(err)
					}
					srv.Config.Handler = in
					b.StartTimer()
				}
				_, body := get(b, srv, c.path)
				n = len(body)
			}
			// The process's CPU per page (the server and the client, both
			// here): steadier than the wall time on a shared machine.
			b.ReportMetric(float64((procmem.CPU()-cpu0).Milliseconds())/float64(b.N), "cpu-ms/op")
			b.ReportMetric(float64(n), "bytes/page")
		})
	}
}
