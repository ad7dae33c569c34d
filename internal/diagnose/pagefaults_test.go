package diagnose

import (
	"strings"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/runevidence"
	"github.com/bottleneck-dev/bottleneck/internal/rundir"
)

// A kernel's share of the process's CPU time that is page faults is a
// finding, THP_MEM_ALLOC_ENABLE its change and --verify's; not when the
// kernel's time is something else (few faults), small, or the program
// already sets the variable, or huge pages are off.
func TestPageFaults(t *testing.T) {
	// GAT on 2,708 nodes: half the process's CPU in the kernel
	gat := rundir.ThreadSched{WallS: 6.5, ProcessCPUS: 12, ProcessSystemS: 6, MinorFaults: 1.9e6}
	for _, c := range []struct {
		name      string
		window    rundir.ThreadSched
		hugePages string
		thpAlloc  string
		workers   int
		fires     bool
		change    string
	}{
		{"page faults", gat, "madvise", "", 0, true, "THP_MEM_ALLOC_ENABLE=1"},
		{"huge pages off", gat, "never", "", 0, true, "transparent huge pages are off"},
		{"already set", gat, "madvise", "1", 0, true, "with THP_MEM_ALLOC_ENABLE=1 already set"},
		{"kernel time of reads, few faults", rundir.ThreadSched{WallS: 6.5, ProcessCPUS: 12, ProcessSystemS: 6, MinorFaults: 2e4}, "madvise", "", 0, false, ""},
		{"little kernel time", rundir.ThreadSched{WallS: 6.5, ProcessCPUS: 12, ProcessSystemS: 1.2, MinorFaults: 5e5}, "madvise", "", 0, false, ""},
		{"agent before the fields", rundir.ThreadSched{WallS: 6.5, ProcessCPUS: 12}, "", "", 0, false, ""},
		{"under a second of CPU time", rundir.ThreadSched{WallS: 0.4, ProcessCPUS: 0.8, ProcessSystemS: 0.4, MinorFaults: 1.2e5}, "madvise", "", 0, false, ""},
		// batches from 2 workers, mapped from shared memory
		{"batches from workers", rundir.ThreadSched{WallS: 8.3, ProcessCPUS: 15.8, ProcessSystemS: 3.2, MinorFaults: 5.9e5}, "madvise", "", 2, false, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			run := runevidence.RunEvidence{CPUWait: &rundir.CPUWait{Window: &rundir.ThreadSched{WallS: 1, ProcessCPUS: 2}, Steps: &c.window},
				Env: &runevidence.Env{CPUs: 2, HugePages: c.hugePages, THPAlloc: c.thpAlloc}}
			if c.workers > 0 {
				run.Loaders = []runevidence.Loader{{NumWorkers: &c.workers, Batches: 150}}
			}
			d := Compute(cpuTrace(&run))
			f := findingOf(d, "cpu.page-faults")
			if (f != nil) != c.fires {
				t.Fatalf("finding %+v, want %v", f, c.fires)
			}
			if f == nil {
				return
			}
			if !strings.Contains(f.Title, "The kernel takes 50% of the process's CPU time: 292,307 page faults a second") ||
				!strings.Contains(f.Change, c.change) || f.AtStakePct != 50 || f.SavingPct <= 0 || f.SavingPct > 20 {
				t.Errorf("%+v", f)
			}
			if want := c.hugePages == "madvise" && c.thpAlloc == ""; (f.Try["thp_alloc"] == "true") != want {
				t.Errorf("try %v, want thp_alloc: %v", f.Try, want)
			}
		})
	}
}
