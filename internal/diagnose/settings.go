package diagnose

import (
	"fmt"
	"path/filepath"
	"slices"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/runevidence"
	"github.com/bottleneck-dev/bottleneck/internal/rundir"
	"github.com/bottleneck-dev/bottleneck/internal/units"
)

// Settings that slow the step without being the model's design: the
// compute running in float64, autograd's anomaly detection left on, and
// torch.compile recompiling as inputs change. Each is a small change with
// a certain effect, named before the general advice of its class.

func (s *state) env() *runevidence.Env {
	if s.in.Run == nil {
		return nil
	}
	return s.in.Run.Env
}

// float64Share is the share of the ops' time (device time when device
// is true, else host self time) spent in ops whose inputs are float64;
// measured false when the trace recorded no input types.
func (s *state) float64Share(device bool) (share float64, measured bool) {
	if s.in.Ops == nil || len(s.in.Ops.Dtypes) == 0 {
		return 0, false
	}
	var f64, all float64
	for _, d := range s.in.Ops.Dtypes {
		us := d.HostSelfUs
		if device {
			us = d.DeviceSelfUs
		}
		all += us
		if d.Dtype == "fp64" {
			f64 += us
		}
	}
	if all <= 0 {
		return 0, false
	}
	return f64 / all, true
}

// float64Change: the compute runs in float64, by the trace's input types
// (MinFloat64 of the op time) or, where the trace has none, by the default
// dtype in the window or by the parameters the optimizers update (the
// largest ones the agent recorded, float64: model.double(), or a model
// built from NumPy's float64 arrays). It returns the change, its evidence
// and what set float64 ("" when the compute is not float64). Whatever the
// optimizer or the step source: an LSTM cell loop in float64 fit with
// LBFGS and a closure once got "nn.LSTM instead of the cell loop", slower
// in float64, and no word of float64.
func (s *state) float64Change(device bool) (string, []Evidence, []Location) {
	share, measured := s.float64Share(device)
	v, _ := s.env().Flag("default_dtype")
	byDefault := v == "torch.float64"
	params, numel, known := s.float64Params()
	if known && params == 0 {
		byDefault = false // float64 by default, yet the model was cast to float32
	}
	if measured && share < s.p.MinFloat64 || !measured && !byDefault && params == 0 {
		return "", nil, nil
	}
	what, base := "the ops compute in float64 (the default dtype is torch.float64 in the recorded window)", "native op time"
	if !byDefault {
		what = fmt.Sprintf("the model computes in float64 (the parameters the optimizer updates are float64: its largest %s, %s elements)", units.Things(params, "tensor"), units.Count(int(numel)))
	}
	if device {
		base = "device time of ops"
	}
	var ev []Evidence
	if measured {
		what = fmt.Sprintf("ops holding %.0f%% of the %s compute in float64", pct(share), base)
		ev = []Evidence{{"ops computing in float64", pct(share), "% of " + base, "operators"}}
	}
	if params > 0 {
		ev = append(ev, Evidence{"float64 parameter elements the optimizer updates", float64(numel), "", "run"})
	}
	var where []Location
	how := "model.float() and float32 inputs (NumPy arrays are float64: torch.from_numpy(a).float(), or build them as float32)"
	if c := s.runDefaultDtype(); c != nil {
		where = []Location{{Kind: "python", Name: c.Func, File: c.File, Line: c.Line, Note: "torch.set_default_dtype(" + c.Arg + ")"}}
		how = fmt.Sprintf("drop torch.set_default_dtype(%s) at %s:%d (float32 is the default)", c.Arg, filepath.Base(c.File), c.Line)
	} else if byDefault {
		where = []Location{{Kind: "env", Name: "default dtype", Note: "torch.get_default_dtype() is torch.float64 in the recorded window"}}
		how = "set the default dtype back to torch.float32 (torch.set_default_dtype), or model.float() and float32 inputs"
	} else if site := s.float64StepSite(); site != nil {
		where = []Location{*site}
	}
	speed := "float32 runs their arithmetic about twice as fast on a CPU (half the bytes, twice the SIMD lanes; each op's fixed cost stays), and bf16 autocast leaves float64 ops alone"
	if device {
		speed = "GPUs run float64 at 1/2 (A100, H100) to 1/64 (consumer and most workstation cards) of float32's rate, and float32 matmuls can use TF32 tensor cores, which float64 cannot"
	}
	// the action first, then the evidence for it: the reader acts on the
	// first words
	return fmt.Sprintf("%s, unless the model needs float64's precision: %s, and %s", how, what, speed), ev, where
}

