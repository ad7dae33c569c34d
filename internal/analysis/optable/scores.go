package optable

import (
	"cmp"
	"slices"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/classify"
	"github.com/bottleneck-dev/bottleneck/internal/trace"
)

// ScoreSources counts the softmax calls by the op that made the scores
// they normalise, as far as the order of ops on the thread tells: the
// sibling ops before each one (same thread, same enclosing op), past
// views, scaling and masking (classify.ScorePass). A matmul makes them
// in dot-product attention (q @ k.transpose), which
// scaled_dot_product_attention fuses; an elementwise nonlinearity in
// graph or additive attention, whose scores are no product of q and k,
// so that no fused attention call computes them (pytorch/examples' GAT,
// LeakyReLU(a · [Wh_i || Wh_j]) over a 2,708-node graph, was told
// scaled_dot_product_attention).
type ScoreSources struct {
	// Product is the softmax calls whose scores a matmul made (aten::matmul, bmm, baddbmm, mm, einsum).
	Product int `json:"product"`
	// Nonlinear is those whose scores an elementwise nonlinearity made (leaky_relu, tanh, relu, elu, gelu, sigmoid, silu).
	Nonlinear int `json:"nonlinear"`
}

// scoreLookback bounds the siblings looked at before a softmax, and
// scoreScan the events (their children among them).
const scoreLookback, scoreScan = 12, 512

// scoreSources finds the softmax calls in one pass over the events, in
// their order (the track lists, in start order, are read only around
// each softmax: on a GB trace they are tens of millions of indices).
func scoreSources(t *trace.Trace, names *classify.Table) ScoreSources {
	ev := &t.Events
	var out ScoreSources
	for i, name := range ev.Name {
		if !names.Has(name, classify.Softmax) || ev.Kind[i] != trace.KindCPUOp {
			continue
		}
		e := int32(i)
		track := t.Tracks[ev.Track[i]].Events
		// the first event at e's start, then e among those starting with it
		pos, _ := slices.BinarySearchFunc(track, ev.Start[i], func(x int32, start int64) int { return cmp.Compare(ev.Start[x], start) })
		for pos < len(track) && track[pos] != e {
			pos++
		}
		parent, seen := tableParent(t, e), 0
	back:
		for k := pos - 1; k >= max(0, pos-scoreScan) && seen < scoreLookback; k-- {
			s := track[k]
			if ev.Kind[s] != trace.KindCPUOp || tableParent(t, s) != parent || ev.Start[s]+ev.Dur[s] > ev.Start[i] {
				continue
			}
			seen++
			switch f := names.Flags(ev.Name[s]); {
			case f&classify.ScoreProduct != 0:
				out.Product++
				break back
			case f&classify.ScoreNonlinear != 0:
				out.Nonlinear++
				break back
			case f&classify.ScorePass == 0:
				break back // another op made them
			}
		}
	}
	return out
}
