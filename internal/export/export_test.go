package export

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/bottleneck-dev/bottleneck/internal/driver"
	"github.com/bottleneck-dev/bottleneck/internal/flame"
	"github.com/bottleneck-dev/bottleneck/internal/kineto"
	"github.com/bottleneck-dev/bottleneck/internal/load"
	"github.com/bottleneck-dev/bottleneck/internal/pyprofile"
	"github.com/bottleneck-dev/bottleneck/internal/testutil/tracetest"
	"github.com/bottleneck-dev/bottleneck/internal/trace"
)

// fixture: two steps; hostile names (<script>, |, newline); a sync.
const fixture = `{"traceEvents":[
{"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","pid":1,"tid":1,"ts":0,"dur":1000},
{"ph":"X","cat":"python_function","name":"train.py(12): forward","pid":1,"tid":1,"ts":10,"dur":500},
{"ph":"X","cat":"cpu_op","name":"aten::linear","pid":1,"tid":1,"ts":20,"dur":200,"args":{"External id":1}},
{"ph":"X","cat":"cpu_op","name":"<script>alert(1)</script>|x","pid":1,"tid":1,"ts":30,"dur":100,"args":{"External id":2}},
{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":40,"dur":20,"args":{"External id":2,"correlation":7}},
{"ph":"X","cat":"kernel","name":"gemm<script>|k","pid":0,"tid":7,"ts":70,"dur":30,"args":{"correlation":7,"device":0,"stream":7}},
{"ph":"X","cat":"cuda_runtime","name":"cudaDeviceSynchronize","pid":1,"tid":1,"ts":600,"dur":300,"args":{"correlation":9}},
{"ph":"X","cat":"user_annotation","name":"ProfilerStep#2","pid":1,"tid":1,"ts":1000,"dur":1000},
{"ph":"X","cat":"cpu_op","name":"aten::add","pid":1,"tid":2,"ts":1100,"dur":50,"args":{"External id":3,"Call stack":"model.py(5): fwd;train.py(1): <module>"}},
{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":1110,"dur":10,"args":{"External id":3,"correlation":8}},
{"ph":"X","cat":"kernel","name":"add_kernel","pid":0,"tid":7,"ts":1500,"dur":5,"args":{"correlation":8,"device":0,"stream":7}},
{"ph":"X","cat":"kernel","name":"x\nline","pid":0,"tid":7,"ts":1600,"dur":4,"args":{"device":0,"stream":7}}
]}`

func inputOf(t *testing.T, traces ...*trace.Trace) *Input {
	t.Helper()
	res := &load.Result{Traces: traces}
	return &Input{Traces: traces, Report: driver.Build(res, 0, driver.Options{Rank: -1})}
}

func fixtureInput(t *testing.T) *Input {
	return inputOf(t, tracetest.ReadString(t, fixture))
}

func sharedInput(t *testing.T, rel string) *Input {
	t.Helper()
	return inputOf(t, tracetest.Load(t, rel))
}

const nsTrace = "hta/ns_resolution_trace/rank-0.*.pt.trace.json.gz"

func gen(t *testing.T, in *Input, o Options) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := Generate(&b, in, o); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func pyFixture() *pyprofile.Profile {
	return &pyprofile.Profile{
		Format: pyprofile.Format, Version: 1, Profiler: "sample", IntervalS: 0.005, DurationS: 2,
		Frames: []pyprofile.Frame{
			{File: "/u/train.py", Func: "<module>", Line: 10, FLine: 1},
			{File: "/u/train.py", Func: "step|<b>", Line: 20, FLine: 15},
		},
		Threads: []pyprofile.Thread{{ID: 1, Name: "MainThread", Role: "main"}, {ID: 2, Name: "pin", Role: "pin_memory"}},
		Stacks: []pyprofile.Stack{
			{Thread: 0, Frames: []int{0, 1}, Count: 30},
			{Thread: 0, Frames: []int{0}, Count: 10},
			{Thread: 1, Frames: []int{1}, Count: 4},
		},
	}
}

