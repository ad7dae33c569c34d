package diagnose

import (
	"fmt"
	"math"
	"strings"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/runevidence"
	"github.com/bottleneck-dev/bottleneck/internal/rundir"
	"github.com/bottleneck-dev/bottleneck/internal/units"
)

var _ = addRule(Rule{
	ID: "cpu.page-faults", Class: CPUCompute, Factor: 0.8,
	When:   "run evidence, CPU-only steps (cpu.native's share >= MinFinding), no DataLoader workers whose batches could account for the faults (the steps' faults over 4x the pages of the batches they handed over in the run): >= KernelShare of the process's CPU time over the steps outside the profiler's window (its recording, warm-up and export fault pages in too) in the kernel, over >= 1 s of CPU time, or over >= 0.2 s clearing KernelShare at one-sided 95% confidence (its 10 ms ticks a binomial sample), with >= FaultsPerKernelS minor page faults a second of it; at stake: the step times that share; saving: 80% of it (glibc's heap kept took 54-81% of the kernel's time out, and the steps measured 0.6-1.1x the share shorter: the faults' cost in the program's own time too)",
	Change: "memory freed in the step goes back to the kernel, which maps it afresh and zeroes it a 4 KB page at a time when the next step allocates: " + mallocReuse + ", or fewer or smaller large tensors a step",
	detect: (*state).pageFaultsFinding,
	Fires:  "TestPageFaults", Silent: "TestPageFaults",
})

// mallocReuse is the change on glibc (malloc_reuse=true).
var mallocReuse = strings.Join(rundir.MallocReuseEnv, " ") + " in the environment (glibc then serves allocations of up to 4 GiB from its heap and keeps what is freed for reuse; the process's resident memory stays near its peak, and can grow past it: GAT's 2.6 -> 4.3 GB)"

// The kernel's share is read from os.times, which counts the process's
// CPU time in 10 ms ticks, each one the kernel's or the program's. Over
// at least minKernelSpanS of CPU time the share is taken as it is; over
// less, down to minKernelTicks ticks, it must clear KernelShare at one-
// sided 95% confidence, taking the ticks as a binomial sample: try's first
// run times 10 steps before its window, and the planted
// checkpoint_every_n.py's 12 (0.22-0.29 s, 41-55% in the kernel over 3
// runs: at least 0.24-0.40) had no finding to predict its 1.2-1.65x from
// glibc's heap kept.
const (
	minKernelSpanS = 1.0
	kernelTickS    = 0.01
	minKernelTicks = 20
	oneSided95     = 1.645 // standard errors
)

