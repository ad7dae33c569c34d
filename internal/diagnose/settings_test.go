package diagnose

import (
	"slices"
	"strings"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/optable"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/runevidence"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/window"
	"github.com/bottleneck-dev/bottleneck/internal/rundir"
)

// cpu.native's change is float32 when float64 ops hold the native time
// (trace input types) or, without types, when the default dtype was
// float64; it points at the program's set_default_dtype call. A float64
// loss next to float32 layers, or no sign of float64, keeps the ops'
// change.
func TestFloat64Change(t *testing.T) {
	set := &rundir.SettingCall{Call: "set_default_dtype", Arg: "torch.float64", File: "/home/u/pinn.py", Line: 3, Func: "<module>"}
	f64 := &runevidence.RunEvidence{Env: &runevidence.Env{Flags: map[string]any{"default_dtype": "torch.float64"}}, DefaultDtype: set}
	f32 := &runevidence.RunEvidence{Env: &runevidence.Env{Flags: map[string]any{"default_dtype": "torch.float32"}}}
	dtypes := func(fp64, fp32 float64) *optable.OpTable {
		return &optable.OpTable{Rows: []optable.OpRow{{Name: "aten::addmm", Calls: 10, HostSelfUs: fp64 + fp32}},
			Dtypes: []optable.DtypeTime{{Dtype: "fp64", HostSelfUs: fp64}, {Dtype: "fp32", HostSelfUs: fp32}, {Dtype: "none", HostSelfUs: 5}}}
	}
	noTypes := &optable.OpTable{Rows: []optable.OpRow{{Name: "aten::addmm", Calls: 10, HostSelfUs: 900}}}
	for _, c := range []struct {
		name string
		run  *runevidence.RunEvidence
		ops  *optable.OpTable
		want string // "" : no float64 change
		at   int    // the line the finding points at first (0: none)
	}{
		{"default dtype, no types", f64, noTypes, "drop torch.set_default_dtype(torch.float64) at pinn.py:3 (float32 is the default), unless the model needs float64's precision: the ops compute in float64 (the default dtype is torch.float64 in the recorded window), and float32 runs their arithmetic about twice as fast on a CPU", 3},
		{"types", nil, dtypes(800, 100), "ops holding 88% of the native op time compute in float64", 0},
		{"types and the call", f64, dtypes(800, 100), "drop torch.set_default_dtype(torch.float64) at pinn.py:3", 3},
		{"default dtype set outside the program's lines", &runevidence.RunEvidence{Env: f64.Env}, noTypes, "set the default dtype back to torch.float32", 0},
		// silent: a float64 loss, the rest float32; float32 default; the
		// types win over the default dtype (the model was cast to float32)
		{"float64 loss", nil, dtypes(100, 800), "", 0},
		{"float32", f32, noTypes, "", 0},
		{"no evidence", nil, noTypes, "", 0},
		{"types over default", f64, dtypes(50, 850), "", 0},
	} {
		s := &state{p: Default, step: 1000, steps: 3, share: map[Class]float64{CPUCompute: 0.9}, d: &Diagnosis{}, in: Analyses{Ops: c.ops, Run: c.run}}
		s.findings()
		f := findingOf(s.d, "cpu.native")
		if f == nil {
			t.Fatalf("%s: no cpu.native finding", c.name)
		}
		if got := strings.Contains(f.AllChanges(), "float64"); got != (c.want != "") || !strings.Contains(f.AllChanges(), c.want) {
			t.Errorf("%s: change %q, want %q", c.name, f.AllChanges(), c.want)
		}
		if c.at > 0 && (len(f.Where) == 0 || f.Where[0].Line != c.at) {
			t.Errorf("%s: where %+v, want line %d first", c.name, f.Where, c.at)
		}
	}
	// on a device: the device time of the ops decides
	gpu := &optable.OpTable{Dtypes: []optable.DtypeTime{{Dtype: "fp64", DeviceSelfUs: 700, HostSelfUs: 10}, {Dtype: "fp32", DeviceSelfUs: 100, HostSelfUs: 900}}}
	s := &state{p: Default, step: 1000, steps: 3, device: true, share: map[Class]float64{GPUCompute: 0.8}, d: &Diagnosis{}, in: Analyses{Ops: gpu}}
	s.findings()
	if f := findingOf(s.d, "gpu.kernels"); f == nil || !strings.HasPrefix(f.Change, "model.float() and float32 inputs") || !strings.Contains(f.Change, "ops holding 88% of the device time of ops compute in float64, and GPUs run float64 at 1/2") {
		t.Errorf("gpu: %+v", f)
	}
}

