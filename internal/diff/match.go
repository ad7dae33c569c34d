package diff

import (
	"cmp"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/breakdown"
)

func breakdownDeltas(b, n *sideData, traceDelta float64) []Delta {
	out := []Delta{}
	for c := range breakdown.Category(breakdown.NumCategories) {
		bu, nu := b.categories[c], n.categories[c]
		if bu == 0 && nu == 0 {
			continue
		}
		d := Delta{Category: c.String(), BaseUs: bu, NewUs: nu, DeltaUs: nu - bu,
			BasePct: share(bu, b.summary.TraceStepUs), NewPct: share(nu, n.summary.TraceStepUs)}
		d.SharePct = share(d.DeltaUs, traceDelta)
		out = append(out, d)
	}
	slices.SortStableFunc(out, func(x, y Delta) int { return cmp.Compare(abs(y.DeltaUs), abs(x.DeltaUs)) })
	return out
}

// share is part as a percentage of whole (0 when whole is 0).
func share(part, whole float64) float64 {
	if whole == 0 {
		return 0
	}
	return 100 * part / whole
}

// item is one kernel or operator name of one side, per step.
type item struct {
	name   string
	us     float64
	calls  float64
	op     string // kernels: the operator behind most of its time
	shapes map[string]float64
}

// kernelsOf sums a side's kernel tables per name, per step and rank.
func kernelsOf(d *sideData) map[string]*item {
	out := map[string]*item{}
	n := float64(len(d.traces))
	for i, t := range d.traces {
		if t.Kernels == nil {
			continue
		}
		steps := float64(d.stepsOf[i])
		for _, row := range t.Kernels.Rows {
			it := out[row.Name]
			if it == nil {
				it = &item{name: row.Name, op: row.TopOp}
				out[row.Name] = it
			}
			it.us += row.TotalUs / steps / n
			it.calls += float64(row.Calls) / steps / n
		}
	}
	return out
}

// opsOf sums a side's operator tables per name (shapes kept apart), per
// step and rank, with device time when the side has any, else host self
// time.
func opsOf(d *sideData, device bool) map[string]*item {
	out := map[string]*item{}
	n := float64(len(d.traces))
	for i, t := range d.traces {
		if t.Ops == nil {
			continue
		}
		steps := float64(d.stepsOf[i])
		for _, row := range t.Ops.Rows {
			name := normaliseOp(row.Name)
			it := out[name]
			if it == nil {
				it = &item{name: name, shapes: map[string]float64{}}
				out[name] = it
			}
			us := row.HostSelfUs
			if device {
				us = row.DeviceSelfUs
			}
			it.us += us / steps / n
			it.calls += float64(row.Calls) / steps / n
			if row.InputDims != "" {
				it.shapes[strings.Join(strings.Fields(row.InputDims), " ")] += us
			}
		}
	}
	return out
}

func hasDeviceOps(d *sideData) bool {
	for _, t := range d.traces {
		if t.Ops != nil && t.Ops.DevSelfUs > 0 {
			return true
		}
	}
	return false
}

// matchOps pairs operators by name; a change of input shapes is shown on
// the pair.
func matchOps(b, n *sideData, traceDelta float64) []ItemDelta {
	device := hasDeviceOps(b) && hasDeviceOps(n)
	timeKind := "host"
	if device {
		timeKind = "device"
	}
	bo, no := opsOf(b, device), opsOf(n, device)
	var out []ItemDelta
	for _, name := range unionKeys(bo, no) {
		x, y := bo[name], no[name]
		d := pair(name, x, y, Exact, traceDelta)
		d.Time = timeKind
		if x != nil && y != nil {
			if !slices.Equal(slices.Sorted(maps.Keys(x.shapes)), slices.Sorted(maps.Keys(y.shapes))) {
				d.BaseShapes, d.NewShapes = topShapes(x.shapes), topShapes(y.shapes)
			}
		}
		out = append(out, d)
	}
	return out
}

// topShapes are the input shapes that took most of an operator's time
// (up to three, largest first).
func topShapes(m map[string]float64) []string {
	keys := slices.Collect(maps.Keys(m))
	slices.SortFunc(keys, func(a, b string) int { return cmp.Or(cmp.Compare(m[b], m[a]), cmp.Compare(a, b)) })
	if len(keys) > 3 {
		keys = keys[:3]
	}
	return keys
}

