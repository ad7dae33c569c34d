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
	devNs [6]int64 // DeviceSelfUs, summed in ns a kernel at a time
	typed bool     // some op recorded its input types
}

func newDtypeSums(t *trace.Trace) *dtypeSums {
	return &dtypeSums{t: t, bySet: make([]int8, t.ArgSets.Len()+1)}
}

// addHost counts op event i with its host self time (ns).
func (d *dtypeSums) addHost(i int, selfNs int64) {
	if k := d.of(i); k >= 0 {
		d.sums[k].Calls++
		d.sums[k].HostSelfUs += us(max(selfNs, 0))
	}
}

// addDevice adds device time (ns) that op event i launched.
func (d *dtypeSums) addDevice(i int, devNs int64) {
	if k := d.of(i); k >= 0 {
		d.devNs[k] += devNs
	}
}

// of returns op event i's dtype as an index of dtypeNames (-1 for an
// event whose arg set is not this trace's).
func (d *dtypeSums) of(i int) int {
	set := int(d.t.Events.Args[i])
	if set >= len(d.bySet) {
		return -1
	}
	if d.bySet[set] == 0 {
		if _, typed := d.t.Arg(i, trace.KeyInputType); typed {
			d.typed = true
		}
		d.bySet[set] = int8(max(0, slices.Index(dtypeNames, classify.InputDtype(d.t, i)))) + 1
	}
	return int(d.bySet[set]) - 1
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
			s.DeviceSelfUs = us(d.devNs[j])
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b DtypeTime) int {
		return cmp.Or(cmp.Compare(b.HostSelfUs+b.DeviceSelfUs, a.HostSelfUs+a.DeviceSelfUs), cmp.Compare(a.Dtype, b.Dtype))
	})
	return out
}
