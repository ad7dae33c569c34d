package optable

import (
	"cmp"
	"slices"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/classify"
	"github.com/bottleneck-dev/bottleneck/internal/trace"
)

// dtypeNames are the dtypes summed, "none" first (ops without a floating
// input or recorded without types).
var dtypeNames = []string{"none", "fp64", "fp32", "fp16", "bf16", "fp8"}

// dtypeSums adds up op time by compute dtype. An op's dtype depends only
// on its argument set ("Input type" is never a per-launch value), so it is
// parsed once per set, and the sums are indexed, not hashed: this runs
// for every op of the table.
type dtypeSums struct {
	t     *trace.Trace
	bySet []int8 // arg set -> dtypeNames index + 1 (0: not parsed yet)
	sums  [6]DtypeTime
	typed bool // some op recorded its input types
}

func newDtypeSums(t *trace.Trace) *dtypeSums {
	return &dtypeSums{t: t, bySet: make([]int8, t.ArgSets.Len()+1)}
}

// add counts op event i with its host self and device self time (ns).
func (d *dtypeSums) add(i int, selfNs, devNs int64) {
	set := int(d.t.Events.Args[i])
	if set >= len(d.bySet) {
		return // not a set of this trace
	}
	if d.bySet[set] == 0 {
		if _, typed := d.t.Arg(i, trace.KeyInputType); typed {
			d.typed = true
		}
		d.bySet[set] = int8(max(0, slices.Index(dtypeNames, classify.InputDtype(d.t, i)))) + 1
	}
	s := &d.sums[d.bySet[set]-1]
	s.Calls++
	s.HostSelfUs += us(max(selfNs, 0))
	s.DeviceSelfUs += us(devNs)
}

// rows are the sums by host plus device time, most first, the dtypes no
// op had left out; nil when no op recorded its input types.
func (d *dtypeSums) rows() []DtypeTime {
	if !d.typed {
		return nil
	}
	var out []DtypeTime
	for j, s := range d.sums {
		if s.Calls > 0 {
			s.Dtype = dtypeNames[j]
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b DtypeTime) int {
		return cmp.Or(cmp.Compare(b.HostSelfUs+b.DeviceSelfUs, a.HostSelfUs+a.DeviceSelfUs), cmp.Compare(a.Dtype, b.Dtype))
	})
	return out
}