// checkPprof parses a pprof export and returns the sums of each sample type.
func checkPprof(t *testing.T, b []byte) (*profile.Profile, map[string]int64) {
	t.Helper()
	p, err := profile.Parse(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("profile.Parse: %v", err)
	}
	if err := p.CheckValid(); err != nil {
		t.Fatal(err)
	}
	sums := map[string]int64{}
	for _, s := range p.Sample {
		for i, st := range p.SampleType {
			sums[st.Type] += s.Value[i]
		}
	}
	return p, sums
}

func TestPprofOps(t *testing.T) {
	for n, in := range []*Input{fixtureInput(t), sharedInput(t, nsTrace)} {
		tr := in.Traces[0]
		p, sums := checkPprof(t, gen(t, in, Options{Format: Pprof, Rank: -1}))
		if sums["host_time"] != flame.HostTotal(tr) || sums["device_time"] != flame.DeviceTotal(tr) || sums["device_time"] == 0 {
			t.Errorf("%s: sums %v, want host %d device %d", tr.Path, sums, flame.HostTotal(tr), flame.DeviceTotal(tr))
		}
		// Python frames carry a file and a line.
		var pyLoc bool
		for _, l := range p.Location {
			if len(l.Line) == 1 && strings.HasSuffix(l.Line[0].Function.Filename, ".py") && l.Line[0].Line > 0 {
				pyLoc = true
			}
		}
		if !pyLoc && n == 0 {
			t.Errorf("%s: no Python location with file and line", tr.Path)
		}
	}
	// The fixture's device total is its three kernels: 30+5+4 µs.
	if got := flame.DeviceTotal(fixtureInput(t).Traces[0]); got != 39_000 {
		t.Errorf("fixture device total %d", got)
	}
}

func TestPprofPython(t *testing.T) {
	in := &Input{Python: pyFixture()}
	p, sums := checkPprof(t, gen(t, in, Options{Format: Pprof, Rank: -1}))
	if sums["samples"] != 44 || sums["wall"] != 44*5_000_000 {
		t.Errorf("sums %v", sums)
	}
	for _, l := range p.Location {
		if l.Line[0].Function.Filename != "/u/train.py" || l.Line[0].Line == 0 {
			t.Errorf("location %v lacks file/line", l.Line[0])
		}
	}
	_, sums = checkPprof(t, gen(t, in, Options{Format: Pprof, Rank: -1, Role: "main"}))
	if sums["samples"] != 40 {
		t.Errorf("role main: %v", sums)
	}
}

// validateSpeedscope checks the constraints of speedscope's file format
// schema (src/lib/file-format-spec.ts): required keys, profile types and
// units, frame indexes in range, samples/weights lengths, evented events
// at non-decreasing times with balanced open/close of the same frame.
func validateSpeedscope(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"$schema", "version", "shared", "profiles"} {
		if _, ok := raw[k]; !ok {
			t.Fatalf("missing %q", k)
		}
	}
	if raw["$schema"] != SpeedscopeSchema {
		t.Errorf("$schema %v", raw["$schema"])
	}
	var f SpeedscopeFile
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		t.Fatal(err)
	}
	shared := raw["shared"].(map[string]any)
	frames, ok := shared["frames"].([]any)
	if !ok {
		t.Fatal("shared.frames is not an array")
	}
	for i, fr := range frames {
		if _, ok := fr.(map[string]any)["name"].(string); !ok {
			t.Errorf("frame %d has no name", i)
		}
	}
	units := map[string]bool{"none": true, "nanoseconds": true, "microseconds": true, "milliseconds": true, "seconds": true, "bytes": true}
	if len(f.Profiles) == 0 {
		t.Fatal("no profiles")
	}
	for _, rp := range raw["profiles"].([]any) {
		m := rp.(map[string]any)
		for _, k := range []string{"type", "name", "unit", "startValue", "endValue"} {
			if _, ok := m[k]; !ok {
				t.Errorf("profile %v: missing %q", m["name"], k)
			}
		}
		switch m["type"] {
		case "sampled":
			for _, k := range []string{"samples", "weights"} {
				if _, ok := m[k].([]any); !ok {
					t.Errorf("sampled profile %v: %q missing or not an array", m["name"], k)
				}
			}
		case "evented":
			if _, ok := m["events"].([]any); !ok {
				t.Errorf("evented profile %v: no events array", m["name"])
			}
		}
	}
	for _, p := range f.Profiles {
		if !units[p.Unit] || p.Name == "" || p.EndValue < p.StartValue {
			t.Errorf("profile %q: unit %q start %d end %d", p.Name, p.Unit, p.StartValue, p.EndValue)
		}
		switch p.Type {
		case "sampled":
			if len(p.Samples) != len(p.Weights) {
				t.Errorf("%q: %d samples, %d weights", p.Name, len(p.Samples), len(p.Weights))
			}
			for _, s := range p.Samples {
				for _, fi := range s {
					if fi < 0 || fi >= len(frames) {
						t.Fatalf("%q: frame %d out of range", p.Name, fi)
					}
				}
			}
			for _, w := range p.Weights {
				if w < 0 {
					t.Errorf("%q: negative weight", p.Name)
				}
			}
		case "evented":
			var stack []int
			last := p.StartValue
			for i, e := range p.Events {
				if e.Frame < 0 || e.Frame >= len(frames) {
					t.Fatalf("%q: frame %d out of range", p.Name, e.Frame)
				}
				if e.At < last || e.At > p.EndValue {
					t.Fatalf("%q: event %d at %d after %d (end %d)", p.Name, i, e.At, last, p.EndValue)
				}
				last = e.At
				switch e.Type {
				case "O":
					stack = append(stack, e.Frame)
				case "C":
					if len(stack) == 0 || stack[len(stack)-1] != e.Frame {
						t.Fatalf("%q: event %d closes frame %d, open %v", p.Name, i, e.Frame, stack)
					}
					stack = stack[:len(stack)-1]
				default:
					t.Fatalf("%q: event type %q", p.Name, e.Type)
				}
			}
			if len(stack) != 0 {
				t.Errorf("%q: %d frames left open", p.Name, len(stack))
			}
		default:
			t.Errorf("profile type %q", p.Type)
		}
	}
	return raw
}

