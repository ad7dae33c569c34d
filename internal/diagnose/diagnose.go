// Package diagnose turns the analyses of a trace (and, from `bottleneck
// run`, the agent's evidence: Python profile, DataLoader wait, sync call
// sites, environment) into a verdict and findings ranked by the time they
// could save. It never reads events: it works on the analyses' results,
// so every number it states can be found in the rest of the report.
//
// The method (docs/diagnosis.md): the step-time breakdown partitions the
// mean step into disjoint shares; each class gets the share it explains
// (DataLoader wait, exposed communication, device idle while the host is
// busy, ...), corrected by the run evidence; the largest is the verdict.
// All thresholds and rules are in rules.go.
package diagnose

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/breakdown"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/classify"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/gpu"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/idle"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/input"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/launch"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/memory"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/optable"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/regions"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/syncs"
)

// Definition names the diagnosis method; bump when rules change meaning.
const Definition = "diagnose/1"

// Analyses is what Compute reads: the analyses of one trace and, optionally,
// the run evidence of the same process.
type Analyses struct {
	Events    int // events in the trace
	Breakdown *breakdown.Result
	GPU       *gpu.Result
	Idle      *idle.Result
	Launch    *launch.Result
	Syncs     *syncs.Result
	Input     *input.Result
	Memory    *memory.Result
	Regions   *regions.Result
	Ops       *optable.OpTable
	Kernels   *optable.KernelTable
	Run       *RunEvidence
	Params    *Params // nil: Default
}

// Diagnosis is the verdict and findings of one trace.
type Diagnosis struct {
	Definition string  `json:"definition"`
	Verdict    Verdict `json:"verdict"`
	// StepUs is the mean step time the shares are of.
	StepUs float64 `json:"step_us"`
	// Sources are the inputs used: "trace", "run evidence", "python profile".
	Sources  []string     `json:"sources"`
	Classes  []ClassScore `json:"classes"`
	Findings []Finding    `json:"findings"`
	Unknown  []Unmeasured `json:"not_measurable,omitempty"`
}

// Verdict is the primary class and the secondary ones that matter.
type Verdict struct {
	Primary    Class   `json:"primary"`
	Detail     string  `json:"detail"`
	SharePct   float64 `json:"share_pct"`
	Confidence string  `json:"confidence"` // high, medium, low
	Why        string  `json:"why"`
	Secondary  []Class `json:"secondary,omitempty"`
}

// ClassScore is one class's share of the step and the numbers behind it.
type ClassScore struct {
	Class    Class      `json:"class"`
	SharePct float64    `json:"share_pct"`
	Evidence []Evidence `json:"evidence"`
}

// Evidence is one measured number.
type Evidence struct {
	What   string  `json:"what"`
	Value  float64 `json:"value"`
	Unit   string  `json:"unit"`
	Source string  `json:"source"` // the analysis or run file it comes from
}

// Location is where a finding points: a Python line, an op, a kernel, a
// DataLoader, a rank.
type Location struct {
	Kind     string  `json:"kind"` // python, op, kernel, dataloader, rank, sync-site
	Name     string  `json:"name"`
	File     string  `json:"file,omitempty"`
	Line     int     `json:"line,omitempty"`
	SharePct float64 `json:"share_pct,omitempty"` // of the samples or time it is measured against
	Note     string  `json:"note,omitempty"`
}

// Finding is one thing to change, with what it could save.
type Finding struct {
	Rule     string     `json:"rule"`
	Class    Class      `json:"class"`
	Title    string     `json:"title"`
	Measured []Evidence `json:"measured"`
	Where    []Location `json:"where,omitempty"`
	Change   string     `json:"change"`
	// AtStakeUs is the time per step the cause occupies; SavingUs the
	// estimate of what the change saves (AtStake × the rule's factor; 0:
	// no estimate); SavingPct of the step.
	AtStakeUs  float64 `json:"at_stake_us_per_step"`
	AtStakePct float64 `json:"at_stake_pct"`
	SavingUs   float64 `json:"saving_us_per_step"`
	SavingPct  float64 `json:"saving_pct"`
	Confidence string  `json:"confidence"`
}

