package breakdown

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/classify"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/interval"
	"github.com/bottleneck-dev/bottleneck/internal/trace"
)

// TensorBoard plugin 0.4.x compatibility (torch_tb_profiler/profiler/
// event_parser.py, overall_parser.py). Its quirks, reproduced here:
//   - event types come from the category alone: cpu_op/operator, python,
//     user_annotation and gpu_user_annotation are "operators";
//     python_function, cuda_driver and cuda_sync events are ignored;
//   - Communication is only the ten names nccl:/gloo: broadcast, reduce,
//     all_reduce, all_gather, reduce_scatter, plus kernels whose External
//     id equals such an op's; other NCCL kernels (SendRecv, all-to-all)
//     count as Kernel;
//   - kernels of every device and stream are unioned;
//   - a ProfilerStep# event on the GPU timeline (gpu_user_annotation) is a
//     step too, and other device-side annotations count as CPU Exec;
//   - step windows move to device time using only cuda_runtime calls lying
//     entirely inside the host step; each step starts at the later of its
//     host start and the previous step's end, the first one after the end
//     of device work launched before it;
//   - trailing steps with no device work, and the last one with device
//     work when it has fewer than 80% of the previous step's device
//     events, are dropped;
//   - without ProfilerStep the step spans the first to the last host
//     operator.

type tbType uint8

const (
	tbNone tbType = iota
	tbOperator
	tbUserAnnotation
	tbPython
	tbRuntime
	tbKernel
	tbMemcpy
	tbMemset
)

func tbTypeOf(cat string) tbType {
	switch strings.ToLower(cat) {
	case "cpu_op", "operator":
		return tbOperator
	case "user_annotation", "gpu_user_annotation":
		return tbUserAnnotation
	case "python":
		return tbPython
	case "runtime", "cuda_runtime", "mtia_runtime", "glow_runtime", "xpu_runtime", "privateuse1_runtime":
		return tbRuntime
	case "kernel":
		return tbKernel
	case "memcpy", "gpu_memcpy":
		return tbMemcpy
	case "memset", "gpu_memset":
		return tbMemset
	}
	return tbNone
}

