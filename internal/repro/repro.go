// Package repro writes standalone PyTorch scripts that rebuild a traced op
// call from its recorded inputs ("Input Dims", "Input type", "Input
// Strides", "Concrete Inputs") and time it as recorded and under the
// variants worth trying for it (docs/repro.md).
package repro

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/flops"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/optable"
	"github.com/bottleneck-dev/bottleneck/internal/trace"
)

// DefaultTop is how many of the hottest ops get a script.
const DefaultTop = 3

// Options choose the ops.
type Options struct {
	// Op is the exact name of the op to reproduce (e.g. aten::conv2d);
	// "" picks the hottest ops.
	Op string
	// Top is how many of the hottest ops to write (Op == ""); 0 means
	// DefaultTop.
	Top int
}

// Script is one op's script, or why it could not be written.
type Script struct {
	// Op is the op the script calls.
	Op string
	// Calls is how many calls had the inputs the script rebuilds, of
	// AllCalls calls of the op in the trace.
	Calls, AllCalls int
	// TraceUs is those calls' mean time: the device time of the kernels
	// they launched (TimeKind "device") or their host duration ("host").
	TraceUs  float64
	TimeKind string
	// Device is where the op ran: "cuda" or "cpu".
	Device string
	// Inputs are the calls' recorded inputs, which the script rebuilds.
	Inputs Inputs
	// FileName is the script's file name (set when Err is nil).
	FileName string
	Source   []byte
	// Err says why no script was written (no recorded shapes, inputs a
	// script cannot rebuild).
	Err error
}