// pageFaultsFinding: the kernel's share of the process's CPU time, where
// its time is page faults. glibc maps each allocation over its mmap
// threshold (dynamic, 32 MB at most) afresh and unmaps it when freed, and
// trims its heap's free top, so a step that makes and frees large tensors
// has the kernel zero their pages again at each step: pytorch/examples'
// GAT on a 2,708-node graph spent 35.7 of its 61 CPU seconds in the
// kernel. Kept in glibc's heap (MALLOC_MMAP_THRESHOLD_ and
// MALLOC_TRIM_THRESHOLD_ at 4 GiB) its run went 40.9, 39.6 s -> 20.0 s,
// the kernel's time 6.7 s. THP_MEM_ALLOC_ENABLE=1 (2 MB pages for torch's
// allocations of 2 MB or more) did less (25.4 s), and made the planted
// checkpoint_every_n.py's run slower (5.6 -> 5.9 s): allocations of 2-32
// MB that glibc's heap served again were mapped afresh (4 MB: 36 -> 514
// faults and 0.09 -> 0.84 ms each).
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
	if w == nil || w.ProcessCPUS < minKernelTicks*kernelTickS || handOverFaults(r.Loaders, w.MinorFaults) {
		return
	}
	share := w.SystemShare()
	if share < s.p.KernelShare || w.MinorFaults/w.ProcessSystemS < s.p.FaultsPerKernelS {
		return
	}
	if ticks := w.ProcessCPUS / kernelTickS; w.ProcessCPUS < minKernelSpanS && share-oneSided95*math.Sqrt(share*(1-share)/ticks) < s.p.KernelShare {
		return
	}
	title := fmt.Sprintf("The kernel takes %.0f%% of the process's CPU time: %s page faults a second, memory touched for the first time",
		pct(share), units.Count(int(w.MinorFaults/max(w.WallS, 1e-9))))
	ms := []Evidence{
		{"process CPU time in the kernel (steps outside the window)", w.ProcessSystemS * 1e6, "us", "evidence"},
		{"process CPU time (steps outside the window)", w.ProcessCPUS * 1e6, "us", "evidence"},
		{"minor page faults (steps outside the window)", w.MinorFaults, "", "evidence"},
	}
	var glibc bool
	var allocator string
	var memory float64
	if e := r.Env; e != nil {
		glibc, allocator, memory = e.Glibc, e.Allocator, float64(e.MemoryBytes)
	}
	const freed = "memory freed in the step goes back to the kernel, which maps it afresh and zeroes it a 4 KB page at a time when the next step allocates"
	const fewer = ": fewer or smaller large tensors a step (a smaller batch, in-place ops, out= arguments)"
	change := rule("cpu.page-faults").Change
	var try map[string]string
	switch {
	case allocator != "":
		change = freed + ", with the allocator set by the environment (" + allocator + ")" + fewer
	case !glibc:
		change = freed + fewer
	case memory > 0 && 2*r.PeakRSS > memory:
		// kept in the process, GAT's freed memory took its peak 1.64x
		change = fmt.Sprintf("%s, and keeping it in the process could take the process's resident memory (%s at its peak) past the %s it may use",
			freed, units.Bytes(r.PeakRSS), units.Bytes(memory)) + fewer
	default:
		try = map[string]string{"malloc_reuse": "true"}
	}
	stake := share * s.step
	if _, _, dropout, total := s.cpuFamilyChange(); s.trainModeInference(dropout, total) {
		// The kernel's time is inside the ops that fault their outputs
		// in, and model.eval() (cpu.native's lead here) takes dropout's
		// masks out of these inference steps, their faults with them: its
		// saving counts that time already (the planted
		// eval_train_mode.py, masks 57% of the native time and 41% of
		// the CPU time in the kernel, ranked the faults first)
		stake *= 1 - dropout/total
		ms = append(ms, Evidence{"dropout ops' share of native op time (masks model.eval() removes, their faults with them)", pct(dropout / total), "%", "ops"})
	}
	f := s.finding("cpu.page-faults", title, stake, ms, s.topOps(3, true), change)
	f.Try = try
	s.emit(f)
}

// handOverFaults reports whether DataLoader workers' batches could
// account for the faults: each arrives in shared memory that the main
// process maps and faults in, which no allocator setting changes (a
// 2-worker loader of 64 x 3 x 224 x 224 batches into a small CNN: 20% of
// its CPU time in the kernel, 185,000 faults a second of it, and
// 11.7-13.2 s a run with or without THP_MEM_ALLOC_ENABLE=1). They could
// unless the faults are over 4 times the pages of every batch the run's
// workers handed over (a first batch's bytes times the batches): lucidrains'
// denoising-diffusion Trainer, 2 workers handing over 786 KB batches
// (46,000 pages in the run), faulted 86 million pages in its steps, its
// Unet's own activations, and kept in glibc's heap it ran 1.13x faster.
// Where the batches' bytes are unknown (agents before them), no finding
// rather than one whose change does nothing.
func handOverFaults(loaders []runevidence.Loader, faults float64) bool {
	var pages float64
	for _, l := range loaders {
		if l.NumWorkers == nil || *l.NumWorkers == 0 || l.Batches == 0 {
			continue
		}
		if l.BatchBytes == nil {
			return true
		}
		pages += float64(l.Batches) * float64(*l.BatchBytes) / 4096
	}
	return faults <= 4*pages
}