// Unmeasured is a class the input cannot support, and why.
type Unmeasured struct {
	Class Class  `json:"class"`
	Why   string `json:"why"`
}

// state is the working data of one Compute.
type state struct {
	in      Analyses
	p       Params
	d       *Diagnosis
	step    float64 // mean step µs
	steps   int
	avg     breakdown.Costs
	device  bool // device activity recorded
	usesGPU bool // the program launched device work (recorded or not)
	share   map[Class]float64
	ev      map[Class][]Evidence
	py      *PythonEvidence
	syncPS  float64 // blocking syncs per step
}

// Compute diagnoses one trace.
func Compute(in Analyses) *Diagnosis {
	s := &state{in: in, p: Default, share: map[Class]float64{}, ev: map[Class][]Evidence{}}
	if in.Params != nil {
		s.p = *in.Params
	}
	s.d = &Diagnosis{Definition: Definition, Sources: []string{"trace"}, Classes: []ClassScore{}, Findings: []Finding{}}
	if in.Run != nil {
		s.d.Sources = append(s.d.Sources, "run evidence")
		if in.Run.Python != nil {
			s.py = in.Run.Python
			s.d.Sources = append(s.d.Sources, "python profile")
		}
	}
	if why := s.degenerate(); why != "" {
		s.d.Verdict = Verdict{Primary: Undetermined, Confidence: "none", Why: why}
		s.d.Unknown = append(s.d.Unknown, Unmeasured{Undetermined, why})
		return s.d
	}
	s.scores()
	s.verdict()
	s.findings()
	return s.d
}

func (s *state) degenerate() string {
	b := s.in.Breakdown
	if b == nil || b.Average.TotalUs <= 0 || b.AveragedSteps == 0 {
		return "no step time could be measured (the step-time breakdown is empty)"
	}
	if s.in.Events < s.p.MinEvents {
		return fmt.Sprintf("degenerate capture: %d events over %s, too few to say where the time goes", s.in.Events, FormatUs(b.Average.TotalUs*float64(b.AveragedSteps)))
	}
	a := b.Average
	act := a.TotalUs - a.OtherUs
	if s.py == nil && act < s.p.MinActivity*a.TotalUs {
		return fmt.Sprintf("recorded activity covers %.1f%% of the %s window: the profiler saw almost nothing the program did (a Python profile from `bottleneck run` would show the rest)", 100*act/a.TotalUs, FormatUs(a.TotalUs))
	}
	return ""
}

func (s *state) add(c Class, share float64, e ...Evidence) {
	s.share[c] = max(0, share)
	s.ev[c] = append(s.ev[c], e...)
}

func pct(x float64) float64 { return 100 * x }