func computeTB(t *trace.Trace) *Result {
	ev := &t.Events
	n := ev.Len()
	// Event type per category string.
	catType := make(map[trace.StrID]tbType)
	types := make([]tbType, n)
	for i := range n {
		k := ev.Kind[i]
		if k == trace.KindInstant || k == trace.KindMemory || k == trace.KindCounter {
			continue
		}
		c := ev.Cat(i)
		ty, ok := catType[c]
		if !ok {
			ty = tbTypeOf(t.Str(c))
			catType[c] = ty
		}
		types[i] = ty
	}
	cl := classify.For(t)
	isStepName := make(map[trace.StrID]int)
	stepNum := func(id trace.StrID) (int, bool) {
		if v, ok := isStepName[id]; ok {
			return v, v >= 0
		}
		s := t.Str(id)
		v := -1
		if rest, ok := strings.CutPrefix(s, "ProfilerStep#"); ok {
			if num, err := strconv.Atoi(strings.SplitN(rest, "#", 2)[0]); err == nil {
				v = num
			}
		}
		isStepName[id] = v
		return v, v >= 0
	}

	// Communication ops by External id.
	commExt := make(map[int64]bool)
	for i := range n {
		switch types[i] {
		case tbOperator, tbUserAnnotation, tbPython:
			if cl.Has(ev.Name[i], classify.TBComm) {
				commExt[ev.ExternalID.Get(i)] = true
			}
		}
	}

	type stepRec struct {
		num        int
		start, end int64
	}
	// The plugin reads ts and dur as float64 µs and adds them; epoch
	// timestamps lose their ns decimals that way (0.25 µs steps at 1.7e15
	// µs). Replay that: endpoints are the float values, held as fixed
	// point with a power-of-two scale so that every float endpoint is an
	// exact integer.
	fs := newTBClock(t, types)
	var steps []stepRec
	var raw [NumCategories - 1][]interval.Span
	cpuMin, cpuMax := int64(math.MaxInt64), int64(math.MinInt64)
	for i := range n {
		ty := types[i]
		if ty == tbNone {
			continue
		}
		s, e := fs.span(i)
		sp := interval.Span{Start: s, End: e}
		name := ev.Name[i]
		isStep := false
		switch ty {
		case tbKernel:
			if commExt[ev.ExternalID.Get(i)] {
				raw[Communication] = append(raw[Communication], sp)
			} else {
				raw[Kernel] = append(raw[Kernel], sp)
			}
		case tbMemcpy:
			raw[Memcpy] = append(raw[Memcpy], sp)
		case tbMemset:
			raw[Memset] = append(raw[Memset], sp)
		case tbRuntime:
			raw[RuntimeOther] = append(raw[RuntimeOther], sp)
		case tbOperator, tbUserAnnotation, tbPython:
			num, stepOK := 0, false
			if ty != tbPython {
				num, stepOK = stepNum(name)
			}
			switch {
			case ty != tbPython && cl.Has(name, classify.TBDataLoader):
				raw[DataLoader] = append(raw[DataLoader], sp)
			case stepOK:
				steps = append(steps, stepRec{num, s, e})
				isStep = true
			case cl.Has(name, classify.TBComm):
				raw[Communication] = append(raw[Communication], sp)
			default:
				raw[CPUExec] = append(raw[CPUExec], sp)
			}
		}
		if ty == tbPython || ty == tbOperator || isStep {
			cpuMin = min(cpuMin, s)
			cpuMax = max(cpuMax, e)
		}
	}
	synthetic := len(steps) == 0
	if synthetic {
		if cpuMin > cpuMax {
			cpuMin, cpuMax = 0, 0
		}
		steps = append(steps, stepRec{0, cpuMin, cpuMax})
	}
	slices.SortStableFunc(steps, func(a, b stepRec) int { return cmp.Compare(a.start, b.start) })

	// Device steps (StepParser._find_device_steps): runtimes sorted by
	// start, each with the device events correlated to it.
	var rts []int32
	for i := range n {
		if types[i] == tbRuntime {
			rts = append(rts, int32(i))
		}
	}
	slices.SortStableFunc(rts, func(a, b int32) int { return cmp.Compare(ev.Start[a], ev.Start[b]) })
	// rtPos finds a runtime's position in rts: rts is ordered by (start,
	// index) since the sort is stable over index order.
	rtPos := func(r int32) int {
		p, _ := slices.BinarySearchFunc(rts, r, func(a, b int32) int {
			if c := cmp.Compare(ev.Start[a], ev.Start[b]); c != 0 {
				return c
			}
			return cmp.Compare(a, b)
		})
		return p
	}
	type devAgg struct {
		min, max int64
		count    int
	}
	agg := make([]devAgg, len(rts))
	for p := range agg {
		agg[p] = devAgg{math.MaxInt64, math.MinInt64, 0}
	}
	var devs []int32
	for i := range n {
		switch types[i] {
		case tbKernel, tbMemcpy, tbMemset:
		default:
			continue
		}
		devs = append(devs, int32(i))
		l := ev.Launch(i)
		if l == trace.None || types[l] != tbRuntime {
			continue
		}
		a := &agg[rtPos(l)]
		ds, de := fs.span(i)
		a.min = min(a.min, ds)
		a.max = max(a.max, de)
		a.count++
	}
	stepDev := make([]devAgg, len(steps))
	for i := range stepDev {
		stepDev[i] = devAgg{math.MaxInt64, math.MinInt64, 0}
	}
	matchedRT := make([]bool, len(rts))
	anyMatched := false
	is, ir := 0, 0
	for is < len(steps) && ir < len(rts) {
		rs, re := fs.span(int(rts[ir]))
		switch st := steps[is]; {
		case rs < st.start:
			ir++
		case re <= st.end:
			if a := agg[ir]; a.count > 0 {
				d := &stepDev[is]
				d.min = min(d.min, a.min)
				d.max = max(d.max, a.max)
				d.count += a.count
				matchedRT[ir] = true
				anyMatched = true
			}
			ir++
		case rs < st.end:
			ir++
		default:
			is++
		}
	}
	counts := make([]int, len(steps))
	for i, d := range stepDev {
		counts[i] = d.count
	}
	if anyMatched {
		prev := steps[0].start
		if stepDev[0].count > 0 {
			for _, d := range devs {
				l := ev.Launch(int(d))
				if l != trace.None && types[l] == tbRuntime && matchedRT[rtPos(l)] {
					continue
				}
				if _, end := fs.span(int(d)); end < stepDev[0].min {
					prev = max(prev, end)
				}
			}
		}
		for i := range steps {
			start := max(prev, steps[i].start)
			end := steps[i].end
			if stepDev[i].count == 0 {
				end = max(end, start)
			} else {
				end = max(end, stepDev[i].max)
				if end < start {
					end = start
				}
			}
			steps[i].start, steps[i].end = start, end
			prev = end
		}
		if len(steps) > 1 {
			keep := keepSteps(counts)
			if keep < len(steps) && keep > 0 {
				steps = steps[:keep]
			}
		}
	}

	var roles [NumCategories - 1]interval.Set
	for c := range raw {
		roles[c] = interval.Of(raw[c])
	}
	windows := make([]interval.Span, len(steps))
	for i, s := range steps {
		windows[i] = interval.Span{Start: s.start, End: s.end}
	}
	parts := partition(windows, &roles)
	r := &Result{Definition: TBVersion, SyntheticStep: synthetic, AveragedSteps: len(steps)}
	var sum [NumCategories]float64
	var total float64
	for i, s := range steps {
		for c := range parts[i] {
			parts[i][c] = fs.ns(parts[i][c])
		}
		r.Steps = append(r.Steps, Step{Name: strconv.Itoa(s.num), StartUs: fs.ns(float64(s.start)) / 1000,
			EndUs: fs.ns(float64(s.end)) / 1000, Costs: costsOf(&parts[i], fs.ns(float64(s.end-s.start)))})
		for c := range sum {
			sum[c] += parts[i][c]
		}
		total += fs.ns(float64(s.end - s.start))
	}
	if len(steps) > 0 {
		nn := float64(len(steps))
		for c := range sum {
			sum[c] /= nn
		}
		r.Average = costsOf(&sum, total/nn)
	}
	return r
}