// Without input types or a float64 default dtype, float64 parameters in
// the optimizer (model.double(), a model built on NumPy's float64 arrays)
// say the model computes in float64, whatever the optimizer; the change
// points at its step() call. float32 parameters keep the ops' change, and
// overrule a float64 default dtype (the model cast back to float32).
func TestFloat64FromParameters(t *testing.T) {
	opt := func(dtype string, class string) rundir.Optimizer {
		o := rundir.Optimizer{Class: class, Params: 6, Numel: 25_000, Largest: []rundir.OptimizerParam{
			{Shape: []int64{128, 32}, Numel: 4096, DType: dtype}, {Shape: []int64{128, 8}, Numel: 1024, DType: dtype}, {Shape: []int64{128}, Numel: 128, DType: dtype}}}
		o.StepSite = &rundir.Site{File: "/home/u/fit.py", Line: 41, Func: "main"}
		return o
	}
	noTypes := &optable.OpTable{Rows: []optable.OpRow{{Name: "aten::addmm", Calls: 10, HostSelfUs: 900}}}
	f64Default := &runevidence.Env{Flags: map[string]any{"default_dtype": "torch.float64"}}
	for _, c := range []struct {
		name string
		run  *runevidence.RunEvidence
		want string // "" : no float64 change
	}{
		{"LBFGS on float64 parameters", &runevidence.RunEvidence{Optimizers: []rundir.Optimizer{opt("float64", "LBFGS")}}, "the model computes in float64 (the parameters the optimizer updates are float64: its largest 3 tensors, 5,248 elements)"},
		{"Adam on float64 parameters", &runevidence.RunEvidence{Optimizers: []rundir.Optimizer{opt("float64", "Adam")}}, "model.float() and float32 inputs"},
		{"LBFGS on float32 parameters", &runevidence.RunEvidence{Optimizers: []rundir.Optimizer{opt("float32", "LBFGS")}}, ""},
		{"float64 default, float32 parameters", &runevidence.RunEvidence{Env: f64Default, Optimizers: []rundir.Optimizer{opt("float32", "LBFGS")}}, ""},
		{"float64 default, parameters not recorded", &runevidence.RunEvidence{Env: f64Default, Optimizers: []rundir.Optimizer{{Class: "LBFGS", Params: 6}}}, "the default dtype is torch.float64"},
	} {
		s := &state{p: Default, step: 1000, steps: 3, share: map[Class]float64{CPUCompute: 0.9}, d: &Diagnosis{}, in: Analyses{Ops: noTypes, Run: c.run}}
		s.findings()
		f := findingOf(s.d, "cpu.native")
		if f == nil {
			t.Fatalf("%s: no cpu.native finding", c.name)
		}
		if got := strings.Contains(f.AllChanges(), "float64"); got != (c.want != "") || !strings.Contains(f.AllChanges(), c.want) {
			t.Errorf("%s: change %q, want %q", c.name, f.AllChanges(), c.want)
		}
		if c.want != "" && !isFloat64Default(c.run.Env) && (len(f.Where) == 0 || f.Where[0].Line != 41) {
			t.Errorf("%s: where %+v, want the step() call first", c.name, f.Where)
		}
	}
}

