package diff

import (
	"fmt"
	"html/template"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/bottleneck-dev/bottleneck/internal/report"
	"github.com/bottleneck-dev/bottleneck/internal/units"
)

// WriteHTML writes r as one self-contained page (no script, no network):
// the headline, both runs' step times on one chart, the breakdown side by
// side, and the kernel and operator tables with their deltas.
func WriteHTML(w io.Writer, r *Result) error {
	return page().Execute(w, htmlData{R: r, Chart: stepChart(r), Bars: breakdownBars(r), Verdict: verdictLine(r), Flames: flameSVGs(r)})
}

type htmlData struct {
	R       *Result
	Chart   chart
	Bars    []bar
	Verdict string
	Flames  []flameSVG
}

// chart is the step-time chart: one polyline per run over the step
// index, and each run's median.
type chart struct {
	W, H           int
	Base, New      string // SVG points
	BaseY, NewY    float64
	MaxLabel, Axis string
}

const chartW, chartH, chartPad = 760, 180, 20

func stepChart(r *Result) chart {
	c := chart{W: chartW, H: chartH}
	top := slices.Max(append(slices.Clone(r.Base.StepTimesUs), append(r.New.StepTimesUs, 1)...))
	n := max(len(r.Base.StepTimesUs), len(r.New.StepTimesUs), 2)
	y := func(us float64) float64 { return chartPad + (chartH-2*chartPad)*(1-us/top) }
	points := func(xs []float64) string {
		var b strings.Builder
		for i, us := range xs {
			fmt.Fprintf(&b, "%.1f,%.1f ", chartPad+float64(i)*float64(chartW-2*chartPad)/float64(n-1), y(us))
		}
		return b.String()
	}
	c.Base, c.New = points(r.Base.StepTimesUs), points(r.New.StepTimesUs)
	c.BaseY, c.NewY = y(r.Base.MedianUs), y(r.New.MedianUs)
	c.MaxLabel = units.Duration(top)
	c.Axis = fmt.Sprintf("%d steps", n)
	return c
}

// bar is one breakdown category with both runs' widths (percent of the
// largest value).
type bar struct {
	Delta
	BaseW, NewW float64
	Change      string
}

func breakdownBars(r *Result) []bar {
	top := 1.0
	for _, d := range r.Breakdown {
		top = max(top, d.BaseUs, d.NewUs)
	}
	out := make([]bar, len(r.Breakdown))
	for i, d := range r.Breakdown {
		out[i] = bar{Delta: d, BaseW: 100 * d.BaseUs / top, NewW: 100 * d.NewUs / top, Change: signed(d.DeltaUs)}
	}
	return out
}

