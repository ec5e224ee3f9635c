package inspect

import (
	"fmt"
	"math"
	"strconv"
)

// svgChart is a chart drawn server-side as inline SVG: plain shapes with
// coordinates, rendered by the "chart" template. No script, no styles but
// the stylesheet's classes.
type svgChart struct {
	Title  string
	Desc   string
	Width  float64
	Height float64
	Rects  []svgRect
	Lines  []svgLine
	Polys  []svgPoly
	Texts  []svgText
	Legend []svgLegend
}

type svgRect struct {
	X, Y, W, H float64
	Class      string
	Title      string
}

type svgLine struct {
	X1, Y1, X2, Y2 float64
	Class          string
}

type svgPoly struct {
	Points string
	Class  string
}

type svgText struct {
	X, Y   float64
	Text   string
	Anchor string // start, middle, end
	Class  string
}

type svgLegend struct {
	X, Y  float64
	Class string
	Text  string
}

// num prints a token count: an integer without decimals, else up to two.
func num(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return strconv.FormatInt(int64(f), 10)
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}

// niceMax rounds a maximum up to 1, 2 or 5 times a power of ten.
func niceMax(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

// chart geometry
const (
	chartW      = 760.0
	chartH      = 260.0
	chartLeft   = 64.0
	chartRight  = 16.0
	chartTop    = 44.0
	chartBottom = 46.0
)

// frame returns a chart with its axes, y grid and x labels laid out for n
// slots and a y maximum.
func frame(title, desc, unit string, labels []string, ymax float64) (*svgChart, float64, float64) {
	c := &svgChart{Title: title, Desc: desc, Width: chartW, Height: chartH}
	pw, ph := chartW-chartLeft-chartRight, chartH-chartTop-chartBottom
	ymax = niceMax(ymax)
	for i := 0; i <= 4; i++ {
		v := ymax * float64(i) / 4
		y := chartTop + ph - ph*float64(i)/4
		c.Lines = append(c.Lines, svgLine{X1: chartLeft, Y1: y, X2: chartLeft + pw, Y2: y, Class: "grid"})
		c.Texts = append(c.Texts, svgText{X: chartLeft - 6, Y: y + 4, Text: humanize(v), Anchor: "end", Class: "tick"})
	}
	c.Texts = append(c.Texts, svgText{X: 12, Y: chartTop - 10, Text: unit, Anchor: "start", Class: "unit"})
	n := len(labels)
	if n > 0 {
		slot := pw / float64(n)
		every := int(math.Ceil(float64(n) / 24))
		for i, l := range labels {
			if i%every != 0 {
				continue
			}
			c.Texts = append(c.Texts, svgText{X: chartLeft + slot*(float64(i)+0.5), Y: chartTop + ph + 18, Text: l, Anchor: "middle", Class: "tick"})
		}
	}
	c.Texts = append(c.Texts, svgText{X: chartLeft + pw/2, Y: chartH - 6, Text: "step", Anchor: "middle", Class: "unit"})
	c.Lines = append(c.Lines, svgLine{X1: chartLeft, Y1: chartTop + ph, X2: chartLeft + pw, Y2: chartTop + ph, Class: "axis"})
	return c, ymax, ph
}

// humanize prints an axis value compactly (1.5k, 2M).
func humanize(v float64) string {
	switch {
	case v >= 1e6:
		return strconv.FormatFloat(v/1e6, 'f', -1, 64) + "M"
	case v >= 1e4:
		return strconv.FormatFloat(v/1e3, 'f', -1, 64) + "k"
	}
	return num(math.Round(v*100) / 100)
}

// barChart draws grouped bars: one group per label, one bar per series.
func barChart(title, desc, unit string, labels []string, series [][]float64, classes, names []string, minY float64) *svgChart {
	ymax := minY
	for _, s := range series {
		for _, v := range s {
			ymax = math.Max(ymax, v)
		}
	}
	c, ymax, ph := frame(title, desc, unit, labels, ymax)
	n := len(labels)
	if n == 0 {
		c.Texts = append(c.Texts, svgText{X: chartW / 2, Y: chartH / 2, Text: "no steps", Anchor: "middle", Class: "empty"})
		return c
	}
	pw := chartW - chartLeft - chartRight
	slot := pw / float64(n)
	bw := slot * 0.8 / float64(len(series))
	for i, l := range labels {
		for k, s := range series {
			h := ph * s[i] / ymax
			x := chartLeft + slot*float64(i) + slot*0.1 + bw*float64(k)
			c.Rects = append(c.Rects, svgRect{X: x, Y: chartTop + ph - h, W: math.Max(bw-1, 0.5), H: h, Class: classes[k],
				Title: fmt.Sprintf("step %s — %s: %s", l, names[k], num(s[i]))})
		}
	}
	for k, name := range names {
		c.Legend = append(c.Legend, svgLegend{X: chartLeft + float64(k)*230, Y: 4, Class: classes[k], Text: name})
	}
	return c
}

// lineChart draws one series as a line with dots.
func lineChart(title, desc, unit string, labels []string, values []float64, titles []string, class, name string) *svgChart {
	ymax := 0.0
	for _, v := range values {
		ymax = math.Max(ymax, v)
	}
	c, ymax, ph := frame(title, desc, unit, labels, ymax)
	n := len(labels)
	if n == 0 {
		c.Texts = append(c.Texts, svgText{X: chartW / 2, Y: chartH / 2, Text: "no steps", Anchor: "middle", Class: "empty"})
		return c
	}
	pw := chartW - chartLeft - chartRight
	slot := pw / float64(n)
	pts := ""
	for i, v := range values {
		x := chartLeft + slot*(float64(i)+0.5)
		y := chartTop + ph - ph*v/ymax
		pts += fmt.Sprintf("%.1f,%.1f ", x, y)
		c.Rects = append(c.Rects, svgRect{X: x - 3, Y: y - 3, W: 6, H: 6, Class: class + " dot", Title: titles[i]})
	}
	c.Polys = append(c.Polys, svgPoly{Points: pts, Class: class})
	c.Legend = append(c.Legend, svgLegend{X: chartLeft, Y: 4, Class: class, Text: name})
	return c
}

// chartPoint is one step of the chart series (JSON).
type chartPoint struct {
	StepID        int   `json:"step_id"`
	HotTokens     int   `json:"hot_tokens"`
	ColdTokens    int   `json:"cold_tokens"`
	ArchiveBytes  int64 `json:"archive_bytes"`  // cold node files up to this step, on disk
	ArchiveTokens int   `json:"archive_tokens"` // token estimates up to this step
	Hydrations    int   `json:"hydrations"`
}

// chartsData is the charts page.
type chartsData struct {
	Points     []chartPoint `json:"steps"`
	Tokens     *svgChart    `json:"-"`
	Archive    *svgChart    `json:"-"`
	Hydrations *svgChart    `json:"-"`
}

func (in *Inspector) charts() *chartsData {
	sn := in.snapshot(false)
	in.fillSizes(sn.rows)
	d := &chartsData{Points: []chartPoint{}}
	var bytes int64
	tokens := 0
	for _, r := range sn.rows {
		bytes += r.FileBytes
		tokens += r.Tokens
		d.Points = append(d.Points, chartPoint{StepID: r.StepID, HotTokens: r.HotTokens, ColdTokens: r.Tokens, ArchiveBytes: bytes, ArchiveTokens: tokens, Hydrations: r.Hydrations})
	}
	d.Tokens = tokensChart(sn.rows)
	d.Archive = archiveChart(d.Points)
	d.Hydrations = hydrationsChart(sn.rows)
	return d
}

func stepLabels(rows []stepRow) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = strconv.Itoa(r.StepID)
	}
	return out
}

