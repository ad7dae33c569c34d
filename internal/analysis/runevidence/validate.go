package runevidence

import (
	"cmp"
	"slices"
	"strings"

	"github.com/bottleneck-dev/bottleneck/internal/pyprofile"
	"github.com/bottleneck-dev/bottleneck/internal/stats"
)

// distributionFile is torch.distributions' base class, whose __init__
// checks every parameter against its constraint and whose
// _validate_sample checks every value given to log_prob: validate_args,
// on by default (off only under python -O).
const distributionFile = "/torch/distributions/distribution.py"

// isArgCheck: a frame of those checks. Distribution.__init__ does little
// else: with the checks off it is a few attribute stores.
func isArgCheck(f pyprofile.Frame) bool {
	if !strings.HasSuffix(strings.ReplaceAll(f.File, "\\", "/"), distributionFile) {
		return false
	}
	fn := f.Func[strings.LastIndexByte(f.Func, '.')+1:] // Python < 3.11 names the method alone
	return fn == "__init__" || fn == "_validate_sample"
}

// argChecks is the share of the main thread's samples over the whole run
// (imports left out) inside torch.distributions' argument and sample
// checks, and the program's lines that led there, largest first:
// stable-baselines3's PPO builds a distribution at every environment step
// and every update, and 10% of its samples were the checks (model.learn
// took 1.07-1.26x as long with them).
func argChecks(p *pyprofile.Profile) (float64, []Line) {
	var total, in int
	lines := map[lineKey]int{}
	funcs := map[lineKey]string{}
	for _, st := range p.Stacks {
		if p.Threads[st.Thread].Role != "main" || len(st.Frames) == 0 || st.Count == 0 || p.Importing(st.Frames) {
			continue
		}
		total += st.Count
		at := slices.IndexFunc(st.Frames, func(fi int) bool { return isArgCheck(p.Frames[fi]) })
		if at < 0 {
			continue
		}
		in += st.Count
		for i := at - 1; i >= 0; i-- { // the program's line that called into it
			if fr := p.Frames[st.Frames[i]]; !pyprofile.IsLibraryFile(fr.File) {
				k := lineKey{fr.File, fr.Line}
				lines[k] += st.Count
				funcs[k] = fr.Func
				break
			}
		}
	}
	if total == 0 || in == 0 {
		return 0, nil
	}
	var out []Line
	for k, c := range lines {
		out = append(out, Line{File: k.file, Line: k.line, Func: funcs[k], Pct: stats.Round1(100 * float64(c) / float64(total))})
	}
	slices.SortFunc(out, func(a, b Line) int {
		return cmp.Or(cmp.Compare(b.Pct, a.Pct), cmp.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line))
	})
	return float64(in) / float64(total), out[:min(len(out), 3)]
}