// page is parsed on first use, not at start-up (0.3 ms of every command).
var page = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("diff").Funcs(template.FuncMap{
		"dur":      units.Duration,
		"signed":   signed,
		"calls":    calls,
		"note":     itemNote,
		"lineNote": func(l LineDelta) string { return report.Printable(lineNote(l)) },
		"clip":     func(s string) string { return report.Printable(report.Clip(s, 120)) },
		"pct":      func(x float64) string { return fmt.Sprintf("%.0f%%", x) },
		"print":    report.Printable,
		"us":       func(ns float64) float64 { return ns / 1e3 },
	}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<title>bottleneck diff: {{print .R.Base.Label}} vs {{print .R.New.Label}}</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:2em;max-width:1100px;color:#222}
h1{font-size:1.3em}h2{font-size:1.1em;margin-top:1.6em}
.base{color:#1f77b4}.new{color:#d62728}
table{border-collapse:collapse;width:100%}td,th{padding:2px 6px;border-bottom:1px solid #ddd;text-align:right}
td.name,th.name{text-align:left;font-family:monospace;word-break:break-all}
.bar{height:8px;margin:1px 0}.bar.b{background:#1f77b4}.bar.n{background:#d62728}
.warn{background:#fff4d6;padding:4px 8px;margin:4px 0}
.up{color:#b00}.down{color:#070}
</style></head><body>
<h1>{{.R.Headline.Summary}}</h1>
{{range .R.Headline.Causes}}<p>{{.}}</p>{{end}}
<p>{{.Verdict}}. <span class="base">■ base</span> {{print .R.Base.Label}} ({{.R.Base.Kind}}{{range .R.Base.Devices}}, {{print .}}{{end}}), <span class="new">■ new</span> {{print .R.New.Label}} ({{.R.New.Kind}}{{range .R.New.Devices}}, {{print .}}{{end}})</p>
{{range .R.Warnings}}<div class="warn">{{.}}</div>{{end}}
{{with .R.Gate}}<h2>CI gate</h2><table>{{range .}}<tr><td class="name">{{.Rule}}</td><td>{{if .Failed}}<b class="up">FAIL</b>{{else}}pass{{end}}</td><td class="name">{{.Why}}</td></tr>{{end}}</table>{{end}}
<h2>Step times</h2>
<svg width="{{.Chart.W}}" height="{{.Chart.H}}" role="img" aria-label="step times of both runs">
<polyline fill="none" stroke="#1f77b4" points="{{.Chart.Base}}"/>
<polyline fill="none" stroke="#d62728" points="{{.Chart.New}}"/>
<line x1="0" x2="{{.Chart.W}}" y1="{{.Chart.BaseY}}" y2="{{.Chart.BaseY}}" stroke="#1f77b4" stroke-dasharray="4"/>
<line x1="0" x2="{{.Chart.W}}" y1="{{.Chart.NewY}}" y2="{{.Chart.NewY}}" stroke="#d62728" stroke-dasharray="4"/>
<text x="2" y="14" font-size="11">{{.Chart.MaxLabel}}</text><text x="{{.Chart.W}}" y="{{.Chart.H}}" font-size="11" text-anchor="end">{{.Chart.Axis}}</text>
</svg>
<p>Median (dashed): base {{dur .R.Base.MedianUs}} over {{.R.Base.Steps}} steps, new {{dur .R.New.MedianUs}} over {{.R.New.Steps}} steps ({{.R.Base.StepSource}}).</p>
{{with .Bars}}<h2>Where the step time went</h2>
<table><tr><th class="name">category</th><th>base</th><th>new</th><th>change</th><th>share of change</th><th style="width:40%"></th></tr>
{{range .}}<tr><td class="name">{{.Category}}</td><td>{{dur .BaseUs}}</td><td>{{dur .NewUs}}</td><td>{{.Change}}</td><td>{{pct .SharePct}}</td>
<td><div class="bar b" style="width:{{printf "%.1f" .BaseW}}%"></div><div class="bar n" style="width:{{printf "%.1f" .NewW}}%"></div></td></tr>{{end}}</table>{{end}}
{{with .R.Kernels}}<h2>Kernels (per step)</h2>{{template "items" .}}{{end}}
{{with .R.Ops}}<h2>Operators (per step)</h2>{{template "items" .}}{{end}}
{{with .R.Lines}}<h2>Python lines (main thread, time per step)</h2><table><tr><th>base</th><th>new</th><th>change</th><th>share of step</th><th>share of change</th><th class="name">line</th></tr>
{{range .}}<tr><td>{{dur .BaseUs}}</td><td>{{dur .NewUs}}</td><td class="{{if gt .DeltaUs 0.0}}up{{else}}down{{end}}">{{signed .DeltaUs}}</td><td>{{printf "%.0f%% → %.0f%%" .BasePct .NewPct}}</td><td>{{pct .SharePct}}</td><td class="name">{{clip .Where}}<small>{{lineNote .}}</small></td></tr>{{end}}</table>{{end}}
{{range .Flames}}<h2>Diff flame graph: {{.Title}}</h2>
<p><small>Stacks of both runs merged by path, root on top; width: the mean of both runs' time; <span style="background:hsl(0,80%,60%)">&nbsp;red&nbsp;</span> grew, <span style="background:hsl(215,80%,60%)">&nbsp;blue&nbsp;</span> shrank (darker: larger change), grey: within the noise (a change under {{dur (us .NoiseNs)}} per step or under 10% of the node). Hover a frame for both runs' values. {{.Grown}} frame(s) grew, {{.Shrunk}} shrank.</small></p>
<svg class="flame" width="{{.W}}" height="{{.H}}" role="img" aria-label="{{.Title}}" font-size="11" font-family="monospace">
{{range .Rects}}<g><title>{{.Hover}}</title><rect x="{{printf "%.1f" .X}}" y="{{.Y}}" width="{{printf "%.1f" .W}}" height="15" fill="{{.Fill}}" stroke="#fff" stroke-width="0.5"/>{{if .Label}}<text x="{{printf "%.1f" .TextX}}" y="{{.TextY}}">{{.Label}}</text>{{end}}</g>
{{end}}</svg>{{end}}
{{with .R.Changes}}<h2>Other changes</h2><ul>{{range .}}<li>{{.What}}{{if or .Base .New}}: {{.Base}} → {{.New}}{{end}}{{with .Note}} <small>{{.}}</small>{{end}}</li>{{end}}</ul>{{end}}
{{with .R.Env}}<h2>Environment differences</h2><table><tr><th class="name">setting</th><th class="name">base</th><th class="name">new</th></tr>{{range .}}<tr><td class="name">{{clip .Key}}</td><td class="name">{{clip .Base}}</td><td class="name">{{clip .New}}</td></tr>{{end}}</table>{{end}}
</body></html>
{{define "items"}}<table><tr><th>base</th><th>new</th><th>change</th><th>calls</th><th>share of change</th><th class="name">name</th></tr>
{{range .}}<tr><td>{{dur .BaseUs}}</td><td>{{dur .NewUs}}</td><td class="{{if gt .DeltaUs 0.0}}up{{else}}down{{end}}">{{signed .DeltaUs}}</td><td>{{calls .}}</td><td>{{pct .SharePct}}</td><td class="name">{{clip .Name}}<small>{{note .}}</small></td></tr>{{end}}</table>{{end}}
`))
})

// flameSVG is one diff flame graph drawn as rectangles (an icicle: the
// root on top). A node's width is the mean of both runs' time, so that a
// vanished or new stack stays visible; its colour says the change.
type flameSVG struct {
	Title   string
	W, H    int
	Rects   []flameRect
	NoiseNs float64
	Grown   int // nodes changed beyond the noise
	Shrunk  int
}

type flameRect struct {
	X, Y, W      float64
	TextX, TextY float64
	Fill, Label  string
	Hover        string
}

const flameW, flameRow, flameMaxDepth = 1060.0, 16, 60

func flameSVGs(r *Result) []flameSVG {
	out := make([]flameSVG, 0, len(r.Flames))
	for _, f := range r.Flames {
		out = append(out, drawFlame(f))
	}
	return out
}

func drawFlame(f *FlameDiff) flameSVG {
	g := flameSVG{Title: f.Title, W: int(flameW), NoiseNs: f.NoiseNs}
	width := func(n *FlameNode) float64 { return (n.BaseNs + n.NewNs) / 2 }
	scale := flameW / max(width(f.Root), 1e-9)
	maxDelta := 0.0
	f.Walk(func(n *FlameNode, _ int) {
		if f.Changed(n) {
			maxDelta = max(maxDelta, abs(n.DeltaNs()))
		}
	})
	depth := 0
	var draw func(n *FlameNode, x float64, d int)
	draw = func(n *FlameNode, x float64, d int) {
		w := width(n) * scale
		if w < 1 || d > flameMaxDepth {
			return // too narrow to see: its children are narrower still
		}
		depth = max(depth, d)
		rect := flameRect{X: x, Y: float64(d * flameRow), W: w, Fill: "#ddd", Hover: flameHover(n)}
		if d > 0 && f.Changed(n) {
			rect.Fill = changeColour(n.DeltaNs() / maxDelta)
			if n.DeltaNs() > 0 {
				g.Grown++
			} else {
				g.Shrunk++
			}
		}
		if chars := int((w - 4) / 7); chars >= 3 {
			rect.TextX, rect.TextY = x+2, rect.Y+11
			rect.Label = report.Clip(report.Printable(n.Name), chars)
		}
		g.Rects = append(g.Rects, rect)
		for _, c := range n.Children {
			draw(c, x, d+1)
			x += width(c) * scale
		}
	}
	draw(f.Root, 0, 0)
	g.H = (depth + 1) * flameRow
	return g
}

// changeColour is red for growth, blue for shrinkage, stronger with the
// change (rel in [-1, 1], relative to the largest change).
func changeColour(rel float64) string {
	light := 90 - 45*min(abs(rel), 1)
	hue := 0
	if rel < 0 {
		hue = 215
	}
	return fmt.Sprintf("hsl(%d,80%%,%.0f%%)", hue, light)
}

func flameHover(n *FlameNode) string {
	rel := ""
	if n.BaseNs > 0 {
		rel = fmt.Sprintf(" (%+.0f%%)", 100*n.DeltaNs()/n.BaseNs)
	}
	return fmt.Sprintf("%s\nbase %s, new %s per step, change %s%s", report.Printable(n.Name),
		units.Duration(n.BaseNs/1e3), units.Duration(n.NewNs/1e3), signed(n.DeltaNs()/1e3), rel)
}
