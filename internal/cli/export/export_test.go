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

	"github.com/bottleneck-dev/bottleneck/internal/cli/clitest"
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

// TestPathKinds: export opens its path as every command does
// (driver.Open): a directory of traces holding a run directory's other
// files (no manifest) gives its traces and its main Python profile, the
// other files left out; a Python profile is taken by its name or by its
// content; a directory of profiles alone gives the first by name.
func TestPathKinds(t *testing.T) {
	other := strings.Replace(pyprof, `"func":"main"`, `"func":"loader"`, 1)
	bare := t.TempDir()
	for name, body := range map[string]string{
		"trace-main.pt.trace.json": fixture, "pyprofile-main.json": pyprof, "pyprofile-rank1.json": other,
		"env.json": `{}`, "evidence-main.json": `{}`, "report.json": `{}`, "pyworkers-main/123.json": `{}`,
	} {
		os.MkdirAll(filepath.Join(bare, filepath.Dir(name)), 0o755)
		if err := os.WriteFile(filepath.Join(bare, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sniffed := filepath.Join(t.TempDir(), "prof.json")
	os.WriteFile(sniffed, []byte(other), 0o644)
	damaged := filepath.Join(t.TempDir(), "pyprofile-main.json")
	os.WriteFile(damaged, []byte(pyprof[:40]), 0o644)
	pyOnly := t.TempDir()
	os.WriteFile(filepath.Join(pyOnly, "pyprofile-rank2.json"), []byte(pyprof), 0o644)
	os.WriteFile(filepath.Join(pyOnly, "pyprofile-rank1.json"), []byte(other), 0o644)
	_, opsFolded, _ := clitest.Run(NewCmd, filepath.Join(bare, "trace-main.pt.trace.json"), "-f", "folded")
	if !strings.Contains(opsFolded, "aten::mm") {
		t.Fatalf("folded ops of the trace: %q", opsFolded)
	}
	for _, tc := range []struct {
		args   []string
		code   int
		stdout string
	}{
		{[]string{bare, "-f", "folded"}, 0, opsFolded},
		{[]string{bare, "-f", "folded", "--stacks", "python"}, 0, "main (/u/t.py:3) 5\n"},
		{[]string{filepath.Join(bare, "pyprofile-rank1.json"), "-f", "folded"}, 0, "loader (/u/t.py:3) 5\n"},
		{[]string{sniffed, "-f", "folded"}, 0, "loader (/u/t.py:3) 5\n"},
		{[]string{pyOnly, "-f", "folded"}, 0, "loader (/u/t.py:3) 5\n"},
		{[]string{filepath.Join(bare, "missing"), "-f", "folded"}, 1, ""},
		{[]string{damaged, "-f", "folded"}, 1, ""},
	} {
		code, stdout, stderr := clitest.Run(NewCmd, tc.args...)
		if code != tc.code || stdout != tc.stdout {
			t.Errorf("%q: exit %d, stdout %q; want %d, %q (stderr %q)", tc.args, code, stdout, tc.code, tc.stdout, stderr)
		}
		if code == 0 && stderr != "" || code != 0 && !strings.Contains(stderr, tc.args[0]) {
			t.Errorf("%q: exit %d, stderr %q", tc.args, code, stderr)
		}
	}
	// the Python profile's file names speedscope's profile
	if _, stdout, _ := clitest.Run(NewCmd, bare, "-f", "speedscope", "--stacks", "python"); !strings.Contains(stdout, `"pyprofile-main.json`) {
		t.Errorf("speedscope does not name the profile's file: %.300s", stdout)
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
