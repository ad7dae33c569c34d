package export

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strconv"

	"github.com/bottleneck-dev/bottleneck/internal/flame"
	"github.com/bottleneck-dev/bottleneck/internal/pyprofile"
	"github.com/bottleneck-dev/bottleneck/internal/trace"
)

// speedscope: one JSON file (https://www.speedscope.app/file-format-schema.json)
// with several profiles sharing one frame table:
//   - "host time" (sampled): op call stacks weighted by self time;
//   - "device time" (sampled): op stacks weighted by launched device time;
//   - "thread N" (evented), one per host thread: the op stacks in time
//     order (skipped when the trace has more than MaxEvents stack events);
//   - "python: ROLE" (sampled), one per thread role of the Python profile.
//
// Weights are nanoseconds. With --stacks python only the Python profiles
// are written; with ops or device that profile comes first.

// SpeedscopeSchema is the value of the file's $schema key.
const SpeedscopeSchema = "https://www.speedscope.app/file-format-schema.json"

// SpeedscopeFile is the speedscope file format.
type SpeedscopeFile struct {
	Schema             string              `json:"$schema"`
	Version            string              `json:"version"`
	Shared             SpeedscopeShared    `json:"shared"`
	Profiles           []SpeedscopeProfile `json:"profiles"`
	Name               string              `json:"name,omitempty"`
	ActiveProfileIndex int                 `json:"activeProfileIndex"`
	Exporter           string              `json:"exporter,omitempty"`
}

// SpeedscopeShared holds the frame table.
type SpeedscopeShared struct {
	Frames []SpeedscopeFrame `json:"frames"`
}

// SpeedscopeFrame is one frame.
type SpeedscopeFrame struct {
	Name string `json:"name"`
	File string `json:"file,omitempty"`
	Line int    `json:"line,omitempty"`
}

// SpeedscopeProfile is a sampled or an evented profile.
type SpeedscopeProfile struct {
	Type       string            `json:"type"` // "sampled" or "evented"
	Name       string            `json:"name"`
	Unit       string            `json:"unit"`
	StartValue int64             `json:"startValue"`
	EndValue   int64             `json:"endValue"`
	Samples    [][]int           `json:"samples,omitempty"`
	Weights    []int64           `json:"weights,omitempty"`
	Events     []SpeedscopeEvent `json:"events,omitempty"`
}

// SpeedscopeEvent opens ("O") or closes ("C") a frame.
type SpeedscopeEvent struct {
	Type  string `json:"type"`
	Frame int    `json:"frame"`
	At    int64  `json:"at"`
}

type ssFrames struct {
	frames []SpeedscopeFrame
	index  map[SpeedscopeFrame]int
}

func (f *ssFrames) id(fr SpeedscopeFrame) int {
	if i, ok := f.index[fr]; ok {
		return i
	}
	i := len(f.frames)
	f.frames = append(f.frames, fr)
	f.index[fr] = i
	return i
}

// traceFrame names a trace stack frame, with file and line for Python
// frames ("file.py(12): func").
func (f *ssFrames) traceFrame(name string) int {
	if m := pyFrameRE.FindStringSubmatch(name); m != nil {
		line, _ := strconv.Atoi(m[2])
		return f.id(SpeedscopeFrame{Name: name, File: m[1], Line: line})
	}
	return f.id(SpeedscopeFrame{Name: name})
}

func sampledFromTree(f *ssFrames, t *flame.Tree, name string) SpeedscopeProfile {
	p := SpeedscopeProfile{Type: "sampled", Name: name, Unit: "nanoseconds", Samples: [][]int{}, Weights: []int64{}}
	t.Walk(func(stack []string, self int64) {
		s := make([]int, len(stack))
		for i, n := range stack {
			s[i] = f.traceFrame(n)
		}
		p.Samples = append(p.Samples, s)
		p.Weights = append(p.Weights, self*t.PeriodNs)
	})
	p.EndValue = t.Total() * t.PeriodNs
	return p
}

func writeSpeedscope(w io.Writer, in *Input, o *Options) error {
	src, err := stacksSource(in, o)
	if err != nil {
		return err
	}
	f := &ssFrames{index: map[SpeedscopeFrame]int{}}
	file := SpeedscopeFile{Schema: SpeedscopeSchema, Version: "0.0.1", Exporter: "bottleneck"}
	if src != StacksPython {
		t, _, err := pickTrace(in, o)
		if err != nil {
			return err
		}
		file.Name = filepath.Base(t.Path)
		host := sampledFromTree(f, flame.FromTrace(t, flame.TraceOptions{}), "host time (op self time)")
		dev := sampledFromTree(f, flame.FromTrace(t, flame.TraceOptions{Weight: flame.DeviceTime}), "device time (launched by op)")
		if src == StacksDevice {
			file.Profiles = append(file.Profiles, dev, host)
		} else {
			file.Profiles = append(file.Profiles, host, dev)
		}
		file.Profiles = append(file.Profiles, eventedThreads(f, t, o)...)
	}
	if in.Python != nil {
		if file.Name == "" && in.PythonPath != "" {
			file.Name = filepath.Base(in.PythonPath)
		}
		roles := in.Python.Roles()
		if o.Role != "" {
			roles = []string{o.Role}
		}
		for _, role := range roles {
			file.Profiles = append(file.Profiles, pythonSampled(f, in.Python, role))
		}
	}
	file.Shared.Frames = f.frames
	if file.Shared.Frames == nil {
		file.Shared.Frames = []SpeedscopeFrame{}
	}
	enc := json.NewEncoder(w)
	return enc.Encode(&file)
}

