package export

import (
	"bytes"
	"encoding/csv"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/bottleneck-dev/bottleneck/internal/cli/exitcode"
	"github.com/bottleneck-dev/bottleneck/internal/iostreams"
)

const fixture = `{"traceEvents":[
{"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","pid":1,"tid":1,"ts":0,"dur":1000},
{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":30,"dur":100,"args":{"External id":2}},
{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":40,"dur":20,"args":{"External id":2,"correlation":7}},
{"ph":"X","cat":"kernel","name":"gemm","pid":0,"tid":7,"ts":70,"dur":30,"args":{"correlation":7,"device":0,"stream":7}}
]}`

const pyprof = `{"format":"bottleneck.pyprofile","version":1,"profiler":"sample","interval_s":0.01,
"frames":[{"file":"/u/t.py","func":"main","line":3,"fline":1}],
"threads":[{"id":1,"name":"MainThread","role":"main","samples":5}],
"stacks":[{"thread":0,"frames":[0],"count":5,"window_count":2}]}`

// runDir is a run directory: a trace, a Python profile and a manifest.
func runDir(t *testing.T) string {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"trace-main.pt.trace.json": fixture, "pyprofile-main.json": pyprof,
		"manifest.json": `{"format":"bottleneck.run","version":1}`, "env.json": `{}`,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestInputs(t *testing.T) {
	dir := runDir(t)
	traces, py, err := Inputs(dir)
	if err != nil || len(traces) != 1 || filepath.Base(traces[0]) != "trace-main.pt.trace.json" || filepath.Base(py) != "pyprofile-main.json" {
		t.Fatalf("Inputs: %v %q %v", traces, py, err)
	}
	if _, py, _ := Inputs(filepath.Join(dir, "pyprofile-main.json")); py == "" {
		t.Error("a profile file is not taken as a profile")
	}
}

func TestRunFormats(t *testing.T) {
	dir := runDir(t)
	out := t.TempDir()
	for _, f := range []string{"pprof", "speedscope", "folded", "svg", "perfetto", "chrome", "markdown"} {
		ios, _, _, errOut := iostreams.Test()
		o := &Options{IO: ios, Path: dir, Format: f, Output: filepath.Join(out, "x."+f), Rank: -1, MaxEvents: 1000}
		if err := Run(o); err != nil {
			t.Fatalf("%s: %v (%s)", f, err, errOut)
		}
		if st, err := os.Stat(o.Output); err != nil || st.Size() == 0 {
			t.Errorf("%s: no output", f)
		}
	}
	b, _ := os.ReadFile(filepath.Join(out, "x.pprof"))
	p, err := profile.Parse(bytes.NewReader(b))
	if err != nil || len(p.SampleType) != 2 || p.SampleType[0].Type != "host_time" {
		t.Fatalf("pprof: %v %v", err, p)
	}
	// Python stacks to stdout.
	ios, _, stdout, _ := iostreams.Test()
	if err := Run(&Options{IO: ios, Path: dir, Format: "folded", Stacks: "python", Rank: -1}); err != nil {
		t.Fatal(err)
	}
	if got := stdout.String(); got != "main (/u/t.py:3) 5\n" {
		t.Errorf("python folded: %q", got)
	}
	// CSV: every table into a directory, or one to stdout.
	ios, _, _, _ = iostreams.Test()
	csvDir := filepath.Join(out, "csv")
	if err := Run(&Options{IO: ios, Path: dir, Format: "csv", Output: csvDir, Rank: -1}); err != nil {
		t.Fatal(err)
	}
	f, _ := os.Open(filepath.Join(csvDir, "kernels.csv"))
	recs, err := csv.NewReader(f).ReadAll()
	f.Close()
	if err != nil || len(recs) != 2 || recs[1][0] != "gemm" {
		t.Errorf("kernels.csv: %v %v", recs, err)
	}
}

func TestUsageErrors(t *testing.T) {
	dir := runDir(t)
	// Bad choices are refused while parsing the flags (cli.Main: exit 2).
	for _, args := range [][]string{
		{"-f", "gif"},
		{"-f", "csv", "--table", "nope", "-o", "x"},
		{"-f", "folded", "--stacks", "nope"},
	} {
		ios, _, _, _ := iostreams.Test()
		cmd := NewCmd(ios)
		cmd.SetArgs(append(args, dir))
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		var ee *exitcode.Error
		if err := cmd.Execute(); err == nil || errors.As(err, &ee) || !strings.Contains(err.Error(), "want one of") {
			t.Errorf("%v: %v, want a flag parse error", args, err)
		}
	}
	// csv with neither a table nor a directory: TestParse.
	ios, _, _, _ := iostreams.Test()
	var ee *exitcode.Error
	if err := Run(&Options{IO: ios, Path: filepath.Join(dir, "missing"), Format: "folded", Rank: -1}); !errors.As(err, &ee) || ee.Code != exitcode.Failed {
		t.Errorf("missing path: %v", err)
	}
}