// float64Params counts the float64 tensors and elements among the
// largest parameters the program's optimizers update (the run evidence
// keeps the largest three of each); 0 without run evidence. known: some
// optimizer's parameters were recorded.
func (s *state) float64Params() (tensors int, numel int64, known bool) {
	if s.in.Run == nil {
		return 0, 0, false
	}
	for _, o := range s.in.Run.Optimizers {
		known = known || len(o.Largest) > 0
		var n int
		var f64, all int64
		for _, p := range o.Largest {
			all += p.Numel
			if p.DType == "float64" {
				f64 += p.Numel
				n++
			}
		}
		// its largest parameters mostly float64: the model computes in it
		if f64 > 0 && float64(f64) >= s.p.MinFloat64*float64(all) {
			tensors, numel = tensors+n, numel+f64
		}
	}
	return tensors, numel, known
}

// float64StepSite is the step() call of an optimizer updating float64
// parameters, where the run evidence has it.
func (s *state) float64StepSite() *Location {
	if s.in.Run == nil {
		return nil
	}
	for _, o := range s.in.Run.Optimizers {
		if o.StepSite == nil || !slices.ContainsFunc(o.Largest, func(p rundir.OptimizerParam) bool { return p.DType == "float64" }) {
			continue
		}
		return &Location{Kind: "python", Name: o.StepSite.Func, File: o.StepSite.File, Line: o.StepSite.Line, Note: "calls " + o.Class + ".step() on float64 parameters"}
	}
	return nil
}

func (s *state) runDefaultDtype() *rundir.SettingCall {
	if s.in.Run == nil {
		return nil
	}
	return s.in.Run.DefaultDtype
}

// anomalyChecks are the ops of the NaN check anomaly detection runs on
// every output of every backward node (isnan(out)._is_any_true().item()).
var anomalyChecks = []string{"aten::isnan", "aten::_is_any_true", "aten::item"}

// anomaly: anomaly detection is on in the window and not measured cheap
// (under MinFinding); its time at stake per step (0: not measured) and
// the evidence.
func (s *state) anomaly() (atStake float64, ms []Evidence, on bool) {
	if v, _ := s.env().Flag("anomaly_enabled"); v != true {
		return 0, nil, false
	}
	var capture, checks float64
	if s.py != nil && s.py.AnomalyShare > 0 {
		// the samples behind Hot are the main thread's busy ones
		busy := max(0, 1-s.py.IOShare-s.py.LoaderShare)
		capture = s.py.AnomalyShare * busy * s.step
		ms = append(ms, Evidence{"main-thread samples capturing Python stacks for anomaly detection", pct(s.py.AnomalyShare), "%", "pyprofile"})
	}
	if chk, _ := s.env().Flag("anomaly_check_nan"); chk != false && s.in.Ops != nil {
		calls := 0
		for _, r := range s.in.Ops.Ranked() {
			if slices.Contains(anomalyChecks, r.Name) {
				checks += r.HostTotalUs
				calls += r.Calls
			}
		}
		checks /= float64(max(1, s.steps))
		if checks > 0 {
			ms = append(ms, Evidence{"NaN checks after backward nodes (isnan, _is_any_true, item) per step", checks, "us", "operators"},
				Evidence{"NaN-check op calls per step", float64(calls) / float64(max(1, s.steps)), "", "operators"})
		}
	}
	atStake = min(capture+checks, s.step)
	if measured := s.py != nil || checks > 0; measured && atStake < s.p.MinFinding*s.step {
		return 0, nil, false // on, but cheap here (few ops per step)
	}
	return atStake, ms, true
}

var _ = addRule(Rule{
	ID: "autograd.anomaly", Class: Debug, Factor: 1.0,
	When:   "run evidence: anomaly detection on in the recorded window (torch.is_anomaly_enabled()); at stake: the main thread's busy samples in its stack capture (traceback.format_stack) plus the NaN checks' ops (aten::isnan, aten::_is_any_true, aten::item rows of the operator table) per step; it goes first",
	Change: "turn anomaly detection off outside debugging: remove torch.autograd.set_detect_anomaly(True) / the detect_anomaly() block (Lightning: Trainer(detect_anomaly=False)); it records a Python stack for every op and checks every backward output for NaN, a device sync per backward node on a GPU",
	detect: (*state).anomalyFinding,
	Fires:  "TestAnomalyFinding", Silent: "TestAnomalyFinding",
})

