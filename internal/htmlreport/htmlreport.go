// Package htmlreport renders the report as one self-contained HTML file
// (all CSS, JavaScript and data inline; it opens from disk with no network)
// and provides the page data that `bottleneck serve` serves live.
//
// Layering (as pprof's): it reads the report (internal/report), the trace
// model for the timeline, GPU utilization and the host call tree, and the
// run directory's Python profile and environment summary; it never runs an
// analysis itself beyond these drawable summaries. The front-end lives in
// web/ and is built into assets/ (see docs/report.md), so `go build` needs
// no Node.
//
// Untrusted input: every name in the data comes from traces or profiles.
// The data travels as JSON inside <script type="application/json"> with
// <, >, &, U+2028 and U+2029 escaped, so no name can close the element;
// the front-end renders names with textContent only.
package htmlreport

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"sort"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/steptimes"
	"github.com/bottleneck-dev/bottleneck/internal/atomicfile"
	"github.com/bottleneck-dev/bottleneck/internal/pyprofile"
	"github.com/bottleneck-dev/bottleneck/internal/report"
	"github.com/bottleneck-dev/bottleneck/internal/rundir"
	"github.com/bottleneck-dev/bottleneck/internal/trace"
)

//go:embed assets/app.js assets/app.css
var assets embed.FS

// Schema names the page data format.
const Schema = "bottleneck.html/v1"

// Data is everything the page shows.
type Data struct {
	Schema string         `json:"schema"`
	Title  string         `json:"title"`
	Report *report.Report `json:"report"`
	// Views holds the drawable summaries per trace, aligned with
	// Report.Traces.
	Views []View `json:"views"`
	// Python holds one entry per profiled process of a run directory.
	Python []PythonView `json:"python,omitempty"`
	// Env is the run directory's environment summary (env.json), as is.
	Env json.RawMessage `json:"env,omitempty"`
	// Steps holds every step of each process of a run directory (not only
	// the window's), with the series' summary.
	Steps []StepsView `json:"steps,omitempty"`
	// Tried are the changes `run --verify` tried (tried.json), measured
	// against predicted, with both runs' compared steps.
	Tried []rundir.TriedChange `json:"tried,omitempty"`
	// Repro are the run directory's repro scripts, relative to it (where
	// report.html is).
	Repro []string `json:"repro,omitempty"`
	// Live is set by `bottleneck serve`: the page may ask the server for
	// finer timeline windows.
	Live bool `json:"live,omitempty"`
}

// StepsView is one process's step times over the whole run: each step as
// [step, start s, duration s, 1 when inside the profiled window].
type StepsView struct {
	Tag     string             `json:"tag"`
	Steps   [][4]float64       `json:"steps"`
	Summary *steptimes.Summary `json:"summary"`
	Notes   []string           `json:"notes,omitempty"`
}

// View holds one trace's summaries.
type View struct {
	Path        string        `json:"path"`
	Rank        int           `json:"rank"`
	Timeline    *Timeline     `json:"timeline,omitempty"`
	Utilization *Utilization  `json:"gpu_utilization,omitempty"`
	OpsFlames   []*FlameGraph `json:"ops_flames,omitempty"`
}

// PythonView is one process's Python profile: a flame graph and a table of
// functions.
type PythonView struct {
	Tag       string      `json:"tag"`
	Profiler  string      `json:"profiler"`
	Samples   int         `json:"samples"`
	IntervalS float64     `json:"interval_s"`
	Flame     *FlameGraph `json:"flame,omitempty"`
	Functions []PyFunc    `json:"functions"`
}

// PyFunc is one row of the Python table.
type PyFunc struct {
	Func  string  `json:"func"`
	File  string  `json:"file"`
	Line  int     `json:"line"`
	Self  float64 `json:"self_s"`
	Total float64 `json:"total_s"`
	Calls int64   `json:"calls,omitempty"`
}