// scores fills the share of the step each class explains.
func (s *state) scores() {
	b := s.in.Breakdown
	a := b.Average
	s.avg, s.step, s.steps = a, a.TotalUs, b.AveragedSteps
	S := a.TotalUs
	if g := s.in.GPU; g != nil {
		for _, d := range g.Devices {
			if d.KernelCount > 0 || d.MemcpyCount > 0 {
				s.device = true
			}
		}
	}
	s.usesGPU = s.device || a.RuntimeLaunchUs > 0
	src := "step_breakdown"

	// input
	in := a.DataLoaderUs / S
	inEv := []Evidence{{"DataLoader time per step (trace)", a.DataLoaderUs, "us", src}}
	if r := s.in.Run; r != nil && r.WindowStepS > 0 && r.DataLoaderWaitS >= 0 && r.HasDataLoader {
		w := r.DataLoaderWaitS / r.WindowStepS
		inEv = append(inEv, Evidence{"DataLoader wait per step (agent)", r.DataLoaderWaitS * 1e6, "us", "evidence"},
			Evidence{"DataLoader wait share (agent)", pct(w), "%", "evidence"})
		in = max(in, w)
	}
	if s.py != nil && s.py.LoaderShare > in && (s.in.Run != nil && s.in.Run.HasDataLoader) {
		inEv = append(inEv, Evidence{"main-thread samples in DataLoader code", pct(s.py.LoaderShare), "%", "pyprofile"})
		in = s.py.LoaderShare
	}
	s.add(Input, in, inEv...)

	// io (Python profile only)
	io := 0.0
	if s.py != nil {
		io = s.py.IOShare
		s.add(IO, io, Evidence{"main-thread samples in I/O code", pct(io), "%", "pyprofile"})
	}

	comm := a.CommunicationUs / S
	s.add(Comm, comm, Evidence{"exposed communication per step", a.CommunicationUs, "us", src})

	if s.device {
		s.add(GPUCompute, a.KernelUs/S, Evidence{"computation kernels per step", a.KernelUs, "us", src})
		if g := s.in.GPU; g != nil {
			for _, d := range g.Devices {
				if d.KernelCount == 0 {
					continue
				}
				s.ev[GPUCompute] = append(s.ev[GPUCompute],
					Evidence{fmt.Sprintf("device %d utilization", d.Device), d.UtilizationPct, "%", "gpu"},
					Evidence{fmt.Sprintf("device %d kernel time on tensor cores", d.Device), d.TensorCorePct, "%", "gpu"})
			}
		}
		s.add(Copy, (a.MemcpyUs+a.MemsetUs)/S, Evidence{"memcpy+memset not overlapped with kernels, per step", a.MemcpyUs + a.MemsetUs, "us", src})

		idleShare := (a.RuntimeUs + a.DataLoaderUs + a.CPUExecUs + a.OtherUs) / S
		blocked, perStep := s.syncBlocked()
		s.syncPS = perStep
		sy := 0.0
		if perStep >= s.p.SyncPerStep && blocked >= s.p.SyncBlocked {
			sy = min(blocked, max(0, idleShare-in))
		}
		s.add(Sync, sy, Evidence{"blocking syncs per step", perStep, "", "synchronization"},
			Evidence{"host blocked in syncs", pct(blocked), "% of step", "synchronization"},
			Evidence{"device idle", pct(idleShare), "% of step", src})
		pool := max(0, idleShare-in-sy-io)
		hostEv := []Evidence{{"device idle while the host runs (runtime, CPU ops, Python)", pct(pool), "% of step", src},
			{"kernel-launch calls per step", a.RuntimeLaunchUs, "us", src}}
		if s.launchy() {
			kps, short := s.kernelStats()
			s.add(Launch, pool, append(hostEv, Evidence{"kernels per step", kps, "", "kernel_launches"},
				Evidence{"kernels shorter than their launch call", pct(short), "%", "kernel_launches"},
				Evidence{"step time per kernel", s.step / kps, "us", "kernel_launches"})...)
		} else {
			s.add(Host, pool, hostEv...)
		}
		return
	}
	// CPU only (or GPU work not recorded)
	other := (a.OtherUs + a.RuntimeUs) / S
	cpu := a.CPUExecUs / S
	ioOther := min(io, other)
	other -= ioOther
	cpu = max(0, cpu-(io-ioOther))
	if s.usesGPU {
		// Kernels were launched but not recorded: the host side alone
		// cannot say whether the device or the host is the limit.
		s.d.Unknown = append(s.d.Unknown, Unmeasured{GPUCompute, fmt.Sprintf(
			"the program launched device work (%s of launch calls per step) but the trace holds no kernels: it was recorded with CPU activity only (add ProfilerActivity.CUDA)", FormatUs(a.RuntimeLaunchUs))})
		for _, c := range []Class{Copy, Sync, Launch} {
			s.d.Unknown = append(s.d.Unknown, Unmeasured{c, "no device activity in the trace"})
		}
		return
	}
	s.add(Host, other, Evidence{"Python time between ops per step", a.OtherUs + a.RuntimeUs, "us", src})
	s.add(CPUCompute, cpu, Evidence{"time inside native ops per step", a.CPUExecUs, "us", src})
}

