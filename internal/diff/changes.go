package diff

import (
	"cmp"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/bottleneck-dev/bottleneck/internal/diagnose"
	"github.com/bottleneck-dev/bottleneck/internal/report"
	"github.com/bottleneck-dev/bottleneck/internal/units"
)

// Thresholds under which a change is not listed: counts per step that
// moved by less than countChange (relative), shares by less than
// sharePoints percentage points.
const (
	countChange = 0.10
	sharePoints = 5.0
)

// facts are the per-step figures of one side that Changes compares.
type facts struct {
	launches    float64 // kernel, memcpy and memset launches per step
	syncs       float64 // blocking syncs per step
	syncBlocked float64 // µs per step the host blocked
	syncSites   map[string]float64
	tensorCore  float64 // share of kernel time on tensor cores (%)
	kernelUs    float64
	precision   map[string]float64 // share of matmul/conv kernel time by precision
	peakMemory  int64
	hasMemory   bool
	collectives float64 // per step, across ranks
	commOverlap float64 // % of communication overlapped
	hasRanks    bool
}

func factsOf(d *sideData) facts {
	f := facts{syncSites: map[string]float64{}, precision: map[string]float64{}}
	n := float64(len(d.traces))
	var tcUs, gemmUs float64
	for i, t := range d.traces {
		steps := float64(d.stepsOf[i])
		if t.Launch != nil && len(t.Launch.PerStep) > 0 {
			var k int
			for _, st := range t.Launch.PerStep {
				k += st.Kernels + st.Memcpy + st.Memset
			}
			f.launches += float64(k) / float64(len(t.Launch.PerStep)) / n
		}
		if t.Syncs != nil && len(t.Syncs.PerStep) > 0 {
			var c int
			var blocked float64
			for _, st := range t.Syncs.PerStep {
				c += st.Count
				blocked += st.BlockedUs
			}
			f.syncs += float64(c) / float64(len(t.Syncs.PerStep)) / n
			f.syncBlocked += blocked / float64(len(t.Syncs.PerStep)) / n
			for _, c := range t.Syncs.Causes {
				site := c.Op
				if len(c.Stack) > 0 {
					site = c.Stack[0]
				}
				f.syncSites[strings.Replace(c.Call, "hip", "cuda", 1)+" from "+site] += float64(c.Count) / steps / n
			}
		}
		if t.GPU != nil {
			for _, dev := range t.GPU.Devices {
				tcUs += dev.TensorCoreTimeUs
				f.kernelUs += dev.KernelTimeUs
			}
		}
		if t.Kernels != nil {
			for _, row := range t.Kernels.Rows {
				if p := precisionOf(row.Name); p != "" {
					f.precision[p] += row.TotalUs
					gemmUs += row.TotalUs
				}
			}
		}
		if t.Memory != nil {
			for _, dev := range t.Memory.Devices {
				f.hasMemory = true
				f.peakMemory = max(f.peakMemory, dev.PeakAllocatedBytes)
			}
		}
	}
	f.tensorCore = share(tcUs, f.kernelUs)
	for p := range f.precision {
		f.precision[p] = share(f.precision[p], gemmUs)
	}
	if rk := d.side.Report.Ranks; rk != nil && len(rk.Ranks) > 0 {
		f.hasRanks = true
		var coll, overlap float64
		for _, r := range rk.Ranks {
			if r.Steps > 0 {
				coll += float64(r.Collectives) / float64(r.Steps)
			}
			overlap += r.OverlapPct
		}
		f.collectives = coll / float64(len(rk.Ranks))
		f.commOverlap = overlap / float64(len(rk.Ranks))
	}
	if run := d.side.Run; run != nil {
		for _, p := range run.Processes {
			if p.Evidence != nil {
				for _, s := range p.Evidence.Syncs.Sites {
					f.syncSites[fmt.Sprintf("implicit sync at %s:%d (%s)", s.File, s.Line, s.Func)] += float64(s.Count) / float64(max(1, p.Evidence.Steps))
				}
			}
			break // the first process (rank 0) speaks for the run
		}
	}
	return f
}

// precisionPattern finds the data type in matmul and convolution kernel
// names (cuBLAS, CUTLASS, cuDNN, rocBLAS/hipBLASLt naming).
var precisionPattern = []struct {
	re   func() *regexp.Regexp
	name string
}{
	{lazyRegexp(`(?i)fp8|e4m3|e5m2`), "fp8"},
	{lazyRegexp(`(?i)bf16|bfloat16`), "bf16"},
	{lazyRegexp(`(?i)f16|fp16|hgemm|half|_h\d+|884|1688`), "fp16"},
	{lazyRegexp(`(?i)tf32`), "tf32"},
	{lazyRegexp(`(?i)sgemm|f32|fp32|float`), "fp32"},
}

var gemmLike = lazyRegexp(`(?i)gemm|xmma|cutlass|conv|Cijk|matmul|wgrad|dgrad`)

// tensileType is the data type field of AMD Tensile kernel names: its
// first letter after the index names (Cijk_Alik_Bljk_B_..., _SB_ when
// batched): B bf16, H fp16, S fp32, D fp64, F8 fp8.
var tensileType = lazyRegexp(`^Cijk_[A-Za-z]+_[A-Za-z]+_(F8|[BHSD])[A-Z]*_`)

var tensileNames = map[string]string{"B": "bf16", "H": "fp16", "S": "fp32", "D": "fp64", "F8": "fp8"}

