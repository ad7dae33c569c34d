package optable

import (
	"cmp"
	"slices"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/classify"
	"github.com/bottleneck-dev/bottleneck/internal/trace"
)

// dtypeSums adds up op time by compute dtype. An op's dtype depends only
// on its argument set ("Input type" is never a per-launch value), so it is
// parsed once per set.
type dtypeSums struct {
	t     *trace.Trace
	bySet map[trace.ArgSetID]string
	sums  map[string]*DtypeTime
	typed bool // some op recorded its input types
}

func newDtypeSums(t *trace.Trace) *dtypeSums {
	return &dtypeSums{t: t, bySet: map[trace.ArgSetID]string{}, sums: map[string]*DtypeTime{}}
}

// add counts op event i with its host self and device self time (ns).
func (d *dtypeSums) add(i int, selfNs, devNs int64) {
	set := d.t.Events.Args[i]
	dt, ok := d.bySet[set]
	if !ok {
		if _, typed := d.t.Arg(i, trace.KeyInputType); typed {
			d.typed = true
		}
		dt = cmp.Or(classify.InputDtype(d.t, i), "none")
		d.bySet[set] = dt
	}
	s := d.sums[dt]
	if s == nil {
		s = &DtypeTime{Dtype: dt}
		d.sums[dt] = s
	}
	s.Calls++
	s.HostSelfUs += us(max(selfNs, 0))
	s.DeviceSelfUs += us(devNs)
}

// rows are the sums by host plus device time, most first; nil when no op
// recorded its input types.
func (d *dtypeSums) rows() []DtypeTime {
	if !d.typed {
		return nil
	}
	out := make([]DtypeTime, 0, len(d.sums))
	for _, s := range d.sums {
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b DtypeTime) int {
		return cmp.Or(cmp.Compare(b.HostSelfUs+b.DeviceSelfUs, a.HostSelfUs+a.DeviceSelfUs), cmp.Compare(a.Dtype, b.Dtype))
	})
	return out
}
