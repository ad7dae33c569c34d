// Package breakdown partitions each step's wall time into what the
// program was doing: the step-time breakdown of the TensorBoard profiler
// plugin, with a corrected default definition and a compatibility mode.
//
// Priority partition: every instant of a step window goes to the first
// category, in this order, that has an event running at that instant:
//
//	Kernel > Memcpy > Memset > Communication > Runtime > DataLoader > CPU Exec > Other
//
// so the categories add up to the step time exactly.
//
// Definition "default" (DefinitionVersion):
//   - Kernel: computation kernels on any device (union); NCCL/RCCL
//     kernels are Communication, whatever the collective (SendRecv /
//     all-to-all, AllGather, ReduceScatter, Broadcast, AllReduce, ...).
//   - Communication: communication kernels and host-side communication
//     ops (classify.IsCommOp: nccl:*, gloo:*, record_param_comms,
//     c10d/_c10d_functional collectives).
//   - Runtime: runtime and driver calls (cuda_runtime, cuda_driver, hip*),
//     split by priority into synchronization waits (classify.Sync and
//     blocking memcpy calls) > kernel launches (classify.Launch) > other
//     runtime calls.
//   - DataLoader: enumerate(DataLoader)#...__next__ annotations.
//   - CPU Exec: other cpu_op, user_annotation and python_function events
//     (ProfilerStep itself excluded); device-side annotations are not CPU
//     work and are ignored.
//   - Other: the rest of the step (the host idle, nothing recorded).
//   - Steps: ProfilerStep#N host spans moved to device time: a step's
//     window starts at the later of its host start and the previous
//     window's end, and ends at the later of its host end and the end of
//     the last device work launched inside it (trace.Step.DeviceEnd).
//     Without ProfilerStep events the whole trace is one step. Trailing
//     steps whose device work was cut off (no device work, or fewer than
//     80% of the previous step's device events — the plugin's rule) are
//     marked Incomplete and left out of the average.
//
// Definition "tb" reproduces TensorBoard plugin 0.4.x exactly, quirks
// included (see tb.go).
package breakdown

import (
	"fmt"
	"math"
	"sort"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/classify"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/interval"
	"github.com/bottleneck-dev/bottleneck/internal/trace"
)

// DefinitionVersion names the default definition in JSON output.
const DefinitionVersion = "default/1"

// TBVersion names the compatibility definition.
const TBVersion = "tb/0.4.3"

// Def selects a definition of the metrics: the project's (Default) or
// the TensorBoard plugin's (TB). The gpu analysis takes the same.
type Def string

// The definitions; "default" reads as Default (the flag's name for it).
const (
	Default Def = ""
	TB      Def = "tb"
)

// Options select the definition.
type Options struct {
	// Definition is Default or TB.
	Definition Def
	// Exclude, indexed like trace.Steps, leaves steps out of the average
	// (the window check's start-up, carry-over and outlier steps); they
	// are still listed, marked Excluded. Ignored by "tb".
	Exclude []bool
}

// Category indexes the breakdown categories.
type Category int

const (
	Kernel Category = iota
	Memcpy
	Memset
	Communication
	RuntimeSync   // synchronization waits (sync calls, blocking memcpy calls)
	RuntimeLaunch // kernel launches
	RuntimeOther  // other runtime calls
	DataLoader
	CPUExec
	Other
	NumCategories
)

var categoryNames = [NumCategories]string{
	"Kernel", "Memcpy", "Memset", "Communication", "Runtime: sync wait", "Runtime: launch",
	"Runtime: other", "DataLoader", "CPU Exec", "Other",
}

func (c Category) String() string { return categoryNames[c] }

