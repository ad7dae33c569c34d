package rundir_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/steptimes"
	"github.com/bottleneck-dev/bottleneck/internal/rundir"
	"github.com/bottleneck-dev/bottleneck/internal/testutil"
)

func TestReadRealRun(t *testing.T) {
	dir := testutil.RunDir(t, "slow_dataset")
	run, err := rundir.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if run.Manifest.Command.Mode != "script" || len(run.Traces) != 1 || run.Host["num_cpu"] == nil || len(run.Env) == 0 {
		t.Fatalf("manifest %+v, traces %v, host %v", run.Manifest.Command, run.Traces, run.Host)
	}
	if len(run.Processes) != 1 {
		t.Fatalf("%d processes", len(run.Processes))
	}
	p := run.Processes[0]
	if p.Tag != "rank0" || p.Env == nil || p.Env.Torch == nil || p.Evidence == nil || p.Profile == nil {
		t.Fatalf("process %+v", p)
	}
	// step_times feed the profiler-inflation rule (runevidence.RunEvidence.OutsideStepS)
	if s := p.Evidence.StepSeries(); len(s) != 19 || !s[7].InWindow || s[0].InWindow {
		t.Errorf("step series %+v", s)
	}
	if len(p.Evidence.DataLoader.Loaders) != 1 || len(p.Evidence.WindowSteps) == 0 {
		t.Errorf("dataloader %+v, window steps %d", p.Evidence.DataLoader, len(p.Evidence.WindowSteps))
	}
}

// Step rows carry the step's CPU wait as a fifth column (null where not
// measured) and its DataLoader wait as a sixth; rows of older agents have
// four or five, malformed ones are skipped.
func TestStepSeriesWaits(t *testing.T) {
	ev := &rundir.Evidence{StepTimes: [][]any{
		{1.0, 0.0, 0.01, false},
		{2.0, 0.01, 0.02, true, 0.004},
		{3.0, 0.03, 0.01, false, nil, 0.006},
		{4.0, "x", 0.01, false, 0.1},
	}}
	want := []steptimes.Step{{N: 1, DurS: 0.01}, {N: 2, StartS: 0.01, DurS: 0.02, InWindow: true, CPUWaitS: 0.004}, {N: 3, StartS: 0.03, DurS: 0.01, LoaderWaitS: 0.006}}
	if got := ev.StepSeries(); !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

func TestReadRefusesNewerOrForeignFiles(t *testing.T) {
	for name, tc := range map[string]struct{ file, body, want string }{
		"newer manifest":   {rundir.ManifestName, `{"format":"bottleneck.run","version":2}`, "version 2"},
		"foreign manifest": {rundir.ManifestName, `{"format":"other","version":1}`, `not a bottleneck.run file`},
		"broken manifest":  {rundir.ManifestName, `{"format":`, "manifest.json"},
		"newer evidence":   {rundir.EvidenceName("rank0"), `{"format":"bottleneck.evidence","version":9}`, "version 9"},
		"broken evidence":  {rundir.EvidenceName("rank0"), `[1,`, "evidence-rank0.json"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := testutil.RunDir(t, "slow_dataset")
			if err := os.WriteFile(filepath.Join(dir, tc.file), []byte(tc.body), 0o644); err != nil {
				t.Fatal(err)
			}
			run, err := rundir.Read(dir)
			if tc.file != rundir.ManifestName && err == nil {
				err = run.Processes[0].EvidenceErr
				if run.Processes[0].Evidence != nil {
					t.Error("evidence decoded despite the error")
				}
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.file) {
				t.Errorf("error %v, want one naming %s and %q", err, tc.file, tc.want)
			}
		})
	}
}