func tokensChart(rows []stepRow) *svgChart {
	hot, cold := make([]float64, len(rows)), make([]float64, len(rows))
	for i, r := range rows {
		hot[i], cold[i] = float64(r.HotTokens), float64(r.Tokens)
	}
	return barChart("Tokens per step", "hot: the summary that stays in the prompt; cold: the payload folded to disk", "tokens",
		stepLabels(rows), [][]float64{hot, cold}, []string{"hot", "cold"}, []string{"hot (summary in the prompt)", "cold (folded payload)"}, 0)
}

func archiveChart(points []chartPoint) *svgChart {
	labels := make([]string, len(points))
	values := make([]float64, len(points))
	titles := make([]string, len(points))
	for i, p := range points {
		labels[i] = strconv.Itoa(p.StepID)
		values[i] = float64(p.ArchiveBytes)
		titles[i] = fmt.Sprintf("through step %d: %d bytes on disk, %d tokens archived", p.StepID, p.ArchiveBytes, p.ArchiveTokens)
	}
	return lineChart("Archive size over steps", "cold_nodes/ bytes on disk, cumulative in step order", "bytes", labels, values, titles, "archive", "cold_nodes/ on disk")
}

func hydrationsChart(rows []stepRow) *svgChart {
	v := make([]float64, len(rows))
	for i, r := range rows {
		v[i] = float64(r.Hydrations)
	}
	return barChart("Hydrations per step", "from the eviction log: every hydration ends with one eviction event (CONF-07)", "hydrations",
		stepLabels(rows), [][]float64{v}, []string{"hyd"}, []string{"hydrated, then evicted"}, 4)
}

// budgetBar draws the per-turn budget with the admitted picks stacked in it.
func budgetBar(picks []pickView, budget, used float64) *svgChart {
	const w, h, left, right = 760.0, 64.0, 8.0, 8.0
	c := &svgChart{Title: "Per-turn budget", Desc: fmt.Sprintf("%s of %s tokens used", num(used), num(budget)), Width: w, Height: h}
	pw := w - left - right
	c.Rects = append(c.Rects, svgRect{X: left, Y: 8, W: pw, H: 28, Class: "budget", Title: fmt.Sprintf("per-turn budget: %s tokens", num(budget))})
	if budget <= 0 {
		c.Texts = append(c.Texts, svgText{X: left, Y: 56, Text: "the per-turn budget is " + num(budget) + " tokens: only the first pick is admitted", Anchor: "start", Class: "tick"})
		return c
	}
	x := left
	for i, p := range picks {
		bw := pw * math.Min(p.TokenCost, budget) / budget
		if x+bw > left+pw {
			bw = left + pw - x
		}
		c.Rects = append(c.Rects, svgRect{X: x, Y: 8, W: math.Max(bw, 1), H: 28, Class: fmt.Sprintf("pick pick%d", i%4),
			Title: fmt.Sprintf("step %d: %s tokens", p.StepID, num(p.TokenCost))})
		if bw > 40 {
			c.Texts = append(c.Texts, svgText{X: x + bw/2, Y: 27, Text: strconv.Itoa(p.StepID), Anchor: "middle", Class: "onbar"})
		}
		x += bw
	}
	c.Texts = append(c.Texts, svgText{X: left, Y: 56, Text: fmt.Sprintf("%s of %s tokens used (%.1f%%)", num(used), num(budget), 100*used/budget), Anchor: "start", Class: "tick"})
	return c
}