func TestSpeedscope(t *testing.T) {
	in := fixtureInput(t)
	in.Python = pyFixture()
	b := gen(t, in, Options{Format: Speedscope, Rank: -1})
	validateSpeedscope(t, b)
	var f SpeedscopeFile
	json.Unmarshal(b, &f)
	var names []string
	var hostSum int64
	for _, p := range f.Profiles {
		names = append(names, p.Type+":"+p.Name)
		if strings.HasPrefix(p.Name, "host time") {
			for _, w := range p.Weights {
				hostSum += w
			}
		}
	}
	want := "sampled:host time (op self time),sampled:device time (launched by op),evented:thread 1,evented:thread 2,sampled:python: main,sampled:python: pin_memory"
	if got := strings.Join(names, ","); got != want {
		t.Errorf("profiles %s\nwant %s", got, want)
	}
	if hostSum != flame.HostTotal(in.Traces[0]) {
		t.Errorf("host weights %d, want %d", hostSum, flame.HostTotal(in.Traces[0]))
	}
	validateSpeedscope(t, gen(t, sharedInput(t, nsTrace), Options{Format: Speedscope, Rank: -1}))
	validateSpeedscope(t, gen(t, sharedInput(t, "hta/call_stack/backward_thread.json"), Options{Format: Speedscope, Rank: -1}))
}

func TestFoldedAndSVG(t *testing.T) {
	in := fixtureInput(t)
	folded := string(gen(t, in, Options{Format: Folded, Rank: -1, Stacks: StacksDevice}))
	if !strings.Contains(folded, ";gemm<script>|k 30000\n") || !strings.Contains(folded, "(no host op);x line 4000\n") {
		t.Errorf("folded:\n%s", folded)
	}
	for _, stacks := range []string{StacksOps, StacksDevice} {
		svg := gen(t, in, Options{Format: SVG, Rank: -1, Stacks: stacks})
		checkXML(t, svg)
		if bytes.Contains(bytes.ToLower(svg), []byte("<script")) {
			t.Errorf("%s: svg holds a raw <script", stacks)
		}
		if !bytes.Contains(svg, []byte("&lt;script&gt;")) {
			t.Errorf("%s: escaped name missing", stacks)
		}
	}
	big := sharedInput(t, nsTrace)
	svg := gen(t, big, Options{Format: SVG, Rank: -1, MaxNodes: 300})
	checkXML(t, svg)
	if n := bytes.Count(svg, []byte("<rect")); n > 301 || n < 50 {
		t.Errorf("%d rects for MaxNodes 300", n)
	}
	checkXML(t, gen(t, &Input{Python: pyFixture()}, Options{Format: SVG, Rank: -1}))
}