func pythonSampled(f *ssFrames, py *pyprofile.Profile, role string) SpeedscopeProfile {
	p := SpeedscopeProfile{Type: "sampled", Name: "python: " + role, Unit: "nanoseconds", Samples: [][]int{}, Weights: []int64{}}
	ids := make([]int, len(py.Frames))
	for i, fr := range py.Frames {
		ids[i] = f.id(SpeedscopeFrame{Name: fr.Func, File: fr.File, Line: fr.Line})
	}
	if py.Profiler == "cprofile" {
		for _, fn := range py.Functions {
			p.Samples = append(p.Samples, []int{ids[fn.Frame]})
			w := int64(fn.TotTimeS * 1e9)
			p.Weights = append(p.Weights, w)
			p.EndValue += w
		}
		return p
	}
	period := int64(py.IntervalS * 1e9)
	for _, s := range py.Stacks {
		if py.Threads[s.Thread].Role != role || s.Count <= 0 {
			continue
		}
		st := make([]int, len(s.Frames))
		for i, fi := range s.Frames {
			st[i] = ids[fi]
		}
		p.Samples = append(p.Samples, st)
		p.Weights = append(p.Weights, int64(s.Count)*period)
		p.EndValue += int64(s.Count) * period
	}
	return p
}

// eventedThreads writes each host thread's op stacks in time order.
func eventedThreads(f *ssFrames, t *trace.Trace, o *Options) []SpeedscopeProfile {
	budget := o.MaxEvents
	if budget <= 0 {
		budget = DefaultMaxEvents
	}
	ev := &t.Events
	n := 0
	for i, k := range ev.Kind {
		if isStackKind(k) && ev.Dur[i] > 0 {
			n++
		}
	}
	if n > budget {
		o.note("speedscope: %d op events exceed the budget of %d: no per-thread timelines (only the sampled profiles)", n, budget)
		return nil
	}
	agent := flame.AgentFrames(t)
	var out []SpeedscopeProfile
	for ti := range t.Tracks {
		tr := &t.Tracks[ti]
		if tr.IsDevice() {
			continue
		}
		type open struct {
			e     int32
			frame int
		}
		var stack []open
		var last int64
		var p SpeedscopeProfile
		closeTop := func() {
			top := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			last = max(last, ev.End(int(top.e)))
			p.Events = append(p.Events, SpeedscopeEvent{Type: "C", Frame: top.frame, At: last})
		}
		for _, e := range tr.Events {
			if !isStackKind(ev.Kind[e]) || ev.Dur[e] <= 0 || agent[e] != flame.Program {
				continue
			}
			if len(p.Events) == 0 {
				p.StartValue = ev.Start[e]
			}
			parent := stackParent(t, e)
			if parent != trace.None && agent[parent] != flame.Program {
				parent = trace.None // under the agent's entry: the program's frames start the stack
			}
			for len(stack) > 0 && stack[len(stack)-1].e != parent {
				closeTop()
			}
			last = max(last, ev.Start[e])
			fr := f.traceFrame(t.Name(int(e)))
			p.Events = append(p.Events, SpeedscopeEvent{Type: "O", Frame: fr, At: last})
			stack = append(stack, open{e, fr})
		}
		for len(stack) > 0 {
			closeTop()
		}
		if len(p.Events) == 0 {
			continue
		}
		name := fmt.Sprintf("thread %d", tr.Tid)
		if tr.TidLabel != "" {
			name = "thread " + tr.TidLabel
		}
		if tr.ThreadName != "" {
			name += " (" + tr.ThreadName + ")"
		}
		p.Type, p.Name, p.Unit, p.EndValue = "evented", name, "nanoseconds", last
		out = append(out, p)
	}
	return out
}

// isStackKind and stackParent mirror the flame package's notion of a
// stack frame (host slices that nest).
func isStackKind(k trace.Kind) bool {
	switch k {
	case trace.KindCPUOp, trace.KindUserAnnotation, trace.KindPythonFunction,
		trace.KindRuntime, trace.KindDriver, trace.KindOther:
		return true
	}
	return false
}

func stackParent(t *trace.Trace, e int32) int32 { return flame.FrameParent(t, e) }