// syncBlocked returns the share of step time the host was blocked in
// syncs and the syncs per step, over the averaged steps.
func (s *state) syncBlocked() (blocked, perStep float64) {
	sy := s.in.Syncs
	if sy == nil {
		return 0, 0
	}
	var b, st float64
	n := 0
	for _, p := range sy.PerStep {
		b += p.BlockedUs
		st += p.StepUs
		n += p.Count
	}
	steps := len(sy.PerStep)
	if st <= 0 || steps == 0 {
		return sy.BlockedUs / (s.step * float64(s.steps)), float64(sy.Count) / float64(s.steps)
	}
	perStep = float64(n) / float64(steps)
	if r := s.in.Run; r != nil && r.SyncsPerStep > perStep {
		perStep = r.SyncsPerStep
	}
	return b / st, perStep
}

func (s *state) kernelStats() (perStep, shortFrac float64) {
	l := s.in.Launch
	if l == nil || l.Launched == 0 {
		return 0, 0
	}
	var n int
	for _, p := range l.PerStep {
		n += p.Kernels
	}
	if len(l.PerStep) > 0 {
		perStep = float64(n) / float64(len(l.PerStep))
	} else {
		perStep = float64(l.Launched) / float64(max(1, s.steps))
	}
	return perStep, float64(l.ShortKernels) / float64(l.Launched)
}

func (s *state) launchy() bool {
	kps, short := s.kernelStats()
	return kps >= s.p.LaunchKernelsPerStep && short >= s.p.LaunchShortFrac && s.step/kps <= s.p.LaunchStepUsPerKernel
}

var detail = map[Class]string{
	Input:      "waiting on data loading",
	Host:       "the host (Python, framework) leaves the device idle",
	Launch:     "kernel-launch overhead: many tiny kernels leave the device idle",
	Sync:       "the host blocks on the device every step",
	GPUCompute: "device kernels fill the step",
	Copy:       "host-device copies not hidden behind compute",
	Comm:       "communication not hidden behind compute",
	Memory:     "device memory near capacity",
	CPUCompute: "CPU-only: native ops fill the step",
	IO:         "file I/O (checkpointing, logging) in the step",
	Straggler:  "one rank holds the others back",
}

func (s *state) verdict() {
	cs := make([]ClassScore, 0, len(s.share))
	for c, v := range s.share {
		cs = append(cs, ClassScore{Class: c, SharePct: round(pct(v)), Evidence: s.ev[c]})
	}
	order := classOrder()
	slices.SortFunc(cs, func(a, b ClassScore) int {
		if a.SharePct != b.SharePct {
			return cmp.Compare(b.SharePct, a.SharePct)
		}
		return cmp.Compare(order[a.Class], order[b.Class])
	})
	s.memoryPressure()
	if !s.usesGPU || s.device {
		s.unmeasured()
	}
	s.d.Classes = cs
	s.d.StepUs = s.step
	if s.usesGPU && !s.device {
		// only a CPU-side class that explains most of the step can be the verdict
		top := cs[0]
		if top.SharePct < 50 || (top.Class != Input && top.Class != IO) {
			s.d.Verdict = Verdict{Primary: Undetermined, Confidence: "none",
				Why: "the trace records CPU activity only although the program launched device work, so it cannot say whether the host or the device is the limit"}
			return
		}
	}
	top := cs[0]
	second := 0.0
	if len(cs) > 1 {
		second = cs[1].SharePct
	}
	v := Verdict{Primary: top.Class, Detail: detail[top.Class], SharePct: top.SharePct}
	if top.Class == Host && !s.device {
		v.Detail = "CPU-only: Python between ops fills the step"
	}
	sh, margin := top.SharePct/100, (top.SharePct-second)/100
	switch {
	case sh >= s.p.HighShare && margin >= s.p.HighMargin:
		v.Confidence = "high"
	case sh >= s.p.MediumShare && margin >= s.p.MediumMargin:
		v.Confidence = "medium"
	default:
		v.Confidence = "low"
	}
	var caveats []string
	if s.in.Breakdown.SyntheticStep {
		caveats = append(caveats, "no ProfilerStep marks: the whole trace is taken as one step")
		v.Confidence = lower(v.Confidence)
	} else if s.steps < 2 {
		caveats = append(caveats, "only one step recorded")
		v.Confidence = lower(v.Confidence)
	}
	v.Why = fmt.Sprintf("%s explains %.0f%% of the mean step (%s); next: %s", top.Class, top.SharePct, FormatUs(s.step), nextText(cs))
	if len(caveats) > 0 {
		v.Why += "; " + strings.Join(caveats, "; ")
	}
	for _, c := range cs[1:] {
		if c.SharePct/100 >= s.p.Secondary {
			v.Secondary = append(v.Secondary, c.Class)
		}
	}
	if _, ok := s.share[Memory]; ok {
		v.Secondary = append(v.Secondary, Memory)
	}
	s.d.Verdict = v
}