// Options tune Build.
type Options struct {
	Title    string
	Timeline TimelineOptions
	// UtilBins is the number of GPU utilization bins (default 300).
	UtilBins int
}

// Input is what a page is built from. Traces are matched to the report's
// traces by path; Profiles map process tags (rank0, ...) to profiles.
type Input struct {
	Report   *report.Report
	Traces   []*trace.Trace
	Profiles map[string]*pyprofile.Profile
	Env      json.RawMessage
	// Runs are the run directories the report came from (their step times).
	Runs []*rundir.Run
}

// Build computes the page data.
func Build(in Input, o Options) *Data {
	d := &Data{Schema: Schema, Title: o.Title, Report: in.Report, Views: []View{}}
	if d.Title == "" {
		d.Title = "bottleneck report"
	}
	byPath := map[string]*trace.Trace{}
	for _, t := range in.Traces {
		byPath[t.Path] = t
	}
	if in.Report != nil {
		for _, tr := range in.Report.Traces {
			v := View{Path: tr.Path, Rank: tr.Rank}
			if t := byPath[tr.Path]; t != nil {
				v.Timeline = BuildTimeline(t, o.Timeline)
				v.Utilization = BuildUtilization(t, o.UtilBins)
				v.OpsFlames = OpsFlames(t)
			}
			d.Views = append(d.Views, v)
		}
	}
	tags := make([]string, 0, len(in.Profiles))
	for tag := range in.Profiles {
		tags = append(tags, tag)
	}
	sort.Strings(tags)
	for _, tag := range tags {
		d.Python = append(d.Python, pythonView(tag, in.Profiles[tag]))
	}
	if len(in.Env) > 0 && json.Valid(in.Env) {
		d.Env = in.Env
	}
	for _, run := range in.Runs {
		if run.Tried != nil {
			d.Tried = append(d.Tried, run.Tried.Changes...)
		}
		d.Repro = append(d.Repro, run.Repro...)
		for _, pf := range run.Processes {
			if v, ok := stepsView(pf); ok {
				d.Steps = append(d.Steps, v)
			}
		}
	}
	return d
}

func stepsView(pf *rundir.ProcessFiles) (StepsView, bool) {
	if pf.Evidence == nil {
		return StepsView{}, false
	}
	steps := pf.Evidence.StepSeries()
	sum := steptimes.Summarize(steps)
	if sum == nil || len(steps) < 2 {
		return StepsView{}, false
	}
	v := StepsView{Tag: pf.Tag, Summary: sum, Notes: sum.Notes()}
	for _, st := range steps {
		in := 0.0
		if st.InWindow {
			in = 1
		}
		v.Steps = append(v.Steps, [4]float64{float64(st.N), st.StartS, st.DurS, in})
	}
	return v, true
}

func pythonView(tag string, p *pyprofile.Profile) PythonView {
	v := PythonView{Tag: tag, Profiler: p.Profiler, Samples: p.Samples, IntervalS: p.IntervalS, Flame: PythonFlame(p), Functions: []PyFunc{}}
	type key struct {
		file, fn string
		line     int
	}
	rows := map[key]*PyFunc{}
	row := func(f pyprofile.Frame) *PyFunc {
		k := key{f.File, f.Func, f.FLine}
		r := rows[k]
		if r == nil {
			line := f.FLine
			if line == 0 {
				line = f.Line
			}
			r = &PyFunc{Func: f.Func, File: f.File, Line: line}
			rows[k] = r
		}
		return r
	}
	if len(p.Functions) > 0 { // cProfile
		for _, fn := range p.Functions {
			r := row(p.Frames[fn.Frame])
			r.Self += fn.TotTimeS
			r.Total += fn.CumTimeS
			r.Calls += fn.NCalls
		}
	} else {
		iv := p.IntervalS
		if iv <= 0 {
			iv = 0.01
		}
		for _, s := range p.Stacks {
			seen := map[*PyFunc]bool{}
			for j, f := range s.Frames {
				r := row(p.Frames[f])
				if j == len(s.Frames)-1 {
					r.Self += float64(s.Count) * iv
				}
				if !seen[r] {
					seen[r] = true
					r.Total += float64(s.Count) * iv
				}
			}
		}
	}
	for _, r := range rows {
		v.Functions = append(v.Functions, *r)
	}
	sort.Slice(v.Functions, func(a, b int) bool {
		fa, fb := v.Functions[a], v.Functions[b]
		if fa.Self != fb.Self {
			return fa.Self > fb.Self
		}
		return fa.File+fa.Func < fb.File+fb.Func
	})
	if len(v.Functions) > 2000 {
		v.Functions = v.Functions[:2000]
	}
	return v
}

