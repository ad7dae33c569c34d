package runevidence

import (
	"cmp"
	"slices"
	"strings"

	"github.com/bottleneck-dev/bottleneck/internal/pyprofile"
	"github.com/bottleneck-dev/bottleneck/internal/stats"
)

// offStepLibs are path fragments of metric libraries.
var offStepLibs = []string{"/torchmetrics/", "/sklearn/metrics/", "/torcheval/metrics/", "/evaluate/"}

// tensorFormatting is torch's tensor printing: print(tensor), f"{tensor}".
const tensorFormatting = "/torch/_tensor_str.py"

// moduleCall marks a frame of nn.Module.__call__: a forward pass.
const moduleCall = "/torch/nn/modules/module.py"

// noGradDecorator is the frame torch.no_grad()/inference_mode() add as
// decorators.
const noGradDecorator = "/torch/utils/_contextlib.py"

// OffStepLine is a user line that runs work that does not belong in the
// step, with its share of the main thread's samples.
type OffStepLine struct {
	Line
	Kind string `json:"kind"`
}

// offStep classifies the main thread's samples over the whole run (an
// evaluation every N steps then weighs 1/N, as it costs the run) and
// returns the share in work that does not belong in the step, its lines,
// largest first, and the share within the recorded window alone (-1
// without one): work in every step fills both, work every N steps at
// most one.
func offStep(p *pyprofile.Profile, src sourceCache, trains bool) (float64, []OffStepLine, float64) {
	type key struct {
		file string
		line int
		kind string
	}
	// a program that never trains (inference) runs every forward under
	// no_grad: those forwards are its steps
	trains = trains || training(p)
	var total, off, winTotal, winOff int
	lines := map[key]int{}
	funcs := map[key]string{}
	for _, st := range p.Stacks {
		if p.Threads[st.Thread].Role != "main" || len(st.Frames) == 0 || st.Count == 0 || p.Importing(st.Frames) {
			continue
		}
		total += st.Count
		winTotal += st.WindowCount
		if slices.ContainsFunc(st.Frames, func(fi int) bool { return matchAny(p.Frames[fi].File, ioFiles) }) {
			continue // file I/O (a checkpoint, tensorboard): io.in-step's
		}
		kind, at, inModel := "", -1, false
		for i, fi := range st.Frames {
			f := p.Frames[fi].File
			switch {
			case matchAny(f, offStepLibs):
				kind, at = OffStepMetrics, i
			case strings.HasSuffix(strings.ReplaceAll(f, "\\", "/"), tensorFormatting):
				kind, at = OffStepPrint, i
			case trains && !inModel && matchAny(f, []string{moduleCall}):
				// the outermost forward only: no_grad inside a model's own
				// forward (an EMA target) is the model's business. The call
				// in the loop is the one that entered the no_grad function
				// (decorator), else the line in the with block
				inModel = true
				if d, ok := underNoGrad(p, st.Frames[:i], src); ok {
					kind, at = OffStepEval, d
				}
			}
			if kind != "" {
				break
			}
		}
		if kind == "" {
			continue
		}
		// the user line that called into it
		k, ui := key{}, -1
		for i := at - 1; i >= 0; i-- {
			fr := p.Frames[st.Frames[i]]
			if !pyprofile.IsLibraryFile(fr.File) {
				k, ui = key{fr.File, fr.Line, kind}, i
				break
			}
		}
		if k.file == "" {
			continue
		}
		if kind == OffStepEval && src.feedsStep(p, st.Frames[:ui+1]) {
			continue // a frozen teacher or encoder: the loss needs it
		}
		funcs[k] = p.Frames[st.Frames[ui]].Func
		off += st.Count
		winOff += st.WindowCount
		lines[k] += st.Count
	}
	if total == 0 || off == 0 {
		return 0, nil, 0
	}
	// The window tells work in every step from work every N steps; with
	// too few samples in it (fast steps), or too few in the work itself
	// (an evaluation every 50 steps, caught by about 2 of a window's ~26
	// samples on a loaded CI machine, read as 6% of every step), it
	// cannot, and the rule stays silent rather than judge on the whole
	// run. -1: no window recorded.
	const minWindowSamples = 5
	win := -1.0
	switch {
	case winTotal >= minWindowSamples && winOff >= minWindowSamples:
		win = float64(winOff) / float64(winTotal)
	case len(p.Windows) > 0 || winTotal > 0:
		win = 0
	}
	var out []OffStepLine
	for k, c := range lines {
		out = append(out, OffStepLine{Line{File: k.file, Line: k.line, Func: funcs[k], Pct: stats.Round1(100 * float64(c) / float64(total))}, k.kind})
	}
	slices.SortFunc(out, func(a, b OffStepLine) int {
		return cmp.Or(cmp.Compare(b.Pct, a.Pct), cmp.Compare(a.File, b.File), cmp.Compare(a.Line.Line, b.Line.Line))
	})
	return float64(off) / float64(total), out[:min(len(out), 5)], win
}

// OffStepKind names what such work is.
const (
	OffStepEval    = "evaluation forward pass (torch.no_grad / inference_mode)"
	OffStepMetrics = "metric computation"
	OffStepPrint   = "tensor formatted for logging (print/str of a tensor)"
)

// training reports whether the main thread ran a backward pass or an
// optimizer step.
func training(p *pyprofile.Profile) bool {
	for _, st := range p.Stacks {
		if p.Threads[st.Thread].Role != "main" {
			continue
		}
		for _, fi := range st.Frames {
			if matchAny(p.Frames[fi].File, trainFiles) {
				return true
			}
		}
	}
	return false
}

// underNoGrad reports whether the frames that lead to a forward pass
// (outermost first) turned gradients off, and where: the outermost
// no_grad decorator's frame, or the index just past a user line inside a
// `with torch.no_grad()` block (the callers of that index are searched
// for the user line).
//
// The innermost grad mode wins: Lightning steps the optimizer with a
// closure decorated with torch.enable_grad() (inside its loops), and its
// training forward was taken for an evaluation pass. torch 2.x names the
// decorator's frame after its context manager (no_grad, enable_grad,
// inference_mode); older versions call every one decorate_context, which
// counts as no_grad, as set_grad_enabled does not.
func underNoGrad(p *pyprofile.Profile, outer []int, src sourceCache) (int, bool) {
	at := -1
	for i, fi := range outer {
		fr := p.Frames[fi]
		switch {
		case matchAny(fr.File, []string{noGradDecorator}):
			switch fr.Func {
			case "enable_grad":
				at = -1
			case "set_grad_enabled": // either way
			default:
				if at < 0 {
					at = i
				}
			}
		case !pyprofile.IsLibraryFile(fr.File) && src.inNoGradBlock(fr.File, fr.Line):
			if at < 0 {
				at = i + 1
			}
		}
	}
	return max(at, 0), at >= 0
}

// trainFiles mark a backward pass or an optimizer step.
// (Tensor.backward runs the engine under torch.autograd.backward).
var trainFiles = []string{"/torch/autograd/__init__.py", "/torch/optim/"}
