package try

import (
	"encoding/json"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/cli/exitcode"
	"github.com/bottleneck-dev/bottleneck/internal/iostreams"
	"github.com/bottleneck-dev/bottleneck/internal/testutil"
)

// The command's parsing, without running anything: changes are checked
// when parsed, and a bad one is bad usage.
func TestParse(t *testing.T) {
	for _, c := range []struct {
		args []string
		set  map[string]string // nil: must fail with usage
	}{
		{[]string{"--set", "num_workers=4", "train.py", "--epochs", "1"}, map[string]string{"num_workers": "4"}},
		{[]string{"--set", "threads=2", "--set", "gc_freeze=1", "-m", "pkg.train"}, map[string]string{"threads": "2", "gc_freeze": "true"}},
		{[]string{"--set", "workers=4", "train.py"}, nil},
		{[]string{"--set", "threads=0", "train.py"}, nil},
		{[]string{"train.py"}, nil},
		{[]string{"--set", "num_workers=4"}, nil},
		{[]string{"--set", "num_workers=4", "--steps", "2", "train.py"}, nil},
		{[]string{"--set", "num_workers=4", "--", "torchrun", "train.py"}, nil},
	} {
		ios, _, _, _ := iostreams.Test()
		o := &Options{IO: ios, Set: map[string]string{}}
		var got *Options
		cmd := newCmd(o, func(o *Options) error { got = o; return nil })
		cmd.SetArgs(c.args)
		cmd.SilenceUsage, cmd.SilenceErrors = true, true
		err := cmd.Execute()
		var ec *exitcode.Error
		switch {
		case c.set == nil && err == nil:
			t.Errorf("%v: accepted", c.args)
		case c.set == nil && errors.As(err, &ec) && ec.Code != exitcode.Usage:
			t.Errorf("%v: exit %d, want usage", c.args, ec.Code)
		case c.set != nil && (err != nil || got == nil || !maps.Equal(got.Set, c.set)):
			t.Errorf("%v: %v, set %v; want %v", c.args, err, got, c.set)
		}
	}
}

// A real try: the planted input-bound program as it is and with two
// DataLoader workers. What load cannot change is asserted: both runs were
// made and compared, the change took effect at the program's DataLoader
// line, and the first run's prediction is input.loader's.
func TestTryWorkers(t *testing.T) {
	py := testutil.TorchPython(t)
	ios, _, stdout, _ := iostreams.Test()
	out := filepath.Join(t.TempDir(), "try")
	o := &Options{IO: ios, Python: py, Out: out, Steps: 6, Set: map[string]string{"num_workers": "2"},
		Args: []string{filepath.Join(testutil.RepoRoot(), "examples", "diagnose", "slow_dataset.py")}}
	if err := Run(o); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	b, err := os.ReadFile(filepath.Join(out, "try.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res Result
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Pairs) != 1 || res.Pairs[0].Speedup <= 0 || !res.Pairs[0].Headline.NoiseKnown {
		t.Errorf("pairs %+v", res.Pairs)
	}
	if len(res.Applied) != 1 || !res.Applied[0].Applied || len(res.Applied[0].Sites) == 0 || !strings.Contains(res.Applied[0].Sites[0], "slow_dataset.py:33: num_workers 0 -> 2") {
		t.Errorf("applied %+v", res.Applied)
	}
	if res.Predicted == nil || res.Predicted.Rule != "input.loader" {
		t.Errorf("predicted %+v", res.Predicted)
	}
	if !strings.Contains(stdout.String(), "num_workers=2 (tried): ") {
		t.Errorf("stdout:\n%s", stdout)
	}
}
