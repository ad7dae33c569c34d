package diff

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/bottleneck-dev/bottleneck/internal/units"
)

// Rule is one --fail-if expression (docs/diff.md, "CI gate"):
//
//	verdict changed
//	METRIC OP +N%      relative change of METRIC from base to new
//	METRIC OP N[UNIT]  METRIC's value in the new run
//
// OP is >, >=, < or <=; UNIT is us, ms or s for times, B, KB, MB, GB,
// KiB, MiB or GiB for memory.
type Rule struct {
	Text     string
	Verdict  bool // "verdict changed"
	Metric   string
	Op       string
	Value    float64
	Relative bool
}

// MetricNames are the metrics a rule may name.
var MetricNames = []string{"step_time", "throughput", "peak_memory", "launches", "syncs",
	"kernel_time", "memcpy_time", "comm_time", "dataloader_time", "sync_time", "launch_time", "cpu_time"}

var ruleSyntax = lazyRegexp(`^\s*([a-z_]+)\s*(>=|<=|>|<)\s*([+-]?[0-9]*\.?[0-9]+)\s*([%a-zA-Z]*)\s*$`)

var unitScale = map[string]float64{
	"us": 1, "ms": 1e3, "s": 1e6,
	"b": 1, "kb": 1e3, "mb": 1e6, "gb": 1e9, "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30,
}

// ParseRule parses one expression.
func ParseRule(s string) (Rule, error) {
	if strings.Join(strings.Fields(strings.ToLower(s)), " ") == "verdict changed" {
		return Rule{Text: s, Verdict: true}, nil
	}
	m := ruleSyntax().FindStringSubmatch(s)
	if m == nil {
		return Rule{}, fmt.Errorf("--fail-if %q: want 'verdict changed' or 'METRIC OP VALUE' such as 'step_time > +5%%' or 'peak_memory > 20GiB'", s)
	}
	if !slices.Contains(MetricNames, m[1]) {
		return Rule{}, fmt.Errorf("--fail-if %q: unknown metric %q (want one of %s)", s, m[1], strings.Join(MetricNames, ", "))
	}
	v, err := strconv.ParseFloat(m[3], 64)
	if err != nil {
		return Rule{}, fmt.Errorf("--fail-if %q: bad number %q", s, m[3])
	}
	r := Rule{Text: s, Metric: m[1], Op: m[2], Value: v}
	switch u := strings.ToLower(m[4]); {
	case u == "%":
		r.Relative = true
	case u == "":
	default:
		f, ok := unitScale[u]
		if !ok {
			return Rule{}, fmt.Errorf("--fail-if %q: unknown unit %q (want %%, us, ms, s, B, KB, MB, GB, KiB, MiB or GiB)", s, m[4])
		}
		r.Value *= f
	}
	return r, nil
}

// Check says whether r fails on res, and why. A relative rule on
// step_time or throughput fails only when the change also exceeds the
// noise (Headline.Significant); a metric the runs do not have (peak
// memory without memory events) never fails but says so.
func (r Rule) Check(res *Result) (failed bool, why string) {
	if r.Verdict {
		if res.Headline.VerdictChanged {
			return true, fmt.Sprintf("verdict changed: was %s, now %s", res.Base.Verdict, res.New.Verdict)
		}
		return false, "verdict unchanged"
	}
	m, ok := res.Metrics[r.Metric]
	if !ok {
		return false, r.Metric + " was not measured in both runs"
	}
	if !r.Relative {
		return r.checkValue(m.New)
	}
	desc := fmt.Sprintf("%s changed by %+.1f%%", r.Metric, m.DeltaPct)
	hit := r.holds(m.DeltaPct)
	if hit && m.Significant != nil && !*m.Significant {
		return false, desc + ", within the noise"
	}
	return hit, desc
}

// checkValue holds an absolute rule against a value.
func (r Rule) checkValue(v float64) (failed bool, why string) {
	return r.holds(v), r.Metric + " " + FormatMetric(r.Metric, v)
}

// FormatMetric prints a metric's value in its unit: times per step,
// bytes, steps per second or counts per step.
func FormatMetric(name string, v float64) string {
	switch {
	case name == "step_time":
		return units.Duration(v)
	case name == "peak_memory":
		return units.Bytes(int64(v))
	case name == "throughput":
		return fmt.Sprintf("%.2f steps/s", v)
	case strings.HasSuffix(name, "_time"):
		return units.Duration(v) + " per step"
	}
	return fmt.Sprintf("%.1f per step", v)
}

func (r Rule) holds(got float64) bool {
	switch r.Op {
	case ">":
		return got > r.Value
	case ">=":
		return got >= r.Value
	case "<":
		return got < r.Value
	case "<=":
		return got <= r.Value
	}
	return false
}