// MarshalData encodes d as JSON safe to place inside a <script> element:
// <, >, &, U+2028 and U+2029 are written as \u escapes (encoding/json's
// HTML escaping), so no string in it can end the element or open a comment.
func MarshalData(d *Data) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(true)
	if err := enc.Encode(d); err != nil {
		return nil, err
	}
	out := bytes.TrimRight(b.Bytes(), "\n")
	// encoding/json already escapes U+2028/2029; check the guarantee anyway.
	if bytes.Contains(out, []byte("</")) || bytes.ContainsAny(out, "<>&\u2028\u2029") {
		return nil, fmt.Errorf("htmlreport: unescaped character in page data")
	}
	return out, nil
}

// Asset returns an embedded front-end file: "app.js" or "app.css".
func Asset(name string) ([]byte, bool) {
	b, err := assets.ReadFile("assets/" + name)
	return b, err == nil
}

var page = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="{{.CSP}}">
<title>{{.Title}}</title>
{{if .Inline}}<style>{{.CSS}}</style>{{else}}<link rel="stylesheet" href="app.css">{{end}}
</head>
<body>
<div id="app"><noscript>This report needs JavaScript.</noscript></div>
{{if .Inline}}<script type="application/json" id="bottleneck-data">{{.Data}}</script>
<script>{{.JS}}</script>{{else}}<script src="app.js"></script>{{end}}
</body>
</html>
`))

type pageArgs struct {
	Title  string
	CSP    string
	Inline bool
	CSS    template.CSS
	Data   template.JS
	JS     template.JS
}

// Write renders d as one self-contained HTML file.
func Write(w io.Writer, d *Data) error {
	data, err := MarshalData(d)
	if err != nil {
		return err
	}
	js, _ := Asset("app.js")
	css, _ := Asset("app.css")
	if bytes.Contains(js, []byte("</script")) || bytes.Contains(css, []byte("</style")) {
		return fmt.Errorf("htmlreport: front-end bundle contains a closing tag")
	}
	// The CSP forbids every network fetch and every script but the inline
	// bundle: an injected <script> or onerror= would not run even if some
	// name escaped the front-end's textContent rendering.
	csp := "default-src 'none'; img-src data: blob:; style-src 'unsafe-inline'; script-src " + scriptHash(js) + "; connect-src 'none'"
	return page.Execute(w, pageArgs{Title: d.Title, CSP: csp, Inline: true, CSS: template.CSS(css), Data: template.JS(data), JS: template.JS(js)})
}

// WriteShell renders the page that `bottleneck serve` serves: it loads
// app.js, app.css and the data from the server.
func WriteShell(w io.Writer, title string) error {
	csp := "default-src 'none'; img-src data: blob:; style-src 'self'; script-src 'self'; connect-src 'self'"
	return page.Execute(w, pageArgs{Title: title, CSP: csp})
}

// WriteFile renders d into path atomically.
func WriteFile(path string, d *Data) error {
	var b bytes.Buffer
	if err := Write(&b, d); err != nil {
		return err
	}
	return atomicfile.Write(path, b.Bytes())
}

// scriptHash is the CSP source that allows exactly the inline script js.
func scriptHash(js []byte) string {
	sum := sha256.Sum256(js)
	return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
}
