// Package launch studies kernel launches: how long device work waited
// after its launch call, kernels too short to pay for their launch, how
// many kernels each step launches, and how full each stream's launch
// queue ran.
//
// Definitions (DefinitionVersion, HTA's kernel launch statistics):
//   - the events are device work (kernels, memcpy, memset) linked to a
//     runtime or driver call by correlation;
//   - launch delay = device start − launch call end, 0 when negative
//     (clock skew between host and device; HTA clips it too);
//   - short: device duration < launch call duration and the call took
//     ≤ 50 µs (HTA's "short(gpu<cpu & cpu<=50)");
//   - runtime outlier: launch call > 50 µs; delay outlier: delay > 100 µs;
//   - work launched by a graph launch (cudaGraphLaunch) is left out, as
//     HTA does: one call launches many kernels;
//   - launch queue length of a stream: launch calls started minus device
//     events started on it; the driver blocks the host when ~1024 launches
//     are pending. QueueFullUs is the time the queue held ≥ QueueFull
//     (1000) entries.
//   - DropLastStep (HTA's default) ignores work launched in the last step.
//   - HTARounding computes durations, delays and the last-step cutoff from
//     HTA's µs-rounded times (package htatime), as HTA does on traces with
//     ns decimals; launch queues keep exact times.
package launch

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/htatime"
	"github.com/bottleneck-dev/bottleneck/internal/trace"
)

// DefinitionVersion names the definition in JSON output.
const DefinitionVersion = "launch/hta-2"

// QueueFull is the queue length counted as (nearly) full.
const QueueFull = 1000

// Options tune the analysis.
type Options struct {
	DropLastStep bool
	HTARounding  bool
}

// Delays is a distribution, µs.
type Delays struct {
	// MeanUs is the mean over the launches counted (0 when none is).
	MeanUs float64 `json:"mean_us"`
	// P50Us is the median (nearest rank).
	P50Us float64 `json:"p50_us"`
	// P90Us is the 90th percentile (nearest rank).
	P90Us float64 `json:"p90_us"`
	// P99Us is the 99th percentile (nearest rank).
	P99Us float64 `json:"p99_us"`
	// MaxUs is the largest value.
	MaxUs float64 `json:"max_us"`
}

// Queue is one stream's launch queue.
type Queue struct {
	// Device is the stream's device index.
	Device int `json:"device"`
	// Stream is the stream id.
	Stream int64 `json:"stream"`
	// Max is the queue's largest length: launch calls started minus device events started on the stream (the driver blocks the host near 1024).
	Max int `json:"max"`
	// MaxAtUs is when the queue first reached Max, on the trace's clock.
	MaxAtUs float64 `json:"max_at_us"`
	// QueueFullUs is the time the queue held at least 1000 entries.
	QueueFullUs float64 `json:"queue_full_us"`
	// Negative: the queue length went below zero, a device event started before its launch call (never true unless links are wrong).
	Negative bool `json:"negative"`
}

// StepCount is one step's launches.
type StepCount struct {
	// Step is the ProfilerStep number as text.
	Step string `json:"step"`
	// Kernels is the number of kernels launched in the step.
	Kernels int `json:"kernels"`
	// Memcpy is the number of memory copies launched in the step.
	Memcpy int `json:"memcpy"`
	// Memset is the number of memsets launched in the step.
	Memset int `json:"memset"`
}

// Result is the launch analysis of one trace.
type Result struct {
	// Definition names the version of the definition (docs/metrics.md, "Kernel launches").
	Definition string `json:"definition"`
	// Launched is the number of kernels, copies and memsets linked to a launch call, graph launches left out (and the last step with --definition hta).
	Launched int `json:"launched"`
	// ShortKernels counts the launched events that ran shorter than their launch call, for calls of at most 50 µs.
	ShortKernels int `json:"short_kernels"`
	// ShortKernelsUs is the short events' summed device duration.
	ShortKernelsUs float64 `json:"short_kernels_us"`
	// RuntimeOutliers counts launch calls longer than 50 µs.
	RuntimeOutliers int `json:"runtime_outliers"`
	// DelayOutliers counts launch delays longer than 100 µs.
	DelayOutliers int `json:"delay_outliers"`
	// LaunchDelay is the distribution of launch delays: device start minus launch call end, 0 when negative (clock skew).
	LaunchDelay Delays `json:"launch_delay"`
	// LaunchCall is the distribution of the launch calls' durations.
	LaunchCall Delays `json:"launch_call"`
	// PerStep is the launches of each step, in time order (null without steps).
	PerStep []StepCount `json:"per_step"`
	// Queues are the launch queues of the streams with launched work, by device and stream.
	Queues []Queue `json:"queues"`
}