// matchKernels pairs kernels in three passes: same name; same name once
// normalised (template arguments, parameter lists, hashes and numbering
// removed: recompiled Triton kernels, different template instances); then
// the rest by the operator that launched them (a different library kernel
// for the same operator: another device, precision or algorithm). What
// remains is new or vanished.
func matchKernels(b, n *sideData, traceDelta float64) []ItemDelta {
	bk, nk := kernelsOf(b), kernelsOf(n)
	bt, nt := totalUs(bk), totalUs(nk)
	var out []ItemDelta
	for _, name := range unionKeys(bk, nk) {
		if x, y := bk[name], nk[name]; x != nil && y != nil {
			out = append(out, pair(name, x, y, Exact, traceDelta))
			delete(bk, name)
			delete(nk, name)
		}
	}
	for _, pass := range []struct {
		match Match
		key   func(*item) string
	}{
		{Normalised, func(it *item) string { return NormaliseKernel(it.name) }},
		{SameOp, func(it *item) string { return it.op }},
	} {
		bg, ng := group(bk, pass.key), group(nk, pass.key)
		for _, key := range unionKeys(bg, ng) {
			x, y := bg[key], ng[key]
			if key == "" || x == nil || y == nil {
				continue
			}
			d := pair(key, merge(x), merge(y), pass.match, traceDelta)
			if pass.match == SameOp {
				d.Name = "kernels of " + key
				d.Op = key
			}
			d.BaseNames, d.NewNames = names(x), names(y)
			out = append(out, d)
			for _, it := range x {
				delete(bk, it.name)
			}
			for _, it := range y {
				delete(nk, it.name)
			}
		}
	}
	for _, name := range unionKeys(bk, nk) {
		out = append(out, pair(name, bk[name], nk[name], "", traceDelta))
	}
	for i := range out {
		out[i].Time = "device"
		out[i].BaseKernelPct, out[i].NewKernelPct = share(out[i].BaseUs, bt), share(out[i].NewUs, nt)
	}
	return out
}

// pair builds the delta of x (base) and y (new); a nil side makes the
// item new or vanished.
func pair(name string, x, y *item, m Match, traceDelta float64) ItemDelta {
	d := ItemDelta{Name: name, Match: m}
	switch {
	case x == nil:
		d.Match = Added
	case y == nil:
		d.Match = Vanished
	}
	if x != nil {
		d.BaseUs, d.BaseCalls, d.Op = x.us, x.calls, x.op
	}
	if y != nil {
		d.NewUs, d.NewCalls = y.us, y.calls
		if d.Op == "" {
			d.Op = y.op
		}
	}
	d.DeltaUs = d.NewUs - d.BaseUs
	d.SharePct = share(d.DeltaUs, traceDelta)
	return d
}

func totalUs(m map[string]*item) float64 {
	var us float64
	for _, it := range m {
		us += it.us
	}
	return us
}

func group(m map[string]*item, key func(*item) string) map[string][]*item {
	out := map[string][]*item{}
	for _, it := range m {
		k := key(it)
		out[k] = append(out[k], it)
	}
	for _, g := range out {
		slices.SortFunc(g, func(a, b *item) int { return cmp.Or(cmp.Compare(b.us, a.us), cmp.Compare(a.name, b.name)) })
	}
	return out
}

func merge(items []*item) *item {
	m := &item{name: items[0].name, op: items[0].op}
	for _, it := range items {
		m.us += it.us
		m.calls += it.calls
	}
	return m
}

func names(items []*item) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.name
	}
	return out
}

func unionKeys[V any](a, b map[string]V) []string {
	keys := slices.Collect(maps.Keys(a))
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// stepNumber is the numbering of annotations such as ProfilerStep#12.
var stepNumber = lazyRegexp(`#\d+$`)

// stepAnnotation is torch.profiler's step annotation once normaliseOp
// has merged its numbers.
const stepAnnotation = "ProfilerStep#N"

// loaderNext is the DataLoader's __next__ annotation, named after the
// iterator class (_SingleProcessDataLoaderIter without workers,
// _MultiProcessingDataLoaderIter with them).
var loaderNext = lazyRegexp(`^enumerate\(DataLoader\)#_\w*DataLoaderIter\.__next__$`)

// normaliseOp merges the per-step annotations (ProfilerStep#7, #8...),
// which differ between runs only by number, and the DataLoader's
// iterators, which differ by worker settings.
func normaliseOp(name string) string {
	if loaderNext().MatchString(name) {
		return "enumerate(DataLoader).__next__"
	}
	return stepNumber().ReplaceAllString(name, "#N")
}

var (
	// hexNoise: addresses and content hashes (Triton, CUTLASS, inductor).
	hexNoise = lazyRegexp(`(?i)(0x[0-9a-f]+|[_.][0-9a-f]{8,}\b)`)
	// numbering: the trailing index inductor and Triton give kernels
	// (triton_poi_fused_add_0, ..._1) and numbered suffixes.
	numbering = lazyRegexp(`_\d+$`)
)

// NormaliseKernel removes what varies between builds of the same kernel:
// the "void " prefix, template arguments, the parameter list, hashes,
// addresses and trailing numbering.
func NormaliseKernel(name string) string {
	s := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(name), "void "))
	s = stripBalanced(s, '<', '>')
	s = stripBalanced(s, '(', ')')
	s = hexNoise().ReplaceAllString(s, "")
	s = numbering().ReplaceAllString(s, "")
	return strings.TrimSpace(s)
}

// stripBalanced removes every open...close group, nested ones included.
// Unbalanced text is kept as it is.
func stripBalanced(s string, open, close byte) string {
	var b strings.Builder
	depth := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case open:
			depth++
			continue
		case close:
			if depth > 0 {
				depth--
				continue
			}
		}
		if depth == 0 {
			b.WriteByte(s[i])
		}
	}
	if depth != 0 {
		return s
	}
	return b.String()
}

// lazyRegexp compiles expr on first use: the diff's patterns cost half a
// millisecond of every command's start-up (`analyze` included) when
// compiled at init.
func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
