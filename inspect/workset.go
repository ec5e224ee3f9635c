package inspect

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/contextfold/contextfold/harness"
	"github.com/contextfold/contextfold/internal/fsutil"
)

// worksetData is the working-set page: one proxy session's requests, read
// from the log the proxy keeps beside the store (harness.WorkingSetLogName),
// drawn against the budget.
type worksetData struct {
	Log      string                     `json:"log"` // the file read ("" when none)
	Requests []harness.WorkingSetRecord `json:"requests"`
	Events   int                        `json:"fold_events"`
	// Billed is the session's input cost as the providers bill it
	// (harness.BilledCosts): the client's bodies and the forwarded ones,
	// under Anthropic's and OpenAI's price structures.
	Billed []billedRow `json:"billed"`
	Chart  *svgChart   `json:"-"`
}

// billedRow is harness.Billed with the forwarded cost's share of the
// client's, in percent.
type billedRow struct {
	harness.Billed
	Share float64 `json:"share_percent"`
}

// billedRows prices the requests (harness.BilledCosts).
func billedRows(reqs []harness.WorkingSetRecord) []billedRow {
	var out []billedRow
	if len(reqs) == 0 {
		return out
	}
	for _, b := range harness.BilledCosts(reqs) {
		r := billedRow{Billed: b}
		if b.Client > 0 {
			r.Share = 100 * b.Forwarded / b.Client
		}
		out = append(out, r)
	}
	return out
}

// worksetLog returns the working-set log of the store's proxy session: the
// store is Dir/<session>/g<N>, the log Dir/<session>/workset.jsonl; only the
// records of generation N are kept. Reading it changes nothing.
func (in *Inspector) worksetLog() (*worksetData, error) {
	if in.store.Backend() != nil {
		// A database session keeps no working-set log (the proxy's shared
		// sessions keep their harness state in the database).
		d := &worksetData{Requests: []harness.WorkingSetRecord{}}
		d.Chart = worksetChart(d.Requests)
		return d, nil
	}
	dir := in.store.Dir()
	gen, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(dir), "g"))
	if err != nil || !strings.HasPrefix(filepath.Base(dir), "g") {
		gen = 0 // not a proxy session store: any generation
	}
	path := filepath.Join(filepath.Dir(dir), harness.WorkingSetLogName)
	d := &worksetData{Requests: []harness.WorkingSetRecord{}}
	f, _, err := fsutil.OpenRegular(path) // a FIFO in its place: an error, never a wait
	if os.IsNotExist(err) {
		d.Chart = worksetChart(d.Requests)
		return d, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	d.Log = path
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var rec harness.WorkingSetRecord
		if json.Unmarshal(sc.Bytes(), &rec) != nil {
			continue // a torn last line
		}
		if gen != 0 && rec.Generation != gen {
			continue
		}
		d.Requests = append(d.Requests, rec)
		if rec.FoldEvent {
			d.Events++
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	d.Chart = worksetChart(d.Requests)
	d.Billed = billedRows(d.Requests)
	return d, nil
}

// worksetChart stacks each request's estimate by part — pinned (with the
// request outside its messages), page table, folded records, verbatim, hot
// tail, hydrated — against the budget line; the cache-stable prefix is the
// line of dots, a fold event a mark above its bar.
func worksetChart(reqs []harness.WorkingSetRecord) *svgChart {
	labels := make([]string, len(reqs))
	ymax := 1.0
	for i, r := range reqs {
		labels[i] = strconv.Itoa(r.Request)
		ymax = math.Max(ymax, float64(max(r.Budget, r.Estimate, r.ForwardedTokens)))
	}
	c, ymax, ph := frame("Working set per request",
		"tokens of each forwarded request by part, against the budget (dashed); dots: the cache-stable prefix (common with the previous request); ▼ a fold event",
		"tokens", labels, ymax*1.05)
	c.Texts[len(c.Texts)-1].Text = "request" // the x axis (frame names it "step")
	parts := []struct{ class, name string }{{"ws-pinned", "pinned"}, {"ws-page", "page table"}, {"ws-records", "folded records"},
		{"ws-verbatim", "verbatim"}, {"ws-tail", "hot tail"}, {"ws-hyd", "hydrated"}}
	for k, p := range parts {
		c.Legend = append(c.Legend, svgLegend{X: chartLeft + float64(k)*115, Y: 4, Class: p.class, Text: p.name})
	}
	if len(reqs) == 0 {
		c.Texts = append(c.Texts, svgText{X: chartW / 2, Y: chartH / 2, Text: "no working-set log beside this store (the proxy writes one per session)", Anchor: "middle", Class: "empty"})
		return c
	}
	pw := chartW - chartLeft - chartRight
	slot := pw / float64(len(reqs))
	y := func(v float64) float64 { return chartTop + ph - ph*v/ymax }
	pts := ""
	for i, r := range reqs {
		vals := []int{r.FixedTokens + r.PinnedTokens, r.PageTableTokens, r.RecordTokens, r.VerbatimTokens, r.TailTokens, r.HydrationTokens}
		x := chartLeft + slot*float64(i) + slot*0.1
		base := 0.0
		for k, v := range vals {
			if v <= 0 {
				continue
			}
			top := base + float64(v)
			c.Rects = append(c.Rects, svgRect{X: x, Y: y(top), W: math.Max(slot*0.8, 0.5), H: y(base) - y(top), Class: parts[k].class,
				Title: fmt.Sprintf("request %d — %s: %d tokens", r.Request, parts[k].name, v)})
			base = top
		}
		cx := chartLeft + slot*(float64(i)+0.5)
		pts += fmt.Sprintf("%.1f,%.1f ", cx, y(float64(r.StablePrefixTokens)))
		c.Rects = append(c.Rects, svgRect{X: cx - 2, Y: y(float64(r.StablePrefixTokens)) - 2, W: 4, H: 4, Class: "ws-stable dot",
			Title: fmt.Sprintf("request %d — cache-stable prefix: %d of %d tokens", r.Request, r.StablePrefixTokens, r.ForwardedTokens)})
		if r.FoldEvent {
			c.Texts = append(c.Texts, svgText{X: cx, Y: y(base) - 4, Text: "▼", Anchor: "middle", Class: "ws-event"})
		}
	}
	c.Polys = append(c.Polys, svgPoly{Points: pts, Class: "ws-stable"})
	if b := reqs[len(reqs)-1].Budget; b > 0 {
		c.Lines = append(c.Lines, svgLine{X1: chartLeft, Y1: y(float64(b)), X2: chartLeft + pw, Y2: y(float64(b)), Class: "ws-budget"})
		c.Texts = append(c.Texts, svgText{X: chartLeft + pw, Y: y(float64(b)) - 4, Text: "budget " + strconv.Itoa(b), Anchor: "end", Class: "tick"})
	}
	return c
}
