package runreport

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bottleneck-dev/bottleneck/internal/pyprofile"
	"github.com/bottleneck-dev/bottleneck/internal/rundir"
	"github.com/bottleneck-dev/bottleneck/internal/textsafe"
)

// A run whose bottleneck was SIGKILLed leaves manifest.json at "running":
// the report must say the run was interrupted; an ended run must not.
func TestInterruptedRunIsSaid(t *testing.T) {
	for state, want := range map[string]bool{"running": true, "ended": false} {
		dir := t.TempDir()
		m := &rundir.Manifest{Format: rundir.ManifestFormat, Version: 1, State: state, Started: time.Now(),
			Command: rundir.Command{Argv: []string{"python", "train.py"}}}
		if state == "ended" {
			m.Exit = &rundir.Exit{Code: 0, Reason: "exited"}
		}
		if err := rundir.WriteManifest(dir, m); err != nil {
			t.Fatal(err)
		}
		run, err := rundir.Read(dir)
		if err != nil {
			t.Fatal(err)
		}
		r := FromRun(run)
		var text bytes.Buffer
		WriteText(&text, r)
		if got := strings.Contains(text.String(), "interrupted: bottleneck ended before the run did"); got != want {
			t.Errorf("state %s: interrupted said = %v, want %v\n%s", state, got, want, text.String())
		}
		if (r.Interrupted != "") != want {
			t.Errorf("state %s: Interrupted = %q", state, r.Interrupted)
		}
	}
}

// The runner's warnings (a full disk) are the report's.
func TestManifestWarningsAreSaid(t *testing.T) {
	dir := t.TempDir()
	m := &rundir.Manifest{Format: rundir.ManifestFormat, Version: 1, State: "ended", Started: time.Now(),
		Command: rundir.Command{Argv: []string{"python", "train.py"}}, Exit: &rundir.Exit{Reason: "exited"},
		Warnings: []string{"the disk holding /runs/x is full (4.00 KiB available: no space left on device): files the agent wrote may be missing or cut short"}}
	if err := rundir.WriteManifest(dir, m); err != nil {
		t.Fatal(err)
	}
	run, err := rundir.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	WriteText(&text, FromRun(run))
	if !strings.Contains(text.String(), "warning: the disk holding /runs/x is full") {
		t.Errorf("no full-disk warning:\n%s", text.String())
	}
}

// The phases table lists the 10 largest by self time, the rest in one
// line and the time outside: its lines add up to the wall time; long
// names are elided in the middle and control bytes escaped.
func TestPhasesTable(t *testing.T) {
	fp := &rundir.FrameworkPhases{Framework: "lightning", WallS: 2, OutsideS: 0.2}
	for i := range 12 {
		fp.Phases = append(fp.Phases, rundir.Phase{Name: fmt.Sprintf("phase%02d", i), Calls: 1, TotalS: 0.15, SelfS: 0.15})
	}
	fp.Phases[3].SelfS, fp.Phases[3].Name = 0.0, "[Callback]"+strings.Repeat("x", 100)+"\x1b[2J.on_train_batch_end"
	fp.Phases[11].SelfS = 0.15 + 0.15 // 1.8 s of self time in all
	var b bytes.Buffer
	writePhases(textsafe.Writer(&b), fp)
	text := b.String()
	lines := strings.Split(strings.TrimSpace(text), "\n")
	if len(lines) != 2+10+2 || !strings.HasPrefix(lines[0], "Lightning phases (whole run, self time adds up to the wall time 2.00 s)") {
		t.Fatalf("table:\n%s", text)
	}
	if !strings.Contains(lines[2], "300 ms  15.0%") || !strings.HasSuffix(lines[2], "phase11") {
		t.Errorf("largest first: %q", lines[2])
	}
	if !strings.Contains(lines[12], "2 other phases") || !strings.Contains(lines[12], "150 ms") {
		t.Errorf("rest: %q", lines[12])
	}
	if !strings.Contains(lines[13], "200 ms  10.0%") || !strings.HasSuffix(lines[13], "outside any phase") {
		t.Errorf("outside: %q", lines[13])
	}
	if strings.Contains(text, "\x1b") || strings.Contains(text, strings.Repeat("x", 80)) {
		t.Errorf("name not escaped or elided:\n%s", text)
	}
	b.Reset()
	writePhases(&b, nil)
	writePhases(&b, &rundir.FrameworkPhases{Framework: "transformers", WallS: 1})
	if b.Len() != 0 {
		t.Errorf("no phases, yet: %q", b.String())
	}
}

// A window lengthened past --active because its steps were short says
// so beside its steps; one of the steps asked for does not.
func TestLengthenedWindowIsSaid(t *testing.T) {
	for active, want := range map[int]string{122: " [122 steps, not 5: 5 took under --min-window]", 5: ""} {
		ev := &rundir.Evidence{}
		ev.Profiler.Schedule = map[string]int{"active": 5}
		ev.Profiler.ActiveSteps = active
		ev.Profiler.Windows = append(ev.Profiler.Windows, rundir.ProfilerWindow{Index: 1, File: "trace-rank0.pt.trace.json.gz", Steps: []int{8, 7 + active}})
		var b bytes.Buffer
		writeSteps(&b, ev)
		line := fmt.Sprintf("  window 1: steps 8-%d -> trace-rank0.pt.trace.json.gz%s\n", 7+active, want)
		if !strings.Contains(b.String(), line) {
			t.Errorf("active steps %d:\n%s\nwant the line %q", active, b.String(), line)
		}
	}
}