// opNameRE: a name torch.ops can call, namespace::op. Other cpu_op names
// are ranges (record_function, autograd engine frames), not ops.
var opNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*::[A-Za-z_][A-Za-z0-9_]*$`)

// Generate picks the ops of t (o.Op, or the o.Top hottest by the
// operator table: device time on GPU traces, else host self time; each
// op called inside another aten op is reproduced as that outer op, the
// call the program made) and returns a script for each, in that order.
// The error is for an o.Op the trace does not have.
func Generate(t *trace.Trace, s Settings, o Options) ([]Script, error) {
	if o.Top <= 0 {
		o.Top = DefaultTop
	}
	g := newGen(t, s)
	if o.Op != "" {
		id, ok := t.Lookup(o.Op)
		if !ok || len(g.byName[id]) == 0 {
			return nil, fmt.Errorf("%s: no op named %s", t.Path, pyStr(o.Op))
		}
		sc, _ := g.script(g.byName[id], false, 1)
		return []Script{sc}, nil
	}
	sortBy := "host_self"
	if g.gpu {
		sortBy = "device_total"
	}
	table := optable.Ops(t, optable.Options{SortBy: sortBy})
	var out []Script
	done := map[string]bool{}
	for _, row := range table.Rows {
		if len(out) == o.Top {
			break
		}
		id, ok := t.Lookup(row.Name)
		if row.Annotation || !ok || len(g.byName[id]) == 0 || !opNameRE.MatchString(row.Name) {
			continue
		}
		sc, key := g.script(g.byName[id], true, len(out)+1)
		if done[key] {
			continue // calls inside an op already written
		}
		done[key] = true
		out = append(out, sc)
	}
	return out, nil
}

type gen struct {
	t        *trace.Trace
	settings Settings
	byName   map[trace.StrID][]int32 // cpu_op calls by name
	dev      map[int32]int64         // device ns under each cpu_op
	gpu      bool
	device   string // the GPU's name from deviceProperties
	strides  trace.StrID
	hasStr   bool
}

func newGen(t *trace.Trace, s Settings) *gen {
	ev := &t.Events
	g := &gen{t: t, settings: s, byName: map[trace.StrID][]int32{}, dev: map[int32]int64{}}
	g.strides, g.hasStr = t.Lookup("Input Strides")
	for i, k := range ev.Kind {
		if k == trace.KindCPUOp {
			g.byName[ev.Name[i]] = append(g.byName[ev.Name[i]], int32(i))
		}
	}
	devCount := map[int]int{}
	for i, k := range ev.Kind {
		if !k.IsDeviceWork() {
			continue
		}
		op := ev.Op(i)
		if op != trace.None {
			g.gpu = true
			devCount[t.Tracks[ev.Track[i]].Device]++
		}
		for a := op; a != trace.None; a = ev.Parent[a] {
			if ev.Kind[a] == trace.KindCPUOp {
				g.dev[a] += ev.Dur[i]
			}
		}
	}
	best := -1
	for d, c := range devCount {
		if best < 0 || c > devCount[best] || c == devCount[best] && d < best {
			best = d
		}
	}
	if d := t.Meta.Device(best); d != nil {
		g.device = d.Name
	}
	return g
}

func (g *gen) name(i int32) string { return g.t.Str(g.t.Events.Name[i]) }

func (g *gen) recorded(i int32) (Inputs, bool) {
	var r Inputs
	var ok bool
	if r.Dims, ok = g.t.ArgStr(int(i), trace.KeyInputDims); !ok {
		return r, false
	}
	r.Types, _ = g.t.ArgStr(int(i), trace.KeyInputType)
	r.Concrete, _ = g.t.ArgStr(int(i), trace.KeyConcreteInputs)
	if g.hasStr {
		r.Strides, _ = g.t.ArgStr(int(i), g.strides)
	}
	return r, true
}

// lift is the outermost aten op with recorded inputs around call i (i
// itself when there is none): aten::conv2d for its aten::mkldnn_convolution.
func (g *gen) lift(i int32) int32 {
	ev := &g.t.Events
	for p := ev.Parent[i]; p != trace.None; p = ev.Parent[p] {
		if ev.Kind[p] != trace.KindCPUOp || !strings.HasPrefix(g.name(p), "aten::") {
			break
		}
		if _, ok := g.t.Arg(int(p), trace.KeyInputDims); !ok {
			break
		}
		i = p
	}
	return i
}

// timeNs is call i's time: the device time under it on a GPU trace,
// else its duration.
func (g *gen) timeNs(i int32) int64 {
	if g.gpu {
		return g.dev[i]
	}
	return g.t.Events.Dur[i]
}

// script groups calls (lifted to their outer op when lift is set) by
// their recorded inputs and writes the script of the group with the most
// time, numbered n; key names that group (op and recorded inputs).
func (g *gen) script(calls []int32, lift bool, n int) (sc Script, key string) {
	type group struct {
		name  string
		rec   Inputs
		has   bool
		calls []int32
		ns    int64
	}
	groups := map[string]*group{}
	seen := map[int32]bool{}
	for _, c := range calls {
		if lift {
			c = g.lift(c)
		}
		if seen[c] {
			continue
		}
		seen[c] = true
		r, has := g.recorded(c)
		key := g.name(c) + "\x00" + r.Dims + "\x00" + r.Types + "\x00" + r.Strides + "\x00" + r.Concrete
		gr := groups[key]
		if gr == nil {
			gr = &group{name: g.name(c), rec: r, has: has}
			groups[key] = gr
		}
		gr.calls = append(gr.calls, c)
		gr.ns += g.timeNs(c)
	}
	var best *group
	for _, k := range slices.Sorted(maps.Keys(groups)) {
		gr := groups[k]
		if best == nil || gr.ns > best.ns || gr.ns == best.ns && len(gr.calls) > len(best.calls) {
			best, key = gr, k
		}
	}
	all := len(g.byName[g.t.Events.Name[best.calls[0]]])
	sc = Script{Op: best.name, Calls: len(best.calls), AllCalls: all, TimeKind: "host", Device: "cpu"}
	if g.gpu {
		sc.TimeKind, sc.Device = "device", "cuda"
	}
	sc.TraceUs = float64(best.ns) / 1e3 / float64(len(best.calls))
	sc.Inputs = best.rec
	where := fmt.Sprintf("%s: op %s", g.t.Path, pyStr(best.name))
	if !opNameRE.MatchString(best.name) {
		sc.Err = fmt.Errorf("%s: not an op torch.ops can call (namespace::name)", where)
		return sc, key
	}
	if !best.has {
		sc.Err = fmt.Errorf("%s: the trace has no recorded input shapes for it (record them with `bottleneck run --record-shapes` or torch.profiler's record_shapes=True)", where)
		return sc, key
	}
	args, notes, err := pyArgs(best.rec)
	if err != nil {
		sc.Err = fmt.Errorf("%s: %w", where, err)
		return sc, key
	}
	cost, hasCost := g.cost(best.calls[0])
	_, op, _ := strings.Cut(best.name, "::")
	sc.FileName = fmt.Sprintf("%d_%s.py", n, op)
	sc.Source = g.source(sc, args, notes, cost, hasCost)
	return sc, key
}

// cost is call i's FLOPs and minimum bytes by flops.FromShapes: its own
// when the roofline covers it, else the sum over the covered calls inside
// it (aten::conv2d: its aten::convolution).
func (g *gen) cost(i int32) (flops.Cost, bool) {
	if c, ok := g.costOf(i); ok {
		return c, true
	}
	ev := &g.t.Events
	var sum flops.Cost
	found := false
	for j := int32(0); int(j) < len(ev.Kind); j++ {
		if j == i || ev.Kind[j] != trace.KindCPUOp || ev.Track[j] != ev.Track[i] {
			continue
		}
		inside, covered := false, false
		for p := ev.Parent[j]; p != trace.None; p = ev.Parent[p] {
			if p == i {
				inside = true
				break
			}
			if _, ok := g.costOf(p); ok {
				covered = true // counted with its covered ancestor
			}
		}
		if !inside || covered {
			continue
		}
		if c, ok := g.costOf(j); ok {
			sum.Flops += c.Flops
			sum.Bytes += c.Bytes
			found = true
		}
	}
	return sum, found
}

func (g *gen) costOf(i int32) (flops.Cost, bool) {
	r, ok := g.recorded(i)
	if !ok {
		return flops.Cost{}, false
	}
	return flops.FromShapes(g.name(i), flops.ParseShapes(r.Dims, r.Types, r.Concrete))
}