// Costs is a step's (or the average step's) time per category, µs.
type Costs struct {
	// KernelUs is the time some computation kernel ran, on any device (communication kernels apart).
	KernelUs float64 `json:"kernel_us"`
	// MemcpyUs is the time a memory copy ran and no kernel did.
	MemcpyUs float64 `json:"memcpy_us"`
	// MemsetUs is the time a memset ran and no kernel or copy did.
	MemsetUs float64 `json:"memset_us"`
	// CommunicationUs is the time a communication kernel or host communication op ran and no higher category did.
	CommunicationUs float64 `json:"communication_us"`
	// RuntimeUs is the time a runtime or driver call ran and no higher category did (sync + launch + other).
	// In tb mode only RuntimeUs is set (the plugin does not split it) and
	// it is reported in RuntimeOtherUs as well.
	RuntimeUs float64 `json:"runtime_us"`
	// RuntimeSyncUs is the Runtime time in synchronization waits (synchronize calls, blocking cudaMemcpy).
	RuntimeSyncUs float64 `json:"runtime_sync_us"`
	// RuntimeLaunchUs is the Runtime time in kernel launch calls, not in a sync wait.
	RuntimeLaunchUs float64 `json:"runtime_launch_us"`
	// RuntimeOtherUs is the Runtime time in other runtime calls (all of Runtime in tb mode).
	RuntimeOtherUs float64 `json:"runtime_other_us"`
	// DataLoaderUs is the time in enumerate(DataLoader)#...__next__ and in no higher category.
	DataLoaderUs float64 `json:"dataloader_us"`
	// CPUExecUs is the time in other cpu_op, user_annotation and python_function events and in no higher category.
	CPUExecUs float64 `json:"cpu_exec_us"`
	// OtherUs is the rest of the step: nothing recorded ran (host idle, profiler gaps).
	OtherUs float64 `json:"other_us"`
	// TotalUs is the step's time, the sum of the categories (for the average, the mean step time).
	TotalUs float64 `json:"total_us"`
}

// Get returns category c.
func (c *Costs) Get(cat Category) float64 {
	switch cat {
	case Kernel:
		return c.KernelUs
	case Memcpy:
		return c.MemcpyUs
	case Memset:
		return c.MemsetUs
	case Communication:
		return c.CommunicationUs
	case RuntimeSync:
		return c.RuntimeSyncUs
	case RuntimeLaunch:
		return c.RuntimeLaunchUs
	case RuntimeOther:
		return c.RuntimeOtherUs
	case DataLoader:
		return c.DataLoaderUs
	case CPUExec:
		return c.CPUExecUs
	case Other:
		return c.OtherUs
	}
	return 0
}

func costsOf(ns *[NumCategories]float64, total float64) Costs {
	us := func(c Category) float64 { return ns[c] / 1000 }
	return Costs{
		KernelUs: us(Kernel), MemcpyUs: us(Memcpy), MemsetUs: us(Memset), CommunicationUs: us(Communication),
		RuntimeUs:     us(RuntimeSync) + us(RuntimeLaunch) + us(RuntimeOther),
		RuntimeSyncUs: us(RuntimeSync), RuntimeLaunchUs: us(RuntimeLaunch), RuntimeOtherUs: us(RuntimeOther),
		DataLoaderUs: us(DataLoader), CPUExecUs: us(CPUExec), OtherUs: us(Other), TotalUs: total / 1000,
	}
}

// Step is one step's breakdown.
type Step struct {
	// Name is the step number as text ("0" for a synthetic step).
	Name string `json:"name"`
	// StartUs is the start of the step's window on the trace's clock: the later of its host start and the previous window's end.
	StartUs float64 `json:"start_us"`
	// EndUs is the end of the step's window on the trace's clock: the later of its host end and the end of the last device work launched inside it.
	EndUs float64 `json:"end_us"`
	// Incomplete: the step is left out of the average (its device work
	// was cut off by the end of the capture).
	Incomplete bool `json:"incomplete,omitempty"`
	// Excluded: left out of the average by the window check (carry-over, start-up, graph capture or outlier).
	Excluded bool `json:"excluded,omitempty"`
	Costs
}