// A process that took no step while its main thread waited for the
// children it started (torch.multiprocessing.spawn) says where the work
// went and how to profile it, and whether the children oversubscribed
// the CPUs; one that took steps does not.
func TestChildWorkIsSaid(t *testing.T) {
	prof := &pyprofile.Profile{Profiler: "sample", IntervalS: 0.01,
		Frames:  []pyprofile.Frame{{File: "/u/ddp.py", Func: "<module>", Line: 15}, {File: "/venv/lib/python3.11/site-packages/torch/multiprocessing/spawn.py", Func: "join", Line: 200}},
		Threads: []pyprofile.Thread{{Name: "MainThread", Role: "main", Samples: 100}},
		Stacks:  []pyprofile.Stack{{Thread: 0, Frames: []int{0, 1}, Count: 100}}}
	for _, steps := range [][][]any{nil, {{1.0, 0.0, 0.01, false}}} {
		m := childWork(&rundir.ProcessFiles{Tag: "rank0", Evidence: &rundir.Evidence{StepTimes: steps}, Profile: prof})
		if said := m != nil && strings.Contains(m.Why, "child processes it started at ddp.py:15 100% of its time") && strings.Contains(m.Why, "torchrun"); said != (steps == nil) {
			t.Errorf("steps %v: %+v", steps, m)
		}
	}
	// the children's threads read by the agent: two DDP ranks of torch's
	// default two threads on 2 CPUs oversubscribe them, one thread each
	// does not
	env := &rundir.Env{CPUCount: 2}
	for _, c := range []struct {
		children rundir.Children
		want     bool
	}{
		{rundir.Children{Processes: 2, MostAlive: 2, WallS: 13.1, CPUS: 24.6, WaitS: 24.0}, true},
		{rundir.Children{Processes: 2, MostAlive: 2, WallS: 4.1, CPUS: 7.9, WaitS: 0.3}, false},
	} {
		m := childWork(&rundir.ProcessFiles{Tag: "rank0", Evidence: &rundir.Evidence{Children: &c.children}, Env: env, Profile: prof})
		said := strings.Contains(m.Why, "the children oversubscribed the CPUs, 2 at once keeping 3.7 threads wanting a CPU on 2 CPUs, waiting for one 49% of their time") &&
			strings.Contains(m.Why, "torch.set_num_threads(1) first in the function each runs")
		if said != c.want {
			t.Errorf("%+v: %s", c.children, m.Why)
		}
	}
}

// A change tried by run --verify=numerics says it changes numerics in
// report.txt; one that keeps them says nothing of it.
func TestTriedNumericsLabel(t *testing.T) {
	tried := []rundir.TriedChange{
		{Rule: "gpu.precision", Set: map[string]string{"tf32": "true"}, Numerics: true, MeanBaseUs: 9000, MeanNewUs: 4000, MeanSpeedup: 2.25, MeanLow: 2, MeanHigh: 2.5, Significant: true, PredictedSpeedup: 2.18, PredictedSavingPct: 54},
		{Rule: "gc.pauses", Set: map[string]string{"gc_freeze": "true"}, MeanBaseUs: 50000, MeanNewUs: 25000, MeanSpeedup: 2, MeanLow: 1.5, MeanHigh: 2.6, Significant: true, PredictedSpeedup: 2.65, PredictedSavingPct: 62},
	}
	var b bytes.Buffer
	writeTried(&b, tried)
	lines := strings.Split(b.String(), "\n")
	if len(lines) < 5 || !strings.HasPrefix(lines[1], "  tf32=true (changes numerics) (gpu.precision): 9.00 ms -> 4.00 ms") || !strings.HasPrefix(lines[3], "  gc_freeze=true (gc.pauses): ") {
		t.Errorf("tried:\n%s", b.String())
	}
}

// A change whose steps did different work (rundir.StepWork) is measured
// against the prediction by a call of the model, the steps beside it.
func TestTriedDifferentWork(t *testing.T) {
	tried := []rundir.TriedChange{{Rule: "cpu.native", Set: map[string]string{"bf16_autocast": "true"}, Numerics: true,
		MeanBaseUs: 966000, MeanNewUs: 87100, MeanSpeedup: 11.08, MeanLow: 7.62, MeanHigh: 16.31, Significant: true, PredictedSpeedup: 1.75, PredictedSavingPct: 43,
		Work: &rundir.StepWork{Unit: "calls of the model on one sample", BasePerStep: 20, NewPerStep: 3.2, BaseUs: 48300, NewUs: 27100, Speedup: 1.78, Low: 1.76, High: 1.80, Significant: true}}}
	var b bytes.Buffer
	writeTried(&b, tried)
	lines := strings.Split(b.String(), "\n")
	if len(lines) < 4 || !strings.HasPrefix(lines[1], "  bf16_autocast=true (changes numerics) (cpu.native): a call of the model 48.3 ms -> 27.1 ms, 1.78x (95% interval 1.76x to 1.80x); predicted 1.75x") ||
		!strings.HasPrefix(lines[2], "    the steps did different work: 20.0 calls of the model on one sample a step as it is, 3.2 changed: 966 ms -> 87.1 ms a step on average, 11.08x") {
		t.Errorf("tried:\n%s", b.String())
	}
}