// tbClock converts event times to the plugin's float64 µs, as fixed point.
type tbClock struct {
	start, end []int64 // fixed-point endpoints per event (only typed events)
	scale      float64 // fixed units per µs
}

func newTBClock(t *trace.Trace, types []tbType) *tbClock {
	ev := &t.Events
	n := ev.Len()
	startF := make([]float64, n)
	endF := make([]float64, n)
	maxAbs := 1.0
	var buf []byte
	for i := range n {
		if types[i] == tbNone {
			continue
		}
		var s, d float64
		s, buf = nsToFloatMicros(ev.Start[i], buf)
		d, buf = nsToFloatMicros(ev.Dur[i], buf)
		startF[i], endF[i] = s, s+d
		maxAbs = max(maxAbs, math.Abs(s), math.Abs(s+d))
	}
	// Largest power of two keeping 2·maxAbs·scale below 2^62.
	_, exp := math.Frexp(maxAbs) // maxAbs < 2^exp
	k := min(61-exp, 40)
	c := &tbClock{start: make([]int64, n), end: make([]int64, n), scale: math.Ldexp(1, k)}
	for i := range n {
		c.start[i] = int64(math.Round(startF[i] * c.scale))
		c.end[i] = int64(math.Round(endF[i] * c.scale))
	}
	return c
}

func (c *tbClock) span(i int) (int64, int64) { return c.start[i], c.end[i] }

// ns converts a fixed-point length to ns.
func (c *tbClock) ns(v float64) float64 { return v / c.scale * 1000 }

// nsToFloatMicros returns the float64 nearest to ns/1000 µs, as Python's
// float() of the trace's decimal text gives it.
func nsToFloatMicros(ns int64, buf []byte) (float64, []byte) {
	buf = buf[:0]
	if ns < 0 {
		buf = append(buf, '-')
		ns = -ns
	}
	buf = strconv.AppendInt(buf, ns/1000, 10)
	frac := ns % 1000
	buf = append(buf, '.', byte('0'+frac/100), byte('0'+frac/10%10), byte('0'+frac%10))
	f, _ := strconv.ParseFloat(string(buf), 64)
	return f, buf
}

// TBSpan returns an event's [start, end) in ns as the TensorBoard plugin
// sees it: ts and dur read as float64 µs and added, then brought back to
// (rounded) ns. Epoch timestamps lose their ns decimals this way.
func TBSpan(startNs, durNs int64) (int64, int64) {
	s, buf := nsToFloatMicros(startNs, nil)
	d, _ := nsToFloatMicros(durNs, buf)
	return floatMicrosToNs(s), floatMicrosToNs(s + d)
}

func floatMicrosToNs(f float64) int64 {
	whole := math.Floor(f)
	return int64(whole)*1000 + int64(math.Round((f-whole)*1000))
}