// cpu.tiny-ops in float64 (an LSTMCell loop fit with LBFGS) leads with
// float32 and gives its own change for float32 only ("nn.LSTM instead of
// the cell loop" ran no faster in float64); in float32 it says nothing of
// float64.
func TestTinyOpsInFloat64(t *testing.T) {
	set := &rundir.SettingCall{Call: "set_default_dtype", Arg: "torch.float64", File: "/home/u/fit.py", Line: 3, Func: "<module>"}
	for _, dtype := range []string{"torch.float64", "torch.float32"} {
		run := &runevidence.RunEvidence{RunMedianStepS: 0.02, Env: &runevidence.Env{Flags: map[string]any{"default_dtype": dtype}}}
		if dtype == "torch.float64" {
			run.DefaultDtype = set
		}
		in := cpuTrace(run)
		in.Ops = &optable.OpTable{Calls: 3*4000 + 3, HostSelfUs: 3*50e3 + 30, StepsFirst: 4, StepsLast: 6, Rows: []optable.OpRow{
			{Name: "aten::add_", Calls: 3 * 2000, HostSelfUs: 3 * 25e3}, {Name: "aten::mul_", Calls: 3 * 2000, HostSelfUs: 3 * 25e3},
			{Name: "ProfilerStep#4", Calls: 3, HostSelfUs: 30}}}
		d := Compute(in)
		f := findingOf(d, "cpu.tiny-ops")
		if f == nil {
			t.Fatalf("%s: no tiny-ops finding: %s", dtype, d.Verdict.Why)
		}
		f64 := dtype == "torch.float64"
		if got := strings.HasPrefix(f.Change, "drop torch.set_default_dtype(torch.float64)"); got != f64 || f64 && !strings.Contains(f.AllChanges(), "; then in float32: ") {
			t.Errorf("%s: float32 leads: %v, want %v: %s", dtype, got, f64, f.AllChanges())
		}
		if f64 && (len(f.Where) == 0 || f.Where[0].Line != 3) {
			t.Errorf("%s: where %+v, want the set_default_dtype call first", dtype, f.Where)
		}
		if !f64 && strings.Contains(f.AllChanges(), "float64") {
			t.Errorf("%s: %s", dtype, f.AllChanges())
		}
	}
}

// autograd.anomaly: on in the window, it goes first with its cost and the
// line that turned it on; off, or on but cheap, it is silent.
func TestAnomalyFinding(t *testing.T) {
	call := &rundir.SettingCall{Call: "set_anomaly_enabled", Arg: "True", File: "/home/u/train.py", Line: 7, Func: "<module>"}
	on := &runevidence.Env{Flags: map[string]any{"anomaly_enabled": true, "anomaly_check_nan": true}}
	checks := &optable.OpTable{Rows: []optable.OpRow{
		{Name: "aten::addmm", Calls: 30, HostSelfUs: 1500, HostTotalUs: 1500},
		{Name: "aten::isnan", Calls: 90, HostTotalUs: 450}, {Name: "aten::_is_any_true", Calls: 90, HostTotalUs: 300},
		{Name: "aten::item", Calls: 90, HostTotalUs: 150}}}
	py := &runevidence.PythonEvidence{Samples: 100, AnomalyShare: 0.2}
	for _, c := range []struct {
		name    string
		run     *runevidence.RunEvidence
		ops     *optable.OpTable
		atStake float64 // 0: silent
	}{
		// 3 steps of 100 ms: checks 900 µs over the window, 300 per step;
		// stack capture 20% of the busy samples: 20 ms per step
		{"on", &runevidence.RunEvidence{Env: on, Anomaly: call, Python: py}, checks, 20300},
		{"on, no checks", &runevidence.RunEvidence{Env: &runevidence.Env{Flags: map[string]any{"anomaly_enabled": true, "anomaly_check_nan": false}}, Python: py}, checks, 20000},
		{"on, not measured", &runevidence.RunEvidence{Env: on}, &optable.OpTable{}, 0.001},
		{"off", &runevidence.RunEvidence{Env: &runevidence.Env{Flags: map[string]any{"anomaly_enabled": false}}, Python: py}, checks, 0},
		{"on, cheap", &runevidence.RunEvidence{Env: on, Python: &runevidence.PythonEvidence{Samples: 100, AnomalyShare: 0.01}}, &optable.OpTable{}, 0},
		{"no run", nil, checks, 0},
	} {
		in := cpuTrace(c.run)
		in.Ops = c.ops
		d := Compute(in)
		f := findingOf(d, "autograd.anomaly")
		if (f != nil) != (c.atStake > 0) {
			t.Errorf("%s: finding %+v", c.name, f)
			continue
		}
		if f == nil {
			continue
		}
		if d.Findings[0].Rule != "autograd.anomaly" || !slices.Contains(d.Verdict.Secondary, Debug) || !strings.Contains(d.Verdict.Why, "anomaly detection is on") {
			t.Errorf("%s: first finding %s, verdict %+v", c.name, d.Findings[0].Rule, d.Verdict)
		}
		if c.atStake >= 1 && (f.AtStakeUs < c.atStake-1 || f.AtStakeUs > c.atStake+1) {
			t.Errorf("%s: at stake %v, want %v", c.name, f.AtStakeUs, c.atStake)
		}
		if c.run.Anomaly != nil && (len(f.Where) == 0 || f.Where[0].Line != 7 || !strings.Contains(f.AllChanges(), "train.py:7")) {
			t.Errorf("%s: where %+v, change %s", c.name, f.Where, f.AllChanges())
		}
	}
}

