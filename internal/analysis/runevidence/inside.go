package runevidence

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/bottleneck-dev/bottleneck/internal/pyprofile"
	"github.com/bottleneck-dev/bottleneck/internal/stats"
)

// LibraryCall is where a program's line that calls into an installed
// package spends its samples: the deepest of the package's functions
// that holds most of them, and the functions that one calls. A program
// that is one call into a framework (stable-baselines3's model.learn())
// has every sample at that line; its time is in the framework's loop.
type LibraryCall struct {
	// Package is the installed package's top-level name.
	Package string `json:"package"`
	Func    string `json:"func"`
	File    string `json:"file"`
	// Via are the package's functions on the way to it, outermost first.
	Via []string `json:"via,omitempty"`
	// Pct is the function's share of the line's samples.
	Pct float64 `json:"pct"`
	// Module: the function is a torch module's, called as the module
	// (its forward).
	Module bool `json:"module,omitempty"`
	// Calls are the functions it calls that hold at least calleeMinShare
	// of the line's samples, most first; "(own code)" is its own lines.
	Calls []Callee `json:"calls,omitempty"`
}

// Callee is a function a LibraryCall calls, with its share of the line's
// samples.
type Callee struct {
	Func string  `json:"func"`
	File string  `json:"file,omitempty"`
	Pct  float64 `json:"pct"`
}

const (
	// insideMinShare: a package's function is where the line's time goes
	// when it holds at least this share of the line's samples.
	insideMinShare = 2.0 / 3
	// calleeMinShare: a callee is named from this share of the line's
	// samples.
	calleeMinShare = 0.1
	ownCode        = "(own code)"
)

// String says it as a location's note, with the function it was called
// from: "in stable_baselines3: OnPolicyAlgorithm.collect_rollouts >
// ActorCriticPolicy.forward (76%): MlpExtractor.forward 26%, ...".
func (c *LibraryCall) String() string {
	name := c.Func
	if len(c.Via) > 0 {
		name = c.Via[len(c.Via)-1] + " > " + name
	}
	s := fmt.Sprintf("in %s: %s (%.0f%%)", c.Package, name, c.Pct)
	var calls []string
	for _, e := range c.Calls {
		calls = append(calls, fmt.Sprintf("%s %.0f%%", e.Func, e.Pct))
	}
	if len(calls) > 0 {
		s += ": " + strings.Join(calls, ", ")
	}
	return s
}

// lineStack is a sample stack whose innermost program frame, at index
// at of its frames, is a line's.
type lineStack struct {
	st *pyprofile.Stack
	at int
}

// insideOf finds where the stacks under a line spend count's samples
// below it (nil: mostly in the line itself, in torch, or spread over
// several functions). It follows the frames below the line, function
// by function, while one installed package's function other than
// torch's holds insideMinShare of them; call wrappers are looked
// through, so a module's forward is named.
func insideOf(p *pyprofile.Profile, stacks []lineStack, count func(*pyprofile.Stack) int) *LibraryCall {
	type fn struct{ file, name string }
	pos := make([]int, len(stacks))
	total := 0
	for i, s := range stacks {
		pos[i] = s.at + 1
		total += count(s.st)
	}
	if total == 0 {
		return nil
	}
	// frame is stack i's next frame past call wrappers (ok: false at its
	// end).
	frame := func(i int) (pyprofile.Frame, bool) {
		fr := stacks[i].st.Frames
		for pos[i] < len(fr) && isCallWrapper(p.Frames[fr[pos[i]]]) {
			pos[i]++
		}
		if pos[i] >= len(fr) {
			return pyprofile.Frame{}, false
		}
		return p.Frames[fr[pos[i]]], true
	}
	active := make([]int, len(stacks))
	for i := range active {
		active[i] = i
	}
	var at *fn
	var via []string
	held, module := 0, false
	for {
		by := map[fn]int{}
		for _, i := range active {
			if f, ok := frame(i); ok {
				by[fn{f.File, f.Func}] += count(stacks[i].st)
			}
		}
		var best fn
		n := 0
		for f, c := range by {
			if c > n || c == n && (f.file < best.file || f.file == best.file && f.name < best.name) {
				best, n = f, c
			}
		}
		if float64(n) < insideMinShare*float64(total) || packageOf(best.file) == "" || matchAny(best.file, []string{"/torch/"}) {
			break
		}
		if at != nil {
			via = append(via, at.name)
		}
		at, held = &best, n
		active = slices.DeleteFunc(active, func(i int) bool {
			f, ok := frame(i)
			return !ok || (fn{f.File, f.Func}) != best
		})
		module = calledAsModule(p, stacks[active[0]].st.Frames[:pos[active[0]]])
		for _, i := range active {
			pos[i]++
		}
	}
	if at == nil {
		return nil
	}
	callees := map[fn]int{}
	for _, i := range active {
		f, ok := frame(i)
		if !ok {
			f = pyprofile.Frame{Func: ownCode}
		}
		callees[fn{f.File, f.Func}] += count(stacks[i].st)
	}
	c := &LibraryCall{Package: packageOf(at.file), Func: at.name, File: at.file, Via: via, Module: module, Pct: stats.Round1(100 * float64(held) / float64(total))}
	for f, n := range callees {
		if float64(n) >= calleeMinShare*float64(total) {
			c.Calls = append(c.Calls, Callee{Func: f.name, File: f.file, Pct: stats.Round1(100 * float64(n) / float64(total))})
		}
	}
	slices.SortFunc(c.Calls, func(a, b Callee) int { return cmp.Or(cmp.Compare(b.Pct, a.Pct), cmp.Compare(a.Func, b.Func)) })
	c.Calls = c.Calls[:min(3, len(c.Calls))]
	if len(c.Calls) == 1 && c.Calls[0].Func == ownCode {
		c.Calls = nil // the function's own lines: its Pct says it
	}
	return c
}

// callWrappers are the files of frames between a call and the function
// it reaches: torch.nn.Module's __call__ machinery, torch.no_grad() as a
// decorator, functools' and contextlib's wrappers.
var callWrappers = []string{moduleCall, "/torch/utils/_contextlib.py", "/functools.py", "/contextlib.py"}

// calledAsModule: the call wrappers at the end of frames, before the
// function they reach, include torch.nn.Module's __call__.
func calledAsModule(p *pyprofile.Profile, frames []int) bool {
	for i := len(frames) - 1; i >= 0 && isCallWrapper(p.Frames[frames[i]]); i-- {
		if matchAny(p.Frames[frames[i]].File, []string{moduleCall}) {
			return true
		}
	}
	return false
}

// isCallWrapper: a frame between a call and the function it reaches, in
// a wrapper's file or a function defined inside another, as a
// decorator's wrapper is (transformers wraps its models' forwards in
// deprecate_kwarg.<locals>.wrapper.<locals>.wrapped_func).
func isCallWrapper(fr pyprofile.Frame) bool {
	return strings.Contains(fr.Func, "<locals>") || matchAny(fr.File, callWrappers)
}

// packageOf is the top-level name of the installed package file is in
// ("": none, torch.compile's generated code included).
func packageOf(file string) string {
	rel, ok := pyprofile.InstalledPath(file)
	if !ok {
		return ""
	}
	top, _, _ := strings.Cut(rel, "/")
	return strings.TrimSuffix(top, ".py")
}