// Result is the breakdown of one trace.
type Result struct {
	// Definition names the version of the definition: "default/1", or "tb/0.4.3" with --definition tb (docs/metrics.md, "Step-time breakdown").
	Definition string `json:"definition"`
	// SyntheticStep: the trace has no ProfilerStep; the one step spans the
	// whole trace.
	SyntheticStep bool `json:"synthetic_step"`
	// Steps are every step's breakdown, in time order, averaged or not.
	Steps []Step `json:"steps"`
	// AveragedSteps is how many steps the average is over.
	AveragedSteps int `json:"averaged_steps"`
	// Average is the mean of each category over the averaged steps (all zero when none is averaged).
	Average Costs `json:"average"`
}

// Pct returns category c's share of the average step, in percent.
func (r *Result) Pct(c Category) float64 {
	if r.Average.TotalUs <= 0 {
		return 0
	}
	return 100 * r.Average.Get(c) / r.Average.TotalUs
}

// Compute breaks t's steps down.
func Compute(t *trace.Trace, opts Options) (*Result, error) {
	switch opts.Definition {
	case Default, "default":
		return computeDefault(t, opts.Exclude), nil
	case TB:
		return computeTB(t), nil
	}
	return nil, fmt.Errorf("breakdown: unknown definition %q (want default or tb)", opts.Definition)
}

// partition assigns every instant of the step windows to the first role
// (in order) active there; the rest is Other. It returns per-window ns per
// category. roles[i] must be merged sets. Each window is swept from
// boundary to boundary of the roles, with no set built on the way (the
// intersections and differences of whole sets allocated 40 MB on 206 MB
// of compact JSON).
func partition(windows []interval.Span, roles *[NumCategories - 1]interval.Set) [][NumCategories]float64 {
	out := make([][NumCategories]float64, len(windows))
	var next [NumCategories - 1]int // per role, its first span that ends after the sweep's time
	for i, w := range windows {
		for c, set := range roles {
			next[c] = sort.Search(len(set), func(j int) bool { return set[j].End > w.Start })
		}
		var ns [NumCategories]int64
		for t := w.Start; t < w.End; {
			end, first := w.End, Other // no role starts or ends in [t, end)
			for c, set := range roles {
				j := next[c]
				for j < len(set) && set[j].End <= t {
					j++
				}
				next[c] = j
				switch {
				case j == len(set):
				case set[j].Start <= t:
					if first == Other {
						first = Category(c)
					}
					end = min(end, set[j].End)
				default:
					end = min(end, set[j].Start)
				}
			}
			ns[first] += end - t
			t = end
		}
		for c, n := range ns {
			out[i][c] = float64(n)
		}
	}
	return out
}

// defaultSpans collects each category's spans track by track in start
// order, merged with the previous span of the same track when they
// overlap: nested ops collapse here, so sorting for the union sees a
// fraction of them. The first pass counts the spans, the second stores
// them in one array cut to those counts (grown by appends, the lists
// allocated four times their size).
func defaultSpans(t *trace.Trace, cl *classify.Table) [NumCategories - 1][]interval.Span {
	ev := &t.Events
	var raw [NumCategories - 1][]interval.Span
	var count [NumCategories - 1]int
	total := 0
	for pass := range 2 {
		for ti := range t.Tracks {
			var last [NumCategories - 1]int64 // where the track's last span of each category ends
			for c := range last {
				last[c] = math.MinInt64
			}
			for _, e := range t.Tracks[ti].Events {
				i := int(e)
				c, ok := defaultCategory(t, cl, i)
				if !ok || ev.Dur[i] <= 0 {
					continue
				}
				start, end := ev.Start[i], ev.Start[i]+ev.Dur[i]
				if start <= last[c] {
					last[c] = max(last[c], end)
					if pass == 1 {
						raw[c][len(raw[c])-1].End = last[c]
					}
					continue
				}
				last[c] = end
				if pass == 0 {
					count[c]++
					total++
				} else {
					raw[c] = append(raw[c], interval.Span{Start: start, End: end})
				}
			}
		}
		if pass == 0 {
			all := make([]interval.Span, total)
			for c, n := range count {
				raw[c], all = all[:0:n], all[n:]
			}
		}
	}
	return raw
}