func nextText(cs []ClassScore) string {
	if len(cs) < 2 {
		return "none"
	}
	return fmt.Sprintf("%s %.0f%%", cs[1].Class, cs[1].SharePct)
}

func lower(c string) string {
	switch c {
	case "high":
		return "medium"
	case "medium":
		return "low"
	}
	return c
}

func classOrder() map[Class]int {
	o := map[Class]int{}
	for i, c := range []Class{Input, IO, Sync, Launch, Copy, Comm, Host, GPUCompute, CPUCompute, Memory, Straggler} {
		o[c] = i
	}
	return o
}

// memoryPressure flags devices near capacity (not a share of time: a risk).
func (s *state) memoryPressure() {
	m := s.in.Memory
	if m == nil {
		return
	}
	for _, d := range m.Devices {
		if d.DeviceType == 0 || d.TotalBytes == 0 {
			continue
		}
		if d.PeakReservedPct >= s.p.MemoryPct {
			s.ev[Memory] = append(s.ev[Memory], Evidence{d.Device + " peak reserved", d.PeakReservedPct, "% of device memory", "memory"},
				Evidence{d.Device + " peak allocated", d.PeakAllocatedPct, "% of device memory", "memory"})
			s.share[Memory] = 0
		}
	}
}

func (s *state) unmeasured() {
	u := func(c Class, why string) { s.d.Unknown = append(s.d.Unknown, Unmeasured{c, why}) }
	if s.in.Input != nil && s.in.Input.Calls == 0 && (s.in.Run == nil || !s.in.Run.HasDataLoader) {
		u(Input, "no DataLoader __next__ in the trace (data loaded another way is not visible)")
	}
	if s.py == nil {
		u(IO, "needs a Python profile (bottleneck run)")
	}
	if s.usesGPU && (s.in.Memory == nil || s.in.Memory.Events == 0) {
		u(Memory, "no [memory] events (record with profile_memory=True)")
	}
	u(Straggler, "needs several ranks")
}

func round(x float64) float64 {
	if x < 0 {
		return -round(-x)
	}
	return float64(int64(x*10+0.5)) / 10
}

// FormatUs writes a duration in microseconds the way findings quote it:
// seconds to two decimals, milliseconds to one, else whole microseconds.
func FormatUs(us float64) string {
	switch {
	case us >= 1e6:
		return fmt.Sprintf("%.2f s", us/1e6)
	case us >= 1e3:
		return fmt.Sprintf("%.1f ms", us/1e3)
	}
	return fmt.Sprintf("%.0f µs", us)
}

// isGEMM reports matmul/convolution kernels by name.
func isGEMM(name string) bool {
	n := strings.ToLower(name)
	for _, p := range gemmNames {
		if strings.Contains(n, p) {
			return true
		}
	}
	return false
}

func isConv(name string) bool {
	n := strings.ToLower(name)
	if strings.Contains(n, "nccl") {
		return false
	}
	for _, p := range convNames {
		if strings.Contains(n, p) {
			return true
		}
	}
	return false
}

func isDeviceWork(name string) bool {
	return !strings.HasPrefix(name, "Memcpy") && !strings.HasPrefix(name, "Memset") && !classify.IsCommKernel(name)
}