// compile.recompile: recompilations in the window put their time over
// every step of the window at stake and name the compiled call's line;
// none, or too little, stays silent.
func TestRecompileFinding(t *testing.T) {
	for _, c := range []struct {
		name    string
		us      float64 // recompilation time in the window
		steps   int
		atStake float64 // 0: silent
	}{
		{"three of five steps", 150e3, 3, 30e3}, // 100 ms steps: 30%
		{"none", 0, 0, 0},
		{"a small one", 10e3, 1, 0}, // 2 ms per step: under 5%
	} {
		in := cpuTrace(&runevidence.RunEvidence{Python: &runevidence.PythonEvidence{Samples: 10, CompileLines: []runevidence.Line{{File: "/home/u/train.py", Line: 21, Func: "main", Pct: 40}}}})
		in.Window.Steps = make([]window.Step, 5)
		in.Window.RecompileUs, in.Window.RecompileSteps = c.us, c.steps
		if c.steps > 0 {
			in.Window.Recompiles = []window.Cost{{Kind: "recompile", Name: "_compile.compile_inner", Step: "5", Us: c.us / float64(c.steps)}}
		}
		f := findingOf(Compute(in), "compile.recompile")
		if (f != nil) != (c.atStake > 0) {
			t.Fatalf("%s: finding %+v", c.name, f)
		}
		if f != nil && (f.AtStakeUs != c.atStake || len(f.Where) < 2 || f.Where[0].Line != 21 || f.Where[1].Name != "_compile.compile_inner") {
			t.Errorf("%s: at stake %v, where %+v", c.name, f.AtStakeUs, f.Where)
		}
	}
}

// The recompilations inside the steps used are host work the CPU share
// held: the recompile class takes them from it, and becomes the verdict
// when it saves most.
func TestRecompileShare(t *testing.T) {
	in := cpuTrace(nil) // 100 ms steps: 60 ms native ops, 40 ms unrecorded
	in.Window.Steps = []window.Step{{Step: "4", RecompileUs: 90e3}, {Step: "5", RecompileUs: 90e3}, {Step: "6", RecompileUs: 90e3}}
	in.Window.RecompileUs, in.Window.RecompileSteps = 270e3, 3
	d := Compute(in)
	share := map[Class]float64{}
	for _, c := range d.Classes {
		share[c.Class] = c.SharePct
	}
	if share[Recompile] != 90 || share[CPUCompute] != 0 || share[Unexplained] != 10 {
		t.Errorf("shares %v, want recompile 90, cpu 0, unexplained 10", share)
	}
	if d.Verdict.Primary != Recompile || d.Findings[0].Rule != "compile.recompile" {
		t.Errorf("verdict %s, first finding %s", d.Verdict.Primary, d.Findings[0].Rule)
	}
}

