package diff

import (
	"fmt"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/optable"
	"github.com/bottleneck-dev/bottleneck/internal/driver"
	"github.com/bottleneck-dev/bottleneck/internal/iostreams"
	"github.com/bottleneck-dev/bottleneck/internal/runreport"
)

// Load reads one side: a run directory (its traces, and the agent's step
// times, environment and Python profile) or traces. It is the one place
// diff and check read input. It returns the side and its read status.
func Load(ios *iostreams.IOStreams, path string) (*Side, driver.Status, error) {
	return load(ios, path, true)
}

// LoadSteps is Load for a run directory that may hold no trace (a short
// run that ended before its window): its side is the agent's step times
// (bottleneck try compares those).
func LoadSteps(ios *iostreams.IOStreams, path string) (*Side, driver.Status, error) {
	return load(ios, path, false)
}

func load(ios *iostreams.IOStreams, path string, needTrace bool) (*Side, driver.Status, error) {
	side := &Side{Label: path}
	// Every row, split by input shapes: the comparison matches rows itself.
	o := driver.DefaultOptions()
	o.Table = optable.Options{Top: 0, GroupByShape: true}
	d, err := driver.Open(ios, []string{path}, o)
	if err != nil {
		return nil, driver.Unreadable, fmt.Errorf("%s: %w", path, err)
	}
	if len(d.Runs) == 1 {
		if needTrace && len(d.Runs[0].Traces) == 0 {
			return nil, driver.Unreadable, fmt.Errorf("%s: the run directory has no trace (run without --no-trace)", path)
		}
		side.Run = runreport.FromRun(d.Runs[0])
	}
	side.Report = d.Report
	side.OpStacks, side.OpWeight = OpStacks(d.Traces)
	side.PyStacks = PyStacks(d.Runs)
	side.Lines = PyLines(d.Runs)
	if d.Status == driver.Unreadable && (needTrace || len(d.Runs) == 0) {
		return nil, driver.Unreadable, fmt.Errorf("%s: no trace could be read", path)
	}
	return side, d.Status, nil
}
