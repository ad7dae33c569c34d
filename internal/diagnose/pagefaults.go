package diagnose

import (
	"fmt"
	"slices"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/runevidence"
	"github.com/bottleneck-dev/bottleneck/internal/units"
)

var _ = addRule(Rule{
	ID: "cpu.page-faults", Class: CPUCompute, Factor: 0.4,
	When:   "run evidence, CPU-only steps (cpu.native's share >= MinFinding), no DataLoader workers delivering batches: >= KernelShare of the process's CPU time over the steps outside the profiler's window (its recording, warm-up and export fault pages in too; >= 1 s of CPU time) in the kernel, with >= FaultsPerKernelS minor page faults a second of it; at stake: the step times that share; saving: 40% of it (the kernel's time measured 42% shorter with 2 MB pages)",
	Change: "tensors of megabytes made and freed every step are mapped afresh and zeroed a 4 KB page at a time: THP_MEM_ALLOC_ENABLE=1 in the environment (torch's CPU allocator then asks for 2 MB pages, with transparent huge pages madvise or always), or fewer or smaller large tensors a step",
	detect: (*state).pageFaultsFinding,
	Fires:  "TestPageFaults", Silent: "TestPageFaults",
})

// minKernelSpanS: the CPU time the shares are read over, at least
// (os.times counts 10 ms ticks).
const minKernelSpanS = 1.0

// pageFaultsFinding: the kernel's share of the process's CPU time, where
// its time is page faults. glibc maps each allocation over its mmap
// threshold (32 MB at most) afresh and unmaps it when freed, so a step
// that makes and frees tensors of hundreds of megabytes has the kernel
// zero every page of them again at each step: pytorch/examples' GAT on a
// 2,708-node graph spent 55 of its 110 CPU seconds in the kernel, and
// THP_MEM_ALLOC_ENABLE=1 (2 MB pages for torch's allocations of 2 MB or
// more) cut that to 32 s and the run 1.20x (69.4, 68.5 -> 57.5, 57.4 s);
// mnist_forward_forward's full-batch step (50,000 x 784) 1.08-1.16x.
func (s *state) pageFaultsFinding() {
	r := s.in.Run
	cw := s.cpuWait()
	if r == nil || cw == nil || s.share[CPUCompute] < s.p.MinFinding {
		return
	}
	// not the window's: the profiler's events, allocated as it records,
	// are page faults too (a small CNN's 4 ms steps: 40% of the window's
	// CPU time in the kernel)
	w := cw.Steps
	if w == nil || w.ProcessCPUS < minKernelSpanS || fromWorkers(r.Loaders) {
		return
	}
	share := w.SystemShare()
	if share < s.p.KernelShare || w.MinorFaults/w.ProcessSystemS < s.p.FaultsPerKernelS {
		return
	}
	title := fmt.Sprintf("The kernel takes %.0f%% of the process's CPU time: %s page faults a second, memory touched for the first time",
		pct(share), units.Count(int(w.MinorFaults/max(w.WallS, 1e-9))))
	ms := []Evidence{
		{"process CPU time in the kernel (steps outside the window)", w.ProcessSystemS * 1e6, "us", "evidence"},
		{"process CPU time (steps outside the window)", w.ProcessCPUS * 1e6, "us", "evidence"},
		{"minor page faults (steps outside the window)", w.MinorFaults, "", "evidence"},
	}
	var hugePages, thpAlloc string
	if e := r.Env; e != nil {
		hugePages, thpAlloc = e.HugePages, e.THPAlloc
	}
	const fewer = ": fewer or smaller large tensors a step (a smaller batch, in-place ops, out= arguments)"
	change := rule("cpu.page-faults").Change
	var try map[string]string
	switch {
	case hugePages == "never":
		change = "tensors of megabytes made and freed every step are mapped afresh and zeroed a 4 KB page at a time, and this kernel's transparent huge pages are off (never; THP_MEM_ALLOC_ENABLE=1 needs madvise or always)" + fewer
	case thpAlloc == "1":
		change = "tensors of megabytes made and freed every step are mapped afresh and zeroed, with THP_MEM_ALLOC_ENABLE=1 already set" + fewer
	default:
		try = map[string]string{"thp_alloc": "true"}
	}
	f := s.finding("cpu.page-faults", title, share*s.step, ms, s.topOps(3, true), change)
	f.Try = try
	s.emit(f)
}

// fromWorkers reports whether DataLoader worker processes delivered
// batches: each arrives in shared memory that the main process maps and
// faults in, which 2 MB pages do not change (a 2-worker loader of 64 x 3
// x 224 x 224 batches into a small CNN: 20% of its CPU time in the
// kernel, 185,000 faults a second of it, and 11.7-13.2 s a run with or
// without THP_MEM_ALLOC_ENABLE=1). Such a program's own large tensors go
// unnamed: no finding rather than one whose change does nothing.
func fromWorkers(loaders []runevidence.Loader) bool {
	return slices.ContainsFunc(loaders, func(l runevidence.Loader) bool {
		return l.NumWorkers != nil && *l.NumWorkers > 0 && l.Batches > 0
	})
}