// Compute studies t's launches.
func Compute(t *trace.Trace, opts Options) *Result {
	ev := &t.Events
	cutoff := int64(math.MaxInt64)
	if opts.DropLastStep && !t.SyntheticStep && len(t.Steps) > 1 {
		cutoff = t.Steps[len(t.Steps)-1].Start
		if opts.HTARounding {
			cutoff = htatime.Start(cutoff)
		}
	}
	r := &Result{Definition: DefinitionVersion}
	launched := func(k trace.Kind) bool {
		return k == trace.KindKernel || k == trace.KindMemcpy || k == trace.KindMemset
	}
	// Lists sized by upper bounds: the device work, in all and per track.
	onTrack := make([]int, len(t.Tracks))
	n := 0
	for i, k := range ev.Kind {
		if launched(k) {
			onTrack[ev.Track[i]]++
			n++
		}
	}
	delays, calls := make([]int64, 0, n), make([]int64, 0, n)
	per := make([]StepCount, len(t.Steps))
	for i, s := range t.Steps {
		per[i].Step = strconv.Itoa(s.Num)
	}
	// A stream's queue changes are its launches (+1) and its work's starts
	// (-1), each packed in one number, 2*time+1 and 2*time, so that a
	// plain sort puts them in time order, a start before a launch at the
	// same time (a comparison sort of pairs took half this analysis).
	// Times within the year 2096 (the reader's bound) fit doubled.
	queues := map[trace.TrackID][]int64{}
	for i, k := range ev.Kind {
		if !launched(k) {
			continue
		}
		l := ev.Launch(i)
		if l == trace.None || strings.Contains(t.Name(int(l)), "GraphLaunch") {
			continue
		}
		ls, le := ev.Start[l], ev.Start[l]+ev.Dur[l]
		ks, ke := ev.Start[i], ev.Start[i]+ev.Dur[i]
		if opts.HTARounding {
			ls, le = htatime.Span(ev.Start[l], ev.Dur[l])
			ks, ke = htatime.Span(ev.Start[i], ev.Dur[i])
		}
		if ls >= cutoff {
			continue
		}
		r.Launched++
		// A delay below 0 is clock skew between host and device time
		// (Kineto's alexnet trace has -1 ms): 0, as HTA clips it.
		d, call, dur := max(ks-le, 0), le-ls, ke-ks
		delays = append(delays, d)
		calls = append(calls, call)
		if dur < call && call <= 50_000 {
			r.ShortKernels++
			r.ShortKernelsUs += float64(dur) / 1000
		}
		if call > 50_000 {
			r.RuntimeOutliers++
		}
		if d > 100_000 {
			r.DelayOutliers++
		}
		if s := ev.Step[i]; s != trace.None {
			switch k {
			case trace.KindKernel:
				per[s].Kernels++
			case trace.KindMemcpy:
				per[s].Memcpy++
			default:
				per[s].Memset++
			}
		}
		q := queues[ev.Track[i]]
		if q == nil {
			q = make([]int64, 0, 2*onTrack[ev.Track[i]])
		}
		queues[ev.Track[i]] = append(q, 2*ev.Start[l]+1, 2*ev.Start[i])
	}
	r.LaunchDelay = dist(delays)
	r.LaunchCall = dist(calls)
	if !t.SyntheticStep {
		r.PerStep = per
	}
	for tid, q := range queues {
		slices.Sort(q)
		tr := &t.Tracks[tid]
		out := Queue{Device: tr.Device, Stream: tr.Stream}
		n := 0
		var fullSince int64
		var full int64
		for _, e := range q {
			prev, at := n, e>>1
			n += int(e&1)*2 - 1
			if n < 0 {
				out.Negative = true
			}
			if n > out.Max {
				out.Max, out.MaxAtUs = n, float64(at)/1000
			}
			if prev < QueueFull && n >= QueueFull {
				fullSince = at
			} else if prev >= QueueFull && n < QueueFull {
				full += at - fullSince
			}
		}
		out.QueueFullUs = float64(full) / 1000
		r.Queues = append(r.Queues, out)
	}
	slices.SortFunc(r.Queues, func(a, b Queue) int {
		return cmp.Or(cmp.Compare(a.Device, b.Device), cmp.Compare(a.Stream, b.Stream))
	})
	return r
}

func dist(v []int64) Delays {
	if len(v) == 0 {
		return Delays{}
	}
	var sum float64
	for _, x := range v {
		sum += float64(x)
	}
	slices.Sort(v)
	pct := func(p float64) float64 {
		i := int(math.Ceil(p*float64(len(v)))) - 1
		return float64(v[max(i, 0)]) / 1000
	}
	return Delays{MeanUs: sum / float64(len(v)) / 1000, P50Us: pct(0.5), P90Us: pct(0.9), P99Us: pct(0.99),
		MaxUs: float64(v[len(v)-1]) / 1000}
}
