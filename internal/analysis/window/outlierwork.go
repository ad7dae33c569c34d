package window

import (
	"cmp"
	"slices"
	"strings"

	"github.com/bottleneck-dev/bottleneck/internal/trace"
)

// What the outlier steps do. Two or more outliers in one window are the
// loop's own pattern (an evaluation every N steps, a checkpoint, a log
// flush), not noise, and the verdict needs their work: the time of each
// outermost host range (op or record_function range, on any thread) in
// the outlier steps, less what an ordinary step spends in it, names the
// work; forward ops without a backward beside them are an evaluation.

// OutlierWork is what the outlier steps spend beyond an ordinary step.
type OutlierWork struct {
	// Steps is the number of outlier steps.
	Steps int `json:"steps"`
	// ExcessUs is their mean time above the median step.
	ExcessUs float64 `json:"excess_us"`
	// Top are the outermost host ranges by time per outlier step above the used steps' mean, largest first, at most 5.
	Top []WorkName `json:"top"`
	// BackwardUs is the part of that excess in the backward pass (autograd's evaluate_function ranges): near 0 when the extra work trains nothing (an evaluation).
	BackwardUs float64 `json:"backward_us"`
	// RecordedUs is the excess the outermost ranges account for; the rest of ExcessUs ran with nothing recorded (Python, file I/O, sleeping).
	RecordedUs float64 `json:"recorded_us"`
}

// WorkName is one outermost range's excess per outlier step.
type WorkName struct {
	// Name is the op's or range's name.
	Name string `json:"name"`
	// Us is its time per outlier step less its mean time per used step.
	Us float64 `json:"us"`
	// Annotation: a record_function range (the program's own, or torch's), not an op.
	Annotation bool `json:"annotation,omitempty"`
}

// minOutliers is the number of outlier steps that make a pattern.
const minOutliers = 2

// outlierWork fills Result.OutlierWork (nil with fewer than minOutliers).
func (c *checker) outlierWork() *OutlierWork {
	var out, used []int
	for i, s := range c.r.Steps {
		switch s.Excluded {
		case Outlier:
			out = append(out, i)
		case "":
			used = append(used, i)
		}
	}
	if len(out) < minOutliers || len(used) == 0 {
		return nil
	}
	isOut := make([]int8, len(c.r.Steps)) // 1 outlier, -1 used
	for _, i := range out {
		isOut[i] = 1
	}
	for _, i := range used {
		isOut[i] = -1
	}
	ev := &c.t.Events
	type sums struct {
		out, used  int64
		annotation bool
	}
	byName := map[trace.StrID]*sums{}
	ranged := func(k trace.Kind) bool { return k == trace.KindCPUOp || k == trace.KindUserAnnotation }
	outermost := func(i int32, step int32) bool {
		for p := ev.Parent[i]; p != trace.None; p = ev.Parent[p] {
			if ranged(ev.Kind[p]) && p != step {
				return false
			}
		}
		return true
	}
	for i, k := range ev.Kind {
		if !ranged(k) {
			continue
		}
		s := ev.Step[i]
		if s == trace.None || isOut[s] == 0 || c.t.Steps[s].Event == int32(i) || !outermost(int32(i), c.t.Steps[s].Event) {
			continue
		}
		n := byName[ev.Name[i]]
		if n == nil {
			n = &sums{annotation: k == trace.KindUserAnnotation}
			byName[ev.Name[i]] = n
		}
		if d := c.t.EndInStep(int32(i)) - ev.Start[i]; isOut[s] > 0 {
			n.out += d
		} else {
			n.used += d
		}
	}
	w := &OutlierWork{Steps: len(out), Top: []WorkName{}}
	for _, i := range out {
		w.ExcessUs += c.r.Steps[i].Us - c.r.MedianUs
	}
	w.ExcessUs /= float64(len(out))
	var all []WorkName
	for name, n := range byName {
		ex := us(n.out)/float64(len(out)) - us(n.used)/float64(len(used))
		if ex <= 0 {
			continue
		}
		all = append(all, WorkName{Name: c.t.Str(name), Us: ex, Annotation: n.annotation})
	}
	slices.SortFunc(all, func(a, b WorkName) int { return cmp.Or(cmp.Compare(b.Us, a.Us), strings.Compare(a.Name, b.Name)) })
	for _, wn := range all { // summed in this order, not the map's: the same report every run
		w.RecordedUs += wn.Us
		if strings.HasPrefix(wn.Name, "autograd::engine::evaluate_function") {
			w.BackwardUs += wn.Us
		}
	}
	w.Top = append(w.Top, all[:min(5, len(all))]...)
	return w
}
