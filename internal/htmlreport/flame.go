package htmlreport

// Flame graphs: stacks of the Python sampler profile (weight: samples) and
// of the host-side call tree of the trace (python_function > annotation >
// op > runtime call; weight: self time in ns), in a compact wire format.

import (
	"strings"

	"github.com/bottleneck-dev/bottleneck/internal/pyprofile"
	"github.com/bottleneck-dev/bottleneck/internal/trace"
)

// FlameGraph is one flame graph for the page.
type FlameGraph struct {
	Title string `json:"title"`
	Unit  string `json:"unit"` // "samples" or "ns"
	Wire  *Wire  `json:"wire"`
}

// maxFlameNodes bounds each graph (nodes beyond are folded into "other").
const maxFlameNodes = 20000

// PythonFlame builds the flame graph of a sampled Python profile, one root
// per thread role. It returns nil when the profile has no stacks.
func PythonFlame(p *pyprofile.Profile) *FlameGraph {
	if p == nil || len(p.Stacks) == 0 {
		return nil
	}
	labels := make([]string, len(p.Frames))
	for i, f := range p.Frames {
		labels[i] = frameLabel(f)
	}
	tr := newTree()
	for _, s := range p.Stacks {
		th := p.Threads[s.Thread]
		root := "thread " + th.Name
		if th.Role != "" && th.Role != "other" {
			root += " (" + th.Role + ")"
		}
		stack := make([]string, 0, len(s.Frames)+1)
		stack = append(stack, root)
		for _, f := range s.Frames {
			stack = append(stack, labels[f])
		}
		tr.add(stack, int64(s.Count))
	}
	return &FlameGraph{Title: "Python (sampled)", Unit: "samples", Wire: tr.wire(maxFlameNodes)}
}

func frameLabel(f pyprofile.Frame) string {
	file := f.File
	if i := strings.LastIndex(file, "/"); i >= 0 {
		file = file[i+1:]
	}
	return f.Func + " (" + file + ":" + itoa(f.Line) + ")"
}

// OpsFlame builds the flame graph of the host call tree: every slice on a
// host track contributes its self time under the chain of its enclosing
// slices; ops whose trace gives a "Call stack" instead of python_function
// events get those frames above them.
func OpsFlame(t *trace.Trace) *FlameGraph {
	ev := &t.Events
	n := ev.Len()
	childSum := make([]int64, n)
	host := func(i int) bool {
		k := ev.Kind[i]
		if k == trace.KindTraceSpan || k == trace.KindCounter || k == trace.KindMemory || k.OnDevice() || ev.Dur[i] <= 0 {
			return false
		}
		return !t.Tracks[ev.Track[i]].IsDevice()
	}
	for i := 0; i < n; i++ {
		if p := ev.Parent[i]; p != trace.None && host(i) {
			childSum[p] += ev.Dur[i]
		}
	}
	tr := newTree()
	node := make([]int32, n) // tree node of event i (0: not placed yet)
	threadRoot := map[trace.TrackID]int32{}
	var place func(i int) int32
	place = func(i int) int32 {
		if node[i] != 0 {
			return node[i]
		}
		var parent int32
		if p := ev.Parent[i]; p != trace.None && host(int(p)) {
			parent = place(int(p))
		} else {
			tid := ev.Track[i]
			r, ok := threadRoot[tid]
			if !ok {
				r = tr.child(0, trackLabel(&t.Tracks[tid]))
				threadRoot[tid] = r
			}
			parent = r
			if ev.Kind[i] == trace.KindCPUOp {
				if cs, ok := t.ArgStr(i, trace.KeyCallStack); ok && cs != "" {
					frames := strings.Split(cs, ";")
					for j := len(frames) - 1; j >= 0; j-- {
						if f := strings.TrimSpace(frames[j]); f != "" {
							parent = tr.child(parent, f)
						}
					}
				}
			}
		}
		node[i] = tr.child(parent, t.Name(i))
		return node[i]
	}
	any := false
	for i := 0; i < n; i++ {
		if !host(i) {
			continue
		}
		self := ev.Dur[i] - childSum[i]
		nd := place(i)
		if self > 0 {
			tr.addSelf(nd, self)
			any = true
		}
	}
	if !any {
		return nil
	}
	return &FlameGraph{Title: "Host call tree (ops)", Unit: "ns", Wire: tr.wire(maxFlameNodes)}
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	neg := n < 0
	if neg {
		n = -n
	}
	var b [20]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	if neg {
		i--
		b[i] = '-'
	}
	return string(b[i:])
}