// anomalyFinding: torch.autograd.set_detect_anomaly(True) (or
// detect_anomaly) is on in the window. It records a Python stack for
// every op that creates an autograd node and checks every backward output
// for NaN, reading the result on the host: a device sync per backward
// node on a GPU. At stake: the samples in its stack capture and the NaN
// checks' time (operator table, when its rows are among those kept).
func (s *state) anomalyFinding() {
	atStake, ms, on := s.anomaly()
	if !on {
		return
	}
	var where []Location
	if c := s.in.Run.Anomaly; c != nil {
		where = []Location{{Kind: "python", Name: c.Func, File: c.File, Line: c.Line, Note: "anomaly detection turned on here"}}
	}
	title := "Autograd anomaly detection is on"
	if atStake > 0 {
		// a lower bound: the nodes' anomaly metadata, and the NaN checks
		// beyond the table's rows, are not measured
		title += ": at least " + units.Duration(atStake) + " per step in its stack captures and NaN checks"
	}
	change := ""
	if c := s.in.Run.Anomaly; c != nil {
		change = fmt.Sprintf("turn anomaly detection off outside debugging (%s:%d); it records a Python stack for every op and checks every backward output for NaN, a device sync per backward node on a GPU",
			filepath.Base(c.File), c.Line)
	}
	f := s.finding("autograd.anomaly", title, atStake, ms, where, change)
	f.Confidence = "high" // the flag is read, not inferred
	s.emit(f)
}

var _ = addRule(Rule{
	ID: "compile.recompile", Class: Recompile, Factor: 0.9,
	When: "torch.compile compiles again in the window (window check: compilation in a step after one that ran without it, or in every step) and the recompilations' time over the window's steps >= MinFinding of the step",
	Change: orTry("the compiled function recompiles for each new input shape (or failed guard), and past torch._dynamo.config.cache_size_limit (8) new shapes run uncompiled: mark the varying dimension dynamic (torch._dynamo.mark_dynamic(x, dim), or torch.compile(..., dynamic=True)); TORCH_LOGS=recompiles prints each recompilation's reason",
		"pad inputs to a few fixed sizes: one compilation each"),
	detect: (*state).recompileFinding,
	Fires:  "TestRecompileFinding", Silent: "TestRecompileFinding",
})

// recompileFinding: torch.compile compiles again in the window's steps
// (window.Result.Recompiles): each new input shape or failed guard
// recompiles the function, and past the cache size limit new shapes run
// uncompiled. At stake: the class's share (addRecompile).
func (s *state) recompileFinding() {
	w := s.in.Window
	if s.share[Recompile] < s.p.MinFinding || w == nil {
		return
	}
	var where []Location
	if s.py != nil {
		where = s.pyLines(s.py.CompileLines, 2)
	}
	for i, x := range w.Recompiles {
		if i == 2 {
			break
		}
		where = append(where, Location{Kind: "op", Name: x.Name, Note: fmt.Sprintf("%s in step %s", units.Duration(x.Us), x.Step)})
	}
	atStake := s.share[Recompile] * s.step
	title := fmt.Sprintf("torch.compile recompiles in %d of the %d recorded steps: %s per step on average", w.RecompileSteps, len(w.Steps), units.Duration(atStake))
	s.emit(s.finding("compile.recompile", title, atStake, s.ev[Recompile], where, ""))
}

var _ = addRule(Rule{
	ID: "debug.validate-args", Class: Debug, Factor: 0.9,
	When:   "Python profile: main-thread samples over the whole run (imports left out) inside torch.distributions' checks of its arguments and samples (Distribution.__init__ and Distribution._validate_sample: validate_args, on by default) >= MinFinding; at stake: that share of the step",
	Change: "turn torch.distributions' checks off once the program builds valid distributions: torch.distributions.Distribution.set_default_validate_args(False) at start-up (or validate_args=False where each distribution is made); every distribution then skips checking its parameters against their constraints, and every log_prob its value",
	detect: (*state).argCheckFinding,
	Fires:  "TestArgCheckFinding", Silent: "TestArgCheckFinding",
})

// argCheckFinding: torch.distributions checks each distribution's
// parameters when it is made and each value given to log_prob, unless
// validate_args is off: a program that makes a small distribution per
// environment step or per update pays Python for every check
// (stable-baselines3's PPO on CartPole: 10% of the run's samples; 1.13x
// the whole run without them).
func (s *state) argCheckFinding() {
	if s.py == nil || s.py.ArgCheckShare < s.p.MinFinding {
		return
	}
	var where []Location
	for _, l := range s.py.ArgChecks {
		where = append(where, lineLocation(l, "main-thread samples, whole run, in the checks below this line"))
	}
	ms := []Evidence{{"main-thread samples in torch.distributions' argument and sample checks (whole run, imports left out)", pct(s.py.ArgCheckShare), "%", "pyprofile"}}
	title := fmt.Sprintf("torch.distributions checks every distribution's arguments and samples: %.0f%% of the main thread", pct(s.py.ArgCheckShare))
	s.emit(s.finding("debug.validate-args", title, min(s.py.ArgCheckShare, 1)*s.step, ms, where, ""))
}
