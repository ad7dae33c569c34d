package runevidence

import (
	"github.com/bottleneck-dev/bottleneck/internal/pyprofile"
	"github.com/bottleneck-dev/bottleneck/internal/stats"
)

// programStack is one stack's program frames (library files left out),
// outermost first, and its samples.
type programStack struct {
	frames []pyprofile.Frame
	n      int
}

// programFrames are st's frames in the program's own files, outermost
// first.
func programFrames(p *pyprofile.Profile, st *pyprofile.Stack) []pyprofile.Frame {
	var out []pyprofile.Frame
	for _, fi := range st.Frames {
		if f := p.Frames[fi]; !pyprofile.IsLibraryFile(f.File) {
			out = append(out, f)
		}
	}
	return out
}

// ownFuncShare is the share of the program's own tensor code's samples a
// function must hold, its callees included, to be named as where that
// code runs.
const ownFuncShare = 0.5

// ownFunc is the program function the program's own tensor code runs in:
// going from the outermost program frame inwards, the deepest function
// whose calls hold at least ownFuncShare of those samples, with their
// callees. Its Line is the function's first line and Pct its share of
// hotN, the busy samples; caller is the program line that called it in
// most of them (nil at the outermost frame). nil when that is the module
// level (the loop is written there, and its lines say where) or when one
// line of it holds them all (that line says it). A per-sentence CRF loss
// spread its samples over _forward_alg's loop lines and the log_sum_exp
// and argmax helpers it calls, 3-5% each: the function holding them, or
// the helper and the loop's line calling it, is where to vectorise.
func ownFunc(stacks []programStack, hotN int) (fn, caller *Line) {
	type function struct {
		file, name string
		first      int
	}
	of := func(f pyprofile.Frame) function { return function{f.File, f.Func, f.FLine} }
	n := 0
	for _, s := range stacks {
		n += s.n
	}
	var best *function
	bestN, bestDepth := 0, 0
	lines := map[int]bool{}
	for depth := 0; n > 0; depth++ {
		at := map[function]int{}
		for _, s := range stacks {
			if depth < len(s.frames) {
				at[of(s.frames[depth])] += s.n
			}
		}
		var top function
		topN := 0
		for f, c := range at {
			if c > topN || c == topN && (f.file < top.file || f.file == top.file && f.first < top.first) {
				top, topN = f, c
			}
		}
		if float64(topN) < ownFuncShare*float64(n) {
			break
		}
		best, bestN, bestDepth = &top, topN, depth
		clear(lines)
		var next []programStack
		for _, s := range stacks {
			if depth < len(s.frames) {
				if f := s.frames[depth]; of(f) == top {
					lines[f.Line] = true
					next = append(next, s)
				}
			}
		}
		stacks = next
	}
	if best == nil || best.name == "<module>" || len(lines) < 2 {
		return nil, nil
	}
	fn = &Line{File: best.file, Line: best.first, Func: best.name, Pct: stats.Round1(100 * float64(bestN) / float64(max(hotN, 1)))}
	if bestDepth == 0 {
		return fn, nil
	}
	calls := map[lineKey]int{}
	names := map[lineKey]string{}
	for _, s := range stacks {
		f := s.frames[bestDepth-1]
		k := lineKey{f.File, f.Line}
		calls[k] += s.n
		names[k] = f.Func
	}
	var top lineKey
	for k, c := range calls {
		if c > calls[top] || c == calls[top] && (k.file < top.file || k.file == top.file && k.line < top.line) {
			top = k
		}
	}
	return fn, &Line{File: top.file, Line: top.line, Func: names[top], Pct: stats.Round1(100 * float64(calls[top]) / float64(max(hotN, 1)))}
}
