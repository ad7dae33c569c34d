package export

import (
	"io"
	"regexp"
	"strconv"

	"github.com/google/pprof/profile"

	"github.com/bottleneck-dev/bottleneck/internal/flame"
	"github.com/bottleneck-dev/bottleneck/internal/pyprofile"
	"github.com/bottleneck-dev/bottleneck/internal/textsafe"
)

// pprof: a gzipped profile.proto.
//
// Op stacks ("ops" or "device"): two sample types, host_time and
// device_time (nanoseconds), one sample per distinct stack; host samples
// are op self times on their thread, device samples the kernel/memcpy/
// memset time each op launched (the device event is the leaf frame).
// python_function and "Call stack" frames ("file.py(12): func") become
// functions with a file and line. Python profile: sample types samples
// (count) and wall (nanoseconds), one location per frame with its file and
// line, labels thread and role.

var pyFrameRE = regexp.MustCompile(`^(.+)\((\d+)\): (.+)$`)

type pprofBuilder struct {
	p     *profile.Profile
	locs  map[string]*profile.Location
	funcs map[[3]string]*profile.Function
}

func newPprofBuilder(p *profile.Profile) *pprofBuilder {
	return &pprofBuilder{p: p, locs: map[string]*profile.Location{}, funcs: map[[3]string]*profile.Function{}}
}

func (b *pprofBuilder) function(name, file string, start int64) *profile.Function {
	k := [3]string{name, file, strconv.FormatInt(start, 10)}
	f := b.funcs[k]
	if f == nil {
		f = &profile.Function{ID: uint64(len(b.p.Function) + 1), Name: name, SystemName: name, Filename: file, StartLine: start}
		b.p.Function = append(b.p.Function, f)
		b.funcs[k] = f
	}
	return f
}

func (b *pprofBuilder) location(key string, fn *profile.Function, line int64) *profile.Location {
	l := b.locs[key]
	if l == nil {
		l = &profile.Location{ID: uint64(len(b.p.Location) + 1), Line: []profile.Line{{Function: fn, Line: line}}}
		b.p.Location = append(b.p.Location, l)
		b.locs[key] = l
	}
	return l
}

// frameLocation turns a trace frame name into a location.
func (b *pprofBuilder) frameLocation(name string) *profile.Location {
	if l := b.locs[name]; l != nil {
		return l
	}
	if m := pyFrameRE.FindStringSubmatch(name); m != nil {
		line, _ := strconv.ParseInt(m[2], 10, 64)
		return b.location(name, b.function(m[3], m[1], 0), line)
	}
	return b.location(name, b.function(name, "", 0), 0)
}

func writePprof(w io.Writer, in *Input, o *Options) error {
	src, err := stacksSource(in, o)
	if err != nil {
		return err
	}
	var p *profile.Profile
	if src == StacksPython {
		p = pythonPprof(in.Python, o.Role)
	} else {
		t, _, err := pickTrace(in, o)
		if err != nil {
			return err
		}
		p = &profile.Profile{
			SampleType: []*profile.ValueType{{Type: "host_time", Unit: "nanoseconds"}, {Type: "device_time", Unit: "nanoseconds"}},
			PeriodType: &profile.ValueType{Type: "time", Unit: "nanoseconds"},
			Period:     1,
			// Default to the sample type the user asked for.
			DefaultSampleType: map[bool]string{true: "device_time", false: "host_time"}[src == StacksDevice],
			Comments:          []string{"bottleneck export of " + t.Path},
		}
		start, end := t.Span()
		p.DurationNanos = end - start
		if t.Meta.BaseTimeNs > 0 {
			p.TimeNanos = t.Meta.BaseTimeNs + start
		}
		b := newPprofBuilder(p)
		for col, weight := range []flame.Weight{flame.HostTime, flame.DeviceTime} {
			tr := flame.FromTrace(t, flame.TraceOptions{Weight: weight})
			tr.Walk(func(stack []string, self int64) {
				s := &profile.Sample{Value: make([]int64, 2)}
				s.Value[col] = self
				for i := len(stack) - 1; i >= 0; i-- { // leaf first
					s.Location = append(s.Location, b.frameLocation(stack[i]))
				}
				p.Sample = append(p.Sample, s)
			})
		}
	}
	if err := p.CheckValid(); err != nil {
		return err
	}
	cleanStrings(p)
	return p.Write(w)
}

func pythonPprof(py *pyprofile.Profile, role string) *profile.Profile {
	period := int64(py.IntervalS * 1e9)
	p := &profile.Profile{
		SampleType:    []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "wall", Unit: "nanoseconds"}},
		PeriodType:    &profile.ValueType{Type: "wall", Unit: "nanoseconds"},
		Period:        period,
		DurationNanos: int64(py.DurationS * 1e9),
		TimeNanos:     int64(py.StartUnix * 1e9),
		Comments:      []string{"bottleneck export of a Python " + py.Profiler + " profile"},
	}
	b := newPprofBuilder(p)
	loc := func(fi int, byFunction bool) *profile.Location {
		f := py.Frames[fi]
		line := int64(f.Line)
		if byFunction {
			line = int64(f.FLine)
		}
		fn := b.function(f.Func, f.File, int64(f.FLine))
		return b.location(f.File+"\x00"+f.Func+"\x00"+strconv.FormatInt(int64(f.FLine), 10)+"\x00"+strconv.FormatInt(line, 10), fn, line)
	}
	if py.Profiler == "cprofile" {
		// No stacks: one sample per function, its own time.
		p.SampleType = []*profile.ValueType{{Type: "calls", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}}
		p.PeriodType = &profile.ValueType{Type: "cpu", Unit: "nanoseconds"}
		p.Period = 1
		for _, fn := range py.Functions {
			p.Sample = append(p.Sample, &profile.Sample{
				Value:    []int64{fn.NCalls, int64(fn.TotTimeS * 1e9)},
				Location: []*profile.Location{loc(fn.Frame, true)},
			})
		}
		return p
	}
	for _, s := range py.Stacks {
		th := py.Threads[s.Thread]
		if (role != "" && th.Role != role) || s.Count <= 0 {
			continue
		}
		sm := &profile.Sample{
			Value: []int64{int64(s.Count), int64(s.Count) * period},
			Label: map[string][]string{"thread": {th.Name}, "role": {th.Role}},
		}
		for i := len(s.Frames) - 1; i >= 0; i-- {
			sm.Location = append(sm.Location, loc(s.Frames[i], false))
		}
		p.Sample = append(p.Sample, sm)
	}
	return p
}

// cleanStrings makes every name in p printable valid UTF-8
// (textsafe.Text): pprof prints them on terminals as they are.
func cleanStrings(p *profile.Profile) {
	for _, f := range p.Function {
		f.Name, f.SystemName, f.Filename = textsafe.Text(f.Name), textsafe.Text(f.SystemName), textsafe.Text(f.Filename)
	}
	for _, s := range p.Sample {
		for k, vs := range s.Label {
			for i, v := range vs {
				vs[i] = textsafe.Text(v)
			}
			if c := textsafe.Text(k); c != k {
				delete(s.Label, k)
				s.Label[c] = vs
			}
		}
	}
	for i, c := range p.Comments {
		p.Comments[i] = textsafe.Text(c)
	}
}