// isFloat64Default: the program set torch's default dtype to float64.
func isFloat64Default(e *runevidence.Env) bool {
	v, _ := e.Flag("default_dtype")
	return v == "torch.float64"
}

// The float64 change shortens an op's arithmetic, not its fixed cost:
// its saving is the native time beyond OpFixedUs a call. Large calls
// keep nearly all of it; calls of a few µs (a loop of tiny LSTM cells)
// little; annotations are no ops.
func TestFloat64SavesTheArithmetic(t *testing.T) {
	run := &runevidence.RunEvidence{Env: &runevidence.Env{Flags: map[string]any{"default_dtype": "torch.float64"}}}
	for _, c := range []struct {
		name string
		rows []optable.OpRow
		want float64 // cpu.native's saving, % of the step
	}{
		// 900 µs a call: 2 of it fixed, the share 90% × factor 0.5
		{"large calls", []optable.OpRow{{Name: "aten::addmm", Calls: 1, HostSelfUs: 900}}, 44.9},
		// 4 µs a call: half of it fixed
		{"tiny calls", []optable.OpRow{{Name: "aten::mul", Calls: 225, HostSelfUs: 900}}, 22.5},
		// 1 µs a call: all of it fixed
		{"views", []optable.OpRow{{Name: "aten::as_strided", Calls: 900, HostSelfUs: 900}}, 0},
		{"an annotation beside them", []optable.OpRow{{Name: "ProfilerStep#3", Calls: 1, HostSelfUs: 5000}, {Name: "aten::mul", Calls: 225, HostSelfUs: 900}}, 22.5},
	} {
		s := &state{p: Default, step: 1000, steps: 1, share: map[Class]float64{CPUCompute: 0.9}, d: &Diagnosis{}, in: Analyses{Ops: &optable.OpTable{Rows: c.rows}, Run: run}}
		s.findings()
		f := findingOf(s.d, "cpu.native")
		if f == nil || !strings.Contains(f.Change, "float32") || f.SavingPct != c.want {
			t.Errorf("%s: %+v, want float32 saving %.1f%%", c.name, f, c.want)
		}
	}
}

// debug.validate-args: torch.distributions' checks at >= MinFinding of
// the run's main-thread samples put that share of the step at stake and
// name the program's line; a few percent, or no Python profile, stay
// silent.
func TestArgCheckFinding(t *testing.T) {
	line := runevidence.Line{File: "/home/u/ppo.py", Line: 40, Func: "collect", Pct: 9}
	for _, c := range []struct {
		name    string
		py      *runevidence.PythonEvidence
		atStake float64 // 0: silent
	}{
		{"checks", &runevidence.PythonEvidence{Samples: 500, ArgCheckShare: 0.1, ArgChecks: []runevidence.Line{line}}, 10e3},
		{"a few checks", &runevidence.PythonEvidence{Samples: 500, ArgCheckShare: 0.02, ArgChecks: []runevidence.Line{line}}, 0},
		{"no Python profile", nil, 0},
	} {
		d := Compute(cpuTrace(&runevidence.RunEvidence{Python: c.py}))
		f := findingOf(d, "debug.validate-args")
		if (f != nil) != (c.atStake > 0) {
			t.Errorf("%s: finding %+v", c.name, f)
			continue
		}
		if f == nil {
			continue
		}
		if f.AtStakeUs != c.atStake || len(f.Where) == 0 || f.Where[0].Line != 40 || !strings.Contains(f.AllChanges(), "set_default_validate_args(False)") {
			t.Errorf("%s: at stake %v, where %+v, change %s", c.name, f.AtStakeUs, f.Where, f.AllChanges())
		}
	}
}
