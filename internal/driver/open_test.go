package driver

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/iostreams"
	"github.com/bottleneck-dev/bottleneck/internal/rundir"
	"github.com/bottleneck-dev/bottleneck/internal/testutil"
)

// A run directory's steps have the agent's numbers in every view: the
// verdict's steps are those of the run's "window 1: steps 8-12", not
// torch's ProfilerStep#7-11.
func TestRunStepsHaveTheAgentsNumbers(t *testing.T) {
	ios, _, _, _ := iostreams.Test()
	for _, name := range []string{"slow_dataset", "h100/train_cnn"} {
		t.Run(name, func(t *testing.T) {
			d, err := Open(ios, []string{filepath.Join(testutil.RepoRoot(), "testdata", "rundir", name)}, DefaultOptions())
			if err != nil {
				t.Fatal(err)
			}
			agent := d.Runs[0].Processes[0].Evidence.Profiler.Windows[0].Steps
			var want []string
			for _, n := range agent {
				want = append(want, fmt.Sprint(n))
			}
			used := d.Report.Traces[0].Diagnosis.Window.UsedSteps
			if len(used) == 0 || !slices.Equal(used, want[:len(used)]) {
				t.Errorf("steps used %v, the agent's window %v", used, agent)
			}
			if in := d.Report.Inputs[0].Steps; in[0] != agent[0] {
				t.Errorf("the input's steps %v begin apart from the agent's window %v", in, agent)
			}
		})
	}
}

// A run directory read already (Options.Run) is not read again: Open
// builds on the run it is given for that directory, and reads any other.
func TestOpenUsesTheRunReadAlready(t *testing.T) {
	dir := filepath.Join(testutil.RepoRoot(), "testdata", "rundir", "slow_dataset")
	run, err := rundir.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	run.Env = json.RawMessage(`{"marker":"read once"}`)
	opts := DefaultOptions()
	opts.Run = run
	ios, _, _, _ := iostreams.Test()
	d, err := Open(ios, []string{dir + string(filepath.Separator)}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Runs) != 1 || d.Runs[0] != run || string(d.Env) != `{"marker":"read once"}` {
		t.Errorf("runs %v, env %s: want the run given", d.Runs, d.Env)
	}
	other, _ := rundir.Read(dir)
	other.Dir = filepath.Join(t.TempDir(), "elsewhere")
	opts.Run = other
	if d, err = Open(ios, []string{dir}, opts); err != nil || d.Runs[0] == other || string(d.Env) == `{"marker":"read once"}` {
		t.Errorf("a run of another directory was used: %v %v", d.Runs, err)
	}
}
