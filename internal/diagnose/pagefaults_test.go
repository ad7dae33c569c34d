package diagnose

import (
	"strings"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/optable"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/runevidence"
	"github.com/bottleneck-dev/bottleneck/internal/rundir"
)

// A kernel's share of the process's CPU time that is page faults is a
// finding, glibc's heap kept its change and --verify's; not when the
// kernel's time is something else (few faults), small, or the batches
// come from workers that could account for the faults. Where the
// environment already sets the allocator, or the C library is not glibc,
// the change is fewer large tensors.
func TestPageFaults(t *testing.T) {
	// GAT on 2,708 nodes: half the process's CPU in the kernel
	gat := rundir.ThreadSched{WallS: 6.5, ProcessCPUS: 12, ProcessSystemS: 6, MinorFaults: 1.9e6}
	for _, c := range []struct {
		name      string
		window    rundir.ThreadSched
		glibc     bool
		allocator string
		workers   int
		batch     int64 // bytes of the workers' batches (0: unknown)
		fires     bool
		change    string
		peakRSS   float64 // bytes, of a machine of 8 GiB
	}{
		{"page faults", gat, true, "", 0, 0, true, "MALLOC_MMAP_THRESHOLD_=4294967296 MALLOC_TRIM_THRESHOLD_=4294967296 in the environment", 0},
		{"not glibc", gat, false, "", 0, 0, true, "zeroes it a 4 KB page at a time when the next step allocates: fewer or smaller", 0},
		// freed memory kept could take the process past the machine's
		{"memory tight", gat, true, "", 0, 0, true, "could take the process's resident memory (4.66 GiB at its peak) past the 8.00 GiB it may use", 5e9},
		{"memory to spare", gat, true, "", 0, 0, true, "MALLOC_MMAP_THRESHOLD_", 3e9},
		{"allocator set", gat, true, "LD_PRELOAD=/usr/lib/libjemalloc.so.2", 0, 0, true, "with the allocator set by the environment (LD_PRELOAD=/usr/lib/libjemalloc.so.2)", 0},
		{"kernel time of reads, few faults", rundir.ThreadSched{WallS: 6.5, ProcessCPUS: 12, ProcessSystemS: 6, MinorFaults: 2e4}, true, "", 0, 0, false, "", 0},
		{"little kernel time", rundir.ThreadSched{WallS: 6.5, ProcessCPUS: 12, ProcessSystemS: 1.2, MinorFaults: 5e5}, true, "", 0, 0, false, "", 0},
		{"agent before the fields", rundir.ThreadSched{WallS: 6.5, ProcessCPUS: 12}, true, "", 0, 0, false, "", 0},
		// pytorch/examples' word language model on an AVX2 CPU, its whole
		// run: 18% in the kernel (glibc's heap kept: 1.30-1.36x)
		{"a fifth of the time", rundir.ThreadSched{WallS: 333, ProcessCPUS: 647, ProcessSystemS: 118, MinorFaults: 3.5e7}, true, "", 0, 0, true, "MALLOC_MMAP_THRESHOLD_", 0},
		// os.times' 10 ms ticks: 50 of them, 25% in the kernel, is 0.149 at one-sided 95%
		{"under a second of CPU time, near the threshold", rundir.ThreadSched{WallS: 0.3, ProcessCPUS: 0.5, ProcessSystemS: 0.125, MinorFaults: 1.2e5}, true, "", 0, 0, false, "", 0},
		{"under 20 ticks", rundir.ThreadSched{WallS: 0.1, ProcessCPUS: 0.18, ProcessSystemS: 0.09, MinorFaults: 1.2e5}, true, "", 0, 0, false, "", 0},
		// batches from 2 workers, mapped from shared memory
		{"batches from workers", rundir.ThreadSched{WallS: 8.3, ProcessCPUS: 15.8, ProcessSystemS: 3.2, MinorFaults: 5.9e5}, true, "", 2, 0, false, "", 0},
		{"batches from workers, 38.5 MB each", rundir.ThreadSched{WallS: 8.3, ProcessCPUS: 15.8, ProcessSystemS: 3.2, MinorFaults: 5.9e5}, true, "", 2, 64 * 3 * 224 * 224 * 4, false, "", 0},
		// small batches from workers: the faults are the program's own
		{"786 KB batches from workers", gat, true, "", 2, 16 * 3 * 64 * 64 * 4, true, "MALLOC_MMAP_THRESHOLD_", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			run := runevidence.RunEvidence{CPUWait: &rundir.CPUWait{Window: &rundir.ThreadSched{WallS: 1, ProcessCPUS: 2}, Steps: &c.window},
				Env: &runevidence.Env{CPUs: 2, Glibc: c.glibc, Allocator: c.allocator, MemoryBytes: 8 << 30}, PeakRSS: c.peakRSS}
			if c.workers > 0 {
				run.Loaders = []runevidence.Loader{{NumWorkers: &c.workers, Batches: 150}}
				if c.batch > 0 {
					run.Loaders[0].BatchBytes = &c.batch
				}
			}
			d := Compute(cpuTrace(&run))
			f := findingOf(d, "cpu.page-faults")
			if (f != nil) != c.fires {
				t.Fatalf("finding %+v, want %v", f, c.fires)
			}
			if f == nil {
				return
			}
			if !strings.Contains(f.Change, c.change) || c.window == gat && (!strings.Contains(f.Title, "The kernel takes 50% of the process's CPU time: 292,307 page faults a second") ||
				f.AtStakePct != 50 || f.SavingPct != 40) {
				t.Errorf("%+v", f)
			}
			if want := c.glibc && c.allocator == "" && c.peakRSS < 4e9; (f.Try["malloc_reuse"] == "true") != want {
				t.Errorf("try %v, want malloc_reuse: %v", f.Try, want)
			}
		})
	}
}

// Dropout's masks drawn in inference steps (a model left in training
// mode) fault their pages in, and model.eval() removes them: the faults'
// saving leaves out the masks' share of the native time there, so the
// eval() change leads; in training steps, where the masks stay, it is
// whole.
func TestPageFaultsLeaveOutInferenceMasks(t *testing.T) {
	gat := rundir.ThreadSched{WallS: 6.5, ProcessCPUS: 12, ProcessSystemS: 6, MinorFaults: 1.9e6}
	for _, c := range []struct {
		name      string
		backward  int
		savingPct float64
	}{{"inference", 0, 10}, {"training", 10, 40}} {
		run := runevidence.RunEvidence{CPUWait: &rundir.CPUWait{Window: &rundir.ThreadSched{WallS: 1, ProcessCPUS: 2}, Steps: &gat},
			Env: &runevidence.Env{CPUs: 2, Glibc: true, MemoryBytes: 8 << 30}}
		in := cpuTrace(&run)
		in.Ops = &optable.OpTable{Rows: []optable.OpRow{{Name: "aten::bernoulli_", HostSelfUs: 45e3, HostTotalUs: 45e3, Calls: 3}, {Name: "aten::mkldnn_convolution", HostSelfUs: 15e3, HostTotalUs: 15e3, Calls: 3}}, BackwardCalls: c.backward}
		d := Compute(in)
		f := findingOf(d, "cpu.page-faults")
		if f == nil || f.SavingPct != c.savingPct {
			t.Errorf("%s: %+v, want %.0f%% saved", c.name, f, c.savingPct)
		}
		if c.backward == 0 && (len(d.Findings) == 0 || d.Findings[0].Rule != "cpu.native" || !strings.Contains(d.Findings[0].Change, "model.eval()")) {
			t.Errorf("%s: want model.eval() first: %+v", c.name, d.Findings)
		}
	}
}