func checkXML(t *testing.T, b []byte) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(b))
	for {
		_, err := d.Token()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatalf("svg is not well-formed XML: %v", err)
		}
	}
}

func TestChromeFixture(t *testing.T) {
	in := fixtureInput(t)
	var b bytes.Buffer
	sum, err := WriteChrome(&b, in, Options{Rank: -1})
	if err != nil {
		t.Fatal(err)
	}
	back, err := kineto.Read(bytes.NewReader(b.Bytes()), "export.json", kineto.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Problems.List) > 0 {
		t.Errorf("problems reading the export: %+v", back.Problems.List)
	}
	orig := in.Traces[0]
	if sum.KeptEvents != orig.Events.Len() || sum.DroppedShort+sum.DroppedOutside != 0 {
		t.Errorf("summary %+v", sum)
	}
	kept, analysis := countBack(back)
	if kept != orig.Events.Len() {
		t.Errorf("read back %d trace events, want %d", kept, orig.Events.Len())
	}
	// Links survive: the gemm kernel still has its launch and op.
	var linked bool
	for i := range back.Events.Len() {
		if back.Name(i) == "gemm<script>|k" && back.Events.Op(i) != trace.None && back.Name(int(back.Events.Op(i))) == "<script>alert(1)</script>|x" {
			linked = true
		}
		if back.Events.Start[i] != orig.Events.Start[0] && back.Name(i) == "ProfilerStep#1" {
			t.Errorf("times moved")
		}
	}
	if !linked {
		t.Error("kernel lost its op after the round trip")
	}
	if len(back.Steps) != 2 {
		t.Errorf("%d steps read back", len(back.Steps))
	}
	tracks := map[string]bool{}
	for _, tr := range back.Tracks {
		tracks[tr.ThreadName] = true
	}
	for _, name := range []string{"steps", "blocking syncs", "GPU idle dev 0 stream 7"} {
		if !tracks[name] {
			t.Errorf("no analysis track %q (have %v)", name, tracks)
		}
	}
	if analysis == 0 || analysis > sum.AnalysisEvents {
		t.Errorf("analysis events read back %d, summary %d", analysis, sum.AnalysisEvents)
	}
	var syncOnTrack bool
	for i := range back.Events.Len() {
		if back.Name(i) == "cudaDeviceSynchronize" && back.Tracks[back.Events.Track[i]].ThreadName == "blocking syncs" {
			syncOnTrack = true
		}
	}
	if !syncOnTrack {
		t.Error("sync not on the blocking syncs track")
	}
}

// countBack counts read-back events: the trace's own and the analysis's.
func countBack(t *trace.Trace) (kept, analysis int) {
	for i := range t.Events.Len() {
		if t.Str(t.Events.Cat(i)) == AnalysisCat {
			analysis++
		} else {
			kept++
		}
	}
	return kept, analysis
}