func computeDefault(t *trace.Trace, exclude []bool) *Result {
	ev := &t.Events
	raw := defaultSpans(t, classify.For(t))
	var roles [NumCategories - 1]interval.Set
	for c := range raw {
		roles[c] = interval.Of(raw[c])
	}

	// Step windows in device time.
	windows := make([]interval.Span, len(t.Steps))
	var prevEnd int64
	for i, s := range t.Steps {
		start := s.Start
		if i > 0 {
			start = max(start, prevEnd)
		}
		end := max(s.DeviceEnd, s.End, start)
		windows[i] = interval.Span{Start: start, End: end}
		prevEnd = end
	}
	// Device events launched per step, for the truncated-tail rule.
	counts := make([]int, len(t.Steps))
	for i, k := range ev.Kind {
		if k.IsDeviceWork() && ev.Step[i] != trace.None {
			counts[ev.Step[i]]++
		}
	}
	keep := keepSteps(counts)

	parts := partition(windows, &roles)
	r := &Result{Definition: DefinitionVersion, SyntheticStep: t.SyntheticStep}
	var sum [NumCategories]float64
	var total float64
	for i, s := range t.Steps {
		w := windows[i]
		st := Step{Name: fmt.Sprint(s.Num), StartUs: float64(w.Start) / 1000, EndUs: float64(w.End) / 1000,
			Incomplete: i >= keep, Excluded: i < len(exclude) && exclude[i], Costs: costsOf(&parts[i], float64(w.Len()))}
		r.Steps = append(r.Steps, st)
		if !st.Incomplete && !st.Excluded {
			for c := range sum {
				sum[c] += parts[i][c]
			}
			total += float64(w.Len())
			r.AveragedSteps++
		}
	}
	if r.AveragedSteps > 0 {
		n := float64(r.AveragedSteps)
		for c := range sum {
			sum[c] /= n
		}
		r.Average = costsOf(&sum, total/n)
	}
	return r
}

// defaultCategory is the category event i counts in, and false for events
// that count in none.
func defaultCategory(t *trace.Trace, cl *classify.Table, i int) (Category, bool) {
	ev := &t.Events
	name := ev.Name[i]
	var c Category
	switch ev.Kind[i] {
	case trace.KindKernel:
		c = Kernel
		if cl.Has(name, classify.CommKernel) {
			c = Communication
		}
	case trace.KindMemcpy:
		c = Memcpy
	case trace.KindMemset:
		c = Memset
	case trace.KindRuntime, trace.KindDriver:
		switch f := cl.Flags(name); {
		case f&(classify.Sync|classify.MemcpyBlocking) != 0:
			c = RuntimeSync
		case f&classify.Launch != 0:
			c = RuntimeLaunch
		default:
			c = RuntimeOther
		}
	case trace.KindCPUOp, trace.KindUserAnnotation, trace.KindPythonFunction:
		f := cl.Flags(name)
		switch {
		case f&classify.CommOp != 0:
			c = Communication
		case f&classify.DataLoader != 0:
			c = DataLoader
		default:
			if t.Steps[0].Event != trace.None && isStepEvent(t, i) {
				return 0, false
			}
			c = CPUExec
		}
	default:
		return 0, false
	}
	return c, true
}

func isStepEvent(t *trace.Trace, i int) bool {
	s := t.Events.Step[i]
	return s != trace.None && t.Steps[s].Event == int32(i)
}

// keepSteps returns how many leading steps are complete: the plugin's
// tail rule (drop trailing steps without device work, and the last one
// with device work too when it has fewer than 80% of the previous step's
// device events). With one step, or no device work at all, all are kept.
func keepSteps(counts []int) int {
	n := len(counts)
	if n <= 1 {
		return n
	}
	i := n - 1
	for i >= 0 && counts[i] == 0 {
		i--
	}
	if i < 0 {
		return n
	}
	keep := i + 1
	if i > 0 && float64(counts[i-1])*0.8 > float64(counts[i]) {
		keep = i
	}
	return keep
}