// precisionOf is the data type of a matmul or convolution kernel ("" for
// other kernels). Whether it is one is read from the name without its
// template arguments (attention kernels are instantiated with CUTLASS
// types), the type from the whole name.
func precisionOf(kernel string) string {
	if !gemmLike().MatchString(NormaliseKernel(kernel)) {
		return ""
	}
	if m := tensileType().FindStringSubmatch(kernel); m != nil {
		if p, ok := tensileNames[m[1]]; ok {
			return p
		}
	}
	for _, p := range precisionPattern {
		if p.re().MatchString(kernel) {
			return p.name
		}
	}
	return "unknown"
}

func changes(b, n *sideData) []Change {
	fb, fn := b.facts, n.facts
	out := []Change{}
	perStep := func(what string, x, y float64) {
		if (x > 0 || y > 0) && abs(y-x) > countChange*max(x, y) {
			out = append(out, Change{What: what, Base: fmt.Sprintf("%.1f", x), New: fmt.Sprintf("%.1f", y)})
		}
	}
	perStep("kernel/copy launches per step", fb.launches, fn.launches)
	perStep("blocking syncs per step", fb.syncs, fn.syncs)
	if x, y := fb.syncBlocked, fn.syncBlocked; abs(y-x) > countChange*max(x, y) && max(x, y) > 0 {
		out = append(out, Change{What: "host blocked in syncs per step", Base: units.Duration(x), New: units.Duration(y),
			Note: siteChanges(fb.syncSites, fn.syncSites, 0.5)})
	} else if note := siteChanges(fb.syncSites, fn.syncSites, 0.5); note != "" {
		out = append(out, Change{What: "sync sites", Base: "", New: "", Note: note})
	}
	if fb.kernelUs > 0 && fn.kernelUs > 0 && abs(fn.tensorCore-fb.tensorCore) >= sharePoints {
		out = append(out, Change{What: "kernel time on tensor cores", Base: fmt.Sprintf("%.0f%%", fb.tensorCore), New: fmt.Sprintf("%.0f%%", fn.tensorCore)})
	}
	if note := siteChanges(fb.precision, fn.precision, sharePoints); note != "" {
		out = append(out, Change{What: "matmul/convolution kernel time by precision", Base: shares(fb.precision), New: shares(fn.precision), Note: note})
	}
	if fb.hasMemory && fn.hasMemory && fb.peakMemory != fn.peakMemory {
		out = append(out, Change{What: "peak memory allocated", Base: units.Bytes(fb.peakMemory), New: units.Bytes(fn.peakMemory),
			Note: fmt.Sprintf("%+.1f%%", pct(float64(fb.peakMemory), float64(fn.peakMemory)))})
	} else if fb.hasMemory != fn.hasMemory {
		out = append(out, Change{What: "peak memory allocated", Base: recorded(fb.hasMemory), New: recorded(fn.hasMemory),
			Note: "record both runs with --profile-memory (profile_memory=True) to compare"})
	}
	if fb.hasRanks && fn.hasRanks {
		perStep("collectives per step (per rank)", fb.collectives, fn.collectives)
		if abs(fn.commOverlap-fb.commOverlap) >= sharePoints {
			out = append(out, Change{What: "communication overlapped with compute", Base: fmt.Sprintf("%.0f%%", fb.commOverlap), New: fmt.Sprintf("%.0f%%", fn.commOverlap)})
		}
	}
	return append(out, findingChanges(b.side.Report, n.side.Report)...)
}

// findingChanges are the diagnosis findings (by rule) of one run only
// (oneRunFindings), with the first line or place they point at.
func findingChanges(base, next *report.Report) []Change {
	var out []Change
	fb, fn := findingsOf(base), findingsOf(next)
	add := func(from, other []diagnose.Finding, tag string) {
		for _, f := range oneRunFindings(from, other) {
			c := Change{What: tag + " finding " + f.Rule, Note: f.Title}
			if len(f.Where) > 0 {
				w := f.Where[0]
				at := w.Name
				if w.File != "" {
					at = fmt.Sprintf("%s:%d", shortFile(w.File), w.Line)
				}
				c.Note += " (at " + at + ")"
			}
			c.Note = report.Printable(c.Note)
			out = append(out, c)
		}
	}
	add(fn, fb, "new")
	add(fb, fn, "gone")
	return out
}

func recorded(ok bool) string {
	if ok {
		return "recorded"
	}
	return "not recorded"
}

// siteChanges lists the keys whose value moved by at least minDelta,
// largest move first: "+name (x -> y)".
func siteChanges(a, b map[string]float64, minDelta float64) string {
	type mv struct {
		key  string
		x, y float64
	}
	var moves []mv
	for _, k := range unionKeys(a, b) {
		if x, y := a[k], b[k]; abs(y-x) >= minDelta {
			moves = append(moves, mv{k, x, y})
		}
	}
	slices.SortStableFunc(moves, func(p, q mv) int { return cmp.Compare(abs(q.y-q.x), abs(p.y-p.x)) })
	if len(moves) > 5 {
		moves = moves[:5]
	}
	parts := make([]string, len(moves))
	for i, m := range moves {
		tag := "changed"
		switch {
		case m.x == 0:
			tag = "new"
		case m.y == 0:
			tag = "gone"
		}
		parts[i] = fmt.Sprintf("%s %s (%.1f -> %.1f)", tag, report.Printable(m.key), m.x, m.y)
	}
	return strings.Join(parts, "; ")
}

func shares(m map[string]float64) string {
	keys := slices.Collect(maps.Keys(m))
	slices.SortFunc(keys, func(a, b string) int { return cmp.Or(cmp.Compare(m[b], m[a]), cmp.Compare(a, b)) })
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %.0f%%", k, m[k])
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}