func TestChromeBudget(t *testing.T) {
	in := sharedInput(t, nsTrace)
	orig := in.Traces[0]
	for _, budget := range []int{3000, 20000} {
		var b bytes.Buffer
		var notes []string
		sum, err := WriteChrome(&b, in, Options{Rank: -1, MaxEvents: budget, Notes: func(s string) { notes = append(notes, s) }})
		if err != nil {
			t.Fatal(err)
		}
		back, err := kineto.Read(bytes.NewReader(b.Bytes()), "export.json", kineto.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(back.Problems.List) > 0 {
			t.Errorf("problems: %+v", back.Problems.List)
		}
		kept, analysis := countBack(back)
		if kept != sum.KeptEvents {
			t.Errorf("budget %d: read back %d trace events, summary says %d", budget, kept, sum.KeptEvents)
		}
		if kept+analysis > budget || kept < budget/2 {
			t.Errorf("budget %d: %d trace + %d analysis events", budget, kept, analysis)
		}
		if sum.KeptEvents+sum.DroppedOutside+sum.DroppedShort != orig.Events.Len() {
			t.Errorf("kept %d + dropped %d + %d != %d", sum.KeptEvents, sum.DroppedOutside, sum.DroppedShort, orig.Events.Len())
		}
		if len(notes) == 0 || len(sum.KeptSteps) == 0 {
			t.Errorf("budget %d: notes %v, summary %+v", budget, notes, sum)
		}
		// The summary is in the file too.
		var top struct {
			Export ChromeSummary `json:"bottleneckExport"`
		}
		if err := json.Unmarshal(b.Bytes(), &top); err != nil || top.Export.KeptEvents != sum.KeptEvents {
			t.Errorf("bottleneckExport key: %v %+v", err, top.Export)
		}
		if analysis == 0 {
			t.Error("no analysis events")
		}
	}
}

func TestCSV(t *testing.T) {
	for _, in := range []*Input{fixtureInput(t), sharedInput(t, nsTrace)} {
		dir := t.TempDir()
		paths, err := WriteCSVTables(dir, in.Report)
		if err != nil {
			t.Fatal(err)
		}
		if len(paths) != len(Tables) {
			t.Fatalf("%d files", len(paths))
		}
		for _, p := range paths {
			f, _ := os.Open(p)
			recs, err := csv.NewReader(f).ReadAll() // also checks equal field counts
			f.Close()
			if err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			if len(recs) == 0 {
				t.Errorf("%s: empty", p)
			}
			if filepath.Base(p) == "operators.csv" {
				if len(recs)-1 != len(in.Report.Traces[0].Ops.Rows) || recs[0][0] != "name" {
					t.Errorf("operators: %d rows, header %v", len(recs)-1, recs[0])
				}
			}
		}
	}
	var b bytes.Buffer
	if err := Generate(&b, fixtureInput(t), Options{Format: CSV, Table: "kernels", Rank: -1}); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&b).ReadAll()
	if err != nil || len(recs) != 4 {
		t.Fatalf("kernels: %v %v", err, recs)
	}
	if err := Generate(io.Discard, fixtureInput(t), Options{Format: CSV, Table: "nope"}); err == nil {
		t.Error("unknown table accepted")
	}
	if got := csvSafe("=HYPERLINK(1)"); got != "'=HYPERLINK(1)" || csvSafe("-1.5") != "-1.5" {
		t.Errorf("csvSafe: %q", got)
	}
}

func TestMarkdown(t *testing.T) {
	in := fixtureInput(t)
	in.Python = pyFixture()
	in.Verdict = "sync-bound <b>"
	in.Findings = []Finding{{Severity: "high", Title: "cudaDeviceSynchronize | blocks", Detail: "line\nbreak"}}
	md := string(gen(t, in, Options{Format: Markdown, Rank: -1}))
	for _, bad := range []string{"<script", "<b>", "line\nbreak"} {
		if strings.Contains(md, bad) {
			t.Errorf("markdown holds %q:\n%s", bad, md)
		}
	}
	if regexp.MustCompile(`[^\\]\|x`).MatchString(md) {
		t.Errorf("unescaped | in a name:\n%s", md)
	}
	for _, want := range []string{"&lt;script&gt;alert\\(1\\)&lt;/script&gt;\\|x", "**Verdict:** sync-bound &lt;b&gt;", "Top kernels", "step\\|&lt;b&gt;"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	// Every table row has the same number of unescaped pipes as its header.
	var cols int
	for _, line := range strings.Split(md, "\n") {
		if !strings.HasPrefix(line, "|") {
			cols = 0
			continue
		}
		n := strings.Count(line, "|") - strings.Count(line, `\|`)
		if cols == 0 {
			cols = n
		} else if n != cols {
			t.Errorf("row with %d cells after a header of %d: %s", n, cols, line)
		}
	}
}

func TestNoInput(t *testing.T) {
	for _, f := range []string{Pprof, Speedscope, Folded, SVG, Chrome, Markdown} {
		if err := Generate(io.Discard, &Input{}, Options{Format: f, Rank: -1}); !errors.Is(err, ErrNoInput) {
			t.Errorf("%s: %v", f, err)
		}
	}
	if err := Generate(io.Discard, &Input{}, Options{Format: "gif"}); err == nil {
		t.Error("unknown format accepted")
	}
}