// tried.json (run --verify) is read with the run; a damaged one is an
// error naming it, the rest of the run still read.
func TestTried(t *testing.T) {
	dir := testutil.RunDir(t, "slow_dataset")
	if run, err := rundir.Read(dir); err != nil || run.Tried != nil || run.TriedErr != nil {
		t.Fatalf("not verified: %v %+v %v", err, run.Tried, run.TriedErr)
	}
	want := []rundir.TriedChange{{Rule: "input.loader", Set: map[string]string{"num_workers": "2"}, Dir: dir + "-tried-1", MeanBaseUs: 42400, MeanNewUs: 19800, MeanSpeedup: 2.14}}
	if err := rundir.WriteTried(dir, want); err != nil {
		t.Fatal(err)
	}
	run, err := rundir.Read(dir)
	if err != nil || run.Tried == nil || len(run.Tried.Changes) != 1 || run.Tried.Changes[0].MeanNewUs != 19800 || run.Tried.Changes[0].Set["num_workers"] != "2" {
		t.Fatalf("read back: %v %+v", err, run.Tried)
	}
	if err := os.WriteFile(filepath.Join(dir, rundir.TriedName), []byte(`{"format":"bottleneck.tried","version":7}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if run, err := rundir.Read(dir); err != nil || run.Tried != nil || run.TriedErr == nil || !strings.Contains(run.TriedErr.Error(), "tried.json") || len(run.Processes) == 0 {
		t.Errorf("a newer tried.json: %v, %v", err, run.TriedErr)
	}
}

func TestNotARunDirectory(t *testing.T) {
	if rundir.Is(t.TempDir()) || rundir.Is(testutil.Traces(t)) {
		t.Error("a directory without manifest.json taken for a run directory")
	}
}

func TestFileKind(t *testing.T) {
	for name, want := range map[string]string{
		"trace-rank0.pt.trace.json.gz":    "trace rank0",
		"trace-rank1.w2.pt.trace.json.gz": "trace rank1",
		"trace-main.pt.trace.json":        "trace main",
		"pyprofile-rank3.json":            "pyprofile rank3",
		"pyprofile-rank3.pstats":          "pstats rank3",
		"evidence-main.json":              "evidence main",
		"env-rank0.json":                  "process-env rank0",
		"env.json":                        "env ",
		"report.html":                     "report-html ",
		"manifest.json":                   "manifest ",
		"tried.json":                      "tried ",
		"model.pt":                        "other ",
		"trace-.pt.trace.json.gz":         "other ",
	} {
		kind, tag := rundir.FileKind(name)
		if got := string(kind) + " " + tag; got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
}

func TestTagOrder(t *testing.T) {
	tags := []string{"rank10", "main", "rank2", "rank0"}
	for i := range tags {
		for j := range tags {
			if rundir.TagLess(tags[i], tags[j]) && rundir.TagLess(tags[j], tags[i]) {
				t.Fatalf("%s and %s both less", tags[i], tags[j])
			}
		}
	}
	if !rundir.TagLess("rank2", "rank10") || !rundir.TagLess("rank10", "main") || rundir.TagLess("main", "rank0") {
		t.Error("want rank0 < rank2 < rank10 < main")
	}
}

// The manifest lists the DataLoader workers' profiles and drops the
// temporary file of a worker killed while writing.
func TestScanFilesListsWorkers(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, rundir.WorkersDirName("rank0"))
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"101.json", "102.json.tmp-102-1"} {
		if err := os.WriteFile(filepath.Join(sub, n), []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "evidence-rank0.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	var m rundir.Manifest
	if err := m.ScanFiles(dir); err != nil {
		t.Fatal(err)
	}
	want := []rundir.File{{Path: "evidence-rank0.json", Kind: "evidence", Bytes: 2, Tag: "rank0"}, {Path: "pyworkers-rank0/101.json", Kind: "pyworkers", Bytes: 2, Tag: "rank0"}}
	if !reflect.DeepEqual(m.Files, want) {
		t.Errorf("files %+v, want %+v", m.Files, want)
	}
	if _, err := os.Stat(filepath.Join(sub, "102.json.tmp-102-1")); !os.IsNotExist(err) {
		t.Errorf("temporary file left: %v", err)
	}
}

// The CPUs a process may use: its affinity or the machine's count, no
// more than its cgroup's quota, rounded, and at least one.
func TestEnvCPUs(t *testing.T) {
	q := func(v float64) *float64 { return &v }
	for _, c := range []struct {
		count, affinity int
		quota           *float64
		want            int
	}{
		{64, 0, nil, 64}, {64, 8, nil, 8}, {64, 8, q(2), 2}, {64, 8, q(2.4), 2},
		{2, 2, q(1.25), 1}, {2, 2, q(1.5), 2}, {64, 8, q(16), 8}, {2, 2, q(0.5), 1}, {0, 0, q(2), 0},
	} {
		e := &rundir.Env{CPUCount: c.count, CPUAffinity: c.affinity, CPUQuota: c.quota}
		if got := e.CPUs(); got != c.want {
			t.Errorf("count %d, affinity %d, quota %v: %d CPUs, want %d", c.count, c.affinity, ptrVal(c.quota), got, c.want)
		}
	}
	if (*rundir.Env)(nil).CPUs() != 0 {
		t.Error("nil env: want 0")
	}
}

func ptrVal(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}
