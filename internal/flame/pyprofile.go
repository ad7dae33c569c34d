package flame

import (
	"fmt"
	"strings"

	"github.com/bottleneck-dev/bottleneck/internal/pyprofile"
)

// Group says what roots a Python flame graph has.
type Group int

const (
	// GroupNone merges all threads' stacks.
	GroupNone Group = iota
	// GroupRole puts each thread role (main, pin_memory, other) under its
	// own root frame "role: NAME".
	GroupRole
	// GroupThread puts each thread under its own root frame
	// "thread: NAME (ROLE)".
	GroupThread
)

// PyOptions select the samples of a Python profile.
type PyOptions struct {
	Role   string // "" all threads, else only threads of this role
	Window bool   // only samples taken during the recorded window
	Group  Group
	// ByFunction names frames by function (first line) instead of by the
	// line executing, so the lines of one function merge.
	ByFunction bool
}

// PyFrameName is how a Python frame is named in flame graphs:
// "func (file:line)", as py-spy does, with the file shortened to the part
// after site-packages/ or the standard library's directory.
func PyFrameName(f pyprofile.Frame, byFunction bool) string {
	line := f.Line
	if byFunction && f.FLine > 0 {
		line = f.FLine
	}
	return fmt.Sprintf("%s (%s:%d)", f.Func, ShortFile(f.File), line)
}

// ShortFile drops the installation prefix of a library file
// (".../site-packages/torch/nn/x.py" -> "torch/nn/x.py"); user files are
// kept as they are.
func ShortFile(file string) string {
	if rel, ok := pyprofile.InstalledPath(file); ok {
		return rel
	}
	f := strings.ReplaceAll(file, "\\", "/")
	if i := strings.Index(f, "/lib/python"); i >= 0 {
		rest := f[i+len("/lib/python"):]
		if j := strings.IndexByte(rest, '/'); j > 0 && strings.Trim(rest[:j], "0123456789.t") == "" {
			return rest[j+1:]
		}
	}
	return file
}

// FromPyProfile builds the flame graph of a Python profile. For the
// sampler the unit is samples (PeriodNs is the sampling interval); for a
// cProfile profile, which has no stacks, each function is one root-level
// frame weighted by its own time in nanoseconds.
func FromPyProfile(p *pyprofile.Profile, o PyOptions) *Tree {
	if p.Profiler == "cprofile" {
		t := New(UnitNanoseconds, 1)
		for _, fn := range p.Functions {
			t.Add([]string{PyFrameName(p.Frames[fn.Frame], true)}, int64(fn.TotTimeS*1e9))
		}
		return t
	}
	period := p.IntervalS
	if o.Window && p.WindowIntervalS > 0 {
		period = p.WindowIntervalS // the sampler samples the window faster
	}
	t := New(UnitSamples, int64(period*1e9))
	names := make([]string, len(p.Frames))
	for i, f := range p.Frames {
		names[i] = PyFrameName(f, o.ByFunction)
	}
	var stack []string
	for _, s := range p.Stacks {
		th := p.Threads[s.Thread]
		if o.Role != "" && th.Role != o.Role {
			continue
		}
		c := s.Count
		if o.Window {
			c = s.WindowCount
		}
		if c <= 0 {
			continue
		}
		stack = stack[:0]
		switch o.Group {
		case GroupRole:
			stack = append(stack, "role: "+th.Role)
		case GroupThread:
			name := th.Name
			if name == "" {
				name = fmt.Sprint(th.ID)
			}
			stack = append(stack, fmt.Sprintf("thread: %s (%s)", name, th.Role))
		}
		for _, f := range s.Frames {
			stack = append(stack, names[f])
		}
		t.Add(stack, int64(c))
	}
	return t
}
