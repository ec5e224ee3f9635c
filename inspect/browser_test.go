package inspect

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/contextfold/contextfold"
)

// EnvScreenshots names the directory where the browser test saves its
// screenshots (default: a temporary directory of the test).
const EnvScreenshots = "CONTEXTFOLD_SCREENSHOTS"

// findChromium returns the browser to drive: $CONTEXTFOLD_CHROMIUM, else
// Debian's /usr/bin/chromium, else one on $PATH.
func findChromium() string {
	if p := os.Getenv("CONTEXTFOLD_CHROMIUM"); p != "" {
		return p
	}
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium"
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// TestBrowser drives headless Chromium through the inspector of the demo
// store: the timeline, step 137 with "verify now", the MMU simulator with
// the showcase prompt (342, 137, 447), the hostile payload (no script runs),
// recall, evictions, validate and charts, then a damaged store. It saves a
// screenshot of each page. In CI (CI=true) a missing browser fails the test.
func TestBrowser(t *testing.T) {
	bin := findChromium()
	if bin == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("chromium is missing: .ci/run installs it with 'apt-get install chromium' (or set CONTEXTFOLD_CHROMIUM)")
		}
		t.Skip("chromium not found; install it with 'apt-get install chromium' (CI fails instead of skipping)")
	}
	shots := os.Getenv(EnvScreenshots)
	if shots == "" {
		shots = t.TempDir()
	}
	if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshots in %s", shots)

	srv, _ := sharedServer(t)
	damaged := demoCopy(t)
	damage(t, damaged)
	bad := serve(t, damaged, Options{})

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	)
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	defer acancel()
	bctx, bcancel := chromedp.NewContext(actx)
	defer bcancel()

	// Every uncaught exception on any page fails the test: a payload that
	// ran, or a broken app.js.
	var mu sync.Mutex
	var exceptions []string
	if err := chromedp.Listen(bctx, func(ev any) {
		if e, ok := ev.(*runtime.EventExceptionThrown); ok {
			mu.Lock()
			exceptions = append(exceptions, fmt.Sprint(e.ExceptionDetails.Text))
			mu.Unlock()
		}
	}); err != nil {
		t.Fatalf("start chromium (%s): %v", bin, err)
	}

	do := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(bctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("text of %s: %v", sel, err)
		}
		return s
	}
	eval := func(js string) bool {
		t.Helper()
		v, err := chromedp.Run(bctx, chromedp.Evaluate[bool](js))
		if err != nil {
			t.Fatalf("evaluate %s: %v", js, err)
		}
		return v
	}
	shot := func(name string) {
		t.Helper()
		png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		if err := os.WriteFile(filepath.Join(shots, name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// 1. The timeline of the demo store.
	do("open the timeline", chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(chromedp.CSS("#timeline")))
	if s := text("#step-137"); !strings.Contains(s, "PostgreSQL port 5434 reverted back to Port 5433") || !strings.Contains(strings.ToLower(s), "verified") {
		t.Errorf("timeline row 137: %q", s)
	}
	shot("01-timeline")

	// 1b. The timeline a page at a time: "next" and "previous" follow the
	// step-id cursor (the demo's steps: 37 91 137 200 | 318 342 447 499 | 600 601).
	do("open the first page of 4", chromedp.Navigate(srv.URL+"/?limit=4"), chromedp.WaitVisible(chromedp.CSS("#page-next")))
	do("next page", chromedp.Click(chromedp.CSS("#page-next")), chromedp.WaitVisible(chromedp.CSS("#step-318")))
	if !eval(`document.querySelectorAll("#timeline tbody tr").length === 4 && !document.getElementById("step-200") && !!document.getElementById("step-499")`) {
		t.Errorf("the second page of 4 is not steps 318..499")
	}
	do("previous page", chromedp.Click(chromedp.CSS("#page-prev")), chromedp.WaitVisible(chromedp.CSS("#step-137")))
	if eval(`!!document.getElementById("page-prev")`) {
		t.Errorf("the first page has a previous link")
	}

	// 2. Step 137, opened from the timeline, verified now.
	do("open step 137", chromedp.Click(chromedp.CSS("#step-137 a.summary")), chromedp.WaitVisible(chromedp.CSS("#step-id")))
	if s := text("#step-id"); s != "137" {
		t.Fatalf("step page shows step %q", s)
	}
	if s := text("#payload"); s != "$ sed -i 's/5434/5433/' config.env\nPostgreSQL Port 5433 restored" {
		t.Errorf("payload shown as %q", s)
	}
	do("verify now", chromedp.Click(chromedp.CSS("#verify-now")), chromedp.WaitVisible(chromedp.CSS("#verify")))
	if s := text("#verify"); !strings.Contains(strings.ToLower(s), "verified") {
		t.Errorf("verify now: %q", s)
	}
	shot("02-step-137")

	// 3. The MMU simulator with the showcase prompt.
	do("open the simulator", chromedp.Navigate(srv.URL+"/scan"), chromedp.WaitVisible(chromedp.CSS("#prompt")),
		chromedp.SendKeys(chromedp.CSS("#prompt"), contextfold.DemoPrompt),
		chromedp.Click(chromedp.CSS("#run-scan")), chromedp.WaitVisible(chromedp.CSS("#picks")))
	steps, err := chromedp.Run(bctx, chromedp.Evaluate[[]int](`Array.from(document.querySelectorAll("#picks li")).map(li => Number(li.dataset.step))`))
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(steps) != "[342 137 447]" {
		t.Errorf("the simulator hydrates %v, want [342 137 447]", steps)
	}
	if v, err := chromedp.Run(bctx, chromedp.Evaluate[string](`document.querySelector("#prompt").value`)); err != nil || v != contextfold.DemoPrompt {
		t.Errorf("prompt box after the scan: %q, %v", v, err)
	}
	shot("03-simulator")

	// 4. The hostile payload is text; none of its script ran.
	do("open the hostile step", chromedp.Navigate(srv.URL+fmt.Sprintf("/step/%d", hostileStep)), chromedp.WaitVisible(chromedp.CSS("#payload")))
	if !eval(`window.__pwned === undefined && !document.title.includes("PWNED")`) {
		t.Error("a script of the payload ran")
	}
	if !eval(`document.querySelector("#payload").textContent.includes("<script>window.__pwned = 'script'")`) {
		t.Error("the <script> payload is not shown as text")
	}
	if !eval(`document.querySelectorAll("script").length === 1 && document.querySelectorAll("#payload *:not(span.ctl), #summary *, img, iframe, style, main svg").length === 0`) {
		t.Error("the payload added elements to the page")
	}
	if !eval(`document.body.offsetHeight > 0 && getComputedStyle(document.body).display !== "none"`) {
		t.Error("the payload's style applied")
	}
	if !eval(`document.querySelector("#payload").scrollWidth <= document.querySelector("#payload").clientWidth + 1`) {
		t.Error("long lines do not wrap")
	}
	shot("04-hostile-payload")

	// 5–8. Recall, evictions, validate, charts.
	for _, p := range []struct{ path, sel, name string }{
		{"/recall?q=" + url.QueryEscape(contextfold.DemoRecallQuery), "#recall", "05-recall"},
		{"/evictions", "#evictions", "06-evictions"},
		{"/validate", "#validate-ok", "07-validate"},
		{"/charts", "#charts svg", "08-charts"},
		{"/step/601?page=2", "#pager", "09-large-payload-paged"},
	} {
		do("open "+p.path, chromedp.Navigate(srv.URL+p.path), chromedp.WaitVisible(chromedp.CSS(p.sel)))
		if p.sel == "#recall" {
			if s := text("#recall"); !strings.Contains(s, "latest_chronological") {
				t.Errorf("recall table: %q", s)
			}
		}
		shot(p.name)
	}

	// 9. A damaged store: states at a glance, findings with repairs.
	do("open the damaged timeline", chromedp.Navigate(bad.URL+"/"), chromedp.WaitVisible(chromedp.CSS("#timeline")))
	for step, state := range map[int]string{91: "broken", 137: "tampered", 777: "orphan"} {
		if s := text(fmt.Sprintf("#step-%d", step)); !strings.Contains(strings.ToLower(s), state) {
			t.Errorf("damaged timeline row %d: %q, want %s", step, s, state)
		}
	}
	shot("10-timeline-damaged")
	do("open the damaged validate", chromedp.Navigate(bad.URL+"/validate"), chromedp.WaitVisible(chromedp.CSS("#findings")))
	if s := text("#findings"); !strings.Contains(s, "repair --apply") {
		t.Errorf("findings: %q", s)
	}
	shot("11-validate-findings")
	do("verify the tampered step", chromedp.Navigate(bad.URL+"/step/137?verify=1"), chromedp.WaitVisible(chromedp.CSS("#verify")))
	if s := text("#verify"); !strings.Contains(strings.ToLower(s), "tampered") {
		t.Errorf("verify of a tampered step: %q", s)
	}
	shot("12-step-137-tampered")

	mu.Lock()
	defer mu.Unlock()
	if len(exceptions) > 0 {
		t.Errorf("uncaught exceptions in the pages: %v", exceptions)
	}
}
