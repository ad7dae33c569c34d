package diff

import (
	"fmt"
	"strings"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/breakdown"
	"github.com/bottleneck-dev/bottleneck/internal/report"
	"github.com/bottleneck-dev/bottleneck/internal/units"
)

// causes are the headline's causes of a significant change: the Python
// line that moved most in the change's direction (lineCause), then the
// kernel, operator or category (cause).
func causes(r *Result) []string {
	h := r.Headline
	if (!h.Significant && h.NoiseKnown) || abs(h.DeltaPct) < minSignificantPct {
		return nil
	}
	var out []string
	if s := lineCause(r); s != "" {
		out = append(out, "mainly "+s)
	}
	if s := cause(r); s != "" {
		if len(out) > 0 {
			s = "also " + strings.TrimPrefix(s, "mainly ")
		}
		out = append(out, s)
	}
	return out
}

// cause names the largest contribution to a significant change: the
// kernel or operator with the largest change in the change's direction,
// else the breakdown category.
func cause(r *Result) string {
	h := r.Headline
	if (!h.Significant && h.NoiseKnown) || abs(h.DeltaPct) < minSignificantPct {
		return ""
	}
	sameSign := func(d float64) bool { return d != 0 && (d > 0) == (h.DeltaPct > 0) }
	// Kernels first: operators' device time repeats them.
	for _, l := range []struct {
		what  string
		items []ItemDelta
	}{{"kernel", r.Kernels}, {"operator", r.Ops}} {
		var best *ItemDelta
		for i := range l.items {
			if sameSign(l.items[i].DeltaUs) && (best == nil || abs(l.items[i].DeltaUs) > abs(best.DeltaUs)) {
				best = &l.items[i]
			}
		}
		if best == nil {
			continue
		}
		what := l.what + " " + report.Printable(report.Clip(best.Name, 80))
		if l.what == "operator" && best.Name == stepAnnotation {
			// the step annotation's self time: what no operator in the
			// step holds
			what = "time in the step outside every operator (Python, I/O, waits: " + stepAnnotation + "'s self time)"
		}
		s := fmt.Sprintf("mainly %s: %s per step (%+.0f%% of the traces' step change)", what, signed(best.DeltaUs), best.SharePct)
		if best.Match == Added || best.Match == Vanished {
			s += ", " + string(best.Match)
		}
		shapes := best
		if l.what == "kernel" && best.Op != "" && best.Match != SameOp {
			s += ", launched by " + report.Printable(best.Op)
		}
		if l.what == "kernel" && best.Op != "" {
			// The operator behind the kernel says what it was given.
			shapes = nil
			for i := range r.Ops {
				if r.Ops[i].Name == best.Op {
					shapes = &r.Ops[i]
				}
			}
		}
		if shapes != nil && len(shapes.NewShapes)+len(shapes.BaseShapes) > 0 {
			s += fmt.Sprintf(", input shapes %s -> %s", report.Printable(firstOr(shapes.BaseShapes, "none")), report.Printable(firstOr(shapes.NewShapes, "none")))
		}
		return s
	}
	for _, d := range r.Breakdown {
		if sameSign(d.DeltaUs) {
			return fmt.Sprintf("mainly %s: %s per step (%+.0f%% of the traces' step change)", d.Category, signed(d.DeltaUs), d.SharePct)
		}
	}
	return ""
}

func firstOr(ss []string, def string) string {
	if len(ss) == 0 {
		return def
	}
	return ss[0]
}

func signed(us float64) string {
	if us >= 0 {
		return "+" + units.Duration(us)
	}
	return units.Duration(us)
}

// values are one run's metric values (docs/diff.md, "CI gate"): what
// --fail-if compares between runs and `check` holds against a budget.
func values(d *sideData) map[string]float64 {
	v := map[string]float64{}
	if d.summary.MedianUs > 0 {
		v["step_time"] = d.summary.MedianUs
		v["throughput"] = 1e6 / d.summary.MedianUs
	}
	if d.facts.hasMemory {
		v["peak_memory"] = float64(d.facts.peakMemory)
	}
	if len(d.traces) > 0 {
		v["launches"], v["syncs"] = d.facts.launches, d.facts.syncs
	}
	for c, name := range categoryMetric {
		if len(d.traces) > 0 {
			v[name] = d.categories[c]
		}
	}
	return v
}

// metrics pairs both runs' values; step_time and throughput carry the
// headline's significance.
func metrics(r *Result, b, n *sideData) map[string]Metric {
	m := map[string]Metric{}
	vb, vn := values(b), values(n)
	for name, x := range vb {
		if y, ok := vn[name]; ok {
			m[name] = Metric{Base: x, New: y, DeltaPct: pct(x, y)}
		}
	}
	sig := r.Headline.Significant || !r.Headline.NoiseKnown
	for _, name := range []string{"step_time", "throughput"} {
		if mt, ok := m[name]; ok {
			mt.Significant = &sig
			m[name] = mt
		}
	}
	return m
}

// categoryMetric names the breakdown categories in gate expressions.
var categoryMetric = map[breakdown.Category]string{
	breakdown.Kernel: "kernel_time", breakdown.Memcpy: "memcpy_time", breakdown.Communication: "comm_time",
	breakdown.DataLoader: "dataloader_time", breakdown.RuntimeSync: "sync_time", breakdown.RuntimeLaunch: "launch_time", breakdown.CPUExec: "cpu_time",
}
