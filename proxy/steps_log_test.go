package proxy

import (
	"regexp"
	"strconv"
	"testing"

	"github.com/contextfold/contextfold/harness"
)

// TestRequestLogCountsCollapsedSteps: at a fold event under a context
// budget, the steps that leave the prompt for the page table are counted in
// the request log line (steps_collapsed), as in /contextfold/stats. (Before:
// the line said steps_folded=0 and nothing else for a fold event that moved
// every old step into cold storage.)
func TestRequestLogCountsCollapsedSteps(t *testing.T) {
	up := newUpstream(t)
	tp := newProxy(t, up, harness.Config{ContextBudget: 8000})
	var outputs []string
	for i := 0; i < 20; i++ {
		outputs = append(outputs, bigLog("pkg"+itoa(i), 40))
	}
	sendAnthropic(t, tp, buildConversation(outputs))
	rec := tp.record(t, 1)
	if rec.StepsCollapsed == 0 {
		t.Fatalf("no fold event: %+v", rec.Accounting)
	}
	m := regexp.MustCompile(`steps_collapsed=(\d+)`).FindStringSubmatch(tp.log.String())
	if m == nil || m[1] != strconv.Itoa(rec.StepsCollapsed) {
		t.Errorf("the request log does not count the %d collapsed steps: %s", rec.StepsCollapsed, tp.log.String())
	}
}
